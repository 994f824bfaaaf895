"""The embeddings port's contract, run against every implementation, and the endpoint's failures.

What the semantic layer relies on from any :class:`gitmem.embeddings.Embeddings`: one float32 row
per text, in the texts' order, each of unit length, the same text giving the same vector, a
``name`` that says which model made them; and nothing but :class:`Unavailable` raised.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from gitmem.embeddings import Embeddings, Offline
from gitmem.endpoints import EmbeddingsEndpoint, embeddings_from_settings
from gitmem.errors import InvalidInput, Unavailable
from gitmem.settings import Settings
from tests.fakes.openai_server import Status, running

TEXTS = ["Store all timestamps in UTC.", "数据库里的时间一律存 UTC。", "PPT body text is 18pt.", "x"]


@pytest.fixture(scope="module")
def offline() -> Offline:
    return Offline()


@pytest.fixture(params=["offline", "endpoint"])
def port(request: pytest.FixtureRequest, offline: Offline) -> Iterator[Embeddings]:
    if request.param == "offline":
        yield offline
        return
    with running(lambda r: "{}", embedder=lambda texts: offline.embed(texts).tolist()) as fake:
        client = EmbeddingsEndpoint(fake.url, "use-v3", batch=3)
        yield client
        client.close()


def test_one_unit_row_per_text_in_order(port: Embeddings) -> None:
    vectors = port.embed(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape[0] == len(TEXTS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    again = port.embed(list(reversed(TEXTS)))
    assert np.allclose(again[::-1], vectors, atol=1e-3)
    # Twins across languages are nearer each other than an unrelated rule.
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert port.name


def test_no_texts_no_vectors(port: Embeddings) -> None:
    assert port.embed([]).shape[0] == 0


def test_the_endpoint_is_asked_in_batches_with_its_model_and_key(offline: Offline) -> None:
    seen: list[Any] = []
    with running(lambda r: "{}", embedder=lambda texts: offline.embed(texts).tolist()) as fake:
        client = EmbeddingsEndpoint(fake.url, "nomic-embed-text", api_key="sk-test", batch=2)
        client.embed(TEXTS)
        seen = fake.embedded
        client.close()
    assert seen == [TEXTS[:2], TEXTS[2:]]
    assert client.name == "endpoint:nomic-embed-text"


@pytest.mark.parametrize(("reply", "message"), [
    (Status(401, '{"error": "bad key"}'), "refused the request: HTTP 401"),
    (Status(503), r"did not answer after 2 attempts \(HTTP 503\)"),
    (lambda texts: [[1.0, 0.0]], "answered 1 vector for 2 texts"),
    (lambda texts: [[1.0, 0.0], [1.0]], "vectors of different sizes"),
    (Status(200, '{"data": "nope"}'), "not an embeddings response"),
])
def test_a_failing_endpoint_is_unavailable_with_a_reason(reply: Any, message: str) -> None:
    embedder = reply if callable(reply) else (lambda texts: reply)
    with running(lambda r: "{}", embedder=embedder) as fake:
        client = EmbeddingsEndpoint(fake.url, "m", retries=1)
        with pytest.raises(Unavailable, match=message):
            client.embed(["a", "b"])
        client.close()


def test_an_endpoint_that_is_gone_is_unavailable() -> None:
    with running(lambda r: "{}") as fake:
        url = fake.url
        fake.stop()
        client = EmbeddingsEndpoint(url, "m", retries=0, timeout=2)
        with pytest.raises(Unavailable, match="GITMEM_EMBED_BASE_URL"):
            client.embed(["a"])
        client.close()


def test_settings_choose_the_port(tmp_path: Any) -> None:
    assert embeddings_from_settings(Settings(home=tmp_path, embeddings="none")) is None
    assert isinstance(embeddings_from_settings(Settings(home=tmp_path)), Offline)
    chosen = embeddings_from_settings(Settings(home=tmp_path, embed_base_url="http://127.0.0.1:9/v1"))
    assert isinstance(chosen, EmbeddingsEndpoint)
    with pytest.raises(InvalidInput, match="must start with http"):
        EmbeddingsEndpoint("ftp://x", "m")


def test_the_offline_model_loads_from_its_prepared_folder_and_survives_a_broken_one(tmp_path: Any) -> None:
    from gitmem import embeddings

    embeddings._models.clear()
    first = Offline(tmp_path)
    vector = first.embed(["Store all timestamps in UTC."])
    kept = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert [p.name for p in kept] == [first.name.replace("@", "-")]
    assert (kept[0] / "manifest.json").is_file() and not list(tmp_path.glob("*.pickle"))
    embeddings._models.clear()
    assert np.array_equal(Offline(tmp_path).embed(["Store all timestamps in UTC."]), vector)
    (kept[0] / "manifest.json").write_bytes(b"not json")
    embeddings._models.clear()
    assert np.array_equal(Offline(tmp_path).embed(["Store all timestamps in UTC."]), vector)
