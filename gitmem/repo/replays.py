"""Webhook signatures seen recently, shared by every server process through one SQLite file."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path


class ReplayGuard:
    """Signatures seen within the window, shared by every process through SQLite."""

    def __init__(self, path: Path, window: int) -> None:
        self.path = path
        self.window = window
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None,
                                 check_same_thread=False)
            db.execute("CREATE TABLE IF NOT EXISTS seen(signature TEXT PRIMARY KEY, at INTEGER)")
            self._db = db
        return self._db

    def first_use(self, signature: str, timestamp: int) -> bool:
        """Record a signature; False when it was recorded before."""
        with self._lock:
            db = self._conn()
            db.execute("DELETE FROM seen WHERE at < ?", (int(time.time()) - 2 * self.window,))
            try:
                db.execute("INSERT INTO seen VALUES (?, ?)", (signature, timestamp))
            except sqlite3.IntegrityError:
                return False
            return True

    def close(self) -> None:
        """Close the database; the next :meth:`first_use` opens it again."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
