"""A review as a person works through it: commits grouped by kind, filtered, a page at a time.

Pure functions of a review's commits (:class:`~gitmem.reviews.diffs.ReviewCommit`); the web page
and any other front end that shows a long review use them, so a review of 700 commits is read
twenty at a time, and "next undecided" always means the same commit.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..errors import InvalidInput
from .diffs import KINDS, ReviewCommit

#: Commits a page shows at most.
PER_PAGE = 20
#: The states a commit can be in; a filter takes one of them.
STATES = ("open", "merged", "skipped", "stale")


@dataclass(frozen=True)
class Filter:
    """Which commits to show: of one kind, in one state, only those that lose words; and which page."""

    kind: str | None = None
    state: str | None = None
    lossy: bool = False
    page: int = 1

    @classmethod
    def of(cls, kind: str | None, state: str | None, lossy: str | None, page: str | None) -> Filter:
        """A filter from a page's query (strings as typed; empty means no filter); bad values refused."""
        if kind and kind not in KINDS:
            raise InvalidInput(f"unknown kind of change {kind!r}; use one of: {', '.join(KINDS)}")
        if state and state not in STATES:
            raise InvalidInput(f"unknown commit state {state!r}; use one of: {', '.join(STATES)}")
        number = 1
        if page:
            if not page.isascii() or not page.isdigit() or len(page) > 6 or int(page) < 1:
                raise InvalidInput(f"{page!r} is not a page number")
            number = int(page)
        return cls(kind or None, state or None, lossy in ("1", "on", "yes", "true"), number)

    def query(self, **changes: Any) -> dict[str, Any]:
        """This filter as query arguments for a link, with ``changes`` made (None drops one)."""
        values: dict[str, Any] = {"kind": self.kind, "state": self.state, "lossy": 1 if self.lossy else None,
                                     "page": self.page if self.page > 1 else None}
        values.update(changes)
        return {k: v for k, v in values.items() if v not in (None, "", False)}

    def keeps(self, commit: ReviewCommit) -> bool:
        """Whether ``commit`` passes the filter."""
        return ((self.kind is None or commit.kind == self.kind)
                and (self.state is None or commit.state == self.state)
                and (not self.lossy or bool(commit.lost)))


@dataclass(frozen=True)
class Listing:
    """The commits of a review in the order a page shows them, filtered, and the page asked for."""

    ordered: tuple[ReviewCommit, ...]  # every commit, grouped by kind (KINDS order), oldest first in a group
    shown: tuple[ReviewCommit, ...]  # those the filter keeps
    page: tuple[ReviewCommit, ...]  # those on this page
    filter: Filter
    pages: int

    @property
    def kinds(self) -> list[tuple[str, int]]:
        """Each kind of change the review holds, with how many commits are of it, in page order."""
        counts = Counter(c.kind for c in self.ordered)
        return [(k, counts[k]) for k in KINDS if counts[k]]

    @property
    def groups(self) -> list[tuple[str, list[ReviewCommit]]]:
        """The commits the filter keeps, by kind, for a table of contents."""
        return [(k, [c for c in self.shown if c.kind == k]) for k in KINDS if any(c.kind == k for c in self.shown)]

    @cached_property
    def _pages(self) -> dict[str, int]:
        return {commit.id: index // PER_PAGE + 1 for index, commit in enumerate(self.shown)}

    def page_of(self, commit_id: str) -> int:
        """The page (of the filtered list) a commit is on; 1 when the filter hides it."""
        return self._pages.get(commit_id, 1)

    def on_page(self, commit: ReviewCommit) -> bool:
        """Whether ``commit`` is one of this page's."""
        return any(c.id == commit.id for c in self.page)

    def link(self, commit: ReviewCommit) -> dict[str, Any]:
        """The query of the page that shows ``commit`` under this filter (for a link with its anchor)."""
        page = self.page_of(commit.id)
        return self.filter.query(page=page if page > 1 else None)

    def next_undecided(self, after: str | None = None) -> ReviewCommit | None:
        """The first open commit the filter keeps after ``after`` (from the top when None), wrapping round."""
        shown = list(self.shown)
        start = 0
        if after is not None:
            start = next((i + 1 for i, c in enumerate(shown) if c.id == after), 0)
        for commit in shown[start:] + shown[:start]:
            if commit.state == "open" and commit.id != after:
                return commit
        return None

    @property
    def decidable(self) -> list[ReviewCommit]:
        """Every open commit of the review, whatever the filter (what bulk actions choose from)."""
        return [c for c in self.ordered if c.state == "open"]

    @property
    def lossless(self) -> list[ReviewCommit]:
        """The open commits that lose no words: what Approve all merges unless more are ticked."""
        return [c for c in self.decidable if not c.lost]


def arrange(commits: Sequence[ReviewCommit], chosen: Filter | None = None) -> Listing:
    """The review's commits grouped by kind, filtered by ``chosen``, and the page it asks for.

    A page past the last shows the last, so a link kept from before a decision still lands.
    """
    chosen = chosen or Filter()
    rank = {k: i for i, k in enumerate(KINDS)}
    ordered = tuple(c for _, c in sorted(enumerate(commits), key=lambda pair: (rank[pair[1].kind], pair[0])))
    shown = tuple(c for c in ordered if chosen.keeps(c))
    pages = max(1, math.ceil(len(shown) / PER_PAGE))
    page = min(chosen.page, pages)
    if page != chosen.page:
        chosen = Filter(chosen.kind, chosen.state, chosen.lossy, page)
    return Listing(ordered, shown, shown[(page - 1) * PER_PAGE: page * PER_PAGE], chosen, pages)
