"""Sentence vectors and semantic neighbours of one namespace: derived state, like the search index.

A SQLite file beside the index (``vectors.sqlite``) holds, for one model:

- ``vectors``: each memory text's vector (float16), keyed by the text's hash, so a text
  embedded once is never embedded again, whatever file or commit holds it;
- ``members`` and ``pairs``: the semantic neighbours consolidation plans with. ``pairs`` holds
  every pair of member texts at or above the threshold that is among the ``k`` nearest of
  either; a text that joins is compared with all members once, a text that leaves takes its
  pairs with it, and the texts that lost a neighbour are compared again. So a warm plan reads
  its neighbours instead of comparing every memory with every other.

Another model, threshold or ``k`` starts the file afresh. Delete it at any time: it is rebuilt.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .sqlitedb import connect as _connect

if TYPE_CHECKING:  # numpy loads with the first vector read or written, not with the repository layer
    import numpy as np

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vectors(hash TEXT PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS members(hash TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pairs(a TEXT NOT NULL, b TEXT NOT NULL, cos REAL NOT NULL, PRIMARY KEY(a, b))
    WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS pairs_b ON pairs(b);
"""
_SCHEMA_VERSION = "1"
_CHUNK = 500  # hashes per IN (...) query


class VectorStore:
    """The vectors and neighbour pairs of one namespace for one model (see the module docstring)."""

    def __init__(self, path: Path, model: str) -> None:
        """Open (or start afresh) the file at ``path`` for ``model``."""
        self.path = path
        self.model = model
        self.db = _connect(path, durable=False)
        self.db.execute("BEGIN IMMEDIATE")
        try:
            try:
                found = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
            except sqlite3.OperationalError:
                found = {}
            if found.get("schema") != _SCHEMA_VERSION or found.get("model") != model:
                for table in ("meta", "vectors", "members", "pairs"):
                    self.db.execute(f"DROP TABLE IF EXISTS {table}")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                self.db.executemany("INSERT INTO meta VALUES(?, ?)", [("schema", _SCHEMA_VERSION), ("model", model)])
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def close(self) -> None:
        """Close the database connection."""
        self.db.close()

    def version(self) -> int:
        """A number that changes when another connection (another process) commits to the file."""
        return int(self.db.execute("PRAGMA data_version").fetchone()[0])

    def count(self) -> int:
        """How many texts have a vector."""
        return int(self.db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def known(self, hashes: Sequence[str]) -> set[str]:
        """Which of ``hashes`` have a vector."""
        if len(hashes) > 20 * _CHUNK:  # most of the file: one scan of the keys beats many lookups
            return {r[0] for r in self.db.execute("SELECT hash FROM vectors")} & set(hashes)
        out: set[str] = set()
        for start in range(0, len(hashes), _CHUNK):
            part = list(hashes[start : start + _CHUNK])
            out.update(r[0] for r in self.db.execute(
                f"SELECT hash FROM vectors WHERE hash IN ({','.join('?' * len(part))})", part))
        return out

    def get(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors of ``hashes`` that are stored (float32)."""
        import numpy as np

        out: dict[str, np.ndarray] = {}
        if len(hashes) > 20 * _CHUNK:  # most of the file: one scan beats many lookups
            wanted = set(hashes)
            rows = [(key, blob) for key, blob in self.db.execute("SELECT hash, vec FROM vectors") if key in wanted]
            if rows:
                matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float16)
                matrix = matrix.reshape(len(rows), -1).astype(np.float32)
                out = {key: matrix[i] for i, (key, _) in enumerate(rows)}
            return out
        for start in range(0, len(hashes), _CHUNK):
            part = list(hashes[start : start + _CHUNK])
            for key, blob in self.db.execute(
                    f"SELECT hash, vec FROM vectors WHERE hash IN ({','.join('?' * len(part))})", part):
                out[key] = np.frombuffer(blob, dtype=np.float16).astype(np.float32)
        return out

    def put(self, hashes: Sequence[str], matrix: np.ndarray) -> None:
        """Store one vector per hash (rows of ``matrix``)."""
        import numpy as np

        rows = [(h, np.asarray(v, dtype=np.float16).tobytes()) for h, v in zip(hashes, matrix, strict=True)]
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany("INSERT OR REPLACE INTO vectors VALUES(?, ?)", rows)
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # --- neighbours ----------------------------------------------------------------------------

    def settings_for_pairs(self, threshold: float, k: int) -> None:
        """Start the neighbour pairs afresh when they were found with another threshold or ``k``."""
        wanted = f"{threshold:.4f}/{k}"
        row = self.db.execute("SELECT value FROM meta WHERE key='pairs'").fetchone()
        if row is None or row[0] != wanted:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("DELETE FROM members")
            self.db.execute("DELETE FROM pairs")
            self.db.execute("INSERT OR REPLACE INTO meta VALUES('pairs', ?)", (wanted,))
            self.db.execute("COMMIT")

    def members(self) -> set[str]:
        """The texts whose neighbours among the other members are all in ``pairs``."""
        return {r[0] for r in self.db.execute("SELECT hash FROM members")}

    def leave(self, hashes: Iterable[str]) -> set[str]:
        """Take texts out of the members with their pairs; returns the members that lost a neighbour."""
        gone = list(hashes)
        touched: set[str] = set()
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for start in range(0, len(gone), _CHUNK):
                part = gone[start : start + _CHUNK]
                marks = ",".join("?" * len(part))
                for a, b in self.db.execute(f"SELECT a, b FROM pairs WHERE a IN ({marks}) OR b IN ({marks})",
                                            part + part):
                    touched.update((a, b))
                self.db.execute(f"DELETE FROM pairs WHERE a IN ({marks}) OR b IN ({marks})", part + part)
                self.db.execute(f"DELETE FROM members WHERE hash IN ({marks})", part)
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")
        return touched - set(gone)

    def join(self, hashes: Iterable[str], pairs: Iterable[tuple[str, str, float]]) -> None:
        """Record texts as members, with the pairs found comparing them with every member."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany("INSERT OR REPLACE INTO pairs VALUES(?, ?, ?)",
                                [(a, b, c) if a < b else (b, a, c) for a, b, c in pairs])
            self.db.executemany("INSERT OR IGNORE INTO members VALUES(?)", [(h,) for h in hashes])
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def pairs(self) -> list[tuple[str, str, float]]:
        """Every stored neighbour pair ``(a, b, cosine)`` with ``a < b``."""
        return [(a, b, float(c)) for a, b, c in self.db.execute("SELECT a, b, cos FROM pairs")]

    def clear(self) -> None:
        """Drop every vector and pair (a rebuild)."""
        self.db.execute("BEGIN IMMEDIATE")
        for table in ("vectors", "members", "pairs"):
            self.db.execute(f"DELETE FROM {table}")
        self.db.execute("DELETE FROM meta WHERE key='pairs'")
        self.db.execute("COMMIT")
