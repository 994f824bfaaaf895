"""Mirrors: a real worker pushes every change to a local bare repository and to a git HTTP host.

The host is a local ``git http-backend`` server that wants a token (tests/fakes/git_host.py); it
is taken down and brought back up while writes go on.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmem.errors import InvalidInput, NotFound
from gitmem.repo import Change
from gitmem.service import MemoryService, build_service
from gitmem.settings import Settings
from tests.fakes.git_host import GitHost

from .test_tasks import RESULT_WAIT, worker

TOKEN = "mirror-token-for-tests"


def refs(repo: Path) -> dict[str, str]:
    listed = subprocess.run(["git", "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/"], cwd=repo,
                            capture_output=True, text=True, check=True).stdout.split("\n")
    return dict(line.split(" ") for line in listed if line)


def server_refs(svc: MemoryService) -> dict[str, str]:
    return refs(svc.settings.repos_dir / "default.git")


def eventually(condition: object, what: str, log: Path) -> None:
    deadline = time.monotonic() + RESULT_WAIT
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen; worker log:\n{log.read_text(errors='replace')[-4000:]}")
        time.sleep(0.1)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", mirror_credentials={"127.0.0.1": TOKEN}, mirror_retry_seconds=1)


@pytest.fixture
def svc(settings: Settings) -> Iterator[MemoryService]:
    service = build_service(settings)  # as the front ends build it: changes queue mirror pushes
    service.init("default")
    yield service
    service.close()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[GitHost]:
    (tmp_path / "host").mkdir()
    found = GitHost(tmp_path / "host", TOKEN)
    found.create("memory")
    yield found
    found.stop()


def test_every_change_reaches_a_bare_repository_and_a_git_host(svc: MemoryService, settings: Settings,
                                                              host: GitHost, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    assert svc.mirror_add("default", str(bare)) == "local"
    assert svc.mirror_add("default", host.url("memory"), name="github") == "github"
    host.start()
    log = tmp_path / "worker.log"
    with worker(settings, log, "--beat", GITMEM_MIRROR_CREDENTIALS=f"127.0.0.1={TOKEN}",
                GITMEM_MIRROR_RETRY_SECONDS="1"):
        svc.remember("default", "Releases are tagged vX.Y.Z", type="convention")
        eventually(lambda: refs(bare) == server_refs(svc), "the push to the bare repository", log)
        eventually(lambda: refs(host.root / "memory.git") == server_refs(svc), "the push to the git host", log)
        result = svc.remember("default", "Hotfixes branch from the last release tag", type="convention")
        assert result.memory is not None
        eventually(lambda: refs(bare) == server_refs(svc), "the second push", log)
        # A review branch goes too, and leaves the mirror when its review closes.
        text = b"---\ntype: fact\n---\n\nThe wiki moved to Notion\n"
        review = svc.reviews.propose("default", [Change({"fact/wiki.md": text}, "wiki", "amend")], title="wiki",
                                     author="ann", kind="amend")
        eventually(lambda: review.branch in refs(host.root / "memory.git"), "the review branch's push", log)
        svc.reviews.approve("default", review.number, actor="rita")
        eventually(lambda: refs(host.root / "memory.git") == server_refs(svc), "the pruning push", log)
        assert review.branch not in refs(host.root / "memory.git")
        eventually(lambda: not svc.mirrors_behind("default"), "the pushes on record", log)
    status = svc.mirror_status("default")
    assert status["local"]["ok"] is True and status["github"]["ok"] is True
    assert not status["github"]["behind"] and status["github"]["error"] is None
    assert TOKEN not in str(status) and TOKEN not in (svc.settings.repos_dir / "default.git" / "config").read_text()
    checked = subprocess.run(["git", "fsck", "--strict"], cwd=bare, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_a_mirror_that_is_down_blocks_no_write_and_catches_up(svc: MemoryService, settings: Settings,
                                                               host: GitHost, tmp_path: Path) -> None:
    svc.mirror_add("default", host.url("memory"), name="github")  # the host is down: nothing listens
    log = tmp_path / "worker.log"
    with worker(settings, log, "--beat", GITMEM_MIRROR_CREDENTIALS=f"127.0.0.1={TOKEN}",
                GITMEM_MIRROR_RETRY_SECONDS="1"):
        started = time.monotonic()
        for i in range(5):
            svc.remember("default", f"Service number {i} listens on port 80{i}0", type="fact")
        assert time.monotonic() - started < 10  # writes never wait for the mirror
        assert len(svc.list("default")) == 5
        eventually(lambda: svc.mirror_status("default")["github"]["ok"] is False, "the failure on record", log)
        status = svc.mirror_status("default")["github"]
        assert status["behind"] and "127.0.0.1" in status["error"]
        host.start()
        eventually(lambda: refs(host.root / "memory.git") == server_refs(svc), "the catch-up push", log)
        eventually(lambda: svc.mirror_status("default")["github"]["ok"] is True, "the recovery on record", log)
    assert not svc.mirrors_behind("default")


def test_a_wrong_token_is_a_failing_mirror_not_a_failing_write(svc: MemoryService, host: GitHost,
                                                               tmp_path: Path) -> None:
    svc.mirror_add("default", host.url("memory"), name="github")
    host.start()
    wrong = MemoryService(svc.settings.with_(mirror_credentials={"127.0.0.1": "not-the-token"}))
    try:
        status = wrong.mirror_push("default")["github"]
    finally:
        wrong.close()
    assert status["ok"] is False and "not-the-token" not in status["error"]
    assert svc.mirror_push("default")["github"]["ok"] is True
    assert refs(host.root / "memory.git") == server_refs(svc)


@pytest.mark.parametrize(("url", "said"), [
    ("https://user:secret@github.com/team/memory.git", "put no password or token"),
    ("not a url", "is not a git URL"),
    ("relative/path", "is not a git URL"),
])
def test_bad_mirror_urls_are_refused(svc: MemoryService, url: str, said: str) -> None:
    with pytest.raises(InvalidInput, match=said):
        svc.mirror_add("default", url)
    assert svc.mirrors("default") == {}


def test_mirrors_are_listed_and_removed(svc: MemoryService, tmp_path: Path) -> None:
    svc.mirror_add("default", "git@github.com:team/memory.git")
    svc.mirror_add("default", str(tmp_path / "x.git"), name="backup")
    assert svc.mirrors("default") == {"backup": str(tmp_path / "x.git"), "github": "git@github.com:team/memory.git"}
    with pytest.raises(InvalidInput, match="already"):
        svc.mirror_add("default", "https://github.com/other.git")
    svc.mirror_remove("default", "github")
    assert list(svc.mirrors("default")) == ["backup"]
    with pytest.raises(NotFound):
        svc.mirror_remove("default", "github")
    assert svc.status("default")["mirrors"]["backup"]["ok"] is None  # never pushed yet
