"""Reading reviews: each commit with its reason, state and diffs; history rows; where a memory went."""

from __future__ import annotations

import builtins
import difflib
import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import replace

from ..errors import CommitNotFound, InvalidInput, MemoryNotFound
from ..repo import MAIN, Commit, CommitInfo, Store, parse_trailers
from .diffs import FileDiff, MemoryDiff, ReviewCommit, after_text, body, memory_diffs, with_result
from .listing import Filter, Listing, arrange
from .records import Review, ReviewRecords
from .staleness import changed_on_main, stale_note_about


class ReviewReading(ReviewRecords):
    """What a review proposes, commit by commit, and what a commit of main did."""

    def diff(self, namespace: str, number: int, *,
             detail: Collection[str] | None = None) -> builtins.list[ReviewCommit]:
        """Each commit of the review with its reason, its state, a diff per file and per memory.

        An open commit whose memories main has changed since (their text, type or state) shows
        as stale, though nobody tried to merge it yet. ``detail``: the commits to give their
        file and word diffs (None: all); the others say what they change but not how, which is
        what a table of contents needs and a fraction of the work.
        """
        review = self.get(namespace, number)
        store = self.namespaces.open(namespace).store
        commits = self.commits(namespace, review)
        changed = changed_on_main(store, review)
        out = []
        for commit in commits:
            item = analysed(store, commit, detail is None or str(commit.id) in detail)
            state = review.state_of(item.id)
            note = review.commit_notes.get(item.id)
            if state == "open" and review.status not in ("open", "stale"):
                state = "skipped"  # a record from before commits had states
            if state == "open":
                concerned = [*item.memory_ids, *(m.id for m in item.memories if m.before is not None)]
                note = stale_note_about(review, concerned, changed)
                state = "stale" if note else "open"
            out.append(replace(item, state=state, note=note))
        return out

    def browse(self, namespace: str, number: int, *, kind: str | None = None, state: str | None = None,
               lossy: str | None = None, page: str | None = None) -> Listing:
        """The review as a page shows it: every commit grouped by kind, filtered, one page in detail.

        The filter comes as a page's query gives it (strings; empty is no filter): ``kind`` of
        change, commit ``state``, ``lossy`` ("1": only changes that lose words) and ``page``.
        """
        chosen = Filter.of(kind, state, lossy, page)
        light = arrange(self.diff(namespace, number, detail=()), chosen)
        detailed = {c.id: c for c in self.diff(namespace, number, detail={c.id for c in light.page})
                    if c.id in {p.id for p in light.page}}
        return replace(light, page=tuple(detailed.get(c.id, c) for c in light.page))

    def pull_advice(self, namespace: str, review: Review, *, pusher: bool = False) -> str | None:
        """What the author of a pushed review does in their clone to be back in step with main, or None.

        While main has not moved since the push, approving lands the pushed commits as they are
        and ``git pull`` fast-forwards; once main moved, they are replayed with new ids and
        ``git pull --rebase`` drops the author's copies of them. ``pusher``: said to the one who
        pushed (the push's reply), not to a reviewer.
        """
        if review.kind != "push":
            return None
        store = self.namespaces.open(namespace).store
        main = store.head(MAIN)
        if review.status == "open":
            if store.is_ancestor(main, store.commit(review.head)):  # main is the base, or commits of it
                if pusher:
                    return ("main has not moved since your commits' base: once approved, `git pull` fast-forwards "
                            "to them as they are (while main does not move before the approval)")
                return ("main has not moved since this push: approving lands its commits as they are, and "
                        "`git pull` in the pusher's clone fast-forwards to them")
            if pusher:
                return ("main has moved since your commits' base: approving replays them onto main with new ids; "
                        "then `git pull --rebase` gets your clone back in step")
            return ("main has moved since this push was based: approving replays its commits onto main with new "
                    "ids, so the pusher runs `git pull --rebase` afterwards to get back in step")
        merged = [c for c, state in review.commit_states.items() if state == "merged"]
        if not merged:
            return None
        try:
            landed = all(store.is_ancestor(store.commit(c), main) for c in merged)
        except CommitNotFound:
            landed = False
        if landed:
            return "the pushed commits landed on main as they are: `git pull` fast-forwards a clone to them"
        return ("main had moved, so the pushed commits were replayed onto it with new ids: in the pusher's clone, "
                "`git pull --rebase` gets back in step")

    def commit_info(self, namespace: str, commit_id: str) -> CommitInfo:
        """One commit of the repository as front ends show it (its summary, actor, action, trailers)."""
        store = self.namespaces.open(namespace).store
        return store.info(store.commit(commit_id))

    def commit_diff(self, namespace: str, commit_id: str) -> builtins.list[MemoryDiff]:
        """What one commit of the repository did to each memory, word by word (a history row)."""
        store = self.namespaces.open(namespace).store
        return memory_diffs(store.file_changes(store.commit(commit_id)))

    def revert_preview(self, namespace: str, commit_id: str) -> builtins.list[MemoryDiff]:
        """What reverting a commit of main would do to each memory now; nothing is written to a ref.

        Raises what the revert itself would: :class:`~gitmem.errors.RevertConflict` when later
        changes are in the way, :class:`InvalidInput` for a commit that is not on main.
        """
        store = self.namespaces.open(namespace).store
        target, head = store.commit(commit_id), store.head(MAIN)
        if not store.is_ancestor(target, head):
            raise InvalidInput(f"commit {commit_id} is not on main; only main's commits can be reverted")
        return memory_diffs(store.revert_preview(target, head))

    def successor(self, namespace: str, memory_id: str) -> str | None:
        """The memory that replaced ``memory_id`` when a merge took it away, if one exists now."""
        with self.namespaces.using(namespace) as ns:  # the index's connection is the threads' to share
            ns.synced()
            for commit in ns.store.log():
                ids = parse_trailers(commit.message).get("Memory-Id", [])
                if memory_id in ids:
                    # The newest commit naming it: a merge names the memory it became too.
                    return next((i for i in ids if i != memory_id and ns.index.get(i) is not None), None)
        return None

    def missing(self, namespace: str, memory_id: str, exc: MemoryNotFound) -> MemoryNotFound:
        """``exc``, or an error that points to the memory that replaced ``memory_id``."""
        found = self.successor(namespace, memory_id)
        if found is None:
            return exc
        error = MemoryNotFound(f"memory {memory_id} was merged into {found}; see memory {found}")
        error.replaced_by = found
        return error

    def open_for(self, namespace: str, memory_id: str) -> builtins.list[int]:
        """The numbers of the open reviews with a commit about ``memory_id``."""
        found = []
        for review in self.list(namespace, status="open"):
            for commit in self.commits(namespace, review):
                if review.state_of(str(commit.id)) == "open" and \
                        memory_id in parse_trailers(commit.message).get("Memory-Id", []):
                    found.append(review.number)
                    break
        return found


# What a commit changes never changes: read each once per process (with and without its diffs).
_ANALYSED: OrderedDict[tuple[str, bool], ReviewCommit] = OrderedDict()
_ANALYSED_KEPT = 4096
_ANALYSED_LOCK = threading.Lock()


def analysed(store: Store, commit: Commit, detailed: bool) -> ReviewCommit:
    """``commit`` as an open review commit: its reason, what it does to each memory, its files' diffs."""
    key = (str(commit.id), detailed)
    with _ANALYSED_LOCK:
        found = _ANALYSED.get(key)
        if found is not None:
            _ANALYSED.move_to_end(key)
            return found
    info = store.info(commit)
    changes = store.file_changes(commit)
    files = []
    if detailed:
        for change in changes:
            unified = "".join(difflib.unified_diff(
                (change.old_text or "").splitlines(keepends=True),
                (change.new_text or "").splitlines(keepends=True),
                fromfile="/dev/null" if change.old_path is None else f"a/{change.old_path}",
                tofile="/dev/null" if change.new_path is None else f"b/{change.new_path}",
            ))
            files.append(FileDiff(change.path, change.status, change.old_text, change.new_text, unified))
    action = "edit" if info.action == "unknown" else info.action  # a commit made with git, no trailers
    item = ReviewCommit(info.id, info.summary, body(commit.message), action, info.memory_ids, files,
                        "open", None, memory_diffs(changes, words=detailed))
    item = with_result(item, after_text(commit.message))
    with _ANALYSED_LOCK:
        _ANALYSED[key] = item
        while len(_ANALYSED) > _ANALYSED_KEPT:
            _ANALYSED.popitem(last=False)
    return item
