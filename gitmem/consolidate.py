"""Consolidation: find related memories, merge them, tidy the lifecycle, all on a review branch.

A run has three phases. :func:`plan` reads the namespace and decides what to look at, without
writing: clusters of related active memories, highly similar pairs, and lifecycle actions
(archive faded memories, clean up never-used ones, promote or discard pending ones). Then each
cluster, pair and grey-zone memory goes to the LLM port (:mod:`gitmem.llm`) for a decision. Last,
every decision that changes something becomes one commit on a new branch
``consolidate/<namespace>/<timestamp>`` off main, with the reason in its message, and a review is
opened. Nothing reaches main until someone approves the review (:mod:`gitmem.reviews`).

One run of a namespace at a time: a run holds the namespace's lock (a file lock, and a lease on
Redis when hosts share one, :mod:`gitmem.repo.leases`) and checks it right before every ref it
moves, so a run that lost its lease writes nothing more. A namespace has at most one open
consolidation review: a run that finds one stops with :class:`ReviewStillOpen` (a second review
of the same memories would go stale the moment the first is approved), which is also what a
run redelivered after its worker died finds when the dead run had opened its review.

Clusters come from :mod:`gitmem.clustering` (complete linkage, no chaining). The trigger rule
(:meth:`Consolidation.should_trigger`) says when a write should start a run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from . import concepts, details, notify, ranking
from .clustering import find_clusters
from .concepts import Memory, now
from .errors import Conflict, ReviewStillOpen, Unavailable
from .llm import LLM, Judgement, MergeDecision, Offline, PairDecision
from .memories import Memories
from .repo import AlreadyRunning, Change, Commit, Leases, Namespace, Namespaces, Row, RunState, text_hash
from .reviews import Review, Reviews
from .semantic import Neighbours, Semantics
from .settings import Settings
from .similarity import dice, similarity
from .wording import plural

NEVER_USED_KEEP_DAYS = 7
NEVER_USED_ARCHIVE_DAYS = 30
PROMOTE_AT = 0.6
DISCARD_BELOW = 0.3
FREQUENT_USES = 3  # uses at which a pending memory's retrieval frequency counts as full
AGE_HORIZON_DAYS = 30  # age at which a pending memory's age decay is complete
ACTOR = "gitmem"
# The trigger enqueues a namespace at most this often, however many writes arrive.
TRIGGER_THROTTLE = timedelta(hours=1)

Progress = Callable[[int, int, str], None]
__all__ = ["AlreadyRunning", "Consolidation", "Plan", "ReviewStillOpen", "RunResult"]


# --- the plan -----------------------------------------------------------------------------------


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
        return tuple(m for m in self.members if m.source != "user")

    def to_dict(self) -> dict[str, Any]:
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
    return Plan(namespace, head, at, len(active), tuple(clusters), tuple(lifecycle), potencies)


# --- decisions and the commits they become --------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """One decision of a run; ``change`` is the commit it becomes (None: nothing to write)."""

    kind: str  # merge, cover, link, veto, update, delete, ignore, archive, promote, discard, keep
    memory_ids: tuple[str, ...]
    reason: str
    change: Change | None = None
    before: tuple[str, ...] = ()
    after: str | None = None
    members: int = 0  # memories involved in a merge
    results: int = 0  # memories left of them

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "memory_ids": list(self.memory_ids),
                               "reason": self.reason}
        if self.change is not None:
            out["summary"] = self.change.summary
        if self.before:
            out["before"] = list(self.before)
        if self.after is not None:
            out["after"] = self.after
        return out


class _Paths:
    """Free file paths for new memories, counting those claimed earlier in the same run."""

    def __init__(self, ns: Namespace, head: Commit) -> None:
        self.ns, self.head, self.claimed = ns, head, set[str]()

    def take(self, memory_type: str, title: str, memory_id: str) -> str:
        slug = concepts.slugify(title)
        for path in (concepts.file_path(memory_type, slug), concepts.file_path(memory_type, f"{slug}-{memory_id}")):
            # A path freed earlier in the run is not reused: the reviewer may drop that commit.
            if path not in self.claimed and self.ns.store.read(path, self.head) is None:
                self.claimed.add(path)
                return path
        raise Conflict(f"no free file name for memory {memory_id}")  # ids are unique; cannot happen


def _union(*groups: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for values in groups:
        out.extend(v for v in values if v not in out)
    return tuple(out)


def _body(reason: str, before: Sequence[Memory], after: str | None) -> str:
    lines = [f"Reason: {reason}"]
    if before:
        lines += ["", "Before:"] + [f"- {m.id} ({m.source}): {' '.join(m.text.split())}" for m in before]
    if after is not None:
        lines += ["", "After:", f"- {' '.join(after.split())}"]
    return "\n".join(lines)


def _merge_change(cluster: Cluster, decision: MergeDecision, plan_: Plan, paths: _Paths,
                  pair_threshold: float) -> Decision:
    ids = tuple(m.id for m in cluster.members)
    texts = tuple(m.text for m in cluster.members)
    at = plan_.at
    if decision.text is None:
        if decision.link:
            return _link_change(cluster, decision, at)
        return Decision("veto", ids, decision.reason, before=texts)
    apart = [m for m in cluster.members if m.id in decision.apart]
    replaced = tuple(m for m in cluster.replaceable if m not in apart)
    anchors = tuple(m for m in cluster.anchors if m not in apart)
    if not replaced:
        return Decision("veto", ids, decision.reason + " (nothing left to merge)", before=texts)
    files: dict[str, bytes | None] = {m.path: None for m in replaced}

    def link_apart(to: str) -> None:
        """The members left apart (another language) point at the memory that stays."""
        for m in apart:
            if to not in m.related:
                files[m.path] = concepts.render(m.replace(related=m.related + (to,), updated=at))

    covering = [a for a in anchors if similarity(a.text, decision.text) >= pair_threshold]
    if covering:
        anchor = covering[0]
        link_apart(anchor.id)
        summary = f"consolidate: {plural(len(replaced), 'memory')} covered by the user's \"{anchor.title}\""
        change = Change(files, summary,
                        "consolidate", tuple(m.id for m in replaced) + (anchor.id,) + tuple(m.id for m in apart),
                        "consolidation", ACTOR, body=_body(decision.reason, cluster.members, anchor.text))
        return Decision("cover", ids, decision.reason, change, texts, anchor.text,
                        len(cluster.members) - len(apart), len(anchors))
    base = max(replaced, key=lambda m: (m.created, m.id))
    kept = next((m for m in cluster.members if m.id == decision.keep), None)
    # The merged memory is of the kind the kept statement (else the user's) is: a convention
    # merged from a convention and a fact stays a convention.
    memory_type = (kept or (anchors[0] if anchors else base)).type
    new_id = concepts.new_id()
    title = concepts.title_from(decision.text)
    merged = Memory(
        id=new_id, type=memory_type, text=decision.text, title=title,
        description=concepts.description_from(decision.text),
        tags=_union(*(m.tags for m in cluster.members)),
        paths=_union(*(m.paths for m in cluster.members)),
        source="consolidation", author=ACTOR, created=at, updated=at,
        potency=round(min(1.0, max(plan_.potencies.get(m.id, m.potency) for m in replaced)), 4),
        last_used=None, access_count=sum(m.access_count for m in replaced), state="active",
        tenured=any(m.tenured for m in replaced), verified=(),
        related=tuple(r for r in _union(*(m.related for m in replaced), [a.id for a in anchors],
                                        [m.id for m in apart])
                      if r not in {m.id for m in replaced}),
        supersedes=tuple(m.id for m in replaced),
    )
    merged = merged.replace(path=paths.take(merged.type, title, new_id))
    files[merged.path] = concepts.render(merged)
    link_apart(new_id)
    change = Change(files, f"consolidate: merge {len(replaced)} into \"{title}\"", "consolidate",
                    (new_id,) + tuple(m.id for m in replaced) + tuple(m.id for m in apart), "consolidation", ACTOR,
                    body=_body(decision.reason, cluster.members, decision.text))
    return Decision("merge", ids, decision.reason, change, texts, decision.text,
                    len(cluster.members) - len(apart), 1 + len(anchors))


def _link_change(cluster: Cluster, decision: MergeDecision, at: datetime) -> Decision:
    """Members that say one rule point at each other (``related``); nothing is merged or lost."""
    ids = tuple(m.id for m in cluster.members)
    texts = tuple(m.text for m in cluster.members)
    files: dict[str, bytes | None] = {}
    for m in cluster.members:
        others = [i for i in ids if i != m.id and i not in m.related]
        if others:
            files[m.path] = concepts.render(m.replace(related=m.related + tuple(others), updated=at))
    if not files:
        return Decision("veto", ids, decision.reason + " (already linked)", before=texts)
    change = Change(files, f"consolidate: link {plural(len(ids), 'statement')} of one rule", "consolidate", ids,
                    "consolidation", ACTOR, body=_body(decision.reason, cluster.members, None))
    return Decision("link", ids, decision.reason, change, texts)


def _pair_change(cluster: Cluster, decision: PairDecision, plan_: Plan) -> Decision:
    target, candidate = sorted(cluster.members, key=lambda m: (m.created, m.id))
    ids = (target.id, candidate.id)
    texts = (target.text, candidate.text)
    at = plan_.at
    if decision.action == "update" and decision.text:
        text = decision.text
        title = concepts.title_from(text) if target.title == concepts.title_from(target.text) else target.title
        potency = max(plan_.potencies.get(m.id, m.potency) for m in cluster.members)
        new = target.replace(
            text=text, title=title, description=concepts.description_from(text), updated=at,
            tags=_union(target.tags, candidate.tags), paths=_union(target.paths, candidate.paths),
            related=tuple(r for r in _union(target.related, candidate.related) if r not in ids),
            supersedes=_union(target.supersedes, [candidate.id]), potency=round(min(1.0, potency), 4),
            last_used=at, access_count=target.access_count + candidate.access_count,
            tenured=target.tenured or candidate.tenured,
        )
        files: dict[str, bytes | None] = {candidate.path: None, target.path: concepts.render(new)}
        change = Change(files, f"consolidate: fold a near-duplicate into \"{target.title}\"", "consolidate",
                        ids, "consolidation", ACTOR, body=_body(decision.reason, cluster.members, text))
        return Decision("update", ids, decision.reason, change, texts, text, 2, 1)
    if decision.action == "delete":
        new = candidate.replace(supersedes=_union(candidate.supersedes, [target.id]), updated=at)
        files = {target.path: None, candidate.path: concepts.render(new)}
        change = Change(files, f"consolidate: newer \"{candidate.title}\" replaces an older statement",
                        "consolidate", ids, "consolidation", ACTOR,
                        body=_body(decision.reason, cluster.members, candidate.text))
        return Decision("delete", ids, decision.reason, change, texts, candidate.text, 2, 1)
    return Decision("ignore", ids, decision.reason, before=texts)


def _lifecycle_change(item: Lifecycle, verdict: str, reason: str, at: datetime) -> Decision:
    m = item.memory
    if verdict in ("archive", "discard"):
        new = m.replace(state="archived", archived_reason=reason, updated=at)
        summary = f"{'archive' if verdict == 'archive' else 'discard pending'}: {m.title}"
    elif verdict == "promote":
        new = m.replace(state="active", updated=at)
        summary = f"promote: {m.title}"
    else:
        return Decision("keep", (m.id,), reason)
    change = Change({m.path: concepts.render(new)}, summary, verdict, (m.id,), "consolidation", ACTOR,
                    body=f"Reason: {reason}")
    return Decision(verdict, (m.id,), reason, change)


@dataclass(frozen=True)
class RunResult:
    """What a run did: its decisions, counts, the review it opened and a one-line summary."""

    namespace: str
    dry_run: bool
    decisions: tuple[Decision, ...]
    review: int | None
    branch: str | None
    summary: str
    plan: Plan
    llm: str
    llm_failures: int = 0

    def count(self, *kinds: str) -> int:
        """How many decisions are of one of ``kinds``."""
        return sum(1 for d in self.decisions if d.kind in kinds)

    @property
    def merges(self) -> list[dict[str, Any]]:
        """The texts before and after each merge, cover, update or delete, for a reviewer to compare."""
        return [{"before": list(d.before), "after": d.after} for d in self.decisions
                if d.kind in ("merge", "cover", "update", "delete")]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the summary, counts of each kind of decision, the decisions and merges."""
        merged = [d for d in self.decisions if d.kind in ("merge", "cover", "update", "delete")]
        return {
            "namespace": self.namespace,
            "dry_run": self.dry_run,
            "review": self.review,
            "branch": self.branch,
            "summary": self.summary,
            "llm": self.llm,
            "counts": {
                "clusters": len(self.plan.clusters),
                "merged": sum(d.members for d in merged),
                "into": sum(d.results for d in merged),
                "vetoed": self.count("veto"),
                "linked": self.count("link"),
                "ignored": self.count("ignore"),
                "archived": self.count("archive"),
                "promoted": self.count("promote"),
                "discarded": self.count("discard"),
                "kept": self.count("keep"),
                "commits": sum(1 for d in self.decisions if d.change is not None),
                "llm_failures": self.llm_failures,
            },
            "decisions": [d.to_dict() for d in self.decisions],
            "merges": self.merges,
            "plan": self.plan.to_dict() if self.dry_run else None,
        }


def summarise(decisions: Sequence[Decision], review: int | None) -> str:
    """``consolidated 7 memories into 3, archived 2, review #4``."""
    merged = [d for d in decisions if d.kind in ("merge", "cover", "update", "delete")]
    parts = []
    if merged:
        parts.append(f"consolidated {plural(sum(d.members for d in merged), 'memory')} into "
                     f"{sum(d.results for d in merged)}")
    for kind, word in (("link", "linked"), ("archive", "archived"), ("promote", "promoted"),
                       ("discard", "discarded")):
        n = sum(1 for d in decisions if d.kind == kind)
        if n:
            parts.append(f"{word} {n}")
    if not parts:
        return "nothing to consolidate"
    return ", ".join(parts) + (f", review #{review}" if review is not None else "")


# --- the run ----------------------------------------------------------------------------------


def decide(plan_: Plan, llm: LLM, *, max_chars: int, pair_threshold: float, ns: Namespace,
           head: Commit, progress: Progress | None = None) -> tuple[list[Decision], int]:
    """Ask the LLM about every cluster and grey-zone memory; returns decisions and LLM failures.

    Once the LLM is unavailable the remaining questions are not asked: clusters count as vetoed
    and memories are kept, so a run without a model changes nothing it was unsure of.
    """
    decisions: list[Decision] = []
    paths = _Paths(ns, head)
    failures = 0
    down: str | None = None
    total = plan_.llm_calls
    done = 0

    def tick(label: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, label)

    for cluster in plan_.clusters:
        if cluster.pair:
            target, candidate = sorted(cluster.members, key=lambda m: (m.created, m.id))
            pair: PairDecision = PairDecision("ignore", None, f"not asked: {down}")
            if down is None:
                try:
                    pair = llm.pair(target, candidate, max_chars=max_chars)
                except Unavailable as exc:
                    down, failures = str(exc), failures + 1
                    pair = PairDecision("ignore", None, f"not decided: {exc}")
            decisions.append(_pair_change(cluster, pair, plan_))
        else:
            merge: MergeDecision = MergeDecision(None, f"not asked: {down}")
            if down is None:
                try:
                    merge = llm.merge(cluster.members, max_chars=max_chars, alike=cluster.alike)
                except Unavailable as exc:
                    down, failures = str(exc), failures + 1
                    merge = MergeDecision(None, f"not decided: {exc}")
            decisions.append(_merge_change(cluster, merge, plan_, paths, pair_threshold))
        tick(cluster.members[0].title)
    for item in plan_.lifecycle:
        if item.action != "judge":
            decisions.append(_lifecycle_change(item, item.action, item.reason, plan_.at))
            continue
        judgement = Judgement("keep", f"not asked: {down}")
        if down is None:
            try:
                judgement = llm.judge(item.memory, question=item.question or "pending", score=item.score)
            except Unavailable as exc:
                down, failures = str(exc), failures + 1
                judgement = Judgement("keep", f"not decided: {exc}")
        reason = f"{item.reason}; the model: {judgement.reason}"
        decisions.append(_lifecycle_change(item, judgement.verdict, reason, plan_.at))
        tick(item.memory.title)
    return decisions, failures


class Consolidation:
    """Plan, decide and run consolidation of any namespace, and the rule that triggers a run."""

    def __init__(self, namespaces: Namespaces, memories: Memories, reviews: Reviews, settings: Settings,
                 llm: Callable[[], LLM], leases: Callable[[], Leases | None] | None = None,
                 semantics: Semantics | None = None) -> None:
        """Work on ``namespaces``; ``llm()`` gives the model that decides when a run is given none.

        ``leases()`` gives the locks shared by every host (None: the file lock alone will do);
        ``semantics`` adds semantic neighbours to the candidates.
        """
        self.semantics = semantics
        self.namespaces = namespaces
        self.leases = leases
        self.llm = llm
        self.memories = memories
        self.reviews = reviews
        self.settings = settings

    def state(self, namespace: str, *, shared: bool = False) -> RunState:
        """The namespace's run lock and state file (when it last ran, when a run was last queued).

        ``shared``: the lock takes the lease every host shares too. Only a run asks for it, so the
        trigger after a write (in a web server's threads) never loads the Redis client.
        """
        leases = self.leases() if shared and self.leases is not None else None
        return RunState(self.settings.state_dir, self.namespaces.open(namespace).name, leases)

    def plan(self, namespace: str, *, strict: bool | None = None) -> Plan:
        """Decide what a run would look at, reading main and the usage log; writes nothing.

        ``strict`` (default: when the offline rules decide) keeps statements whose details
        conflict out of one cluster; a model is shown them, since it can settle a conflict
        ("16pt now, not 18pt") that rules cannot.
        """
        if strict is None:
            strict = self.llm().name == Offline.name
        ns = self.namespaces.open(namespace)
        at = now()
        with ns.lock:
            for _ in range(5):
                head = ns.synced()
                rows = ns.index.rows(states=["active", "pending"])
                if ns.index.indexed_commit() == str(head.id):
                    break  # another process did not move the index on under us
            uses = ns.usage.pending()
            neighbours = None
            if self.semantics is not None and self.semantics.enabled:
                live = sorted({text_hash(r.memory.text) for r in rows if r.memory.state == "active"})
                neighbours = self.semantics.neighbours(ns, live, self.settings.semantic_threshold,
                                                       self.settings.semantic_neighbours)
        plan_ = make_plan(namespace, str(head.id), at, rows, uses, self.settings, neighbours, strict=strict)
        # Merges a reviewer turned down are not proposed again until one of their members changes.
        turned_down = self.reviews.rejected_merges(namespace)
        return replace(plan_, clusters=tuple(c for c in plan_.clusters
                                             if not any(r.matches(c.members) for r in turned_down)))

    def run(self, namespace: str, *, dry_run: bool = False, progress: Progress | None = None,
            llm: LLM | None = None) -> RunResult:
        """Consolidate one namespace onto a review branch (or, with ``dry_run``, only plan).

        Folds the recorded usage into main first (so potencies are current), plans, asks the LLM,
        writes one commit per decision on ``consolidate/<namespace>/<timestamp>`` and opens a
        review. Raises :class:`AlreadyRunning` when another run holds the namespace,
        :class:`ReviewStillOpen` when a consolidation review waits for a decision, and
        :class:`~gitmem.errors.LeaseLost` when this run's lease expired before it could write.
        """
        ns = self.namespaces.open(namespace)  # NamespaceNotFound before anything else
        model = llm or self.llm()
        if dry_run:
            plan_ = self.plan(namespace, strict=model.name == Offline.name)
            return RunResult(namespace, True, (), None, None, _dry_summary(plan_), plan_, model.name)
        state = self.state(namespace, shared=True)
        with state.lock() as fence:
            waiting = self.pending_review(namespace)
            if waiting is not None:
                raise ReviewStillOpen(
                    f"consolidation review #{waiting.number} of namespace {namespace!r} is still open; "
                    f"approve or reject it first (`gitmem review show {waiting.number}`), then run again",
                    waiting.number)
            self.reviews.prune_orphans(namespace, guard=fence.check)
            self.memories.fold_usage(namespace, actor=ACTOR, guard=fence.check)
            plan_ = self.plan(namespace, strict=model.name == Offline.name)
            head = ns.store.commit(plan_.head)
            decisions, failures = decide(plan_, model, max_chars=self.settings.merged_max_chars,
                                         pair_threshold=self.settings.pair_threshold, ns=ns, head=head,
                                         progress=progress)
            changes = [d.change for d in decisions if d.change is not None]
            review = None
            if changes:
                title = summarise(decisions, None)
                description = "\n".join(f"- {d.kind}: {d.reason}" for d in decisions if d.change is not None)
                with ns.lock:
                    branch = ns.store.write_branch(
                        head, changes, f"refs/heads/consolidate/{namespace}/{plan_.at.strftime('%Y%m%dT%H%M%SZ')}",
                        "consolidation", guard=fence.check)
                review = self.reviews.open(namespace, branch=branch, base=plan_.head,
                                           title=title[:1].upper() + title[1:], author=ACTOR,
                                           kind="consolidation", description=description, guard=fence.check)
            summary = summarise(decisions, review.number if review else None)
            state.write(last_run=concepts.iso(now()), active_at_last_run=plan_.active)
            result = RunResult(namespace, False, tuple(decisions), review.number if review else None,
                               review.branch if review else None, summary, plan_, model.name, failures)
        if review is not None:
            notify.publish(self.settings, {"event": "review.opened", "namespace": namespace,
                                           "review": review.to_dict(), "summary": summary,
                                           "merges": result.merges})
        return result

    def pending_review(self, namespace: str) -> Review | None:
        """The consolidation review of ``namespace`` that waits for a decision, if any."""
        return next((r for r in self.reviews.list(namespace, status="open") if r.kind == "consolidation"), None)

    def open_review(self, namespace: str) -> bool:
        """Whether a consolidation review of ``namespace`` is waiting for a decision."""
        return self.pending_review(namespace) is not None

    def should_trigger(self, namespace: str, at: datetime | None = None) -> bool:
        """The trigger rule after a write added a memory.

        Run when more than ``consolidate_min_active`` memories are active, or when
        ``consolidate_interval_hours`` have passed since the last run (since the namespace was
        created if it never ran); but never more often than :data:`TRIGGER_THROTTLE`, and not
        while a consolidation review is still open.
        """
        at = at or now()
        state = self.state(namespace).read()
        last_enqueued = concepts.parse_time(state.get("last_enqueued"))
        if last_enqueued is not None and at - last_enqueued < TRIGGER_THROTTLE:
            return False
        # Under the namespace's lock: the index's connection is shared by the process's threads, and
        # a sync here would otherwise begin a transaction inside another thread's write.
        last_run = concepts.parse_time(state.get("last_run"))
        with self.namespaces.using(namespace) as ns:
            ns.synced()
            active = ns.index.counts()["state"].get("active", 0)
            first = next(iter(reversed(list(ns.store.log()))), None) if last_run is None else None
        if active > self.settings.consolidate_min_active:
            return not self.open_review(namespace)
        if last_run is None:
            last_run = datetime.fromtimestamp(first.commit_time, UTC) if first is not None else at
        if at - last_run >= timedelta(hours=self.settings.consolidate_interval_hours):
            return not self.open_review(namespace)
        return False


def _dry_summary(plan_: Plan) -> str:
    merges = [c for c in plan_.clusters if not c.pair]
    pairs = [c for c in plan_.clusters if c.pair]
    counts = Counter(a.action for a in plan_.lifecycle)
    return (f"dry run: {plural(len(merges), 'cluster')} of {plural(sum(len(c.members) for c in merges), 'memory')}, "
            f"{plural(len(pairs), 'near-duplicate pair')}, {counts['archive']} to archive, {counts['promote']} to "
            f"promote, {counts['discard']} to discard, {counts['judge']} for the model to judge; "
            "nothing written")


class TaskQueue(Protocol):
    """Where work goes to be done by the workers (:class:`gitmem.broker.CeleryQueue`)."""

    def enqueue_consolidation(self, namespace: str, *, dry_run: bool = False) -> str:
        """Queue a consolidation run of ``namespace``; returns the task id."""

    def enqueue_distil(self, namespace: str, buffer_id: str) -> str:
        """Queue the distilling of a sealed conversation buffer; returns the task id."""


@dataclass(frozen=True)
class Dispatched:
    """Where a consolidation went: queued as ``task``, or run here with ``result``."""

    task: str | None = None
    result: RunResult | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the task id, or the run's result."""
        if self.result is not None:
            return {"queued": False, **self.result.to_dict()}
        return {"queued": True, "task_id": self.task}
