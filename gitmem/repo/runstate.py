"""Per-namespace run state on disk: the consolidation and maintenance locks, the trigger's state file.

They live beside the search index under ``$GITMEM_HOME/state/<namespace>/`` and are derived,
disposable state: deleting them loses no memory.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import Conflict

#: What a namespace can be locked for; each has its own lock, so maintenance never waits for a
#: consolidation (packing is safe beside writers) but two of one kind never overlap.
LOCKS = ("consolidation", "maintenance")


class AlreadyRunning(Conflict):
    """Another run of the same kind (consolidation, maintenance) holds the namespace's lock."""


class RunState:
    """The locks and the consolidation state file of one namespace."""

    def __init__(self, state_dir: Path, namespace: str) -> None:
        self.namespace = namespace
        self.folder = state_dir / namespace
        self.file = self.folder / "consolidation.json"

    def read(self) -> dict[str, Any]:
        """What the trigger needs: when the last run finished and when one was last enqueued."""
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write(self, **values: Any) -> None:
        """Update the state file atomically (write a temporary file, rename it)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        data = self.read() | values
        # Unique per process and thread: gunicorn threads trigger from one process at once.
        tmp = self.file.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, self.file)

    @contextmanager
    def lock(self, what: str = "consolidation", *, wait: bool = False) -> Iterator[None]:
        """Hold the namespace's lock for ``what`` (one of :data:`LOCKS`), or raise :class:`AlreadyRunning`.

        An ``flock`` on a file beside the index: the kernel releases it when the holder exits, so
        a worker killed mid-run never leaves the namespace locked. ``wait``: block until the
        holder is done instead of raising.
        """
        if what not in LOCKS:
            raise ValueError(f"unknown lock {what!r}")
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / f"{what}.lock", "a+b") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError as exc:
                raise AlreadyRunning(f"{what} of namespace {self.namespace!r} is already running; "
                                     "wait for it to finish") from exc
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
