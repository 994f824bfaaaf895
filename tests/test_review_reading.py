"""Reading reviews (gitmem.reviews.reading): each commit's state and diffs, pages, pull advice, history rows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gitmem import concepts
from gitmem.errors import InvalidInput, MemoryNotFound
from gitmem.repo import MAIN, Change, Store
from gitmem.reviews import reading
from gitmem.service import MemoryService
from gitmem.settings import Settings

from .conftest import namespace_of
from .test_consolidate import plant


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", embeddings="none")


def amend(memory: concepts.Memory, text: str) -> Change:
    new = memory.replace(text=text, title=concepts.title_from(text), description=concepts.description_from(text))
    return Change({memory.path: concepts.render(new)}, f"amend: {memory.title}", "amend", (memory.id,), None, "sam",
                  body="because")


def on_main(svc: MemoryService, change: Change) -> str:
    ns = namespace_of(svc)
    ns.store.transact(lambda head: change)
    ns.synced()
    head = ns.store.head_id(MAIN)
    assert head is not None
    return head


def test_each_commit_shows_its_reason_files_and_memories(svc: MemoryService) -> None:
    db = plant(svc, "The database is PostgreSQL 15", type="fact")
    added = Change({"fact/cache.md": b"---\ntype: fact\n---\n\nThe cache is Redis\n"}, "add the cache", "unknown")
    review = svc.reviews.propose("default", [amend(db, "The database is PostgreSQL 16"), added], title="Two",
                                 author="sam", kind="amend")
    first, second = svc.reviews.diff("default", review.number)
    assert (first.summary, first.reason, first.action, first.memory_ids, first.state, first.note) == (
        f"amend: {db.title}", "because", "amend", (db.id,), "open", None)
    (file,) = first.files
    assert (file.path, file.status) == (db.path, "modified")
    assert file.unified.startswith(f"--- a/{db.path}\n+++ b/{db.path}\n")
    assert "-The database is PostgreSQL 15\n+The database is PostgreSQL 16\n" in file.unified
    assert [(m.id, m.change, m.before, m.after) for m in first.memories] == [
        (db.id, "changed", "The database is PostgreSQL 15", "The database is PostgreSQL 16")]
    assert first.memories[0].text  # the word diff
    assert second.action == "edit"  # a commit without gitmem's trailers is an edit
    (new_file,) = second.files
    assert new_file.unified.startswith("--- /dev/null\n+++ b/fact/cache.md\n")
    light = svc.reviews.diff("default", review.number, detail=[first.id])
    assert light[0].files and light[0].memories[0].text
    assert light[1].files == [] and light[1].memories[0].text == [] and light[1].memories[0].after == \
        "The cache is Redis"


def test_an_open_commit_main_overtook_shows_stale_the_others_open(svc: MemoryService) -> None:
    db = plant(svc, "The database is PostgreSQL 15", type="fact")
    cache = plant(svc, "The cache is Redis 6", type="fact")
    review = svc.reviews.propose("default", [amend(db, "The database is PostgreSQL 16"),
                                             amend(cache, "The cache is Redis 7")], title="Two", author="sam",
                                 kind="amend")
    svc.amend("default", db.id, text="The database is MySQL")
    first, second = svc.reviews.diff("default", review.number)
    assert first.state == "stale" and first.note is not None
    assert first.note.startswith(f"main changed the text of {db.path} after the review was opened; propose")
    assert (second.state, second.note) == ("open", None)
    assert svc.reviews.get("default", review.number).status == "open"  # reading records nothing
    svc.reviews.approve("default", review.number, actor="rita")  # merges the one that is not stale
    assert [c.state for c in svc.reviews.diff("default", review.number)] == ["stale", "merged"]


def test_a_commit_that_only_touches_a_memory_main_changed_is_stale_too(svc: MemoryService, store: Store) -> None:
    db = plant(svc, "The database is PostgreSQL 15", type="fact")
    untouched = Change({"README.md": b"# notes\n"}, "note about the database", "edit", (db.id,))
    review = svc.reviews.propose("default", [untouched], title="One", author="sam", kind="amend")
    (shown,) = svc.reviews.diff("default", review.number)
    assert shown.state == "open"
    svc.amend("default", db.id, text="The database is MySQL")
    (shown,) = svc.reviews.diff("default", review.number)
    assert shown.state == "stale"


def test_a_commit_made_with_git_is_stale_by_the_files_it_changes(svc: MemoryService) -> None:
    db = plant(svc, "The database is PostgreSQL 15", type="fact")
    edited = db.replace(text="The database is PostgreSQL 16")
    by_git = Change({db.path: concepts.render(edited)}, "edit the database", "edit")  # no Memory-Id trailer
    review = svc.reviews.propose("default", [by_git], title="One", author="sam", kind="push")
    svc.amend("default", db.id, text="The database is MySQL")
    (shown,) = svc.reviews.diff("default", review.number)
    assert shown.state == "stale" and shown.memory_ids == ()


def test_decided_commits_keep_their_state_and_a_closed_reviews_undecided_show_skipped(svc: MemoryService) -> None:
    db = plant(svc, "The database is PostgreSQL 15", type="fact")
    cache = plant(svc, "The cache is Redis 6", type="fact")
    review = svc.reviews.propose("default", [amend(db, "The database is PostgreSQL 16"),
                                             amend(cache, "The cache is Redis 7")], title="Two", author="sam",
                                 kind="amend")
    first, _ = svc.reviews.diff("default", review.number)
    svc.reviews.approve("default", review.number, actor="rita", commits=[first.id])
    assert [c.state for c in svc.reviews.diff("default", review.number)] == ["merged", "open"]
    svc.amend("default", db.id, text="The database is MySQL")  # a merged commit does not go stale
    assert [c.state for c in svc.reviews.diff("default", review.number)] == ["merged", "open"]
    svc.reviews.reject("default", review.number, actor="rita", reason="enough")
    assert [c.state for c in svc.reviews.diff("default", review.number)] == ["merged", "skipped"]


def test_browsing_details_only_the_page_asked_for(svc: MemoryService) -> None:
    memories = [plant(svc, f"Service number {n} runs on port {9000 + n}", type="fact") for n in range(22)]
    review = svc.reviews.propose("default", [amend(m, m.text + " now") for m in memories], title="Ports",
                                 author="sam", kind="amend")
    first = svc.reviews.browse("default", review.number)
    assert first.pages == 2 and len(first.page) == 20 and len(first.shown) == 22
    assert all(c.files for c in first.page)
    second = svc.reviews.browse("default", review.number, kind="edit", state="open", lossy="", page="2")
    assert [c.id for c in second.page] == [c.id for c in first.shown[20:]]
    assert all(c.files for c in second.page) and second.filter.page == 2
    assert not any(c.files for c in second.shown[:20])  # the other pages only say what they change
    with pytest.raises(InvalidInput):
        svc.reviews.browse("default", review.number, page="x")


# --- pull advice ------------------------------------------------------------------------------------------


def pushed_review(svc: MemoryService, store: Store, text: str = "The cache is Redis 7") -> int:
    main = store.head()
    branch = store.write_branch(main, [Change({"fact/cache.md": f"---\ntype: fact\n---\n\n{text}\n".encode()},
                                              "add the cache", "edit")], "refs/heads/review/p", "push")
    return svc.reviews.open("default", branch=branch, base=str(main.id), title="Cache", author="ann",
                            kind="push").number


def test_pull_advice_while_main_is_still(svc: MemoryService, store: Store) -> None:
    number = pushed_review(svc, store)
    review = svc.reviews.get("default", number)
    assert svc.reviews.pull_advice("default", review, pusher=True) == (
        "main has not moved since your commits' base: once approved, `git pull` fast-forwards to them as they are "
        "(while main does not move before the approval)")
    assert svc.reviews.pull_advice("default", review) == (
        "main has not moved since this push: approving lands its commits as they are, and `git pull` in the "
        "pusher's clone fast-forwards to them")
    svc.reviews.approve("default", number, actor="rita")
    assert svc.reviews.pull_advice("default", svc.reviews.get("default", number)) == (
        "the pushed commits landed on main as they are: `git pull` fast-forwards a clone to them")


def test_pull_advice_once_main_moved(svc: MemoryService, store: Store) -> None:
    number = pushed_review(svc, store)
    plant(svc, "Deploys happen on Tuesdays")
    review = svc.reviews.get("default", number)
    assert svc.reviews.pull_advice("default", review, pusher=True) == (
        "main has moved since your commits' base: approving replays them onto main with new ids; then `git pull "
        "--rebase` gets your clone back in step")
    assert svc.reviews.pull_advice("default", review) == (
        "main has moved since this push was based: approving replays its commits onto main with new ids, so the "
        "pusher runs `git pull --rebase` afterwards to get back in step")
    svc.reviews.approve("default", number, actor="rita")
    assert svc.reviews.pull_advice("default", svc.reviews.get("default", number)) == (
        "main had moved, so the pushed commits were replayed onto it with new ids: in the pusher's clone, "
        "`git pull --rebase` gets back in step")


def test_no_pull_advice_for_other_kinds_or_when_nothing_merged(svc: MemoryService, store: Store) -> None:
    db = plant(svc, "The database is PostgreSQL 15", type="fact")
    amended = svc.reviews.propose("default", [amend(db, "The database is PostgreSQL 16")], title="One",
                                  author="sam", kind="amend")
    assert svc.reviews.pull_advice("default", amended) is None
    for kind in ("supersede", "consolidation", "purge"):
        other = svc.reviews.propose("default", [amend(db, f"The database is PostgreSQL 16 ({kind})")], title="One",
                                    author="sam", kind=kind)
        assert svc.reviews.pull_advice("default", svc.reviews.get("default", other.number)) is None
    number = pushed_review(svc, store)
    svc.reviews.reject("default", number, actor="rita", reason="no")
    assert svc.reviews.pull_advice("default", svc.reviews.get("default", number)) is None
    gone = svc.reviews.get("default", number)
    lost = replace(gone, commit_states={"0" * 40: "merged"})  # a merged commit the repository lost
    assert svc.reviews.pull_advice("default", lost) == (
        "main had moved, so the pushed commits were replayed onto it with new ids: in the pusher's clone, "
        "`git pull --rebase` gets back in step")


# --- main's history ----------------------------------------------------------------------------------------


def test_a_commit_of_main_as_a_history_row_and_its_revert(svc: MemoryService, store: Store) -> None:
    db = plant(svc, "The database is PostgreSQL 15", type="fact")
    head = on_main(svc, amend(db, "The database is PostgreSQL 16"))
    info = svc.reviews.commit_info("default", head)
    assert (info.id, info.action, info.memory_ids) == (head, "amend", (db.id,))
    (diff,) = svc.reviews.commit_diff("default", head)
    assert (diff.id, diff.change, diff.before, diff.after) == (db.id, "changed", "The database is PostgreSQL 15",
                                                              "The database is PostgreSQL 16")
    (back,) = svc.reviews.revert_preview("default", head)
    assert (back.before, back.after) == ("The database is PostgreSQL 16", "The database is PostgreSQL 15")
    assert store.head_id(MAIN) == head  # a preview writes nothing
    branch = store.write_branch(store.head(), [amend(db, "elsewhere")], "refs/heads/review/x", "x")
    side = store.head_id(branch)
    assert side is not None
    with pytest.raises(InvalidInput, match=f"^commit {side} is not on main; only main's commits can be reverted$"):
        svc.reviews.revert_preview("default", side)


def test_a_memory_merged_away_points_to_the_one_it_became(svc: MemoryService, store: Store) -> None:
    gone = plant(svc, "Use ruff for linting")
    kept = plant(svc, "Lint Python code with ruff")
    other = plant(svc, "Something unrelated")
    on_main(svc, Change({other.path: concepts.render(other.replace(text="Something else"))}, "edit other", "amend",
                        (other.id, gone.id)))
    on_main(svc, Change({gone.path: None}, "merge", "consolidate", (gone.id, kept.id)))
    assert svc.reviews.successor("default", gone.id) == kept.id
    assert svc.reviews.successor("default", kept.id) is None  # the newest commit naming it names no other live one
    assert svc.reviews.successor("default", "0123456789") is None
    missing = MemoryNotFound(f"memory {gone.id} not found")
    error = svc.reviews.missing("default", gone.id, missing)
    assert str(error) == f"memory {gone.id} was merged into {kept.id}; see memory {kept.id}"
    assert error.replaced_by == kept.id  # type: ignore[attr-defined]
    plain = MemoryNotFound("memory 0123456789 not found")
    assert svc.reviews.missing("default", "0123456789", plain) is plain


def test_a_memory_knows_its_open_reviews(svc: MemoryService) -> None:
    db = plant(svc, "The database is PostgreSQL 15", type="fact")
    cache = plant(svc, "The cache is Redis 6", type="fact")
    one = svc.reviews.propose("default", [amend(db, "The database is PostgreSQL 16"),
                                          amend(cache, "The cache is Redis 7")], title="Two", author="sam",
                              kind="amend")
    two = svc.reviews.propose("default", [amend(db, "The database is PostgreSQL 17")], title="One", author="sam",
                              kind="amend")
    assert svc.reviews.open_for("default", db.id) == [one.number, two.number]
    assert svc.reviews.open_for("default", cache.id) == [one.number]
    assert svc.reviews.open_for("default", "0123456789") == []
    twice = svc.reviews.propose("default", [amend(cache, "The cache is Redis 7.2"),
                                            amend(cache.replace(text="The cache is Redis 7.2"), "The cache is Valkey")],
                                title="Cache twice", author="sam", kind="amend")
    assert svc.reviews.open_for("default", cache.id) == [one.number, twice.number]  # each review once
    svc.reviews.reject("default", twice.number, actor="rita", reason="no")
    second = svc.reviews.diff("default", one.number)[1]
    svc.reviews.approve("default", one.number, actor="rita", commits=[second.id])
    assert svc.reviews.open_for("default", cache.id) == []  # its commit merged: no longer open
    svc.reviews.reject("default", two.number, actor="rita", reason="no")
    assert svc.reviews.open_for("default", db.id) == [one.number]


def test_a_commit_is_analysed_once_with_and_once_without_its_diffs(svc: MemoryService, store: Store,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    db = plant(svc, "The database is PostgreSQL 15", type="fact")
    head = store.commit(on_main(svc, amend(db, "The database is PostgreSQL 16")))
    monkeypatch.setattr(reading, "_ANALYSED_KEPT", 2)
    reading._ANALYSED.clear()
    full = reading.analysed(store, head, True)
    assert reading.analysed(store, head, True) is full
    light = reading.analysed(store, head, False)
    assert light is not full and light.files == [] and full.files
    parent = store.commit(str(head.parents[0].id))
    reading.analysed(store, parent, True)  # a third: the oldest goes
    assert list(reading._ANALYSED) == [(str(head.id), False), (str(parent.id), True)]
    assert reading.analysed(store, head, True) is not full and reading.analysed(store, head, True) == full
