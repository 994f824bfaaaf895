"""Review records on ``refs/gitmem/reviews`` (gitmem.reviews.records): opened, read, updated, remapped."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitmem.errors import Conflict, InvalidInput, ReviewNotFound
from gitmem.repo import MAIN, Change, Store
from gitmem.reviews import REVIEWS_REF, STATUSES, Review, review_number
from gitmem.reviews.records import actor_name
from gitmem.service import MemoryService
from gitmem.settings import Settings

from .conftest import namespace_of

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", embeddings="none")


def changes(n: int, start: int = 0) -> list[Change]:
    return [Change({f"fact/f{i}.md": f"---\ntype: fact\n---\n\nFact {i}\n".encode()}, f"add fact {i}", "add")
            for i in range(start, start + n)]


def made(**fields: object) -> Review:
    review = Review(1, "default", "t", "open", "amend", "refs/heads/review/x", "b" * 40, "h" * 40, "sam", AT, AT)
    return replace(review, **fields) if fields else review


# --- one record ---------------------------------------------------------------------------------------


def test_a_commit_not_named_is_open() -> None:
    review = made(commit_states={"c1": "merged"})
    assert review.state_of("c1") == "merged" and review.state_of("c2") == "open"


def test_the_version_follows_head_base_status_and_decisions_only() -> None:
    review = made()
    assert len(review.version) == 12 and int(review.version, 16) >= 0
    assert made().version == review.version
    for changed in (made(head="x" * 40), made(base="x" * 40), made(status="merged"),
                    made(commit_states={"c": "merged"})):
        assert changed.version != review.version
    assert made(title="other", comments=[{"text": "hi"}], updated=datetime.now(UTC)).version == review.version
    assert made(commit_states={"a": "merged", "b": "stale"}).version == \
        made(commit_states={"b": "stale", "a": "merged"}).version


def test_the_label_says_how_much_merged() -> None:
    assert made().label == "open"
    assert made(status="merged", commit_count=3, commit_states={"a": "merged", "b": "merged", "c": "merged"}).label == \
        "merged"
    assert made(status="merged", commit_count=3, commit_states={"a": "merged", "b": "skipped"}).label == \
        "partly merged (1 of 3)"
    assert made(status="open", commit_count=62, commit_states={"a": "merged", "b": "stale"}).label == \
        "open (1 of 62 merged)"
    # Records from before the count was kept: the states say how many commits there are.
    assert made(status="merged", commit_states={"a": "merged", "b": "skipped"}).label == "partly merged (1 of 2)"
    assert made(status="merged", commit_count=2, commit_states={"a": "merged", "b": "merged"}).merged_count == 2
    assert made(status="rejected", commit_count=2).label == "rejected"
    every = {f"c{n}": "merged" for n in range(700)}  # a long review, all merged (counts past the small ints)
    assert made(status="merged", commit_count=700, commit_states=every).label == "merged"


def test_a_record_goes_to_json_and_back() -> None:
    review = made(description="d", comments=[{"actor": "a", "at": "x", "text": "t"}], stale_reason="s",
                  merged_commit="m" * 40, decided_by="rita", approved_commits=["a"], commit_states={"a": "merged"},
                  commit_notes={"b": "why"}, rejected=[{"ids": ["1"], "texts": {}}], commit_count=2)
    data = json.loads(json.dumps(review.to_dict()))
    assert data["created"] == "2026-01-02T03:04:05Z"
    assert (data["merged_count"], data["label"], data["version"]) == (1, "open (1 of 2 merged)", review.version)
    assert Review.from_dict(data) == review
    assert Review.from_dict({**data, "future_field": 1}) == review


def test_a_record_is_a_value() -> None:
    with pytest.raises(FrozenInstanceError):
        made().status = "merged"  # type: ignore[misc]
    data = made().to_dict()
    del data["commit_count"]
    assert Review.from_dict(data).commit_count == 0  # a record from before the count was kept


def test_an_old_merged_record_counts_what_was_approved_as_merged() -> None:
    data = made(status="merged", approved_commits=["a", "b"]).to_dict()
    del data["commit_states"], data["comments"], data["rejected"], data["commit_notes"]
    old = Review.from_dict(data)
    assert old.commit_states == {"a": "merged", "b": "merged"}
    assert (old.comments, old.rejected, old.commit_notes) == ([], [], {})
    assert Review.from_dict({**made(status="open", approved_commits=["a"]).to_dict(), "commit_states": {}}
                            ).commit_states == {}
    no_time = Review.from_dict({**made().to_dict(), "created": None})
    assert no_time.created.tzinfo is not None and no_time.created > AT and no_time.updated == AT


@pytest.mark.parametrize(("typed", "number"), [(3, 3), ("3", 3), ("#3", 3), (" #12 ", 12), ("007", 7)])
def test_a_review_number_as_typed(typed: object, number: int) -> None:
    assert review_number(typed) == number


@pytest.mark.parametrize("typed", [0, -1, "0", "#0", True, 1.0, None, "", "#", "٣", "1_0", "+1", "-1", "3a", [3]])
def test_what_is_no_review_number_is_refused(typed: object) -> None:
    with pytest.raises(InvalidInput, match="is not a review number"):
        review_number(typed)


def test_an_actor_is_required() -> None:
    assert actor_name(" rita ") == "rita"
    assert actor_name("x" * 200) == "x" * 200
    with pytest.raises(InvalidInput):
        actor_name("x" * 201)
    for missing in (None, "", "   ", 3):
        with pytest.raises(InvalidInput, match="^say who is acting: an actor name is required$"):
            actor_name(missing)


# --- the records of a namespace -------------------------------------------------------------------------


def test_no_review_means_no_ref_and_reading_creates_none(svc: MemoryService, store: Store) -> None:
    assert svc.reviews.list("default") == [] and svc.reviews.list("default", status="open") == []
    with pytest.raises(ReviewNotFound, match=r"^no review #1 in namespace 'default'; see `gitmem review list`$"):
        svc.reviews.get("default", 1)
    assert store.head_id(REVIEWS_REF) is None
    assert STATUSES == ("open", "merged", "rejected", "stale")
    with pytest.raises(InvalidInput, match="^unknown review status 'closed'; use one of: open, merged, rejected, "
                                           "stale$"):
        svc.reviews.list("default", status="closed")


def test_proposing_writes_a_branch_and_opens_a_numbered_review(svc: MemoryService, store: Store,
                                                              events: list[dict[str, object]]) -> None:
    main = store.head_id(MAIN)
    first = svc.reviews.propose("default", changes(2), title="Two facts", author="sam", kind="amend",
                                description="why")
    assert (first.number, first.status, first.kind, first.author, first.base, first.commit_count) == (
        1, "open", "amend", "sam", main, 2)
    assert first.branch.startswith("refs/heads/review/amend-") and store.head_id(first.branch) == first.head
    assert [c.message.splitlines()[0] for c in svc.reviews.commits("default", first)] == ["add fact 0", "add fact 1"]
    assert store.head_id(MAIN) == main  # nothing reaches main
    (opened,) = events
    assert opened["event"] == "review.opened" and opened["summary"] == "sam proposes: Two facts, review #1"
    assert opened["merges"] == [] and opened["review"] == first.to_dict()
    record = store.read("reviews/1.json", store.head(REVIEWS_REF)) or b""
    assert record.startswith(b'{\n "number": 1,\n "namespace": "default",\n "title": "Two facts"')
    second = svc.reviews.propose("default", changes(1, 5), title="", author="ann", kind="consolidation",
                                 branch="refs/heads/review/mine")
    assert (second.number, second.title, second.branch) == (2, "consolidation review", "refs/heads/review/mine")
    assert len(events) == 1  # a consolidation run announces its own review
    assert [r.number for r in svc.reviews.list("default")] == [1, 2]
    assert svc.reviews.get("default", "#2") == second
    assert svc.reviews.list("default", status="open") == [first, second]
    assert svc.reviews.list("default", status="merged") == []
    log = [c.message.splitlines()[0] for c in store.log(REVIEWS_REF)]
    assert log[:3] == ["review #2: open consolidation review", "review #1: open Two facts", "Initialize reviews"]
    assert store.read("README.md", store.head(REVIEWS_REF)).startswith(b"# gitmem reviews")  # type: ignore[union-attr]
    with pytest.raises(Conflict, match="^there is nothing to review$"):
        svc.reviews.propose("default", [], title="x", author="sam", kind="amend")
    pushed = svc.reviews.propose("default", changes(1, 7), title="Café ☕ " + "t" * 192, author="ann", kind="push")
    assert [e["event"] for e in events] == ["review.opened", "review.opened"]  # a push is announced
    assert pushed.title == "Café ☕ " + "t" * 192 and len(pushed.title) == 199
    assert "Café ☕".encode() in (store.read("reviews/3.json", store.head(REVIEWS_REF)) or b"")  # readable UTF-8
    longest = svc.reviews.propose("default", changes(1, 8), title="t" * 200, author="ann", kind="k" * 40)
    assert (longest.title, longest.kind) == ("t" * 200, "k" * 40)
    with pytest.raises(InvalidInput):
        svc.reviews.propose("default", changes(1, 9), title="t", author="ann", kind="k" * 41)
    assert svc.reviews.list("default", status="open") == svc.reviews.list("default")


def test_opening_a_review_of_a_branch_that_is_not_there_is_refused(svc: MemoryService, store: Store) -> None:
    with pytest.raises(InvalidInput, match="^branch refs/heads/review/none does not exist$"):
        svc.reviews.open("default", branch="refs/heads/review/none", base=store.head_id(MAIN) or "", title="t",
                         author="sam", kind="amend")
    assert store.head_id(REVIEWS_REF) is None


def test_a_guard_runs_before_the_record_is_published(svc: MemoryService, store: Store) -> None:
    base = store.head()
    branch = store.write_branch(base, changes(1), "refs/heads/review/g", "test")

    def refuse(*_: object) -> None:
        raise Conflict("no, not now")

    with pytest.raises(Conflict, match="no, not now"):
        svc.reviews.open("default", branch=branch, base=str(base.id), title="t", author="sam", kind="amend",
                         guard=refuse)
    assert svc.reviews.list("default") == []


def test_comments_and_repointing_update_one_record(svc: MemoryService, store: Store,
                                                   events: list[dict[str, object]]) -> None:
    review = svc.reviews.propose("default", changes(1), title="One fact", author="sam", kind="amend")
    commented = svc.reviews.comment("default", "#1", actor="rita", text="  Looks right  ")
    assert [(c["actor"], c["text"]) for c in commented.comments] == [("rita", "Looks right")]
    assert commented.updated >= review.updated
    with pytest.raises(InvalidInput):
        svc.reviews.comment("default", 1, actor=" ", text="x")
    with pytest.raises(ReviewNotFound, match=r"^no review #9 in namespace 'default'; see `gitmem review list`$"):
        svc.reviews.comment("default", 9, actor="rita", text="x")
    ns = namespace_of(svc)
    more = ns.store.write_branch(ns.store.commit(review.head), changes(2, 10), review.branch, "more")
    events.clear()
    head = ns.store.head_id(more)
    assert head is not None
    moved = svc.reviews.repoint("default", 1, head=head, base=review.base, actor="sam")
    assert (moved.head, moved.commit_count, moved.comments) == (head, 3, commented.comments)
    assert [e["event"] for e in events] == ["review.updated"]
    assert svc.reviews.get("default", 1) == moved
    svc.reviews.reject("default", 1, actor="rita", reason="no")
    assert [e["event"] for e in events] == ["review.updated", "review.closed"]
    with pytest.raises(Conflict, match=r"^review #1 is already rejected$"):
        svc.reviews.repoint("default", 1, head=head, base=review.base, actor="sam")


def test_a_rewritten_history_is_followed_by_every_record(svc: MemoryService, store: Store) -> None:
    one = svc.reviews.propose("default", changes(1), title="One", author="sam", kind="amend")
    two = svc.reviews.propose("default", changes(1, 5), title="Two", author="sam", kind="amend")
    three = svc.reviews.propose("default", changes(1, 9), title="Three", author="sam", kind="amend")
    svc.reviews.approve("default", 2, actor="rita")
    two = svc.reviews.get("default", 2)
    assert two.merged_commit is not None and two.approved_commits
    new = {one.head: "2" * 40, two.merged_commit: "3" * 40, two.approved_commits[0]: "4" * 40}
    before = store.head_id(REVIEWS_REF)
    assert svc.reviews.remap("default", {}, "purge") == 0
    assert svc.reviews.remap("default", {"f" * 40: "e" * 40}, "purge") == 0
    assert store.head_id(REVIEWS_REF) == before
    assert svc.reviews.remap("default", new, "purge") == 2
    first, second = svc.reviews.get("default", 1), svc.reviews.get("default", 2)
    assert (first.base, first.head) == (one.base, "2" * 40)
    assert second.merged_commit == "3" * 40 and second.approved_commits == [new[two.approved_commits[0]]]
    assert second.commit_states == {new[two.approved_commits[0]]: "merged"}
    assert svc.reviews.get("default", 3) == three  # none of its commits was rewritten
    assert [r.number for r in svc.reviews.list("default", status="open")] == [1, 3]
    assert [r.number for r in svc.reviews.list("default", status="merged")] == [2]
    assert svc.reviews.list("default", status="rejected") == svc.reviews.list("default", status="stale") == []
    assert b'"merged_commit": "3333' in (store.read("reviews/2.json", store.head(REVIEWS_REF)) or b"")
    assert store.head(REVIEWS_REF).message.splitlines()[0] == "2 reviews follow the rewritten history"
    assert sorted(p for p, _ in store.files(store.head(REVIEWS_REF), "reviews")) == [
        "reviews/1.json", "reviews/2.json", "reviews/3.json"]
    changed = store.file_changes(store.head(REVIEWS_REF))
    assert sorted(c.path for c in changed) == ["reviews/1.json", "reviews/2.json"]
    notes = svc.reviews.get("default", 2)
    renamed = replace(notes, commit_notes={"9" * 40: "why"})
    svc.reviews._save("default", 2, lambda _: renamed, "test", "test")
    assert svc.reviews.remap("default", {"9" * 40: "8" * 40}, "purge") == 1
    assert svc.reviews.get("default", 2).commit_notes == {"8" * 40: "why"}


def test_remapping_a_namespace_without_reviews_creates_nothing(svc: MemoryService, store: Store) -> None:
    assert svc.reviews.remap("default", {"a" * 40: "b" * 40}, "purge") == 0
    assert store.head_id(REVIEWS_REF) is None
