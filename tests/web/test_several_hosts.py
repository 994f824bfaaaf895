"""Two `gitmem serve` processes over one home: keys, sessions and the webhook replay window are shared.

Run twice: as two processes of one host (one state folder, no broker: SQLite under state/), and
as two hosts (a state folder each, as on hosts whose state is on local disk, and Redis shared).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from gitmem.repo import KeyStore
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.web.auth import sign

from .test_serve import free_port, redis_answers

STARTUP_LIMIT = 90.0
REDIS_DB = "redis://127.0.0.1:6379/13"
HMAC_SECRET = "shared-hmac-secret"


def base_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITMEM_", "SLACK_"))}
    env["GITMEM_HOME"] = str(home)
    env.update(extra)
    return env


@contextmanager
def serving(env: dict[str, str], log: Path, *, threads: int = 2) -> Iterator[str]:
    """`gitmem serve --no-worker` in its own process group; yields its URL once /healthz answers."""
    port = free_port()
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gitmem", "serve", "--no-worker", "--port", str(port), "--workers", "1",
             "--threads", str(threads)],
            env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_LIMIT
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"gitmem serve exited {proc.returncode}:\n{log.read_text(errors='replace')}")
            try:
                if httpx.get(f"{url}/healthz", timeout=5).json()["repository"]["ok"]:
                    break
            except (httpx.TransportError, ValueError, KeyError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"gitmem serve never answered:\n{log.read_text(errors='replace')}")
            time.sleep(0.3)
        yield url
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGTERM) -> None:
    """Signal a process group and wait for it (SIGKILL after 30 s)."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        return
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def signed(body: dict[str, object], timestamp: int | None = None) -> tuple[bytes, dict[str, str]]:
    data = json.dumps(body).encode()
    ts = int(time.time()) if timestamp is None else timestamp
    return data, {"X-Gitmem-Timestamp": str(ts), "X-Gitmem-Signature": sign(HMAC_SECRET, ts, data),
                  "Content-Type": "application/json"}


def sign_in(client: httpx.Client, url: str, key: str) -> None:
    page = client.get(f"{url}/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token, page.text
    done = client.post(f"{url}/login", data={"key": key, "csrf_token": token.group(1)})
    assert done.status_code == 303, done.text


@pytest.fixture(params=["one-host", "two-hosts"])
def hosts(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """Two servers over one home; yields their URLs and the home."""
    home = tmp_path / "home"
    svc = MemoryService(Settings(home=home))
    svc.init("default")
    svc.close()
    shared = {"GITMEM_HMAC_SECRET": HMAC_SECRET}
    if request.param == "one-host":
        envs = [base_env(home, **shared), base_env(home, **shared)]
    else:
        if not redis_answers():
            pytest.skip("no Redis on 127.0.0.1:6379")
        shared.update(GITMEM_BROKER_URL=REDIS_DB, GITMEM_CELERY_QUEUE=f"gitmem-hosts-{uuid.uuid4().hex[:8]}")
        envs = [base_env(home, GITMEM_STATE_HOME=str(tmp_path / f"state-{n}"), **shared) for n in "ab"]
    with ExitStack() as stack:
        a, b = (stack.enter_context(serving(env, tmp_path / f"serve-{n}.log"))
                for n, env in zip("ab", envs, strict=True))
        yield a, b, home


def test_keys_sessions_and_replays_are_shared_by_every_server(hosts: tuple[str, str, Path]) -> None:
    a, b, home = hosts
    # A key made after both servers started (another process: the test) works on both at once.
    secret, made = KeyStore(home).create("default", "writer", name="agent")
    for url in (a, b):
        got = httpx.get(f"{url}/api/v1/namespaces/default/memories", headers={"X-API-Key": secret}, timeout=30)
        assert got.status_code == 200, (url, got.text)
    created = httpx.post(f"{a}/api/v1/namespaces/default/memories", headers={"X-API-Key": secret},
                         json={"text": "Deploys go through the release train"}, timeout=30)
    assert created.status_code == 201
    memory_id = created.json()["memory"]["id"]

    # A page session signed in on one server is good on the other (one secret key for both).
    with httpx.Client(follow_redirects=False, timeout=30) as browser:
        sign_in(browser, a, secret)
        page = browser.get(f"{b}/ns/default/memories/{memory_id}")
        assert page.status_code == 200 and "release train" in page.text

        # A signed webhook request is taken once, by whichever server gets it first.
        data, headers = signed({"namespace": "default", "memory_id": memory_id, "action": "confirm",
                                "actor": "ci"})
        first = httpx.post(f"{a}/api/v1/feedback", content=data, headers=headers, timeout=30)
        assert first.status_code == 200, first.text
        replayed = httpx.post(f"{b}/api/v1/feedback", content=data, headers=headers, timeout=30)
        assert replayed.status_code == 401 and "replay" in replayed.json()["error"]["message"]

        # Revoking the key stops it on both servers at their next request, page session included.
        KeyStore(home).revoke(made.id)
        for url in (a, b):
            refused = httpx.get(f"{url}/api/v1/namespaces/default/memories", headers={"X-API-Key": secret},
                                timeout=30)
            assert refused.status_code == 401, url
        assert browser.get(f"{b}/ns/default/memories/{memory_id}").status_code in (302, 303)
