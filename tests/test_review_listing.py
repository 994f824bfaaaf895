"""A long review as a person works through it (gitmem.reviews.listing): grouped, filtered, paged."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import pytest

from gitmem.errors import InvalidInput
from gitmem.reviews.diffs import KINDS, MemoryDiff, ReviewCommit
from gitmem.reviews.listing import PER_PAGE, STATES, Filter, arrange


def made(n: int, action: str = "archive", state: str = "open", lost: bool = False) -> ReviewCommit:
    """Commit number ``n``: an ``action`` (archive, promote, supersede, edit...) in ``state``."""
    memories = []
    result = None
    if lost:  # a merge whose merged-away memory loses a word
        action, result = "consolidate", f"k{n}"
        memories = [MemoryDiff(f"k{n}", "kept", "fact", "added", None, "kept", [], []),
                    MemoryDiff(f"m{n}", "gone", "fact", "removed", "gone words", None, [], [], lost=["words"])]
    return ReviewCommit(f"c{n:04d}", f"commit {n}", "", action, (), [], state, None, memories, result)


def test_the_filter_reads_a_pages_query() -> None:
    assert Filter.of(None, None, None, None) == Filter()
    assert Filter.of("", "", "", "") == Filter(None, None, False, 1)
    assert Filter.of("merge", "stale", "1", "3") == Filter("merge", "stale", True, 3)
    for yes in ("1", "on", "yes", "true"):
        assert Filter.of(None, None, yes, None).lossy
    for no in ("0", "off", "no", "True", "2"):
        assert not Filter.of(None, None, no, None).lossy
    assert Filter.of(None, None, None, "999999").page == 999999
    assert Filter.of(None, None, None, "1").page == 1
    assert KINDS == ("merge", "supersede", "link", "edit", "add", "remove", "archive", "promote")
    assert STATES == ("open", "merged", "skipped", "stale")
    for kind in KINDS:
        assert Filter.of(kind, None, None, None).kind == kind
    for state in STATES:
        assert Filter.of(None, state, None, None).state == state


@pytest.mark.parametrize(("kind", "state", "page", "said"), [
    ("mergers", None, None, "unknown kind of change 'mergers'; use one of: merge, supersede, link, edit, add, remove, "
                            "archive, promote"),
    (None, "closed", None, "unknown commit state 'closed'; use one of: open, merged, skipped, stale"),
    (None, None, "0", "'0' is not a page number"),
    (None, None, "-1", "'-1' is not a page number"),
    (None, None, "1000000", "'1000000' is not a page number"),
    (None, None, "٣", "'٣' is not a page number"),
    (None, None, "2a", "'2a' is not a page number"),
    (None, None, "+2", "'+2' is not a page number"),
])
def test_a_bad_filter_is_refused_naming_what_is_allowed(kind: str | None, state: str | None, page: str | None,
                                                       said: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        Filter.of(kind, state, None, page)
    assert str(caught.value) == said


def test_a_filter_makes_the_query_of_its_links() -> None:
    assert Filter().query() == {}
    assert Filter("merge", "open", True, 2).query() == {"kind": "merge", "state": "open", "lossy": 1, "page": 2}
    assert Filter("merge", None, False, 1).query() == {"kind": "merge"}
    assert Filter("merge", "open", True, 2).query(page=None, kind="") == {"state": "open", "lossy": 1}
    assert Filter(page=3).query(page=1) == {"page": 1}


def fresh(text: str) -> str:
    """The same text in a string object of its own (as read from a request or a record, not a literal)."""
    return "".join(list(text))


def test_filters_and_listings_are_values() -> None:
    chosen = Filter("merge", "open", True, 2)
    assert hash(chosen) == hash(Filter(fresh("merge"), fresh("open"), True, 2))
    with pytest.raises(FrozenInstanceError):
        chosen.page = 3  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        arrange([made(1)]).pages = 2  # type: ignore[misc]


def test_a_filter_compares_values_not_objects() -> None:
    commit = made(1, state=fresh("stale"))
    assert Filter(state=fresh("stale")).keeps(commit) and Filter(kind=fresh("archive")).keeps(commit)
    listing = arrange([commit, made(2)])
    assert listing.on_page(replace(commit, id=fresh(commit.id)))  # the same commit read again
    assert listing.next_undecided(fresh("c0002")) is None


def test_a_filter_keeps_the_commits_of_its_kind_state_and_loss() -> None:
    archive, merged, lossy = made(1), made(2, state="merged"), made(3, lost=True)
    assert [c.kind for c in (archive, merged, lossy)] == ["archive", "archive", "merge"]
    assert all(Filter().keeps(c) for c in (archive, merged, lossy))
    assert [Filter(kind="archive").keeps(c) for c in (archive, merged, lossy)] == [True, True, False]
    assert [Filter(state="open").keeps(c) for c in (archive, merged, lossy)] == [True, False, True]
    assert [Filter(lossy=True).keeps(c) for c in (archive, merged, lossy)] == [False, False, True]
    assert not Filter(kind="merge", state="merged").keeps(lossy)
    assert not Filter(kind="archive", lossy=True).keeps(archive)
    add = replace(made(4, "remember"), memories=[MemoryDiff("n4", "new", "fact", "added", None, "new", [], [])])
    supersede = made(5, "supersede")
    assert [add.kind, supersede.kind] == ["add", "supersede"]
    assert not Filter(kind="archive").keeps(add) and not Filter(kind="add").keeps(archive)  # by value, not order
    assert not Filter(state="open").keeps(made(6, state="merged")) and not Filter(state="merged").keeps(archive)


def test_commits_are_grouped_by_kind_in_page_order_oldest_first_in_a_group() -> None:
    commits = [made(1, "promote"), made(2), made(3, lost=True), made(4, "promote"), made(5), made(6, lost=True)]
    listing = arrange(commits)
    assert [c.id for c in listing.ordered] == ["c0003", "c0006", "c0002", "c0005", "c0001", "c0004"]
    assert listing.kinds == [("merge", 2), ("archive", 2), ("promote", 2)]
    assert [(k, [c.id for c in cs]) for k, cs in listing.groups] == [
        ("merge", ["c0003", "c0006"]), ("archive", ["c0002", "c0005"]), ("promote", ["c0001", "c0004"])]
    assert listing.pages == 1 and listing.page == listing.shown == listing.ordered
    assert listing.filter == Filter()
    assert [c.id for c in arrange(commits, Filter(kind="archive")).groups[0][1]] == ["c0002", "c0005"]
    assert arrange(commits, Filter(kind="archive")).kinds == listing.kinds  # the counts ignore the filter


def test_a_long_review_is_read_twenty_at_a_time() -> None:
    commits = [made(n) for n in range(2 * PER_PAGE + 1)]
    assert PER_PAGE == 20
    first = arrange(commits)
    assert first.pages == 3 and [c.id for c in first.page] == [f"c{n:04d}" for n in range(20)]
    second = arrange(commits, Filter(page=2))
    assert [c.id for c in second.page] == [f"c{n:04d}" for n in range(20, 40)]
    last = arrange(commits, Filter(page=3))
    assert [c.id for c in last.page] == ["c0040"]
    beyond = arrange(commits, Filter(kind="archive", page=9))  # a link from before a decision still lands
    assert beyond.filter == Filter(kind="archive", page=3) and [c.id for c in beyond.page] == ["c0040"]
    exact = arrange(commits[:40])
    assert exact.pages == 2
    assert arrange([]).pages == 1 and arrange([]).page == ()
    assert [first.page_of(f"c{n:04d}") for n in (0, 19, 20, 39, 40)] == [1, 1, 2, 2, 3]
    assert first.page_of("hidden") == 1
    assert second.on_page(commits[25]) and not second.on_page(commits[19]) and not second.on_page(commits[40])
    assert second.link(commits[5]) == {} and second.link(commits[25]) == {"page": 2}
    filtered = arrange(commits, Filter(state="open", page=2))
    assert filtered.link(commits[40]) == {"state": "open", "page": 3}
    assert filtered.link(commits[0]) == {"state": "open"}


def test_next_undecided_goes_round_from_the_one_just_decided() -> None:
    commits = [made(0, state="merged"), made(1), made(2, state="stale"), made(3), made(4, state="skipped")]
    listing = arrange(commits)
    assert listing.next_undecided() == commits[1]
    assert listing.next_undecided("c0001") == commits[3]
    assert listing.next_undecided("c0003") == commits[1]  # round to the top
    assert listing.next_undecided("c0004") == commits[1]
    assert listing.next_undecided("unknown") == commits[1]
    only = arrange([made(0), made(1, state="merged")])
    assert only.next_undecided("c0000") is None  # the one just decided is not next
    assert arrange([made(0, state="merged")]).next_undecided() is None
    filtered = arrange([made(0), made(1, lost=True), made(2)], Filter(kind="archive"))
    assert filtered.next_undecided("c0000") == filtered.shown[1]
    assert filtered.next_undecided("c0000").id == "c0002"  # type: ignore[union-attr]


def test_next_undecided_starts_right_after_the_one_just_decided() -> None:
    def shown(*commits: tuple[int, str]) -> list[ReviewCommit]:
        return [made(n, state=state) for n, state in commits]

    first = shown((5, "stale"), (7, "open"), (1, "open"), (9, "open"))
    assert arrange(first).next_undecided("c0001") == first[3]
    assert arrange(first).next_undecided() == first[1]
    second = shown((0, "stale"), (7, "open"), (1, "open"), (9, "open"))
    assert arrange(second).next_undecided("c0001") == second[3]
    third = shown((2, "open"), (3, "open"), (4, "stale"))
    assert arrange(third).next_undecided() == third[0]
    assert arrange(third).next_undecided("c0003") == third[0]
    assert arrange(third).next_undecided("gone") == third[0]  # a commit no longer shown: from the top
    fourth = shown((7, "open"), (1, "open"), (3, "stale"), (9, "open"))
    assert arrange(fourth).next_undecided("c0001") == fourth[3]
    both = shown((2, "open"), (3, "open"))
    assert arrange(both).next_undecided("gone") == both[0]


def test_bulk_actions_choose_from_every_open_commit_whatever_the_filter() -> None:
    commits = [made(0), made(1, lost=True), made(2, state="merged"), made(3, lost=True, state="stale"), made(4)]
    listing = arrange(commits, Filter(kind="archive", state="merged"))
    assert [c.id for c in listing.decidable] == ["c0001", "c0000", "c0004"]
    assert [c.id for c in listing.lossless] == ["c0000", "c0004"]
