"""Per-namespace run state on disk: the consolidation lock and the trigger's state file.

Both live beside the search index under ``$GITMEM_HOME/state/<namespace>/`` and are derived,
disposable state: deleting them loses no memory. The lock is a file lock, which holds on one
host; given :class:`Leases` (a lease on Redis, :mod:`.leases`) it holds across hosts too.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

from ..errors import AlreadyRunning

__all__ = ["AlreadyRunning", "Fence", "Leases", "LocalFence", "RunState"]


#: What a namespace can be locked for; each has its own lock, so maintenance never waits for a
#: consolidation (packing is safe beside writers) but two of one kind never overlap.
LOCKS = ("consolidation", "maintenance")


class Fence(Protocol):
    """What a run holding the lock checks before it moves a ref: that the lock is still its own."""

    @property
    def token(self) -> int | None:
        """The fencing token: larger for every later holder of the namespace (None: a file lock alone)."""

    def check(self) -> None:
        """Raise :class:`~gitmem.errors.LeaseLost` when the lock is no longer this run's."""


class LocalFence:
    """The fence of the file lock alone: the kernel holds it for as long as the process lives."""

    token: int | None = None

    def check(self) -> None:
        """Nothing to check: a live process cannot lose its file lock."""


class Leases(Protocol):
    """Locks shared by every host (:class:`gitmem.repo.leases.RedisLeases`)."""

    def hold(self, namespace: str) -> AbstractContextManager[Fence]:
        """Hold the namespace's lease for a block, or raise :class:`AlreadyRunning`."""


class RunState:
    """The consolidation lock and state file of one namespace."""

    def __init__(self, state_dir: Path, namespace: str, leases: Leases | None = None) -> None:
        self.namespace = namespace
        self.leases = leases
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
    def lock(self, what: str = "consolidation", *, wait: bool = False) -> Iterator[Fence]:
        """Hold the namespace's lock for ``what`` (one of :data:`LOCKS`), or raise :class:`AlreadyRunning`.

        An ``flock`` on a file beside the index: the kernel releases it when the holder exits, so
        a worker killed mid-run never leaves the namespace locked; ``wait`` blocks until the holder
        is done instead. With :class:`Leases`, a consolidation takes the namespace's lease too
        (after the file lock, so runs on one host queue on the file and never on Redis), and the
        fence it yields checks that lease.
        """
        if what not in LOCKS:
            raise ValueError(f"unknown lock {what!r}")
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / f"{what}.lock", "a+b") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError as exc:
                article = "a" if what == "consolidation" else "the"
                raise AlreadyRunning(f"{article} {what} of namespace {self.namespace!r} is already running; "
                                     "wait for it to finish") from exc
            try:
                if self.leases is None or what != "consolidation":
                    yield LocalFence()
                else:
                    with self.leases.hold(self.namespace) as fence:
                        yield fence
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
