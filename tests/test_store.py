"""The git object layer: bare repository, commits with trailers, compare-and-swap refs, revert."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import FrozenInstanceError
from pathlib import Path

import pygit2
import pytest

from gitmem.errors import CommitNotFound, InvalidInput, RefLocked, RefRaceLost, RevertConflict
from gitmem.repo import MAIN, Change, Store, parse_trailers
from gitmem.repo.store import refused_part
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.conftest import git


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.create(tmp_path / "repos" / "team.git", b"# memories\n")


def fsck(store: Store) -> None:
    done = subprocess.run(["git", "--git-dir", str(store.path), "fsck", "--strict", "--no-progress"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + done.stdout


def write(store: Store, changes: dict[str, bytes | None], summary: str = "change", **kw: object) -> str:
    oid = store.transact(lambda head: Change(changes, summary, "remember", **kw))  # type: ignore[arg-type]
    assert oid is not None
    return str(oid)


def changed(store: Store, commit: str) -> list[str]:
    return git(store.path, "diff-tree", "--no-commit-id", "--name-only", "-r", commit).split()


def test_create_makes_a_bare_repository_with_one_commit_on_main(store: Store) -> None:
    assert store.repo.is_bare
    assert git(store.path, "symbolic-ref", "HEAD").strip() == MAIN
    assert git(store.path, "show", "main:README.md") == "# memories\n"
    assert git(store.path, "rev-list", "--count", "main").strip() == "1"
    again = Store.create(store.path, b"other readme")
    assert again.head_id() == store.head_id(), "creating twice keeps the first"
    fsck(store)


@pytest.mark.parametrize("existing", ["empty folder", "folder with a stray file"])
def test_create_in_a_folder_that_already_exists(tmp_path: Path, existing: str) -> None:
    path = tmp_path / "team.git"
    path.mkdir()
    if existing != "empty folder":
        (path / "lost+found").mkdir()
    store = Store.create(path, b"# memories\n")
    assert git(path, "show", "main:README.md") == "# memories\n"
    assert store.repo.config["core.logAllRefUpdates"] == "always"
    assert [p.name for p in tmp_path.iterdir()] == ["team.git"], "no staging folder left behind"
    fsck(store)


def test_a_commit_touches_only_its_files_and_carries_trailers(store: Store) -> None:
    write(store, {"fact/a.md": b"a\n", "fact/b.md": b"b\n", "lesson/c.md": b"c\n"})
    oid = write(store, {"fact/a.md": b"a2\n", "lesson/c.md": None}, "remember: a",
                memory_ids=("0123456789",), source="agent", actor="ann")
    assert sorted(changed(store, oid)) == ["fact/a.md", "lesson/c.md"]
    assert git(store.path, "show", "main:fact/b.md") == "b\n"
    assert git(store.path, "ls-tree", "main", "--name-only").split() == ["README.md", "fact"], \
        "an emptied folder disappears"
    trailers = git(store.path, "log", "-1", "--format=%(trailers:only,unfold)", "main").strip().splitlines()
    assert trailers == ["Memory-Id: 0123456789", "Action: remember", "Source: agent", "Actor: ann"]
    info = store.info(store.head())
    assert (info.action, info.actor, info.memory_ids) == ("remember", "ann", ("0123456789",))
    assert git(store.path, "log", "-1", "--format=%an", "main").strip() == "ann"
    fsck(store)


def test_long_summaries_are_cut_and_actor_names_are_made_safe(store: Store) -> None:
    oid = write(store, {"fact/a.md": b"a\n"}, "x" * 200, actor="evil <a@b>\nInjected: yes")
    commit = store.commit(oid)
    summary = commit.message.splitlines()[0]
    assert len(summary) == 72 and summary.endswith("…")
    assert commit.author.name == "evil a@bInjected: yes"
    fsck(store)


def test_a_line_break_in_a_value_cannot_forge_a_trailer(store: Store) -> None:
    oid = write(store, {"fact/a.md": b"a\n"}, "x", memory_ids=("0123456789",),
                actor="mallory\nMemory-Id: abcdefabcd\nAction: purge")
    info = store.info(store.commit(oid))
    assert info.memory_ids == ("0123456789",)
    assert info.action == "remember"
    assert info.actor == "mallory Memory-Id: abcdefabcd Action: purge"


def test_trailers_are_read_from_the_last_paragraph() -> None:
    message = "remember: x\n\nBody mentioning Action: nothing\n\nMemory-Id: abc\nAction: merge\nActor: bo\n"
    assert parse_trailers(message) == {"Memory-Id": ["abc"], "Action": ["merge"], "Actor": ["bo"]}
    assert parse_trailers("just a summary\n") == {}


def test_the_reflog_records_every_move_of_main(store: Store) -> None:
    for i in range(3):
        write(store, {f"fact/{i}.md": b"x\n"}, f"change {i}")
    assert store.repo.config["core.logAllRefUpdates"] == "always"
    moves = git(store.path, "reflog", "show", "--format=%H %gs", "main").strip().splitlines()
    assert len(moves) == 4
    assert moves[0].split()[0] == store.head_id()
    assert moves[0].endswith("change 2")


def test_refusing_to_write_outside_the_repository(store: Store) -> None:
    head = store.head_id()
    for path in ("../escape.md", "/abs.md", "fact/../../x.md", "./x.md"):
        with pytest.raises(InvalidInput, match="outside the repository"):
            write(store, {path: b"x"})
    assert store.head_id() == head


def test_compare_and_swap_refuses_a_stale_old_value(store: Store) -> None:
    head = store.head_id()
    first = store.write_commit(store.head(), Change({"fact/a.md": b"a"}, "a", "remember"))
    second = store.write_commit(store.head(), Change({"fact/b.md": b"b"}, "b", "remember"))
    store.move_ref(MAIN, first, head, "a")
    with pytest.raises(RefRaceLost):
        store.move_ref(MAIN, second, head, "b")
    assert store.head_id() == str(first)
    with pytest.raises(RefRaceLost):
        store.move_ref(MAIN, second, None, "must not exist")


def test_a_lost_race_replans_on_the_new_head(store: Store) -> None:
    """Another writer moves main between planning and publishing: both changes survive."""
    calls: list[str] = []

    def plan(head: pygit2.Commit) -> Change:
        calls.append(str(head.id))
        if len(calls) == 1:
            write(store, {"fact/theirs.md": b"theirs\n"}, "theirs")
        return Change({"fact/mine.md": b"mine\n"}, "mine", "remember")

    store.transact(plan)
    assert len(calls) == 2 and calls[0] != calls[1]
    assert git(store.path, "show", "main:fact/theirs.md") == "theirs\n"
    assert git(store.path, "show", "main:fact/mine.md") == "mine\n"
    parents = git(store.path, "rev-list", "--parents", "main").strip().splitlines()
    assert [len(line.split()) for line in parents] == [2, 2, 1], "history stays linear"
    fsck(store)


def test_a_stale_lock_left_by_a_crashed_process_is_recovered(store: Store) -> None:
    lock = store.path / "refs" / "heads" / "main.lock"
    lock.write_text("0" * 40 + "\n")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    oid = write(store, {"fact/a.md": b"a\n"})
    assert store.head_id() == oid
    assert not lock.exists()
    fsck(store)


def test_a_fresh_lock_of_a_live_writer_is_respected(store: Store) -> None:
    lock = store.path / "refs" / "heads" / "main.lock"
    lock.write_text("0" * 40 + "\n")
    head = store.head_id()
    with pytest.raises(RefLocked, match="try again") as raised:
        store.transact(lambda h: Change({"fact/a.md": b"a"}, "a", "remember"), attempts=3)
    # It says what is in the way and how to remove it, not that main "kept moving".
    assert f"{lock} is in the way" in str(raised.value)
    assert f"rm '{lock}'" in str(raised.value)
    assert store.head_id() == head
    assert lock.exists()


# A writer killed inside libgit2's ref update: it holds gitmem's flock, has made the ref's lock
# file (holding the new id, as libgit2 does) and dies before renaming it into place.
DIE_MID_MOVE = """
import os, signal, sys
from pathlib import Path
from gitmem.repo import Change, Store

def die(self, ref, new, old, reason):
    if sys.argv[2] == "with-lock":
        (self.path / (ref + ".lock")).write_text(f"{new}\\n")
    os.kill(os.getpid(), signal.SIGKILL)

Store._swap = die
Store(Path(sys.argv[1])).transact(lambda head: Change({"fact/lost.md": b"lost\\n"}, "lost", "remember"))
"""


def die_mid_move(store: Store, how: str) -> None:
    done = subprocess.run([sys.executable, "-c", DIE_MID_MOVE, str(store.path), how], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr


def test_the_lock_of_a_gitmem_writer_that_died_mid_move_is_removed_at_once(store: Store) -> None:
    head = store.head_id()
    die_mid_move(store, "with-lock")
    lock = store.path / "refs" / "heads" / "main.lock"
    assert lock.exists() and store.head_id() == head
    # No waiting for the lock to age: one attempt is enough.
    oid = store.transact(lambda h: Change({"fact/a.md": b"a\n"}, "a", "remember"), attempts=1)
    assert store.head_id() == str(oid)
    assert not lock.exists()
    assert git(store.path, "show", "main:fact/a.md") == "a\n"
    assert (store.path / "gitmem-ref-moves").read_bytes() == b""
    fsck(store)


@pytest.mark.parametrize("lock_age", [-1.0, 5.0], ids=["made-before-the-record", "made-long-after-the-record"])
def test_a_lock_the_dead_writer_did_not_make_is_respected(store: Store, lock_age: float) -> None:
    die_mid_move(store, "without-lock")
    moves = store.path / "gitmem-ref-moves"
    assert moves.read_bytes().endswith(b" refs/heads/main\n")
    lock = store.path / "refs" / "heads" / "main.lock"
    lock.write_text("0" * 40 + "\n")
    recorded = time.time() - 6.0
    os.utime(moves, (recorded, recorded))
    os.utime(lock, (recorded + lock_age, recorded + lock_age))
    head = store.head_id()
    with pytest.raises(RefLocked):
        store.transact(lambda h: Change({"fact/a.md": b"a"}, "a", "remember"), attempts=1)
    assert lock.exists() and store.head_id() == head


def test_commit_lookup_errors(store: Store) -> None:
    blob = store.repo.create_blob(b"not a commit")
    with pytest.raises(InvalidInput, match="not a commit id"):
        store.commit("main~1")
    with pytest.raises(InvalidInput):
        store.commit("")
    with pytest.raises(CommitNotFound, match="no commit deadbeef"):
        store.commit("deadbeef")
    with pytest.raises(CommitNotFound, match="is not a commit"):
        store.commit(str(blob))
    head = store.head_id()
    assert head is not None
    assert str(store.commit(head[:8]).id) == head


def test_read_and_files(store: Store) -> None:
    write(store, {"fact/a.md": b"a\n", "lesson/deep/b.md": b"b\n"})
    assert store.read("fact/a.md") == b"a\n"
    assert store.read("fact/missing.md") is None
    assert store.read("fact") is None, "a folder is not a file"
    assert dict(store.files(store.head(), "lesson")) == {"lesson/deep/b.md": b"b\n"}
    assert dict(store.files(store.head(), "nothing")) == {}
    assert set(dict(store.files(store.head()))) == {"README.md", "fact/a.md", "lesson/deep/b.md"}


def test_revert_change_undoes_a_commit_or_refuses_on_conflict(store: Store) -> None:
    added = write(store, {"fact/a.md": b"one\n"})
    write(store, {"fact/b.md": b"b\n"})
    tree = store.revert_change(store.commit(added), store.head())
    assert "fact/a.md" not in store.repo[tree].peel(pygit2.Tree)["fact"].peel(pygit2.Tree)
    write(store, {"fact/a.md": b"two\n"})
    with pytest.raises(RevertConflict, match="fact/a.md"):
        store.revert_change(store.commit(added), store.head())
    first = list(store.log())[-1]
    with pytest.raises(InvalidInput, match="first commit"):
        store.revert_change(first, store.head())


@pytest.mark.parametrize("name", ["..", ".", ".git", ".GIT", ".Git", "GIT~1", "git~1 ", ".git.", ".git  .",
                                  ".git:x", ".git::$INDEX_ALLOCATION", "...", ". ", ".. ", "git~2", ".gi",
                                  "x.git", ".git.md", ".gitmodules", "git~1x", " .git", "a\\b", "~"])
def test_refused_part_follows_libgit2(store: Store, name: str) -> None:
    blob = store.repo.create_blob(b"")
    try:
        store.repo.TreeBuilder().insert(name, blob, pygit2.enums.FileMode.BLOB)
        libgit2_refuses = False
    except pygit2.GitError:
        libgit2_refuses = True
    assert (refused_part(f"fact/{name}/x.md") == name) is libgit2_refuses
# --- details the mutation run showed no test held (bench/mutation.py) -----------------------------


def test_changes_and_commit_infos_are_immutable(store: Store) -> None:
    change = Change({"fact/a.md": b"a"}, "a", "remember")
    with pytest.raises(FrozenInstanceError):
        change.summary = "b"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        store.info(store.head()).actor = "someone"  # type: ignore[misc]


@pytest.mark.parametrize(("length", "summary"), [(72, "x" * 72), (73, "x" * 71 + "…")])
def test_summaries_are_cut_after_72_characters(length: int, summary: str) -> None:
    assert Change({}, "x" * length, "remember").message().splitlines()[0] == summary


def test_the_body_sits_between_the_summary_and_the_trailers() -> None:
    assert Change({}, "s", "remember", body="  ").message() == "s\n\nAction: remember\nActor: gitmem\n"
    assert Change({}, "s", "remember", ("0123456789",), "agent", "ann", body=" why \n").message() == (
        "s\n\nwhy\n\nMemory-Id: 0123456789\nAction: remember\nSource: agent\nActor: ann\n")


def test_trailers_need_a_paragraph_of_their_own_and_key_colon_value_lines() -> None:
    assert parse_trailers("Action: remember\n") == {}, "a lone summary line is not a trailer"
    message = "s\n\nAction: merge\nSigned\nNot a key: x\nActor:bob\nMemory-Id: a\nMemory-Id: b\n"
    assert parse_trailers(message) == {"Action": ["merge"], "Memory-Id": ["a", "b"]}


def test_info_falls_back_to_the_author_and_takes_the_first_value(store: Store) -> None:
    tree = store.head().tree.id
    author = pygit2.Signature("Hand Edit", "hand@example.com")
    plain = store.repo.create_commit(None, author, author, "edited by hand\n\nno trailers here\n", tree,
                                     [store.head().id])
    info = store.info(store.commit(str(plain)))
    assert (info.summary, info.actor, info.action, info.memory_ids) == ("edited by hand", "Hand Edit", "unknown", ())
    twice = store.repo.create_commit(None, author, author, "s\n\nAction: one\nAction: two\nActor: a\nActor: b\n",
                                     tree, [store.head().id])
    info = store.info(store.commit(str(twice)))
    assert (info.action, info.actor) == ("one", "a")


def test_create_makes_the_folders_above_the_repository(tmp_path: Path) -> None:
    store = Store.create(tmp_path / "a" / "b" / "c" / "team.git", b"# memories\n")
    assert store.read("README.md") == b"# memories\n"


def test_changed_paths_lists_added_modified_and_deleted_files(store: Store) -> None:
    first = store.commit(write(store, {"fact/a.md": b"a\n", "fact/b.md": b"b\n"}))
    second = store.commit(write(store, {"fact/a.md": b"a2\n", "fact/b.md": None, "lesson/c.md": b"c\n"}))
    assert sorted(store.changed_paths(first, second), key=str) == sorted(
        [("fact/a.md", "fact/a.md"), ("fact/b.md", None), (None, "lesson/c.md")], key=str)
    assert sorted(p for _, p in store.changed_paths(None, first)) == ["README.md", "fact/a.md", "fact/b.md"]
    assert all(old is None for old, _ in store.changed_paths(None, first))
    assert store.changed_paths(second, second) == []


def test_a_change_that_empties_a_folder_removes_it(store: Store) -> None:
    write(store, {"fact/a.md": b"a\n"})
    write(store, {"fact/a.md": None})
    assert store.read("fact/a.md") is None and "fact" not in store.head().tree
    write(store, {"README.md": None})
    assert len(store.head().tree) == 0, "an empty root tree is still a tree"
    fsck(store)


def test_a_change_may_carry_a_tree_made_elsewhere(store: Store) -> None:
    added = write(store, {"fact/a.md": b"a\n"})
    tree = store.revert_change(store.commit(added), store.head())
    oid = store.write_commit(store.head(), Change({"fact/ignored.md": b"x"}, "revert", "revert", tree=tree))
    assert store.repo[oid].peel(pygit2.Commit).tree.id == tree
    given = store.write_commit(store.head(), Change({}, "s", "remember"), tree=tree)
    assert store.repo[given].peel(pygit2.Commit).tree.id == tree


def test_compare_and_swap_refuses_any_other_old_value(store: Store) -> None:
    head = store.head_id()
    new = store.write_commit(store.head(), Change({"fact/a.md": b"a"}, "a", "remember"))
    for wrong in ("0" * 40, "f" * 40):  # sorting below and above the real head
        with pytest.raises(RefRaceLost, match="moved"):
            store.move_ref(MAIN, new, wrong, "a")
        assert store.head_id() == head


@pytest.mark.parametrize(("age", "cleared"), [(7.0, False), (10.5, True)])
def test_a_ref_lock_counts_as_stale_after_ten_seconds(store: Store, age: float, cleared: bool) -> None:
    # Writers wait _LOCK_PATIENCE (2 s) for a lock before giving up, so a 7-second-old lock stays fresh.
    lock = store.path / "refs" / "heads" / "main.lock"
    lock.write_text("0" * 40 + "\n")
    then = time.time() - age
    os.utime(lock, (then, then))
    head = store.head_id()
    assert head is not None
    new = store.write_commit(store.head(), Change({"fact/a.md": b"a"}, "a", "remember"))
    if cleared:
        store.move_ref(MAIN, new, head, "a")  # one call: the stale lock is removed and the move made
        assert store.head_id() == str(new) and not lock.exists()
    else:
        with pytest.raises(RefRaceLost):
            store.move_ref(MAIN, new, head, "a")
        assert store.head_id() == head and lock.exists()


def test_deleting_a_missing_ref_is_quiet(store: Store) -> None:
    store.delete_ref("refs/heads/never-made")
    assert store.head_id("refs/heads/never-made") is None


def test_the_reflog_message_is_the_summary_up_to_200_characters(store: Store) -> None:
    store.transact(lambda head: Change({"fact/a.md": b"a"}, "y" * 300, "remember"))
    [latest] = git(store.path, "reflog", "show", "-1", "--format=%gs", "main").splitlines()
    assert latest == "y" * 200


def test_reverting_a_merge_pushed_by_hand_undoes_what_it_brought_in(store: Store) -> None:
    base = store.head()
    ours = store.commit(write(store, {"fact/ours.md": b"ours\n"}))
    theirs = store.commit(str(store.write_commit(base, Change({"fact/theirs.md": b"theirs\n"}, "t", "remember"))))
    tree = store.write_tree(ours.tree, {"fact/theirs.md": b"theirs\n"})
    hand = pygit2.Signature("Hand", "hand@example.com")
    merge = store.repo.create_commit(None, hand, hand, "Merge theirs\n", tree, [ours.id, theirs.id])
    store.move_ref(MAIN, merge, str(ours.id), "merge by hand")
    reverted = store.repo[store.revert_change(store.commit(str(merge)), store.head())].peel(pygit2.Tree)
    assert sorted(e.name for e in reverted["fact"].peel(pygit2.Tree)) == ["ours.md"]
    with pytest.raises(InvalidInput, match=rf"^{str(base.id)[:10]} is the first commit"):
        store.revert_change(base, store.head())


def test_init_replaces_the_readme_an_earlier_version_wrote(settings: Settings) -> None:
    from gitmem.repo import REPO_README
    from gitmem.repo.namespace import _OLD_READMES

    repo = settings.repos_dir / "old.git"
    Store.create(repo, _OLD_READMES[0])
    service = MemoryService(settings)
    try:
        service.init("old")
        store = Store(repo)
        assert store.read("README.md") == REPO_README
        assert b"refs/for/main" in REPO_README
        head = store.head_id()
        service.init("old")  # only once
        assert store.head_id() == head
    finally:
        service.close()
