"""The receiving side of git push, on a real repository made with the git program."""

from __future__ import annotations

import subprocess
import tracemalloc
from pathlib import Path

from gitmem.repo import receive as wire

BIG = 64 * 1024 * 1024
LIMIT = 1024 * 1024


def _repo_with_big_files(tmp_path: Path) -> tuple[wire.Repository, str]:
    """A bare repository whose one commit holds a small memory and two 64 MiB files of zeros."""
    work = tmp_path / "work"
    work.mkdir()

    def git(*args: str) -> str:
        env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
               "GIT_AUTHOR_NAME": "Ann", "GIT_AUTHOR_EMAIL": "ann@example.com",
               "GIT_COMMITTER_NAME": "Ann", "GIT_COMMITTER_EMAIL": "ann@example.com"}
        return subprocess.run(["git", *args], cwd=work, env=env, capture_output=True, text=True,
                              check=True).stdout.strip()

    git("init", "-q", "-b", "main")
    (work / "fact").mkdir()
    (work / "fact" / "small.md").write_text("---\ntype: fact\n---\n\nSmall\n")
    for name in ("fact/big.md", "notes.bin"):
        with open(work / name, "wb") as out:
            out.truncate(BIG)
    git("add", "-A")
    git("commit", "-qm", "big files")
    return wire.Repository(str(work / ".git")), git("rev-parse", "HEAD")


def test_blobs_over_the_limit_are_never_read(tmp_path: Path) -> None:
    repo, head = _repo_with_big_files(tmp_path)
    commit = repo.revparse_single(head)
    tracemalloc.start()
    try:
        pushed = wire.pushed(repo, commit, LIMIT)
        files = list(wire.memory_files(repo, head, LIMIT))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    by_path = {f.path: f for f in pushed.files}
    assert (by_path["fact/big.md"].data, by_path["fact/big.md"].size) == (None, BIG)
    assert (by_path["notes.bin"].data, by_path["notes.bin"].size) == (None, BIG)
    assert by_path["fact/small.md"].data == b"---\ntype: fact\n---\n\nSmall\n"
    assert [path for path, _ in files] == ["fact/small.md"]
    assert peak < LIMIT, f"{peak} bytes were allocated while looking at 64 MiB blobs"
    # The same blobs under a higher limit are read: the measure above would have seen them.
    tracemalloc.start()
    try:
        wire.pushed(repo, commit, 2 * BIG)
        _, read_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert read_peak >= BIG


def test_a_commit_tells_its_whole_message_and_people(tmp_path: Path) -> None:
    repo, head = _repo_with_big_files(tmp_path)
    pushed = wire.pushed(repo, repo.revparse_single(head), LIMIT)
    assert pushed.message == "big files\n" and pushed.summary == "big files"
    assert pushed.people == (("author", "Ann <ann@example.com>"), ("committer", "Ann <ann@example.com>"))
