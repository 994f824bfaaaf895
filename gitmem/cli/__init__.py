"""The ``gitmem`` command: a thin click wrapper over :class:`gitmem.service.MemoryService`.

Each front end adds its commands in a module of its own; they are registered here.
"""

from __future__ import annotations

from . import (
    consolidate,  # noqa: F401  (consolidate, review, worker)
    memory,  # noqa: F401  (registers the core commands)
    server,  # noqa: F401  (serve, key)
    slack,  # noqa: F401  (slack)
)
from .base import main

__all__ = ["main"]
