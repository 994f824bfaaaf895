"""The background worker ``gitmem serve`` started on this host, so /healthz tells one booting from one missing.

``serve`` writes ``state/serve-worker.json`` (the worker's pid, this host's name, when it started)
as it starts the child and removes it when it stops it. Until the worker answers Celery's ping,
:func:`starting` says whether it is still booting: the process lives, on this host, and started
less than :data:`START_GRACE` seconds ago. Derived state, like the rest of ``state/``.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

#: Seconds a worker may take to answer its first ping before /healthz calls it missing.
START_GRACE = 60.0
FILE = "serve-worker.json"


def started(state_dir: Path, pid: int, *, at: float | None = None) -> None:
    """Record that ``serve`` started its background worker ``pid`` now (or ``at``, seconds since the epoch)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    record = {"pid": pid, "host": socket.gethostname(), "started": time.time() if at is None else at}
    tmp = state_dir / f".{FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(record), encoding="utf-8")
    os.replace(tmp, state_dir / FILE)


def stopped(state_dir: Path, pid: int) -> None:
    """Forget the worker ``pid`` (another serve's record, written since, is left alone)."""
    path = state_dir / FILE
    if _read(path).get("pid") == pid:
        path.unlink(missing_ok=True)


def starting(state_dir: Path, *, now: float | None = None) -> bool:
    """Whether the worker ``serve`` started here is alive and within :data:`START_GRACE` of its start."""
    record = _read(state_dir / FILE)
    pid, began = record.get("pid"), record.get("started")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not isinstance(began, int | float):
        return False
    if record.get("host") != socket.gethostname():
        return False
    if not 0 <= (time.time() if now is None else now) - began < START_GRACE:
        return False
    try:
        os.kill(pid, 0)  # no signal sent: only whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, run by another user
        return True
    return True


def alive(state_dir: Path) -> bool:
    """Whether the worker ``serve`` started on this host is running (however long ago it started)."""
    record = _read(state_dir / FILE)
    pid = record.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or record.get("host") != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
