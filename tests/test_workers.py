"""The record of the background worker `gitmem serve` starts: alive, on this host, within its grace."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmem.repo import workers


@pytest.fixture
def alive() -> Iterator[int]:
    proc = subprocess.Popen(["sleep", "60"])
    yield proc.pid
    proc.kill()
    proc.wait()


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_live_worker_started_a_moment_ago_is_starting(tmp_path: Path, alive: int) -> None:
    assert not workers.starting(tmp_path)
    workers.started(tmp_path, alive)
    assert workers.starting(tmp_path)
    assert not workers.starting(tmp_path, now=time.time() + workers.START_GRACE + 1)
    assert not workers.starting(tmp_path, now=time.time() - 5)  # a clock that ran backwards: not trusted
    workers.stopped(tmp_path, alive)
    assert not workers.starting(tmp_path) and not (tmp_path / workers.FILE).exists()


def test_a_dead_or_foreign_worker_is_not_starting(tmp_path: Path, alive: int) -> None:
    workers.started(tmp_path, dead_pid())
    assert not workers.starting(tmp_path)
    workers.started(tmp_path, alive)
    record = json.loads((tmp_path / workers.FILE).read_text(encoding="utf-8"))
    (tmp_path / workers.FILE).write_text(json.dumps(record | {"host": "another-host"}), encoding="utf-8")
    assert not workers.starting(tmp_path)


@pytest.mark.parametrize("content", ["", "not json", "[1]", '{"pid": "1", "started": 1}', '{"pid": true}',
                                     '{"pid": -1, "started": 1e18}'])
def test_a_damaged_record_is_not_starting(tmp_path: Path, content: str) -> None:
    (tmp_path / workers.FILE).write_text(content, encoding="utf-8")
    assert not workers.starting(tmp_path)


def test_stopping_another_worker_leaves_the_record(tmp_path: Path, alive: int) -> None:
    workers.started(tmp_path, alive)
    workers.stopped(tmp_path, alive + 1)
    assert workers.starting(tmp_path)


def test_alive_is_the_recorded_worker_running_here_however_old(tmp_path: Path) -> None:
    assert not workers.alive(tmp_path)
    workers.started(tmp_path, os.getpid(), at=0.0)  # started long ago: no longer "starting", still alive
    assert workers.alive(tmp_path) and not workers.starting(tmp_path)
    workers.stopped(tmp_path, os.getpid())
    assert not workers.alive(tmp_path)
