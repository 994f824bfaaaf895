"""The SQLite databases of the repository layer: opened in WAL mode, written in immediate transactions."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def connect(path: Path, *, durable: bool = True) -> sqlite3.Connection:
    """Open a WAL database; ``durable=False`` skips fsyncs for data that can be rebuilt."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), timeout=60, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={'NORMAL' if durable else 'OFF'}")
    return db


@contextmanager
def immediate(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction (``BEGIN IMMEDIATE``) for the block, rolled back if it raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
