"""When a review's commit can no longer merge as reviewed: what main changed since the review's base.

A commit is stale when main changed the text, type, path or state of a memory it is about since
the review was opened; uses, potency and confirmations do not count (approval carries them over).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .. import concepts
from ..errors import CommitNotFound
from ..repo import MAIN, Commit, FileChange, Store, parse_trailers
from .diffs import parsed, placeholder_id
from .records import Review


def changed_on_main(store: Store, review: Review) -> dict[str, str]:
    """Memories whose text, type or state main changed since the review's base: id -> what changed.

    Uses, potency and confirmations (``verified``) do not count: they leave what the review
    decided about intact, and approval carries them over.
    """
    main = store.head(MAIN)
    if str(main.id) == review.base:
        return {}
    try:
        base = store.commit(review.base)
    except CommitNotFound:
        return {"*": f"its base commit {review.base[:10]} is gone from the repository"}
    before: dict[str, concepts.Memory] = {}
    after: dict[str, concepts.Memory] = {}
    for change in store.file_changes(main, since=base):
        old, new = parsed(change.old_text, change.old_path), parsed(change.new_text, change.new_path)
        if old is not None:
            before[old.id] = old
        if new is not None:
            after[new.id] = new
    by_path = {m.path: m for m in after.values()}
    out = {}
    for memory_id, old in before.items():
        new = after.get(memory_id)
        if new is None and memory_id == placeholder_id(old.path):
            new = by_path.get(old.path)  # a pushed file main completed since: the same memory, with its id
        what = None
        if new is None:
            what = f"removed {old.path}"
        elif new.path != old.path:
            what = f"moved {old.path} to {new.path}"
        elif new.text != old.text:
            what = f"changed the text of {old.path}"
        elif new.type != old.type:
            what = f"changed the type of {old.path} to {new.type}"
        elif new.state != old.state:
            what = f"made {old.path} {new.state}"
        if what:
            out[memory_id] = what
    return out


def stale_note(review: Review, commit: Commit, changes: Sequence[FileChange],
               changed: dict[str, str]) -> str | None:
    """Why ``commit`` cannot be merged as reviewed any more, or None."""
    if not changed:
        return None
    concerned = set(parse_trailers(commit.message).get("Memory-Id", []))
    for change in changes:
        old = parsed(change.old_text, change.old_path)
        if old is not None:
            concerned.add(old.id)
    return stale_note_about(review, concerned, changed)


def stale_note_about(review: Review, concerned: Iterable[str], changed: dict[str, str]) -> str | None:
    """Why a commit about the memories ``concerned`` cannot be merged as reviewed any more, or None."""
    if not changed:
        return None
    if "*" in changed:
        return changed["*"]
    hits = [changed[i] for i in sorted(set(concerned)) if i in changed]
    if not hits:
        return None
    return f"main {'; '.join(hits)} after the review was opened; {advice(review)}"


def advice(review: Review) -> str:
    """What to do about a stale commit of ``review``."""
    if review.kind == "consolidation":
        return "run consolidation again to review the current state"
    return ("propose the change again on the memory as it is now (the memory's page, or "
            "`gitmem feedback ID amend`)")


def status_of(every: Sequence[Commit], states: dict[str, str]) -> str:
    """A review's status from its commits': open while any is open, then merged, stale or rejected."""
    seen = [states.get(str(c.id), "open") for c in every]
    if "open" in seen:
        return "open"
    if "merged" in seen:
        return "merged"
    return "stale" if "stale" in seen else "rejected"


def stale_reason(every: Sequence[Commit], states: dict[str, str], notes: dict[str, str]) -> str | None:
    """The stale commits with why, in one line for the record, or None."""
    stale = [f"{str(c.id)[:10]}: {notes.get(str(c.id), 'stale')}" for c in every
             if states.get(str(c.id)) == "stale"]
    return "; ".join(stale) or None


def stale_message(number: int, every: Sequence[Commit], stale: dict[str, str]) -> str:
    """``review #3: commit 1a2b3c4d5e ("merge 2 into ...") is stale: main changed ...``; nothing merged."""
    parts = []
    for commit in every:
        if str(commit.id) in stale:
            summary = commit.message.splitlines()[0] if commit.message else ""
            parts.append(f"commit {str(commit.id)[:10]} (\"{summary}\") is stale: {stale[str(commit.id)]}")
    return f"review #{number}: " + "; ".join(parts) + "; nothing was merged"

