"""What a consolidation run looks at: clusters of related memories, near-duplicate pairs, lifecycle actions.

:func:`make_plan` reads rows of a namespace (no I/O of its own) and decides what to put to the
model: clusters (complete linkage, no chaining; :mod:`gitmem.clustering`) of active memories,
highly similar pairs, and lifecycle actions (archive faded memories, clean up never-used ones,
promote or discard pending ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .. import concepts, details, ranking
from ..clustering import find_clusters
from ..concepts import Memory
from ..repo import Row, text_hash
from ..semantic import Neighbours
from ..settings import Settings
from ..similarity import dice

NEVER_USED_KEEP_DAYS = 7
NEVER_USED_ARCHIVE_DAYS = 30
PROMOTE_AT = 0.6
DISCARD_BELOW = 0.3
FREQUENT_USES = 3  # uses at which a pending memory's retrieval frequency counts as full
AGE_HORIZON_DAYS = 30  # age at which a pending memory's age decay is complete


@dataclass(frozen=True)
class Cluster:
    """Related memories to merge (or, for a highly similar pair, to update/delete/ignore)."""

    members: tuple[Memory, ...]
    min_similarity: float
    pair: bool = False
    #: Every pair of members close in words (at least OFFLINE_WORDS) or in meaning, not joined
    #: by a loose word overlap alone.
    alike: bool = True

    @property
    def anchors(self) -> tuple[Memory, ...]:
        """The user's own statements: they guide the merge but are never rewritten or removed."""
        return tuple(m for m in self.members if m.source == "user")

    @property
    def replaceable(self) -> tuple[Memory, ...]:
        """The members a merge may rewrite or remove: everything but the user's statements."""
        return tuple(m for m in self.members if m.source != "user")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: cluster or pair, its lowest similarity and its members."""
        return {
            "kind": "pair" if self.pair else "cluster",
            "min_similarity": round(self.min_similarity, 3),
            "members": [{"id": m.id, "source": m.source, "title": m.title, "text": m.text}
                        for m in self.members],
        }


@dataclass(frozen=True)
class Lifecycle:
    """A lifecycle action on one memory: ``archive``, ``promote``, ``discard`` or ``judge``."""

    action: str
    memory: Memory
    reason: str
    question: str | None = None  # for ``judge``: ``never_used`` or ``pending``
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the action, the memory and why."""
        out: dict[str, Any] = {"action": self.action, "id": self.memory.id, "title": self.memory.title,
                               "reason": self.reason}
        if self.question:
            out["question"] = self.question
        if self.score is not None:
            out["score"] = round(self.score, 3)
        return out


@dataclass(frozen=True)
class Plan:
    """What a run will look at; computed without writing anything."""

    namespace: str
    head: str
    at: datetime
    active: int
    clusters: tuple[Cluster, ...]
    lifecycle: tuple[Lifecycle, ...]
    potencies: dict[str, float] = field(default_factory=dict)
    #: How often each memory was used (its count on main and the uses not folded in yet).
    uses: dict[str, int] = field(default_factory=dict)

    def used(self, ids: Sequence[str]) -> int:
        """How often the memories ``ids`` were used, together: what orders the changes of a run."""
        return sum(self.uses.get(i, 0) for i in ids)

    @property
    def llm_calls(self) -> int:
        """How many LLM calls the run will make: one per cluster or pair, one per memory to judge."""
        return len(self.clusters) + sum(1 for a in self.lifecycle if a.action == "judge")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with clusters and highly similar pairs listed apart."""
        return {
            "namespace": self.namespace,
            "head": self.head,
            "at": concepts.iso(self.at),
            "active": self.active,
            "clusters": [c.to_dict() for c in self.clusters if not c.pair],
            "pairs": [c.to_dict() for c in self.clusters if c.pair],
            "lifecycle": [a.to_dict() for a in self.lifecycle],
            "llm_calls": self.llm_calls,
        }


# Word overlap (Dice) at which two statements count as alike without a sentence vector.
OFFLINE_WORDS = 0.5
# How much closer than the semantic threshold two statements must be when each names something
# the other does not (see gitmem.details.differ).
STRICTER = 0.2


def combined(settings: Settings, cosine: float) -> float:
    """A cosine on the word-similarity scale: the semantic threshold maps to the cluster threshold, 1 to 1."""
    low, high = settings.semantic_threshold, settings.cluster_threshold
    if low >= 1:
        return high
    return high + (cosine - low) * (1 - high) / (1 - low)


def make_plan(namespace: str, head: str, at: datetime, rows: Sequence[Row], uses: ranking.Uses,
              settings: Settings, neighbours: Neighbours | None = None, *, strict: bool = True) -> Plan:
    """What a run should look at, from the active and pending memories at ``head``; no I/O.

    Candidate pairs are the word-similar pairs and, with ``neighbours``, the semantic ones;
    clusters are complete-linkage on either measure and, when ``strict``, never join two
    statements whose details conflict (:func:`gitmem.details.conflict`).
    """
    potencies = {r.memory.id: ranking.effective_potency(r.memory, at, uses) for r in rows}
    used = {r.memory.id: r.memory.access_count + (uses[r.memory.id][0] if r.memory.id in uses else 0) for r in rows}
    active = [r for r in rows if r.memory.state == "active"]
    pending = [r for r in rows if r.memory.state == "pending"]
    lifecycle: list[Lifecycle] = []
    leaving: set[str] = set()
    judge_later: list[Memory] = []
    for row in active:
        m = row.memory
        age = (at - m.created).total_seconds() / 86400
        never_used = m.access_count == 0 and m.last_used is None and m.id not in uses
        if potencies[m.id] < concepts.ARCHIVE_BELOW:
            lifecycle.append(Lifecycle("archive", m, f"potency fell to {potencies[m.id]:.3f}, below "
                                                     f"{concepts.ARCHIVE_BELOW}"))
            leaving.add(m.id)
        elif never_used and not m.tenured and not m.verified and age > NEVER_USED_ARCHIVE_DAYS:
            lifecycle.append(Lifecycle("archive", m, f"never used in the {int(age)} days since it was "
                                                     "stored"))
            leaving.add(m.id)
        elif never_used and not m.tenured and not m.verified and age >= NEVER_USED_KEEP_DAYS:
            judge_later.append(m)
    # A technology choice keeps every option it ever had: it is never merged, into or with anything.
    candidates = [r for r in active if r.memory.id not in leaving and r.memory.type != "techchoice"]
    sets = [r.tokens for r in candidates]
    texts = [r.memory.text for r in candidates]
    hashes = [text_hash(t) for t in texts]
    conflicts: dict[tuple[int, int], bool] = {}

    def cosine(i: int, j: int) -> float | None:
        return None if neighbours is None else neighbours.cosine(hashes[i], hashes[j])

    def words(i: int, j: int) -> float:
        return dice(sets[i], sets[j])

    def apart(i: int, j: int) -> bool:
        """Different rules: details that conflict, or each naming what the other does not unless very close."""
        key = (i, j) if i < j else (j, i)
        if key not in conflicts:
            value = cosine(i, j)
            conflicts[key] = details.conflict(texts[i], texts[j]) is not None or (
                details.differ(texts[i], texts[j]) and words(i, j) < OFFLINE_WORDS
                and (value is None or value < settings.semantic_threshold + STRICTER))
        return conflicts[key]

    def related(i: int, j: int) -> bool:
        value = cosine(i, j)
        return value is not None and value >= settings.semantic_threshold

    def alike(i: int, j: int) -> float:
        """The pair's similarity on the word scale: the better of words and meaning."""
        value = cosine(i, j)
        return words(i, j) if value is None else max(words(i, j), combined(settings, value))

    extra: list[tuple[float, int, int]] = []
    if neighbours is not None:
        where: dict[str, list[int]] = {}
        for i, h in enumerate(hashes):
            where.setdefault(h, []).append(i)
        for a, b, value in neighbours.pairs:
            for i in where.get(a, ()):
                extra += [(combined(settings, value), min(i, j), max(i, j)) for j in where.get(b, ())]
    clusters: list[Cluster] = []
    in_cluster: set[str] = set()
    found = find_clusters(sets, settings.cluster_threshold, extra=extra, apart=apart if strict else None,
                          related=related if neighbours is not None else None)
    for indexes in found:
        members = tuple(sorted((candidates[i].memory for i in indexes), key=lambda m: (m.created, m.id)))
        if all(m.source == "user" for m in members):
            continue  # the user's statements are never merged automatically
        each = [(a, b) for k, a in enumerate(indexes) for b in indexes[k + 1 :]]
        low = min(alike(a, b) for a, b in each)
        close = all(related(a, b) or words(a, b) >= OFFLINE_WORDS for a, b in each)
        is_pair = len(members) == 2 and not any(m.source == "user" for m in members) and \
            low >= settings.pair_threshold
        clusters.append(Cluster(members, low, is_pair, close))
        in_cluster.update(m.id for m in members)
    for m in judge_later:
        if m.id not in in_cluster:
            age = (at - m.created).days
            lifecycle.append(Lifecycle("judge", m, f"never used in the {age} days since it was stored",
                                       question="never_used"))
    vocabulary: set[str] = set()
    for row in active:
        vocabulary |= row.tokens
    for row in pending:
        m = row.memory
        count = m.access_count + (uses[m.id][0] if m.id in uses else 0)
        frequency = min(1.0, count / FREQUENT_USES)
        relevance = len(row.tokens & vocabulary) / len(row.tokens) if row.tokens else 0.0
        decay = min(1.0, max(0.0, (at - m.created).total_seconds() / 86400 / AGE_HORIZON_DAYS))
        score = 0.4 * frequency + 0.35 * relevance + 0.25 * (1 - decay)
        why = (f"score {score:.2f} = 0.4 x frequency {frequency:.2f} + 0.35 x relevance "
               f"{relevance:.2f} + 0.25 x (1 - age decay {decay:.2f})")
        if score >= PROMOTE_AT:
            lifecycle.append(Lifecycle("promote", m, why, score=score))
        elif score < DISCARD_BELOW:
            lifecycle.append(Lifecycle("discard", m, why, score=score))
        else:
            lifecycle.append(Lifecycle("judge", m, why, question="pending", score=score))
    return Plan(namespace, head, at, len(active), tuple(clusters), tuple(lifecycle), potencies, used)
