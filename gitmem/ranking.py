"""How recall ranks memories: relevance x potency x recency, a path boost, pending memories halved.

Pure functions, no I/O: the numbers are here so they can be read, tested and tuned in one place.

Relevance is evidence, on a scale that means the same for every query (nothing is scaled to the
best hit): a memory is a hit by its words when it holds at least :data:`EVIDENCE` of the query's
information, each query word weighing by how rare it is in the namespace (stop words, and words
in most of the namespace's memories, weigh nothing), or by its meaning alone when its sentence
vector is at least the recall floor (a calibrated cosine) from the query's. Anything else is not
a hit, so a question nobody answered gets nothing back.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime

from . import concepts
from .concepts import Memory
from .words import is_cjk

PATH_BOOST = 2.0
PENDING_WEIGHT = 0.5
RECENCY_DAYS = 30
# Text matches a query ranks by potency and recency: this many per hit asked for, at least MIN.
CANDIDATES_PER_HIT = 10
MIN_CANDIDATES = 100
# Hybrid recall: how many semantic neighbours of a query are looked at beside the text matches.
SEMANTIC_CANDIDATES = 50
#: The share of a query's information (its words weighed by rarity) a memory must hold to be a hit by words.
EVIDENCE = 0.5
#: A word in more than this share of a namespace's memories is no evidence (once it holds COMMON_MIN).
COMMON_SHARE = 0.5
COMMON_MIN = 20
# How much the sentence vector's cosine adds to a hit by words, and where its scale starts and ends.
MEANING_SHARE = 0.15
COSINE_ZERO, COSINE_FULL = 0.15, 0.75
#: How much lower the cosine floor is for a memory in another language than the query: unrelated
#: pairs across languages score lower (99th percentile 0.43 in tests/data/semantic_pairs.json,
#: against 0.50 within one), so the same floor would keep out most cross-lingual answers.
CROSS_LINGUAL = 0.07
#: A memory whose meaning is this far from the query is no hit, whatever words they share: "What is
#: my manager's name?" and "State management (<feature_name>_controller.dart)" share two (cosine
#: 0.15), while the least related real answer in tests/data/truth.json is at 0.24.
UNRELATED = 0.2

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


def weights(words: Sequence[str], doc_freqs: Mapping[str, int], size: int) -> dict[str, float]:
    """Each query word's weight as evidence: its inverse document frequency in the namespace (BM25's).

    A word held by more than :data:`COMMON_SHARE` of a namespace's memories weighs nothing. A word
    no memory holds weighs most: a question about it is about something nobody recorded.
    """
    out: dict[str, float] = {}
    for word in words:
        df = doc_freqs.get(word, 0)
        if size >= COMMON_MIN and df > COMMON_SHARE * size:
            out[word] = 0.0
        else:
            out[word] = math.log(1 + (size - df + 0.5) / (df + 0.5))
    return out


def coverage(weighted: Mapping[str, float], terms: Collection[str]) -> float:
    """The share of the query's information (its weighted words) that a memory's ``terms`` hold; 0 without any."""
    total = sum(weighted.values())
    if total <= 0:
        return 0.0
    return sum(w for word, w in weighted.items() if word in terms) / total


def in_order(pairs: Sequence[str], terms: Collection[str]) -> float:
    """The share of the query's word pairs a memory holds in the same order (1.0 when the query has none)."""
    return sum(1 for p in pairs if p in terms) / len(pairs) if pairs else 1.0


def quoted(weighted: Mapping[str, float], pairs: Sequence[str], terms: Collection[str]) -> bool:
    """Whether a memory holds every informative word of the query, and its word pairs in order."""
    return all(word in terms for word, w in weighted.items() if w > 0) and in_order(pairs, terms) == 1.0


def lexical(weighted: Mapping[str, float], pairs: Sequence[str], terms: Collection[str]) -> float | None:
    """A memory's relevance by its words (0..1), or None when it holds less than :data:`EVIDENCE`.

    Mostly the query's information it holds; then how many of the query's word pairs it has in
    the same order (a quoted fragment finds its sentence), and how much of it the query is about
    (of two memories holding every query word, the shorter one says less else).
    """
    share = coverage(weighted, terms)
    if share < EVIDENCE:
        return None
    ordered = in_order(pairs, terms) if pairs else share
    own = [t for t in terms if "_" not in t and not (len(t) == 1 and is_cjk(t))]
    focus = sum(1 for w, x in weighted.items() if x > 0 and w in terms) / max(len(own), 1)
    return 0.75 * share + 0.15 * ordered + 0.10 * min(focus, 1.0)


def chinese(terms: Collection[str]) -> bool:
    """Whether a text's terms are mostly Chinese (CJK) rather than Latin words."""
    cjk = sum(1 for t in terms if is_cjk(t))
    return cjk > len(terms) - cjk


def floor_for(floor: float, query: Collection[str], terms: Collection[str]) -> float:
    """The cosine floor for a memory with ``terms``, for a query with terms ``query`` (lower across languages)."""
    return floor - CROSS_LINGUAL if query and terms and chinese(query) != chinese(terms) else floor


def meaning(cosine: float) -> float:
    """A cosine on a 0..1 scale: 0 at :data:`COSINE_ZERO` or below, 1 at :data:`COSINE_FULL` or above."""
    return min(1.0, max(0.0, (cosine - COSINE_ZERO) / (COSINE_FULL - COSINE_ZERO)))


def relevance(words: float | None, cosine: float | None, floor: float, *, quoted: bool = False) -> float | None:
    """A memory's relevance (0..1) from its words' (:func:`lexical`) and its cosine to the query; None if no hit.

    A hit by words gains up to :data:`MEANING_SHARE` from its cosine (when it has a vector), unless
    the cosine says it is about something else (below :data:`UNRELATED`) and it does not hold the
    query's words in the query's order (``quoted``: a fragment of it, "give me a chance to", whose
    meaning the encoder cannot place); a memory found by meaning alone needs a cosine of at
    least ``floor`` and counts at most 0.75 of the scale.
    """
    if words is not None:
        if cosine is None:
            return words
        if cosine < UNRELATED and not quoted:
            return None
        return (1 - MEANING_SHARE) * words + MEANING_SHARE * meaning(cosine)
    if cosine is not None and cosine >= floor:
        return (1 - MEANING_SHARE) * meaning(cosine)
    return None


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
