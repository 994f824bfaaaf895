"""The git object layer: one bare repository per namespace, written with pygit2, no working tree.

Every change is built bottom-up (blobs, trees, commit) and only then published by moving the
branch with a compare-and-swap ref update, so a reader never sees half of a change. Losers of a
race rebuild their change on the new head and try again. The reflog records every ref move.
"""

from __future__ import annotations

import fcntl
import logging
import os
import random
import re
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TypeVar

import pygit2
from pygit2.enums import FileMode, ObjectType, SortMode

from ..concepts import Memory
from ..errors import (
    CommitNotFound,
    InvalidInput,
    MalformedConcept,
    MergeConflict,
    RefLocked,
    RefRaceLost,
    RevertConflict,
)

#: A commit object. Modules above the repository layer pass these around without importing pygit2.
Commit = pygit2.Commit
MAIN = "refs/heads/main"
TRAILER_KEYS = ("Memory-Id", "Action", "Source", "Actor")
_STALE_LOCK_SECONDS = 10.0
# How long a writer waits for a ref lock held by someone else before it says who blocks it.
_LOCK_PATIENCE = 2.0
# gitmem's own lock around ref moves, and the record of the move under way (see move_ref).
_MOVES_FILE = "gitmem-ref-moves"
_FOLDER_ATTEMPTS = 5
T = TypeVar("T")
_HEX = re.compile(r"^[0-9a-fA-F]{4,40}$")
# Names libgit2 refuses in a tree or an index: '.git' in any case, or its 8.3 short name, when
# followed only by dots and spaces, or by an NTFS stream (':...').
_DOT_GIT = re.compile(r"^(?:\.git|git~1)[. ]*(?::.*)?$", re.IGNORECASE | re.DOTALL)

# A file's new content, or None to delete it.
Changes = Mapping[str, bytes | None]
#: Called right before a ref moves; raises to stop the write (see Store.transact).
Guard = Callable[[], None]


@dataclass(frozen=True)
class Change:
    """What one commit should do: file changes and the message (with trailers) that explains them."""

    changes: Changes
    summary: str
    action: str
    memory_ids: tuple[str, ...] = ()
    source: str | None = None
    actor: str | None = None
    body: str = ""
    extra_trailers: tuple[tuple[str, str], ...] = ()
    tree: pygit2.Oid | None = None  # a tree computed elsewhere (revert); overrides ``changes``
    # The memories some of the files hold, as concepts.rendered() gave them: the index takes
    # these instead of parsing the files again.
    parsed: Mapping[str, Memory] = field(default_factory=dict)

    def message(self) -> str:
        """The full commit message: summary line, optional body, trailers."""
        trailers = [f"Memory-Id: {memory_id}" for memory_id in self.memory_ids]
        trailers.append(f"Action: {self.action}")
        if self.source:
            trailers.append(f"Source: {self.source}")
        trailers.append(f"Actor: {self.actor or 'gitmem'}")
        trailers.extend(f"{key}: {value}" for key, value in self.extra_trailers)
        # One line each: a value with a line break (an actor's name, say) must not forge a
        # trailer such as "Memory-Id:" that history() trusts.
        trailers = [" ".join(trailer.split()) for trailer in trailers]
        summary = " ".join(self.summary.split())
        if len(summary) > 72:
            summary = summary[:71] + "…"
        parts = [summary]
        if self.body.strip():
            parts.append(self.body.strip())
        parts.append("\n".join(trailers))
        return "\n\n".join(parts) + "\n"


@dataclass(frozen=True)
class CommitInfo:
    """A commit as front ends show it."""

    id: str
    summary: str
    message: str
    time: int
    actor: str
    action: str
    memory_ids: tuple[str, ...]
    parents: tuple[str, ...]
    trailers: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class FileChange:
    """One file changed by a commit, with its text before and after (None where absent)."""

    path: str
    status: str  # added, modified, deleted
    old_path: str | None
    new_path: str | None
    old_text: str | None
    new_text: str | None


def parse_trailers(message: str) -> dict[str, list[str]]:
    """Read ``Key: value`` trailers from the last paragraph of a commit message."""
    paragraphs = [p for p in message.strip().split("\n\n") if p.strip()]
    out: dict[str, list[str]] = {}
    if len(paragraphs) < 2:
        return out
    for line in paragraphs[-1].splitlines():
        key, sep, value = line.partition(": ")
        if sep and re.match(r"^[A-Za-z][A-Za-z0-9-]*$", key):
            out.setdefault(key, []).append(value.strip())
    return out


def refused_part(path: str) -> str | None:
    """The first part of ``path`` that git refuses as a name in a tree, or None when it has none.

    Such an entry (``..``, ``.git``, an empty name) can only come from a tree made by hand and
    pushed; libgit2 will not put it in an index, so a revert that keeps it fails. The rule is
    libgit2's: ``.``, ``..``, an empty name, and ``.git`` as matched by ``_DOT_GIT``.
    """
    for part in path.split("/"):
        if part in ("", ".", "..") or _DOT_GIT.match(part):
            return part
    return None


class Store:
    """A bare memory repository on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.repo = pygit2.Repository(str(path))
        #: Called with the ref's name after gitmem moved or deleted a ref (mirrors follow changes).
        self.moved: Callable[[str], None] | None = None

    @classmethod
    def create(cls, path: Path, readme: bytes) -> Store:
        """Create the bare repository with its first commit, or open it if it exists."""
        if not (path / "HEAD").exists():
            # Build it beside its place and rename it in: processes creating the same namespace
            # at once would otherwise fight over its config file; the first rename wins.
            path.parent.mkdir(parents=True, exist_ok=True)
            staging = path.with_name(f".{path.name}.{os.getpid()}.{random.getrandbits(32):08x}")
            _init_bare(staging)
            try:
                os.rename(staging, path)
            except OSError:
                shutil.rmtree(staging, ignore_errors=True)
                if not (path / "HEAD").exists():
                    # The place is a non-empty folder or a mount point: initialise it in place.
                    _init_bare(path)
        store = cls(path)
        if store.head_id() is None:
            change = Change({"README.md": readme}, "Initialize memory repository", "init")
            oid = store.write_commit(None, change)
            try:
                store.move_ref(MAIN, oid, None, "init")
            except RefRaceLost:
                pass  # another process initialised it first: theirs stands
        return store

    # --- reading -------------------------------------------------------------------------------

    def head_id(self, ref: str = MAIN) -> str | None:
        """The commit a ref points at, or None when it does not exist."""
        try:
            return str(self.repo.references[ref].target)
        except KeyError:
            return None

    def head(self, ref: str = MAIN) -> pygit2.Commit:
        """The commit a ref points at."""
        oid = self.head_id(ref)
        if oid is None:
            raise CommitNotFound(f"branch {ref} does not exist")
        return self.commit(oid)

    def commit(self, rev: str) -> pygit2.Commit:
        """Find a commit by full or abbreviated id; a clear error when it is not one."""
        if not isinstance(rev, str) or not _HEX.match(rev):
            raise InvalidInput(f"{rev!r} is not a commit id (4 to 40 hex characters)")
        try:
            obj = self.repo.revparse_single(rev)
        except (KeyError, ValueError) as exc:
            raise CommitNotFound(f"no commit {rev} in this repository") from exc
        if obj.type != ObjectType.COMMIT:
            raise CommitNotFound(f"{rev} is not a commit")
        assert isinstance(obj, pygit2.Commit)
        return obj

    def read(self, path: str, commit: pygit2.Commit | None = None) -> bytes | None:
        """A file's content at a commit (default: main), or None when it is absent."""
        commit = commit or self.head()
        try:
            entry = commit.tree[path]
        except KeyError:
            return None
        blob = self.repo[entry.id]
        return blob.data if isinstance(blob, pygit2.Blob) else None

    def files(self, commit: pygit2.Commit, folder: str | None = None) -> Iterator[tuple[str, bytes]]:
        """Yield ``(path, content)`` of every blob below ``folder`` (default: the whole tree)."""
        tree = commit.tree
        prefix = ""
        if folder:
            try:
                sub = self.repo[tree[folder].id]
            except KeyError:
                return
            if not isinstance(sub, pygit2.Tree):
                return
            tree, prefix = sub, folder + "/"
        yield from self._walk(tree, prefix)

    def _walk(self, tree: pygit2.Tree, prefix: str) -> Iterator[tuple[str, bytes]]:
        for entry in tree:
            obj = self.repo[entry.id]
            if isinstance(obj, pygit2.Tree):
                yield from self._walk(obj, f"{prefix}{entry.name}/")
            elif isinstance(obj, pygit2.Blob):
                yield f"{prefix}{entry.name}", obj.data

    def info(self, commit: pygit2.Commit) -> CommitInfo:
        """Summarise a commit with its trailers."""
        trailers = parse_trailers(commit.message)
        return CommitInfo(
            id=str(commit.id),
            summary=commit.message.splitlines()[0] if commit.message else "",
            message=commit.message,
            time=commit.commit_time,
            actor=(trailers.get("Actor") or [commit.author.name])[0],
            action=(trailers.get("Action") or ["unknown"])[0],
            memory_ids=tuple(trailers.get("Memory-Id", [])),
            parents=tuple(str(p) for p in commit.parent_ids),
            trailers=trailers,
        )

    def log(self, ref: str = MAIN) -> Iterator[pygit2.Commit]:
        """Commits reachable from ``ref``, newest first."""
        oid = self.head_id(ref)
        if oid is None:
            return
        yield from self.repo.walk(pygit2.Oid(hex=oid), pygit2.enums.SortMode.TOPOLOGICAL)

    def changed_paths(self, old: pygit2.Commit | None, new: pygit2.Commit) -> list[tuple[str | None, str | None]]:
        """``(old_path, new_path)`` for every file that differs between two commits."""
        if old is None:
            return [(None, path) for path, _ in self.files(new)]
        diff = old.tree.diff_to_tree(new.tree)
        out: list[tuple[str | None, str | None]] = []
        for delta in diff.deltas:
            status = delta.status_char()
            out.append((
                None if status == "A" else delta.old_file.path,
                None if status == "D" else delta.new_file.path,
            ))
        return out

    def between(self, base: str, head: str) -> list[pygit2.Commit]:
        """Commits reachable from ``head`` but not from ``base``, oldest first."""
        walker = self.repo.walk(pygit2.Oid(hex=head), SortMode.TOPOLOGICAL | SortMode.REVERSE)
        walker.hide(pygit2.Oid(hex=base))
        return list(walker)

    def file_changes(self, commit: pygit2.Commit, since: pygit2.Commit | None = None) -> list[FileChange]:
        """What ``commit`` changed against ``since`` (default: its first parent), file by file, with the texts."""
        if since is not None:
            diff = since.tree.diff_to_tree(commit.tree)
        elif commit.parents:
            diff = commit.parents[0].tree.diff_to_tree(commit.tree)
        else:
            diff = commit.tree.diff_to_tree(swap=True)
        return self._changes(diff)

    def revert_preview(self, target: pygit2.Commit, onto: pygit2.Commit) -> list[FileChange]:
        """What reverting ``target`` on top of ``onto`` would change, file by file; writes only objects."""
        tree = self.repo[self.revert_change(target, onto)]
        assert isinstance(tree, pygit2.Tree)
        return self._changes(onto.tree.diff_to_tree(tree))

    def _changes(self, diff: pygit2.Diff) -> list[FileChange]:
        """A diff's deltas as file changes, with the texts before and after."""
        out = []
        for delta in diff.deltas:
            status = {"A": "added", "D": "deleted"}.get(delta.status_char(), "modified")
            old_path = None if status == "added" else delta.old_file.path
            new_path = None if status == "deleted" else delta.new_file.path
            out.append(FileChange(
                path=new_path or old_path or "", status=status, old_path=old_path, new_path=new_path,
                old_text=None if old_path is None else self._text(delta.old_file.id),
                new_text=None if new_path is None else self._text(delta.new_file.id),
            ))
        return out

    def _text(self, oid: pygit2.Oid) -> str | None:
        blob = self.repo[oid]
        return blob.data.decode("utf-8", errors="replace") if isinstance(blob, pygit2.Blob) else None

    def is_ancestor(self, ancestor: pygit2.Commit, of: pygit2.Commit) -> bool:
        """Whether ``ancestor`` is ``of`` or in its history."""
        return ancestor.id == of.id or bool(self.repo.descendant_of(of.id, ancestor.id))

    def has(self, path: str, commit: pygit2.Commit) -> bool:
        """Whether ``path`` (a file or folder) exists at ``commit``."""
        return path in commit.tree

    def refs(self, prefix: str) -> list[str]:
        """The names of the refs that start with ``prefix``."""
        return [ref for ref in self.repo.references if ref.startswith(prefix)]

    # --- writing -------------------------------------------------------------------------------

    def write_tree(self, base: pygit2.Tree | None, changes: Changes) -> pygit2.Oid:
        """Write a new root tree: ``base`` with ``changes`` applied. Objects only, no refs."""
        oid = self._apply(base, changes)
        return oid if oid is not None else _writing(self.repo.TreeBuilder().write)

    def _apply(self, tree: pygit2.Tree | None, changes: Changes) -> pygit2.Oid | None:
        builder = self.repo.TreeBuilder(tree) if tree is not None else self.repo.TreeBuilder()
        nested: dict[str, dict[str, bytes | None]] = {}
        for path, data in changes.items():
            head, _, rest = path.partition("/")
            if not head or head in (".", ".."):
                raise InvalidInput(f"refusing to write outside the repository: {path!r}")
            if rest:
                nested.setdefault(head, {})[rest] = data
            elif data is None:
                if builder.get(head) is not None:
                    builder.remove(head)
            else:
                builder.insert(head, _writing(partial(self.repo.create_blob, data)), FileMode.BLOB)
        for name, sub_changes in nested.items():
            sub: pygit2.Tree | None = None
            if tree is not None and name in tree:
                obj = self.repo[tree[name].id]
                sub = obj if isinstance(obj, pygit2.Tree) else None
            oid = self._apply(sub, sub_changes)
            if oid is None:
                if builder.get(name) is not None:
                    builder.remove(name)
            else:
                builder.insert(name, oid, FileMode.TREE)
        if len(builder) == 0:
            return None
        return _writing(builder.write)

    def write_commit(self, parent: pygit2.Commit | None, change: Change, tree: pygit2.Oid | None = None) -> pygit2.Oid:
        """Write the commit object for ``change`` on top of ``parent``; the ref is not moved."""
        tree = tree or change.tree
        if tree is None:
            tree = self.write_tree(parent.tree if parent is not None else None, change.changes)
        # Both signatures are made now: a Signature takes the time it is created at.
        author = pygit2.Signature(_safe_name(change.actor), "gitmem@localhost")
        committer = pygit2.Signature("gitmem", "gitmem@localhost")
        parents = [parent.id] if parent is not None else []
        return _writing(partial(self.repo.create_commit, None, author, committer, change.message(), tree, parents))

    def move_ref(self, ref: str, new: pygit2.Oid | str, old: str | None, reason: str) -> None:
        """Compare-and-swap ``ref`` (see :meth:`_move_ref`), then tell :attr:`moved`."""
        self._move_ref(ref, new, old, reason)
        self._tell(ref)

    def _tell(self, ref: str) -> None:
        if self.moved is not None:
            try:
                self.moved(ref)
            except Exception:  # a follower (a mirror's queue) must never fail the write it follows
                logging.getLogger(__name__).exception("after moving %s in %s", ref, self.path)

    def _move_ref(self, ref: str, new: pygit2.Oid | str, old: str | None, reason: str) -> None:
        """Compare-and-swap ``ref`` from ``old`` (None: must not exist) to ``new``.

        Raises :class:`RefRaceLost` when the ref is not at ``old`` any more, and
        :class:`RefLocked`, naming the lock file, when git's lock on the ref (``<ref>.lock``)
        stays in the way for :data:`_LOCK_PATIENCE` seconds.

        Whose is a lock file? libgit2 writes only the new id into it, so gitmem keeps its own
        account: every gitmem move happens under an exclusive ``flock`` of the repository's
        ``gitmem-ref-moves`` file, which names the ref while the move is under way and is emptied
        after it. The kernel drops a flock when its process dies, however it dies. So a writer
        that gets the flock and finds the record not empty knows that the gitmem writer before
        it died in the middle of a move; a lock file of that ref made after the record was
        written (and within a second of it) is that dead writer's, and is removed at once. Any
        other lock file may belong to a live git (a push, ``git update-ref``, ``git gc``) and is
        only taken as stale once it is :data:`_STALE_LOCK_SECONDS` old, as git itself holds ref
        locks for milliseconds.
        """
        lock = self.path / (ref + ".lock")
        deadline = time.monotonic() + _LOCK_PATIENCE
        vanished = 0
        while True:
            with _MoveRecord(self.path / _MOVES_FILE) as record:
                record.clear_orphaned_lock(self.path)
                if not lock.exists() or self._clear_stale_lock(ref):
                    record.start(ref)
                    try:
                        self._swap(ref, new, old, reason)
                        return
                    except RefRaceLost as exc:
                        # ``git pack-refs`` may remove the ref's folder as the move makes it
                        # (refs/gitmem/closed/ once every closed review was packed): try again.
                        if _vanished(exc) and vanished < _FOLDER_ATTEMPTS:
                            vanished += 1
                            continue
                        if not lock.exists():
                            raise  # a real race: the ref moved
                    finally:
                        record.done()
            if time.monotonic() >= deadline:
                raise RefLocked(
                    f"{lock} is in the way: another process is writing {ref}, or one that crashed "
                    f"left the file behind. If no git or gitmem process is writing to {self.path}, "
                    f"remove it (rm '{lock}') and try again; gitmem removes it by itself once it is "
                    f"{_STALE_LOCK_SECONDS:.0f} s old"
                )
            time.sleep(0.01)

    def _swap(self, ref: str, new: pygit2.Oid | str, old: str | None, reason: str) -> None:
        if isinstance(new, str):
            new = pygit2.Oid(hex=new)
        try:
            if old is None:
                self.repo.create_reference_direct(ref, new, False, message=reason)
                return
            current = self.repo.references[ref]
            if str(current.target) != old:
                raise RefRaceLost(f"{ref} moved")
            current.set_target(new, reason)
        # libgit2 reports a ref lock held by another writer as OSError (GIT_ELOCKED).
        except (pygit2.GitError, ValueError, KeyError, pygit2.AlreadyExistsError, OSError) as exc:
            raise RefRaceLost(f"{ref}: {exc}") from exc

    def _clear_stale_lock(self, ref: str) -> bool:
        """Remove the ref's lock file once it is too old to be a live writer's; True when removed."""
        lock = self.path / (ref + ".lock")
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            return False
        if age <= _STALE_LOCK_SECONDS:
            return False
        # A live writer holds a ref lock for microseconds; this one outlived its process.
        try:
            os.unlink(lock)
        except FileNotFoundError:
            pass
        return True

    def write_branch(self, base: pygit2.Commit, changes: list[Change], ref: str, reason: str,
                     guard: Guard | None = None) -> str:
        """Write ``changes`` as commits on top of ``base`` and create a new branch at the last one.

        When ``ref`` exists already, ``ref-2``, ``ref-3``... is taken. Returns the ref's name.
        ``guard`` is called right before the ref is created; it raises to stop the write.
        """
        tip = base
        for change in changes:
            tip = self.commit(str(self.write_commit(tip, change)))
        name, suffix = ref, 1
        while True:
            try:
                if guard is not None:
                    guard()
                self.move_ref(name, tip.id, None, reason)
                return name
            except RefRaceLost:
                if self.head_id(name) is None:
                    raise
                suffix += 1
                name = f"{ref}-{suffix}"

    def replay(self, commits: list[pygit2.Commit], onto: pygit2.Commit) -> pygit2.Commit:
        """Apply each commit's own change on top of ``onto``, in order; the ref is not moved.

        Every new commit keeps its message and author; gitmem commits it now. Raises
        :class:`MergeConflict` naming the first commit that no longer applies.
        """
        tip = onto
        for commit in commits:
            index = self.repo.merge_trees(commit.parents[0].tree, tip.tree, commit.tree)
            if index.conflicts is not None:
                paths = sorted({(c[1] or c[2] or c[0]).path for c in index.conflicts if any(c)})
                raise MergeConflict(str(commit.id), paths)
            tree = _writing(partial(index.write_tree, self.repo))
            # The committer is gitmem, now: a Signature takes the time it is made at.
            committer = pygit2.Signature("gitmem", "gitmem@localhost")
            oid = _writing(partial(self.repo.create_commit, None, commit.author, committer, commit.message, tree,
                                   [tip.id]))
            tip = self.commit(str(oid))
        return tip

    def recommit(self, commit: pygit2.Commit, onto: pygit2.Commit, changes: Changes) -> pygit2.Commit:
        """``commit``'s message and author on top of ``onto`` with ``changes`` as its files; no ref moves.

        For a change computed again on a newer main (a review commit whose memory gained uses
        meanwhile), which must still read as the commit that was reviewed.
        """
        tree = self.write_tree(onto.tree, changes)
        committer = pygit2.Signature("gitmem", "gitmem@localhost")
        oid = _writing(partial(self.repo.create_commit, None, commit.author, committer, commit.message, tree,
                               [onto.id]))
        return self.commit(str(oid))

    def delete_ref(self, ref: str) -> None:
        """Remove a ref if it exists, taking turns with ``git pack-refs`` (see :func:`packing_refs`)."""
        with packing_refs(self.path):
            try:
                self.repo.references.delete(ref)
            except KeyError:
                return
        self._tell(ref)

    def transact(
        self,
        plan: Callable[[pygit2.Commit], Change | None],
        ref: str = MAIN,
        attempts: int = 200,
        guard: Guard | None = None,
    ) -> pygit2.Oid | None:
        """Apply ``plan`` to the head of ``ref`` and publish it, retrying when another writer wins.

        ``plan`` is called again on the new head after every lost race, so a change is always
        computed from the state it is committed on. It may return None to write nothing.
        ``guard`` is called right before every compare-and-swap; it raises to stop the write
        (a consolidation run checks that it still holds its lease).
        """
        for attempt in range(attempts):
            head_id = self.head_id(ref)
            assert head_id is not None, f"{ref} has no commit; call Store.create first"
            head = self.repo[head_id]
            assert isinstance(head, pygit2.Commit)
            change = plan(head)
            if change is None:
                return None
            oid = self.write_commit(head, change)
            if guard is not None:
                guard()
            try:
                self.move_ref(ref, oid, head_id, change.summary[:200])
                return oid
            except RefLocked:
                raise  # move_ref waited already; retrying would only hide who blocks it
            except RefRaceLost:
                time.sleep(random.uniform(0, min(0.05, 0.001 * (2**min(attempt, 6)))))
        raise RefRaceLost(f"gave up after {attempts} attempts: {ref} kept moving; try again")

    def revert_change(self, target: pygit2.Commit, onto: pygit2.Commit) -> pygit2.Oid:
        """Tree of ``onto`` with ``target`` undone; raises :class:`RevertConflict` if it clashes."""
        mainline = 1 if len(target.parents) > 1 else 0
        if not target.parents:
            # Not a clash with later changes: there is nothing to go back to, so the input is wrong.
            raise InvalidInput(f"{str(target.id)[:10]} is the first commit; there is nothing before it "
                               "to go back to")
        try:
            index = self.repo.revert_commit(target, onto, mainline)
        except pygit2.GitError as exc:
            refused = re.search(r"invalid path: '(.*)'", str(exc))
            if refused is None:
                raise
            raise MalformedConcept(
                refused.group(1),
                f"git refuses the name {refused_part(refused.group(1))!r} (a tree made by hand?), so this "
                "revert cannot run while it is on main; revert the commit that added it, or remove it "
                "from main with git, then try again",
            ) from exc
        if index.conflicts is not None:
            paths = sorted({(c[1] or c[2] or c[0]).path for c in index.conflicts if any(c)})
            raise RevertConflict(
                f"reverting {str(target.id)[:10]} conflicts with later changes to "
                f"{', '.join(paths)}; restore those memories instead"
            )
        return _writing(partial(index.write_tree, self.repo))


@contextmanager
def packing_refs(repo: Path) -> Iterator[None]:
    """Hold the repository's lock that ``git pack-refs`` and ref deletions take in turn.

    libgit2 deletes a ref without locking ``packed-refs`` when the ref is not in it yet, so a
    ``git pack-refs`` that had read the loose ref before the deletion would write it back into
    ``packed-refs`` after: the deleted ref returns. git's own deletions lock ``packed-refs``;
    gitmem's hold this ``flock`` on ``gitmem-refs.lock`` in the repository instead, and so does
    maintenance around ``git pack-refs`` (a moment: it writes one small file).
    """
    with open(repo / "gitmem-refs.lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _vanished(exc: Exception) -> bool:
    """Whether a write failed because a folder it had just made was removed (ENOENT)."""
    return "No such file or directory" in str(exc)


def _writing(write: Callable[[], T]) -> T:
    """Write an object, again if git's packing removed its folder meanwhile (see :mod:`.packing`).

    libgit2 makes ``objects/xx/``, compresses the object into a temporary file and renames it in;
    ``git prune-packed`` and ``git prune`` remove empty ``objects/xx/`` folders, so one removed
    in between fails the rename. Objects are named by their content: writing one again is
    harmless.
    """
    attempt = 1
    while True:
        try:
            return write()
        except OSError as exc:
            if attempt >= _FOLDER_ATTEMPTS or not _vanished(exc):
                raise
            attempt += 1


class _MoveRecord:
    """gitmem's exclusive flock around one ref move, and its record of the ref being moved."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> _MoveRecord:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + _LOCK_PATIENCE
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                # Held for the microseconds of a move; this long means a stopped process.
                if time.monotonic() >= deadline:
                    os.close(self.fd)
                    raise RefLocked(
                        f"another gitmem process has held {self.path} for over {_LOCK_PATIENCE:.0f} s "
                        "(a stopped process?); let it go on or end it, then try again"
                    ) from None
                time.sleep(0.001)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)  # releases the flock

    def start(self, ref: str) -> None:
        os.pwrite(self.fd, f"{os.getpid()} {ref}\n".encode(), 0)

    def done(self) -> None:
        os.ftruncate(self.fd, 0)

    def clear_orphaned_lock(self, repo: Path) -> None:
        """Remove the ref lock of a gitmem writer that died in the middle of a move, if any."""
        record = os.pread(self.fd, 4096, 0)
        if not record:
            return
        written = os.fstat(self.fd).st_mtime_ns
        self.done()
        ref = record.decode("utf-8", "replace").strip().partition(" ")[2]
        if not ref.startswith("refs/") or refused_part(ref) is not None:
            return  # not a record gitmem wrote
        lock = repo / (ref + ".lock")
        try:
            made = lock.stat().st_mtime_ns
        except FileNotFoundError:
            return
        # The dead writer made its lock right after writing the record; an older lock is
        # someone else's, and so is one made long after.
        if written <= made <= written + 1_000_000_000:
            lock.unlink(missing_ok=True)


def _init_bare(path: Path) -> None:
    """An empty bare repository on ``main`` with the reflog on for every ref."""
    configure(pygit2.init_repository(str(path), bare=True, initial_head="main"))


def configure(repo: pygit2.Repository) -> None:
    """Set what gitmem keeps in a repository's config (a new one, or one restored from a bundle)."""
    repo.config["core.logAllRefUpdates"] = "always"
    repo.config["user.name"] = "gitmem"
    repo.config["user.email"] = "gitmem@localhost"
    # Served over smart HTTP; lets `git clone` work without a `git update-server-info`.
    repo.config["http.receivepack"] = "false"


def _safe_name(actor: str | None) -> str:
    name = re.sub(r"[<>\n\r\x00]", "", actor or "gitmem").strip()
    return name or "gitmem"
