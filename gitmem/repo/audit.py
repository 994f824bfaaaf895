"""The audit log: what was done that history itself no longer shows (a purge rewrote it).

One JSON object a line in ``<home>/audit.jsonl``, in the shared home so every host appends to
the same file (an exclusive ``flock`` around each line); the file is the owner's alone (0600).
An entry never holds the text it is about, only who, when, what and why.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

FILE = "audit.jsonl"


class AuditLog:
    """Append and read the entries of one audit log file."""

    def __init__(self, home: Path) -> None:
        self.path = home / FILE

    def append(self, entry: dict[str, Any]) -> None:
        """Add one entry at the end, whole, whatever other processes append meanwhile."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)  # releases the flock

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first (a line that does not read is skipped)."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                out.append(entry)
        return out
