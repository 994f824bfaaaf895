"""Consolidation leases on a real Redis: one holder across hosts, growing tokens, renewal, fencing."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmem.errors import AlreadyRunning, LeaseLost, ReviewStillOpen
from gitmem.repo import MAIN, RunState
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.conftest import git, namespace_of
from tests.fakes.openai_server import Request, answer, running

from .test_consolidate import plant
from .test_tasks import redis_up

REDIS = "redis://127.0.0.1:6379/13"
pytestmark = pytest.mark.skipif(not redis_up(), reason="Redis is not running at 127.0.0.1:6379")


@pytest.fixture
def leases() -> Iterator[Callable[..., Any]]:
    """Make RedisLeases under a prefix of this test's own (two calls: two hosts of one deployment)."""
    from gitmem.repo.leases import RedisLeases

    prefix = f"gitmem-test-{uuid.uuid4().hex[:8]}"
    made: list[RedisLeases] = []

    def make(seconds: float = 30.0) -> RedisLeases:
        made.append(RedisLeases(REDIS, prefix, seconds))
        return made[-1]

    yield make
    if made:
        client = made[0].client
        for key in client.scan_iter(f"{prefix}:*"):
            client.delete(key)
        for one in made:
            one.client.close()


def test_one_holder_at_a_time_and_tokens_grow(leases: Callable[..., Any]) -> None:
    host_a, host_b = leases(), leases()
    with host_a.hold("default") as first:
        with pytest.raises(AlreadyRunning, match=rf"already running \(host .*, pid \d+, token {first.token}\)"):
            with host_b.hold("default"):
                pass
        with host_b.hold("other"):  # namespaces are locked apart
            pass
        first.check()
    with host_b.hold("default") as second:
        assert second.token > first.token
    assert host_a.holder("default") is None  # released


def test_a_live_holder_keeps_renewing_its_lease(leases: Callable[..., Any]) -> None:
    host_a, host_b = leases(seconds=1.0), leases(seconds=1.0)
    with host_a.hold("default") as lease:
        time.sleep(2.5)  # two and a half lease lengths
        lease.check()
        with pytest.raises(AlreadyRunning):
            with host_b.hold("default"):
                pass


def test_a_stalled_holder_loses_its_lease_and_its_check_fails(leases: Callable[..., Any]) -> None:
    host_a, host_b = leases(seconds=1.0), leases(seconds=1.0)
    with host_a.hold("default") as stalled:
        stalled._stop.set()  # renewal stops, as when the process is frozen or cut off from Redis
        deadline = time.monotonic() + 10
        while host_a.holder("default") is not None:
            assert time.monotonic() < deadline, "the lease never expired"
            time.sleep(0.1)
        with host_b.hold("default") as taken:
            assert taken.token > stalled.token
            with pytest.raises(LeaseLost, match="expired"):
                stalled.check()
            taken.check()
        assert host_b.holder("default") is None
    # The stalled holder's release left the other's lease alone (it was already gone here too).


def test_the_file_lock_and_the_lease_are_both_taken(tmp_path: Path, leases: Callable[..., Any]) -> None:
    shared = leases()
    host_a = RunState(tmp_path / "state-a", "default", shared)
    host_b = RunState(tmp_path / "state-b", "default", shared)  # another host: its own file lock
    with host_a.lock() as fence:
        assert fence.token is not None
        with pytest.raises(AlreadyRunning):
            with host_b.lock():
                pass
        with pytest.raises(AlreadyRunning):
            with RunState(tmp_path / "state-a", "default").lock():  # the file lock alone, same host
                pass


@pytest.fixture
def redis_svc(tmp_path: Path) -> Iterator[MemoryService]:
    settings = Settings(home=tmp_path / "home", redis_url=REDIS, celery_queue=f"gitmem-test-{uuid.uuid4().hex[:8]}")
    svc = MemoryService(settings)
    svc.init("default")
    yield svc
    leases = svc._leases()
    if leases is not None:
        for key in leases.client.scan_iter(f"{settings.celery_queue}:*"):
            leases.client.delete(key)
    svc.close()


def test_a_run_whose_lease_was_taken_over_writes_nothing(redis_svc: MemoryService) -> None:
    plant(redis_svc, "Use descriptive variable and method names.", days=2)
    plant(redis_svc, "Use descriptive variable and method names (e.g., IsUserSignedIn).", days=1)
    store = namespace_of(redis_svc).store
    main, refs = store.head_id(MAIN), set(store.repo.references)
    leases = redis_svc._leases()
    assert leases is not None

    def respond(request: Request) -> str:
        # While the model thinks, the run's lease lapses and a run on another host takes it.
        holder = leases.holder("default")
        assert holder is not None
        leases.client.set(leases.key("default"), f"{holder.token + 1}:elsewhere:1", px=30_000)
        return answer(merged="Use descriptive names for variables and methods.", reason="dup")

    from gitmem.endpoints import OpenAICompatible

    with running(respond) as fake:
        llm = OpenAICompatible(fake.url, "fake", None, timeout=10, retries=0)
        with pytest.raises(LeaseLost, match="token"):
            redis_svc.consolidate("default", llm=llm)
    assert fake.kinds() == ["merge"]
    assert store.head_id(MAIN) == main
    assert set(store.repo.references) - {"refs/gitmem/reviews"} == refs  # no branch, no review
    assert redis_svc.reviews.list("default") == []
    leases.client.delete(leases.key("default"))
    assert redis_svc.consolidate("default").review == 1  # the next run is clean
    git(redis_svc.settings.repos_dir / "default.git", "fsck", "--strict", "--no-progress")


def test_a_run_never_overlaps_an_open_consolidation_review(redis_svc: MemoryService) -> None:
    plant(redis_svc, "Use descriptive variable and method names.", days=2)
    plant(redis_svc, "Use descriptive variable and method names (e.g., IsUserSignedIn).", days=1)
    assert redis_svc.consolidate("default").review == 1
    with pytest.raises(ReviewStillOpen, match=r"review #1 .* still open") as raised:
        redis_svc.consolidate("default")
    assert raised.value.number == 1
    assert [r.number for r in redis_svc.reviews.list("default")] == [1]
    redis_svc.reviews.reject("default", 1, actor="alice", reason="keep them apart")
    # Once decided, a run may start again; the merge turned down is not proposed a second time.
    again = redis_svc.consolidate("default")
    assert again.review is None and again.summary == "nothing to consolidate"
