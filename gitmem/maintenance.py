"""Maintenance: pack each namespace's repository.

libgit2 writes every object loose and never packs; :meth:`Maintenance.maintain` packs refs and
objects (see :mod:`gitmem.repo.packing`) under the namespace's maintenance lock, with the
object counts before and after. The workers run it on a daily beat, never in a write's path.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from .repo import Namespaces, ObjectCounts, RunState, packing
from .settings import Settings


@dataclass(frozen=True)
class Maintained:
    """One namespace packed: its object store before and after, and how long it took."""

    namespace: str
    before: ObjectCounts
    after: ObjectCounts
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"namespace": self.namespace, "before": self.before.to_dict(), "after": self.after.to_dict(),
                "seconds": round(self.seconds, 3)}


class Maintenance:
    """Packing for every namespace under one home."""

    def __init__(self, namespaces: Namespaces, settings: Settings) -> None:
        self.namespaces = namespaces
        self.settings = settings

    def _lock(self, namespace: str, *, wait: bool = False) -> AbstractContextManager[None]:
        return RunState(self.settings.state_dir, namespace).lock("maintenance", wait=wait)

    def maintain(self, namespace: str) -> Maintained:
        """Pack ``namespace``'s repository; raises :class:`~gitmem.repo.AlreadyRunning` if it is being packed."""
        repo = self.namespaces.open(namespace).store.path
        with self._lock(namespace):
            started = time.perf_counter()
            before = packing.count_objects(repo)
            packing.pack(repo)
            after = packing.count_objects(repo)
        return Maintained(namespace, before, after, time.perf_counter() - started)
