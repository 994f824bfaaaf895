"""Ingesting conversations: messages into a double buffer, sealed buffers distilled into memories.

::

    add(messages)  -> the conversation's active buffer (durable, a repeated message id ignored,
                      secrets masked) -> sealed at ``ingest_flush_tokens`` or after
                      ``ingest_idle_seconds`` without a message; a fresh buffer keeps filling
    distil(buffer) -> claimed -> split at topic shifts -> the LLM port's ``extract`` ->
                      the write gate (``remember_many``): one commit per buffer, pending
                      memories (active for "remember: ..."), trailers naming the buffer and
                      conversation -> done (its messages dropped)

A buffer whose extraction fails (a malformed answer, a model that does not answer) is put back and
tried again later, with the wait doubling up to an hour; it is never dropped. A buffer is
distilled at most once: its commit carries ``Ingest-Buffer: <id>``, and a buffer whose claim
lapsed after its commit landed (the worker died before marking it done) finds that commit and is
marked done without a second extraction.

Where a sealed buffer is distilled is the facade's choice (:meth:`MemoryService.ingest`): on the
workers when a broker is configured or the caller cannot wait, in the caller's process otherwise.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import concepts, extraction, secretscan
from .errors import InvalidInput, Unavailable
from .extraction import BadExtraction, Extracted, Message
from .llm import LLM, BadAnswer
from .memories import Candidate, Memories, Outcome
from .repo import Buffered, Namespaces
from .semantic import Semantics
from .settings import Settings
from .wording import plural

log = logging.getLogger(__name__)

SOURCES = ("api", "cli", "slack", "claude-code")
MAX_BATCH = 1000
MAX_MESSAGE_CHARS = 20_000
_CONVERSATION = re.compile(r"^[\w.:@+-]{1,200}$")
#: How far back main's history is searched for a buffer's commit before it is distilled again.
_LOOK_BACK = 2000


@dataclass(frozen=True)
class Accepted:
    """What :meth:`Ingest.add` took: new messages, ignored repeats, masked secrets, buffers sealed."""

    conversation: str
    added: int
    repeated: int
    masked: int
    sealed: tuple[str, ...]
    active_tokens: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"conversation": self.conversation, "added": self.added, "repeated": self.repeated,
                "masked": self.masked, "sealed": list(self.sealed), "active_tokens": self.active_tokens}


@dataclass(frozen=True)
class Distilled:
    """What distilling one buffer did.

    ``outcome``: ``written`` (a commit), ``nothing`` (no memory in it), ``already`` (its commit was
    on main), ``busy`` (another worker holds it, or it is done), ``failed`` (tried again later).
    """

    buffer: str
    outcome: str
    commit: str | None = None
    counts: Mapping[str, int] = field(default_factory=dict)
    error: str | None = None
    items: tuple[Outcome, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"buffer": self.buffer, "outcome": self.outcome, "commit": self.commit, "counts": dict(self.counts),
                "error": self.error, "items": [i.to_dict() for i in self.items]}


@dataclass(frozen=True)
class Ingested:
    """What the facade did with a batch or a flush: what was taken, and each sealed buffer's fate.

    A buffer is either distilled here (``distilled``) or queued for the workers (``queued``: task ids).
    """

    accepted: Accepted | None
    distilled: tuple[Distilled, ...] = ()
    queued: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**(self.accepted.to_dict() if self.accepted else {}),
                "distilled": [d.to_dict() for d in self.distilled], "queued": list(self.queued)}


def message_id(fallback: Mapping[str, Any]) -> str:
    """A stable id for a message that came without one: a hash of who said what when."""
    key = "\x1f".join(str(fallback.get(k) or "") for k in ("role", "author", "time", "text"))
    return "h" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]


def check_message(raw: Any, where: str) -> Message:
    """One message from an API body or a transcript line; raises InvalidInput naming ``where``."""
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"{where} must be an object with text (and id, role, author, time)")
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(f"{where}.text must be a non-empty string")
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidInput(f"{where}.text is {len(text)} characters; the limit is {MAX_MESSAGE_CHARS}")
    if "\x00" in text:
        raise InvalidInput(f"{where}.text must not contain NUL bytes")
    _check_utf8(text, f"{where}.text")
    role = raw.get("role", "user")
    if role not in extraction.ROLES:
        raise InvalidInput(f"{where}.role must be one of {', '.join(extraction.ROLES)}, not {role!r}")
    ident = raw.get("id")
    if ident is None:
        ident = message_id(raw)
    elif isinstance(ident, bool) or not isinstance(ident, str | int) or not str(ident).strip() or len(str(ident)) > 200:
        raise InvalidInput(f"{where}.id must be a string or number of at most 200 characters")
    else:
        # The id is kept (and named in the report) as it is, unmasked: it must hold no secret.
        ident = concepts.clean_list([str(ident)], what=f"{where}.id")[0]
    author = raw.get("author")
    if author is not None and (not isinstance(author, str) or len(author) > 200 or "\n" in author):
        raise InvalidInput(f"{where}.author must be one line of at most 200 characters")
    if author:
        # The author is named in the commit: like a memory's author, it must hold no secret.
        author = concepts.clean_list([author], what=f"{where}.author")[0] if author.strip() else None
    stamp = raw.get("time")
    when = None
    if stamp is not None:
        try:
            when = concepts.parse_time(stamp) if isinstance(stamp, str) else None
        except ValueError:
            when = None
        if when is None:
            raise InvalidInput(f"{where}.time must be an ISO 8601 time such as 2026-12-01T09:30:00Z")
    return Message(str(ident).strip(), text, role, author or None, when)


def check_conversation(conversation: Any) -> str:
    """A conversation id: 1 to 200 letters, digits and ``. : @ + - _``, and no secret.

    It lands in a commit's subject and its ``Conversation:`` trailer, so it is scanned like text.
    """
    if not isinstance(conversation, str) or not _CONVERSATION.match(conversation):
        raise InvalidInput("a conversation id is 1 to 200 letters, digits and . : @ + - _ "
                           f"(a Slack channel and thread, a session id), not {conversation!r}")
    secretscan.refuse(conversation, what="conversation id")
    return conversation


def _check_utf8(text: str, what: str) -> None:
    """Refuse text that cannot be stored as UTF-8 (a lone surrogate, as a JSON escape of half a pair gives)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} is not valid UTF-8 (a lone surrogate at character {exc.start})") from None


class Ingest:
    """Buffer conversations and distil them (see the module docstring)."""

    def __init__(self, namespaces: Namespaces, memories: Memories, settings: Settings, llm: Callable[[], LLM],
                 semantics: Semantics | None = None) -> None:
        """Work on ``namespaces``; ``llm()`` gives the port extraction asks, built when first needed."""
        self.namespaces = namespaces
        self.memories = memories
        self.settings = settings
        self.llm = llm
        self.semantics = semantics

    def add(self, namespace: str, conversation: str, messages: Sequence[Any], *, source: str = "api",
            meta: Mapping[str, Any] | None = None, context: tuple[str, str] | None = None) -> Accepted:
        """Take a batch of messages into the conversation's active buffer, sealing it when full.

        The whole batch is checked first: one bad message refuses the batch and nothing is kept.
        A secret in a message is masked before it is stored, and counted. ``context``: the
        (conversation, message id) this conversation answers, such as a chat thread's first
        message; while that message waits in its own buffer, a copy of it starts this one, so the
        replies are distilled with what they reply to.
        """
        conversation = check_conversation(conversation)
        if source not in SOURCES:
            raise InvalidInput(f"source must be one of {', '.join(SOURCES)}")
        if not isinstance(messages, Sequence) or isinstance(messages, str | bytes) or not messages:
            raise InvalidInput("messages must be a non-empty list")
        if len(messages) > MAX_BATCH:
            raise InvalidInput(f"{len(messages)} messages in one batch; send at most {MAX_BATCH} at a time")
        checked = [m if isinstance(m, Message) else check_message(m, f"messages[{i}]") for i, m in enumerate(messages)]
        rows = []
        masked_total = 0
        for m in checked:
            text, masked = secretscan.mask(m.text)
            masked_total += masked
            rows.append(Buffered(conversation, m.id, m.role, m.author, text, concepts.iso(m.time) if m.time else None,
                                 extraction.estimate_tokens(text), masked))
        buffers = self.namespaces.buffers(namespace)
        if context is not None and not buffers.known(conversation):
            parent = buffers.message(check_conversation(context[0]), str(context[1]))
            if parent is not None:
                rows.insert(0, Buffered(conversation, parent.message_id, parent.role, parent.author, parent.text,
                                        parent.time, parent.tokens, 0))
        appended = buffers.append(conversation, source, rows, dict(meta or {}))
        sealed: list[str] = []
        if appended.active_tokens >= self.settings.ingest_flush_tokens:
            found = buffers.seal(conversation, f"{appended.active_tokens} tokens")
            if found:
                sealed.append(found)
        if masked_total:
            log.info("ingest %s/%s: masked %d secrets", namespace, conversation, masked_total)
        return Accepted(conversation, appended.added, appended.repeated, masked_total, tuple(sealed),
                        0 if sealed else appended.active_tokens)

    def seal(self, namespace: str, *, conversation: str | None = None, idle: float | None = None) -> list[str]:
        """Seal active buffers now: one conversation's, those idle for ``idle`` seconds, or all."""
        buffers = self.namespaces.buffers(namespace)
        if conversation is not None:
            names = [check_conversation(conversation)]
        elif idle is not None:
            names = buffers.idle(idle)
        else:
            names = buffers.active()
        reason = "asked" if idle is None else f"idle {idle:g} s"
        return [b for b in (buffers.seal(name, reason) for name in names) if b]

    def due(self, namespace: str) -> list[str]:
        """Sealed buffers waiting to be distilled (or whose worker died), oldest first."""
        return self.namespaces.buffers(namespace).due()

    def stats(self, namespace: str) -> dict[str, Any]:
        """Counters (messages, repeats, masked secrets, failures) and buffers per state."""
        buffers = self.namespaces.buffers(namespace)
        recent = [{"id": b.id, "conversation": b.conversation, "state": b.state, "tokens": b.tokens,
                   "messages": b.messages, "attempts": b.attempts, "error": b.error, "commit": b.commit}
                  for b in buffers.recent(10)]
        return {**buffers.stats(), "recent": recent}

    def distil(self, namespace: str, buffer_id: str) -> Distilled:
        """Extract a sealed buffer's memories and write them in one commit (see the module docstring)."""
        buffers = self.namespaces.buffers(namespace)
        token = buffers.claim(buffer_id, self.settings.ingest_claim_seconds)
        if token is None:
            found = buffers.get(buffer_id)
            if found is None:
                raise InvalidInput(f"no buffer {buffer_id!r} in namespace {namespace!r}")
            return Distilled(buffer_id, "busy", found.commit)
        sealed = buffers.get(buffer_id)
        assert sealed is not None
        earlier = self._written(namespace, buffer_id, sealed.sealed)
        if earlier is not None:
            buffers.done(buffer_id, earlier, {"already": True})
            return Distilled(buffer_id, "already", earlier)
        rows = buffers.messages(buffer_id)
        messages = [Message(r.message_id, r.text, r.role, r.author, concepts.parse_time(r.time) if r.time else None)
                    for r in rows]
        source, _ = buffers.source(sealed.conversation)
        try:
            found_memories = self.llm().extract(messages, segments=self.segments(messages))
        except (BadExtraction, BadAnswer, Unavailable) as exc:
            wait = min(3600.0, self.settings.ingest_retry_seconds * 2 ** min(sealed.attempts, 10))
            attempts = buffers.failed(buffer_id, f"{type(exc).__name__}: {exc}", wait)
            log.warning("ingest %s: buffer %s not distilled (attempt %d, again in %g s): %s", namespace, buffer_id,
                        attempts, wait, exc)
            return Distilled(buffer_id, "failed", error=str(exc))
        candidates = [self._candidate(item, source) for item in found_memories]
        if not buffers.holds(buffer_id, token):
            return Distilled(buffer_id, "busy")  # our claim lapsed and another worker took the buffer
        who = sorted({r.author for r in rows if r.author and r.role == "user"})
        body = (f"Distilled {plural(len(rows), 'message')} ({sealed.tokens} tokens, sealed: {sealed.reason}) of "
                f"conversation {sealed.conversation} from {source}" + (f", said by {', '.join(who)}." if who else "."))
        result = self.memories.remember_many(
            namespace, candidates, message=f"ingest: {len(candidates)} from {sealed.conversation}"[:72],
            action="ingest", actor="gitmem", body=body,
            trailers=(("Ingest-Buffer", buffer_id), ("Conversation", sealed.conversation)))
        counts = result.counts()
        buffers.done(buffer_id, result.commit, {**counts, "candidates": len(candidates)})
        return Distilled(buffer_id, "written" if result.commit else "nothing", result.commit, counts,
                         items=result.outcomes)

    def segments(self, messages: Sequence[Message]) -> list[int]:
        """Where the conversation changes topic, when the embeddings port is on (else none)."""
        if self.semantics is None or not self.semantics.enabled or len(messages) < 6:
            return []
        try:
            vectors = self.semantics.embed([m.text[:2000] for m in messages])
        except Unavailable as exc:
            log.warning("topic segmentation skipped: %s", exc)
            return []
        if vectors is None:
            return []
        import numpy as np  # loads only where a conversation is segmented

        cosines = np.einsum("ij,ij->i", vectors[:-1], vectors[1:]).tolist()
        return extraction.boundaries(cosines)

    def _candidate(self, item: Extracted, source: str) -> Candidate:
        stored = "slack" if source == "slack" else ("user" if item.explicit else "agent")
        return Candidate(item.text, type=item.type, title=item.title, tags=item.tags, paths=item.paths,
                         source=stored, author=item.author, state="active" if item.explicit else "pending",
                         label="message " + ", ".join(item.messages))

    def _written(self, namespace: str, buffer_id: str, sealed: float) -> str | None:
        """The commit on main that already holds this buffer's memories, if one does."""
        with self.namespaces.using(namespace) as ns:
            for number, commit in enumerate(ns.store.log()):
                if number >= _LOOK_BACK or commit.commit_time < sealed - 3600:
                    break
                if f"Ingest-Buffer: {buffer_id}" in commit.message:
                    info = ns.store.info(commit)
                    if buffer_id in info.trailers.get("Ingest-Buffer", []):
                        return info.id
        return None

