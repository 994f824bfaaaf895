"""Review records, one JSON file per review on their own ref, ``refs/gitmem/reviews``.

Every update is a compare-and-swap commit there, so reviews travel with the repository (``git
fetch 'refs/gitmem/*:refs/gitmem/*'``) without showing up in a plain clone of main.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from .. import concepts, notify
from ..concepts import now
from ..errors import Conflict, InvalidInput, RefRaceLost, ReviewNotFound
from ..repo import Change, Commit, Guard, Namespaces, Store
from ..settings import Settings
from ..wording import plural

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
    # Per commit of the branch (full id): merged, skipped or stale; a commit not named is open.
    commit_states: dict[str, str] = field(default_factory=dict)
    # Why a commit is stale, by commit id.
    commit_notes: dict[str, str] = field(default_factory=dict)
    # Merges a reviewer turned down: {"ids": [...], "texts": {id: digest}} (see RejectedMerge).
    rejected: list[dict[str, Any]] = field(default_factory=list)
    commit_count: int = 0  # how many commits the branch holds (0 in records from before it was kept)

    def state_of(self, commit: str) -> str:
        """What became of one commit of the review: open, merged, skipped or stale."""
        return self.commit_states.get(commit, "open")

    @property
    def version(self) -> str:
        """What the review's decisions look like now, as 12 hex digits.

        A page, a Slack card or an API caller sends back the version it showed; a decision made
        on another version (someone decided meanwhile, a push moved the branch) is refused, so
        a selection made on an outdated page never decides anything.
        """
        seen = [self.head, self.base, self.status, sorted(self.commit_states.items())]
        return hashlib.sha256(json.dumps(seen).encode()).hexdigest()[:12]

    @property
    def merged_count(self) -> int:
        """How many of the review's commits were merged."""
        return sum(1 for v in self.commit_states.values() if v == "merged")

    @property
    def label(self) -> str:
        """The status as a person reads it: ``partly merged (1 of 62)`` when not every commit merged."""
        total = max(self.commit_count, len(self.commit_states))
        merged = self.merged_count
        if self.status == "merged" and merged < total:
            return f"partly merged ({merged} of {total})"
        if self.status == "open" and merged:
            return f"open ({merged} of {total} merged)"
        return self.status

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (times as ISO 8601 strings)."""
        return {
            "number": self.number, "namespace": self.namespace, "title": self.title,
            "status": self.status, "kind": self.kind, "branch": self.branch, "base": self.base,
            "head": self.head, "author": self.author, "created": concepts.iso(self.created),
            "updated": concepts.iso(self.updated), "description": self.description,
            "comments": [dict(c) for c in self.comments], "stale_reason": self.stale_reason,
            "merged_commit": self.merged_commit, "decided_by": self.decided_by,
            "approved_commits": list(self.approved_commits), "commit_states": dict(self.commit_states),
            "commit_notes": dict(self.commit_notes), "rejected": [dict(r) for r in self.rejected],
            "commit_count": self.commit_count, "merged_count": self.merged_count, "label": self.label,
            "version": self.version,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Review:
        """Read a record written by :meth:`to_dict`, ignoring keys this version does not know."""
        values = dict(data)
        for key in ("created", "updated"):
            values[key] = concepts.parse_time(values[key]) or now()
        values["comments"] = [dict(c) for c in values.get("comments") or []]
        values["approved_commits"] = list(values.get("approved_commits") or [])
        values["commit_states"] = dict(values.get("commit_states") or {})
        values["commit_notes"] = dict(values.get("commit_notes") or {})
        values["rejected"] = [dict(r) for r in values.get("rejected") or []]
        if values.get("status") == "merged" and not values["commit_states"]:
            # Written before commits had states: what was approved is merged, the rest skipped.
            values["commit_states"] = {c: "merged" for c in values["approved_commits"]}
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in values.items() if k in known})


class ReviewRecords:
    """The review records of every namespace: create, read, update, and announce them."""

    def __init__(self, namespaces: Namespaces, settings: Settings) -> None:
        self.namespaces = namespaces
        self.settings = settings
        #: Review kinds whose approval is not a merge, by kind: ``decide(namespace, review, *,
        #: actor, admin) -> Review``. The facade registers the purge of a history here.
        self.deciders: dict[str, Callable[..., Review]] = {}
        #: What else a rejection of a review of some kind undoes, by kind: ``undo(namespace, review,
        #: *, actor)``. Corrections register here: a rejected supersede keeps both memories.
        self.on_rejected: dict[str, Callable[..., object]] = {}

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

    def remap(self, namespace: str, commits: Mapping[str, str], actor: str) -> int:
        """Point every record at the commits a rewrite of the history made of its own; how many changed.

        After a purge every commit from the memory's first one on has a new id: each record's
        base, head, merged commit and per-commit states follow, in one commit.
        """
        store = self._store(namespace, create=False)
        if store.head_id(REVIEWS_REF) is None or not commits:
            return 0
        changed: list[int] = []

        def moved(value: str) -> str:
            return commits.get(value, value)

        def plan(head: Commit) -> Change | None:
            files: dict[str, bytes | None] = {}
            changed.clear()
            for review in self._read(store, head, namespace):
                new = replace(review, base=moved(review.base), head=moved(review.head),
                              merged_commit=None if review.merged_commit is None else moved(review.merged_commit),
                              approved_commits=[moved(c) for c in review.approved_commits],
                              commit_states={moved(c): v for c, v in review.commit_states.items()},
                              commit_notes={moved(c): v for c, v in review.commit_notes.items()})
                if new != review:
                    changed.append(review.number)
                    files[f"reviews/{review.number}.json"] = (
                        json.dumps(new.to_dict(), ensure_ascii=False, indent=1).encode() + b"\n")
            if not files:
                return None
            return Change(files, f"{plural(len(files), 'review')} follow the rewritten history", "review", (), None,
                      actor)

        store.transact(plan, REVIEWS_REF)
        return len(changed)

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
        number = review_number(number)
        store = self._store(namespace, create=False)
        head = store.head_id(REVIEWS_REF)
        data = None if head is None else store.read(f"reviews/{number}.json", store.commit(head))
        if data is None:
            raise ReviewNotFound(f"no review #{number} in namespace {namespace!r}; see `gitmem review list`")
        return replace(Review.from_dict(json.loads(data)), namespace=namespace)

    def commits(self, namespace: str, review: Review) -> builtins.list[Commit]:
        """The review's commits, oldest first."""
        return self.namespaces.open(namespace).store.between(review.base, review.head)

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

        count = len(store.between(base, head))

        def make(number: int) -> Review:
            return Review(number, namespace, title, "open", kind, branch, base, head, author, at, at,
                          description, commit_count=count)

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

    def repoint(self, namespace: str, number: int, *, head: str, base: str, actor: str) -> Review:
        """Point an open review at its branch's new head (a push added commits to it)."""
        number = review_number(number)
        store = self.namespaces.open(namespace).store
        count = len(store.between(base, head))

        def update(review: Review) -> Review:
            if review.status != "open":
                raise Conflict(f"review #{number} is already {review.status}")
            return replace(review, head=head, base=base, commit_count=count, updated=now())

        review = self._save(namespace, number, update, f"{actor} pushed more commits", actor)
        self._publish(namespace, review)
        return review

    def comment(self, namespace: str, number: int, *, actor: str, text: str) -> Review:
        """Add a comment to a review's thread (any status)."""
        number = review_number(number)
        actor = actor_name(actor)
        text = concepts.clean_text(text, limit=self.settings.max_text_chars, what="comment")
        entry = {"actor": actor, "at": concepts.iso(now()), "text": text}

        def update(review: Review) -> Review:
            return replace(review, comments=[*review.comments, entry], updated=now())

        return self._save(namespace, number, update, f"comment by {actor}", actor)
    def _publish(self, namespace: str, review: Review) -> None:
        """Say that a review was decided (``review.closed``) or decided in part (``review.updated``)."""
        event = "review.updated" if review.status == "open" else "review.closed"
        notify.publish(self.settings, {"event": event, "namespace": namespace, "review": review.to_dict()})



def review_number(number: Any) -> int:
    """A review number from what a caller typed (``3``, ``"#3"``); anything else is refused."""
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


def actor_name(actor: Any) -> str:
    """Who is acting, cleaned; a missing or blank name is refused."""
    if not isinstance(actor, str) or not actor.strip():
        raise InvalidInput("say who is acting: an actor name is required")
    return concepts.clean_text(actor, limit=200, what="actor")

