"""What a push must not bring, with the real git client against a live server (issue 23).

Every refusal leaves the repository exactly as it was: `git for-each-ref`, `git count-objects -v`
and every object file are compared before and after.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from gitmem.service import MemoryService

from ..test_safeparse import bomb
from .conftest import Keys
from .test_git import git, with_key
from .test_push import OKF, clone, commit, fsck, push, state

# Made-up secrets in the formats the scanner knows (none of them was ever a real one).
SLACK = "xoxb-" + "1234567890-" + "abcdefghijklmnop"
GITLAB = "glpat-" + "abcdefghij0123456789"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"


def refs_on_the_wire(live_server: str, key: str, tmp_path: Path) -> str:
    """Every ref a reader's clone can fetch."""
    return git(*with_key(key), "ls-remote", f"{live_server}/git/default.git").stdout


@pytest.mark.parametrize("how", ["subject", "body", "author name", "author email", "committer", "file name"])
def test_a_secret_anywhere_in_a_commit_refuses_the_push_and_publishes_nothing(
        live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path, how: str) -> None:
    work = clone(live_server, keys.writer, tmp_path / "w")
    path = f"fact/{AWS}.md" if how == "file name" else "fact/db.md"
    (work / "fact").mkdir()
    (work / path).write_text(OKF.format(type="fact", text="The database is PostgreSQL 16"))
    assert git("add", "-A", cwd=work).returncode == 0
    args = ["commit", "-qm", f"Deploy with {SLACK}" if how == "subject" else "Harmless subject"]
    if how == "body":
        args += ["-m", f"token {GITLAB}"]
    if how == "author name":
        args += [f"--author={AWS} <ann@example.com>"]
    if how == "author email":
        args += [f"--author=Ann <{GITLAB}@example.com>"]
    if how == "committer":
        args = ["-c", f"user.name=Ann {AWS}", *args]
    made = git(*args, cwd=work)
    assert made.returncode == 0, made.stderr
    before, listed = state(svc), refs_on_the_wire(live_server, keys.reader, tmp_path)
    pushed = push(keys.writer, work, "HEAD:refs/for/main")
    assert pushed.returncode != 0, pushed.stderr
    assert "remote: refused: " in pushed.stderr and "looks like a" in pushed.stderr, pushed.stderr
    expected = {"subject": "line 1 of its message", "body": "line 3 of its message", "author name": "its author",
                "author email": "its author", "committer": "its committer", "file name": "its name carries"}[how]
    assert expected in pushed.stderr, pushed.stderr
    assert state(svc) == before  # for-each-ref, count-objects -v and every object file: unchanged
    assert refs_on_the_wire(live_server, keys.reader, tmp_path) == listed
    assert "refs/heads/review/push-" not in listed and svc.reviews.list("default") == []


def test_a_pushed_readme_is_scanned(live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    work = clone(live_server, keys.writer, tmp_path / "w")
    readme = (work / "README.md").read_text() + f"\nThe deploy key is {AWS}\n"
    commit(work, {"README.md": readme}, "Document the deploy")
    before = state(svc)
    pushed = push(keys.writer, work, "HEAD:refs/for/main")
    assert pushed.returncode != 0
    assert "remote: refused: README.md: line " in pushed.stderr and "looks like a" in pushed.stderr, pushed.stderr
    assert state(svc) == before


@pytest.mark.parametrize("parents", [2, 3])
def test_a_merge_commit_is_refused(live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path,
                                   parents: int) -> None:
    work = clone(live_server, keys.admin, tmp_path / "w")
    start = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    tips = []
    for n in range(parents):
        assert git("checkout", "-q", "-B", f"side{n}", start, cwd=work).returncode == 0
        commit(work, {f"fact/side-{n}.md": OKF.format(type="fact", text=f"Side fact number {n}")}, f"side {n}")
        tips.append(git("rev-parse", "HEAD", cwd=work).stdout.strip())
    assert git("checkout", "-q", "side0", cwd=work).returncode == 0
    merged = git("merge", "-q", "--no-ff", "-m", "merge the sides", *tips[1:], cwd=work)
    assert merged.returncode == 0, merged.stderr
    merge = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    before = state(svc)
    for ref in ("HEAD:refs/for/main", "HEAD:main"):
        pushed = push(keys.admin, work, ref)
        assert pushed.returncode != 0
        assert f"remote: refused: commit {merge[:10]} is a merge; rebase on main" in pushed.stderr, pushed.stderr
        assert state(svc) == before


def test_pushing_what_main_holds_to_refs_for_main_opens_nothing_and_keeps_no_pack(
        live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    work = clone(live_server, keys.writer, tmp_path / "w")
    before = state(svc)
    pushed = push(keys.writer, work, "HEAD:refs/for/main")
    assert pushed.returncode != 0
    assert "nothing to review: main has those commits already" in pushed.stderr, pushed.stderr
    assert state(svc) == before


def test_a_level_i_alias_bomb_is_refused(live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    work = clone(live_server, keys.writer, tmp_path / "w")
    text = f"---\ntype: fact\n{bomb(9)}---\n\nHarmless looking\n"
    assert len(text.encode()) < 500  # nine levels: 9**9 = 387 million strings once expanded
    commit(work, {"fact/bomb.md": text}, "A harmless looking fact")
    before = state(svc)
    pushed = push(keys.writer, work, "HEAD:refs/for/main")
    assert pushed.returncode != 0
    assert ("remote: refused: fact/bomb.md: frontmatter refused: it uses the YAML anchor &a (line 2); gitmem reads "
            "no anchors or aliases") in pushed.stderr, pushed.stderr
    assert state(svc) == before


@pytest.mark.parametrize("form", [
    "'id': {id}",
    "id: '{id}'  # the id",
    "id: >-\n  {id}",
    "{{type: convention, id: '{id}'}}",
    "description: {pad}\nid: {id}",
])
def test_a_duplicate_id_is_found_in_every_yaml_form(live_server: str, keys: Keys, svc: MemoryService,
                                                    remember: Callable[..., str], tmp_path: Path, form: str) -> None:
    memory_id = remember("Releases are tagged vX.Y.Z", type="convention")
    work = clone(live_server, keys.admin, tmp_path / "w")
    line = form.format(id=memory_id, pad="x" * 5000)
    front = line if line.startswith("{") else f"type: convention\n{line}"
    commit(work, {"convention/copy.md": f"---\n{front}\n---\n\nA copy\n"})
    before = state(svc)
    pushed = push(keys.admin, work, "HEAD:refs/for/main")
    assert pushed.returncode != 0
    assert f"convention/copy.md: id {memory_id} is also the id of convention/" in pushed.stderr, pushed.stderr
    assert state(svc) == before


def test_an_id_written_with_underscores_is_the_same_id(live_server: str, keys: Keys, svc: MemoryService,
                                                      tmp_path: Path) -> None:
    work = clone(live_server, keys.admin, tmp_path / "w")
    commit(work, {"fact/one.md": "---\ntype: fact\nid: '1234567890'\n---\n\nThe first\n",
                  "fact/two.md": "---\ntype: fact\nid: 1_234_567_890\n---\n\nThe second\n"})
    before = state(svc)
    pushed = push(keys.admin, work, "HEAD:refs/for/main")
    assert pushed.returncode != 0
    assert "id 1234567890 is also the id of fact/" in pushed.stderr, pushed.stderr
    assert state(svc) == before


def test_files_too_large_are_refused_from_their_size(live_server: str, keys: Keys, svc: MemoryService,
                                                    tmp_path: Path) -> None:
    work = clone(live_server, keys.admin, tmp_path / "w")
    (work / "fact").mkdir()
    big = 8 * 1024 * 1024
    for name in ("a.md", "b.md"):
        with open(work / "fact" / name, "wb") as out:
            out.truncate(big)  # zeros: a pack of a few KiB
    commit(work, {}, "two large files")
    before = state(svc)
    pushed = push(keys.admin, work, "HEAD:refs/for/main")
    assert pushed.returncode != 0
    assert f"remote: refused: fact/a.md: {big} bytes; a memory file may have" in pushed.stderr, pushed.stderr
    assert state(svc) == before
    fsck(svc)


def test_a_memory_file_over_its_limit_is_refused_though_the_readme_may_be_larger(
        live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    work = clone(live_server, keys.admin, tmp_path / "w")
    padded = "---\ntype: fact\ndescription: " + "x" * 40_000 + "\n---\n\nA fact\n"  # 40 KB: the README may
    commit(work, {"fact/padded.md": padded})
    before = state(svc)
    pushed = push(keys.admin, work, "HEAD:refs/for/main")
    assert pushed.returncode != 0
    assert f"fact/padded.md: {len(padded)} bytes; a memory file may have 32384" in pushed.stderr, pushed.stderr
    assert state(svc) == before


def test_a_gzip_push_whose_body_is_not_gzip_is_a_400(live_server: str, keys: Keys, svc: MemoryService) -> None:
    before = state(svc)
    headers = {"Authorization": f"Bearer {keys.writer}", "Content-Encoding": "gzip",
               "Content-Type": "application/x-git-receive-pack-request"}
    for body in (b"0000 not gzip at all", b"\x1f\x8b\x08\x00 truncated gzip"):
        answer = httpx.post(f"{live_server}/git/default.git/git-receive-pack", headers=headers, content=body)
        assert answer.status_code == 400, answer.text
        assert "gzip" in answer.json()["error"]["message"]
    assert state(svc) == before


def test_the_state_helper_sees_a_new_ref_and_a_new_pack(live_server: str, keys: Keys, svc: MemoryService,
                                                       tmp_path: Path) -> None:
    """The comparison the tests above rely on can fail: an accepted push changes all three parts."""
    work = clone(live_server, keys.writer, tmp_path / "w")
    commit(work, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")})
    refs, counts, files = state(svc)
    assert push(keys.writer, work, "HEAD:refs/for/main").returncode == 0
    after = state(svc)
    assert after[0] != refs and after[1] != counts and after[2] != files
    assert "refs/heads/review/push-writer-" in subprocess.run(
        ["git", "for-each-ref"], cwd=svc.settings.repos_dir / "default.git", capture_output=True, text=True).stdout
