"""What a review's commits change: each file's diff, each memory's word and field diff, what a merge loses.

Pure functions of the file changes the repository layer reports; nothing here reads a ref.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from dataclasses import fields as dataclass_fields
from datetime import datetime
from typing import Any

from .. import concepts, textdiff
from ..errors import MalformedConcept
from ..repo import FileChange, is_memory_path, parse_trailers
from ..wording import plural


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


#: The kinds of change a review commit makes, in the order a review page groups them.
KINDS = ("merge", "supersede", "link", "edit", "add", "remove", "archive", "promote")
_DONE = {"link": "linked", "edit": "edited", "add": "added", "remove": "removed", "archive": "archived",
         "promote": "promoted"}

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
    # False for a file pushed without an id: its id is a stand-in until the merge gives it one,
    # so no memory page answers to it yet.
    assigned: bool = True

    @property
    def text_changed(self) -> bool:
        """Whether the memory's text changed (not only its fields)."""
        return self.change == "changed" and self.before != self.after

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
                "lost_words": list(self.lost), "author": self.author, "assigned": self.assigned}


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

    @property
    def lost(self) -> list[str]:
        """The words of the memories merged away that the result lacks, each once, sorted."""
        return sorted({w for m in self.members for w in m.lost})

    @property
    def kind(self) -> str:
        """What the commit does, one of :data:`KINDS`: a merge, a supersede, a link, an archive, an edit...

        A merge makes or rewrites the memory the others become; a supersede removes memories in
        favour of one whose text stays as it is (a newer statement, the user's own); a link only
        points statements of one rule at each other.
        """
        if self.action in ("archive", "discard"):
            return "archive"
        if self.action == "supersede":  # a correction retires what it corrects (gitmem.corrections)
            return "supersede"
        if self.action == "promote":
            return "promote"
        if self.merge:
            kept = self.kept
            return "merge" if kept is not None and (kept.change == "added" or kept.text_changed) else "supersede"
        changes = {m.change for m in self.memories}
        if self.action == "consolidate" and changes == {"changed"} and all(
                not m.text_changed and {f[0] for f in m.fields} <= {"related"} for m in self.memories):
            return "link"
        if changes == {"added"}:
            return "add"
        if changes == {"removed"}:
            return "remove"
        return "edit"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with each file's diff, each memory's word diff and the commit's state."""
        return {"id": self.id, "summary": self.summary, "reason": self.reason, "action": self.action,
                "memory_ids": list(self.memory_ids), "state": self.state, "stale_reason": self.note,
                "result": self.result, "memories": [m.to_dict() for m in self.memories],
                "lost_words": self.lost, "kind": self.kind, "files": [f.to_dict() for f in self.files]}


def summarise(commits: Sequence[ReviewCommit]) -> str:
    """What a review changes: ``12 memories into 5 (convention 9, decision 3); linked 4; archived 2``.

    Counted as a consolidation run counts its title (:func:`gitmem.consolidate.summarise`), so
    the two agree.
    """
    merges = [c for c in commits if c.merge]
    parts = []
    if merges:
        # A result that is not new (a pair's survivor, a user's statement) was one of the memories too.
        folded = sum(len(c.members) + (0 if c.kept is not None and c.kept.change == "added" else 1) for c in merges)
        kept = len({c.result for c in merges})
        types = Counter(m.type for c in merges for m in c.members)
        by_type = ", ".join(f"{t} {n}" for t, n in types.most_common())
        parts.append(f"{plural(folded, 'memory')} into {kept} ({by_type})")
    # A pending memory discarded is archived too, but a run's title says "discarded": so does this.
    others: Counter[str] = Counter()
    for c in commits:
        if c.merge:
            continue
        if c.action == "edit" and c.memories:
            # A commit made with git says nothing of itself: one may add a memory and edit another.
            others.update({"added": "added", "changed": "edited", "removed": "removed"}[m.change]
                          for m in c.memories)
        else:
            others["discarded" if c.action == "discard" else _DONE.get(c.kind, c.kind)] += 1
    order = [_DONE.get(k, k) for k in KINDS] + ["discarded"]
    parts += [f"{done} {others[done]}" for done in order if others[done]]
    return "; ".join(parts) or "no changes"


def digest(text: str) -> str:
    """A short fingerprint of a text, blind to how its whitespace runs."""
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


def parsed(text: str | None, path: str | None) -> concepts.Memory | None:
    """The memory a file's text holds, or None for a file that is not one (or does not parse)."""
    if text is None or path is None or not is_memory_path(path):
        return None
    try:
        return concepts.parse(text.encode(), path)
    except MalformedConcept:
        pass
    try:
        # A file pushed without gitmem's fields (plain OKF): named by its path until it gets its id.
        return concepts.parse_pushed(text.encode(), path, default_id=placeholder_id(path))[0]
    except MalformedConcept:
        return None


def placeholder_id(path: str) -> str:
    """The stand-in id of a file pushed without one, until its merge gives it its own."""
    return hashlib.sha256(path.encode()).hexdigest()[:10]


def memory_diffs(changes: Sequence[FileChange], *, words: bool = True) -> list[MemoryDiff]:
    """The memories a list of file changes adds, removes or changes, with word and field diffs.

    ``words=False`` leaves the word diffs out (``MemoryDiff.text`` empty): a table of contents
    needs what changed, not how, and the word diff is the costly part.
    """
    before: dict[str, concepts.Memory] = {}
    after: dict[str, concepts.Memory] = {}
    order: list[str] = []
    for change in changes:
        for side, text, path in ((before, change.old_text, change.old_path), (after, change.new_text, change.new_path)):
            memory = parsed(text, path)
            if memory is not None:
                side[memory.id] = memory
                if memory.id not in order:
                    order.append(memory.id)
    out = []
    for memory_id in order:
        old, new = before.get(memory_id), after.get(memory_id)
        shown = new or old
        assert shown is not None
        assigned = not shown.path or memory_id != placeholder_id(shown.path)
        if old is None or new is None:
            out.append(MemoryDiff(memory_id, shown.title, shown.type, "added" if old is None else "removed",
                                  None if old is None else old.text, None if new is None else new.text, [], [],
                                  author=shown.author, assigned=assigned))
            continue
        quiet = set(_QUIET_FIELDS)
        if old.title == concepts.title_from(old.text) and new.title == concepts.title_from(new.text):
            quiet.add("title")  # a title taken from the text changes with it: the text diff shows it
        fields = [(f.name, getattr(old, f.name), getattr(new, f.name)) for f in dataclass_fields(old)
                  if f.name not in quiet and getattr(old, f.name) != getattr(new, f.name)]
        out.append(MemoryDiff(memory_id, new.title, new.type, "changed", old.text, new.text,
                              textdiff.word_diff(old.text, new.text) if words else [], fields,
                              author=new.author, assigned=assigned))
    return out


def with_result(commit: ReviewCommit, anchor_text: str | None) -> ReviewCommit:
    """Name the memory a merge keeps and the words each merged-away memory loses."""
    removed = [m for m in commit.memories if m.change == "removed"]
    if commit.action != "consolidate" or not removed:
        return commit
    staying = [m for m in commit.memories if m.change != "removed"]
    # The result is the memory the merge wrote, else the one that now supersedes the others;
    # members left apart (another language) only gain a link and are never the result.
    result = next((m for m in staying if m.change == "added"), None) or next(
        (m for m in staying if any(f[0] == "supersedes" for f in m.fields)), None)
    touched = {m.id for m in commit.memories}
    kept_ids = [i for i in commit.memory_ids if i not in touched]
    if result is not None:
        result_id, result_text = result.id, result.after or ""
    elif anchor_text is not None and kept_ids:
        result_id, result_text = kept_ids[0], anchor_text  # the user's statement, kept as it is
    elif staying:
        result_id, result_text = staying[0].id, staying[0].after or ""
    else:
        return commit
    memories = [replace(m, lost=textdiff.lost_words(m.before or "", result_text)) if m.change == "removed" else m
                for m in commit.memories]
    return replace(commit, memories=memories, result=result_id)


def body(message: str) -> str:
    """The message between the summary line and the trailers."""
    paragraphs = [p for p in message.strip().split("\n\n") if p.strip()]
    if len(paragraphs) > 1 and parse_trailers(message):
        paragraphs = paragraphs[:-1]
    return "\n\n".join(paragraphs[1:]).strip()


def after_text(message: str) -> str | None:
    """The text a consolidation commit's message gives under "After:" (a memory it keeps untouched)."""
    _, sep, rest = message.partition("\nAfter:\n- ")
    if not sep:
        return None
    return rest.split("\n\n")[0].split("\n- ")[0].strip() or None

