"""What the model decided about each cluster, pair and memory of a plan, and the commit each becomes.

:func:`decide` asks the LLM port (:mod:`gitmem.llm`) about every cluster, pair and grey-zone
memory; each decision that changes something carries the :class:`~gitmem.repo.Change` to commit,
with the reason and the texts before and after in its message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from .. import concepts, textdiff
from ..concepts import Memory
from ..errors import Conflict, Unavailable
from ..llm import LLM, Judgement, MergeDecision, PairDecision
from ..repo import Change, Commit, Namespace
from ..similarity import similarity
from ..wording import plural
from .planning import Cluster, Lifecycle, Plan

ACTOR = "gitmem"
LATER = "left for a later run: a review holds at most GITMEM_REVIEW_MAX_CHANGES changes"
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Decision:
    """One decision of a run; ``change`` is the commit it becomes (None: nothing to write)."""

    kind: str  # merge, cover, link, veto, update, delete, ignore, archive, promote, discard, keep, later
    memory_ids: tuple[str, ...]
    reason: str
    change: Change | None = None
    before: tuple[str, ...] = ()
    after: str | None = None
    members: int = 0  # memories merged: those removed, and the one they become when it was one of them
    results: int = 0  # memories left of them
    removed: tuple[str, ...] = ()  # the texts of the memories the change removes

    @cached_property
    def lost(self) -> list[str]:
        """The words of the memories the change removes that the text kept lacks (as a review shows them)."""
        if self.after is None:
            return []
        return sorted({w for text in self.removed for w in textdiff.lost_words(text, self.after)})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the kind, the memories, the reason and the texts before and after."""
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
        return Decision("cover", ids, decision.reason, change, texts, anchor.text, len(replaced) + 1, 1,
                        tuple(m.text for m in replaced))
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
    # The user's statements stay as they are (linked to the result): they count as neither.
    return Decision("merge", ids, decision.reason, change, texts, decision.text, len(replaced), 1,
                    tuple(m.text for m in replaced))


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
        return Decision("update", ids, decision.reason, change, texts, text, 2, 1, (candidate.text,))
    if decision.action == "delete":
        new = candidate.replace(supersedes=_union(candidate.supersedes, [target.id]), updated=at)
        files = {target.path: None, candidate.path: concepts.render(new)}
        change = Change(files, f"consolidate: newer \"{candidate.title}\" replaces an older statement",
                        "consolidate", ids, "consolidation", ACTOR,
                        body=_body(decision.reason, cluster.members, candidate.text))
        return Decision("delete", ids, decision.reason, change, texts, candidate.text, 2, 1, (target.text,))
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


def summarise(decisions: Sequence[Decision], review: int | None, *, later: bool = True) -> str:
    """``consolidated 7 memories into 3, archived 2, review #4 (12 more for a later run)``.

    ``later=False`` leaves out the changes left for a later run (a review's title says what it holds).
    """
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
    left = sum(1 for d in decisions if d.kind == "later") if later else 0
    return ", ".join(parts) + (f", review #{review}" if review is not None else "") + (
        f" ({left} more for a later run)" if left else "")



def decide(plan_: Plan, llm: LLM, *, max_chars: int, pair_threshold: float, ns: Namespace,
           head: Commit, progress: Progress | None = None,
           at_most: int | None = None) -> tuple[list[Decision], int]:
    """Ask the LLM about every cluster and grey-zone memory; returns decisions and LLM failures.

    Clusters are asked about the most used first. Once the LLM is unavailable the remaining
    questions are not asked: clusters count as vetoed and memories are kept, so a run without a
    model changes nothing it was unsure of. With ``at_most``, once that many changes lose no
    words the rest are not asked either (``later``): a review holds at most that many, and a
    later run proposes them.
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

    lossless = 0

    def full() -> bool:
        return at_most is not None and lossless >= at_most

    for cluster in sorted(plan_.clusters, key=lambda c: -plan_.used([m.id for m in c.members])):
        if full():
            decisions.append(Decision("later", tuple(m.id for m in cluster.members), LATER,
                                      before=tuple(m.text for m in cluster.members)))
            tick(cluster.members[0].title)
            continue
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
            lossless += int(decisions[-1].change is not None and not decisions[-1].lost)
        else:
            merge: MergeDecision = MergeDecision(None, f"not asked: {down}")
            if down is None:
                try:
                    merge = llm.merge(cluster.members, max_chars=max_chars, alike=cluster.alike)
                except Unavailable as exc:
                    down, failures = str(exc), failures + 1
                    merge = MergeDecision(None, f"not decided: {exc}")
            decisions.append(_merge_change(cluster, merge, plan_, paths, pair_threshold))
            lossless += int(decisions[-1].change is not None and not decisions[-1].lost)
        tick(cluster.members[0].title)
    for item in plan_.lifecycle:
        if item.action != "judge":
            decisions.append(_lifecycle_change(item, item.action, item.reason, plan_.at))
            lossless += int(decisions[-1].change is not None)
            continue
        if full():
            decisions.append(Decision("later", (item.memory.id,), LATER))
            tick(item.memory.title)
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
        lossless += int(decisions[-1].change is not None)
        tick(item.memory.title)
    return decisions, failures


def pick(decisions: Sequence[Decision], plan_: Plan, at_most: int) -> list[Decision]:
    """The decisions with at most ``at_most`` changes, the others left for a later run (``later``).

    Changes that lose no words come first, the most used memories first among them; then those
    that lose words. The changes come first in that order, then the decisions that change nothing.
    """
    changes = [d for d in decisions if d.change is not None]
    ranked = sorted(changes, key=lambda d: (bool(d.lost), -plan_.used(d.memory_ids)))
    kept = ranked[:at_most]
    later = [Decision("later", d.memory_ids, LATER, before=d.before) for d in ranked[at_most:]]
    return [*kept, *later, *(d for d in decisions if d.change is None)]
