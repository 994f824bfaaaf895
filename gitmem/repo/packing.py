"""Packing, object counts and bundles: the work on a repository that the git program does.

libgit2 writes every object loose and never packs, so each memory leaves a blob, two trees and a
commit as four files. :func:`pack` runs what ``git gc`` runs, step by step with explicit flags:

1. ``git pack-refs --all``: the refs into ``packed-refs``, taking turns with gitmem's ref
   deletions (:func:`~gitmem.repo.store.packing_refs`);
2. ``git repack -d -A --unpack-unreachable=2.weeks.ago``: every reachable object (from any ref or
   reflog) into one pack, with a bitmap for clones; ``-d`` then deletes only objects that are in
   the new pack, and unreachable objects of the old packs are loosened rather than dropped
   unless the old pack is older than the expiry;
3. ``git prune --expire=2.weeks.ago``: unreachable loose objects older than the expiry go.

Why this is safe beside writers (:meth:`Store.transact` writes objects, then moves the ref by
compare-and-swap): an object a writer has written but not yet referenced is unreachable to a
concurrent run, and nothing here deletes an unreachable object younger than two weeks. A writer
that needs an object which exists already gets it "freshened" by libgit2 (its file's mtime set
to now), so it counts as young too. The expiry is written out, never ``now``, because git's
default depends on ``gc.pruneExpire``, which a user's configuration may set.

Why not ``git gc --auto``: below 6,700 loose objects it does nothing, so ``gitmem maintain`` on a
small namespace would not pack; by default it detaches into the background, outside the
maintenance lock; and it expires reflog entries after 90 days, while gitmem keeps the reflog as
the record of every move of ``main``.

A bundle (``git bundle create --all``) holds every ref (``main``, review branches,
``refs/gitmem/reviews``, ``refs/gitmem/closed/*``) with the objects they reach; ``git clone
--mirror`` of it is the repository again, without its reflog.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pygit2

from ..errors import InvalidInput, Unavailable
from .store import configure, packing_refs

#: How old an unreachable object must be before it may be deleted: git's default, pinned.
PRUNE_EXPIRY = "2.weeks.ago"


@dataclass(frozen=True)
class ObjectCounts:
    """What ``git count-objects -v`` says about a repository's object store (sizes in bytes)."""

    loose: int
    loose_bytes: int
    packs: int
    packed: int
    pack_bytes: int
    garbage: int

    @property
    def size_bytes(self) -> int:
        """Bytes the objects take: loose and packed."""
        return self.loose_bytes + self.pack_bytes

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the total size."""
        return asdict(self) | {"size_bytes": self.size_bytes}


def git_program(purpose: str = "to pack and back up repositories") -> str:
    """The git program's path; :class:`Unavailable` saying what gitmem needs it for when it is not installed."""
    found = shutil.which("git")
    if found is None:
        raise Unavailable(f"the git program is not installed; gitmem needs it {purpose}")
    return found


def _run(repo: Path | None, *args: str) -> str:
    """Run git (in ``repo`` when given); its output, or :class:`Unavailable` with git's own words."""
    argv = [git_program()] + (["--git-dir", str(repo)] if repo is not None else []) + list(args)
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
        raise Unavailable(f"git {args[0]} failed{f' on {repo}' if repo else ''}: {said}")
    return done.stdout


def git_version() -> str:
    """The installed git's version, e.g. ``2.39.5``."""
    return _run(None, "--version").strip().removeprefix("git version ")


def count_objects(repo: Path) -> ObjectCounts:
    """Loose objects, packs and their sizes, from ``git count-objects -v``."""
    values: dict[str, int] = {}
    for line in _run(repo, "count-objects", "-v").splitlines():
        key, _, value = line.partition(":")
        if value.strip().isdigit():
            values[key.strip()] = int(value)
    return ObjectCounts(loose=values.get("count", 0), loose_bytes=values.get("size", 0) * 1024,
                        packs=values.get("packs", 0), packed=values.get("in-pack", 0),
                        pack_bytes=values.get("size-pack", 0) * 1024, garbage=values.get("garbage", 0))


def pack(repo: Path) -> None:
    """Pack refs and objects and prune old garbage; safe while other processes write (see above)."""
    with packing_refs(repo):  # a ref deleted meanwhile would come back (see store.packing_refs)
        _run(repo, "pack-refs", "--all")
    _run(repo, "repack", "-d", "-A", "-q", f"--unpack-unreachable={PRUNE_EXPIRY}")
    _run(repo, "prune", f"--expire={PRUNE_EXPIRY}")


def bundle(repo: Path, dest: Path) -> dict[str, str]:
    """Write every ref of ``repo`` and what it reaches to the bundle ``dest`` (mode 0600); its refs."""
    _run(repo, "bundle", "create", "--quiet", str(dest), "--all")
    dest.chmod(0o600)
    return bundle_refs(dest)


def bundle_refs(path: Path) -> dict[str, str]:
    """The refs a bundle holds, name to commit id (``HEAD`` included)."""
    if not path.is_file():
        raise InvalidInput(f"{path} is not a file")
    refs: dict[str, str] = {}
    for line in _run(None, "bundle", "list-heads", str(path)).splitlines():
        oid, _, name = line.partition(" ")
        if name:
            refs[name] = oid
    return refs


def restore(source: Path, repo: Path) -> dict[str, str]:
    """Make ``repo`` a mirror of the bundle ``source``, configured as gitmem makes repositories.

    Built beside its place and renamed in, so a failure leaves nothing behind; an existing
    ``repo`` is refused. Returns the refs of the restored repository.
    """
    if (repo / "HEAD").exists():
        raise InvalidInput(f"{repo} exists already; restore into a home without it")
    repo.parent.mkdir(parents=True, exist_ok=True)
    staging = repo.with_name(f".{repo.name}.restore.{os.getpid()}.{random.getrandbits(32):08x}")
    try:
        _run(None, "clone", "--quiet", "--mirror", str(source), str(staging))
        _run(staging, "config", "--remove-section", "remote.origin")  # the bundle was a one-off source
        configure(pygit2.Repository(str(staging)))
        try:
            os.rename(staging, repo)
        except OSError as exc:  # a non-empty folder in the way
            raise InvalidInput(f"cannot restore into {repo}: {exc.strerror}; move it away first") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    restored = pygit2.Repository(str(repo))
    return {name: str(restored.references[name].resolve().target) for name in restored.references}
