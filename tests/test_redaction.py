"""Purging a memory from history: a review an admin approves, then the whole history rewritten.

Checked with the real git: `git log -p --all`, every object `git rev-list --all --objects`
names (through `git cat-file --batch`), every file under the repository (reflogs, packs, loose
objects, unreachable or not), `git fsck --strict`, and a fresh clone.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem.errors import Conflict, InvalidInput, MemoryNotFound, PermissionDenied
from gitmem.repo import rewrite
from gitmem.repo.audit import AuditLog
from gitmem.service import MemoryService

from .conftest import Run, git, namespace_of

SECRET = "The payroll box's staging password is written on the card in Ann's drawer"


def everything(repo: Path) -> bytes:
    """What a reader could find: every commit with its patch, every object any ref reaches, every file."""
    log = git(repo, "log", "-p", "--all").encode()
    listed = [line.split()[0] for line in git(repo, "rev-list", "--all", "--objects").splitlines()]
    objects = subprocess.run(["git", "--git-dir", str(repo), "cat-file", "--batch"],
                             input=("\n".join(listed) + "\n").encode(), capture_output=True, check=True).stdout
    files = b"".join(p.read_bytes() for p in repo.rglob("*") if p.is_file())
    return log + objects + files


def unpacked(repo: Path) -> bytes:
    """Every object of the repository, reachable or not, as git reads it (packs and loose alike)."""
    ids = set(git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split())
    return subprocess.run(["git", "--git-dir", str(repo), "cat-file", "--batch"],
                          input=("\n".join(sorted(ids)) + "\n").encode(), capture_output=True, check=True).stdout


@pytest.fixture
def populated(svc: MemoryService) -> dict[str, str]:
    """A namespace where the secret was remembered, discussed, amended, quoted and proposed for review."""
    ids = {"before": svc.remember("default", "Deploys happen on Tuesdays", type="convention").memory.id}  # type: ignore[union-attr]
    secret = svc.remember("default", SECRET, type="fact").memory
    assert secret is not None
    ids["secret"] = secret.id
    svc.feedback("default", secret.id, "discuss", actor="bob", text=f"Should this be here? {SECRET[:40]}")
    svc.amend("default", secret.id, text=SECRET + ", and the spare key too", actor="ann")
    quoted = svc.remember("default", f"Onboarding notes say: {SECRET}", type="fact").memory
    assert quoted is not None
    ids["quoted"] = quoted.id
    ids["after"] = svc.remember("default", "Releases are tagged vX.Y.Z", type="convention").memory.id  # type: ignore[union-attr]
    assert svc.recall("default", "payroll staging password")
    # Past 800 memories a search reads the index's term table; fill it now, so it holds the words.
    namespace_of(svc).index._doc_freqs(["payroll"], 10_000)
    # An open review of another memory: it must follow the new history.
    ids["open"] = str(svc.feedback("default", ids["after"], "amend", actor="carl",
                                   text="Releases are tagged vX.Y.Z and signed", role="writer").review)
    return ids


def test_an_approved_purge_leaves_the_text_nowhere(svc: MemoryService, populated: dict[str, str],
                                                  fsck: Callable[[str], None], tmp_path: Path) -> None:
    repo = svc.settings.repos_dir / "default.git"
    assert SECRET.encode() in everything(repo)  # the check below can fail
    review = svc.purge_history("default", populated["secret"], actor="ann", reason="a password in a memory")
    assert review.kind == "purge" and review.status == "open"
    assert SECRET.encode() in everything(repo)  # asking changes no history

    done = svc.reviews.approve("default", review.number, actor="ada", admin=True)
    assert done.status == "merged" and done.decided_by == "ada"
    for found in (everything(repo), unpacked(repo)):
        assert SECRET.encode() not in found and SECRET[:30].encode() not in found  # nor a summary's cut
        assert b"the spare key" not in found and b"payroll" not in found  # nor a file name made from it
    fsck("default")
    holding = [p for p in svc.settings.home.rglob("*") if p.is_file() and b"payroll" in p.read_bytes()]
    assert holding == []  # the search index's pages and its WAL hold it no more either
    texts = sorted(m.text for m in svc.list("default"))
    assert texts == ["Deploys happen on Tuesdays", "Onboarding notes say: (redacted)", "Releases are tagged vX.Y.Z"]
    assert svc.recall("default", "payroll staging password") == []  # the index was rebuilt

    purged = svc.last_purge()
    assert purged is not None and purged.commits >= 4 and purged.memory_id == populated["secret"]
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    (record_file,) = (clone / ".gitmem" / "redactions").glob(f"*-{populated['secret']}.json")
    record = json.loads(record_file.read_text())
    assert (record["memory"], record["review"], record["requested_by"], record["approved_by"]) == (
        populated["secret"], review.number, "ann", "ada")
    assert record["reason"] == "a password in a memory" and len(record["rewritten"]) == purged.commits
    assert "git fetch && git reset --hard origin/main" in record["recover"]
    head = git(clone / ".git", "log", "-1", "--format=%B")
    assert "Approved-By: ada" in head and f"Review: {review.number}" in head
    (entry,) = AuditLog(svc.settings.home).entries()
    assert (entry["event"], entry["memory"], entry["approved_by"], entry["record"]) == (
        "purge-history", populated["secret"], "ada", purged.record)
    assert SECRET not in json.dumps(entry)


def test_history_before_the_memory_keeps_its_ids_and_open_reviews_follow(
        svc: MemoryService, populated: dict[str, str], fsck: Callable[[str], None]) -> None:
    repo = svc.settings.repos_dir / "default.git"
    first = git(repo, "rev-list", "--reverse", "main").split()[:2]
    open_review = svc.reviews.get("default", int(populated["open"]))
    review = svc.purge_history("default", populated["secret"], actor="ann", reason="personal data")
    svc.reviews.approve("default", review.number, actor="ada", admin=True)
    assert git(repo, "rev-list", "--reverse", "main").split()[:2] == first  # before the secret: unchanged
    moved = svc.reviews.get("default", open_review.number)
    assert moved.status == "open" and moved.head != open_review.head and moved.base != open_review.base
    assert git(repo, "rev-parse", moved.branch).strip() == moved.head
    assert git(repo, "merge-base", "--is-ancestor", moved.base, "main") == ""  # on the new main
    svc.reviews.approve("default", moved.number, actor="rita")  # it merges as it was reviewed
    assert "Releases are tagged vX.Y.Z and signed" in {m.text for m in svc.list("default")}
    fsck("default")


def test_only_an_admin_approves_and_a_refusal_changes_nothing(svc: MemoryService, populated: dict[str, str]) -> None:
    repo = svc.settings.repos_dir / "default.git"
    review = svc.purge_history("default", populated["secret"], actor="ann", reason="a password")
    refs = git(repo, "for-each-ref")
    with pytest.raises(PermissionDenied, match="only an admin approves it"):
        svc.reviews.approve("default", review.number, actor="rita")
    assert git(repo, "for-each-ref") == refs and svc.reviews.get("default", review.number).status == "open"
    with pytest.raises(Conflict, match="is open already"):
        svc.purge_history("default", populated["secret"], actor="bob", reason="again")
    with pytest.raises(MemoryNotFound):
        svc.purge_history("default", "0123456789", actor="ann", reason="no such memory")
    with pytest.raises(InvalidInput):
        svc.purge_history("default", populated["secret"], actor="ann", reason="  ")
    svc.reviews.reject("default", review.number, actor="ada", reason="not personal data after all")
    assert SECRET.encode() in everything(repo)


def test_a_write_racing_with_the_purge_is_rewritten_too(svc: MemoryService, populated: dict[str, str]) -> None:
    ns = namespace_of(svc)
    raced: list[str] = []

    def writer_meanwhile() -> None:  # right before the scrub's first ref move: main moves under it
        if not raced:
            result = svc.remember("default", f"Raced in: {SECRET}", type="fact")
            assert result.memory is not None
            raced.append(result.memory.id)

    scrub = rewrite.Scrub(ns.store, [SECRET], lambda path, data: False)
    done = scrub.run(guard=writer_meanwhile)
    assert raced and "refs/heads/main" in done.refs
    shown = svc.show("default", raced[0])
    assert shown.text == "Raced in: (redacted)"  # the racing commit was taken in and scrubbed


def test_the_cli_asks_with_history_and_a_reason(gitmem: Run, svc: MemoryService, populated: dict[str, str]) -> None:
    refused = gitmem("purge", populated["secret"], "--reason", "x", ok=False)
    assert refused.returncode == 2 and "say --history" in refused.stderr
    asked = gitmem("purge", "--history", populated["secret"], "--reason", "a password", "--actor", "ann")
    number = int(asked.stdout.split("#")[1].split()[0])
    assert f"gitmem review approve {number} --namespace default" in asked.stdout
    approved = gitmem("review", "approve", str(number), "--actor", "ada")
    assert "merged" in approved.stdout or approved.returncode == 0
    assert SECRET.encode() not in everything(svc.settings.repos_dir / "default.git")


def test_a_history_with_merges_deletions_and_nested_folders_is_scrubbed_whole(
        svc: MemoryService, fsck: Callable[[str], None], tmp_path: Path) -> None:
    """Made with the git program straight in the repository: a merge, a deletion, a file in a subfolder."""
    repo = svc.settings.repos_dir / "default.git"
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(repo), str(work)], check=True)

    def run(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=Ann", "-c", "user.email=ann@example.com", *args], cwd=work,
                       check=True, capture_output=True)

    (work / "notes").mkdir()
    (work / "notes" / "deep").mkdir()
    (work / "notes" / "deep" / "a.txt").write_text(f"quote: {SECRET}\n")
    run("add", "-A")
    run("commit", "-qm", "side with the text")
    run("branch", "side")
    run("reset", "-q", "--hard", "HEAD~1")
    (work / "other.txt").write_text("nothing to see\n")
    run("add", "-A")
    run("commit", "-qm", "main goes on")
    run("merge", "-q", "--no-ff", "-m", "merge the side", "side")
    (work / "notes" / "deep" / "a.txt").unlink()
    run("add", "-A")
    run("commit", "-qm", "delete it again")
    (work / "later.txt").write_text(f"{SECRET} once more\n")
    run("add", "-A")
    run("commit", "-qm", "and back")
    run("push", "-q", "origin", "HEAD:main")
    assert SECRET.encode() in everything(repo)
    store = namespace_of(svc).store
    scrub = rewrite.Scrub(store, [SECRET], lambda path, data: False)
    done = scrub.run()
    rewrite.expunge(store, scrub.poisoned(), [SECRET])
    assert SECRET.encode() not in everything(repo) and SECRET.encode() not in unpacked(repo)
    assert git(repo, "show", "main:later.txt") == "(redacted) once more\n"
    assert git(repo, "show", "main:other.txt") == "nothing to see\n"
    assert "notes" not in git(repo, "ls-tree", "main")
    merge = git(repo, "log", "--merges", "--format=%H %P", "main").split()
    assert len(merge) == 3 and len(done.commits) >= 4
    assert git(repo, "show", f"{merge[2]}:notes/deep/a.txt") == "quote: (redacted)\n"
    fsck("default")
