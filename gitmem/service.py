"""The memory service: the one facade the CLI, web app, Celery worker and Slack bot all call.

Build it with ``MemoryService(Settings.from_env())``. Every method takes a namespace first; each
namespace is a bare repository at ``$GITMEM_HOME/repos/<namespace>.git`` with a search index and a
usage log under ``$GITMEM_HOME/state/<namespace>/``. Every change is one commit on ``main``.
"""

from __future__ import annotations

import builtins
import fnmatch
import hashlib
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from . import concepts
from .concepts import Memory, now
from .errors import (
    Conflict,
    GitmemError,
    InvalidInput,
    MalformedConcept,
    MemoryNotFound,
    NamespaceNotFound,
)
from .index import SearchIndex, UsageLog, is_memory_path, match_tokens
from .settings import Settings
from .similarity import dice, normalise, token_set
from .store import Change, CommitInfo, Store

if TYPE_CHECKING:
    from .reviews import Review, Reviews

log = logging.getLogger(__name__)
_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
AUTO_SOURCES = ("agent", "import", "consolidation")
FEEDBACK_ACTIONS = ("confirm", "reject", "discuss", "amend")
PENDING_WEIGHT = 0.5
PATH_BOOST = 2.0
DISCUSSIONS = ".gitmem/discussions"

REPO_README = b"""# gitmem memory repository

Each memory is a Markdown file with YAML frontmatter in a folder named after its type
(fact, preference, decision, convention, pattern, method, insight, idea, lesson, techchoice).
Every change is one commit; the trailers (Memory-Id, Action, Source, Actor) say what happened.
Discussion threads live in .gitmem/discussions/. Edit with `gitmem` or by hand and push.
"""


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


def check_id(memory_id: Any) -> str:
    """Validate the shape of a memory id."""
    if not isinstance(memory_id, str) or not concepts.is_id(memory_id.strip().lower()):
        raise InvalidInput(f"{memory_id!r} is not a memory id (10 hex characters, see `gitmem recall`)")
    return memory_id.strip().lower()


def _relative(path: str) -> str:
    """``./a/b`` and ``/a/b`` as ``a/b``; a leading dot of a name (``.github``) is kept."""
    path = path.strip()
    while path.startswith(("./", "/")):
        path = path[2:] if path.startswith("./") else path[1:]
    return path


def path_matches(pattern: str, file: str) -> bool:
    """Whether a memory's path (a file, a folder or a glob) covers the caller's file."""
    pattern, file = _relative(pattern), _relative(file)
    if not pattern or not file:
        return False
    if file == pattern or file.startswith(pattern.rstrip("/") + "/"):
        return True
    return fnmatch.fnmatchcase(file, pattern)


@dataclass(frozen=True)
class WriteResult:
    """What a write did: the outcome, the memory after it, and the commit (None when unchanged)."""

    outcome: str
    memory: Memory | None
    commit: str | None
    similar_to: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "memory": self.memory.to_dict() if self.memory else None,
            "commit": self.commit,
            "similar_to": self.similar_to,
        }


@dataclass(frozen=True)
class Hit:
    """A recalled memory with its score and the potency it had when recalled."""

    memory: Memory
    score: float
    potency: float
    path_match: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"memory": self.memory.to_dict(), "score": round(self.score, 6),
                "potency": round(self.potency, 4), "path_match": self.path_match}


@dataclass(frozen=True)
class Comment:
    """One entry in a memory's discussion thread."""

    actor: str
    at: datetime
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"actor": self.actor, "at": concepts.iso(self.at), "text": self.text}


@dataclass(frozen=True)
class FeedbackResult:
    """The result of confirm, reject, discuss or amend feedback."""

    action: str
    memory: Memory
    commit: str | None
    review: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "memory": self.memory.to_dict(), "commit": self.commit,
                "review": self.review}


@dataclass
class Namespace:
    """The open handles of one namespace: repository, search index, usage log."""

    name: str
    store: Store
    index: SearchIndex
    usage: UsageLog
    lock: threading.RLock = field(default_factory=threading.RLock)

    def synced(self) -> pygit2.Commit:
        """The head of main, with the index brought up to it."""
        head = self.store.head()
        self.index.sync(self.store, head)
        return head


class MemoryService:
    """Remember, recall, amend, forget, feedback, history, revert and restore memories."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.from_env()
        self._open: dict[str, Namespace] = {}
        self._lock = threading.Lock()
        self._reviews: Reviews | None = None
        # Called as listener(namespace, result) after every remember that wrote a commit; front
        # ends use it to trigger consolidation (see gitmem.tasks). A failing listener is logged
        # and never undoes the write.
        self.write_listeners: list[Callable[[str, WriteResult], None]] = []

    # --- namespaces ----------------------------------------------------------------------------

    def repo_path(self, namespace: str) -> Path:
        return self.settings.repos_dir / f"{check_namespace(namespace)}.git"

    def namespaces(self) -> list[str]:
        """Names of the namespaces that have a repository."""
        if not self.settings.repos_dir.is_dir():
            return []
        return sorted(p.name[:-4] for p in self.settings.repos_dir.glob("*.git") if (p / "HEAD").exists())

    def exists(self, namespace: str) -> bool:
        return (self.repo_path(namespace) / "HEAD").exists()

    def init(self, namespace: str) -> Namespace:
        """Create the namespace's repository if it does not exist yet (idempotent)."""
        path = self.repo_path(namespace)
        if not (path / "HEAD").exists() or Store(path).head_id() is None:
            Store.create(path, REPO_README)
        return self.ns(namespace)

    def ns(self, namespace: str) -> Namespace:
        """Open a namespace (once per process) or raise :class:`NamespaceNotFound`."""
        check_namespace(namespace)
        with self._lock:
            handle = self._open.get(namespace)
            if handle is not None:
                return handle
            path = self.repo_path(namespace)
            if not (path / "HEAD").exists():
                raise NamespaceNotFound(
                    f"namespace {namespace!r} does not exist; create it with `gitmem init --namespace {namespace}`"
                )
            state = self.settings.state_dir / namespace
            handle = Namespace(namespace, Store(path), SearchIndex(state / "index.sqlite"),
                               UsageLog(state / "usage.sqlite"))
            self._open[namespace] = handle
            return handle

    @contextmanager
    def _using(self, namespace: str) -> Iterator[Namespace]:
        handle = self.ns(namespace)
        with handle.lock:
            yield handle

    def close(self) -> None:
        """Close every open index and log (repositories need no closing)."""
        with self._lock:
            for handle in self._open.values():
                handle.index.close()
                handle.usage.close()
            self._open.clear()

    @property
    def reviews(self) -> Reviews:
        """Pull-request-like reviews of branches (see :mod:`gitmem.reviews`)."""
        if self._reviews is None:
            from .reviews import Reviews

            self._reviews = Reviews(self)
        return self._reviews

    # --- reading -------------------------------------------------------------------------------

    def show(self, namespace: str, memory_id: str) -> Memory:
        """One memory by id."""
        memory_id = check_id(memory_id)
        with self._using(namespace) as ns:
            head = ns.synced()
            memory = ns.index.get(memory_id)
            if memory is None:
                raise self._not_found(ns, head, memory_id)
        return memory

    def list(self, namespace: str, *, state: str | None = None, type: str | None = None,
             offset: int = 0, limit: int = 50) -> builtins.list[Memory]:
        """Memories in path order, optionally of one state or type."""
        if state is not None and state not in concepts.STATES:
            raise InvalidInput(f"unknown state {state!r}; use one of: {', '.join(concepts.STATES)}")
        types = None if type is None else [concepts.clean_type(type)]
        if offset < 0 or limit < 0:
            raise InvalidInput("offset and limit must not be negative")
        with self._using(namespace) as ns:
            ns.synced()
            return ns.index.all(states=None if state is None else [state], types=types,
                                offset=offset, limit=limit)

    def effective_potency(self, ns: Namespace, memory: Memory, at: datetime,
                          pending: dict[str, tuple[int, datetime]] | None = None) -> float:
        """Potency now, counting uses recorded but not yet folded into the file."""
        uses = (pending if pending is not None else ns.usage.pending()).get(memory.id)
        if uses:
            memory = memory.with_use(uses[1], uses[0])
        return memory.potency_at(at)

    def recall(self, namespace: str, query: str = "", *, path: str | Sequence[str] | None = None,
               limit: int = 10, record: bool = True, include_archived: bool = False) -> builtins.list[Hit]:
        """Memories ranked by relevance x potency x recency, boosted where ``paths`` match ``path``.

        Archived memories and those whose potency fell below 0.10 are never returned unless
        ``include_archived``; every returned memory counts as one use (unless ``record=False``).
        """
        if not isinstance(query, str):
            raise InvalidInput("query must be a string")
        query = concepts.clean_text(query, limit=self.settings.max_text_chars, what="query") if query.strip() else ""
        files = [path] if isinstance(path, str) else list(path or [])
        files = [f for f in files if f and f.strip()]
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit must be between 1 and 1000")
        at = now()
        with self._using(namespace) as ns:
            ns.synced()
            candidates: dict[str, tuple[Memory, float]] = {}
            if query:
                q = token_set(query)
                found = ns.index.search(q, limit=max(100, limit * 10))
                top = max((score for _, score in found), default=0.0) or 1.0
                for row, score in found:
                    coverage = len(q & row.tokens) / len(q)
                    candidates[row.memory.id] = (row.memory, 0.5 * score / top + 0.5 * coverage)
            if files:
                for memory in ns.index.all(states=None, with_paths=True):
                    if memory.id not in candidates and not query:
                        candidates[memory.id] = (memory, 1.0)
            if not query and not files:
                for memory in ns.index.all(states=["active", "pending"]):
                    candidates[memory.id] = (memory, 1.0)
            pending = ns.usage.pending(ids=candidates)
            hits: builtins.list[Hit] = []
            for memory, relevance in candidates.values():
                if memory.state == "archived" and not include_archived:
                    continue
                potency = self.effective_potency(ns, memory, at, pending)
                if potency < concepts.ARCHIVE_BELOW and not include_archived:
                    continue
                matched = any(path_matches(p, f) for p in memory.paths for f in files)
                if files and not query and not matched:
                    continue
                age_days = max(0.0, (at - (memory.last_used or memory.updated)).total_seconds() / 86400)
                score = relevance * potency / (1 + age_days / 30)
                if matched:
                    score *= PATH_BOOST
                if memory.state == "pending":
                    score *= PENDING_WEIGHT
                hits.append(Hit(memory, score, potency, matched))
            hits.sort(key=lambda h: (-h.score, h.memory.id))
            hits = hits[:limit]
            if record and hits:
                ns.usage.record((h.memory.id for h in hits), at)
        return hits

    def context(self, namespace: str, files: Sequence[str] = (), query: str = "", limit: int = 20,
                *, record: bool = True, label: str | None = None) -> str:
        """The Markdown block an agent should load: memories about ``files`` first, then the strongest others."""
        files = [f for f in files if f and f.strip()]
        hits = self.recall(namespace, query, path=files, limit=limit, record=False) if files else []
        seen = {h.memory.id for h in hits}
        if len(hits) < limit:
            hits += [h for h in self.recall(namespace, query, limit=limit, record=False) if h.memory.id not in seen]
        hits = hits[:limit]
        if record and hits:
            with self._using(namespace) as ns:
                ns.usage.record((h.memory.id for h in hits), now())
        from .templating import render_template

        return render_template("export/context.md.j2", namespace=label or namespace, hits=hits, files=files)

    def attach(self, repo_path: Path) -> str:
        """Open a clone of a memory repository (an agent's ``git clone``) as a namespace to read.

        Its search index is kept inside the clone's git directory. Returns the namespace name to
        pass to :meth:`recall` and :meth:`context` (with ``record=False``: a clone's reads are not
        folded anywhere).
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
                                             UsageLog(state / "usage.sqlite"))
        return name

    def status(self, namespace: str) -> dict[str, Any]:
        """Counts by state, type and potency tier, the head commit and any malformed files."""
        at = now()
        with self._using(namespace) as ns:
            head = ns.synced()
            counts = ns.index.counts()
            pending = ns.usage.pending()
            tiers = {"active": 0, "low": 0, "archived": 0}
            for memory in ns.index.all(states=["active"]):
                tiers[concepts.tier(self.effective_potency(ns, memory, at, pending))] += 1
            return {
                "namespace": namespace,
                "head": str(head.id),
                "total": sum(counts["state"].values()),
                "by_state": {s: counts["state"].get(s, 0) for s in concepts.STATES},
                "by_type": {t: counts["type"].get(t, 0) for t in concepts.TYPES},
                "by_tier": tiers,
                "pending_uses": sum(n for n, _ in pending.values()),
                "malformed": ns.index.problems(),
            }

    def history(self, namespace: str, memory_id: str) -> builtins.list[CommitInfo]:
        """Commits on main that changed one memory, newest first."""
        memory_id = check_id(memory_id)
        with self._using(namespace) as ns:
            out = [info for info in (ns.store.info(c) for c in ns.store.log()) if memory_id in info.memory_ids]
        if not out:
            raise MemoryNotFound(f"no memory {memory_id} in namespace {namespace!r}, now or before")
        return out

    def log(self, namespace: str, *, limit: int = 20, offset: int = 0) -> builtins.list[CommitInfo]:
        """Commits on main, newest first."""
        with self._using(namespace) as ns:
            out: builtins.list[CommitInfo] = []
            for i, commit in enumerate(ns.store.log()):
                if i >= offset + limit:
                    break
                if i >= offset:
                    out.append(ns.store.info(commit))
            return out

    def discussion(self, namespace: str, memory_id: str) -> builtins.list[Comment]:
        """The discussion thread of a memory, oldest first."""
        memory = self.show(namespace, memory_id)
        with self._using(namespace) as ns:
            data = ns.store.read(f"{DISCUSSIONS}/{memory.id}.jsonl")
        if not data:
            return []
        out = []
        for line in data.decode("utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                out.append(Comment(item["actor"], concepts.parse_time(item["at"]) or now(), item["text"]))
        return out

    # --- writing -------------------------------------------------------------------------------

    def _current(self, ns: Namespace, head: pygit2.Commit, memory_id: str) -> Memory:
        """A memory as it is in the file at ``head`` (the index only says where to look)."""
        ns.index.sync(ns.store, head)
        indexed = ns.index.get(memory_id)
        if indexed is None:
            raise self._not_found(ns, head, memory_id)
        data = ns.store.read(indexed.path, head)
        if data is None:
            raise MemoryNotFound(f"no memory {memory_id} in namespace {ns.name!r}")
        return concepts.parse(data, indexed.path)

    def _not_found(self, ns: Namespace, head: pygit2.Commit, memory_id: str) -> GitmemError:
        """MemoryNotFound, or MalformedConcept naming the file when the id is in a file that does not parse."""
        claims = re.compile(rf"^id:[ \t]*['\"]?{memory_id}['\"]?[ \t]*$", re.MULTILINE | re.IGNORECASE)
        for path, reason in ns.index.problems().items():
            data = ns.store.read(path, head)
            if data is not None and claims.search(data.decode("utf-8", "replace")):
                return MalformedConcept(path, reason)
        return MemoryNotFound(f"no memory {memory_id} in namespace {ns.name!r}")

    def _title_from(self, text: str) -> str:
        """A title derived from the text, within ``settings.max_title_chars``."""
        return concepts.title_from(text, limit=min(80, self.settings.max_title_chars))

    def _free_path(self, ns: Namespace, head: pygit2.Commit, memory_type: str, title: str, memory_id: str) -> str:
        slug = concepts.slugify(title)
        path = concepts.file_path(memory_type, slug)
        if path in head.tree:
            path = concepts.file_path(memory_type, f"{slug}-{memory_id}")
        return path

    def _commit(self, ns: Namespace, plan: Any) -> str | None:
        planned: list[tuple[str, Change]] = []

        def recorded(head: pygit2.Commit) -> Change | None:
            with ns.index.at(ns.store, head):
                change: Change | None = plan(head)
            planned[:] = [] if change is None else [(str(head.id), change)]
            return change

        oid = ns.store.transact(recorded)
        indexed = False
        if oid is not None and planned and planned[0][1].tree is None:
            # The files of the change are at hand: index them without diffing the whole tree.
            parent_id, change = planned[0]
            indexed = ns.index.apply(parent_id, str(oid), change.changes)
        if not indexed:
            ns.synced()
        return None if oid is None else str(oid)

    def remember(
        self,
        namespace: str,
        text: str,
        *,
        type: str = "fact",
        title: str | None = None,
        tags: Iterable[str] = (),
        paths: Iterable[str] = (),
        source: str = "user",
        author: str | None = None,
        state: str = "active",
        related: Iterable[str] = (),
        tenured: bool = False,
    ) -> WriteResult:
        """Store a memory through the write gate.

        Normalised-identical text reinforces the existing memory; text at least
        ``settings.high_similarity`` similar from an automatic source is merged into the existing
        memory (paths and tags unioned, potency +0.05, text kept); everything else, including a
        user's own similar statement (it may be a correction), is added as a new memory.
        """
        limit = self.settings.max_text_chars
        text = concepts.clean_text(text, limit=limit)
        memory_type = concepts.clean_type(type)
        source = concepts.clean_source(source)
        title = concepts.clean_title(title, limit=self.settings.max_title_chars) if title else self._title_from(text)
        tags = concepts.clean_list(tags, what="tag", limit=80)
        paths = concepts.clean_list(paths, what="path", limit=400)
        related = concepts.clean_list(related, what="related id", limit=40)
        author = concepts.clean_list([author] if author else [], what="author", limit=200)[0] if author else None
        if state not in ("active", "pending"):
            raise InvalidInput("a new memory is either active or pending")
        result: dict[str, Any] = {}

        # Plans run inside _commit, on an index snapshot pinned at ``head``: what it finds is there.
        def plan(head: pygit2.Commit) -> Change | None:
            at = now()
            same = ns.index.by_norm(normalise(text))
            if same:
                old = self._current(ns, head, same[0].id)
                new = old.with_use(at).replace(
                    paths=old.paths + tuple(p for p in paths if p not in old.paths),
                    tags=old.tags + tuple(t for t in tags if t not in old.tags),
                    state="active" if old.state == "archived" else old.state,
                    archived_reason=None if old.state == "archived" else old.archived_reason,
                    updated=at,
                )
                result.update(outcome="reinforced", memory=new, similar_to=old.id)
                return Change({old.path: concepts.render(new)}, f"reinforce: {old.title}", "reinforce",
                              (old.id,), source, author)
            if source in AUTO_SOURCES:
                mine = frozenset(match_tokens(title, text, tags))
                best, best_score = None, 0.0
                for row, _ in ns.index.search(mine, limit=20):
                    if row.memory.state == "archived":
                        continue
                    score = dice(mine, row.tokens)
                    if score > best_score:
                        best, best_score = row.memory, score
                if best is not None and best_score >= self.settings.high_similarity:
                    old = self._current(ns, head, best.id)
                    new = old.replace(
                        paths=old.paths + tuple(p for p in paths if p not in old.paths),
                        tags=old.tags + tuple(t for t in tags if t not in old.tags),
                        potency=min(1.0, round(old.potency_at(at) + 0.05, 4)),
                        last_used=at,
                        updated=at,
                    )
                    result.update(outcome="merged", memory=new, similar_to=old.id)
                    return Change({old.path: concepts.render(new)}, f"merge: {old.title}", "merge",
                                  (old.id,), source, author,
                                  body=f"A {best_score:.2f}-similar statement was merged in:\n\n{text}")
            memory_id = concepts.new_id()
            path = self._free_path(ns, head, memory_type, title, memory_id)
            memory = Memory(id=memory_id, type=memory_type, text=text, title=title,
                            description=concepts.description_from(text), tags=tags,
                            paths=paths, source=source, author=author, created=at, updated=at,
                            state=state, related=related, tenured=tenured, path=path)
            result.update(outcome="added", memory=memory, similar_to=None)
            return Change({path: concepts.render(memory)}, f"remember: {title}", "remember",
                          (memory_id,), source, author)

        with self._using(namespace) as ns:
            commit = self._commit(ns, plan)
        written = WriteResult(result["outcome"], result["memory"], commit, result["similar_to"])
        for listener in list(self.write_listeners):
            try:
                listener(namespace, written)
            except Exception:  # a trigger must never fail the write that fired it
                log.exception("write listener %r failed", listener)
        return written

    def amend(
        self,
        namespace: str,
        memory_id: str,
        *,
        text: str | None = None,
        title: str | None = None,
        type: str | None = None,
        tags: Iterable[str] | None = None,
        paths: Iterable[str] | None = None,
        tenured: bool | None = None,
        actor: str | None = None,
        reason: str = "",
    ) -> WriteResult:
        """Change a memory's text, title, type, tags, paths or tenure in one commit."""
        memory_id = check_id(memory_id)
        if all(v is None for v in (text, title, type, tags, paths, tenured)):
            raise InvalidInput("nothing to amend: give new text, title, type, tags, paths or tenure")
        change = self._amend_change(namespace, memory_id, text=text, title=title, type=type, tags=tags,
                                    paths=paths, tenured=tenured, actor=actor, reason=reason)
        result: dict[str, Any] = {}

        def plan(head: pygit2.Commit) -> Change | None:
            built = change(head)
            result["memory"] = built[0]
            return built[1]

        with self._using(namespace) as ns:
            commit = self._commit(ns, plan)
        return WriteResult("amended" if commit else "unchanged", result["memory"], commit)

    def _amend_change(self, namespace: str, memory_id: str, *, text: str | None, title: str | None,
                      type: str | None, tags: Iterable[str] | None, paths: Iterable[str] | None,
                      tenured: bool | None, actor: str | None, reason: str,
                      action: str = "amend") -> Callable[[pygit2.Commit], tuple[Memory, Change | None]]:
        """Validate an amendment and return a plan builder: head -> (memory, Change | None)."""
        limit = self.settings.max_text_chars
        new_text = None if text is None else concepts.clean_text(text, limit=limit)
        new_title = None if title is None else concepts.clean_title(title, limit=self.settings.max_title_chars)
        new_type = None if type is None else concepts.clean_type(type)
        new_tags = None if tags is None else concepts.clean_list(tags, what="tag", limit=80)
        new_paths = None if paths is None else concepts.clean_list(paths, what="path", limit=400)
        ns = self.ns(namespace)

        def build(head: pygit2.Commit) -> tuple[Memory, Change | None]:
            old = self._current(ns, head, memory_id)
            changes: dict[str, Any] = {}
            if new_text is not None and new_text != old.text:
                changes["text"] = new_text
                changes["description"] = concepts.description_from(new_text)
                if new_title is None and old.title == self._title_from(old.text):
                    changes["title"] = self._title_from(new_text)
            if new_title is not None and new_title != old.title:
                changes["title"] = new_title
            if new_type is not None and new_type != old.type:
                changes["type"] = new_type
            if new_tags is not None and new_tags != old.tags:
                changes["tags"] = new_tags
            if new_paths is not None and new_paths != old.paths:
                changes["paths"] = new_paths
            if tenured is not None and tenured != old.tenured:
                changes["tenured"] = tenured
            if not changes:
                return old, None
            new = old.replace(**changes, updated=now())
            files: dict[str, bytes | None] = {}
            if new.type != old.type:
                new = new.replace(path=self._free_path(ns, head, new.type, new.title, new.id))
                files[old.path] = None
            files[new.path] = concepts.render(new)
            what = ", ".join(sorted(k for k in changes if k != "description"))
            body = f"Changed: {what}."
            if reason.strip():
                body += f"\n\n{reason.strip()}"
            return new, Change(files, f"{action}: {new.title}", action, (new.id,), "user", actor, body=body)

        return build

    def forget(self, namespace: str, memory_id: str, *, purge: bool = False, reason: str | None = None,
               actor: str | None = None, action: str = "forget") -> WriteResult:
        """Archive a memory (kept in the repository, never recalled) or, with ``purge``, delete its file."""
        memory_id = check_id(memory_id)
        reason_text = concepts.clean_text(reason, limit=1000, what="reason") if reason and reason.strip() else None
        result: dict[str, Any] = {}

        def plan(head: pygit2.Commit) -> Change | None:
            old = self._current(ns, head, memory_id)
            if purge:
                result.update(outcome="purged", memory=old)
                return Change({old.path: None}, f"purge: {old.title}", action, (old.id,), None, actor,
                              body=reason_text or "")
            if old.state == "archived":
                result.update(outcome="unchanged", memory=old)
                return None
            new = old.replace(state="archived", archived_reason=reason_text, updated=now())
            result.update(outcome="archived", memory=new)
            return Change({old.path: concepts.render(new)}, f"{action}: {old.title}", action, (old.id,),
                          None, actor, body=reason_text or "")

        with self._using(namespace) as ns:
            commit = self._commit(ns, plan)
        return WriteResult(result["outcome"], result["memory"], commit)

    def revert(self, namespace: str, commit_id: str, *, actor: str | None = None) -> WriteResult:
        """Undo one commit of main with a new commit; a conflicting revert changes nothing."""
        result: dict[str, Any] = {}

        def plan(head: pygit2.Commit) -> Change | None:
            target = ns.store.commit(commit_id)
            if target.id != head.id and not ns.store.repo.descendant_of(head.id, target.id):
                raise InvalidInput(f"commit {commit_id} is not on main; only main's commits can be reverted")
            tree = ns.store.revert_change(target, head)
            if tree == head.tree.id:
                result["outcome"] = "unchanged"
                return None
            info = ns.store.info(target)
            result["outcome"] = "reverted"
            return Change({}, f'Revert "{info.summary}"', "revert", info.memory_ids, None, actor,
                          body=f"This reverts commit {target.id}.",
                          extra_trailers=(("Reverts", str(target.id)),), tree=tree)

        with self._using(namespace) as ns:
            commit = self._commit(ns, plan)
        return WriteResult(result["outcome"], None, commit)

    def _version_at(self, ns: Namespace, commit: pygit2.Commit, memory_id: str, hint: str | None) -> Memory | None:
        """The memory with ``memory_id`` as it was at ``commit``."""
        if hint:
            data = ns.store.read(hint, commit)
            if data is not None:
                found = concepts.parse(data, hint)
                if found.id == memory_id:
                    return found
        needle = f"\nid: {memory_id}\n".encode()
        for path, data in ns.store.files(commit):
            if is_memory_path(path) and needle in data:
                return concepts.parse(data, path)
        return None

    def restore(self, namespace: str, memory_id: str, commit_id: str, *, actor: str | None = None) -> WriteResult:
        """Bring a memory back to how it was at ``commit_id`` (its usage figures stay current)."""
        memory_id = check_id(memory_id)
        result: dict[str, Any] = {}

        def plan(head: pygit2.Commit) -> Change | None:
            source = ns.store.commit(commit_id)
            current = ns.index.get(memory_id)
            old = self._version_at(ns, source, memory_id, current.path if current else None)
            if old is None:
                raise MemoryNotFound(f"memory {memory_id} did not exist at commit {commit_id}")
            at = now()
            files: dict[str, bytes | None] = {}
            new = old.replace(updated=at)
            if current is not None:
                new = new.replace(potency=current.potency, last_used=current.last_used,
                                  access_count=current.access_count, verified=current.verified)
                if current.path != old.path:
                    files[current.path] = None
            if ns.store.read(new.path, head) is not None and (current is None or current.path != new.path):
                new = new.replace(path=self._free_path(ns, head, new.type, new.title, new.id))
            unchanged = current is not None and concepts.render(current) == concepts.render(
                new.replace(updated=current.updated)
            )
            if unchanged:
                result.update(outcome="unchanged", memory=current)
                return None
            files[new.path] = concepts.render(new)
            result.update(outcome="restored", memory=new)
            return Change(files, f"restore: {new.title}", "restore", (memory_id,), None, actor,
                          body=f"Restored to its version at {source.id}.",
                          extra_trailers=(("Restored-From", str(source.id)),))

        with self._using(namespace) as ns:
            commit = self._commit(ns, plan)
        return WriteResult(result["outcome"], result["memory"], commit)

    def fold_usage(self, namespace: str, *, actor: str | None = None) -> str | None:
        """Fold the recorded uses into the memory files in one commit; None when there were none."""
        with self._using(namespace) as ns, ns.usage.folding():
            high = ns.usage.high_water()
            if not high:
                return None
            pending = ns.usage.pending(up_to=high)

            def plan(head: pygit2.Commit) -> Change | None:
                files: dict[str, bytes | None] = {}
                ids = []
                for memory_id, (count, last) in sorted(pending.items()):
                    indexed = ns.index.get(memory_id)
                    data = ns.store.read(indexed.path, head) if indexed else None
                    if indexed is None or data is None:
                        continue  # purged since it was used
                    memory = concepts.parse(data, indexed.path).with_use(last, count)
                    files[memory.path] = concepts.render(memory)
                    ids.append(memory_id)
                if not files:
                    return None
                uses = sum(pending[i][0] for i in ids)
                return Change(files, f"usage: fold {uses} uses of {len(ids)} memories", "usage",
                              tuple(ids), None, actor)

            commit = self._commit(ns, plan)
            ns.usage.clear(high)
            return commit

    # --- feedback --------------------------------------------------------------------------------

    def may_amend_directly(self, actor: str, role: str | None = None) -> bool:
        """The policy: maintainers (by name) and the roles in ``direct_amend_roles`` skip review."""
        return actor in self.settings.maintainers or (role is not None and role in self.settings.direct_amend_roles)

    def feedback(self, namespace: str, memory_id: str, action: str, *, actor: str,
                 text: str | None = None, role: str | None = None) -> FeedbackResult:
        """Confirm, reject, discuss or amend a memory; each becomes a commit naming the actor.

        ``amend`` goes straight to main only when the policy allows the actor
        (:meth:`may_amend_directly`); otherwise it opens a review branch with the change.
        """
        memory_id = check_id(memory_id)
        if action not in FEEDBACK_ACTIONS:
            raise InvalidInput(f"unknown feedback action {action!r}; use one of: {', '.join(FEEDBACK_ACTIONS)}")
        actor = concepts.clean_text(actor, limit=200, what="actor") if isinstance(actor, str) else ""
        if not actor:
            raise InvalidInput("feedback needs an actor: who is giving it")
        if action == "confirm":
            return self._confirm(namespace, memory_id, actor)
        if action == "reject":
            result = self.forget(namespace, memory_id, reason=text or "rejected", actor=actor, action="reject")
            assert result.memory is not None
            return FeedbackResult("reject", result.memory, result.commit)
        body = concepts.clean_text(text or "", limit=self.settings.max_text_chars,
                                   what="discussion text" if action == "discuss" else "amended text")
        if action == "discuss":
            return self._discuss(namespace, memory_id, actor, body)
        if self.may_amend_directly(actor, role):
            result = self.amend(namespace, memory_id, text=body, actor=actor, reason="Amended through feedback.")
            assert result.memory is not None
            return FeedbackResult("amend", result.memory, result.commit)
        return self._propose_amend(namespace, memory_id, actor, body)

    def _confirm(self, namespace: str, memory_id: str, actor: str) -> FeedbackResult:
        result: dict[str, Memory] = {}

        def plan(head: pygit2.Commit) -> Change | None:
            old = self._current(ns, head, memory_id)
            at = now()
            new = old.with_use(at).replace(
                verified=old.verified + ((actor,) if actor not in old.verified else ()),
                state="active" if old.state == "pending" else old.state,
            )
            result["memory"] = new
            return Change({old.path: concepts.render(new)}, f"confirm: {old.title}", "confirm",
                          (old.id,), None, actor)

        with self._using(namespace) as ns:
            commit = self._commit(ns, plan)
        return FeedbackResult("confirm", result["memory"], commit)

    def _discuss(self, namespace: str, memory_id: str, actor: str, text: str) -> FeedbackResult:
        result: dict[str, Memory] = {}
        thread = f"{DISCUSSIONS}/{memory_id}.jsonl"

        def plan(head: pygit2.Commit) -> Change | None:
            memory = self._current(ns, head, memory_id)
            result["memory"] = memory
            line = json.dumps({"actor": actor, "at": concepts.iso(now()), "text": text}, ensure_ascii=False)
            data = (ns.store.read(thread, head) or b"") + line.encode() + b"\n"
            return Change({thread: data}, f"discuss: {memory.title}", "discuss", (memory_id,), None, actor,
                          body=text)

        with self._using(namespace) as ns:
            commit = self._commit(ns, plan)
        return FeedbackResult("discuss", result["memory"], commit)

    def _propose_amend(self, namespace: str, memory_id: str, actor: str, text: str) -> FeedbackResult:
        build = self._amend_change(namespace, memory_id, text=text, title=None, type=None, tags=None,
                                   paths=None, tenured=None, actor=actor,
                                   reason="Proposed through feedback; needs review.")
        with self._using(namespace) as ns:
            head = ns.store.head()
            memory, change = build(head)
            if change is None:
                return FeedbackResult("amend", memory, None)
            review = self.propose(namespace, [change], title=f"Amend {memory.title}", author=actor,
                                  kind="amend")
        return FeedbackResult("amend", memory, None, review.number)

    def propose(self, namespace: str, changes: Sequence[Change], *, title: str, author: str,
                kind: str, description: str = "") -> Review:
        """Write changes as commits on a new branch off main and open a review for them."""
        if not changes:
            raise Conflict("there is nothing to review")
        with self._using(namespace) as ns:
            base = ns.store.head()
            tip: pygit2.Commit = base
            for change in changes:
                tip = ns.store.commit(str(ns.store.write_commit(tip, change)))
            stamp = now().strftime("%Y%m%dT%H%M%S")
            branch = f"refs/heads/review/{kind}-{stamp}-{str(tip.id)[:7]}"
            ns.store.move_ref(branch, tip.id, None, f"open review: {title}")
            return self.reviews.open(namespace, branch=branch, base=str(base.id), title=title,
                                     author=author, kind=kind, description=description)

    # --- export --------------------------------------------------------------------------------

    def export(self, namespace: str, fmt: str, dest: Path | None = None) -> str:
        """Export as ``memory-md`` (a MEMORY.md index), ``json``, or ``okf`` (a folder at ``dest``)."""
        at = now()
        with self._using(namespace) as ns:
            head = ns.synced()
            memories = ns.index.all(states=["active", "pending", "archived"])
            pending = ns.usage.pending()
            potencies = {m.id: self.effective_potency(ns, m, at, pending) for m in memories}
            if fmt == "json":
                return json.dumps([m.to_dict() | {"effective_potency": round(potencies[m.id], 4)}
                                   for m in memories], ensure_ascii=False, indent=2)
            from .templating import render_template

            if fmt == "memory-md":
                live = [m for m in memories if m.state != "archived" and potencies[m.id] >= concepts.ARCHIVE_BELOW]
                live.sort(key=lambda m: -potencies[m.id])
                return render_template("export/MEMORY.md.j2", namespace=namespace, memories=live,
                                       potencies=potencies, types=concepts.TYPES, head=str(head.id))
            if fmt == "okf":
                if dest is None:
                    raise InvalidInput("okf export needs a destination folder")
                index_md = render_template("export/okf-index.md.j2", namespace=namespace, memories=memories,
                                           types=concepts.TYPES, generated=concepts.iso(at))
                try:
                    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
                        raise InvalidInput(f"{dest} is not an empty folder; give a new or empty folder")
                    for path, data in ns.store.files(head):
                        if is_memory_path(path):
                            target = dest / path
                            target.parent.mkdir(parents=True, exist_ok=True)
                            target.write_bytes(data)
                    dest.mkdir(parents=True, exist_ok=True)
                    (dest / "index.md").write_text(index_md, encoding="utf-8")
                except OSError as exc:
                    raise InvalidInput(f"cannot write the export to {exc.filename or dest}: {exc.strerror}; "
                                       "give a new or empty folder you can write to") from None
                return str(dest)
        raise InvalidInput(f"unknown export format {fmt!r}; use memory-md, json or okf")

