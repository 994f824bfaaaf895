"""Many processes writing one namespace at once, each with its own MemoryService."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.conftest import git

PROCESSES = 4
WRITES = 100


def write_distinct(home: str, worker: int, count: int) -> list[tuple[str, str]]:
    """Remember ``count`` new statements; return (id, outcome) of each."""
    service = MemoryService(Settings(home=Path(home)))
    try:
        out = []
        for i in range(count):
            result = service.remember("default", f"Worker {worker} wrote statement number {i}.",
                                      type="fact", author=f"worker-{worker}")
            assert result.memory is not None
            out.append((result.memory.id, result.outcome))
        return out
    finally:
        service.close()


def write_same(home: str, worker: int, count: int) -> list[tuple[str, str]]:
    """Remember the same ``count`` statements as every other worker, in a worker-specific order."""
    service = MemoryService(Settings(home=Path(home)))
    order = list(range(count))
    order = order[worker:] + order[:worker]
    try:
        out = []
        for i in order:
            result = service.remember("default", f"Shared statement number {i} for everyone.",
                                      source="agent", author=f"worker-{worker}")
            assert result.memory is not None
            out.append((result.memory.id, result.outcome))
        return out
    finally:
        service.close()


def run(target: Callable[[str, int, int], list[tuple[str, str]]], home: Path, count: int) -> list[tuple[str, str]]:
    # spawn: a fresh interpreter per worker, no inherited pygit2 or SQLite handles.
    with multiprocessing.get_context("spawn").Pool(PROCESSES) as pool:
        results = pool.starmap(target, [(str(home), w, count) for w in range(PROCESSES)])
    return [item for chunk in results for item in chunk]


def assert_linear(repo: Path, commits: int) -> None:
    lines = git(repo, "rev-list", "--parents", "main").strip().splitlines()
    assert len(lines) == commits
    assert [len(line.split()) for line in lines] == [2] * (commits - 1) + [1], "each commit has one parent"
    assert len(git(repo, "reflog", "show", "main").strip().splitlines()) == commits


def test_four_processes_writing_at_once_lose_nothing(settings: Settings, svc: MemoryService,
                                                     fsck: Callable[[str], None]) -> None:
    written = run(write_distinct, settings.home, WRITES)
    assert len(written) == PROCESSES * WRITES
    assert {outcome for _, outcome in written} == {"added"}
    ids = {memory_id for memory_id, _ in written}
    assert len(ids) == PROCESSES * WRITES
    stored = svc.list("default", limit=1000)
    assert {m.id for m in stored} == ids, "every write is present"
    assert {m.text for m in stored} == {f"Worker {w} wrote statement number {i}."
                                        for w in range(PROCESSES) for i in range(WRITES)}
    repo = settings.repos_dir / "default.git"
    assert_linear(repo, PROCESSES * WRITES + 1)
    files = git(repo, "ls-tree", "-r", "--name-only", "main").split()
    assert len(files) == PROCESSES * WRITES + 1
    fsck("default")


def test_the_same_statement_from_four_processes_is_stored_once(settings: Settings, svc: MemoryService,
                                                               fsck: Callable[[str], None]) -> None:
    count = 25
    written = run(write_same, settings.home, count)
    outcomes = Counter(outcome for _, outcome in written)
    assert outcomes == {"added": count, "reinforced": count * (PROCESSES - 1)}
    stored = svc.list("default", limit=1000)
    assert len(stored) == count, "no duplicates"
    assert all(m.access_count == PROCESSES - 1 for m in stored), "no reinforcement lost"
    assert_linear(settings.repos_dir / "default.git", count * PROCESSES + 1)
    fsck("default")


def recall_and_fold(home: str, worker: int, count: int) -> list[tuple[str, str]]:
    """Recall (recording uses) and fold the usage log, ``count`` times; return the uses recorded.

    Uses count by day, so two recalls folded together on one day are one use. Each recall here
    happens on a day of its own (the clock recall reads moves a day per call, apart per worker), so
    every recall is a use and the expected count is exact however the folds interleave.
    """
    from gitmem import recall as recall_module
    days = iter(range(worker * 1000, (worker + 1) * 1000))
    start = recall_module.now()
    recall_module.now = lambda: start + timedelta(days=next(days))  # type: ignore[assignment]
    service = MemoryService(Settings(home=Path(home)))
    try:
        out = []
        for _ in range(count):
            for hit in service.recall("default", "shared rule about folding"):
                out.append((hit.memory.id, "used"))
            service.fold_usage("default", actor=f"worker-{worker}")
        return out
    finally:
        service.close()


def test_uses_folded_by_four_processes_at_once_are_counted_once(settings: Settings, svc: MemoryService,
                                                                fsck: Callable[[str], None]) -> None:
    for i in range(3):
        svc.remember("default", f"Shared rule about folding number {i}.")
    used = run(recall_and_fold, settings.home, 15)
    svc.fold_usage("default")
    expected = Counter(memory_id for memory_id, _ in used)
    stored = {m.id: m.access_count for m in svc.list("default")}
    assert stored == dict(expected), "every use counted exactly once"
    assert svc.status("default")["pending_uses"] == 0
    fsck("default")


def init_and_write(home: str, worker: int, count: int) -> list[tuple[str, str]]:
    """Create the namespace ``fresh`` (as every other worker does at the same moment) and write to it."""
    service = MemoryService(Settings(home=Path(home)))
    try:
        service.init("fresh")
        out = []
        for i in range(count):
            result = service.remember("fresh", f"Worker {worker} wrote into a fresh namespace, note {i}.")
            out.append((result.memory.id if result.memory else "", result.outcome))
        return out
    finally:
        service.close()


def test_four_processes_creating_one_namespace_at_once(settings: Settings, fsck: Callable[[str], None]) -> None:
    written = run(init_and_write, settings.home, 5)
    assert {outcome for _, outcome in written} == {"added"}
    service = MemoryService(settings)
    assert {m.id for m in service.list("fresh")} == {memory_id for memory_id, _ in written}
    service.close()
    assert sorted(p.name for p in settings.repos_dir.iterdir()) == ["fresh.git"], \
        "no staging folders left behind"
    assert_linear(settings.repos_dir / "fresh.git", PROCESSES * 5 + 1)
    fsck("fresh")


def test_threads_of_two_services_writing_at_once_with_the_trigger_on(settings: Settings,
                                                                      fsck: Callable[[str], None]) -> None:
    """As two gunicorn processes of four threads do: the after-write trigger syncing the index beside writers.

    Each service stands for a process (its own index connection); the other's commits leave its
    index behind, so the trigger's sync writes. It once did so outside the namespace's lock, and
    began a transaction on the connection another thread of its process was writing through (a
    500 in the Docker layout: "cannot start a transaction within a transaction").
    """
    from concurrent.futures import ThreadPoolExecutor

    from gitmem.service import build_service

    services = [build_service(settings.with_(embeddings="none")) for _ in range(2)]
    services[0].init("default")
    threads, each = 8, 12

    def write(worker: int) -> list[str]:
        service = services[worker % 2]
        return [service.remember("default", f"Thread {worker} noted statement number {i}.").outcome
                for i in range(each)]

    try:
        with ThreadPoolExecutor(threads) as pool:
            outcomes = [o for chunk in pool.map(write, range(threads)) for o in chunk]
        assert outcomes == ["added"] * threads * each
        assert services[1].status("default")["by_state"].get("active") == threads * each
    finally:
        for service in services:
            service.close()
    fsck("default")
