"""Shared fixtures: a gitmem home in a temporary folder, a service over it, the CLI, and git fsck."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gitmem import notify
from gitmem.repo import Namespace, Store
from gitmem.service import MemoryService
from gitmem.settings import Settings


def namespace_of(svc: MemoryService, name: str = "default") -> Namespace:
    """The repository layer under a service (tests only): its store, index, usage log and lock."""
    return svc._namespaces.open(name)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings with GITMEM_HOME in a fresh temporary folder and nothing else configured."""
    return Settings(home=tmp_path / "home")


@pytest.fixture
def svc(settings: Settings) -> Iterator[MemoryService]:
    """A service with the ``default`` namespace created."""
    service = MemoryService(settings)
    service.init("default")
    yield service
    service.close()


@pytest.fixture
def store(svc: MemoryService) -> Store:
    """The ``default`` namespace's git store, under ``svc``."""
    return namespace_of(svc).store


@pytest.fixture
def events() -> Iterator[list[dict[str, object]]]:
    """Every notification sent while the test runs (a review opened, a memory changed...), in order."""
    seen: list[dict[str, object]] = []

    def record(settings: Settings, event: dict[str, object]) -> None:
        seen.append(event)

    notify.subscribe(record)
    yield seen
    notify.unsubscribe(record)


def git(repo: Path, *args: str, input: str | None = None) -> str:
    """Run the real git client against a bare repository and return its output."""
    done = subprocess.run(["git", "--git-dir", str(repo), *args], input=input, capture_output=True, text=True,
                          check=True)
    return done.stdout


@pytest.fixture
def fsck(settings: Settings) -> Callable[[str], None]:
    """Check a namespace's repository with ``git fsck --strict``."""

    def check(namespace: str = "default") -> None:
        repo = settings.repos_dir / f"{namespace}.git"
        done = subprocess.run(["git", "--git-dir", str(repo), "fsck", "--strict", "--no-progress"],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr + done.stdout

    return check


def push_refused_entry(repo: Path, name: str = "..") -> str:
    """Put a tree entry git refuses (``..`` holding ``escape.md``) on main, as a hand push could.

    Built with the real git: ``git mktree`` and ``git update-ref``. Returns the new head.
    """
    blob = git(repo, "hash-object", "-w", "--stdin", input="escaped\n").strip()
    inner = git(repo, "mktree", input=f"100644 blob {blob}\tescape.md\n").strip()
    tree = git(repo, "mktree", input=git(repo, "ls-tree", "main") + f"040000 tree {inner}\t{name}\n").strip()
    commit = git(repo, "commit-tree", tree, "-p", "main", "-m", "hand push").strip()
    git(repo, "update-ref", "refs/heads/main", commit)
    return commit


Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def gitmem(settings: Settings) -> Run:
    """Run `gitmem ARGS...` with GITMEM_HOME pointing at the test's home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")}
    env["GITMEM_HOME"] = str(settings.home)

    def run(*args: str, input: bytes | None = None, ok: bool = True,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "gitmem", *args], env=env, input=input,
                              capture_output=True, cwd=cwd)
        result = subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(),
                                             done.stderr.decode())
        if ok:
            assert result.returncode == 0, result.stderr
        return result

    return run
