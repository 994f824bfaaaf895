"""The watch list: watched chat channels in the shared home, the same for every process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.errors import InvalidInput, NamespaceNotFound
from gitmem.service import MemoryService
from gitmem.settings import Settings

ADD = """
import sys
from gitmem.service import MemoryService
from gitmem.settings import Settings
from pathlib import Path
svc = MemoryService(Settings(home=Path(sys.argv[1])))
for channel in sys.argv[2:]:
    svc.watch("default", channel, "slack:U" + channel)
"""


def test_watch_unwatch_and_list(svc: MemoryService) -> None:
    watch, added = svc.watch("default", "C0AAA", "slack:UALICE")
    assert added and (watch.namespace, watch.channel, watch.by) == ("default", "C0AAA", "slack:UALICE")
    again, added = svc.watch("default", "C0AAA", "slack:UBOB")
    assert not added and again == watch  # the first watch stays, with who turned it on
    svc.init("ops")
    svc.watch("ops", "C0BBB", "slack:UBOB")
    assert [(w.namespace, w.channel) for w in svc.watching()] == [("default", "C0AAA"), ("ops", "C0BBB")]
    assert [w.channel for w in svc.watching("ops")] == ["C0BBB"]
    assert svc.watched("default", "C0AAA") == watch and svc.watched("ops", "C0AAA") is None
    assert svc.unwatch("default", "C0AAA", "slack:UBOB") == watch
    assert svc.unwatch("default", "C0AAA", "slack:UBOB") is None
    assert svc.watched("default", "C0AAA") is None


def test_the_list_survives_a_restart_in_the_shared_home(svc: MemoryService, settings: Settings) -> None:
    svc.watch("default", "C0AAA", "slack:UALICE")
    path = settings.home / "ingest" / "watched.json"
    assert json.loads(path.read_text())[0]["channel"] == "C0AAA"
    again = MemoryService(settings)
    try:
        assert [w.channel for w in again.watching()] == ["C0AAA"]
    finally:
        again.close()


def test_other_processes_see_changes_at_once_and_their_writes_all_land(svc: MemoryService,
                                                                       settings: Settings) -> None:
    assert svc.watched("default", "C0PROC0") is None  # read (and cached) before the others write
    channels = [[f"C0PROC{p}{i}" for i in range(10)] for p in range(4)]
    procs = [subprocess.Popen([sys.executable, "-c", ADD, str(settings.home), *names]) for names in channels]
    assert [p.wait(120) for p in procs] == [0, 0, 0, 0]
    assert sorted(w.channel for w in svc.watching()) == sorted(c for names in channels for c in names)
    assert svc.watched("default", "C0PROC00") is not None


@pytest.mark.parametrize("channel", ["", "C 1", "<#C1>", "C1\nC2", "-C1", "C" * 101, None])
def test_a_bad_channel_id_is_refused_and_nothing_changes(svc: MemoryService, settings: Settings,
                                                         channel: object) -> None:
    svc.watch("default", "C0AAA", "slack:UALICE")
    before = (settings.home / "ingest" / "watched.json").read_bytes()
    with pytest.raises(InvalidInput, match="a channel id is"):
        svc.watch("default", channel, "slack:UALICE")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="a channel id is"):
        svc.unwatch("default", channel, "slack:UALICE")  # type: ignore[arg-type]
    assert (settings.home / "ingest" / "watched.json").read_bytes() == before


def test_watching_into_a_namespace_that_does_not_exist_is_refused(svc: MemoryService, settings: Settings) -> None:
    with pytest.raises(NamespaceNotFound):
        svc.watch("nowhere", "C0AAA", "slack:UALICE")
    with pytest.raises(InvalidInput):
        svc.watch("default", "C0AAA", "two\nlines")
    assert svc.watching() == []
    assert not (settings.home / "ingest" / "watched.json").exists()


def test_an_unchanged_list_is_not_rewritten(svc: MemoryService, settings: Settings) -> None:
    svc.watch("default", "C0AAA", "slack:UALICE")
    path: Path = settings.home / "ingest" / "watched.json"
    inode = path.stat().st_ino
    svc.watch("default", "C0AAA", "slack:UBOB")
    svc.unwatch("default", "C0BBB", "slack:UBOB")
    assert path.stat().st_ino == inode
