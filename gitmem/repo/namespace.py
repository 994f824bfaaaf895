"""Namespaces: one bare repository with its search index and usage log, opened once per process.

:class:`Namespaces` is the registry (where repositories live, which exist, create, open, attach
a clone); :class:`Namespace` holds one namespace's open handles and the few operations every
memory change needs: find a memory's current file, find a free path, and commit a plan.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from .. import concepts
from ..concepts import Memory
from ..errors import GitmemError, InvalidInput, MalformedConcept, MemoryNotFound, NamespaceNotFound
from ..settings import Settings
from .buffers import Buffers
from .index import SearchIndex, is_memory_path
from .store import Change, Guard, Store
from .usage import UsageLog

if TYPE_CHECKING:
    from .redisbuffers import RedisBuffers

    #: A namespace's conversation buffers: SQLite in the shared home, or Redis when hosts share one.
    BufferStore = Buffers | RedisBuffers

_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")

#: Where discussion threads live: one JSON Lines file per memory, ``<id>.jsonl``.
DISCUSSIONS = ".gitmem/discussions"

#: A plan computes the change to commit from the head it is given (None: nothing to write).
Plan = Callable[[pygit2.Commit], Change | None]

REPO_README = b"""# gitmem memory repository

Each memory is a Markdown file with YAML frontmatter in a folder named after its type
(fact, preference, decision, convention, pattern, method, insight, idea, lesson, techchoice).
Every change is one commit; the trailers (Memory-Id, Action, Source, Actor) say what happened.
Discussion threads live in .gitmem/discussions/.

Edit with `gitmem` or by hand and push. A new memory needs only its type and its text:

    ---
    type: convention
    ---

    We use pnpm, not npm.

gitmem gives it an id and its other fields when it reaches main. Then, with a writer key:

    git add -A && git commit -m "Say why"
    git push origin HEAD:refs/for/main     # opens a review; git prints its number and address

or `gitmem sync .` (GITMEM_KEY=your key), which also fetches and rebases first. Reviewer and
admin keys may push to main directly (fast-forward only). A push whose files break the rules
(a type that does not match its folder, a duplicate id, a secret, a file outside the type
folders...) is refused as a whole, naming each file and what is wrong with it.
"""


# READMEs earlier versions wrote, replaced by REPO_README the next time the namespace is initialised.
_OLD_READMES = (b"""# gitmem memory repository

Each memory is a Markdown file with YAML frontmatter in a folder named after its type
(fact, preference, decision, convention, pattern, method, insight, idea, lesson, techchoice).
Every change is one commit; the trailers (Memory-Id, Action, Source, Actor) say what happened.
Discussion threads live in .gitmem/discussions/. Edit with `gitmem` or by hand and push.
""",)


def check_namespace(name: Any) -> str:
    """Validate a namespace name: lower-case letters, digits, '.', '_' and '-'."""
    if not isinstance(name, str) or not _NAMESPACE.match(name) or ".." in name:
        raise InvalidInput(
            f"invalid namespace {name!r}: use 1 to 64 lower-case letters, digits, '.', '_' or '-'"
        )
    if name.endswith(".git"):
        # Its repository is <name>.git, and git URLs drop a trailing .git: /git/x.git means x.
        raise InvalidInput(f"invalid namespace {name!r}: a namespace name must not end in '.git'; "
                           f"call it {name.removesuffix('.git')!r} instead")
    return name


@dataclass
class Namespace:
    """The open handles of one namespace: repository, search index, usage log, and a lock."""

    name: str
    store: Store
    index: SearchIndex
    usage: UsageLog
    #: The folder of the namespace's derived state (index, usage log, vectors).
    state: Path = field(default_factory=Path)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def synced(self) -> pygit2.Commit:
        """The head of main, with the index brought up to it."""
        head = self.store.head()
        self.index.sync(self.store, head)
        return head

    def current(self, head: pygit2.Commit, memory_id: str) -> Memory:
        """A memory as it is in the file at ``head`` (the index only says where to look)."""
        self.index.sync(self.store, head)
        indexed = self.index.get(memory_id)
        if indexed is None:
            raise self.not_found(head, memory_id)
        data = self.store.read(indexed.path, head)
        if data is None:
            raise MemoryNotFound(f"no memory {memory_id} in namespace {self.name!r}")
        return concepts.parse(data, indexed.path)

    def not_found(self, head: pygit2.Commit, memory_id: str) -> GitmemError:
        """MemoryNotFound, or MalformedConcept naming the file when a file that does not parse claims the id."""
        claims = re.compile(rf"^id:[ \t]*['\"]?{memory_id}['\"]?[ \t]*$", re.MULTILINE | re.IGNORECASE)
        for path, reason in self.index.problems().items():
            data = self.store.read(path, head)
            if data is not None and claims.search(data.decode("utf-8", "replace")):
                return MalformedConcept(path, reason)
        return MemoryNotFound(f"no memory {memory_id} in namespace {self.name!r}")

    def free_path(self, head: pygit2.Commit, memory_type: str, title: str, memory_id: str) -> str:
        """A file path for a memory: its slug in its type folder, with its id added when that is taken."""
        slug = concepts.slugify(title)
        path = concepts.file_path(memory_type, slug)
        # The index pinned at ``head`` answers in microseconds what a tree lookup takes a
        # millisecond for: every memory path holds a memory or a problem.
        if self.index.indexed_commit() == str(head.id):
            taken = self.index.holds(path)
        else:
            taken = path in head.tree
        if taken:
            path = concepts.file_path(memory_type, f"{slug}-{memory_id}")
        return path

    def version_at(self, commit: pygit2.Commit, memory_id: str, hint: str | None) -> Memory | None:
        """The memory with ``memory_id`` as it was at ``commit`` (``hint``: the path to try first)."""
        if hint:
            data = self.store.read(hint, commit)
            if data is not None:
                found = concepts.parse(data, hint)
                if found.id == memory_id:
                    return found
        needle = f"\nid: {memory_id}\n".encode()
        for path, data in self.store.files(commit):
            if is_memory_path(path) and needle in data:
                return concepts.parse(data, path)
        return None

    def commit(self, plan: Plan, guard: Guard | None = None) -> str | None:
        """Apply ``plan`` to main by compare-and-swap and bring the index along; the new commit's id.

        The plan runs on an index snapshot pinned at the head it is given, so what it looks up
        is there; after a lost race it runs again on the new head. ``guard`` runs right before
        main moves (see :meth:`Store.transact`).
        """
        planned: list[tuple[str, Change]] = []

        def recorded(head: pygit2.Commit) -> Change | None:
            with self.index.at(self.store, head):
                change = plan(head)
            planned[:] = [] if change is None else [(str(head.id), change)]
            return change

        oid = self.store.transact(recorded, guard=guard)
        indexed = False
        if oid is not None and planned and planned[0][1].tree is None:
            # The files of the change are at hand: index them without diffing the whole tree.
            parent_id, change = planned[0]
            indexed = self.index.apply(parent_id, str(oid), change.changes, change.parsed)
        if not indexed:
            self.synced()
        return None if oid is None else str(oid)

    def close(self) -> None:
        """Close the index and the usage log (the repository needs no closing)."""
        self.index.close()
        self.usage.close()


class Namespaces:
    """Where the repositories live, and the namespaces opened so far in this process."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._open: dict[str, Namespace] = {}
        self._buffers: dict[str, BufferStore] = {}
        self._lock = threading.Lock()
        #: Called with the namespace's name after gitmem moved one of its refs (see Store.moved).
        self.on_change: Callable[[str], None] | None = None

    def repo_path(self, namespace: str) -> Path:
        """The bare repository of a namespace: ``$GITMEM_HOME/repos/<namespace>.git``."""
        return self.settings.repos_dir / f"{check_namespace(namespace)}.git"

    def names(self) -> list[str]:
        """Names of the namespaces that have a repository."""
        if not self.settings.repos_dir.is_dir():
            return []
        return sorted(p.name[:-4] for p in self.settings.repos_dir.glob("*.git") if (p / "HEAD").exists())

    def exists(self, namespace: str) -> bool:
        """Whether the namespace has a repository."""
        return (self.repo_path(namespace) / "HEAD").exists()

    def init(self, namespace: str) -> Namespace:
        """Create the namespace's repository if it does not exist yet (idempotent)."""
        path = self.repo_path(namespace)
        if not (path / "HEAD").exists() or Store(path).head_id() is None:
            Store.create(path, REPO_README)
        handle = self.open(namespace)
        if handle.store.read("README.md") in _OLD_READMES:
            self._new_readme(handle)
        return handle

    def _new_readme(self, handle: Namespace) -> None:
        """Replace a README an earlier version wrote (it said to push when pushes were refused)."""

        def plan(head: pygit2.Commit) -> Change | None:
            if handle.store.read("README.md", head) not in _OLD_READMES:
                return None  # someone changed it meanwhile: theirs stands
            return Change({"README.md": REPO_README}, "README: how to edit, commit and push", "readme")

        with handle.lock:
            handle.commit(plan)

    def open(self, namespace: str) -> Namespace:
        """Open a namespace (once per process) or raise :class:`NamespaceNotFound`."""
        check_namespace(namespace)
        with self._lock:
            handle = self._open.get(namespace)
            if handle is not None:
                return handle
            path = self.repo_path(namespace)
            if not (path / "HEAD").exists():
                raise NamespaceNotFound(
                    f"namespace {namespace!r} does not exist; create it with `gitmem init --namespace {namespace}`",
                    namespace)
            state = self.settings.state_dir / namespace
            store = Store(path)
            store.moved = lambda ref: self._changed(namespace)
            handle = Namespace(namespace, store, SearchIndex(state / "index.sqlite"),
                               UsageLog(state / "usage.sqlite"), state)
            self._open[namespace] = handle
            return handle

    def _changed(self, namespace: str) -> None:
        if self.on_change is not None:
            self.on_change(namespace)

    @contextmanager
    def using(self, namespace: str) -> Iterator[Namespace]:
        """Open a namespace and hold its lock for the block."""
        handle = self.open(namespace)
        with handle.lock:
            yield handle

    @contextmanager
    def scratch(self, namespace: str) -> Iterator[Namespaces]:
        """A throwaway home holding only ``namespace``, new and empty, deleted after the block.

        What a dry run into a namespace that does not exist yet runs against: the same code as
        the real run, on the repository it would start from, and nothing of it stays behind.
        """
        check_namespace(namespace)
        with tempfile.TemporaryDirectory(prefix="gitmem-scratch-") as folder:
            settings = dataclasses.replace(self.settings, home=Path(folder), state_home=None)
            scratch = Namespaces(settings)
            try:
                scratch.init(namespace)
                yield scratch
            finally:
                scratch.close()

    def attach(self, repo_path: Path) -> str:
        """Open a clone of a memory repository (an agent's ``git clone``) as a namespace to read.

        Its search index is kept inside the clone's git directory. Returns the name to open it by.
        """
        try:
            store = Store(repo_path)
        except pygit2.GitError as exc:
            raise InvalidInput(f"{repo_path} is not a git repository: {exc}") from exc
        if store.head_id() is None:
            raise InvalidInput(f"{repo_path} has no main branch; is it a gitmem repository?")
        state = Path(store.repo.path) / "gitmem"
        name = "clone-" + hashlib.sha1(str(Path(store.repo.path).resolve()).encode()).hexdigest()[:12]
        with self._lock:
            if name not in self._open:
                self._open[name] = Namespace(name, store, SearchIndex(state / "index.sqlite"),
                                             UsageLog(state / "usage.sqlite"), state)
        return name

    def buffers_path(self, namespace: str) -> Path:
        """Where a namespace's conversation buffers live without Redis: ``$GITMEM_HOME/ingest/<namespace>.sqlite``."""
        return self.settings.home / "ingest" / f"{check_namespace(namespace)}.sqlite"

    def has_buffers(self, namespace: str) -> bool:
        """Whether the namespace has ever ingested a conversation (its buffer file, or its keys in Redis, exist)."""
        if self.settings.shared_redis_url is not None:
            found = self.buffers(namespace)
            return isinstance(found, Buffers) or found.exists()
        return self.buffers_path(namespace).exists()

    def buffers(self, namespace: str) -> BufferStore:
        """The conversation buffers of an existing namespace: in the Redis hosts share, else in SQLite.

        SQLite's locking is not safe on a network file system, so hosts that share a home over NFS
        configure Redis (``GITMEM_REDIS_URL``, or a Redis broker) and the buffers go there.
        """
        self.open(namespace)
        with self._lock:
            found = self._buffers.get(namespace)
            if found is None:
                url = self.settings.shared_redis_url
                if url is not None:
                    from .redisbuffers import RedisBuffers  # loads redis, only when configured

                    found = RedisBuffers(url, self.settings.celery_queue, namespace)
                else:
                    found = Buffers(self.buffers_path(namespace))
                self._buffers[namespace] = found
            return found

    def close(self) -> None:
        """Close every open index, log and buffer file."""
        with self._lock:
            for handle in self._open.values():
                handle.close()
            self._open.clear()
            for buffers in self._buffers.values():
                buffers.close()
            self._buffers.clear()
