"""Maintenance and backup: packing real repositories beside writers, and backups plain git restores."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import shutil
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem.errors import InvalidInput, NamespaceNotFound
from gitmem.repo import AlreadyRunning, Change, KeyStore, Namespaces, RunState, packing
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.web import secret_key

from .conftest import Run, git, namespace_of
from .test_concurrency import assert_linear, write_distinct
from .test_consolidate import plant
from .test_reviews import three_merges

BACKUP_DOCS = (Path(__file__).resolve().parent.parent / "docs" / "backup.md").read_text(encoding="utf-8")
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


# --- backup and restore --------------------------------------------------------------------------


def populate(svc: MemoryService, settings: Settings) -> dict[str, object]:
    """Memories in two namespaces, a rejected and an open review, keys and the session secret."""
    remember_many(svc, 5)
    rejected = three_merges(svc)
    svc.reviews.reject("default", rejected, actor="bob", reason="not yet")
    # A rejected merge is not proposed again: the open review needs memories of its own.
    plant(svc, "Run the linters before every push.", days=2)
    plant(svc, "Run the linters before every push (ruff and mypy).", days=1)
    open_review = svc.consolidate("default").review
    assert open_review is not None
    svc.init("team")
    remember_many(svc, 2, "team")
    key, _ = KeyStore(settings.home).create("*", "reader", name="agent")
    return {"key": key, "secret": secret_key(settings), "state": snapshot(svc, settings)}


def snapshot(svc: MemoryService, settings: Settings) -> dict[str, object]:
    return {ns: {"memories": sorted((m.id, m.text, m.state) for m in svc.list(ns, state=None, limit=1000)),
                 "reviews": [(r.number, r.status, r.head) for r in svc.reviews.list(ns)],
                 "refs": all_refs(settings.repos_dir / f"{ns}.git")}
            for ns in ("default", "team")}


def check_restored(settings: Settings, before: dict[str, object], fsck: Fsck) -> None:
    restored = MemoryService(settings)
    try:
        assert restored.namespaces() == ["default", "team"]
        assert snapshot(restored, settings) == before["state"]
        assert any(ref.startswith("refs/gitmem/closed/") for ref in all_refs(settings.repos_dir / "default.git"))
        key = KeyStore(settings.home).verify(str(before["key"]))
        assert key is not None and key.name == "agent"
        assert secret_key(settings) == before["secret"]
        for name in ("keys.json", "secret_key"):
            assert stat.S_IMODE((settings.home / name).stat().st_mode) == 0o600
        for ns in ("default", "team"):
            fsck(ns)
            repo = settings.repos_dir / f"{ns}.git"
            assert git(repo, "config", "core.logAllRefUpdates").strip() == "always"
            assert "remote.origin" not in git(repo, "config", "--list", "--local")
        # The restored home is a working one: a write lands on main, with a reflog entry.
        restored.remember("default", "Written after the restore.")
        assert git(settings.repos_dir / "default.git", "reflog", "show", "main").strip()
        fsck("default")
    finally:
        restored.close()


def docs_restore_block() -> str:
    after = BACKUP_DOCS.split("with git alone", 1)[1]
    return after.split("```sh\n", 1)[1].split("```", 1)[0]


def test_a_backup_restores_with_plain_git_as_the_docs_say(
        svc: MemoryService, settings: Settings, fsck: Fsck, gitmem: Run, tmp_path: Path) -> None:
    before = populate(svc, settings)
    dest = tmp_path / "backup"
    out = gitmem("backup", str(dest)).stdout
    assert "default: repos/default.bundle" in out and "team: repos/team.bundle" in out

    manifest = json.loads((dest / "MANIFEST.json").read_text())
    assert manifest["namespaces"]["default"]["main"] == before["state"]["default"]["refs"]["refs/heads/main"]  # type: ignore[index]
    assert set(manifest["files"]) == {"keys.json", "secret_key"}
    assert manifest["gitmem_version"] and manifest["git_version"] and manifest["created"].endswith("Z")
    assert stat.S_IMODE(dest.stat().st_mode) == 0o700
    for path in [dest / "MANIFEST.json", dest / "keys.json", dest / "secret_key", *dest.glob("repos/*.bundle")]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    # The bundles hold every ref: main, the reviews and the closed reviews' commits.
    bundled = packing.bundle_refs(dest / "repos" / "default.bundle")
    assert {k: v for k, v in bundled.items() if k != "HEAD"} == before["state"]["default"]["refs"]  # type: ignore[index]

    svc.close()
    shutil.rmtree(settings.home)  # the machine is gone
    script = docs_restore_block()
    assert "git clone --quiet --mirror" in script
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "BACKUP": str(dest),
           "GITMEM_HOME": str(settings.home)}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    check_restored(settings, before, fsck)


def test_restore_backup_command(svc: MemoryService, settings: Settings, fsck: Fsck, gitmem: Run,
                                tmp_path: Path) -> None:
    before = populate(svc, settings)
    dest = tmp_path / "backup"
    svc.backup(dest)
    svc.close()
    shutil.rmtree(settings.home)
    out = gitmem("restore-backup", str(dest)).stdout
    assert out.splitlines()[-1] == f"restored into {settings.home}"
    check_restored(settings, before, fsck)
    # Restoring again over what is there is refused, and changes nothing.
    refs = all_refs(settings.repos_dir / "default.git")
    again = gitmem("restore-backup", str(dest), ok=False)
    assert again.returncode == 2 and "exist already" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    assert all_refs(settings.repos_dir / "default.git") == refs


def test_backup_without_a_session_secret_file_names_the_environment(settings: Settings, tmp_path: Path) -> None:
    svc = MemoryService(settings.with_(secret_key="from-the-environment"))
    svc.init("default")
    backed = svc.backup(tmp_path / "backup", ["default"])
    svc.close()
    assert backed.manifest["files"] == {}
    assert "GITMEM_SECRET_KEY" in backed.manifest["not_included"]
    assert sorted(p.name for p in (tmp_path / "backup").iterdir()) == ["MANIFEST.json", "repos"]


@pytest.mark.parametrize(("args", "code", "message"), [
    (["backup", "{dest}"], 2, "is not an empty folder"),
    (["backup", "{file}"], 2, "is not an empty folder"),
    (["backup", "{new}", "--namespace", "nope"], 3, "namespace 'nope' does not exist"),
    (["backup", "{new}", "--namespace", "../etc"], 2, "invalid namespace"),
    (["maintain", "--namespace", "nope"], 3, "namespace 'nope' does not exist"),
    (["maintain", "--namespace", "../etc"], 2, "invalid namespace"),
    (["restore-backup", "{dest}"], 2, "not a gitmem backup"),
    (["restore-backup", "{new}"], 2, "is not a folder"),
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


def test_a_damaged_backup_is_refused_before_anything_is_restored(svc: MemoryService, settings: Settings,
                                                                 tmp_path: Path) -> None:
    remember_many(svc, 2)
    svc.init("team")
    dest = tmp_path / "backup"
    svc.backup(dest)
    manifest = json.loads((dest / "MANIFEST.json").read_text())
    manifest["namespaces"]["team"]["main"] = "0" * 40
    (dest / "MANIFEST.json").write_text(json.dumps(manifest))
    target = MemoryService(Settings(home=tmp_path / "other"))
    with pytest.raises(InvalidInput, match="does not hold the main the manifest names"):
        target.restore_backup(dest)
    assert not (tmp_path / "other" / "repos").exists() or not any((tmp_path / "other" / "repos").iterdir())
    with pytest.raises(NamespaceNotFound):
        target.backup(tmp_path / "b2", ["default"])
    target.close()


def test_a_backup_keeps_the_messages_waiting_in_conversation_buffers(svc: MemoryService, settings: Settings,
                                                                     tmp_path: Path) -> None:
    svc.ingest("default", "c1", [{"id": "m1", "author": "ana", "text": "No, we use pnpm, not npm."}])
    svc.watch("default", "C01", "ana")
    dest = tmp_path / "backup"
    backed = svc.backup(dest)
    assert {"ingest/default.sqlite", "ingest/watched.json"} <= set(backed.manifest["files"])
    assert stat.S_IMODE((dest / "ingest" / "default.sqlite").stat().st_mode) == 0o600
    svc.close()
    shutil.rmtree(settings.home)
    restored = MemoryService(settings)
    try:
        done = restored.restore_backup(dest)
        assert "ingest/default.sqlite" in done.files
        assert restored.ingest_status("default")["active_messages"] == 1
        assert [w.channel for w in restored.watching()] == ["C01"]
        again = restored.ingest("default", "c1", [{"id": "m1", "text": "No, we use pnpm, not npm."}], flush=True)
        assert again.accepted is not None and again.accepted.repeated == 1  # the ids seen came back too
        assert [m.text for m in restored.list("default")] == ["We use pnpm, not npm."]
    finally:
        restored.close()
