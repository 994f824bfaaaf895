"""Ingestion across real processes: `gitmem serve`, `gitmem worker` on the embedded broker and on Redis, kill -9.

A message the API acknowledged is never lost and never extracted twice, whichever process dies.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gitmem.repo import KeyStore
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.fakes.openai_server import HOLD, Request, answer, running
from tests.test_tasks import broker_settings, kill, wait_for, worker, worker_env  # noqa: F401  (a fixture)
from tests.web.test_serve import free_port

MESSAGES = [
    {"id": "m1", "author": "ana", "text": "No, we use pnpm, not npm."},
    {"id": "m2", "author": "bo", "text": "Never deploy to production on Fridays."},
    {"id": "m3", "author": "ana", "text": "Remember: reports come from the SaaS MySQL replica."},
]


def memories(settings: Settings) -> list[Any]:
    service = MemoryService(settings)
    try:
        return service.list("default")
    finally:
        service.close()


def ingest_commits(settings: Settings) -> list[Any]:
    service = MemoryService(settings)
    try:
        return [c for c in service.log("default", limit=100) if c.action == "ingest"]
    finally:
        service.close()


def start_web(settings: Settings, log: Path, **env: str) -> subprocess.Popen[bytes]:
    port = free_port()
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gitmem", "serve", "--port", str(port), "--workers", "1", "--no-worker"],
            env=worker_env(settings, **env), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    proc.url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{proc.url}/healthz", timeout=2)  # type: ignore[attr-defined]
            return proc
        except httpx.TransportError:
            time.sleep(0.2)
    kill(proc, signal.SIGKILL)
    raise AssertionError(f"gitmem serve did not start: {log.read_text(errors='replace')}")


@pytest.fixture
def home(broker_settings: Settings) -> Iterator[tuple[Settings, str]]:  # noqa: F811
    settings = broker_settings.with_(embeddings="none")
    service = MemoryService(settings)
    service.init("default")
    service.close()
    key = KeyStore(settings.home).create("default", "writer", name="agent")[0]
    yield settings, key


def post(url: str, key: str, messages: list[dict[str, Any]], flush: bool = True) -> dict[str, Any]:
    response = httpx.post(f"{url}/api/v1/namespaces/default/conversations/s1/messages",
                          json={"messages": messages, "flush": flush},
                          headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert response.status_code == 202, response.text
    data: dict[str, Any] = response.json()
    return data


def test_the_api_acknowledges_and_a_real_worker_distils(home: tuple[Settings, str], tmp_path: Path) -> None:
    settings, key = home
    log = tmp_path / "log"
    web = start_web(settings, log, GITMEM_EMBEDDINGS="none")
    try:
        with worker(settings, log, GITMEM_EMBEDDINGS="none"):
            sent = post(web.url, key, MESSAGES)  # type: ignore[attr-defined]
            assert len(sent["queued"]) == 1
            wait_for(lambda: len(memories(settings)) == 3, "the distilling", log)
    finally:
        kill(web, signal.SIGKILL)
    found = {m.text: m for m in memories(settings)}
    assert found["We use pnpm, not npm."].state == "pending"
    assert found["Reports come from the SaaS MySQL replica."].state == "active"
    assert len(ingest_commits(settings)) == 1


def test_kill_9_of_the_web_process_after_it_acknowledged_loses_nothing(home: tuple[Settings, str],
                                                                      tmp_path: Path) -> None:
    settings, key = home
    log = tmp_path / "log"
    web = start_web(settings, log, GITMEM_EMBEDDINGS="none")
    post(web.url, key, MESSAGES[:2], flush=False)  # type: ignore[attr-defined]
    post(web.url, key, MESSAGES[2:], flush=True)  # type: ignore[attr-defined]
    kill(web, signal.SIGKILL)  # no worker has run: nothing is extracted yet
    assert memories(settings) == []
    with worker(settings, log, GITMEM_EMBEDDINGS="none"):
        wait_for(lambda: len(memories(settings)) == 3, "the distilling after the web process died", log)
    assert len(ingest_commits(settings)) == 1


def test_kill_9_of_the_worker_mid_extraction_loses_nothing_and_extracts_once(home: tuple[Settings, str],
                                                                            tmp_path: Path) -> None:
    settings, key = home
    log = tmp_path / "log"
    calls: list[str] = []

    def model(request: Request) -> Any:
        calls.append(request.kind)
        if len(calls) == 1:
            return HOLD  # the first worker hangs here until it is killed
        users = [m for m in request.messages if m["role"] == "user"]
        return answer(memories=[{"type": "convention", "title": m["text"][:40], "text": m["text"],
                                 "confidence": 0.8, "messages": [m["id"]]} for m in users])

    with running(model) as fake:
        env = {"GITMEM_EMBEDDINGS": "none", "GITMEM_LLM_BASE_URL": fake.url, "GITMEM_LLM_TIMEOUT": "120",
               "GITMEM_INGEST_CLAIM_SECONDS": "3", "GITMEM_INGEST_IDLE_SECONDS": "20"}
        web = start_web(settings, log, **env)
        try:
            post(web.url, key, MESSAGES)  # type: ignore[attr-defined]
        finally:
            kill(web, signal.SIGKILL)
        with worker(settings, log, **env) as first:
            assert fake.received.wait(90), log.read_text(errors="replace")
            kill(first, signal.SIGKILL)
        fake.release()
        assert memories(settings) == []
        # A new worker with the beat: the sweep finds the buffer whose claim lapsed and queues it again.
        with worker(settings, log, "--beat", **env):
            wait_for(lambda: len(memories(settings)) == 3, "the distilling by the second worker", log)
            time.sleep(6)  # a sweep or a redelivery after this must not extract it again
        assert len(ingest_commits(settings)) == 1
        assert len(memories(settings)) == 3
        # Once by the killed worker, once by the next: no sweep or redelivery extracts it again.
        assert calls.count("extract") == 2, calls
    service = MemoryService(settings)
    try:
        stats = service.ingest_status("default")
    finally:
        service.close()
    assert stats["buffers_done"] == 1 and stats.get("buffers_sealed", 0) == 0 and stats["messages"] == 3
    # With Redis (the hosts' shared one), the buffers live there; else in SQLite in the shared home.
    assert os.path.exists(settings.home / "ingest" / "default.sqlite") == (settings.shared_redis_url is None)
