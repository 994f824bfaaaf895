"""Commits built straight into a real bare repository (pygit2), for the tests of what a push brings.

A push's checks read objects, never a working tree: these helpers write the trees a client could
push, including the ones ``git add`` would never make (``..``, symbolic links, submodules).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

#: Entry content: bytes for a blob, ("link", target) for a symbolic link, ("commit", id) for a
#: submodule, ("exec", bytes) for an executable file.
Entry = bytes | tuple[str, bytes | str]


def bare(path: Path) -> pygit2.Repository:
    """A new bare repository at ``path``."""
    return pygit2.init_repository(str(path), bare=True)


def tree(repo: pygit2.Repository, files: dict[str, Entry]) -> pygit2.Oid:
    """A tree holding ``files`` (paths with ``/`` make folders), written into ``repo``."""
    here: dict[str, Entry] = {}
    below: dict[str, dict[str, Entry]] = {}
    for path, entry in files.items():
        head, sep, rest = path.partition("/")
        if sep:
            below.setdefault(head, {})[rest] = entry
        else:
            here[head] = entry
    builder = repo.TreeBuilder()
    for name, entry in here.items():
        if isinstance(entry, bytes):
            builder.insert(name, repo.create_blob(entry), FileMode.BLOB)
        elif entry[0] == "link":
            target = entry[1] if isinstance(entry[1], bytes) else entry[1].encode()
            builder.insert(name, repo.create_blob(target), FileMode.LINK)
        elif entry[0] == "exec":
            assert isinstance(entry[1], bytes)
            builder.insert(name, repo.create_blob(entry[1]), FileMode.BLOB_EXECUTABLE)
        else:
            builder.insert(name, pygit2.Oid(hex=str(entry[1])), FileMode.COMMIT)
    for name, sub in below.items():
        builder.insert(name, tree(repo, sub), FileMode.TREE)
    return builder.write()


def commit(repo: pygit2.Repository, files: dict[str, Entry], parents: list[str] | None = None,
           message: str = "edit\n", *, author: str = "Ann", email: str = "ann@example.com",
           committer: str | None = None) -> str:
    """A commit of ``files`` (the whole tree) on ``parents``; its id."""
    who = pygit2.Signature(author, email, 1_700_000_000, 0)
    by = who if committer is None else pygit2.Signature(committer, email, 1_700_000_000, 0)
    oid = repo.create_commit(None, who, by, message, tree(repo, files),
                             [pygit2.Oid(hex=p) for p in parents or []])
    return str(oid)


def fsck(repo: pygit2.Repository) -> None:
    """``git fsck`` finds nothing wrong in the repository (what these helpers wrote is real git)."""
    done = subprocess.run(["git", "--git-dir", repo.path, "fsck", "--no-progress", "--no-dangling"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + done.stdout
