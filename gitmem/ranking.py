"""How recall ranks memories: relevance x potency x recency, a path boost, pending memories halved.

Pure functions, no I/O: the numbers are here so they can be read, tested and tuned in one place.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from datetime import datetime

from . import concepts
from .concepts import Memory

PATH_BOOST = 2.0
PENDING_WEIGHT = 0.5
RECENCY_DAYS = 30
# Text matches a query ranks by potency and recency: this many per hit asked for, at least MIN.
CANDIDATES_PER_HIT = 10
MIN_CANDIDATES = 100
# Hybrid recall: how many semantic neighbours of a query join the text matches, and the k of
# reciprocal rank fusion (small, so the first places count: 1/(k+1) against 1/(k+10)).
SEMANTIC_CANDIDATES = 50
FUSION_K = 10

#: Uses recorded but not yet folded into the files: memory id -> (count, last use).
Uses = Mapping[str, tuple[int, datetime]]


def _relative(path: str) -> str:
    """``./a/b`` and ``/a/b`` as ``a/b``; a leading dot of a name (``.github``) is kept."""
    path = path.strip()
    while path.startswith(("./", "/")):
        path = path[2:] if path.startswith("./") else path[1:]
    return path


def path_matches(pattern: str, file: str) -> bool:
    """Whether a memory's path (a file, a folder or a glob) covers the caller's file."""
    pattern, file = _relative(pattern), _relative(file)
    if not pattern or not file:
        return False
    if file == pattern or file.startswith(pattern.rstrip("/") + "/"):
        return True
    return fnmatch.fnmatchcase(file, pattern)


def candidates(limit: int) -> int:
    """How many text matches to rank for ``limit`` hits."""
    return max(MIN_CANDIDATES, limit * CANDIDATES_PER_HIT)


def fused(*rankings: Sequence[tuple[str, float]]) -> dict[str, float]:
    """Reciprocal rank fusion of lists of ``(id, score)``, best first, scaled so first in every list is 1.0.

    Equal scores share a place (the first of them), so equally relevant memories stay equal.
    """
    best = len(rankings) / (FUSION_K + 1)
    out: dict[str, float] = {}
    for ranked in rankings:
        place, last = 0, None
        for n, (key, value) in enumerate(ranked):
            if value != last:
                place, last = n, value
            out[key] = out.get(key, 0.0) + 1 / (FUSION_K + 1 + place)
    return {key: value / best for key, value in out.items()}


def effective_potency(memory: Memory, at: datetime, uses: Uses) -> float:
    """Potency at ``at``, counting uses recorded but not yet folded into the file."""
    return potency_from(memory.potency, memory.last_used or memory.created, memory.tenured,
                        uses.get(memory.id), at)


def potency_from(potency: float, since: datetime, tenured: bool, uses: tuple[int, datetime] | None,
                 at: datetime) -> float:
    """:func:`effective_potency` from the fields it needs: what ``Memory.with_use`` then ``potency_at`` give."""
    if uses:
        count, last = uses
        potency = concepts.used_times(potency, since, last, count, tenured=tenured)
        since = last
    return concepts.decayed(potency, since, at, tenured=tenured)


def score(memory: Memory, relevance: float, potency: float, at: datetime, *, path_match: bool) -> float:
    """A hit's score: relevance x potency / (1 + age in months), x2 on a path match, x0.5 pending."""
    return score_from(memory.state, memory.last_used or memory.updated, relevance, potency, at,
                      path_match=path_match)


def score_from(state: str, fresh: datetime, relevance: float, potency: float, at: datetime, *,
               path_match: bool) -> float:
    """:func:`score` from the fields it needs (``fresh``: the last use, else the last update)."""
    age_days = max(0.0, (at - fresh).total_seconds() / 86400)
    value = relevance * potency / (1 + age_days / RECENCY_DAYS)
    if path_match:
        value *= PATH_BOOST
    if state == "pending":
        value *= PENDING_WEIGHT
    return value
