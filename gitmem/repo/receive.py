"""The receiving side of ``git push`` over smart HTTP: pkt-lines, a quarantined pack, what it adds.

gitmem speaks the receive-pack protocol itself (the ``report-status`` and ``side-band-64k``
capabilities of protocol v0, which every git client pushes with) instead of running ``git
receive-pack``, so every decision (who may push where, what a memory file must look like, which
review a push opens) is made in one process, with the service at hand.

The pack goes into a quarantine, as git's own receive-pack does it: ``git index-pack`` writes it
into a fresh object folder inside ``objects/`` (``GIT_OBJECT_DIRECTORY``), reading the objects a
thin pack builds on from the repository (``GIT_ALTERNATE_OBJECT_DIRECTORIES``). Nothing in the
repository sees the new objects until :meth:`Quarantine.migrate` moves the pack in, after every
check passed; a refused push deletes the folder and leaves the repository as it was.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pygit2
from pygit2.enums import FileMode, ObjectType, SortMode

from ..errors import InvalidInput
from .packing import git_program
from .store import MAIN, Store

#: An open repository, for the modules above this layer to pass around.
Repository = pygit2.Repository
ZERO = "0" * 40
FLUSH = b"0000"
CAPABILITIES = "report-status side-band-64k ofs-delta quiet agent=gitmem object-format=sha1"
# The most ref updates one push may carry, and the most new commits it may bring.
MAX_COMMANDS = 100
MAX_COMMITS = 1000
# Tree-entry checks of git's fsck that gitmem makes itself, naming the file (see check_tree).
_OWN_FSCK = ("hasdot", "hasdotdot", "hasdotgit", "emptyname", "fullpathname")
_SIDEBAND_CHUNK = 65515
# A quarantine this old belongs to a push whose process died: no push takes an hour.
ABANDONED_SECONDS = 3600


def pkt(data: bytes) -> bytes:
    """One pkt-line: four hex digits of length (themselves included), then ``data``."""
    return b"%04x" % (len(data) + 4) + data


def read_pkt(stream: IO[bytes]) -> bytes | None:
    """The next pkt-line's payload, or None for a flush packet."""
    head = stream.read(4)
    if len(head) != 4:
        raise InvalidInput("the push request ended early (no flush packet after the ref updates)")
    try:
        size = int(head, 16)
    except ValueError:
        raise InvalidInput(f"the push request is not pkt-line framed (it starts {head!r})") from None
    if size == 0:
        return None
    if size < 4:
        raise InvalidInput(f"bad pkt-line length {size}")
    data = stream.read(size - 4)
    if len(data) != size - 4:
        raise InvalidInput("the push request ended in the middle of a line")
    return data


def sideband(band: int, data: bytes) -> bytes:
    """``data`` as pkt-lines on side band ``band`` (1: report, 2: messages the client shows)."""
    out = []
    for start in range(0, len(data), _SIDEBAND_CHUNK):
        out.append(pkt(bytes([band]) + data[start:start + _SIDEBAND_CHUNK]))
    return b"".join(out)


@dataclass(frozen=True)
class RefUpdate:
    """One command of a push: move ``ref`` from ``old`` to ``new`` (ZERO: create or delete)."""

    old: str
    new: str
    ref: str

    @property
    def deletes(self) -> bool:
        """Whether the command deletes the ref."""
        return self.new == ZERO


def read_commands(stream: IO[bytes]) -> tuple[list[RefUpdate], set[str]]:
    """The ref updates at the start of a push request, and the capabilities the client asked for.

    Before a push larger than its post buffer, git sends a request of one flush packet to see
    that it may: no commands, which :meth:`gitmem.pushes.Pushes.receive` answers with nothing.
    """
    commands: list[RefUpdate] = []
    caps: set[str] = set()
    while (line := read_pkt(stream)) is not None:
        text, _, wanted = line.rstrip(b"\n").partition(b"\0")
        if not commands:
            caps = set(wanted.decode("ascii", "replace").split())
        parts = text.decode("utf-8", "replace").split(" ")
        if len(parts) != 3 or not all(_is_oid(p) for p in parts[:2]) or not parts[2].startswith("refs/"):
            raise InvalidInput(f"not a ref update: {text[:200]!r}")
        commands.append(RefUpdate(parts[0], parts[1], parts[2]))
        if len(commands) > MAX_COMMANDS:
            raise InvalidInput(f"a push may update at most {MAX_COMMANDS} refs")
    return commands, caps  # none: git's probe ("0000") before a large push, answered with nothing


def _is_oid(text: str) -> bool:
    return len(text) == 40 and all(c in "0123456789abcdef" for c in text)


def advertisement(store: Store) -> bytes:
    """What ``GET info/refs?service=git-receive-pack`` answers: the branches and the capabilities."""
    lines = [pkt(b"# service=git-receive-pack\n"), FLUSH]
    refs = sorted((name, store.head_id(name)) for name in store.refs("refs/heads/"))
    caps = CAPABILITIES.encode()
    if not refs:
        lines.append(pkt(f"{ZERO} capabilities^{{}}".encode() + b"\0" + caps + b"\n"))
    for i, (name, oid) in enumerate(refs):
        line = f"{oid} {name}".encode()
        lines.append(pkt(line + (b"\0" + caps if i == 0 else b"") + b"\n"))
    lines.append(FLUSH)
    return b"".join(lines)


def refused_advertisement(message: str) -> bytes:
    """An advertisement that makes ``git push`` stop at once with ``fatal: remote error: <message>``."""
    return pkt(b"# service=git-receive-pack\n") + FLUSH + pkt(b"ERR " + " ".join(message.split()).encode())


def report(unpack: str, results: list[tuple[str, str | None]], messages: list[str], *, use_sideband: bool) -> bytes:
    """The answer to a push: ``unpack ok`` (or the error), ``ok REF`` or ``ng REF reason`` per ref.

    With ``side-band-64k`` the ``messages`` go on band 2, which the client prints as ``remote:``
    lines; without it they cannot be shown at all.
    """
    status = [pkt(f"unpack {unpack}\n".encode())]
    for ref, reason in results:
        if reason is None:
            status.append(pkt(f"ok {ref}\n".encode()))
        else:
            status.append(pkt(f"ng {ref} {' '.join(reason.split())}\n".encode()))
    body = b"".join(status) + FLUSH
    if not use_sideband:
        return body
    text = "".join(f"{line}\n" for line in messages).encode()
    return (sideband(2, text) if text else b"") + sideband(1, body) + FLUSH


# --- the quarantine ---------------------------------------------------------------------------------


class Quarantine:
    """A pushed pack in its own object folder until every check passed (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        objects = Path(store.repo.path) / "objects"
        _clear_abandoned(objects)
        self.path = objects / f"incoming-{secrets.token_hex(8)}"
        (self.path / "pack").mkdir(parents=True)
        self._repo: pygit2.Repository | None = None

    def receive(self, pack: IO[bytes]) -> None:
        """Index the pack that follows the commands; a broken or unsafe pack raises :class:`InvalidInput`."""
        git = git_program("to receive a push")
        repo = Path(self.store.repo.path)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_DIR": str(repo),
            "GIT_OBJECT_DIRECTORY": str(self.path),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo / "objects"),
            "GIT_QUARANTINE_PATH": str(self.path),
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(repo),
        }
        strict = "--strict=" + ",".join(f"{check}=ignore" for check in _OWN_FSCK)
        first = pack.read(4)
        if not first:
            return  # a push that only deletes sends no pack
        proc = subprocess.Popen([git, "index-pack", "--stdin", "--fix-thin", strict], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        assert proc.stdin is not None and proc.stderr is not None
        try:
            proc.stdin.write(first)
            while chunk := pack.read(64 * 1024):
                proc.stdin.write(chunk)
        except BrokenPipeError:
            pass  # git stopped reading: its exit status and message say why
        finally:
            with contextlib.suppress(BrokenPipeError):  # what is left in the buffer has nowhere to go
                proc.stdin.close()
        with proc.stderr:
            said = proc.stderr.read().decode("utf-8", "replace")
        if proc.wait() != 0:
            words = "; ".join(line.strip() for line in said.splitlines() if line.strip()) or "no reason given"
            raise InvalidInput(f"the pushed pack was refused: {words}")

    @property
    def repo(self) -> pygit2.Repository:
        """The repository with the quarantined objects visible (for the checks only)."""
        if self._repo is None:
            self._repo = pygit2.Repository(str(self.store.repo.path))
            self._repo.odb.add_disk_alternate(str(self.path))
        return self._repo

    def migrate(self) -> None:
        """Move the pack into the repository (pack before index, as git does), then drop the folder."""
        target = Path(self.store.repo.path) / "objects" / "pack"
        target.mkdir(exist_ok=True)
        files = sorted((self.path / "pack").iterdir(), key=lambda p: (p.suffix == ".idx", p.name))
        for path in files:
            if path.name.startswith("tmp_"):
                continue
            os.replace(path, target / path.name)
        self.discard()

    def discard(self) -> None:
        """Delete the quarantine and everything in it."""
        self._repo = None
        shutil.rmtree(self.path, ignore_errors=True)


def _clear_abandoned(objects: Path) -> None:
    """Delete quarantines a process that died mid-push left behind (older than any push takes)."""
    cutoff = time.time() - ABANDONED_SECONDS
    for folder in objects.glob("incoming-*"):
        try:
            if folder.stat().st_mtime < cutoff:
                shutil.rmtree(folder, ignore_errors=True)
        except FileNotFoundError:
            continue


# --- what a push brings ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PushedFile:
    """One file a pushed commit adds, changes or deletes."""

    path: str
    status: str  # added, modified, deleted
    kind: str  # file, executable, symlink, submodule, tree
    data: bytes | None  # the new content (None when deleted, not a blob, or over the size read)
    size: int = 0  # the new content's size in bytes, from the object's header (0 when not a blob)


@dataclass(frozen=True)
class PushedCommit:
    """A commit a push brings, with its first line and what it changes against its first parent."""

    id: str
    summary: str
    parents: int
    files: list[PushedFile]
    message: str = ""  # the whole message, summary and body
    people: tuple[tuple[str, str], ...] = ()  # ("author" or "committer", "Name <email>")


def new_commits(repo: pygit2.Repository, new: str, known: list[str]) -> list[pygit2.Commit]:
    """Commits reachable from ``new`` and from none of ``known`` (commit ids), oldest first."""
    walker = repo.walk(pygit2.Oid(hex=new), SortMode.TOPOLOGICAL | SortMode.REVERSE)
    for oid in known:
        walker.hide(pygit2.Oid(hex=oid))
    out = []
    for commit in walker:
        out.append(commit)
        if len(out) > MAX_COMMITS:
            raise InvalidInput(f"the push brings more than {MAX_COMMITS} new commits; push them in parts")
    return out


def pushed(repo: pygit2.Repository, commit: pygit2.Commit, max_bytes: int) -> PushedCommit:
    """What one pushed commit changes, file by file, with the kind of each entry.

    A blob larger than ``max_bytes`` is never read: its size comes from the object's header,
    and its ``data`` is None (three 250 MB files of zeros pack into 134 KiB).
    """
    files: list[PushedFile] = []
    old = commit.parents[0].tree if commit.parents else None
    _tree_changes(repo, old, commit.tree, "", files, max_bytes)
    # The raw bytes: a message or a name in another encoding must not stop the checks.
    message = commit.raw_message.decode("utf-8", "replace")
    summary = message.splitlines()[0] if message else ""
    people = tuple((role, f"{_text(sig.raw_name)} <{_text(sig.raw_email)}>")
                   for role, sig in (("author", commit.author), ("committer", commit.committer)))
    return PushedCommit(str(commit.id), summary, len(commit.parents), files, message, people)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _kind(mode: int) -> str:
    kinds = {int(FileMode.BLOB): "file", int(FileMode.BLOB_EXECUTABLE): "executable", int(FileMode.LINK): "symlink",
             int(FileMode.COMMIT): "submodule", int(FileMode.TREE): "tree"}
    return kinds.get(int(mode), "unknown")


def _tree_changes(repo: pygit2.Repository, old: pygit2.Tree | None, new: pygit2.Tree | None, prefix: str,
                  out: list[PushedFile], max_bytes: int) -> None:
    """Compare two trees entry by entry (names as they are: a diff would hide ``..`` or ``.git``)."""
    before = {str(e.name): e for e in old} if old is not None else {}
    after = {str(e.name): e for e in new} if new is not None else {}
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is not None and b is not None and a.id == b.id and a.filemode == b.filemode:
            continue
        path = f"{prefix}{name}"
        a_tree = a is not None and a.filemode == FileMode.TREE
        b_tree = b is not None and b.filemode == FileMode.TREE
        if a_tree or b_tree:
            sub_old = repo[a.id] if a_tree and a is not None else None
            sub_new = repo[b.id] if b_tree and b is not None else None
            if a is not None and not a_tree:
                out.append(PushedFile(path, "deleted", _kind(a.filemode), None))
            _tree_changes(repo, sub_old if isinstance(sub_old, pygit2.Tree) else None,
                          sub_new if isinstance(sub_new, pygit2.Tree) else None, path + "/", out, max_bytes)
            if b is not None and not b_tree:
                out.append(PushedFile(path, "added", _kind(b.filemode), *_blob(repo, b, max_bytes)))
            continue
        if b is None:
            assert a is not None
            out.append(PushedFile(path, "deleted", _kind(a.filemode), None))
        else:
            out.append(PushedFile(path, "added" if a is None else "modified", _kind(b.filemode),
                                  *_blob(repo, b, max_bytes)))


def _blob(repo: pygit2.Repository, entry: pygit2.Object, max_bytes: int) -> tuple[bytes | None, int]:
    """A file's content and size; only the size (from the object's header) when it is over ``max_bytes``."""
    if entry.filemode not in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE):
        return None, 0
    kind, size = repo.odb.read_header(entry.id)
    if kind != ObjectType.BLOB:
        return None, 0
    if size > max_bytes:
        return None, size
    obj = repo[entry.id]
    return (obj.data, size) if isinstance(obj, pygit2.Blob) else (None, 0)


def memory_files(repo: pygit2.Repository, commit_id: str, max_bytes: int) -> Iterator[tuple[str, bytes]]:
    """Every ``<folder>/<name>.md`` blob of a commit's tree (where ids must be unique), up to ``max_bytes`` each.

    A larger file is no memory (a push refuses it), so it is left unread.
    """
    commit = repo[pygit2.Oid(hex=commit_id)]
    assert isinstance(commit, pygit2.Commit)
    for entry in commit.tree:
        if entry.filemode != FileMode.TREE:
            continue
        sub = repo[entry.id]
        assert isinstance(sub, pygit2.Tree)
        for item in sub:
            if item.filemode in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE) and item.name.endswith(".md"):
                if repo.odb.read_header(item.id)[1] > max_bytes:
                    continue
                blob = repo[item.id]
                if isinstance(blob, pygit2.Blob):
                    yield f"{entry.name}/{item.name}", blob.data


def merge_base(repo: pygit2.Repository, a: str, b: str) -> str | None:
    """The best common ancestor of two commits, or None when their histories are unrelated."""
    found = repo.merge_base(pygit2.Oid(hex=a), pygit2.Oid(hex=b))
    return None if found is None else str(found)


def descends(repo: pygit2.Repository, new: str, old: str) -> bool:
    """Whether ``new`` is ``old`` or has it in its history (a fast-forward from ``old``)."""
    return new == old or bool(repo.descendant_of(pygit2.Oid(hex=new), pygit2.Oid(hex=old)))


def branch_tips(store: Store) -> list[str]:
    """The commits every branch points at (what a push need not bring again)."""
    tips: set[str] = set()
    for ref in [*store.refs("refs/heads/"), MAIN]:
        tip = store.head_id(ref)
        if tip is not None:
            tips.add(tip)
    return sorted(tips)


def valid_branch_name(ref: str) -> bool:
    """Whether git takes ``ref`` as a branch name."""
    return bool(pygit2.reference_is_valid_name(ref))
