"""``git push`` with the real git client against a live server: reviews, main, refusals, races."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem import notify
from gitmem.errors import Conflict
from gitmem.service import MemoryService, summarise
from gitmem.settings import Settings

from .conftest import Client, Keys
from .test_git import git, with_key
from .test_pages import signed_in

OKF = "---\ntype: {type}\n---\n\n{text}\n"


def fsck(svc: MemoryService) -> None:
    checked = subprocess.run(["git", "fsck", "--strict"], cwd=svc.settings.repos_dir / "default.git",
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def state(svc: MemoryService) -> tuple[str, str, list[str]]:
    """What a refused push must leave alone: `git for-each-ref`, `git count-objects -v`, every object file."""
    repo = svc.settings.repos_dir / "default.git"

    def run(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout

    objects = sorted(str(p.relative_to(repo)) for p in (repo / "objects").rglob("*") if p.is_file())
    return run("for-each-ref"), run("count-objects", "-v"), objects


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
    shown_now = svc.show("default", completed.id)
    assert (shown_now.text, shown_now.type, shown_now.author) == ("Indent Python with four spaces", "convention",
                                                                 "writer")
    on_main = git("-C", str(svc.settings.repos_dir / "default.git"), "show", "main:convention/tabs.md").stdout
    assert f"id: {completed.id}\n" in on_main  # the completion wrote the id into the file itself
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


def test_a_push_to_main_after_main_moved_is_refused_as_moved(live_server: str, keys: Keys, svc: MemoryService,
                                                              remember: Callable[..., str], tmp_path: Path) -> None:
    work = clone(live_server, keys.admin, tmp_path / "w")
    remember("Deploys happen on Tuesdays", type="convention")  # main moves on the server
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")})
    before = state(svc)
    pushed = push(keys.admin, work, "HEAD:main")
    assert pushed.returncode != 0 and "rejected" in pushed.stderr  # git itself sees it is behind
    forced = push(keys.admin, work, "+HEAD:main")
    assert forced.returncode != 0
    server = svc.head("default")
    assert (f"remote: refused refs/heads/main: main is at {server[:10]}, which your commit does not build on"
            in forced.stderr), forced.stderr
    assert "only moves forward" not in forced.stderr
    assert state(svc) == before


@pytest.mark.parametrize("how", ["rewind", "diverge"])
def test_a_rewind_of_main_while_main_is_still_is_refused_as_not_forward(
        live_server: str, keys: Keys, svc: MemoryService, remember: Callable[..., str], tmp_path: Path,
        how: str) -> None:
    remember("Deploys happen on Tuesdays", type="convention")
    remember("Releases are tagged vX.Y.Z", type="convention")
    work = clone(live_server, keys.admin, tmp_path / "w")  # main has not moved since
    assert git("reset", "-q", "--hard", "HEAD~1", cwd=work).returncode == 0
    older = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    if how == "diverge":
        commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")})
    before = state(svc)
    forced = push(keys.admin, work, "+HEAD:main")
    assert forced.returncode != 0
    if how == "rewind":
        said = f"remote: refused refs/heads/main: main only moves forward: your push would take it back to {older[:10]}"
    else:
        said = f"remote: refused refs/heads/main: main is at {svc.head('default')[:10]}, which your commit does not"
    assert said in forced.stderr, forced.stderr
    assert "moved since you fetched it" not in forced.stderr
    assert state(svc) == before
    assert [m.text for m in svc.list("default")] and len(svc.list("default")) == 2


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
        # git sees it is behind ("fetch first"); or main moved after git read it: during the checks
        # ("moved since you fetched it") or between the advertisement and the push ("does not build on").
        assert any(said in pushed.stderr for said in ("fetch first", "moved since you fetched it",
                                                      "which your commit does not build on")), pushed.stderr
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


def test_stacked_pushes_to_refs_for_main_each_open_a_review_of_their_own_commits(
        live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    work = clone(live_server, keys.writer, tmp_path / "w")
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")}, "Database")
    first = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    assert push(keys.writer, work, "HEAD:refs/for/main").returncode == 0
    commit(work, {"fact/cache.md": OKF.format(type="fact", text="The cache is Redis 7")}, "Cache")
    second = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    stacked = push(keys.writer, work, "HEAD:refs/for/main")
    assert stacked.returncode == 0, stacked.stderr
    assert "remote: review #2 opened with 1 commit" in stacked.stderr, stacked.stderr
    assert "it holds only the commits after review #1 (still open, 1 commit); approve #1 first" in stacked.stderr
    one, two = svc.reviews.get("default", 1), svc.reviews.get("default", 2)
    assert [str(c.id) for c in svc.reviews.commits("default", one)] == [first]
    assert [str(c.id) for c in svc.reviews.commits("default", two)] == [second]
    assert (two.base, two.commit_count, two.title) == (first, 1, "Cache")
    assert "come after those of review #1" in two.description


def test_a_push_that_adds_one_memory_and_edits_another_says_so_and_links_only_real_pages(
        live_server: str, keys: Keys, svc: MemoryService, remember: Callable[..., str], client: Client,
        tmp_path: Path) -> None:
    memory_id = remember("Deploys happen on Tuesdays", type="convention")
    work = clone(live_server, keys.writer, tmp_path / "w")
    (path,) = [p for p in (work / "convention").iterdir()]
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16"),
                  f"convention/{path.name}": path.read_text().replace("Tuesdays", "Wednesdays")},
           "Database, and deploys move")
    assert push(keys.writer, work, "HEAD:refs/for/main").returncode == 0
    shown = svc.reviews.diff("default", 1)
    assert summarise(shown) == "edited 1; added 1"
    by_change = {m.change: m for m in shown[0].memories}
    assert by_change["changed"].id == memory_id and by_change["changed"].assigned
    assert not by_change["added"].assigned  # a plain file: its id comes with the merge
    signed_in(client, keys.reader)
    page = client.get("/ns/default/reviews/1").get_data(as_text=True)
    assert "edited 1; added 1" in page
    assert f"/ns/default/memories/{memory_id}" in page
    assert f"/ns/default/memories/{by_change['added'].id}" not in page  # it would 404 until merged
    assert "no id yet: it gets one when merged" in page
    for link in re.findall(r'href="(/ns/default/memories/[0-9a-f]{10})"', page):
        assert client.get(link).status_code == 200, link


def test_a_stacked_review_waits_for_the_one_it_builds_on(live_server: str, keys: Keys, svc: MemoryService,
                                                         tmp_path: Path) -> None:
    work = clone(live_server, keys.writer, tmp_path / "w")
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")}, "Database")
    assert push(keys.writer, work, "HEAD:refs/for/main").returncode == 0
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 17")}, "Upgrade")
    assert push(keys.writer, work, "HEAD:refs/for/main").returncode == 0
    head = svc.head("default")
    with pytest.raises(Conflict, match=r"review #2 holds the commits that come after those of review #1, which is "
                                       r"still open: approve \(or reject\) #1 first"):
        svc.reviews.approve("default", 2, actor="reviewer")
    assert svc.head("default") == head
    svc.reviews.approve("default", 1, actor="reviewer")
    svc.reviews.approve("default", 2, actor="reviewer")
    assert [m.text for m in svc.list("default")] == ["The database is PostgreSQL 17"]
    fsck(svc)
