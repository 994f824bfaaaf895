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
