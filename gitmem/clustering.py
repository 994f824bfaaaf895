"""Clustering without chaining: similar pairs by an indexed similarity join, complete-linkage groups.

Pure functions over token sets; no I/O. Union-find over pairs at 0.3 links almost every English
statement to every other through intermediaries. Clusters here are grown greedily from the most
similar pair down, and two groups join only if every member of one is at least ``threshold``
similar to every member of the other (complete linkage), up to :data:`MAX_CLUSTER` members.
Candidate pairs come from an inverted index with k-prefix filtering (an AllPairs similarity
join), which finds exactly the pairs an all-pairs scan finds without scanning all pairs; pairs
are taken in score bands, best first, and statements whose group is already full drop out before
the wide bands. The result equals the all-pairs grouping (checked by the tests and
``bench/bench_consolidate.py``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from operator import itemgetter

MIN_CLUSTER = 2
MAX_CLUSTER = 8

def _dice_at_least(a: frozenset[str], b: frozenset[str], threshold: float) -> float | None:
    """Dice coefficient of two sets if it reaches ``threshold``, else None."""
    total = len(a) + len(b)
    if not total:
        return None
    score = 2 * len(a & b) / total
    return score if score >= threshold else None


def all_pairs(sets: Sequence[frozenset[str]], threshold: float) -> list[tuple[float, int, int]]:
    """Every pair ``(score, i, j)`` with ``i < j`` and Dice >= ``threshold``, by scanning all pairs.

    The quadratic baseline the indexed search is checked and benchmarked against.
    """
    out: list[tuple[float, int, int]] = []
    for i in range(len(sets)):
        a = sets[i]
        for j in range(i + 1, len(sets)):
            score = _dice_at_least(a, sets[j], threshold)
            if score is not None:
                out.append((score, i, j))
    return out


def rank_order(sets: Sequence[frozenset[str]]) -> list[list[int]]:
    """Each set as token ranks, rarest first (the global order prefix filtering relies on).

    ``order`` of :func:`similar_pairs`: any one order computed over a superset serves as well.
    """
    freq = Counter(token for s in sets for token in s)
    rank = {token: r for r, token in enumerate(sorted(freq, key=lambda t: (freq[t], t)))}
    lookup = rank.__getitem__
    return [sorted(map(lookup, s)) for s in sets]


def similar_pairs(sets: Sequence[frozenset[str]], threshold: float, k: int = 2, *,
                  order: Sequence[Sequence[int]] | None = None) -> list[tuple[float, int, int]]:
    """The same pairs as :func:`all_pairs`, found through an inverted index with prefix filtering.

    Tokens are ordered rarest first. Two sets with Dice >= t share at least ``a = t/(2-t)`` of
    the larger one's tokens, and then their first ``k`` shared tokens lie among the first
    ``|A| - a + k`` tokens of each (the prefix), so only sets sharing ``k`` prefix tokens are
    compared (the ``k``-prefix filter; ``k`` drops to ``a`` for very short sets). Sets are
    visited smallest first so the index side may use ``t|B|`` for ``a``. The counting is done
    with set operations, so Python only touches the few candidates that pass.
    """
    if not 0 < threshold <= 1:
        raise ValueError("threshold must be in (0, 1]")
    ordered = order if order is not None else rank_order(sets)
    sizes = [len(s) for s in sets]
    ratio = threshold / (2 - threshold)
    eps = 1e-9
    index: dict[int, list[int]] = {}
    by_need: list[set[int]] = [set() for _ in range(k + 1)]  # indexed sets by their own k
    out: list[tuple[float, int, int]] = []
    for i in sorted(range(len(sets)), key=lambda n: (sizes[n], n)):
        size = sizes[i]
        if not size:
            continue
        toks = ordered[i]
        overlap = max(1, math.ceil(ratio * size - eps))
        need = min(k, overlap)
        # seen[m]: indexed sets sharing at least m + 1 of the prefix tokens probed so far.
        seen: list[set[int]] = [set() for _ in range(need)]
        for token in toks[: size - overlap + need]:
            posting = index.get(token)
            if posting:
                for m in range(need - 1, 0, -1):
                    if seen[m - 1]:
                        seen[m] |= seen[m - 1].intersection(posting)
                seen[0].update(posting)
        candidates = seen[need - 1]
        for m in range(1, need):  # short sets need fewer shared prefix tokens
            if by_need[m] and seen[m - 1]:
                candidates = candidates | (seen[m - 1] & by_need[m])
        if candidates:
            min_size = ratio * size - eps
            check = [j for j in candidates if sizes[j] >= min_size]
            # The intersections run in C (map over a bound method): the hot loop of the search.
            shared = map(len, map(sets[i].intersection, map(sets.__getitem__, check)))
            for j, common in zip(check, shared, strict=True):
                score = 2 * common / (size + sizes[j])
                if score >= threshold:
                    out.append((score, i, j) if i < j else (score, j, i))
        overlap_b = max(1, math.ceil(threshold * size - eps))
        need_b = min(k, overlap_b)
        by_need[need_b].add(i)
        for token in toks[: size - overlap_b + need_b]:
            posting = index.get(token)
            if posting is None:
                index[token] = [i]
            else:
                posting.append(i)
    return out


#: Whether two statements (by index) may share a cluster at all, and whether they are related
#: beyond their words (their meaning): the hooks the semantic layer fills in.
Pairwise = Callable[[int, int], bool]


class _Grouper:
    """Greedy complete linkage, fed edges in descending score order (ties by index).

    ``apart(i, j)``: the two may never share a group (their details conflict); asked lazily,
    only for an edge that would join two groups. ``related(i, j)``: close by another measure
    than the words (a semantic neighbour).
    """

    def __init__(self, sets: Sequence[frozenset[str]], threshold: float, max_size: int,
                 apart: Pairwise | None = None, related: Pairwise | None = None) -> None:
        self.sets, self.threshold, self.max_size = sets, threshold, max_size
        self.apart, self.related = apart, related
        self.where: dict[int, int] = {}
        self.members: dict[int, list[int]] = {}
        self.known: set[int] = set()  # pairs (as i * n + j) already found close enough

    def add(self, pairs: Sequence[tuple[float, int, int]]) -> None:
        sets, threshold = self.sets, self.threshold
        where, members, known, n = self.where, self.members, self.known, len(self.sets)
        known.update(i * n + j for _, i, j in pairs)

        apart, related = self.apart, self.related

        def close(x: int, y: int) -> bool:
            if apart is not None and apart(x, y):
                return False
            if (x * n + y if x < y else y * n + x) in known:
                return True
            if _dice_at_least(sets[x], sets[y], threshold) is not None:
                return True
            return related is not None and related(x, y)

        ordered = sorted(pairs, key=itemgetter(1, 2))
        ordered.sort(key=itemgetter(0), reverse=True)  # stable: best first, ties by index
        for _, i, j in ordered:
            gi, gj = where.get(i, i), where.get(j, j)
            if gi == gj:
                continue
            a, b = members.get(gi, [i]), members.get(gj, [j])
            if len(a) + len(b) > self.max_size:
                continue
            if apart is not None and apart(i, j):
                continue
            if len(a) * len(b) > 1 and not all(close(x, y) for x in a for y in b):
                continue
            if len(a) < len(b):
                gi, gj, a, b = gj, gi, b, a
            a = a + b
            members[gi] = a
            members.pop(gj, None)
            for k in b:
                where[k] = gi

    def full(self) -> set[int]:
        """Members of groups that reached the size limit: no later edge can change them."""
        return {k for g in self.members.values() if len(g) >= self.max_size for k in g}

    def groups(self) -> list[list[int]]:
        return sorted(sorted(g) for g in self.members.values() if len(g) >= MIN_CLUSTER)


def group(sets: Sequence[frozenset[str]], pairs: Sequence[tuple[float, int, int]], threshold: float,
          max_size: int = MAX_CLUSTER, *, apart: Pairwise | None = None,
          related: Pairwise | None = None) -> list[list[int]]:
    """Complete-linkage groups: join two groups along the best pair only if all members stay close.

    Deterministic for a given set of pairs (ties broken by index), so the indexed and the
    all-pairs searches yield the same clusters. Returns groups of 2 or more, each sorted.
    """
    grouper = _Grouper(sets, threshold, max_size, apart, related)
    grouper.add(pairs)
    return grouper.groups()


def _compact(sets: Sequence[frozenset[str]], order: Sequence[Sequence[int]]) -> list[frozenset[str]]:
    """Copies of ``sets`` that compare faster.

    One shared object per token, so set lookups match by identity, and sets sharing their rarest
    token allocated side by side in memory, since those are the ones compared with each other.
    """
    canon: dict[str, str] = {}
    out: list[frozenset[str]] = [frozenset()] * len(sets)
    for i in sorted(range(len(sets)), key=lambda n: (order[n][:1], n)):
        out[i] = frozenset(map(canon.setdefault, sets[i], sets[i]))
    return out


# Score bands searched from the top: the stricter the threshold, the cheaper the search.
BANDS = (0.8, 0.6, 0.45)


def find_clusters(sets: Sequence[frozenset[str]], threshold: float, max_size: int = MAX_CLUSTER, *,
                  baseline: bool = False, bands: Sequence[float] = BANDS,
                  extra: Sequence[tuple[float, int, int]] = (), apart: Pairwise | None = None,
                  related: Pairwise | None = None) -> list[list[int]]:
    """Clusters of 2 to ``max_size`` indexes into ``sets`` (``baseline`` scans all pairs).

    The indexed search takes the pairs in score bands, best first, feeding each band to the same
    greedy grouping the baseline uses. Members of groups that are already full take no further
    part (the grouping would skip every later edge of theirs), so the wide, costly bands near
    ``threshold`` search only the statements still able to join something. Same clusters as
    grouping all pairs at once, which the tests and the benchmark check.

    ``extra`` pairs (semantic neighbours, scored on the same scale) join the lexical ones in
    their band; ``apart`` and ``related`` are the grouping's hooks (see :class:`_Grouper`).
    """
    if baseline:
        return group(sets, list(all_pairs(sets, threshold)) + list(extra), threshold, max_size,
                     apart=apart, related=related)
    order = rank_order(sets)
    sets = _compact(sets, order)
    grouper = _Grouper(sets, threshold, max_size, apart, related)
    alive = list(range(len(sets)))
    upper: float | None = None
    for band in [b for b in bands if b > threshold] + [threshold]:
        found = similar_pairs([sets[i] for i in alive], band, order=[order[i] for i in alive])
        fed = [(score, alive[a], alive[b]) for score, a, b in found if upper is None or score < upper]
        fed += [p for p in extra if p[0] >= band and (upper is None or p[0] < upper)]
        grouper.add(fed)
        full = grouper.full()
        alive = [i for i in alive if i not in full]
        upper = band
    return grouper.groups()
