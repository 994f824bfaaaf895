"""Purging a memory from history: a review someone asks for, which an admin's approval carries out.

``gitmem purge --history ID`` (or ``POST .../memories/ID/purge-history``) opens a review of kind
``purge``: one commit that deletes the memory's file and its discussion from main, with the
reason. Nothing else happens until an admin approves it (its page, the API with an admin key, or
``gitmem review approve N`` on the server); a reviewer's approval is refused, as is one from Slack.

Approving rewrites the namespace's whole history (:mod:`gitmem.repo.rewrite`): every version
of the memory's file and its discussion leave every commit of every ref, and each of its texts,
titles and descriptions becomes ``(redacted)`` wherever else it appears (other files, commit
messages, review records). Then, in order: review records follow the new commit ids (open
reviews are rebased with the history: their branches were rewritten too); a redaction record
is committed on main (``.gitmem/redactions/<time>-<id>.json``: when, who asked, who approved,
why, and which commit ids were rewritten, so a push of the old history is refused with the way
out); reflogs, unreachable objects and old packs that held the text are deleted; the search
index is rebuilt; an entry goes to the audit log (``$GITMEM_HOME/audit.jsonl``); the mirrors are
force-pushed. Clones made before must be cloned again, or ``git fetch && git reset --hard
origin/main``: their pushes of the old history, and ``gitmem sync``, say so.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from . import concepts, notify
from .concepts import iso, now
from .errors import Conflict, InvalidInput, MalformedConcept, MemoryNotFound, PermissionDenied
from .repo import DISCUSSIONS, Change, Namespace, Namespaces, is_memory_path
from .repo import rewrite as history
from .repo.audit import AuditLog
from .reviews import Review, Reviews
from .settings import Settings

log = logging.getLogger(__name__)

KIND = "purge"
ACTION = "purge-history"
# Titles and descriptions shorter than this are too common to redact wherever they appear.
MIN_NEEDLE = 12


@dataclass(frozen=True)
class Purged:
    """What approving a purge did."""

    namespace: str
    memory_id: str
    review: int
    record: str  # the redaction record's commit on main
    commits: int  # commits rewritten
    refs: list[str]  # refs moved
    objects: int  # loose objects deleted
    seconds: float
    mirrors: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return dict(self.__dict__)


def recovery(at: str, review: int) -> str:
    """What a clone made before the purge of ``review`` (rewritten at ``at``) must do."""
    return (f"history was rewritten on {at[:10]} by purge (review #{review}); re-clone, or "
            "`git fetch && git reset --hard origin/main` (save your own commits first: they "
            "must be made again on the new history)")


class Redactions:
    """Ask for, and carry out, the purge of a memory from a namespace's history."""

    def __init__(self, namespaces: Namespaces, reviews: Reviews, settings: Settings, *,
                 mirrors: Callable[[str], dict[str, Any]] | None = None) -> None:
        """``mirrors(namespace)`` force-pushes the namespace's mirrors and returns their statuses."""
        self.namespaces = namespaces
        self.reviews = reviews
        self.settings = settings
        self.mirrors = mirrors
        self.last: Purged | None = None  # what the last approval in this process did (for front ends)
        reviews.deciders[KIND] = self.approve

    # --- asking ---------------------------------------------------------------------------------

    def request(self, namespace: str, memory_id: str, *, actor: str, reason: str) -> Review:
        """Open the review that purges ``memory_id`` from the history once an admin approves it."""
        memory_id = concepts.check_id(memory_id)
        reason = concepts.clean_text(reason, limit=self.settings.max_text_chars, what="reason")
        if any(r.kind == KIND and self._memory_of(namespace, r) == memory_id
               for r in self.reviews.list(namespace, status="open")):
            raise Conflict(f"a purge of memory {memory_id} is open already; see `gitmem review list`")
        with self.namespaces.using(namespace) as ns:
            if not self._versions(ns, memory_id):
                raise MemoryNotFound(f"memory {memory_id} is nowhere in the history of {namespace!r}")
            head = ns.synced()
            files: dict[str, bytes | None] = {}
            indexed = ns.index.get(memory_id)
            if indexed is not None:
                files[indexed.path] = None
            if ns.store.read(f"{DISCUSSIONS}/{memory_id}.jsonl", head) is not None:
                files[f"{DISCUSSIONS}/{memory_id}.jsonl"] = None
        change = Change(files, f"purge memory {memory_id} from the history", ACTION, (memory_id,), None, actor,
                        body=f"Reason: {reason}")
        return self.reviews.propose(
            namespace, [change], title=f"Purge memory {memory_id} from the history", author=actor, kind=KIND,
            description=(f"{actor} asks to purge memory {memory_id} from every commit: {reason}\n\n"
                         "An admin approves it; approving rewrites the namespace's history, and every clone "
                         "made before must be made again."))

    # --- approving --------------------------------------------------------------------------------

    def approve(self, namespace: str, review: Review, *, actor: str, admin: bool) -> Review:
        """Carry out an open purge review (an admin only); the review, merged."""
        if not admin:
            raise PermissionDenied(f"review #{review.number} purges a memory from the history: only an admin "
                                   "approves it (its page or the API with an admin key, or `gitmem review "
                                   f"approve {review.number}` on the server)")
        memory_id = self._memory_of(namespace, review)
        if memory_id is None:
            raise InvalidInput(f"review #{review.number} names no memory to purge")
        started = time.monotonic()
        ns = self.namespaces.open(namespace)
        with ns.lock:
            versions = self._versions(ns, memory_id)
            if not versions:
                raise Conflict(f"memory {memory_id} is nowhere in the history of {namespace!r} any more")
            needles = _needles(versions)
            scrub = history.Scrub(ns.store, needles, lambda path, data: _drops(memory_id, path, data),
                                  about=memory_id)
            starts = [n[:24].encode() for n in needles]
            scrub.edit = lambda path, data: _edited(scrub.text, starts, path, data)
            slugs = [slug for slug in {concepts.slugify(n)[:16] for n in needles} if len(slug) >= 8]
            scrub.rename = lambda path: _renamed(slugs, path)
            done = scrub.run()
            self.reviews.remap(namespace, done.commits, actor)
            at = iso(now())
            record = self._record(ns, memory_id, review, actor, at, sorted(done.commits))
            removed = history.expunge(ns.store, scrub.poisoned(), needles, slugs)
            ns.index.rebuild(ns.store)
        merged = self._close(namespace, review, actor, record)
        purged = Purged(namespace, memory_id, review.number, record, len(done.commits), sorted(done.refs),
                        removed, round(time.monotonic() - started, 3))
        AuditLog(self.settings.home).append({
            "event": "purge-history", "at": at, "namespace": namespace, "memory": memory_id,
            "review": review.number, "requested_by": review.author, "approved_by": actor,
            "reason": _reason(review), "record": record, "commits_rewritten": len(done.commits),
            "refs": sorted(done.refs), "objects_deleted": removed})
        if self.mirrors is not None:
            try:
                purged = replace(purged, mirrors=self.mirrors(namespace))
            except Exception:  # a mirror must never undo a purge; its status says what failed
                log.exception("the mirrors of %s were not pushed after the purge", namespace)
        self.last = purged
        notify.publish(self.settings, {"event": "history.purged", "namespace": namespace, "memory": memory_id,
                                       "review": review.number, "actor": actor,
                                       "summary": f"{actor} purged memory {memory_id} from the history of "
                                                  f"{namespace} (review #{review.number})"})
        return merged

    def _record(self, ns: Namespace, memory_id: str, review: Review, actor: str, at: str,
                rewritten: list[str]) -> str:
        """Commit the redaction record on main; its commit id."""
        stamp = at.replace("-", "").replace(":", "")[:15]
        path = f"{history.RECORDS}/{stamp}-{memory_id}.json"
        data = {"memory": memory_id, "at": at, "review": review.number, "requested_by": review.author,
                "approved_by": actor, "reason": _reason(review), "rewritten": rewritten,
                "recover": recovery(at, review.number)}
        body = (f"History was rewritten on {at[:10]}: memory {memory_id} is no longer in any commit.\n\n"
                f"{recovery(at, review.number)}.")
        change = Change({path: json.dumps(data, indent=1).encode() + b"\n"},
                        f"purge: memory {memory_id} removed from the history", "redact", (memory_id,), None, actor,
                        body=body, extra_trailers=(("Review", str(review.number)), ("Requested-By", review.author),
                                                   ("Approved-By", actor)))
        commit = ns.commit(lambda head: change)
        assert commit is not None
        return commit

    def _close(self, namespace: str, review: Review, actor: str, record: str) -> Review:
        """Mark the purge review merged (its commits are moot: the file is gone everywhere) and retire its branch."""
        return self.reviews.settle(namespace, review.number, actor=actor, merged_commit=record,
                                   summary=f"approved by {actor} (history purged)")

    # --- reading ---------------------------------------------------------------------------------

    def _versions(self, ns: Namespace, memory_id: str) -> list[concepts.Memory]:
        """Every version of the memory's file in any commit of any ref."""
        out = []
        for path, data in history.blobs_matching(ns.store, lambda p, d: _is_version(memory_id, p, d)):
            try:
                out.append(concepts.parse_pushed(data, path)[0])
            except MalformedConcept:
                continue
        return out

    def _memory_of(self, namespace: str, review: Review) -> str | None:
        for commit in self.reviews.commits(namespace, review):
            info = self.namespaces.open(namespace).store.info(commit)
            if info.action == ACTION and info.memory_ids:
                return info.memory_ids[0]
        return None


def _is_version(memory_id: str, path: str, data: bytes) -> bool:
    # The id's digits must be in the file (underscores aside: YAML reads 1_234_567_890 as a
    # number) before its frontmatter is worth parsing.
    return (is_memory_path(path) and memory_id.encode() in data.replace(b"_", b"")
            and concepts.stated_id(data, path) == memory_id)


def _drops(memory_id: str, path: str, data: bytes) -> bool:
    """Whether a blob leaves the history: a version of the memory's file, or its discussion."""
    return path == f"{DISCUSSIONS}/{memory_id}.jsonl" or _is_version(memory_id, path, data)


def _edited(redact: Callable[[str], str], starts: list[bytes], path: str, data: bytes) -> bytes | None:
    """Another memory's file with the text redacted in its text, title and description, or None.

    Its frontmatter is YAML, which may quote or escape a title ("box''s"), so the fields are
    redacted as read and the file is written again; a title taken from the text follows it. A
    file without the start of any needle (YAML's quoting undone) is left to the plain replacement.
    """
    if not is_memory_path(path):
        return None
    plain = data.replace(b"''", b"'").replace(b'\\"', b'"')
    if not any(start in plain for start in starts):
        return None
    try:
        memory, _ = concepts.parse_pushed(data, path)
    except MalformedConcept:
        return None
    text, title, description = redact(memory.text), redact(memory.title), redact(memory.description)
    if (text, title, description) == (memory.text, memory.title, memory.description):
        return None
    if memory.title == concepts.title_from(memory.text):
        title = concepts.title_from(text)
    if description != memory.description or memory.description == concepts.description_from(memory.text):
        description = concepts.description_from(text)
    return concepts.render(memory.replace(text=text, title=title, description=description))


def _renamed(slugs: list[str], path: str) -> str:
    """A memory file's path without the text its name was made from (its title's slug), else ``path``.

    ``fact/notes-say-the-payroll-box-s.md`` becomes ``fact/notes-say-redacted-1a2b3c.md``; the
    digest of the old name keeps two such files apart.
    """
    if not is_memory_path(path):
        return path
    folder, _, name = path.partition("/")
    stem = name.removesuffix(".md")
    for slug in slugs:
        at = stem.find(slug)
        if at >= 0:
            kept = stem[:at].rstrip("-")
            tag = hashlib.sha256(name.encode()).hexdigest()[:6]
            return f"{folder}/{kept + '-' if kept else ''}redacted-{tag}.md"
    return path


def _needles(versions: list[concepts.Memory]) -> list[str]:
    """The texts to redact wherever they appear: each version's text, and its title and description."""
    out = {v.text for v in versions}
    out |= {t for v in versions for t in (v.title, v.description) if len(t) >= MIN_NEEDLE}
    return sorted(out, key=len, reverse=True)


def _reason(review: Review) -> str:
    _, _, reason = review.description.partition(": ")
    return reason.split("\n\n")[0].strip()


