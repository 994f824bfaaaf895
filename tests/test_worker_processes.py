"""The background worker's processes, for real: its beat dies with it, one beat per home, serve restarts it.

Each process under test runs in a session of its own, so the test can see every process it left.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem.settings import Settings

from .test_tasks import kill, worker, worker_env
from .web.test_serve import free_port

WAIT = 90.0  # seconds a step may take before the test fails (never reached when healthy)
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")


def stat(pid: int) -> tuple[int, int] | None:
    """A process's parent and session, or None when it is gone (or a zombie, gone but for its exit status)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return None if fields[0] == "Z" else (int(fields[1]), int(fields[3]))


def in_session(session: int) -> list[int]:
    """The live processes of a session."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (info := stat(int(entry.name))) is not None and info[1] == session:
            found.append(int(entry.name))
    return sorted(found)


def until(condition: Callable[[], object], what: str, log: Path) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen; log:\n{log.read_text(errors='replace')[-4000:]}")
        time.sleep(0.1)


def beat_pid(settings: Settings) -> int | None:
    """The pid the beat that holds the home's beat lock wrote into it."""
    try:
        found = re.match(r"pid (\d+)", (settings.home / "beat.lock").read_text())
    except FileNotFoundError:
        return None
    return int(found.group(1)) if found else None


def test_kill_9_of_a_worker_leaves_no_beat_behind(tmp_path: Path) -> None:
    settings, log = Settings(home=tmp_path / "home"), tmp_path / "worker.log"
    with worker(settings, log, "--beat") as proc:
        until(lambda: beat_pid(settings) is not None, "the beat", log)
        beat = beat_pid(settings)
        assert beat is not None and stat(beat) == (proc.pid, proc.pid)
        os.kill(proc.pid, signal.SIGKILL)  # the worker alone, as the OOM killer would
        proc.wait(WAIT)
        until(lambda: in_session(proc.pid) == [], "every process of the worker ending", log)


def test_a_second_worker_beat_waits_until_the_first_is_gone(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    with worker(settings, first_log, "--beat") as first:
        until(lambda: beat_pid(settings) is not None, "the first beat", first_log)
        held = beat_pid(settings)
        with worker(settings, second_log, "--beat") as second:
            until(lambda: "this one waits for it" in second_log.read_text(errors="replace"),
                  "the second beat waiting", second_log)
            assert beat_pid(settings) == held, "two beats would queue every run twice"
            kill(first, signal.SIGKILL)
            until(lambda: beat_pid(settings) not in (None, held), "the second beat taking over", second_log)
            taken = beat_pid(settings)
            assert taken is not None and stat(taken) == (second.pid, second.pid)


def test_serve_starts_its_worker_again_when_it_dies(tmp_path: Path) -> None:
    settings, log = Settings(home=tmp_path / "home"), tmp_path / "serve.log"
    port = free_port()
    with open(log, "ab") as out:
        serve = subprocess.Popen([sys.executable, "-m", "gitmem", "serve", "--port", str(port), "--workers", "1"],
                                 env=worker_env(settings), stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)

    def started() -> list[int]:
        return [int(p) for p in re.findall(r"started background worker \(pid (\d+)\)", log.read_text(errors="replace"))]

    try:
        until(lambda: started() and beat_pid(settings) is not None, "the background worker and its beat", log)
        [first] = started()
        old_beat = beat_pid(settings)
        os.kill(first, signal.SIGKILL)
        until(lambda: len(started()) == 2, "a new background worker", log)
        second = started()[1]
        assert second != first and stat(second) == (serve.pid, serve.pid)
        # Its beat takes the lock once the old one died with its worker: still one beat.
        until(lambda: beat_pid(settings) not in (None, old_beat), "the new worker's beat", log)
        assert stat(old_beat or 0) is None
        serve.send_signal(signal.SIGTERM)
        serve.wait(WAIT)
        until(lambda: in_session(serve.pid) == [], "every process of serve ending", log)
    finally:
        kill(serve, signal.SIGKILL)  # whatever is left of its process group
