"""A JSON file of records that every process on a home shares (API keys, watched channels).

Readers cache the records and read the file again only when it changed: every edit writes a new
file aside and renames it over, so its inode changes (mtime alone may not, on a file system with a
coarse clock, and two edits may leave the same size). Writers take turns on an ``flock`` of a
``.lock`` file beside it and write back only when the records changed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class SharedRecords(Generic[K, V]):
    """The records in ``path``, by ``key``; ``load``/``dump`` turn a record into and out of JSON."""

    def __init__(self, path: Path, key: Callable[[V], K], load: Callable[[dict[str, Any]], V],
                 dump: Callable[[V], dict[str, Any]], *, mode: int = 0o644) -> None:
        """Keep the records at ``path``, written with ``mode``."""
        self.path = path
        self._key, self._load, self._dump, self._mode = key, load, dump, mode
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._records: dict[K, V] = {}

    def read(self) -> dict[K, V]:
        """The records on disk, read again only when the file changed."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            with self._lock:
                self._seen, self._records = None, {}
            return {}
        stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if stamp != self._seen:
                data = json.loads(self.path.read_text(encoding="utf-8") or "[]")
                self._records = {self._key(record): record for record in map(self._load, data)}
                self._seen = stamp
            return self._records

    @contextlib.contextmanager
    def editing(self) -> Iterator[dict[K, V]]:
        """Hold the file lock, hand out the records to change, and write them back atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            with self._lock:
                self._seen = None
            records = dict(self.read())
            before = dict(records)
            yield records
            if records == before:
                return
            tmp = self.path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, self._mode)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump([self._dump(r) for r in records.values()], out, indent=2, ensure_ascii=False)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
