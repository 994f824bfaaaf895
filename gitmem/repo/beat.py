"""One beat per home, and no beat that outlives its worker.

``gitmem worker --beat`` runs Celery's beat (the scheduler) as a child process of the worker. A
worker killed with ``kill -9`` left that child running under PID 1, still queueing runs; the next
worker's beat then made two. So the beat, once it starts:

* asks the kernel to send it SIGTERM when its parent dies (Linux's ``PR_SET_PDEATHSIG``), and
  exits at once if its parent is already gone;
* takes an exclusive ``flock`` of ``$GITMEM_HOME/beat.lock`` before it schedules anything, waiting
  while another beat holds it. The kernel lets the lock go with its holder, however it dies, and
  the shared home makes it one beat for every host that shares it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import sys
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
_held: list[IO[str]] = []  # the lock file, open for as long as this process schedules


def die_with_parent() -> None:
    """Have the kernel end this process (SIGTERM) when its parent dies; exit now if it has died already."""
    import ctypes  # only in a beat's process: the CLI's start-up does without them
    import multiprocessing

    parent = multiprocessing.parent_process()
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            log.warning("beat: cannot ask to die with the worker (prctl: %s)", os.strerror(ctypes.get_errno()))
    # The parent may have died before the request above: then nothing would ever send the signal.
    if parent is not None and os.getppid() != parent.pid:
        log.warning("beat: its worker (pid %s) is gone; stopping", parent.pid)
        os._exit(0)


def hold_beat_lock(path: Path) -> None:
    """Take the beat lock at ``path`` for the rest of this process's life, waiting while another beat holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - kept open: the lock lives with it
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        log.warning("beat: another beat (%s) holds %s; this one waits for it, so runs are queued once", holder,
                    path)
        fcntl.flock(handle, fcntl.LOCK_EX)
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}\n")
    handle.flush()
    log.info("beat: holds %s (pid %s)", path, os.getpid())
    _held.append(handle)
