"""Conversation buffers: the messages ingestion has acknowledged and not yet distilled (SQLite).

Unlike the index and the vectors this is not derived state: a message acknowledged to its sender
lives only here until a commit holds what it said. So the file is in the shared home
(``$GITMEM_HOME/ingest/<namespace>.sqlite``), written with full fsync, and never deleted by
gitmem; a distilled buffer's messages are dropped once its commit is on main.

Each conversation has one *active* buffer (its messages with no ``buffer``) that fills while
the sealed ones are distilled: the double buffer. ``seen`` keeps every message id ever taken, so
a message sent again, even after its buffer was distilled, is taken once. Sealing moves the active messages into a new
buffer in one transaction. A buffer then goes ``sealed`` -> ``claimed`` (a worker holds it until
``claimed_until``) -> ``done``, or back to ``sealed`` with ``attempts`` + 1 and a ``not_before``
after a failure. A claim that lapses (its worker died) may be taken again.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .sqlitedb import immediate

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation TEXT NOT NULL,
    message_id TEXT NOT NULL,
    role TEXT NOT NULL,
    author TEXT,
    text TEXT NOT NULL,
    time TEXT,
    tokens INTEGER NOT NULL,
    masked INTEGER NOT NULL DEFAULT 0,
    received REAL NOT NULL,
    buffer TEXT
);
CREATE TABLE IF NOT EXISTS seen(conversation TEXT NOT NULL, message_id TEXT NOT NULL,
    PRIMARY KEY(conversation, message_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS messages_buffer ON messages(buffer, seq);
CREATE INDEX IF NOT EXISTS messages_active ON messages(conversation, buffer);
CREATE TABLE IF NOT EXISTS conversations(
    conversation TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    meta TEXT NOT NULL DEFAULT '{}',
    first REAL NOT NULL,
    last REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS buffers(
    id TEXT PRIMARY KEY,
    conversation TEXT NOT NULL,
    sealed REAL NOT NULL,
    reason TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,
    claimed_until REAL NOT NULL DEFAULT 0,
    claim TEXT,
    error TEXT,
    commit_id TEXT,
    result TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS buffers_state ON buffers(state, not_before);
CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class Buffered:
    """A message as the buffer holds it."""

    conversation: str
    message_id: str
    role: str
    author: str | None
    text: str
    time: str | None
    tokens: int
    masked: int


@dataclass(frozen=True)
class Sealed:
    """A sealed buffer: its id, conversation, why and when it was sealed, and its state."""

    id: str
    conversation: str
    sealed: float
    reason: str
    tokens: int
    messages: int
    state: str
    attempts: int
    error: str | None
    commit: str | None
    claim: str | None = None
    not_before: float = 0.0  # when a failed buffer may be tried again (Unix seconds)


@dataclass(frozen=True)
class Appended:
    """What :meth:`Buffers.append` took: new messages, repeats it ignored, and the active buffer's size."""

    added: int
    repeated: int
    active_tokens: int
    active_messages: int


class Buffers:
    """The buffers of one namespace (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        """Open (creating) the buffer file at ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(str(path), timeout=60, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")  # acknowledged means on disk
        # One connection serves every thread of the process (a gunicorn worker's threads): one at a time.
        self._lock = threading.RLock()
        with self._write() as db:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)

    def close(self) -> None:
        """Close the database connection."""
        self.db.close()

    def copy_to(self, dest: Path) -> None:
        """Write a consistent copy of the buffers to ``dest`` (SQLite's online backup), readable by its owner."""
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.touch(mode=0o600)
        with self._lock:
            target = sqlite3.connect(str(dest))
            try:
                self.db.backup(target)
            finally:
                target.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock, immediate(self.db) as db:
            yield db

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self.db.execute(sql, args).fetchall()

    def append(self, conversation: str, source: str, messages: Iterable[Buffered],
               meta: dict[str, Any] | None = None) -> Appended:
        """Add messages to the conversation's active buffer; a message id seen before is ignored."""
        now = time.time()
        added = repeated = 0
        with self._write() as db:
            db.execute("INSERT INTO conversations(conversation, source, meta, first, last) VALUES(?, ?, ?, ?, ?) "
                       "ON CONFLICT(conversation) DO UPDATE SET last = excluded.last",
                       (conversation, source, json.dumps(meta or {}), now, now))
            for m in messages:
                # ``seen`` outlives the messages (dropped once distilled): an id is taken once, ever.
                cursor = db.execute("INSERT OR IGNORE INTO seen VALUES(?, ?)", (conversation, m.message_id))
                if cursor.rowcount:
                    db.execute(
                        "INSERT INTO messages(conversation, message_id, role, author, text, time, tokens, masked, "
                        "received) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (conversation, m.message_id, m.role, m.author, m.text, m.time, m.tokens, m.masked, now))
                    added += 1
                    if m.masked:
                        self._count(db, "masked", m.masked)
                else:
                    repeated += 1
            self._count(db, "messages", added)
            self._count(db, "repeated", repeated)
            tokens, count = db.execute("SELECT COALESCE(SUM(tokens), 0), COUNT(*) FROM messages "
                                       "WHERE conversation = ? AND buffer IS NULL", (conversation,)).fetchone()
        return Appended(added, repeated, int(tokens), int(count))

    def _count(self, db: sqlite3.Connection, name: str, by: int) -> None:
        if by:
            db.execute("INSERT INTO counters VALUES(?, ?) ON CONFLICT(name) DO UPDATE SET value = value + ?",
                       (name, by, by))

    def known(self, conversation: str) -> bool:
        """Whether the conversation has taken any message."""
        return bool(self._read("SELECT 1 FROM seen WHERE conversation = ? LIMIT 1", (conversation,)))

    def message(self, conversation: str, message_id: str) -> Buffered | None:
        """A message still held in a buffer (not yet distilled), or None."""
        rows = self._read("SELECT conversation, message_id, role, author, text, time, tokens, masked FROM messages "
                          "WHERE conversation = ? AND message_id = ?", (conversation, message_id))
        return Buffered(*rows[0]) if rows else None

    def seal(self, conversation: str, reason: str) -> str | None:
        """Move the conversation's active messages into a new sealed buffer; its id, or None if empty."""
        buffer_id = uuid.uuid4().hex
        with self._write() as db:
            tokens, count = db.execute("SELECT COALESCE(SUM(tokens), 0), COUNT(*) FROM messages "
                                       "WHERE conversation = ? AND buffer IS NULL", (conversation,)).fetchone()
            if not count:
                return None
            db.execute("UPDATE messages SET buffer = ? WHERE conversation = ? AND buffer IS NULL",
                       (buffer_id, conversation))
            db.execute("INSERT INTO buffers(id, conversation, sealed, reason, tokens, messages, state) "
                       "VALUES(?, ?, ?, ?, ?, ?, 'sealed')", (buffer_id, conversation, time.time(), reason, tokens,
                                                             count))
        return buffer_id

    def idle(self, seconds: float) -> list[str]:
        """Conversations with active messages and none newer than ``seconds`` ago."""
        cutoff = time.time() - seconds
        rows = self._read("SELECT conversation FROM messages WHERE buffer IS NULL GROUP BY conversation "
                          "HAVING MAX(received) <= ?", (cutoff,))
        return [r[0] for r in rows]

    def active(self) -> list[str]:
        """Conversations with active messages."""
        return [r[0] for r in self._read("SELECT DISTINCT conversation FROM messages WHERE buffer IS NULL")]

    def due(self) -> list[str]:
        """Sealed buffers ready to distil: never claimed, failed and waited out, or whose claim lapsed."""
        now = time.time()
        rows = self._read("SELECT id FROM buffers WHERE (state = 'sealed' AND not_before <= ?) "
                          "OR (state = 'claimed' AND claimed_until <= ?) ORDER BY sealed", (now, now))
        return [r[0] for r in rows]

    def claim(self, buffer_id: str, seconds: float) -> str | None:
        """Hold a due buffer for ``seconds``; the claim's token, or None when it is not due (or not there)."""
        token = uuid.uuid4().hex
        now = time.time()
        with self._write() as db:
            cursor = db.execute(
                "UPDATE buffers SET state = 'claimed', claim = ?, claimed_until = ? WHERE id = ? AND "
                "((state = 'sealed' AND not_before <= ?) OR (state = 'claimed' AND claimed_until <= ?))",
                (token, now + seconds, buffer_id, now, now))
        return token if cursor.rowcount else None

    def holds(self, buffer_id: str, token: str) -> bool:
        """Whether the claim ``token`` still holds the buffer (it has not lapsed and been taken)."""
        rows = self._read("SELECT claim FROM buffers WHERE id = ? AND state = 'claimed'", (buffer_id,))
        return bool(rows) and rows[0][0] == token

    def get(self, buffer_id: str) -> Sealed | None:
        """One buffer, or None."""
        rows = self._read("SELECT id, conversation, sealed, reason, tokens, messages, state, attempts, error, "
                          "commit_id, claim, not_before FROM buffers WHERE id = ?", (buffer_id,))
        return Sealed(*rows[0]) if rows else None

    def source(self, conversation: str) -> tuple[str, dict[str, Any]]:
        """Where a conversation comes from (api, cli, slack, claude-code) and what its source said of it."""
        rows = self._read("SELECT source, meta FROM conversations WHERE conversation = ?", (conversation,))
        return (rows[0][0], json.loads(rows[0][1])) if rows else ("api", {})

    def messages(self, buffer_id: str) -> list[Buffered]:
        """A buffer's messages in the order they arrived."""
        rows = self._read("SELECT conversation, message_id, role, author, text, time, tokens, masked "
                          "FROM messages WHERE buffer = ? ORDER BY seq", (buffer_id,))
        return [Buffered(*row) for row in rows]

    def done(self, buffer_id: str, commit: str | None, result: dict[str, Any]) -> None:
        """Mark a buffer distilled and drop its messages (its commit holds what they said)."""
        with self._write() as db:
            db.execute("UPDATE buffers SET state = 'done', commit_id = ?, result = ?, error = NULL, claim = NULL "
                       "WHERE id = ?", (commit, json.dumps(result), buffer_id))
            db.execute("DELETE FROM messages WHERE buffer = ?", (buffer_id,))
            self._count(db, "distilled", 1)

    def failed(self, buffer_id: str, error: str, retry_in: float) -> int:
        """Put a buffer back to be tried again after ``retry_in`` seconds; how many attempts it has had."""
        with self._write() as db:
            cursor = db.execute(
                "UPDATE buffers SET state = 'sealed', attempts = attempts + 1, error = ?, not_before = ?, "
                "claim = NULL, claimed_until = 0 WHERE id = ?", (error[:2000], time.time() + retry_in, buffer_id))
            if not cursor.rowcount:
                return 0  # no such buffer: no failure to count (as with Redis)
            self._count(db, "failures", 1)
            row = db.execute("SELECT attempts FROM buffers WHERE id = ?", (buffer_id,)).fetchone()
        return int(row[0])

    def stats(self) -> dict[str, int]:
        """Counters and the buffers in each state, for status pages."""
        out = {name: int(value) for name, value in self._read("SELECT name, value FROM counters")}
        for state, count in self._read("SELECT state, COUNT(*) FROM buffers GROUP BY state"):
            out[f"buffers_{state}"] = int(count)
        out["active_messages"] = int(self._read("SELECT COUNT(*) FROM messages WHERE buffer IS NULL")[0][0])
        return out

    def recent(self, limit: int = 20) -> list[Sealed]:
        """The newest buffers, newest first."""
        rows = self._read("SELECT id, conversation, sealed, reason, tokens, messages, state, attempts, error, "
                          "commit_id, claim, not_before FROM buffers ORDER BY sealed DESC LIMIT ?", (limit,))
        return [Sealed(*row) for row in rows]
