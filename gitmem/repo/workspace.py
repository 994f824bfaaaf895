"""The files in play in an agent's project: what its session-start hook asks memories about.

An agent's project is any git working tree (not a memory repository), read here with pygit2
because this layer is the one that touches git.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

# Files that changed but say nothing about the work (and would crowd out those that do).
_SKIP = (".gitmem-backup-",)


def files_in_play(directory: Path, limit: int = 50) -> list[str]:
    """Paths, relative to the working tree's root, of the files being worked on in ``directory``.

    The files changed against ``HEAD`` (staged, unstaged and new, ignored ones left out), else
    the files the last commit changed; [] outside a git working tree or in a bare repository.
    """
    found = pygit2.discover_repository(str(directory))
    if found is None:
        return []
    try:
        repo = pygit2.Repository(found)
    except pygit2.GitError:
        return []
    if repo.is_bare or repo.workdir is None:
        return []
    try:
        status = repo.status(untracked_files="all", ignored=False)
    except pygit2.GitError:
        return []
    changed = sorted(path for path, flags in status.items()
                     if flags != pygit2.enums.FileStatus.CURRENT and not any(s in path for s in _SKIP))
    if not changed and not repo.head_is_unborn:
        head = repo.head.peel(pygit2.Commit)
        parent = head.parents[0].tree if head.parents else None
        diff = head.tree.diff_to_tree(parent, swap=True) if parent is not None else head.tree.diff_to_tree(swap=True)
        changed = sorted({d.new_file.path for d in diff.deltas})
    return changed[:limit]


#: A project's manifests: the frameworks a file's own imports do not show, its project's do.
MANIFESTS = ("package.json", "pyproject.toml", "requirements.txt", "setup.py", "Pipfile", "Cargo.toml", "go.mod",
             "composer.json", "Gemfile", "pom.xml", "build.gradle", "build.gradle.kts", "Package.swift",
             "pubspec.yaml", "foundry.toml", "hardhat.config.js", "hardhat.config.ts", "mix.exs")
#: How much of each file is read: imports and dependencies are at the top.
HEAD_BYTES = 4096


def file_heads(directory: Path, files: list[str], size: int = HEAD_BYTES) -> dict[str, str]:
    """The first ``size`` bytes of each of ``files`` that exists, and of the project's manifests, as text.

    Paths are relative to ``directory`` (or absolute); the manifests are those at the root of
    the git working tree holding ``directory`` (else in ``directory``), keyed by their name. A
    file that cannot be read is left out: its head is a hint, never needed.
    """
    out: dict[str, str] = {}
    root = directory
    found = pygit2.discover_repository(str(directory))
    if found is not None:
        try:
            repo = pygit2.Repository(found)
            root = Path(repo.workdir) if repo.workdir else directory
        except pygit2.GitError:
            pass
    for name, path in [*((f, directory / f) for f in files), *((m, root / m) for m in MANIFESTS)]:
        if name in out:
            continue
        try:
            with open(path, "rb") as handle:
                if not path.is_file():
                    continue
                out[name] = handle.read(size).decode("utf-8", errors="replace")
        except OSError:
            continue
    return out
