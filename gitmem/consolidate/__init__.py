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

The plan is :mod:`.planning`, the decisions and the commits they become :mod:`.proposals`.
Clusters come from :mod:`gitmem.clustering` (complete linkage, no chaining). The trigger rule
(:meth:`Consolidation.should_trigger`) says when a write should start a run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from .. import concepts, notify
from ..concepts import now
from ..errors import ReviewStillOpen
from ..llm import LLM, Offline
from ..memories import Memories
from ..repo import AlreadyRunning, Leases, Namespaces, RunState, text_hash
from ..reviews import Review, Reviews
from ..semantic import Semantics
from ..settings import Settings
from ..wording import plural
from .planning import Cluster, Lifecycle, Plan, make_plan
from .proposals import ACTOR, Decision, Progress, decide, pick, summarise

# The trigger enqueues a namespace at most this often, however many writes arrive.
TRIGGER_THROTTLE = timedelta(hours=1)

__all__ = ["ACTOR", "AlreadyRunning", "Cluster", "Consolidation", "Decision", "Lifecycle", "Plan", "Progress",
           "ReviewStillOpen", "RunResult", "decide", "make_plan", "summarise"]


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
                "later": self.count("later"),
                "commits": sum(1 for d in self.decisions if d.change is not None),
                "llm_failures": self.llm_failures,
            },
            "decisions": [d.to_dict() for d in self.decisions],
            "merges": self.merges,
            "plan": self.plan.to_dict() if self.dry_run else None,
        }


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
            llm: LLM | None = None, started_by: str = "") -> RunResult:
        """Consolidate one namespace onto a review branch (or, with ``dry_run``, only plan).

        Folds the recorded usage into main first (so potencies are current), plans, asks the LLM,
        writes one commit per decision on ``consolidate/<namespace>/<timestamp>`` and opens a
        review. Raises :class:`AlreadyRunning` when another run holds the namespace,
        :class:`ReviewStillOpen` when a consolidation review waits for a decision, and
        :class:`~gitmem.errors.LeaseLost` when this run's lease expired before it could write.
        ``started_by`` says who or what started the run ("alice", "the daily schedule"); the
        review keeps it, and a run that finds the review open names it.
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
                raise ReviewStillOpen(still_open(waiting, self.settings.public_url), waiting.number)
            self.reviews.prune_orphans(namespace, guard=fence.check)
            self.memories.fold_usage(namespace, actor=ACTOR, guard=fence.check)
            plan_ = self.plan(namespace, strict=model.name == Offline.name)
            head = ns.store.commit(plan_.head)
            at_most = self.settings.review_max_changes
            decisions, failures = decide(plan_, model, max_chars=self.settings.merged_max_chars,
                                         pair_threshold=self.settings.pair_threshold, ns=ns, head=head,
                                         progress=progress, at_most=at_most)
            # A review a person can finish: the changes that lose nothing first, the rest later.
            decisions = pick(decisions, plan_, at_most)
            changes = [d.change for d in decisions if d.change is not None]
            review = None
            if changes:
                title = summarise(decisions, None, later=False)
                description = "\n".join(f"- {d.kind}: {d.reason}" for d in decisions if d.change is not None)
                if started_by:
                    description = f"{STARTED_BY}{started_by}.\n\n{description}"
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


#: How a consolidation review's description starts when the run knew who or what started it.
STARTED_BY = "Started by "


def still_open(review: Review, public_url: str | None = None) -> str:
    """Why a run stops for an open consolidation review: which it is, who opened it when, its size, where."""
    first = review.description.split("\n", 1)[0]
    who = first.removeprefix(STARTED_BY).rstrip(".") if first.startswith(STARTED_BY) else review.author
    states = list(review.commit_states.values())
    total = max(review.commit_count, len(states))
    merged = states.count("merged")
    size = plural(total, "change") + (f", {merged} merged so far" if merged else "") if total else "its changes"
    where = f"`gitmem review show {review.number} --namespace {review.namespace}`"
    if public_url:
        where += f" or {public_url.rstrip('/')}/ns/{review.namespace}/reviews/{review.number}"
    return (f"consolidation review #{review.number} of namespace {review.namespace!r} is still open: "
            f"\"{review.title}\", opened by {who} on {review.created.strftime('%Y-%m-%d %H:%M')} UTC with {size}; "
            f"see it with {where}, approve or reject it, then run again")


class TaskQueue(Protocol):
    """Where work goes to be done by the workers (:class:`gitmem.broker.CeleryQueue`)."""

    def enqueue_consolidation(self, namespace: str, *, dry_run: bool = False, started_by: str = "") -> str:
        """Queue a consolidation run of ``namespace`` (``started_by``: who or what asks); returns the task id."""

    def enqueue_distil(self, namespace: str, buffer_id: str) -> str:
        """Queue the distilling of a sealed conversation buffer; returns the task id."""

    def enqueue_embed(self, namespace: str) -> str:
        """Queue the embedding of the memories that have no sentence vector yet; returns the task id."""


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
