"""Maintenance: packing real repositories beside writers."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem.repo import AlreadyRunning, Change, Namespaces, RunState, packing
from gitmem.service import MemoryService
from gitmem.settings import Settings

from .conftest import Run, git, namespace_of
from .test_concurrency import assert_linear, write_distinct

Fsck = Callable[[str], None]


def remember_many(svc: MemoryService, count: int, namespace: str = "default") -> list[str]:
    out = []
    for i in range(count):
        result = svc.remember(namespace, f"Service {i} listens on port {8000 + i} behind the proxy.", type="fact")
        assert result.memory is not None
        out.append(result.memory.id)
    return out


def all_refs(repo: Path) -> dict[str, str]:
    lines = git(repo, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    return dict(line.split(" ", 1) for line in lines)


def loose_path(repo: Path, oid: str) -> Path:
    return repo / "objects" / oid[:2] / oid[2:]


def exists(repo: Path, oid: str) -> bool:
    return subprocess.run(["git", "--git-dir", str(repo), "cat-file", "-e", oid]).returncode == 0


# --- maintain ------------------------------------------------------------------------------------


def test_maintain_packs_loose_objects_and_every_memory_is_still_readable(
        svc: MemoryService, settings: Settings, fsck: Fsck) -> None:
    ids = remember_many(svc, 40)
    repo = settings.repos_dir / "default.git"
    texts = {memory_id: svc.show("default", memory_id).text for memory_id in ids}

    result = svc.maintain("default")

    assert result.before.loose >= 4 * 40 and result.before.packs == 0
    assert result.after.loose == 0 and result.after.packs == 1
    assert result.after.packed >= result.before.loose
    assert result.after.size_bytes < result.before.size_bytes
    assert packing.count_objects(repo) == result.after
    assert (repo / "packed-refs").is_file() and not (repo / "refs" / "heads" / "main").exists()
    fsck("default")
    # The service opened before the packing reads every memory from the pack...
    assert {memory_id: svc.show("default", memory_id).text for memory_id in ids} == texts
    # ...and so does a new one; the reflog of main is whole and writing goes on.
    fresh = MemoryService(settings)
    assert {memory_id: fresh.show("default", memory_id).text for memory_id in ids} == texts
    fresh.close()
    assert_linear(repo, 41)
    remember_many(svc, 3, "default")
    assert svc.recall("default", "port 8002")[0].memory.text.startswith("Service 2 listens")
    assert_linear(repo, 44)
    fsck("default")


def test_objects_younger_than_two_weeks_are_kept_older_unreachable_ones_pruned(
        svc: MemoryService, settings: Settings, fsck: Fsck) -> None:
    store = namespace_of(svc).store
    repo = store.path
    # What a writer holds between writing its objects and moving the ref: unreachable, fresh.
    fresh = str(store.repo.create_blob(b"written a moment ago, not referenced yet\n"))
    # Garbage three weeks old: a lost race long ago.
    old = str(store.repo.create_blob(b"written three weeks ago, never referenced\n"))
    # Three weeks old too, but a writer has just needed it again (libgit2 freshens its mtime).
    reused = str(store.repo.create_blob(b"old, and needed again by a writer now\n"))
    weeks_ago = time.time() - 21 * 86400
    for oid in (old, reused):
        os.utime(loose_path(repo, oid), (weeks_ago, weeks_ago))
    store.repo.create_blob(b"old, and needed again by a writer now\n")

    svc.maintain("default")

    assert exists(repo, fresh) and exists(repo, reused)
    assert not exists(repo, old)
    # Unreachable objects stay loose (never in the pack), so the next run judges them by age again.
    assert loose_path(repo, fresh).is_file()
    fsck("default")


def churn_refs(home: str, worker: int, count: int) -> list[str]:
    """What reviews do to refs: make branches and closed-review refs, delete every other one."""
    store = Namespaces(Settings(home=Path(home))).open("default").store
    kept = []
    for i in range(count):
        head = store.head()
        closed = f"refs/gitmem/closed/{worker}-{i}"
        store.move_ref(closed, head.id, None, "close")
        branch = store.write_branch(head, [Change({f"fact/churn-{worker}-{i}.md": b"churn\n"}, "churn", "test")],
                                    f"refs/heads/consolidate/default/{worker}-{i}", "churn")
        if i % 2:
            store.delete_ref(closed)
            store.delete_ref(branch)
        else:
            kept += [closed, branch]
    return kept


def test_writes_racing_maintenance_lose_nothing(settings: Settings, svc: MemoryService, fsck: Fsck) -> None:
    writers, writes = 2, 60
    ctx = multiprocessing.get_context("spawn")
    runs = 0
    home = str(settings.home)
    with ctx.Pool(writers + 1) as pool:
        memories = pool.starmap_async(write_distinct, [(home, w, writes) for w in range(writers)])
        refs = pool.starmap_async(churn_refs, [(home, 0, writes)])
        while not (memories.ready() and refs.ready()) or runs < 2:
            svc.maintain("default")
            runs += 1
        written = [item for chunk in memories.get(timeout=300) for item in chunk]
        kept = refs.get(timeout=300)[0]
    assert runs >= 2
    ids = {memory_id for memory_id, _ in written}
    assert len(ids) == writers * writes
    assert {m.id for m in svc.list("default", limit=1000)} == ids, "every write is present"
    repo = settings.repos_dir / "default.git"
    assert_linear(repo, writers * writes + 1)
    # A deleted ref stays deleted: `git pack-refs` never writes back one it read before.
    assert set(all_refs(repo)) == {"refs/heads/main", *kept}
    fsck("default")
    assert packing.count_objects(repo).packs >= 1


def test_two_maintenance_runs_of_a_namespace_never_overlap(
        svc: MemoryService, settings: Settings, gitmem: Run) -> None:
    remember_many(svc, 3)
    with RunState(settings.state_dir, "default").lock("maintenance"):
        with pytest.raises(AlreadyRunning, match="maintenance of namespace 'default' is already running"):
            svc.maintain("default")
        done = gitmem("maintain", "--namespace", "default", ok=False)
        assert done.returncode == 4
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    # A consolidation holds a lock of its own: packing is safe beside it.
    with RunState(settings.state_dir, "default").lock("consolidation"):
        assert svc.maintain("default").after.loose == 0


def test_maintain_command_reports_before_and_after(svc: MemoryService, gitmem: Run) -> None:
    svc.init("team")
    remember_many(svc, 5)
    out = gitmem("maintain").stdout.splitlines()
    assert [line.split(":")[0] for line in out] == ["default", "team"]
    assert re.match(r"default: loose objects [\d,]+ -> 0, packs 0 -> 1, size [\d.]+ KB -> [\d.]+ KB", out[0])
    data = json.loads(gitmem("maintain", "-n", "team", "--json").stdout)
    assert [d["namespace"] for d in data] == ["team"] and data[0]["after"]["packs"] == 1


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "code", "message"), [
    (["maintain", "--namespace", "nope"], 3, "namespace 'nope' does not exist"),
    (["maintain", "--namespace", "../etc"], 2, "invalid namespace"),
])
def test_bad_input_is_one_line_and_changes_nothing(svc: MemoryService, settings: Settings, gitmem: Run,
                                                   tmp_path: Path, args: list[str], code: int, message: str) -> None:
    remember_many(svc, 2)
    dest = tmp_path / "full"
    dest.mkdir()
    (dest / "precious.txt").write_text("keep me")
    afile = tmp_path / "a-file"
    afile.write_text("keep me too")
    new = tmp_path / "new"
    home_before = sorted(str(p.relative_to(settings.home)) for p in settings.repos_dir.rglob("*"))
    done = gitmem(*[a.format(dest=dest, file=afile, new=new) for a in args], ok=False)
    assert done.returncode == code, done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert sorted(p.name for p in dest.iterdir()) == ["precious.txt"]
    assert afile.read_text() == "keep me too" and not new.exists()
    assert sorted(str(p.relative_to(settings.home)) for p in settings.repos_dir.rglob("*")) == home_before
