"""The API and the webhook over real HTTP: a threaded werkzeug server on 127.0.0.1 and httpx.

The other web tests use Flask's in-process client; these send the same kinds of request through
sockets, so headers, bodies, status lines and the signed webhook are checked as a client sees them.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from gitmem.repo import KeyStore
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.web.auth import sign

from .conftest import Keys

SECRET = "real-http-webhook-secret"
API = "/api/v1/namespaces/default"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Overrides the shared settings: signed webhooks on, and a maintainer named alice."""
    return Settings(home=tmp_path / "home", hmac_secret=SECRET, maintainers=("alice",))


@pytest.fixture
def http(live_server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server, timeout=30) as client:
        yield client


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def signed(body: dict[str, object], at: int | None = None) -> tuple[bytes, dict[str, str]]:
    raw = json.dumps(body).encode()
    stamp = int(time.time()) if at is None else at
    return raw, {"Content-Type": "application/json", "X-Gitmem-Timestamp": str(stamp),
                 "X-Gitmem-Signature": sign(SECRET, stamp, raw)}


def test_remember_recall_and_get(http: httpx.Client, keys: Keys, svc: MemoryService,
                                 fsck: Callable[[str], None]) -> None:
    agent = KeyStore(svc.settings.home).create("default", "writer", name="writer", kind="agent")[0]
    made = http.post(f"{API}/memories", headers=auth(agent),
                     json={"text": "Run the tests with `pytest -x`", "type": "convention", "paths": ["tests/"]})
    assert made.status_code == 201 and made.headers["Content-Type"] == "application/json"
    memory = made.json()["memory"]
    assert made.headers["Location"].endswith(f"{API}/memories/{memory['id']}")
    assert (made.json()["outcome"], memory["source"], memory["author"]) == ("added", "agent", "writer")

    got = http.get(made.headers["Location"], headers={"X-API-Key": keys.reader})
    assert got.status_code == 200 and got.json()["text"] == "Run the tests with `pytest -x`"

    hits = http.get(f"{API}/recall", params={"q": "pytest", "limit": 5}, headers=auth(keys.reader))
    assert [h["memory"]["id"] for h in hits.json()["items"]] == [memory["id"]]
    by_path = http.get(f"{API}/recall", params={"path": "tests/web/test_http.py", "dry": "1"},
                       headers=auth(keys.reader))
    assert by_path.json()["items"][0]["path_match"] is True
    assert svc.status("default")["pending_uses"] == 1, "the dry recall recorded no use"

    # An agent's near-duplicate merges into what is there; the same text reinforces it.
    merged = http.post(f"{API}/memories", headers=auth(agent),
                       json={"text": "Run the tests with `pytest -x` always", "paths": ["src/"]})
    assert merged.status_code == 200 and merged.json()["outcome"] == "merged"
    again = http.post(f"{API}/memories", headers=auth(agent), json={"text": "run the tests with pytest -x"})
    assert again.status_code == 200 and again.json()["outcome"] == "reinforced"
    assert svc.show("default", memory["id"]).paths == ("tests/", "src/")
    fsck("default")


def test_feedback_with_a_key(http: httpx.Client, keys: Keys, svc: MemoryService,
                             remember: Callable[..., str]) -> None:
    mid = remember("The staging database is reset every night")
    posing = http.post("/api/v1/feedback", headers=auth(keys.writer),
                       json={"memory_id": mid, "action": "confirm", "actor": "dana"})
    assert posing.status_code == 403  # a writer key acts as itself
    confirmed = http.post("/api/v1/feedback", headers=auth(keys.writer), json={"memory_id": mid, "action": "confirm"})
    assert confirmed.status_code == 200 and confirmed.json()["memory"]["verified"] == ["writer"]
    proposed = http.post("/api/v1/feedback", headers=auth(keys.writer),
                         json={"memory_id": mid, "action": "amend", "text": "The staging database is reset weekly"})
    assert proposed.status_code == 202 and proposed.json()["review"] == 1
    assert svc.show("default", mid).text == "The staging database is reset every night"
    direct = http.post("/api/v1/feedback", headers=auth(keys.admin),
                       json={"memory_id": mid, "action": "amend", "actor": "alice",
                             "text": "The staging database is reset on Sundays"})
    assert direct.status_code == 200 and direct.json()["review"] is None
    assert svc.show("default", mid).text == "The staging database is reset on Sundays"
    assert svc.log("default", limit=1)[0].trailers["Actor"] == ["alice"]


def test_signed_webhook_within_the_window_once(http: httpx.Client, svc: MemoryService,
                                               remember: Callable[..., str]) -> None:
    mid = remember("Feature flags live in flags.yaml")
    raw, headers = signed({"memory_id": mid, "action": "confirm", "actor": "slack:U1"},
                          at=math.ceil(time.time()) - 299)
    first = http.post("/api/v1/feedback", content=raw, headers=headers)
    assert first.status_code == 200, first.text
    assert svc.show("default", mid).verified == ("slack:U1",)
    replay = http.post("/api/v1/feedback", content=raw, headers=headers)
    assert replay.status_code == 401 and "replay" in replay.json()["error"]["message"]


@pytest.mark.parametrize("forge", ["301 s old", "301 s ahead", "tampered", "wrong secret"])
def test_signed_webhook_forgeries_are_refused(http: httpx.Client, svc: MemoryService,
                                              remember: Callable[..., str], forge: str) -> None:
    mid = remember("Feature flags live in flags.yaml")
    at = {"301 s old": math.floor(time.time()) - 301, "301 s ahead": math.ceil(time.time()) + 301}.get(forge)
    raw, headers = signed({"memory_id": mid, "action": "reject", "actor": "mallory"}, at=at)
    if forge == "tampered":
        raw = raw.replace(b"mallory", b"alice")
    if forge == "wrong secret":
        headers["X-Gitmem-Signature"] = sign("guess", int(headers["X-Gitmem-Timestamp"]), raw)
    before = svc.status("default")["head"]
    response = http.post("/api/v1/feedback", content=raw, headers=headers)
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "Unauthenticated" and response.json()["error"]["status"] == 401
    assert svc.status("default")["head"] == before


def test_errors_are_json_with_the_right_status(http: httpx.Client, keys: Keys, svc: MemoryService) -> None:
    before = svc.status("default")["head"]
    cases = [
        (http.post(f"{API}/memories", json={"text": "x"}), 401),
        (http.post(f"{API}/memories", headers=auth(keys.reader), json={"text": "x"}), 403),
        (http.get(f"{API}/memories/0123456789", headers=auth(keys.reader)), 404),
        (http.post(f"{API}/memories", headers=auth(keys.writer), json={"text": ""}), 400),
        (http.post(f"{API}/memories", headers={**auth(keys.writer), "Content-Type": "application/json"},
                   content=b"{not json"), 400),
        (http.post(f"{API}/memories", headers=auth(keys.writer),
                   json={"text": "x" * (svc.settings.max_request_bytes + 1)}), 413),
    ]
    for response, status in cases:
        assert response.status_code == status, response.text
        assert response.headers["Content-Type"] == "application/json"
        assert response.json()["error"]["status"] == status and response.json()["error"]["message"]
    assert svc.status("default")["head"] == before


def chunked(body: bytes, size: int = 65536) -> Iterator[bytes]:
    """A body sent without Content-Length: the server learns its size only as it reads."""
    for start in range(0, len(body), size):
        yield body[start:start + size]


def test_a_chunked_body_within_the_limit_is_read_whole(http: httpx.Client, keys: Keys) -> None:
    text = "Chunked bodies arrive whole. " * 100
    response = http.post(f"{API}/memories", headers={**auth(keys.writer), "Content-Type": "application/json"},
                         content=chunked(json.dumps({"text": text}).encode(), size=1000))
    assert response.status_code == 201 and response.json()["memory"]["text"] == text.strip()


def test_a_chunked_body_over_the_limit_is_413(http: httpx.Client, keys: Keys, svc: MemoryService) -> None:
    before = svc.status("default")["head"]
    body = json.dumps({"text": "x" * (svc.settings.max_request_bytes + 1)}).encode()
    response = http.post(f"{API}/memories", headers={**auth(keys.writer), "Content-Type": "application/json"},
                         content=chunked(body))
    assert svc.status("default")["head"] == before
    assert response.status_code == 413, response.text


def test_concurrent_writers_over_http_all_land(http: httpx.Client, live_server: str, keys: Keys,
                                               svc: MemoryService, fsck: Callable[[str], None]) -> None:
    def write(i: int) -> int:
        with httpx.Client(base_url=live_server, timeout=60) as client:
            return client.post(f"{API}/memories", headers=auth(keys.writer),
                               json={"text": f"Service {i} listens on port {9000 + i}", "source": "user"}).status_code

    with ThreadPoolExecutor(max_workers=4) as pool:
        statuses = list(pool.map(write, range(12)))
    assert statuses == [201] * 12
    texts = {m.text for m in svc.list("default", limit=100)}
    assert texts == {f"Service {i} listens on port {9000 + i}" for i in range(12)}
    fsck("default")
