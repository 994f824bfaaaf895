"""The facade's parts built on first use, and the encoder's warm-up a server runs on a thread."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem import embeddings
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.fakes.openai_server import running


@pytest.fixture(autouse=True)
def no_model_in_memory() -> None:
    embeddings._models.clear()


def test_warm_up_loads_the_offline_encoder_and_prepares_its_folder(tmp_path: Path) -> None:
    svc = MemoryService(Settings(home=tmp_path / "home"))
    try:
        svc.warm_up()
        model = svc._semantics.model()
        assert isinstance(model, embeddings.Offline) and model.loaded
        assert (tmp_path / "home" / "state" / "models" / model.name.replace("@", "-") / "manifest.json").is_file()
    finally:
        svc.close()


def test_warm_up_asks_no_endpoint_and_loads_nothing_with_semantics_off(tmp_path: Path) -> None:
    with running(lambda r: "{}", embedder=lambda texts: [[1.0, 0.0] for _ in texts]) as fake:
        svc = MemoryService(Settings(home=tmp_path / "a", embed_base_url=f"{fake.url}/v1"))
        svc.warm_up()
        svc.close()
        assert fake.embedded == []
    off = MemoryService(Settings(home=tmp_path / "b", embeddings="none"))
    off.warm_up()
    off.close()
    assert not embeddings._models

