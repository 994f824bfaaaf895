"""Signed-out page sessions: recorded in the shared home, seen by every process, dropped once expired."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

from gitmem.repo import SignedOut


def test_a_signed_out_session_is_seen_by_another_process_and_forgotten_once_expired(tmp_path: Path) -> None:
    here, there = SignedOut(tmp_path), SignedOut(tmp_path)  # two web processes sharing one home
    assert not there.ended("s1")
    here.end("s1", time.time() + 3600)
    here.end("old", time.time() - 1)  # its cookie expired already
    assert there.ended("s1") and not there.ended("s2")
    assert stat.S_IMODE(here.path.stat().st_mode) == 0o600
    # The ids are bearer secrets: only their digests are kept.
    assert "s1" not in here.path.read_text()
    here.end("s2", time.time() + 3600)  # the next sign-out drops what expired
    kept = json.loads(here.path.read_text())
    assert len(kept) == 2 and there.ended("s1") and there.ended("s2")
