"""Deciding reviews (gitmem.reviews.decisions), pinned rule by rule: what is refused, recorded, merged.

tests/test_review_decisions.py follows whole stories (versions, replays, rejected merges not
proposed again); these pin each refusal's words, each record's fields and the field merge.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pygit2
import pytest

from gitmem import concepts
from gitmem.errors import Conflict, InvalidInput, StaleReview
from gitmem.repo import MAIN, Change, Store
from gitmem.reviews import CLOSED_PREFIX, RejectedMerge, Review, completed
from gitmem.reviews.decisions import _same_version, merge_fields
from gitmem.reviews.diffs import digest
from gitmem.service import MemoryService
from gitmem.settings import Settings

from .conftest import namespace_of
from .test_consolidate import plant

AT = datetime(2026, 1, 2, tzinfo=UTC)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", embeddings="none")


def amend(memory: concepts.Memory, text: str) -> Change:
    new = memory.replace(text=text, title=concepts.title_from(text), description=concepts.description_from(text))
    return Change({memory.path: concepts.render(new)}, f"amend: {memory.title}", "amend", (memory.id,), None, "sam")


def review_of(svc: MemoryService, n: int = 2) -> tuple[int, list[concepts.Memory], list[str]]:
    """An open review of ``n`` amendments; its number, the memories and the commit ids."""
    memories = [plant(svc, f"Service {i} runs on port {9000 + i}", type="fact") for i in range(n)]
    number = svc.reviews.propose("default", [amend(m, m.text + " now") for m in memories], title="Ports",
                                 author="sam", kind="amend").number
    return number, memories, [c.id for c in svc.reviews.diff("default", number)]


def main_id(store: Store) -> str:
    head = store.head_id(MAIN)
    assert head is not None
    return head


# --- pure parts -----------------------------------------------------------------------------------------


def test_a_turned_down_merge_matches_the_same_memories_unchanged() -> None:
    a, b, c = (concepts.Memory(id=i, type="fact", text=f"text {i}", title="t") for i in ("a", "b", "c"))
    turned = RejectedMerge(frozenset({"a", "b"}), {"a": digest("text a"), "b": digest("text b")})
    assert turned.matches([a, b]) and turned.matches([a, b, c]) and turned.matches([a])
    assert not turned.matches([a, c]) and not turned.matches([c])
    assert not turned.matches([a.replace(text="text a, changed"), b])
    assert turned.matches([a.replace(text="text   a"), b])  # whitespace is no change


def test_fields_main_changed_are_taken_over_where_the_review_left_them() -> None:
    later = AT + timedelta(days=3)
    base = concepts.Memory(id="i", type="fact", text="old", title="t", potency=0.5, access_count=2, verified=("ann",),
                           updated=AT, last_used=None, tags=("a",), path="fact/i.md")
    mine = base.replace(text="new", verified=("ann", "bob"), access_count=3, potency=0.4, updated=AT + timedelta(1),
                        last_used=AT)
    theirs = base.replace(verified=("ann", "cy", "bob"), access_count=7, potency=0.9, updated=later, tags=("a", "b"),
                          last_used=later, path="fact/elsewhere.md")
    merged = merge_fields(base, mine, theirs)
    assert merged == mine.replace(verified=("ann", "bob", "cy"), access_count=8, potency=0.9, updated=later,
                                  last_used=later, tags=("a", "b"))
    assert merged.path == "fact/i.md" and merged.text == "new"
    assert merge_fields(base, mine, base) == mine  # main changed nothing
    lower = base.replace(potency=0.1, updated=AT - timedelta(1))
    assert merge_fields(base, mine, lower).potency == 0.4
    assert merge_fields(base, mine, lower).updated == AT + timedelta(1)
    assert merge_fields(base, base.replace(last_used=AT), base.replace(last_used=None)).last_used == AT
    both_none = base.replace(last_used=AT)
    assert merge_fields(both_none, base, base).last_used is None  # mine cleared it; main left it
    assert merge_fields(base, base.replace(text="mine"), base.replace(text="theirs")).text == "mine"
    used = base.replace(last_used=AT)
    assert merge_fields(used, used.replace(last_used=None), used.replace(last_used=later)).last_used == later
    with pytest.raises(FrozenInstanceError):
        RejectedMerge(frozenset(), {}).ids = frozenset({"a"})  # type: ignore[misc]


def test_a_decision_on_another_version_is_refused() -> None:
    review = Review(4, "default", "t", "open", "amend", "refs/heads/review/x", "b" * 40, "h" * 40, "sam", AT, AT)
    _same_version(review, None)
    _same_version(review, review.version)
    with pytest.raises(Conflict, match=r"^review #4 changed since you looked at it \(someone decided or pushed "
                                       r"meanwhile\); nothing was decided: look at it again$"):
        _same_version(review, "0" * 12)
    with pytest.raises(InvalidInput, match=r"^version must be the text the review gave \(12 hex digits\)$"):
        _same_version(review, 12)  # type: ignore[arg-type]


# --- naming commits --------------------------------------------------------------------------------------


def test_commits_are_named_by_four_to_forty_hex_digits(svc: MemoryService, store: Store) -> None:
    number, _, ids = review_of(svc)
    head = main_id(store)
    for bad, said in [(["xyz1"], "'xyz1' is not a commit id (4 to 40 hex characters)"),
                      (["abc"], "'abc' is not a commit id (4 to 40 hex characters)"),
                      ([3], "'' is not a commit id (4 to 40 hex characters)"),
                      (["ffff"], f"commit ffff is not part of review #{number}; see `gitmem review show {number}`"),
                      ([], "name at least one commit to approve, or approve them all")]:
        with pytest.raises(InvalidInput) as caught:
            svc.reviews.approve("default", number, actor="rita", commits=bad)  # type: ignore[arg-type]
        assert str(caught.value) == said
    with pytest.raises(InvalidInput, match="^name at least one commit to reject, or reject them all$"):
        svc.reviews.reject("default", number, actor="rita", commits=[], reason="no")
    assert main_id(store) == head
    done = svc.reviews.approve("default", number, actor="rita", commits=[f"  {ids[1][:4].upper()} "])
    assert done.commit_states == {ids[1]: "merged"}
    with pytest.raises(Conflict, match=f"^commit {ids[1][:10]} of review #{number} is merged already$"):
        svc.reviews.approve("default", number, actor="rita", commits=[ids[1]])


# --- approving -------------------------------------------------------------------------------------------


def test_approving_all_merges_records_and_retires_the_branch(svc: MemoryService, store: Store,
                                                             events: list[dict[str, object]]) -> None:
    number, memories, ids = review_of(svc)
    review = svc.reviews.get("default", number)
    events.clear()
    done = svc.reviews.approve("default", number, actor="rita", expected=2, version=review.version)
    assert (done.status, done.decided_by, done.approved_commits, done.merged_commit) == (
        "merged", "rita", ids, main_id(store))
    assert done.commit_states == dict.fromkeys(ids, "merged") and done.stale_reason is None
    assert [svc.show("default", m.id).text for m in memories] == [m.text + " now" for m in memories]
    assert store.head_id(review.branch) is None and store.head_id(f"{CLOSED_PREFIX}{number}") == review.head
    assert [e["event"] for e in events if e["event"].startswith("review.")] == ["review.closed"]  # type: ignore[union-attr]
    assert store.head(
        "refs/gitmem/reviews").message.splitlines()[0] == f"review #{number}: approved by rita (merged 2 of 2)"
    with pytest.raises(Conflict, match=f"^review #{number} is already merged$"):
        svc.reviews.approve("default", number, actor="rita")
    with pytest.raises(Conflict, match=f"^review #{number} is already merged$"):
        svc.reviews.reject("default", number, actor="rita", reason="late")


def test_approving_some_keeps_the_review_open_and_counts(svc: MemoryService, store: Store,
                                                         events: list[dict[str, object]]) -> None:
    number, memories, ids = review_of(svc, 3)
    events.clear()
    done = svc.reviews.approve("default", number, actor="rita", commits=[ids[1]], expected=1)
    assert done.status == "open" and done.label == "open (1 of 3 merged)"
    assert store.head_id(svc.reviews.get("default", number).branch) is not None  # still open: the branch stays
    assert [e["event"] for e in events if str(e["event"]).startswith("review.")] == ["review.updated"]
    log = store.head("refs/gitmem/reviews").message.splitlines()[0]
    assert log == f"review #{number}: approved by rita (merged 1 of 3)"
    again = svc.reviews.approve("default", number, actor="rita", commits=[ids[2]])
    assert store.head("refs/gitmem/reviews").message.splitlines()[0] == \
        f"review #{number}: approved by rita (merged 2 of 3)"
    assert again.approved_commits == [ids[1], ids[2]]
    with pytest.raises(Conflict, match=f"^review #{number} has 1 commit to merge now, not the 2 you saw; nothing was "
                                       "merged: look at it again$"):
        svc.reviews.approve("default", number, actor="rita", expected=2)
    svc.reviews.reject("default", number, actor="rita", commits=[ids[0]], reason=None)
    with pytest.raises(Conflict, match=f"^review #{number} is already merged$"):
        svc.reviews.approve("default", number, actor="rita")


def test_decided_commits_cannot_be_picked_again(svc: MemoryService) -> None:
    number, memories, ids = review_of(svc, 3)
    svc.reviews.reject("default", number, actor="rita", commits=[ids[0]], reason=None)
    svc.amend("default", memories[1].id, text="Service 1 moved to port 8001")
    with pytest.raises(StaleReview):
        svc.reviews.approve("default", number, actor="rita", commits=[ids[1]])
    for picked, state in ((ids[0], "skipped"), (ids[1], "stale")):
        said = f"^commit {picked[:10]} of review #{number} is {state} already$"
        with pytest.raises(Conflict, match=said):
            svc.reviews.approve("default", number, actor="rita", commits=[picked])
        with pytest.raises(Conflict, match=said):
            svc.reviews.reject("default", number, actor="rita", commits=[picked], reason=None)
    svc.reviews.reject("default", number, actor="rita", reason="no")
    with pytest.raises(Conflict, match=f"^review #{number} is already rejected$"):
        svc.reviews.approve("default", number, actor="rita")


def test_approving_with_nothing_open_is_refused(svc: MemoryService) -> None:
    number, _, ids = review_of(svc, 2)
    svc.reviews.reject("default", number, actor="rita", commits=[ids[0]], reason=None)
    review = svc.reviews.get("default", number)
    # A record whose last open commit was decided elsewhere: nothing is left to merge.
    ns = namespace_of(svc)
    forced = replace(review, commit_states={**review.commit_states, ids[1]: "skipped"})
    svc.reviews._save("default", number, lambda _: forced, "test", "test")
    assert ns.store.head_id(MAIN) is not None
    with pytest.raises(Conflict, match=f"^review #{number} has no open commits to merge$"):
        svc.reviews.approve("default", number, actor="rita")


def test_a_stale_commit_picked_merges_nothing_and_is_recorded(svc: MemoryService, store: Store) -> None:
    number, memories, ids = review_of(svc, 2)
    svc.amend("default", memories[0].id, text="Service 0 moved to port 8000")
    head = main_id(store)
    with pytest.raises(StaleReview) as caught:
        svc.reviews.approve("default", number, actor="rita", commits=[ids[0]])
    assert str(caught.value).startswith(f"review #{number}: commit {ids[0][:10]} (\"amend: ")
    assert str(caught.value).endswith("; nothing was merged")
    assert main_id(store) == head
    review = svc.reviews.get("default", number)
    assert review.commit_states == {ids[0]: "stale"} and review.status == "open"
    assert store.head_id(review.branch) == review.head  # still open: its branch stays
    assert review.commit_notes[ids[0]].startswith(f"main changed the text of {memories[0].path}")
    assert review.stale_reason == f"{ids[0][:10]}: {review.commit_notes[ids[0]]}"
    # Approving all merges what is not stale, with the count of those.
    with pytest.raises(Conflict, match=r"has 1 commit to merge now, not the 2 you saw; nothing was merged"):
        svc.reviews.approve("default", number, actor="rita", expected=2)
    done = svc.reviews.approve("default", number, actor="rita", expected=1)
    assert done.status == "merged" and done.commit_states == {ids[0]: "stale", ids[1]: "merged"}


def test_approving_all_when_every_open_commit_went_stale_marks_them_and_closes(svc: MemoryService,
                                                                              store: Store) -> None:
    number, memories, ids = review_of(svc, 1)
    svc.amend("default", memories[0].id, text="Service 0 moved to port 8000")
    with pytest.raises(StaleReview, match="nothing was merged"):
        svc.reviews.approve("default", number, actor="rita")
    review = svc.reviews.get("default", number)
    assert review.status == "stale" and review.commit_states == {ids[0]: "stale"}
    assert store.head_id(review.branch) is None and store.head_id(f"{CLOSED_PREFIX}{number}") == review.head
    with pytest.raises(StaleReview, match=f"^review #{number} is stale: {ids[0][:10]}: main changed the text"):
        svc.reviews.approve("default", number, actor="rita")
    closed = svc.reviews.reject("default", number, actor="rita", reason="stale anyway")
    assert closed.status == "rejected"


def test_a_commit_that_went_stale_meanwhile_is_counted_in_the_refusal(svc: MemoryService) -> None:
    number, memories, ids = review_of(svc, 3)
    svc.amend("default", memories[0].id, text="Service 0 moved to port 8000")
    with pytest.raises(Conflict) as caught:
        svc.reviews.approve("default", number, actor="rita", expected=3)
    assert str(caught.value) == (f"review #{number} has 2 commits to merge now, not the 3 you saw (1 went stale "
                                 "meanwhile); nothing was merged: look at it again")


def test_check_records_what_main_overtook(svc: MemoryService, events: list[dict[str, object]]) -> None:
    number, memories, ids = review_of(svc, 2)
    events.clear()
    assert svc.reviews.check("default", number, actor="rita") == svc.reviews.get("default", number)
    svc.amend("default", memories[1].id, text="Service 1 moved to port 8001")
    checked = svc.reviews.check("default", number, actor="rita")
    assert checked.commit_states == {ids[1]: "stale"} and checked.status == "open"
    assert [e["event"] for e in events if str(e["event"]).startswith("review.")] == ["review.updated"]
    svc.reviews.reject("default", number, actor="rita", reason="no")
    closed = svc.reviews.get("default", number)
    assert svc.reviews.check("default", number, actor="rita") == closed


def test_main_fields_the_review_left_alone_carry_over_when_replayed(svc: MemoryService, store: Store) -> None:
    number, memories, ids = review_of(svc, 1)
    ns = namespace_of(svc)
    current = concepts.parse(store.read(memories[0].path) or b"", memories[0].path)
    used = current.replace(access_count=5, verified=("ann",), potency=0.95)
    ns.store.transact(lambda head: Change({current.path: concepts.render(used)}, "use", "use", (current.id,)))
    ns.synced()
    svc.reviews.approve("default", number, actor="rita")
    after = concepts.parse(store.read(memories[0].path) or b"", memories[0].path)
    assert (after.text, after.access_count, after.verified, after.potency) == (
        memories[0].text + " now", 5, ("ann",), 0.95)


def test_a_memory_the_review_removes_goes_though_main_used_it_meanwhile(svc: MemoryService, store: Store) -> None:
    memory = plant(svc, "Service 0 runs on port 9000", type="fact")
    gone = Change({memory.path: None}, f"forget: {memory.title}", "forget", (memory.id,), None, "sam")
    number = svc.reviews.propose("default", [gone], title="Forget", author="sam", kind="amend").number
    ns = namespace_of(svc)
    used = concepts.parse(store.read(memory.path) or b"", memory.path).replace(access_count=3)
    ns.store.transact(lambda head: Change({memory.path: concepts.render(used)}, "use", "use", (memory.id,)))
    assert svc.reviews.approve("default", number, actor="rita").status == "merged"
    assert store.read(memory.path) is None


def test_a_pushed_edit_of_a_texts_title_follows_the_text(svc: MemoryService, store: Store) -> None:
    memory = plant(svc, "Service 0 runs on port 9000", type="fact")
    current = concepts.render(concepts.parse(store.read(memory.path) or b"", memory.path)).decode()
    edited = current.replace("Service 0 runs on port 9000\n", "Service 0 runs on port 8000 behind nginx\n")
    assert edited != current
    number = svc.reviews.propose("default", [Change({memory.path: edited.encode()}, "edit by hand", "edit")],
                                 title="Port", author="ann", kind="push").number
    svc.reviews.approve("default", number, actor="rita")
    after = concepts.parse(store.read(memory.path) or b"", memory.path)
    assert after.text == "Service 0 runs on port 8000 behind nginx"
    assert after.title == concepts.title_from(after.text) != memory.title


def test_a_file_main_added_meanwhile_in_the_same_place_makes_the_commit_stale(svc: MemoryService,
                                                                             store: Store) -> None:
    text = "---\ntype: fact\n---\n\nThe cache is Redis\n"
    number = svc.reviews.propose("default", [Change({"fact/cache.md": text.encode()}, "add cache", "edit")],
                                 title="Cache", author="sam", kind="push").number
    ns = namespace_of(svc)
    ns.store.transact(lambda head: Change({"fact/cache.md": text.replace("Redis", "Valkey").encode()}, "x", "edit"))
    with pytest.raises(StaleReview) as caught:
        svc.reviews.approve("default", number, actor="rita")
    assert "fact/cache.md" in str(caught.value) and "propose the change again" in str(caught.value)
    # The same file with the same text is no conflict.
    again = svc.reviews.propose("default", [Change({"fact/same.md": text.encode()}, "add same", "edit")],
                                title="Same", author="sam", kind="push").number
    ns.store.transact(lambda head: Change({"fact/same.md": text.encode()}, "same", "edit"))
    assert svc.reviews.approve("default", again, actor="rita").status == "merged"


def test_a_pushed_file_is_completed_when_it_merges(svc: MemoryService, store: Store) -> None:
    number = svc.reviews.propose("default", [Change({"fact/db.md": b"---\ntype: fact\n---\n\nThe database is X\n"},
                                                    "add db", "edit")], title="Db", author="ann", kind="push").number
    done = svc.reviews.approve("default", number, actor="rita")
    head = store.head()
    assert done.merged_commit == str(head.id)
    assert head.message.startswith("complete 1 pushed memory file\n\nGave the files without them an id")
    memory = concepts.parse(store.read("fact/db.md") or b"", "fact/db.md")
    assert memory.author == "ann" and len(memory.id) == 10
    info = store.info(head)
    assert (info.action, info.memory_ids) == ("complete", (memory.id,))


def test_completion_leaves_complete_and_unparsable_files_alone(store: Store) -> None:
    main = store.head()
    full = concepts.Memory(id="0123456789", type="fact", text="Complete", title="Complete", path="fact/full.md",
                           author="x", source="agent", state="active", potency=0.5)
    oid = store.write_commit(main, Change({"fact/full.md": concepts.render(full), "fact/broken.md": b"broken\n",
                                           "notes.txt": b"---\ntype: fact\n---\n\nnot a memory path\n"}, "x", "edit"))
    tip = store.commit(str(oid))
    assert completed(store, tip, main, "rita") == tip
    later = store.commit(str(store.write_commit(tip, Change({"fact/zz.md": b"---\ntype: fact\n---\n\nLater\n"},
                                                            "y", "edit"))))
    done = completed(store, later, main, "rita")  # the broken file before it does not stop it
    assert done != later and concepts.parse(store.read("fact/zz.md", done) or b"", "fact/zz.md").text == "Later"


def by_hand(store: Store, files: list[dict[str, bytes]]) -> tuple[str, str, list[str]]:
    """Commits made by someone's git on main, dated 2020 (a replay now could never make the same objects)."""
    main = store.head()
    who = pygit2.Signature("Sam", "sam@example.com", 1_577_836_800, 0)
    parent, ids = main, []
    for n, changes in enumerate(files):
        tree = store.write_tree(parent.tree, changes)
        oid = store.repo.create_commit(None, who, who, f"edit {n}\n", tree, [parent.id])
        parent = store.commit(str(oid))
        ids.append(str(oid))
    store.move_ref("refs/heads/review/hand", ids[-1], None, "push")
    return str(main.id), "refs/heads/review/hand", ids


def test_commits_on_main_as_it_stands_land_as_they_are_the_others_are_replayed(svc: MemoryService,
                                                                               store: Store) -> None:
    base, branch, ids = by_hand(store, [{"README.md": b"# one\n"}, {"README.md": b"# two\n"}])
    number = svc.reviews.open("default", branch=branch, base=base, title="t", author="sam", kind="push").number
    svc.reviews.approve("default", number, actor="rita", commits=[ids[0]])
    assert main_id(store) == ids[0]  # the same commit: a clone that has it pulls by fast-forward
    plant(svc, "Deploys happen on Tuesdays")  # main moves
    moved = main_id(store)
    done = svc.reviews.approve("default", number, actor="rita")
    head = store.head()
    assert done.merged_commit == str(head.id) != ids[1]
    assert [str(p) for p in head.parent_ids] == [moved] and store.read("README.md") == b"# two\n"
    _, branch, more = by_hand(store, [{"README.md": b"# three\n"}])
    number = svc.reviews.open("default", branch=branch, base=main_id(store), title="t", author="sam",
                              kind="push").number
    assert svc.reviews.approve("default", number, actor="rita").merged_commit == more[0] == main_id(store)


def test_a_stacked_review_waits_for_the_one_below(svc: MemoryService, store: Store) -> None:
    below, memories, _ = review_of(svc, 1)
    head = svc.reviews.get("default", below).head
    branch = store.write_branch(store.commit(head), [amend(memories[0].replace(text=memories[0].text + " now"),
                                                           "later")], "refs/heads/review/above", "x")
    above = svc.reviews.open("default", branch=branch, base=head, title="Above", author="sam", kind="push").number
    with pytest.raises(Conflict, match=f"^review #{above} holds the commits that come after those of review "
                                       f"#{below}, which is still open: approve \\(or reject\\) #{below} first$"):
        svc.reviews.approve("default", above, actor="rita")


def test_a_kind_with_its_own_decider_is_decided_by_it(svc: MemoryService) -> None:
    number, _, _ = review_of(svc, 1)
    calls: list[tuple[int, str, bool]] = []

    def decide(namespace: str, review: Review, *, actor: str, admin: bool) -> Review:
        calls.append((review.number, actor, admin))
        return review

    svc.reviews.deciders["amend"] = decide
    try:
        svc.reviews.approve("default", number, actor="root", admin=True)
    finally:
        del svc.reviews.deciders["amend"]
    assert calls == [(number, "root", True)]
    settled = svc.reviews.settle("default", number, actor="root", merged_commit="m" * 40, summary="purged")
    assert (settled.status, settled.merged_commit, settled.decided_by) == ("merged", "m" * 40, "root")
    assert settled.commit_states == dict.fromkeys(settled.approved_commits, "merged") and settled.approved_commits
    with pytest.raises(Conflict, match=f"^review #{number} is already merged$"):
        svc.reviews.settle("default", number, actor="root", merged_commit="m" * 40, summary="again")
    other, _, _ = review_of(svc, 1)
    svc.reviews.reject("default", other, actor="root", reason="no")
    with pytest.raises(Conflict, match=f"^review #{other} is already rejected$"):
        svc.reviews.settle("default", other, actor="root", merged_commit="m" * 40, summary="late")


# --- rejecting --------------------------------------------------------------------------------------------


def test_a_reason_is_text_and_required_unless_one_commit_is_named(svc: MemoryService) -> None:
    number, _, ids = review_of(svc, 2)
    with pytest.raises(InvalidInput, match="^the reason must be text$"):
        svc.reviews.reject("default", number, actor="rita", reason=3)  # type: ignore[arg-type]
    for reason in (None, "", "  "):
        with pytest.raises(InvalidInput, match=r"^say why you reject it \(--reason\): a reason is required"):
            svc.reviews.reject("default", number, actor="rita", reason=reason)
    for commits in ([], ids):
        with pytest.raises(InvalidInput, match=r"^say why you reject it \(--reason\): a reason is required"):
            svc.reviews.reject("default", number, actor="rita", commits=commits, reason=None)
    one = svc.reviews.reject("default", number, actor="rita", commits=[ids[0]], reason="  Port 9000 is taken  ")
    assert one.comments[-1]["text"] == "Turned down 1 commit: Port 9000 is taken"
    assert one.comments[-1]["actor"] == "rita" and one.decided_by == "rita" and one.status == "open"
    with pytest.raises(Conflict, match=f"^review #{number} has 1 commit to turn down now, not the 3 you saw; "
                                       "nothing was decided: look at it again$"):
        svc.reviews.reject("default", number, actor="rita", reason="no", expected=3)
    with pytest.raises(Conflict, match=f"^review #{number} has 1 commit to turn down now, not the 0 you saw"):
        svc.reviews.reject("default", number, actor="rita", reason="no", expected=0)
    rest = svc.reviews.reject("default", number, actor="rita", reason="None of it", expected=1)
    assert rest.status == "rejected" and rest.comments[-1]["text"] == "None of it"
    assert rest.commit_states == dict.fromkeys(ids, "skipped")


def test_rejecting_closes_the_branch_announces_and_runs_the_kinds_undo(svc: MemoryService, store: Store,
                                                                      events: list[dict[str, object]]) -> None:
    number, _, _ = review_of(svc, 1)
    review = svc.reviews.get("default", number)
    events.clear()
    undone: list[tuple[int, str]] = []
    svc.reviews.on_rejected["amend"] = lambda namespace, r, *, actor: undone.append((r.number, actor))
    try:
        head = main_id(store)
        closed = svc.reviews.reject("default", number, actor="rita", reason="no")
    finally:
        del svc.reviews.on_rejected["amend"]
    assert closed.status == "rejected" and main_id(store) == head
    assert undone == [(number, "rita")]
    assert store.head_id(review.branch) is None and store.head_id(f"{CLOSED_PREFIX}{number}") == review.head
    assert [e["event"] for e in events if str(e["event"]).startswith("review.")] == ["review.closed"]
    assert store.head("refs/gitmem/reviews").message.splitlines()[0] == f"review #{number}: rejected by rita"


def test_a_partial_rejection_says_how_many_were_turned_down(svc: MemoryService, store: Store) -> None:
    number, _, ids = review_of(svc, 3)
    undone: list[int] = []
    svc.reviews.on_rejected["amend"] = lambda namespace, r, *, actor: undone.append(r.number)
    try:
        svc.reviews.reject("default", number, actor="rita", commits=[ids[0], ids[2]], reason="two")
    finally:
        del svc.reviews.on_rejected["amend"]
    assert undone == []  # still open: nothing to undo yet
    assert store.head("refs/gitmem/reviews").message.splitlines()[0] == \
        f"review #{number}: 2 commits turned down by rita"
    assert svc.reviews.get("default", number).comments[-1]["text"] == "Turned down 2 commits: two"


def test_rejecting_the_rest_of_a_partly_merged_review_closes_it_as_merged(svc: MemoryService) -> None:
    number, _, ids = review_of(svc, 3)
    svc.reviews.approve("default", number, actor="rita", commits=[ids[1]])
    undone: list[int] = []
    svc.reviews.on_rejected["amend"] = lambda namespace, r, *, actor: undone.append(r.number)
    try:
        closed = svc.reviews.reject("default", number, actor="rita", reason="the rest can wait")
    finally:
        del svc.reviews.on_rejected["amend"]
    assert undone == []  # merged in part: nothing of the kind to undo
    assert closed.status == "merged" and closed.label == "partly merged (1 of 3)"
    assert closed.commit_states == {ids[0]: "skipped", ids[1]: "merged", ids[2]: "skipped"}
    assert closed.comments[-1]["text"] == "the rest can wait"


def test_approving_a_merge_points_links_at_what_the_merged_memories_became(svc: MemoryService,
                                                                         store: Store) -> None:
    gone, other = plant(svc, "Use ruff for linting"), plant(svc, "Lint code with ruff")
    linking = plant(svc, "Run the linters before pushing", related=(gone.id,))
    kept = concepts.Memory(id="0123456789", type="convention", text="Lint with ruff", title="Lint with ruff",
                           path="convention/kept.md")
    merge = Change({gone.path: None, other.path: None, kept.path: concepts.render(kept)}, "merge 2 into 1",
                   "consolidate", (gone.id, other.id, kept.id))
    number = svc.reviews.propose("default", [merge], title="Merge", author="gitmem", kind="consolidation").number
    svc.reviews.approve("default", number, actor="rita")
    head = store.head()
    assert head.message.startswith("relink 1 memory file to what merged memories became")
    assert concepts.parse(store.read(linking.path) or b"", linking.path).related == (kept.id,)


def test_links_follow_only_the_merges_approved(svc: MemoryService, store: Store) -> None:
    one, two = plant(svc, "Use ruff for linting"), plant(svc, "Deploy on Tuesdays")
    linking = plant(svc, "Run the linters before the deploy", related=(one.id, two.id))
    kept_one = concepts.Memory(id="0123456789", type="convention", text="Lint with ruff", title="Lint with ruff",
                               path="convention/kept-one.md")
    kept_two = concepts.Memory(id="9876543210", type="convention", text="Deploys on Tuesdays",
                               title="Deploys on Tuesdays", path="convention/kept-two.md")
    merges = [Change({one.path: None, kept_one.path: concepts.render(kept_one)}, "merge one", "consolidate",
                     (one.id, kept_one.id)),
              Change({two.path: None, kept_two.path: concepts.render(kept_two)}, "merge two", "consolidate",
                     (two.id, kept_two.id))]
    number = svc.reviews.propose("default", merges, title="Merges", author="gitmem", kind="consolidation").number
    first, second = svc.reviews.diff("default", number)
    svc.reviews.approve("default", number, actor="rita", commits=[second.id])
    assert concepts.parse(store.read(linking.path) or b"", linking.path).related == (one.id, kept_two.id)
    svc.reviews.approve("default", number, actor="rita", commits=[first.id])
    assert concepts.parse(store.read(linking.path) or b"", linking.path).related == (kept_one.id, kept_two.id)


def test_turned_down_merges_are_remembered_and_read_back(svc: MemoryService) -> None:
    a, b, c = (plant(svc, text) for text in ("Use ruff for linting", "Lint code with ruff", "Ruff lints the code"))
    kept = concepts.Memory(id="0123456789", type="convention", text="Lint with ruff", title="Lint with ruff",
                           path="convention/kept.md")
    merge_commit = Change({a.path: None, b.path: None, kept.path: concepts.render(kept)}, "merge 3 into 1",
                          "consolidate", (a.id, b.id, c.id, kept.id))
    other = Change({"README.md": b"# notes\n"}, "no merge", "consolidate", (a.id,))
    d, e = plant(svc, "Deploy on Tuesdays"), plant(svc, "Deploys happen on Tuesdays")
    pair = Change({d.path: None}, "merge 2 into 1", "consolidate", (d.id, e.id))  # e kept as it is
    number = svc.reviews.propose("default", [merge_commit, other, pair], title="Merge", author="gitmem",
                                 kind="consolidation").number
    closed = svc.reviews.reject("default", number, actor="rita", reason="keep them apart")
    entry, second = closed.rejected
    assert second["ids"] == sorted([d.id, e.id]) and second["texts"] == {d.id: digest(d.text), e.id: digest(e.text)}
    assert entry["ids"] == sorted([a.id, b.id, c.id])  # what the merge took away and what it named
    assert entry["texts"] == {m.id: digest(m.text) for m in (a, b, c)}
    assert entry["commit"] == svc.reviews.diff("default", number)[0].id
    merge, _ = svc.reviews.rejected_merges("default")
    assert merge == RejectedMerge(frozenset(entry["ids"]), entry["texts"])
    review = svc.reviews.get("default", number)
    broken = replace(review, rejected=[*review.rejected, {"ids": "not a list", "texts": {}}, {"ids": ["a"]}])
    svc.reviews._save("default", review.number, lambda _: broken, "test", "test")
    assert svc.reviews.rejected_merges("default")[0] == merge and len(svc.reviews.rejected_merges("default")) == 2


def test_rejecting_amendments_remembers_no_merge(svc: MemoryService) -> None:
    number, _, _ = review_of(svc, 2)
    assert svc.reviews.reject("default", number, actor="rita", reason="no").rejected == []
    a, b = plant(svc, "First of two"), plant(svc, "Second of two")
    edit = Change({a.path: None, b.path: None}, "remove two by hand", "edit", (a.id, b.id))
    number = svc.reviews.propose("default", [edit], title="Edit", author="sam", kind="push").number
    assert svc.reviews.reject("default", number, actor="rita", reason="no").rejected == []  # only merges count
    assert svc.reviews.rejected_merges("default") == []


# --- branches -----------------------------------------------------------------------------------------------


def test_orphaned_consolidation_branches_are_pruned_under_the_guard(svc: MemoryService, store: Store) -> None:
    main = main_id(store)
    number, _, _ = review_of(svc, 1)
    kept = svc.reviews.get("default", number)
    store.move_ref("refs/heads/consolidate/default/orphan", main, None, "x")
    store.move_ref("refs/heads/consolidate/other/orphan", main, None, "x")
    guarded: list[int] = []
    assert svc.reviews.prune_orphans("default", guard=lambda: guarded.append(1)) == [
        "refs/heads/consolidate/default/orphan"]
    assert guarded == [1]
    assert store.head_id("refs/heads/consolidate/default/orphan") is None
    assert store.head_id("refs/heads/consolidate/other/orphan") == main
    assert store.head_id(kept.branch) is not None
    assert svc.reviews.prune_orphans("default") == []


# Last: it writes a few hundred commits (a mutant another test kills never gets here).
def test_a_prefix_two_commits_share_is_ambiguous(svc: MemoryService, store: Store) -> None:
    who = pygit2.Signature("Sam", "sam@example.com", 1_577_836_800, 0)
    base = store.head()
    parent, seen = base, {}
    for n in range(5000):  # two of a few hundred commits share their first four digits (the birthday bound)
        tree = store.write_tree(parent.tree, {"README.md": f"# {n}\n".encode()})
        oid = str(store.repo.create_commit(None, who, who, f"edit {n}\n", tree, [parent.id]))
        parent = store.commit(oid)
        if oid[:4] in seen:
            break
        seen[oid[:4]] = oid
    prefix = str(parent.id)[:4]
    assert prefix in seen
    store.move_ref("refs/heads/review/many", str(parent.id), None, "push")
    number = svc.reviews.open("default", branch="refs/heads/review/many", base=str(base.id), title="t",
                              author="sam", kind="push").number
    with pytest.raises(InvalidInput, match=f"^commit id {prefix} is ambiguous in review #{number}; give more digits$"):
        svc.reviews.approve("default", number, actor="rita", commits=[prefix])
    assert store.head_id(MAIN) == str(base.id)
