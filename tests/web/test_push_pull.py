"""`git pull` after an approved push (issue 25 item 1): a real clone over HTTP, refs/for/main, approve, pull."""

from __future__ import annotations

from pathlib import Path

from gitmem import concepts
from gitmem.service import MemoryService

from .conftest import Keys
from .test_git import git
from .test_push import OKF, clone, commit, fsck, push


def head(work: Path, ref: str = "HEAD") -> str:
    done = git("rev-parse", ref, cwd=work)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def pull(key: str, work: Path, *options: str) -> object:
    from .test_git import with_key

    return git(*with_key(key), "pull", *options, cwd=work)


def edit_memory(work: Path, svc: MemoryService, memory_id: str, text: str) -> None:
    """Change a complete memory file's text in the clone, as a person would with an editor."""
    memory = svc.show("default", memory_id)
    edited = memory.replace(text=text, title=concepts.title_from(text), description=concepts.description_from(text))
    commit(work, {memory.path: concepts.render(edited).decode()}, f"amend: {edited.title}")


def test_approved_before_main_moved_the_pushed_commits_land_as_they_are(
        live_server: str, keys: Keys, svc: MemoryService, remember: object, tmp_path: Path) -> None:
    mid = svc.remember("default", "Python 3.11 is the floor", source="user").memory.id  # type: ignore[union-attr]
    work = clone(live_server, keys.writer, tmp_path / "w")
    edit_memory(work, svc, mid, "Python 3.12 is the floor")
    pushed_id = head(work)
    pushed = push(keys.writer, work, "HEAD:refs/for/main")
    assert pushed.returncode == 0, pushed.stderr
    assert "remote: main has not moved since your commits' base: once approved, `git pull` fast-forwards" \
        in pushed.stderr
    svc.reviews.approve("default", 1, actor="reviewer")
    assert svc.head("default") == pushed_id  # the very commit pushed: same id, no copy by gitmem
    done = pull(keys.writer, work)
    assert done.returncode == 0, done.stderr  # was: "Need to specify how to reconcile divergent branches"
    assert head(work) == pushed_id == head(work, "origin/main")
    assert git("status", "--porcelain", "--branch", cwd=work).stdout.startswith("## main...origin/main\n")
    assert svc.show("default", mid).text == "Python 3.12 is the floor"
    fsck(svc)


def test_a_pushed_file_completed_on_approval_still_pulls_by_fast_forward(
        live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    svc.remember("default", "Releases go out on Tuesdays", source="user")
    work = clone(live_server, keys.writer, tmp_path / "w")
    commit(work, {"convention/tabs.md": OKF.format(type="convention", text="Indent Python with four spaces")},
           "Indent with spaces")
    pushed_id = head(work)
    assert push(keys.writer, work, "HEAD:refs/for/main").returncode == 0
    svc.reviews.approve("default", 1, actor="reviewer")
    main = svc.head("default")
    assert main != pushed_id  # one more commit: gitmem's fields (id, created...) for the plain file
    done = pull(keys.writer, work)
    assert done.returncode == 0, done.stderr
    assert head(work) == main and git("merge-base", "--is-ancestor", pushed_id, main, cwd=work).returncode == 0
    assert "id: " in (work / "convention" / "tabs.md").read_text()  # the completion came back with the pull
    fsck(svc)


def test_approved_after_main_moved_the_reply_and_the_review_say_pull_rebase(
        live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    mid = svc.remember("default", "Python 3.11 is the floor", source="user").memory.id  # type: ignore[union-attr]
    work = clone(live_server, keys.writer, tmp_path / "w")
    edit_memory(work, svc, mid, "Python 3.12 is the floor")
    svc.remember("default", "Deploys happen on Tuesdays", source="user")  # main moves before the push
    pushed = push(keys.writer, work, "HEAD:refs/for/main")
    assert pushed.returncode == 0, pushed.stderr
    assert "remote: main has moved since your commits' base" in pushed.stderr
    assert "`git pull --rebase` gets your clone back in step" in pushed.stderr
    review = svc.reviews.approve("default", 1, actor="reviewer")
    advice = svc.reviews.pull_advice("default", review)
    assert advice is not None and "`git pull --rebase`" in advice
    assert pull(keys.writer, work).returncode != 0  # a plain pull cannot reconcile a replayed commit...
    done = pull(keys.writer, work, "--rebase")  # ...but pull --rebase drops the copy already on main
    assert done.returncode == 0, done.stderr
    assert head(work) == svc.head("default") == head(work, "origin/main")
    text = (work / svc.show("default", mid).path).read_text()
    assert text.endswith("---\n\nPython 3.12 is the floor\n") and "<<<<<<<" not in text
