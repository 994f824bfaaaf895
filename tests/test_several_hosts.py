"""Several hosts on Redis: two `gitmem serve` and two `gitmem worker` processes sharing one home.

Each "host" is a server and a worker with a state folder of their own (GITMEM_STATE_HOME), as on
machines that keep derived state on local disk, so only the shared home and Redis connect them:
the file lock of one host does not stop the other, and the Redis lease must. Writes go through
both servers at once, both ask for a consolidation, and the worker running it is killed with
SIGKILL while it waits on the model: its lease lapses, the other worker runs the namespace, the
dead worker's task is handed back by Redis and finds the review open. Nothing is lost, the
repository is sound, and there is exactly one open review.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from gitmem import broker
from gitmem.repo import MAIN, KeyStore
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.conftest import git, namespace_of
from tests.fakes.openai_server import Request, running

from .test_consolidate import longest
from .test_tasks import RESULT_WAIT, redis_up, worker
from .web.test_several_hosts import base_env, serving

REDIS = "redis://127.0.0.1:6379/13"
LEASE = 6  # seconds: short, so a dead worker's lease lapses within the test
VISIBILITY = 16  # seconds before Redis hands a dead worker's task to another
WRITES = 24
WORDS = ("billing", "search", "login", "upload", "reports", "payments", "export", "audit", "mobile", "kafka",
         "nightly", "backup", "ledger", "invoice", "metrics", "alerts", "cache", "queue", "images", "fonts",
         "locale", "tokens", "sessions", "webhooks", "mailer", "sitemap", "crawler", "archive", "tenant",
         "quota", "pricing", "coupons", "refunds", "ratings", "comments", "feeds")

pytestmark = pytest.mark.skipif(not redis_up(), reason="Redis is not running at 127.0.0.1:6379")


def statement(i: int) -> str:
    a, b, c = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)], WORDS[(i * 11 + 5) % len(WORDS)]
    return f"Team note {i}: the {a} pipeline stores {b} in {c}."


def wait_until(condition: Any, what: str, logs: list[Path], limit: float = RESULT_WAIT) -> Any:
    deadline = time.monotonic() + limit
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen; logs:\n" +
                                 "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-6000:]}" for p in logs))
        time.sleep(0.2)


@pytest.fixture
def queue() -> Iterator[str]:
    """A queue (and key prefix) of this test's own on the shared Redis; its keys go afterwards."""
    import redis

    name = f"gitmem-hosts-{uuid.uuid4().hex[:8]}"
    yield name
    client = redis.Redis.from_url(REDIS)
    for key in client.scan_iter(f"{name}*"):
        client.delete(key)
    client.close()


def test_two_hosts_share_one_home_and_a_killed_worker_loses_nothing(tmp_path: Path, queue: str) -> None:
    from gitmem.repo.leases import RedisLeases

    home = tmp_path / "home"
    settings = Settings(home=home, broker_url=REDIS, celery_queue=queue, state_home=tmp_path / "state-test",
                        lock_lease_seconds=LEASE)
    svc = MemoryService(settings)
    svc.init("default")
    writer = KeyStore(home).create("default", "writer", name="agent", kind="agent")[0]  # its statements merge
    reviewer = KeyStore(home).create("default", "reviewer", name="rita")[0]
    leases = RedisLeases(REDIS, queue, LEASE)

    gate = threading.Event()
    first = threading.Event()

    def respond(request: Request) -> str:
        if not first.is_set():  # the first run waits on the model until its worker is killed
            first.set()
            gate.wait(RESULT_WAIT)
        return longest(request)

    logs = [tmp_path / f"{kind}-{host}.log" for kind in ("serve", "worker") for host in "ab"]
    with running(respond) as fake, ExitStack() as stack:
        stack.callback(gate.set)
        common = {"GITMEM_BROKER_URL": REDIS, "GITMEM_CELERY_QUEUE": queue, "GITMEM_LLM_BASE_URL": fake.url,
                  "GITMEM_LLM_TIMEOUT": "120", "GITMEM_LOCK_LEASE_SECONDS": str(LEASE),
                  "GITMEM_BROKER_VISIBILITY_TIMEOUT": str(VISIBILITY), "GITMEM_CONSOLIDATE_MIN_ACTIVE": "1000"}
        hosts = {h: {**common, "GITMEM_STATE_HOME": str(tmp_path / f"state-{h}")} for h in "ab"}
        servers = [stack.enter_context(serving(base_env(home, **hosts[h]), tmp_path / f"serve-{h}.log",
                                               threads=4)) for h in "ab"]
        workers = {h: stack.enter_context(worker(settings, tmp_path / f"worker-{h}.log", **hosts[h]))
                   for h in "ab"}

        # Writes through both servers at once.
        def remember(i: int) -> httpx.Response:
            return httpx.post(f"{servers[i % 2]}/api/v1/namespaces/default/memories", timeout=60,
                              headers={"X-API-Key": writer}, json={"text": statement(i), "type": "fact"})

        with ThreadPoolExecutor(8) as pool:
            made = list(pool.map(remember, range(WRITES)))
        assert [r.status_code for r in made] == [201] * WRITES, (
            [r.text for r in made if r.status_code != 201],
            *(p.read_text(errors="replace")[-6000:] for p in logs if p.name.startswith("serve")))
        # As the workers plan it: a model decides, so clusters are not held apart by their details.
        assert svc.plan("default", strict=False).clusters, "the statements should give consolidation something to merge"
        store = namespace_of(svc).store
        main = store.head_id(MAIN)

        # Both servers ask for a consolidation; the first run stalls on the model.
        tasks = [httpx.post(f"{url}/api/v1/namespaces/default/consolidate", headers={"X-API-Key": writer},
                            json={}, timeout=60).json()["task_id"] for url in servers]
        wait_until(first.is_set, "a run asking the model", logs)
        holder = wait_until(lambda: leases.holder("default"), "a lease held", logs)
        doomed = next(h for h, proc in workers.items() if os.getpgid(holder.pid) == proc.pid)
        os.killpg(workers[doomed].pid, signal.SIGKILL)  # the whole worker, pool and all: a host dying
        workers[doomed].wait(30)
        assert store.head_id(MAIN) == main

        # The other worker takes over once the lease lapses; Redis hands the dead worker's task back.
        results = [broker.app_for(settings).AsyncResult(t).get(timeout=RESULT_WAIT + 2 * VISIBILITY)
                   for t in tasks]
        ran = [r for r in results if not r.get("skipped")]
        skipped = [r for r in results if r.get("skipped")]
        assert len(ran) == 1 and ran[0]["review"] == 1, results
        assert len(skipped) == 1 and skipped[0]["review"] == 1 and "still open" in skipped[0]["summary"], results
        survivor = "b" if doomed == "a" else "a"
        log = (tmp_path / f"worker-{survivor}.log").read_text(errors="replace")
        assert log.count(f"Task gitmem.consolidate[{tasks[0]}] received") + \
            log.count(f"Task gitmem.consolidate[{tasks[1]}] received") >= 2  # both ended up here

        # Nothing lost, nothing half-written, one review.
        assert store.head_id(MAIN) == main
        texts = {m.text for m in svc.list("default", limit=1000)}
        assert {statement(i) for i in range(WRITES)} <= texts
        git(settings.repos_dir / "default.git", "fsck", "--strict", "--no-progress")
        reviews = svc.reviews.list("default")
        assert [(r.number, r.status, r.kind) for r in reviews] == [(1, "open", "consolidation")]
        branches = store.refs("refs/heads/consolidate/")
        assert branches == [reviews[0].branch]

        # And it can be approved through either server.
        approved = httpx.post(f"{servers[1]}/api/v1/namespaces/default/reviews/1/approve",
                              headers={"X-API-Key": reviewer}, json={}, timeout=60)
        assert approved.status_code == 200, approved.text
        git(settings.repos_dir / "default.git", "fsck", "--strict", "--no-progress")
    leases.client.close()
    svc.close()
