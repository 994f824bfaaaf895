"""The ``gitmem`` command: a thin click wrapper over :class:`gitmem.service.MemoryService`.

Each front end adds its commands in a module of its own; they are registered here. Front ends
installed beside gitmem (the Slack bot's ``gitmem slack``) add theirs through the
``gitmem.commands`` entry points.
"""

from __future__ import annotations

import logging
from importlib.metadata import entry_points

from . import (
    agent,  # noqa: F401  (agent install, agent hook)
    consolidate,  # noqa: F401  (consolidate, review, worker)
    credential,  # noqa: F401  (credential: git's credential helper)
    ingest,  # noqa: F401  (ingest, conversations)
    maintenance,  # noqa: F401  (maintain, backup, restore-backup)
    mcp,  # noqa: F401  (mcp)
    memory,  # noqa: F401  (registers the core commands)
    purge,  # noqa: F401  (purge --history)
    server,  # noqa: F401  (serve, key)
    sync,  # noqa: F401  (sync, mirror)
)
from .base import main

__all__ = ["main"]
COMMANDS_GROUP = "gitmem.commands"

for _point in entry_points(group=COMMANDS_GROUP):
    try:
        main.add_command(_point.load(), _point.name)
    except ImportError as _exc:  # a front end whose dependencies are missing adds nothing
        logging.getLogger(__name__).warning("command %s is unavailable: %s", _point.name, _exc)
