"""``gitmem serve`` for real: gunicorn, the embedded broker's worker as a child, /healthz, shutdown."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gitmem.repo import KeyStore
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.web import create_app

from .conftest import Client, Keys, typed_client

STARTUP_LIMIT = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_healthz_reports_repository_broker_and_worker(client: Client) -> None:
    report = client.get("/healthz")
    assert report.status_code == 200
    body = report.json
    assert body["repository"]["ok"] is True and body["repository"]["namespaces"] == 1
    assert body["broker"]["ok"] is True and body["broker"]["embedded"] is True
    assert body["worker"]["ok"] is False  # nobody started one
    assert body["status"] == "degraded"


def test_healthz_says_starting_while_the_worker_serve_started_boots(client: Client, svc: MemoryService) -> None:
    booting = subprocess.Popen(["sleep", "60"])  # stands for the worker process: alive, not answering pings
    try:
        svc.worker_started(booting.pid)
        body = client.get("/healthz").json
        assert body["status"] == "starting" and body["worker"] == {"ok": False, "workers": [], "starting": True}
    finally:
        booting.kill()
        booting.wait()
    # Gone without ever answering: missing, not starting.
    assert client.get("/healthz").json["status"] == "degraded"
    svc.worker_stopped(booting.pid)
    assert client.get("/healthz").json["worker"] == {"ok": False, "workers": []}


def test_healthz_fails_when_the_repository_cannot_be_read(client: Client, svc: MemoryService) -> None:
    svc.close()
    objects = svc.settings.repos_dir / "default.git" / "objects"
    shutil.rmtree(objects)
    objects.mkdir()
    report = client.get("/healthz")
    assert report.status_code == 503 and report.json["repository"]["ok"] is False


def test_consolidate_dry_run_returns_the_plan(client: Client, keys: Keys, svc: MemoryService) -> None:
    # The agent's statement first: the write gate would fold it into the user's 0.8-similar one.
    agent = svc.remember("default", "Use pytest fixtures for test setup", source="agent").memory
    user = svc.remember("default", "Use pytest fixtures for setup", source="user").memory
    assert agent is not None and user is not None
    before = svc.status("default")["head"]
    response = client.post("/api/v1/namespaces/default/consolidate", headers=keys.auth("reader"),
                           json={"dry_run": True})
    assert response.status_code == 200 and response.json["dry_run"] is True
    plan = response.json["plan"]
    assert (plan["namespace"], plan["head"], plan["active"]) == ("default", before, 2)
    [cluster] = plan["clusters"]
    assert {m["id"]: m["source"] for m in cluster["members"]} == {agent.id: "agent", user.id: "user"}
    assert plan["pairs"] == [] and plan["lifecycle"] == [] and plan["llm_calls"] == 1
    assert svc.status("default")["head"] == before
    assert svc.reviews.list("default") == []
    refused = client.post("/api/v1/namespaces/default/consolidate", headers=keys.auth("reader"), json={})
    assert refused.status_code == 403


SECRET_IN_URL = "s3cr3t-broker-pass"


@pytest.mark.parametrize("url", [
    f"redis://gitmem:{SECRET_IN_URL}@127.0.0.1:1/0",  # nothing listens on port 1: refused at once
    f"redis://:{SECRET_IN_URL}@127.0.0.1:1/0",
    f"amqp://gitmem:{SECRET_IN_URL}@127.0.0.1:1//",
    f"redis://gitmem:{SECRET_IN_URL}@127.0.0.1:1/0;redis://gitmem:{SECRET_IN_URL}@127.0.0.1:2/0",
])
def test_healthz_never_shows_the_broker_password(settings: Settings, url: str) -> None:
    service = MemoryService(settings.with_(broker_url=url))
    service.init("default")
    try:
        report = typed_client(create_app(service=service)).get("/healthz")
    finally:
        service.close()
    assert report.status_code == 200
    assert report.json["broker"]["ok"] is False and report.json["broker"]["embedded"] is False
    assert ":***@127.0.0.1:1" in report.json["broker"]["url"]
    assert SECRET_IN_URL not in report.get_data(as_text=True)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str, subprocess.Popen[str], int]]:
    """``gitmem serve`` in a subprocess with nothing configured; yields url, key, process, worker pid."""
    home = tmp_path / "served"
    service = MemoryService(Settings(home=home))
    service.init("default")
    service.close()
    key = KeyStore(home).create("default", "writer", name="agent")[0]
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITMEM_", "SLACK_"))}
    env["GITMEM_HOME"] = str(home)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitmem", "serve", "--port", str(port), "--workers", "1", "--threads", "2"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"background worker \(pid (\d+)\)", line)
    assert found, line
    try:
        yield f"http://127.0.0.1:{port}", key, proc, int(found.group(1))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        proc.stderr.close()


def wait_for(url: str, check: str) -> dict[str, object]:
    """Poll /healthz until ``check`` is ok (the worker takes a few seconds to boot)."""
    deadline = time.monotonic() + STARTUP_LIMIT
    last: dict[str, object] = {}
    while time.monotonic() < deadline:
        try:
            last = httpx.get(f"{url}/healthz", timeout=5).json()
        except httpx.TransportError:
            pass
        else:
            part = last.get(check)
            if isinstance(part, dict) and part.get("ok"):
                return last
        time.sleep(0.3)
    raise AssertionError(f"{check} never became healthy: {last}")


def test_serve_runs_the_app_and_a_worker_and_stops_both(
        served: tuple[str, str, subprocess.Popen[str], int]) -> None:
    url, key, proc, worker_pid = served
    statuses: list[str] = []
    deadline = time.monotonic() + STARTUP_LIMIT
    while not statuses or statuses[-1] != "ok":
        assert time.monotonic() < deadline, statuses
        try:
            statuses.append(httpx.get(f"{url}/healthz", timeout=5).json()["status"])
        except httpx.TransportError:
            time.sleep(0.05)
    # Ready when it says so: never "degraded" while the worker it started comes up.
    assert set(statuses) <= {"starting", "ok"}, statuses
    health = wait_for(url, "worker")
    assert health["status"] == "ok"

    made = httpx.post(f"{url}/api/v1/namespaces/default/memories", headers={"X-API-Key": key},
                      json={"text": "Served through gunicorn"}, timeout=30)
    assert made.status_code == 201
    queued = httpx.post(f"{url}/api/v1/namespaces/default/consolidate", headers={"X-API-Key": key},
                        json={}, timeout=30)
    assert queued.status_code == 202 and queued.json()["task_id"]

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    with pytest.raises(ProcessLookupError):
        os.kill(worker_pid, 0)


def redis_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.mark.skipif(not redis_answers(), reason="no Redis on 127.0.0.1:6379")
def test_serve_with_a_broker_configured_serves_only(tmp_path: Path) -> None:
    home = tmp_path / "served"
    MemoryService(Settings(home=home)).init("default")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITMEM_", "SLACK_"))}
    env.update(GITMEM_HOME=str(home), GITMEM_BROKER_URL="redis://127.0.0.1:6379/14",
               GITMEM_CELERY_QUEUE=f"gitmem-serve-test-{port}")
    proc = subprocess.Popen([sys.executable, "-m", "gitmem", "serve", "--port", str(port), "--workers", "1"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        health = wait_for(f"http://127.0.0.1:{port}", "broker")
        assert health["broker"]["embedded"] is False  # type: ignore[index]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert "background worker" not in err


def test_serve_on_a_busy_port_fails_at_once_naming_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITMEM_", "SLACK_"))}
    env["GITMEM_HOME"] = str(tmp_path / "home")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "gitmem", "serve", "--port", str(port)], env=env,
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    # One line naming the port; no background worker started, no gunicorn retries.
    assert done.stderr == (f"error: cannot listen on 127.0.0.1:{port}: Address already in use; stop what is "
                           "using it or choose another --port\n")


@pytest.mark.parametrize(("url", "shown"), [
    ("redis://:pw@h:6379/0", "redis://:***@h:6379/0"),
    ("redis://u:pw@[::1]:6379/0;redis://u:pw@h2/0", "redis://u:***@[::1]:6379/0;redis://u:***@h2/0"),
    ("amqp://g:p@h//?password=x&heartbeat=1", "amqp://g:***@h//?password=***&heartbeat=1"),
    ("redis://h:6379/0", "redis://h:6379/0"),
])
def test_redact_hides_every_password_and_keeps_the_rest(url: str, shown: str) -> None:
    from gitmem.web.health import redact

    assert redact(url) == shown


def test_a_push_to_a_served_namespace_opens_a_review_and_reaches_its_mirror(
        served: tuple[str, str, subprocess.Popen[str], int], tmp_path: Path) -> None:
    url, key, _, _ = served
    home = tmp_path / "served"
    bare = tmp_path / "mirror.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    service = MemoryService(Settings(home=home))
    try:
        service.mirror_add("default", str(bare), name="backup")
    finally:
        service.close()
    wait_for(url, "worker")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
    work = tmp_path / "work"
    auth = ["-c", f"http.extraHeader=Authorization: Bearer {key}"]
    subprocess.run(["git", *auth, "clone", "-q", f"{url}/git/default.git", str(work)], env=env, check=True)
    (work / "fact").mkdir()
    (work / "fact" / "ci.md").write_text("---\ntype: fact\n---\n\nCI runs on Buildkite\n")
    subprocess.run(["git", "add", "-A"], cwd=work, env=env, check=True)
    subprocess.run(["git", "-c", "user.name=A", "-c", "user.email=a@x", "commit", "-qm", "CI"], cwd=work, env=env,
                   check=True)
    pushed = subprocess.run(["git", *auth, "push", "origin", "HEAD:refs/for/main"], cwd=work, env=env,
                            capture_output=True, text=True, timeout=120)
    assert pushed.returncode == 0, pushed.stderr
    assert f"remote: review #1 opened with 1 commit: {url}/ns/default/reviews/1" in pushed.stderr
    deadline = time.monotonic() + STARTUP_LIMIT
    while "review/push-agent-" not in subprocess.run(["git", "branch"], cwd=bare, capture_output=True,
                                                       text=True).stdout:
        assert time.monotonic() < deadline, "the review branch never reached the mirror"
        time.sleep(0.3)
    while httpx.get(f"{url}/healthz", timeout=30).json()["mirrors"]["mirrors"]["default/backup"]["ok"] is not True:
        assert time.monotonic() < deadline, "the mirror's push never showed in /healthz"
        time.sleep(0.3)


def test_two_servers_under_one_home_each_keep_their_own_control_socket() -> None:
    # gunicorn's control socket was ~/.gunicorn/gunicorn.ctl for every server under one HOME: the
    # second took the path over, and stopping either deleted the other's socket.
    home = Path(tempfile.mkdtemp(prefix="gm"))  # short: a Unix socket's path has at most 108 bytes
    try:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GITMEM_", "SLACK_")) and k != "XDG_RUNTIME_DIR"}
        env.update(HOME=str(home), GITMEM_HOME=str(home / "gitmem"))
        MemoryService(Settings(home=home / "gitmem")).init("default")
        ports = [free_port(), free_port()]
        procs = [subprocess.Popen([sys.executable, "-m", "gitmem", "serve", "--port", str(port), "--workers", "1",
                                   "--no-worker"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for port in ports]
        try:
            for port in ports:
                wait_for(f"http://127.0.0.1:{port}", "repository")
            sockets = [home / ".gunicorn" / f"gitmem-127.0.0.1-{port}.ctl" for port in ports]
            deadline = time.monotonic() + STARTUP_LIMIT
            while not all(s.exists() for s in sockets):
                assert time.monotonic() < deadline, sorted(map(str, (home / ".gunicorn").glob("*")))
                time.sleep(0.2)
            procs[0].send_signal(signal.SIGTERM)
            assert procs[0].wait(timeout=60) == 0
            assert not sockets[0].exists() and sockets[1].exists()
            with socket.socket(socket.AF_UNIX) as control:  # the other server's still answers
                control.connect(str(sockets[1]))
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(timeout=60)
    finally:
        shutil.rmtree(home, ignore_errors=True)
