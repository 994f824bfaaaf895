"""``git push`` with the real git client against a live server: reviews, main, refusals, races."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem import notify
from gitmem.service import MemoryService
from gitmem.settings import Settings

from .conftest import Keys
from .test_git import git, with_key

OKF = "---\ntype: {type}\n---\n\n{text}\n"


def fsck(svc: MemoryService) -> None:
    checked = subprocess.run(["git", "fsck", "--strict"], cwd=svc.settings.repos_dir / "default.git",
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def state(svc: MemoryService) -> tuple[dict[str, str], list[str]]:
    """Every ref of the repository and every object file in it: what a refused push must leave alone."""
    repo = svc.settings.repos_dir / "default.git"
    listed = subprocess.run(["git", "for-each-ref", "--format=%(refname) %(objectname)"], cwd=repo,
                            capture_output=True, text=True, check=True).stdout.split("\n")
    refs = dict(line.split(" ") for line in listed if line)
    objects = sorted(str(p.relative_to(repo)) for p in (repo / "objects").rglob("*") if p.is_file())
    return refs, objects


def clone(live_server: str, key: str, where: Path) -> Path:
    cloned = git(*with_key(key), "clone", f"{live_server}/git/default.git", str(where))
    assert cloned.returncode == 0, cloned.stderr
    git("config", "user.name", "Ann", cwd=where)
    git("config", "user.email", "ann@example.com", cwd=where)
    return where


def commit(work: Path, files: dict[str, str], message: str = "edit by hand") -> None:
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    assert git("add", "-A", cwd=work).returncode == 0
    done = git("commit", "-qm", message, cwd=work)
    assert done.returncode == 0, done.stderr


def push(key: str, work: Path, *refspec: str) -> subprocess.CompletedProcess[str]:
    return git(*with_key(key), "push", "origin", *refspec, cwd=work)


@pytest.fixture
def events() -> Callable[[], list[dict[str, object]]]:
    seen: list[dict[str, object]] = []

    def record(settings: Settings, event: dict[str, object]) -> None:
        seen.append(event)

    notify.subscribe(record)
    yield lambda: seen
    notify.unsubscribe(record)


def test_push_to_refs_for_main_opens_a_review_that_approving_merges(
        live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path,
        events: Callable[[], list[dict[str, object]]]) -> None:
    work = clone(live_server, keys.writer, tmp_path / "w")
    before = svc.head("default")
    commit(work, {"convention/tabs.md": OKF.format(type="convention", text="Indent Python with four spaces")},
           "Indent with spaces")
    pushed = push(keys.writer, work, "HEAD:refs/for/main")
    assert pushed.returncode == 0, pushed.stderr
    assert "remote: review #1 opened with 1 commit: http://127.0.0.1" in pushed.stderr
    assert f"{live_server}/ns/default/reviews/1" in pushed.stderr
    assert svc.head("default") == before  # nothing reached main
    review = svc.reviews.get("default", 1)
    assert review.status == "open" and review.kind == "push" and review.author == "writer"
    assert review.title == "Indent with spaces"
    assert any(e["event"] == "review.opened" for e in events())
    (shown,) = svc.reviews.diff("default", 1)  # the page shows the plain file as the memory it will be
    assert shown.action == "edit" and shown.memories[0].change == "added"
    assert shown.memories[0].after == "Indent Python with four spaces"

    svc.reviews.approve("default", 1, actor="reviewer")
    memories = svc.list("default")
    assert [m.text for m in memories] == ["Indent Python with four spaces"]
    completed = memories[0]
    assert completed.path == "convention/tabs.md" and len(completed.id) == 10  # completed on merge
    assert completed.author == "writer" and completed.source == "import"
    assert svc.recall("default", "indent python")[0].memory.id == completed.id
    text = (svc.settings.repos_dir / "default.git").exists() and svc.show("default", completed.id)
    assert text
    fsck(svc)


def test_a_reviewers_fast_forward_push_lands_on_main(live_server: str, keys: Keys, svc: MemoryService,
                                                     tmp_path: Path,
                                                     events: Callable[[], list[dict[str, object]]]) -> None:
    work = clone(live_server, keys.reviewer, tmp_path / "w")
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")})
    pushed = push(keys.reviewer, work, "HEAD:main")
    assert pushed.returncode == 0, pushed.stderr
    assert "remote: main is at" in pushed.stderr and "completed" in pushed.stderr
    assert [m.text for m in svc.list("default")] == ["The database is PostgreSQL 16"]
    assert svc.recall("default", "database")[0].memory.text == "The database is PostgreSQL 16"
    assert any(e["event"] == "push.merged" for e in events())
    # The completion commit comes back with a pull; a second edit then fast-forwards again.
    assert git(*with_key(keys.reviewer), "pull", "-q", "--ff-only", cwd=work).returncode == 0
    assert "id: " in (work / "fact" / "db.md").read_text()
    commit(work, {"fact/db.md": (work / "fact" / "db.md").read_text().replace("16", "17")})
    again = push(keys.reviewer, work, "HEAD:main")
    assert again.returncode == 0, again.stderr
    assert "completed" not in again.stderr
    assert svc.list("default")[0].text == "The database is PostgreSQL 17"
    assert svc.head("default") == git("rev-parse", "HEAD", cwd=work).stdout.strip()
    fsck(svc)


def test_a_large_push_in_chunks_is_received_whole(live_server: str, keys: Keys, svc: MemoryService,
                                                  tmp_path: Path) -> None:
    work = clone(live_server, keys.reviewer, tmp_path / "w")
    commit(work, {f"fact/service-{i:03}.md": OKF.format(type="fact", text=f"Service {i} answers on port {9000 + i}")
                  for i in range(300)})
    # A post buffer this small makes git send the pack with chunked transfer encoding.
    pushed = git(*with_key(keys.reviewer), "-c", "http.postBuffer=4096", "push", "origin", "HEAD:main", cwd=work)
    assert pushed.returncode == 0, pushed.stderr
    assert len(svc.list("default", limit=1000)) == 300
    fsck(svc)


def test_a_writer_pushing_to_main_is_told_to_use_refs_for_main(live_server: str, keys: Keys, svc: MemoryService,
                                                              tmp_path: Path) -> None:
    work = clone(live_server, keys.writer, tmp_path / "w")
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")})
    before = state(svc)
    pushed = push(keys.writer, work, "HEAD:main")
    assert pushed.returncode != 0
    assert "a writer may not push to main" in pushed.stderr and "refs/for/main" in pushed.stderr
    assert state(svc) == before


def test_a_readers_push_is_refused(live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    work = clone(live_server, keys.reader, tmp_path / "w")
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")})
    before = state(svc)
    pushed = push(keys.reader, work, "HEAD:refs/for/main")
    assert pushed.returncode != 0
    assert "remote error" in pushed.stderr and "needs a writer key" in pushed.stderr
    assert state(svc) == before


def test_a_non_fast_forward_push_to_main_is_refused(live_server: str, keys: Keys, svc: MemoryService,
                                                    remember: Callable[..., str], tmp_path: Path) -> None:
    work = clone(live_server, keys.admin, tmp_path / "w")
    remember("Deploys happen on Tuesdays", type="convention")  # main moves on the server
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")})
    before = state(svc)
    pushed = push(keys.admin, work, "HEAD:main")
    assert pushed.returncode != 0 and "rejected" in pushed.stderr  # git itself sees it is behind
    forced = push(keys.admin, work, "+HEAD:main")
    assert forced.returncode != 0
    assert "main moved since you fetched it" in forced.stderr or "forward" in forced.stderr
    assert state(svc) == before


BAD = [
    ("fact/x.md", "no frontmatter at all\n", "no YAML frontmatter"),
    ("fact/x.md", "---\ntype: rumour\n---\n\nsomething\n", "'type' must be one of"),
    ("fact/x.md", "---\ntype: decision\n---\n\nWe chose Rust\n", "it is in fact/; move it to decision/"),
    ("fact/x.md", "---\ntype: fact\n---\n\n" + "word " * 1000 + "\n", "characters; the limit is 4000"),
    ("fact/x.md", "---\ntype: fact\n---\n\nThe deploy key is AKIAIOSFODNN7EXAMPLE here\n", "looks like a"),
    ("notes/x.md", "---\ntype: fact\n---\n\nstray\n", "not in a memory folder"),
    ("fact/deep/x.md", "---\ntype: fact\n---\n\nnested\n", "a folder inside fact/"),
    (".gitmem/discussions/x.jsonl", "{}\n", "written by gitmem only"),
]


@pytest.mark.parametrize(("path", "text", "said"), BAD, ids=[b[2][:20] for b in BAD])
def test_a_push_with_a_bad_file_is_refused_naming_it(live_server: str, keys: Keys, svc: MemoryService,
                                                     tmp_path: Path, path: str, text: str, said: str) -> None:
    work = clone(live_server, keys.admin, tmp_path / "w")
    commit(work, {"fact/ok.md": OKF.format(type="fact", text="A good one"), path: text})
    before = state(svc)
    for ref in ("HEAD:refs/for/main", "HEAD:main"):
        pushed = push(keys.admin, work, ref)
        assert pushed.returncode != 0, pushed.stderr
        assert f"remote: refused: {path}: " in pushed.stderr and said in pushed.stderr, pushed.stderr
        assert state(svc) == before
    fsck(svc)


def test_a_duplicate_id_is_refused(live_server: str, keys: Keys, svc: MemoryService,
                                   remember: Callable[..., str], tmp_path: Path) -> None:
    memory_id = remember("Releases are tagged vX.Y.Z", type="convention")
    work = clone(live_server, keys.admin, tmp_path / "w")
    commit(work, {"convention/copy.md": f"---\ntype: convention\nid: {memory_id}\n---\n\nA copy\n"})
    before = state(svc)
    pushed = push(keys.admin, work, "HEAD:refs/for/main")
    assert pushed.returncode != 0
    assert f"convention/copy.md: id {memory_id} is also the id of convention/" in pushed.stderr
    assert state(svc) == before


@pytest.mark.parametrize("kind", ["symlink", "submodule", "dotdot"])
def test_links_submodules_and_dot_dot_are_refused(live_server: str, keys: Keys, svc: MemoryService,
                                                  tmp_path: Path, kind: str) -> None:
    work = clone(live_server, keys.admin, tmp_path / "w")
    if kind == "symlink":
        (work / "fact").mkdir()
        (work / "fact" / "link.md").symlink_to("/etc/passwd")
        commit(work, {})
        said = "fact/link.md: a symbolic link"
    elif kind == "submodule":
        head = git("rev-parse", "HEAD", cwd=work).stdout.strip()
        assert git("update-index", "--add", "--cacheinfo", f"160000,{head},fact/sub", cwd=work).returncode == 0
        assert git("commit", "-qm", "submodule", cwd=work).returncode == 0
        said = "fact/sub: a submodule"
    else:
        blob = git("hash-object", "-w", "--stdin", cwd=work).stdout.strip() if False else \
            subprocess.run(["git", "hash-object", "-w", "--stdin"], input="---\ntype: fact\n---\n\nx\n", cwd=work,
                           capture_output=True, text=True, check=True).stdout.strip()
        readme = git("rev-parse", "HEAD:README.md", cwd=work).stdout.strip()
        tree = subprocess.run(["git", "mktree"], input=f"100644 blob {readme}\tREADME.md\n100644 blob {blob}\t..\n",
                              cwd=work, capture_output=True, text=True, check=True).stdout.strip()
        made = git("commit-tree", tree, "-p", "HEAD", "-m", "dot dot", cwd=work)
        assert git("reset", "-q", "--soft", made.stdout.strip(), cwd=work).returncode == 0
        said = "..: the name '..' is not allowed"
    before = state(svc)
    pushed = push(keys.admin, work, "HEAD:refs/for/main")
    assert pushed.returncode != 0
    assert f"remote: refused: {said}" in pushed.stderr, pushed.stderr
    assert state(svc) == before


def test_pushing_the_same_commits_again_opens_no_second_review(live_server: str, keys: Keys, svc: MemoryService,
                                                               tmp_path: Path) -> None:
    work = clone(live_server, keys.writer, tmp_path / "w")
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")})
    assert push(keys.writer, work, "HEAD:refs/for/main").returncode == 0
    again = push(keys.writer, work, "HEAD:refs/for/main")
    assert again.returncode == 0 and "review #1 holds these commits already" in again.stderr
    assert [r.number for r in svc.reviews.list("default")] == [1]


def test_only_its_author_updates_a_review_branch(live_server: str, keys: Keys, svc: MemoryService,
                                                tmp_path: Path) -> None:
    work = clone(live_server, keys.writer, tmp_path / "w")
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")})
    assert push(keys.writer, work, "HEAD:refs/heads/review/db").returncode == 0
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 17")}, "Version 17")
    updated = push(keys.writer, work, "HEAD:refs/heads/review/db")
    assert updated.returncode == 0 and "review #1 updated with 2 commits" in updated.stderr, updated.stderr
    assert svc.reviews.get("default", 1).commit_count == 2

    other = clone(live_server, keys.admin, tmp_path / "o")  # an admin may; another writer may not
    assert git(*with_key(keys.admin), "fetch", "-q", "origin", "refs/heads/review/db", cwd=other).returncode == 0
    git("reset", "-q", "--hard", "FETCH_HEAD", cwd=other)
    commit(other, {"fact/db.md": OKF.format(type="fact", text="The database is MySQL")}, "MySQL")
    key = svc.keys.create("default", "writer", name="mallory")[0]
    before = state(svc)
    refused = push(key, other, "HEAD:refs/heads/review/db")
    assert refused.returncode != 0 and "is review #1 by writer" in refused.stderr
    assert state(svc) == before
    assert push(keys.admin, other, "HEAD:refs/heads/review/db").returncode == 0
    assert svc.reviews.get("default", 1).commit_count == 3


def test_a_reviewers_push_racing_with_api_writes_loses_nothing(live_server: str, keys: Keys, svc: MemoryService,
                                                                tmp_path: Path) -> None:
    work = clone(live_server, keys.reviewer, tmp_path / "w")
    commit(work, {"fact/pushed.md": OKF.format(type="fact", text="Pushed straight to main")})
    errors: list[BaseException] = []

    def writing() -> None:
        try:
            for i in range(15):
                svc.remember("default", f"API statement number {i} about queues", type="fact")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    writer = threading.Thread(target=writing)
    writer.start()
    pushed = push(keys.reviewer, work, "HEAD:main")
    while pushed.returncode != 0:  # main moved under the push: nothing of it landed; rebase and push again
        assert "moved since you fetched it" in pushed.stderr or "fetch first" in pushed.stderr, pushed.stderr
        assert "Pushed straight to main" not in {m.text for m in svc.list("default", limit=100)}
        assert git(*with_key(keys.reviewer), "pull", "-q", "--rebase", cwd=work).returncode == 0
        pushed = push(keys.reviewer, work, "HEAD:main")
    writer.join()
    assert not errors
    texts = {m.text for m in svc.list("default", limit=100)}
    assert "Pushed straight to main" in texts
    assert {f"API statement number {i} about queues" for i in range(15)} <= texts
    fsck(svc)


def test_pushes_racing_with_api_writes_lose_nothing(live_server: str, keys: Keys, svc: MemoryService,
                                                    tmp_path: Path) -> None:
    works = [clone(live_server, keys.writer, tmp_path / f"w{i}") for i in range(2)]
    for i, work in enumerate(works):
        commit(work, {f"fact/pushed-{i}.md": OKF.format(type="fact", text=f"Pushed fact number {i}")})
    results: list[subprocess.CompletedProcess[str]] = []
    errors: list[BaseException] = []

    def pushing(work: Path) -> None:
        results.append(push(keys.writer, work, "HEAD:refs/for/main"))

    def writing() -> None:
        try:
            for i in range(10):
                svc.remember("default", f"API statement number {i} about caching", type="fact")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=pushing, args=(w,)) for w in works] + [threading.Thread(target=writing)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    for review in svc.reviews.list("default", status="open"):
        svc.reviews.approve("default", review.number, actor="reviewer")
    texts = {m.text for m in svc.list("default")}
    assert {"Pushed fact number 0", "Pushed fact number 1"} <= texts
    assert {f"API statement number {i} about caching" for i in range(10)} <= texts
    fsck(svc)


def test_a_quarantine_left_by_a_dead_push_is_cleared(live_server: str, keys: Keys, svc: MemoryService,
                                                     tmp_path: Path) -> None:
    objects = svc.settings.repos_dir / "default.git" / "objects"
    left = objects / "incoming-deadbeefdeadbeef"
    (left / "pack").mkdir(parents=True)
    (left / "pack" / "tmp_pack_x").write_bytes(b"half a pack")
    old = time.time() - 7200
    os.utime(left, (old, old))
    work = clone(live_server, keys.writer, tmp_path / "w")
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")})
    assert push(keys.writer, work, "HEAD:refs/for/main").returncode == 0
    assert not left.exists() and not list(objects.glob("incoming-*"))


def test_a_body_edited_in_a_clone_takes_its_title_along_unless_the_title_was_set_by_hand(
        live_server: str, keys: Keys, svc: MemoryService, remember: Callable[..., str], tmp_path: Path) -> None:
    derived = svc.show("default", remember("Deploys happen on Tuesdays only"))
    named = svc.show("default", remember("Releases are tagged on Fridays", title="Release tags"))
    work = clone(live_server, keys.writer, tmp_path / "w")
    edits = {m.path: (work / m.path).read_text().replace(old, new) for m, old, new in (
        (derived, "\n\nDeploys happen on Tuesdays only", "\n\nDeploys happen on Tuesdays and Wednesdays only"),
        (named, "\n\nReleases are tagged on Fridays", "\n\nReleases are tagged on Thursdays"))}
    commit(work, edits, "Wednesdays and Thursdays")  # only the bodies: the frontmatter is as it was
    pushed = push(keys.writer, work, "HEAD:refs/for/main")
    assert pushed.returncode == 0, pushed.stderr
    svc.reviews.approve("default", 1, actor="reviewer")
    followed, kept = svc.show("default", derived.id), svc.show("default", named.id)
    assert followed.text == "Deploys happen on Tuesdays and Wednesdays only"
    assert followed.title == followed.description == "Deploys happen on Tuesdays and Wednesdays only"
    assert (kept.title, kept.description) == ("Release tags", "Releases are tagged on Thursdays")
    index = svc.export("default", "memory-md")
    assert "**Deploys happen on Tuesdays and Wednesdays only**" in index and "Tuesdays only**" not in index
    # A reviewer's push straight to main is completed the same way, and git pull brings it back.
    work2 = clone(live_server, keys.reviewer, tmp_path / "w2")
    edited = (work2 / followed.path).read_text().replace("\n\nDeploys happen on Tuesdays and Wednesdays only",
                                                          "\n\nDeploys happen on Tuesdays only")
    commit(work2, {followed.path: edited})
    again = push(keys.reviewer, work2, "HEAD:main")
    assert again.returncode == 0 and "titles that follow an edited text" in again.stderr, again.stderr
    assert svc.show("default", derived.id).title == "Deploys happen on Tuesdays only"
    assert git(*with_key(keys.reviewer), "pull", "-q", "--ff-only", cwd=work2).returncode == 0
    assert "title: Deploys happen on Tuesdays only\n" in (work2 / followed.path).read_text()
    fsck(svc)
