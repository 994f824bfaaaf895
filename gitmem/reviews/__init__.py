"""Pull-request-like reviews of branches, kept in the memory repository itself.

A review names a branch of proposed commits (a consolidation run, an amendment from someone who
may not change main directly), the main commit it started from, and a comment thread. The
package splits by idea: :mod:`.records` keeps the review records on ``refs/gitmem/reviews``,
:mod:`.diffs` says what each commit changes, :mod:`.staleness` when main has overtaken a commit,
:mod:`.decisions` approves and rejects, :mod:`.reading` shows a review commit by commit.
:class:`Reviews` is all of it, the one object the facade hands out.
"""

from __future__ import annotations

from .decisions import RejectedMerge, ReviewDecisions, completed
from .diffs import FileDiff, MemoryDiff, ReviewCommit, memory_diffs, summarise
from .reading import ReviewReading
from .records import CLOSED_PREFIX, REVIEWS_REF, STATUSES, Review, review_number

__all__ = [
    "CLOSED_PREFIX", "REVIEWS_REF", "STATUSES", "FileDiff", "MemoryDiff", "RejectedMerge", "Review",
    "ReviewCommit", "Reviews", "completed", "memory_diffs", "review_number", "summarise",
]


class Reviews(ReviewReading, ReviewDecisions):
    """List, show, open, approve, reject and comment on reviews of any namespace."""
