"""Pull-request-like reviews of branches, kept in the memory repository itself.

A review names a branch of proposed commits (a consolidation run, an amendment from someone who
may not change main directly), the main commit it started from, and a comment thread. Records
live on their own ref, ``refs/gitmem/reviews``, as ``reviews/<number>.json``; every update is a
compare-and-swap commit there, so reviews travel with the repository (``git fetch
'refs/gitmem/*:refs/gitmem/*'``) without showing up in a plain clone of main.

Approving replays the review's commits (all, or the ones picked) onto main, one commit each with
its message and trailers, and moves main with compare-and-swap. If main changed the same memories
since the review was opened, nothing is merged: the review is marked stale with the reason.
Closed reviews keep their commits reachable under ``refs/gitmem/closed/<number>`` and leave
``refs/heads``.
"""

from __future__ import annotations

import builtins
import difflib
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from . import concepts, notify
from .concepts import now
from .errors import (
    CommitNotFound,
    Conflict,
    InvalidInput,
    MergeConflict,
    RefLocked,
    RefRaceLost,
    ReviewNotFound,
    StaleReview,
)
from .repo import MAIN, Change, Commit, Guard, Namespaces, Store, is_memory_path, parse_trailers
from .settings import Settings

log = logging.getLogger(__name__)

REVIEWS_REF = "refs/gitmem/reviews"
CLOSED_PREFIX = "refs/gitmem/closed/"
STATUSES = ("open", "merged", "rejected", "stale")
_README = b"""# gitmem reviews

One JSON file per review in reviews/. Written by gitmem; every change is one commit.
"""


@dataclass(frozen=True)
class Review:
    """A review of a branch: what is proposed, from which base, and what became of it."""

    number: int
    namespace: str
    title: str
    status: str
    kind: str
    branch: str
    base: str
    head: str
    author: str
    created: datetime
    updated: datetime
    description: str = ""
    comments: list[dict[str, str]] = field(default_factory=list)
    stale_reason: str | None = None
    merged_commit: str | None = None
    decided_by: str | None = None
    approved_commits: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (times as ISO 8601 strings)."""
        return {
            "number": self.number, "namespace": self.namespace, "title": self.title,
            "status": self.status, "kind": self.kind, "branch": self.branch, "base": self.base,
            "head": self.head, "author": self.author, "created": concepts.iso(self.created),
            "updated": concepts.iso(self.updated), "description": self.description,
            "comments": [dict(c) for c in self.comments], "stale_reason": self.stale_reason,
            "merged_commit": self.merged_commit, "decided_by": self.decided_by,
            "approved_commits": list(self.approved_commits),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Review:
        """Read a record written by :meth:`to_dict`, ignoring keys this version does not know."""
        values = dict(data)
        for key in ("created", "updated"):
            values[key] = concepts.parse_time(values[key]) or now()
        values["comments"] = [dict(c) for c in values.get("comments") or []]
        values["approved_commits"] = list(values.get("approved_commits") or [])
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in values.items() if k in known})


@dataclass(frozen=True)
class FileDiff:
    """One file changed by a review commit."""

    path: str
    status: str  # added, modified, deleted
    old_text: str | None
    new_text: str | None
    unified: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with both texts and the unified diff."""
        return {"path": self.path, "status": self.status, "old_text": self.old_text,
                "new_text": self.new_text, "unified": self.unified}


@dataclass(frozen=True)
class ReviewCommit:
    """One commit of a review: a decision with its reason and the files it changes."""

    id: str
    summary: str
    reason: str
    action: str
    memory_ids: tuple[str, ...]
    files: list[FileDiff]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with each file's diff."""
        return {"id": self.id, "summary": self.summary, "reason": self.reason, "action": self.action,
                "memory_ids": list(self.memory_ids), "files": [f.to_dict() for f in self.files]}


def _body(message: str) -> str:
    """The message between the summary line and the trailers."""
    paragraphs = [p for p in message.strip().split("\n\n") if p.strip()]
    if len(paragraphs) > 1 and parse_trailers(message):
        paragraphs = paragraphs[:-1]
    return "\n\n".join(paragraphs[1:]).strip()


class Reviews:
    """List, show, open, approve, reject and comment on reviews of any namespace."""

    def __init__(self, namespaces: Namespaces, settings: Settings) -> None:
        self.namespaces = namespaces
        self.settings = settings

    # --- the record store ------------------------------------------------------------------------

    def _store(self, namespace: str, *, create: bool = True) -> Store:
        store = self.namespaces.open(namespace).store
        if create and store.head_id(REVIEWS_REF) is None:
            oid = store.write_commit(None, Change({"README.md": _README}, "Initialize reviews", "init"))
            try:
                store.move_ref(REVIEWS_REF, oid, None, "init reviews")
            except RefRaceLost:
                pass  # another process created it first
        return store

    def _read(self, store: Store, commit: Commit, namespace: str) -> builtins.list[Review]:
        reviews = [replace(Review.from_dict(json.loads(data)), namespace=namespace)
                   for path, data in store.files(commit, "reviews") if path.endswith(".json")]
        return sorted(reviews, key=lambda r: r.number)

    def _save(self, namespace: str, number: int | None, update: Callable[[Any], Review], summary: str,
              actor: str, guard: Guard | None = None) -> Review:
        """Create (``number`` None) or update a record with a compare-and-swap commit.

        ``guard`` runs right before the record is published (see ``Store.transact``).
        """
        store = self._store(namespace)
        saved: dict[str, Review] = {}

        def plan(head: Commit) -> Change:
            if number is None:
                existing = self._read(store, head, namespace)
                review: Review = update(max((r.number for r in existing), default=0) + 1)
            else:
                data = store.read(f"reviews/{number}.json", head)
                if data is None:
                    raise ReviewNotFound(f"no review #{number} in namespace {namespace!r}; see "
                                         "`gitmem review list`")
                review = update(replace(Review.from_dict(json.loads(data)), namespace=namespace))
            saved["review"] = review
            data = json.dumps(review.to_dict(), ensure_ascii=False, indent=1).encode() + b"\n"
            return Change({f"reviews/{review.number}.json": data}, f"review #{review.number}: {summary}",
                          "review", (), None, actor)

        store.transact(plan, REVIEWS_REF, guard=guard)
        return saved["review"]

    # --- reading ---------------------------------------------------------------------------------

    def list(self, namespace: str, *, status: str | None = None) -> builtins.list[Review]:
        """Reviews oldest first, optionally only those with one status."""
        if status is not None and status not in STATUSES:
            raise InvalidInput(f"unknown review status {status!r}; use one of: {', '.join(STATUSES)}")
        store = self._store(namespace, create=False)
        if store.head_id(REVIEWS_REF) is None:
            return []  # no review was ever opened; reading creates nothing
        reviews = self._read(store, store.head(REVIEWS_REF), namespace)
        return [r for r in reviews if status is None or r.status == status]

    def get(self, namespace: str, number: int) -> Review:
        """One review by number."""
        number = _number(number)
        store = self._store(namespace, create=False)
        head = store.head_id(REVIEWS_REF)
        data = None if head is None else store.read(f"reviews/{number}.json", store.commit(head))
        if data is None:
            raise ReviewNotFound(f"no review #{number} in namespace {namespace!r}; see `gitmem review list`")
        return replace(Review.from_dict(json.loads(data)), namespace=namespace)

    def commits(self, namespace: str, review: Review) -> builtins.list[Commit]:
        """The review's commits, oldest first."""
        return self.namespaces.open(namespace).store.between(review.base, review.head)

    def diff(self, namespace: str, number: int) -> builtins.list[ReviewCommit]:
        """Each commit of the review with its reason and a unified diff per file."""
        review = self.get(namespace, number)
        store = self.namespaces.open(namespace).store
        out = []
        for commit in self.commits(namespace, review):
            info = store.info(commit)
            files = []
            for change in store.file_changes(commit):
                unified = "".join(difflib.unified_diff(
                    (change.old_text or "").splitlines(keepends=True),
                    (change.new_text or "").splitlines(keepends=True),
                    fromfile="/dev/null" if change.old_path is None else f"a/{change.old_path}",
                    tofile="/dev/null" if change.new_path is None else f"b/{change.new_path}",
                ))
                files.append(FileDiff(change.path, change.status, change.old_text, change.new_text, unified))
            out.append(ReviewCommit(info.id, info.summary, _body(commit.message), info.action,
                                    info.memory_ids, files))
        return out

    # --- writing ---------------------------------------------------------------------------------

    def open(self, namespace: str, *, branch: str, base: str, title: str, author: str, kind: str,
             description: str = "", guard: Guard | None = None) -> Review:
        """Record a new open review of ``branch`` (a full ref name) against main at ``base``.

        ``guard`` runs right before the record is published and may raise to stop it.
        """
        store = self.namespaces.open(namespace).store
        head = store.head_id(branch)
        if head is None:
            raise InvalidInput(f"branch {branch} does not exist")
        store.commit(base)
        title = concepts.clean_title(title, limit=200) if title else f"{kind} review"
        author = concepts.clean_text(author, limit=200, what="author")
        kind = concepts.clean_text(kind, limit=40, what="kind")
        at = now()

        def make(number: int) -> Review:
            return Review(number, namespace, title, "open", kind, branch, base, head, author, at, at,
                          description)

        review = self._save(namespace, None, make, f"open {title}", author, guard)
        if kind != "consolidation":  # a consolidation run announces its own review, with its merges
            notify.publish(self.settings, {"event": "review.opened", "namespace": namespace,
                                          "review": review.to_dict(),
                                          "summary": f"{author} proposes: {title}, review #{review.number}",
                                          "merges": []})
        return review

    def propose(self, namespace: str, changes: Sequence[Change], *, title: str, author: str, kind: str,
                description: str = "", branch: str | None = None) -> Review:
        """Write changes as commits on a new branch off main and open a review of them.

        The branch is ``branch`` (a full ref name) or ``refs/heads/review/<kind>-<time>``; a
        name already taken gets a numbered suffix.
        """
        if not changes:
            raise Conflict("there is nothing to review")
        ns = self.namespaces.open(namespace)
        with ns.lock:
            base = ns.store.head()
            ref = branch or f"refs/heads/review/{kind}-{now().strftime('%Y%m%dT%H%M%S')}"
            ref = ns.store.write_branch(base, list(changes), ref, f"open review: {title}")
        return self.open(namespace, branch=ref, base=str(base.id), title=title, author=author, kind=kind,
                         description=description)

    def comment(self, namespace: str, number: int, *, actor: str, text: str) -> Review:
        """Add a comment to a review's thread (any status)."""
        number = _number(number)
        actor = _actor(actor)
        text = concepts.clean_text(text, limit=self.settings.max_text_chars, what="comment")
        entry = {"actor": actor, "at": concepts.iso(now()), "text": text}

        def update(review: Review) -> Review:
            return replace(review, comments=[*review.comments, entry], updated=now())

        return self._save(namespace, number, update, f"comment by {actor}", actor)

    def reject(self, namespace: str, number: int, *, actor: str, reason: str = "") -> Review:
        """Close a review without merging; main is not touched."""
        number = _number(number)
        actor = _actor(actor)
        reason = reason.strip()

        def update(review: Review) -> Review:
            if review.status not in ("open", "stale"):
                raise Conflict(f"review #{number} is already {review.status}")
            comments = review.comments
            if reason:
                comments = [*comments, {"actor": actor, "at": concepts.iso(now()), "text": reason}]
            return replace(review, status="rejected", decided_by=actor, updated=now(), comments=comments)

        review = self._save(namespace, number, update, f"rejected by {actor}", actor)
        self._retire_branch(namespace, review)
        self._publish(namespace, review)
        return review

    def approve(self, namespace: str, number: int, *, actor: str,
                commits: builtins.list[str] | None = None) -> Review:
        """Merge the review's commits (or only ``commits``) into main, one commit each.

        Raises :class:`StaleReview` (and marks the review stale) when main changed the same
        memories since the review's base, or a commit no longer applies; main is then untouched.
        """
        number = _number(number)
        actor = _actor(actor)
        ns = self.namespaces.open(namespace)
        store = ns.store
        with ns.lock:
            review = self.get(namespace, number)
            if review.status == "stale":
                raise StaleReview(f"review #{number} is stale: {review.stale_reason}")
            if review.status != "open":
                raise Conflict(f"review #{number} is already {review.status}")
            every = self.commits(namespace, review)
            selected = self._select(every, commits, number)
            for _ in range(50):
                main = store.head(MAIN)
                reason = self._staleness(namespace, review, selected, main)
                tip = main
                if reason is None:
                    try:
                        tip = store.replay(selected, main)
                    except MergeConflict as exc:
                        reason = f"{exc}; run consolidation again"
                if reason is not None:
                    stale = self._mark_stale(namespace, number, reason, actor)
                    self._publish(namespace, stale)
                    raise StaleReview(f"review #{number} is stale: {reason}")
                try:
                    store.move_ref(MAIN, tip.id, str(main.id), f"approve review #{number} by {actor}")
                except RefLocked:
                    raise  # move_ref waited already and names the lock file
                except RefRaceLost:
                    continue  # someone wrote meanwhile: check again against the new main
                break
            else:
                raise RefRaceLost("main kept moving while approving; try again")
            approved = [str(c.id) for c in selected]

            def update(current: Review) -> Review:
                # Main now holds the commits, so the record says merged whatever a racing
                # approver in another process wrote meanwhile.
                return replace(current, status="merged", merged_commit=str(tip.id), decided_by=actor,
                               approved_commits=approved, stale_reason=None, updated=now())

            note = "" if len(selected) == len(every) else f" ({len(selected)} of {len(every)} commits)"
            review = self._save(namespace, number, update, f"approved by {actor}{note}", actor)
            ns.synced()
        self._retire_branch(namespace, review)
        self._publish(namespace, review)
        return review

    def prune_orphans(self, namespace: str, guard: Guard | None = None) -> builtins.list[str]:
        """Delete consolidation branches that have no review (left by a run killed mid-write).

        Only a run holding the namespace's consolidation lock may call this (another run's
        branch has no review until it finishes); ``guard`` checks the lock before each deletion.
        """
        store = self.namespaces.open(namespace).store
        known = {r.branch for r in self.list(namespace)}
        gone = [ref for ref in store.refs(f"refs/heads/consolidate/{namespace}/") if ref not in known]
        for ref in gone:
            if guard is not None:
                guard()
            store.delete_ref(ref)
        return gone

    # --- helpers ---------------------------------------------------------------------------------

    def _select(self, every: builtins.list[Commit], picked: builtins.list[str] | None,
                number: int) -> builtins.list[Commit]:
        if picked is None:
            if not every:
                raise Conflict(f"review #{number} has no commits to merge")
            return every
        if not picked:
            raise InvalidInput("name at least one commit to approve, or approve them all")
        chosen: set[str] = set()
        for sha in picked:
            sha = sha.strip().lower() if isinstance(sha, str) else ""
            if len(sha) < 4 or any(ch not in "0123456789abcdef" for ch in sha):
                raise InvalidInput(f"{sha!r} is not a commit id (4 to 40 hex characters)")
            matches = [str(c.id) for c in every if str(c.id).startswith(sha)]
            if not matches:
                raise InvalidInput(f"commit {sha} is not part of review #{number}; see "
                                   f"`gitmem review show {number}`")
            if len(matches) > 1:
                raise InvalidInput(f"commit id {sha} is ambiguous in review #{number}; give more digits")
            chosen.add(matches[0])
        return [c for c in every if str(c.id) in chosen]

    def _staleness(self, namespace: str, review: Review, selected: builtins.list[Commit],
                   main: Commit) -> str | None:
        """Why the selected commits may not be merged onto ``main`` any more, or None."""
        if str(main.id) == review.base:
            return None
        store = self.namespaces.open(namespace).store
        try:
            base = store.commit(review.base)
        except CommitNotFound:
            return f"its base commit {review.base[:10]} is gone from the repository"
        touched_paths: set[str] = set()
        touched_ids: set[str] = set()
        for commit in selected:
            for old, new in store.changed_paths(commit.parents[0], commit):
                touched_paths.update(p for p in (old, new) if p and is_memory_path(p))
            touched_ids.update(parse_trailers(commit.message).get("Memory-Id", []))
        changed_paths: set[str] = set()
        for old, new in store.changed_paths(base, main):
            changed_paths.update(p for p in (old, new) if p)
        changed_ids: set[str] = set()
        for commit in store.between(str(base.id), str(main.id)):
            changed_ids.update(parse_trailers(commit.message).get("Memory-Id", []))
        paths = sorted(touched_paths & changed_paths)
        ids = sorted(touched_ids & changed_ids)
        if not paths and not ids:
            return None
        what = ", ".join(paths) if paths else "memories " + ", ".join(ids)
        return (f"main changed {what} after the review was opened at {review.base[:10]}; "
                "run consolidation again to review the current state")

    def _mark_stale(self, namespace: str, number: int, reason: str, actor: str) -> Review:
        def update(review: Review) -> Review:
            if review.status != "open":  # e.g. merged by a racing approver in another process
                raise Conflict(f"review #{number} is already {review.status}")
            return replace(review, status="stale", stale_reason=reason, updated=now())

        return self._save(namespace, number, update, "stale", actor)

    def _retire_branch(self, namespace: str, review: Review) -> None:
        """Keep a closed review's commits reachable off ``refs/heads`` and drop its branch."""
        store = self.namespaces.open(namespace).store
        closed = f"{CLOSED_PREFIX}{review.number}"
        if store.head_id(closed) is None:
            try:
                store.move_ref(closed, review.head, None, f"close review #{review.number}")
            except RefRaceLost:
                pass
        if review.branch.startswith("refs/heads/") and store.head_id(review.branch) == review.head:
            store.delete_ref(review.branch)

    def _publish(self, namespace: str, review: Review) -> None:
        notify.publish(self.settings, {"event": "review.closed", "namespace": namespace,
                                      "review": review.to_dict()})


def _number(number: Any) -> int:
    if isinstance(number, bool) or not isinstance(number, int | str):
        raise InvalidInput(f"{number!r} is not a review number")
    if isinstance(number, str):
        text = number.strip().lstrip("#")
        # ASCII digits only: int() also takes other scripts' digits ("٣" is 3), signs and "1_0".
        if not re.fullmatch(r"[0-9]+", text):
            raise InvalidInput(f"{number!r} is not a review number")
        value = int(text)
    else:
        value = number
    if value < 1:
        raise InvalidInput(f"{number!r} is not a review number (they start at 1)")
    return value


def _actor(actor: Any) -> str:
    if not isinstance(actor, str) or not actor.strip():
        raise InvalidInput("say who is acting: an actor name is required")
    return concepts.clean_text(actor, limit=200, what="actor")
