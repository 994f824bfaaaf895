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
import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from dataclasses import fields as dataclass_fields
from datetime import datetime
from typing import Any

from . import concepts, notify, textdiff
from .concepts import now
from .errors import (
    CommitNotFound,
    Conflict,
    InvalidInput,
    MalformedConcept,
    MemoryNotFound,
    MergeConflict,
    RefLocked,
    RefRaceLost,
    ReviewNotFound,
    StaleReview,
)
from .repo import MAIN, Change, Commit, CommitInfo, FileChange, Guard, Namespaces, Store, is_memory_path, parse_trailers
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
            "commit_count": self.commit_count,
            "merged_count": sum(1 for v in self.commit_states.values() if v == "merged"),
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


# Frontmatter fields a reader need not see change: they follow from the text or the moment.
_QUIET_FIELDS = ("text", "description", "updated", "path")


@dataclass(frozen=True)
class MemoryDiff:
    """One memory as a review commit changes it: its text word by word, its other fields in a line."""

    id: str
    title: str
    type: str
    change: str  # added, removed, changed
    before: str | None
    after: str | None
    text: list[textdiff.Piece]  # before -> after, word by word (changed memories only)
    fields: list[tuple[str, Any, Any]]  # (name, before, after) of the other fields that changed
    lost: list[str] = field(default_factory=list)  # a merged-away memory's words the result lacks
    author: str | None = None

    @property
    def text_changed(self) -> bool:
        """Whether the memory's text changed (not only its fields)."""
        return textdiff.changed(self.text)

    @property
    def marked(self) -> list[textdiff.Piece]:
        """The text before, with the words the merge loses marked ``del``."""
        return textdiff.marked(self.before or "", self.lost)

    def fields_line(self) -> str:
        """The changed fields in one line: ``state active → archived; tags +deploy``."""
        return "; ".join(_field_change(name, old, new) for name, old, new in self.fields)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"id": self.id, "title": self.title, "type": self.type, "change": self.change,
                "before": self.before, "after": self.after, "text_diff": [p.to_dict() for p in self.text],
                "fields": [{"name": n, "before": _jsonable(a), "after": _jsonable(b)} for n, a, b in self.fields],
                "lost_words": list(self.lost), "author": self.author}


@dataclass(frozen=True)
class ReviewCommit:
    """One commit of a review: a decision with its reason, its state and what it changes."""

    id: str
    summary: str
    reason: str
    action: str
    memory_ids: tuple[str, ...]
    files: list[FileDiff]
    state: str = "open"  # open, merged, skipped, stale
    note: str | None = None  # why it is stale
    memories: list[MemoryDiff] = field(default_factory=list)
    result: str | None = None  # for a merge: the id of the memory the others become

    @property
    def merge(self) -> bool:
        """Whether several memories become one."""
        return self.result is not None and sum(1 for m in self.memories if m.change == "removed") >= 1

    @property
    def members(self) -> list[MemoryDiff]:
        """The memories a merge folds into its result."""
        return [m for m in self.memories if m.id != self.result and m.change == "removed"]

    @property
    def kept(self) -> MemoryDiff | None:
        """The memory a merge leaves (None when it is not in this commit's files)."""
        return next((m for m in self.memories if m.id == self.result), None)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with each file's diff, each memory's word diff and the commit's state."""
        return {"id": self.id, "summary": self.summary, "reason": self.reason, "action": self.action,
                "memory_ids": list(self.memory_ids), "state": self.state, "stale_reason": self.note,
                "result": self.result, "memories": [m.to_dict() for m in self.memories],
                "lost_words": sorted({w for m in self.members for w in m.lost}),
                "files": [f.to_dict() for f in self.files]}


@dataclass(frozen=True)
class RejectedMerge:
    """A merge a reviewer turned down: the members, each with a digest of its text then."""

    ids: frozenset[str]
    texts: dict[str, str]

    def matches(self, members: Sequence[concepts.Memory]) -> bool:
        """Whether ``members`` are the same memories, none changed since, so proposing it again is moot."""
        return frozenset(m.id for m in members) == self.ids and all(
            self.texts.get(m.id) == _digest(m.text) for m in members)


def summarise(commits: Sequence[ReviewCommit]) -> str:
    """What a review changes: ``12 memories into 5 (convention 9, decision 3); 2 archived``."""
    merges = [c for c in commits if c.merge]
    parts = []
    if merges:
        # A result that is not new (a pair's survivor, a user's statement) was one of the memories too.
        folded = sum(len(c.members) + (0 if c.kept is not None and c.kept.change == "added" else 1) for c in merges)
        kept = len({c.result for c in merges})
        types = Counter(m.type for c in merges for m in c.members)
        by_type = ", ".join(f"{t} {n}" for t, n in types.most_common())
        parts.append(f"{folded} memories into {kept} ({by_type})")
    others = Counter(c.action for c in commits if not c.merge)
    parts += [f"{n} {action}" for action, n in sorted(others.items())]
    return "; ".join(parts) or "no changes"


def _digest(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:16]


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return concepts.iso(value)
    if isinstance(value, tuple):
        # A techchoice's options and choices are records; everything else a list of strings.
        return [v.to_dict() if isinstance(v, concepts.Option | concepts.Choice) else v for v in value]
    return value


def _item(value: Any) -> str:
    """One element of a list field, for people: an option or a choice by its name, with the reason."""
    if isinstance(value, concepts.Option):
        return value.name
    if isinstance(value, concepts.Choice):
        return f"{value.option}" + (f" ({value.reason})" if value.reason else "")
    return str(value)


def _field_change(name: str, old: Any, new: Any) -> str:
    if isinstance(old, tuple) and isinstance(new, tuple):
        added = [f"+{_item(v)}" for v in new if v not in old]
        gone = [f"-{_item(v)}" for v in old if v not in new]
        return f"{name} {' '.join(added + gone)}"
    if isinstance(old, float) or isinstance(new, float):
        return f"{name} {old if old is None else round(old, 2)} → {new if new is None else round(new, 2)}"
    def show(v: Any) -> str:
        v = _jsonable(v)
        return "—" if v in (None, "") else str(v)
    return f"{name} {show(old)} → {show(new)}"


def _parsed(text: str | None, path: str | None) -> concepts.Memory | None:
    if text is None or path is None or not is_memory_path(path):
        return None
    try:
        return concepts.parse(text.encode(), path)
    except MalformedConcept:
        return None


def memory_diffs(changes: Sequence[FileChange]) -> list[MemoryDiff]:
    """The memories a list of file changes adds, removes or changes, with word and field diffs."""
    before: dict[str, concepts.Memory] = {}
    after: dict[str, concepts.Memory] = {}
    order: list[str] = []
    for change in changes:
        for side, text, path in ((before, change.old_text, change.old_path), (after, change.new_text, change.new_path)):
            memory = _parsed(text, path)
            if memory is not None:
                side[memory.id] = memory
                if memory.id not in order:
                    order.append(memory.id)
    out = []
    for memory_id in order:
        old, new = before.get(memory_id), after.get(memory_id)
        shown = new or old
        assert shown is not None
        if old is None or new is None:
            out.append(MemoryDiff(memory_id, shown.title, shown.type, "added" if old is None else "removed",
                                  None if old is None else old.text, None if new is None else new.text, [], [],
                                  author=shown.author))
            continue
        quiet = set(_QUIET_FIELDS)
        if old.title == concepts.title_from(old.text) and new.title == concepts.title_from(new.text):
            quiet.add("title")  # a title taken from the text changes with it: the text diff shows it
        fields = [(f.name, getattr(old, f.name), getattr(new, f.name)) for f in dataclass_fields(old)
                  if f.name not in quiet and getattr(old, f.name) != getattr(new, f.name)]
        out.append(MemoryDiff(memory_id, new.title, new.type, "changed", old.text, new.text,
                              textdiff.word_diff(old.text, new.text), fields, author=new.author))
    return out


def _with_result(commit: ReviewCommit, anchor_text: str | None) -> ReviewCommit:
    """Name the memory a merge keeps and the words each merged-away memory loses."""
    removed = [m for m in commit.memories if m.change == "removed"]
    if commit.action != "consolidate" or not removed:
        return commit
    staying = [m for m in commit.memories if m.change != "removed"]
    if staying:
        result_id, result_text = staying[0].id, staying[0].after or ""
    elif anchor_text is not None:
        kept_ids = [i for i in commit.memory_ids if i not in {m.id for m in removed}]
        if not kept_ids:
            return commit
        result_id, result_text = kept_ids[0], anchor_text
    else:
        return commit
    memories = [replace(m, lost=textdiff.lost_words(m.before or "", result_text)) if m.change == "removed" else m
                for m in commit.memories]
    return replace(commit, memories=memories, result=result_id)


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
        """Each commit of the review with its reason, its state, a diff per file and per memory.

        An open commit whose memories main has changed since (their text, type or state) shows
        as stale, though nobody tried to merge it yet.
        """
        review = self.get(namespace, number)
        store = self.namespaces.open(namespace).store
        commits = self.commits(namespace, review)
        changed = self._changed_on_main(store, review)
        out = []
        for commit in commits:
            info = store.info(commit)
            changes = store.file_changes(commit)
            files = []
            for change in changes:
                unified = "".join(difflib.unified_diff(
                    (change.old_text or "").splitlines(keepends=True),
                    (change.new_text or "").splitlines(keepends=True),
                    fromfile="/dev/null" if change.old_path is None else f"a/{change.old_path}",
                    tofile="/dev/null" if change.new_path is None else f"b/{change.new_path}",
                ))
                files.append(FileDiff(change.path, change.status, change.old_text, change.new_text, unified))
            state = review.state_of(info.id)
            note = review.commit_notes.get(info.id)
            if state == "open" and review.status not in ("open", "stale"):
                state = "skipped"  # a record from before commits had states
            if state == "open":
                note = self._stale_note(review, commit, changes, changed)
                state = "stale" if note else "open"
            item = ReviewCommit(info.id, info.summary, _body(commit.message), info.action, info.memory_ids, files,
                                state, note, memory_diffs(changes))
            out.append(_with_result(item, _after_text(commit.message)))
        return out

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

    def rejected_merges(self, namespace: str) -> builtins.list[RejectedMerge]:
        """Every merge a reviewer turned down in ``namespace``, to leave out of the next runs."""
        out = []
        for review in self.list(namespace):
            for entry in review.rejected:
                ids, texts = entry.get("ids"), entry.get("texts")
                if isinstance(ids, builtins.list) and isinstance(texts, dict):
                    digests = {str(k): str(v) for k, v in texts.items()}
                    out.append(RejectedMerge(frozenset(str(i) for i in ids), digests))
        return out

    # --- what main changed since a review's base --------------------------------------------------

    def _changed_on_main(self, store: Store, review: Review) -> dict[str, str]:
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
            old, new = _parsed(change.old_text, change.old_path), _parsed(change.new_text, change.new_path)
            if old is not None:
                before[old.id] = old
            if new is not None:
                after[new.id] = new
        out = {}
        for memory_id, old in before.items():
            new = after.get(memory_id)
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

    def _stale_note(self, review: Review, commit: Commit, changes: Sequence[FileChange],
                    changed: dict[str, str]) -> str | None:
        """Why ``commit`` cannot be merged as reviewed any more, or None."""
        if not changed:
            return None
        if "*" in changed:
            return changed["*"]
        concerned = set(parse_trailers(commit.message).get("Memory-Id", []))
        for change in changes:
            old = _parsed(change.old_text, change.old_path)
            if old is not None:
                concerned.add(old.id)
        hits = [changed[i] for i in sorted(concerned) if i in changed]
        if not hits:
            return None
        return f"main {'; '.join(hits)} after the review was opened; {self._advice(review)}"

    @staticmethod
    def _advice(review: Review) -> str:
        if review.kind == "consolidation":
            return "run consolidation again to review the current state"
        return ("propose the change again on the memory as it is now (the memory's page, or "
                "`gitmem feedback ID amend`)")

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

    def comment(self, namespace: str, number: int, *, actor: str, text: str) -> Review:
        """Add a comment to a review's thread (any status)."""
        number = _number(number)
        actor = _actor(actor)
        text = concepts.clean_text(text, limit=self.settings.max_text_chars, what="comment")
        entry = {"actor": actor, "at": concepts.iso(now()), "text": text}

        def update(review: Review) -> Review:
            return replace(review, comments=[*review.comments, entry], updated=now())

        return self._save(namespace, number, update, f"comment by {actor}", actor)

    def reject(self, namespace: str, number: int, *, actor: str, reason: str) -> Review:
        """Close a review without merging what is left of it; main is not touched.

        ``reason`` is required: it goes to the thread so the author knows what to change. The
        merges turned down are remembered: consolidation does not propose the same memories
        together again until one of them changes (:meth:`rejected_merges`). Commits merged
        earlier stay merged; the review then counts as merged in part.
        """
        number = _number(number)
        actor = _actor(actor)
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidInput("say why you reject it: a reason is required, so the author knows what to change")
        reason = concepts.clean_text(reason, limit=self.settings.max_text_chars, what="reason")
        current = self.get(namespace, number)
        if current.status not in ("open", "stale"):
            raise Conflict(f"review #{number} is already {current.status}")
        every = self.commits(namespace, current)
        remembered = self._fingerprints(namespace, current, [c for c in every
                                                             if current.state_of(str(c.id)) != "merged"])

        def update(review: Review) -> Review:
            if review.status not in ("open", "stale"):
                raise Conflict(f"review #{number} is already {review.status}")
            states = dict(review.commit_states)
            for commit in every:
                if states.get(str(commit.id)) != "merged":
                    states[str(commit.id)] = "skipped"
            merged = any(v == "merged" for v in states.values())
            comments = [*review.comments, {"actor": actor, "at": concepts.iso(now()), "text": reason}]
            return replace(review, status="merged" if merged else "rejected", decided_by=actor, updated=now(),
                           comments=comments, commit_states=states, rejected=[*review.rejected, *remembered])

        review = self._save(namespace, number, update, f"rejected by {actor}", actor)
        self._retire_branch(namespace, review)
        self._publish(namespace, review)
        return review

    def check(self, namespace: str, number: int, *, actor: str) -> Review:
        """Record as stale the open commits main has overtaken, so the record says what a page shows."""
        number = _number(number)
        actor = _actor(actor)
        ns = self.namespaces.open(namespace)
        with ns.lock:
            review = self.get(namespace, number)
            if review.status != "open":
                return review
            changed = self._changed_on_main(ns.store, review)
            stale = {str(c.id): note for c in self.commits(namespace, review)
                     if review.state_of(str(c.id)) == "open"
                     and (note := self._stale_note(review, c, ns.store.file_changes(c), changed))}
            return self._mark_stale(namespace, review, stale, actor) if stale else review

    def approve(self, namespace: str, number: int, *, actor: str, commits: builtins.list[str] | None = None,
                expected: int | None = None) -> Review:
        """Merge the review's open commits (or only ``commits``) into main, one commit each.

        A commit is stale when main changed the text, type or state of a memory it is about
        since the review was opened; uses, potency and confirmations carry over instead. Picked
        commits that are stale merge nothing: they are marked stale and :class:`StaleReview`
        says why. Approving all merges the open commits that are not stale and marks the others.
        ``expected``: how many commits the caller saw to merge; any other number merges nothing
        (:class:`Conflict`), so a reviewer never merges more than was shown. The review stays
        open while commits are left to decide ("merged 4 of 8").
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
            still = [c for c in every if review.state_of(str(c.id)) == "open"]
            picked = self._select(every, review, commits, number)
            for _ in range(50):
                main = store.head(MAIN)
                changed = self._changed_on_main(store, review)
                stale = {str(c.id): note for c in (still if picked is None else picked)
                         if (note := self._stale_note(review, c, store.file_changes(c), changed))}
                selected = [c for c in (still if picked is None else picked) if str(c.id) not in stale]
                if stale and (picked is not None or not selected):
                    self._mark_stale(namespace, review, stale, actor)
                    raise StaleReview(_stale_message(number, every, stale))
                if expected is not None and len(selected) != expected:
                    went = f" ({len(stale)} went stale meanwhile)" if stale else ""
                    raise Conflict(f"review #{number} has {len(selected)} commit(s) to merge now, not the "
                                   f"{expected} you saw{went}; nothing was merged: look at it again")
                tip = main
                try:
                    for commit in selected:
                        tip = self._apply(store, commit, tip)
                except MergeConflict as exc:
                    stale = {exc.commit: f"{exc}; {self._advice(review)}"}
                    self._mark_stale(namespace, review, stale, actor)
                    raise StaleReview(_stale_message(number, every, stale)) from exc
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
                # Main now holds the commits, so the record says so whatever a racing approver
                # in another process wrote meanwhile.
                states = {**current.commit_states, **{c: "merged" for c in approved},
                          **{c: "stale" for c in stale}}
                notes = {**current.commit_notes, **stale}
                return replace(current, status=_status(every, states), merged_commit=str(tip.id), decided_by=actor,
                               approved_commits=[*current.approved_commits, *approved], commit_states=states,
                               commit_notes=notes, stale_reason=_stale_reason(every, states, notes),
                               updated=now())

            merged = sum(1 for c in every if c.id in {s.id for s in selected}) + sum(
                1 for c in every if review.state_of(str(c.id)) == "merged")
            review = self._save(namespace, number, update, f"approved by {actor} (merged {merged} of {len(every)})",
                                actor)
            ns.synced()
        if review.status != "open":
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

    def _select(self, every: builtins.list[Commit], review: Review, picked: builtins.list[str] | None,
                number: int) -> builtins.list[Commit] | None:
        """The commits named in ``picked`` (None: every open one), each still open; bad names refused."""
        if picked is None:
            if not any(review.state_of(str(c.id)) == "open" for c in every):
                raise Conflict(f"review #{number} has no open commits to merge")
            return None
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
            state = review.state_of(matches[0])
            if state != "open":
                raise Conflict(f"commit {matches[0][:10]} of review #{number} is {state} already")
            chosen.add(matches[0])
        return [c for c in every if str(c.id) in chosen]

    def _apply(self, store: Store, commit: Commit, onto: Commit) -> Commit:
        """``commit`` replayed on ``onto``, taking over what main changed in fields that never make it stale.

        Main may have changed a memory's uses, potency or confirmations meanwhile: the
        commit's version of the memory takes those over field by field.
        """
        try:
            return store.replay([commit], onto)
        except MergeConflict:
            pass
        files: dict[str, bytes | None] = {}
        for change in store.file_changes(commit):
            if change.status == "deleted":
                assert change.old_path is not None
                if store.read(change.old_path, onto) is not None:
                    files[change.old_path] = None
                continue
            assert change.new_path is not None and change.new_text is not None
            present = store.read(change.new_path, onto)
            if change.status == "added":
                if present is not None and present.decode("utf-8", "replace") != change.new_text:
                    raise MergeConflict(str(commit.id), [change.new_path])
                files[change.new_path] = change.new_text.encode()
                continue
            base = _parsed(change.old_text, change.old_path)
            mine = _parsed(change.new_text, change.new_path)
            theirs = _parsed(None if present is None else present.decode("utf-8", "replace"), change.new_path)
            if base is None or mine is None or theirs is None or theirs.id != base.id:
                raise MergeConflict(str(commit.id), [change.new_path])
            files[change.new_path] = concepts.render(_merge_fields(base, mine, theirs))
        return store.recommit(commit, onto, files)

    def _fingerprints(self, namespace: str, review: Review,
                      commits: builtins.list[Commit]) -> builtins.list[dict[str, Any]]:
        """What to remember of the merges among ``commits``: their members and their texts."""
        ns = self.namespaces.open(namespace)
        try:
            base = ns.store.commit(review.base)
        except CommitNotFound:
            return []
        out = []
        for commit in commits:
            info = ns.store.info(commit)
            if info.action != "consolidate":
                continue
            texts: dict[str, str] = {}
            added: set[str] = set()
            for memory in memory_diffs(ns.store.file_changes(commit)):
                if memory.change == "added":
                    added.add(memory.id)
                elif memory.before is not None:
                    texts[memory.id] = _digest(memory.before)
            for memory_id in info.memory_ids:
                if memory_id in texts or memory_id in added:
                    continue
                hint = ns.index.get(memory_id)
                found = ns.version_at(base, memory_id, hint.path if hint else None)
                if found is not None:
                    texts[memory_id] = _digest(found.text)
            if len(texts) >= 2:
                out.append({"ids": sorted(texts), "texts": texts, "commit": info.id})
        return out

    def _mark_stale(self, namespace: str, review: Review, stale: dict[str, str], actor: str) -> Review:
        every = self.commits(namespace, review)

        def update(current: Review) -> Review:
            if current.status != "open":  # e.g. merged by a racing approver in another process
                raise Conflict(f"review #{current.number} is already {current.status}")
            states = {**current.commit_states, **{c: "stale" for c in stale}}
            notes = {**current.commit_notes, **stale}
            return replace(current, status=_status(every, states), commit_states=states, commit_notes=notes,
                           stale_reason=_stale_reason(every, states, notes), updated=now())

        marked = self._save(namespace, review.number, update, f"{len(stale)} commit(s) stale", actor)
        self._publish(namespace, marked)
        return marked

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
        """Say that a review was decided (``review.closed``) or decided in part (``review.updated``)."""
        event = "review.updated" if review.status == "open" else "review.closed"
        notify.publish(self.settings, {"event": event, "namespace": namespace, "review": review.to_dict()})


def _status(every: Sequence[Commit], states: dict[str, str]) -> str:
    """A review's status from its commits': open while any is open, then merged, stale or rejected."""
    seen = [states.get(str(c.id), "open") for c in every]
    if "open" in seen:
        return "open"
    if "merged" in seen:
        return "merged"
    return "stale" if "stale" in seen else "rejected"


def _stale_reason(every: Sequence[Commit], states: dict[str, str], notes: dict[str, str]) -> str | None:
    stale = [f"{str(c.id)[:10]}: {notes.get(str(c.id), 'stale')}" for c in every
             if states.get(str(c.id)) == "stale"]
    return "; ".join(stale) or None


def _stale_message(number: int, every: Sequence[Commit], stale: dict[str, str]) -> str:
    """``review #3: commit 1a2b3c4d5e ("merge 2 into ...") is stale: main changed ...``; nothing merged."""
    parts = []
    for commit in every:
        if str(commit.id) in stale:
            summary = commit.message.splitlines()[0] if commit.message else ""
            parts.append(f"commit {str(commit.id)[:10]} (\"{summary}\") is stale: {stale[str(commit.id)]}")
    return f"review #{number}: " + "; ".join(parts) + "; nothing was merged"


def _merge_fields(base: concepts.Memory, mine: concepts.Memory, theirs: concepts.Memory) -> concepts.Memory:
    """``mine`` (the review's version) with what main changed since ``base`` in the fields mine left alone.

    Where both changed a field: confirmations are joined, uses added up, the later time and the
    higher potency kept; otherwise the review's value stands.
    """
    values: dict[str, Any] = {}
    for f in dataclass_fields(mine):
        name = f.name
        b, m, t = getattr(base, name), getattr(mine, name), getattr(theirs, name)
        if name == "path" or t == b:
            continue
        if m == b:
            values[name] = t
        elif name == "verified":
            values[name] = (*m, *(v for v in t if v not in m))
        elif name == "access_count":
            values[name] = m + (t - b)
        elif name == "potency":
            values[name] = max(m, t)
        elif name in ("last_used", "updated"):
            values[name] = max(v for v in (m, t) if v is not None) if (m or t) else None
    return mine.replace(**values)


def _after_text(message: str) -> str | None:
    """The text a consolidation commit's message gives under "After:" (a memory it keeps untouched)."""
    _, sep, rest = message.partition("\nAfter:\n- ")
    if not sep:
        return None
    return rest.split("\n\n")[0].split("\n- ")[0].strip() or None


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
