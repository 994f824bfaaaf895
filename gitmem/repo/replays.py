"""Webhook signatures seen recently, so a signed request is accepted once by whichever server gets it.

Every web process must see every signature: in one SQLite file under the state folder
(:class:`SqliteReplayGuard`, for the processes of one host), or in Redis when hosts share one
(:class:`RedisReplayGuard`: ``SET NX`` with an expiry; SQLite is not safe on a network file
system, and a state folder on each host's own disk would let a replay through another host).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Unavailable
from ..settings import Settings

if TYPE_CHECKING:
    import redis


class ReplayGuard:
    """Signatures seen within the window; :meth:`first_use` records one and says if it is new."""

    def first_use(self, signature: str, timestamp: int) -> bool:
        """Record a signature; False when it was recorded before."""
        raise NotImplementedError

    def close(self) -> None:
        """Let go of the connection; the next :meth:`first_use` opens it again."""


class SqliteReplayGuard(ReplayGuard):
    """Signatures seen within the window, shared by every process of a host through SQLite."""

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


class RedisReplayGuard(ReplayGuard):
    """Signatures seen within the window, shared by every host through Redis.

    Each is a key ``<prefix>:webhook-signature:<signature>`` set only if absent, expiring after
    twice the window (a timestamp is accepted up to one window either side of now).
    """

    def __init__(self, url: str, prefix: str, window: int) -> None:
        # Loaded here, when the app is made, not by the first requests in several threads at once.
        from . import leases

        self._connect = leases.connect
        self.url = url
        self.prefix = prefix
        self.window = window
        self._client: redis.Redis | None = None
        self._lock = threading.Lock()

    def first_use(self, signature: str, timestamp: int) -> bool:
        """Record a signature; False when it was recorded before (by any host)."""
        from redis.exceptions import RedisError  # loaded with the leases module in __init__

        with self._lock:
            if self._client is None:
                self._client = self._connect(self.url)
        try:
            stored = self._client.set(f"{self.prefix}:webhook-signature:{signature}", timestamp, nx=True,
                                      ex=2 * self.window)
        except RedisError as exc:
            raise Unavailable(f"cannot reach Redis to check the request's signature against replays: {exc}; "
                              "try again") from exc
        return bool(stored)

    def close(self) -> None:
        """Close the connection pool; the next :meth:`first_use` connects again."""
        if self._client is not None:
            self._client.close()
            self._client = None


def replay_guard(settings: Settings, window: int) -> ReplayGuard:
    """Where every web process keeps the signatures it saw: the Redis hosts share, else SQLite here."""
    url = settings.shared_redis_url
    if url is not None:
        return RedisReplayGuard(url, settings.celery_queue, window)
    return SqliteReplayGuard(settings.state_dir / "webhook-signatures.sqlite", window)
