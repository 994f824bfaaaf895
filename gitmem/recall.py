"""Reading memories: show, list, recall (ranked search), the context block for agents, status, history.

Reads never write a commit: a recall records its hits in the usage log, which consolidation
folds into the files later (:meth:`gitmem.memories.Memories.fold_usage`).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import concepts, ranking, techchoice
from .concepts import Memory, check_id, now
from .errors import InvalidInput, MemoryNotFound
from .repo import DISCUSSIONS, Candidate, CommitInfo, Namespace, Namespaces
from .semantic import Semantics
from .settings import Settings
from .similarity import token_set
from .templating import render_template


@dataclass(frozen=True)
class Hit:
    """A recalled memory with its score and the potency it had when recalled."""

    memory: Memory
    score: float
    potency: float
    path_match: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the score and potency rounded; a techchoice's adds ``options_table``."""
        out = {"memory": self.memory.to_dict(), "score": round(self.score, 6),
               "potency": round(self.potency, 4), "path_match": self.path_match}
        if self.memory.options:
            out["options_table"] = techchoice.options_table(self.memory)
        return out


@dataclass(frozen=True)
class Comment:
    """One entry in a memory's discussion thread."""

    actor: str
    at: datetime
    text: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the time as an ISO 8601 string)."""
        return {"actor": self.actor, "at": concepts.iso(self.at), "text": self.text}


class Recall:
    """Find and read memories in any namespace."""

    def __init__(self, namespaces: Namespaces, settings: Settings, semantics: Semantics | None = None) -> None:
        """Read from ``namespaces`` under ``settings``' limits; ``semantics``: find by meaning too."""
        self.namespaces = namespaces
        self.settings = settings
        self.semantics = semantics

    def show(self, namespace: str, memory_id: str) -> Memory:
        """One memory by id."""
        memory_id = check_id(memory_id)
        with self.namespaces.using(namespace) as ns:
            head = ns.synced()
            memory = ns.index.get(memory_id)
            if memory is None:
                raise ns.not_found(head, memory_id)
        return memory

    def list(self, namespace: str, *, state: str | None = None, type: str | None = None,
             offset: int = 0, limit: int = 50) -> builtins.list[Memory]:
        """Memories in path order, optionally of one state or type."""
        if state is not None and state not in concepts.STATES:
            raise InvalidInput(f"unknown state {state!r}; use one of: {', '.join(concepts.STATES)}")
        types = None if type is None else [concepts.clean_type(type)]
        if offset < 0 or limit < 0:
            raise InvalidInput("offset and limit must not be negative")
        with self.namespaces.using(namespace) as ns:
            ns.synced()
            return ns.index.all(states=None if state is None else [state], types=types,
                                offset=offset, limit=limit)

    def recall(self, namespace: str, query: str = "", *, path: str | Sequence[str] | None = None,
               limit: int = 10, record: bool = True, include_archived: bool = False,
               include_pending: bool = True) -> builtins.list[Hit]:
        """Memories ranked by relevance x potency x recency, boosted where ``paths`` match ``path``.

        Archived memories and those whose potency fell below 0.10 are never returned unless
        ``include_archived``; pending ones (waiting for consolidation to promote them) unless
        ``include_pending`` is False. Every returned memory counts as one use (unless ``record=False``).
        """
        if not isinstance(query, str):
            raise InvalidInput("query must be a string")
        most = self.settings.max_text_chars
        query = concepts.clean_text(query, limit=most, what="query", scan=False) if query.strip() else ""
        files = [path] if isinstance(path, str) else list(path or [])
        files = [f for f in files if f and f.strip()]
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit must be between 1 and 1000")
        at = now()
        with self.namespaces.using(namespace) as ns:
            ns.synced()
            if query:
                hits = self._matching(ns, query, files, limit, at, include_archived, include_pending)
            else:
                hits = self._strongest(ns, files, limit, at, include_archived, include_pending)
            if record and hits:
                ns.usage.record((h.memory.id for h in hits), at)
        return hits

    def _strongest(self, ns: Namespace, files: builtins.list[str], limit: int, at: datetime,
                   include_archived: bool, include_pending: bool) -> builtins.list[Hit]:
        """With no query: the memories about ``files``, or the strongest of all, by potency and recency."""
        if files:
            candidates = ns.index.all(states=None, with_paths=True)
        else:
            candidates = ns.index.all(states=["active", "pending"])
        pending = ns.usage.pending(ids=[m.id for m in candidates])
        hits: builtins.list[Hit] = []
        relevance = 1.0
        for memory in candidates:
            if (memory.state == "archived" and not include_archived) or (
                    memory.state == "pending" and not include_pending):
                continue
            potency = ranking.effective_potency(memory, at, pending)
            if potency < concepts.ARCHIVE_BELOW and not include_archived:
                continue
            matched = any(ranking.path_matches(p, f) for p in memory.paths for f in files)
            if files and not matched:
                continue
            score = ranking.score(memory, relevance, potency, at, path_match=matched)
            hits.append(Hit(memory, score, potency, matched))
        hits.sort(key=lambda h: (-h.score, h.memory.id))
        return hits[:limit]

    def _matching(self, ns: Namespace, query: str, files: builtins.list[str], limit: int, at: datetime,
                  include_archived: bool, include_pending: bool) -> builtins.list[Hit]:
        """Matches of a query ranked as :meth:`recall` says, decoding the documents of the hits only.

        Two lists are fused by reciprocal rank (:func:`ranking.fused`): the text matches by BM25
        and word coverage, and, when semantics are on, the memories whose sentence vectors are
        nearest the query's (so "package manager" finds "We use pnpm", and a Chinese query its
        English memory).
        """
        q = token_set(query)
        want = ranking.candidates(limit)
        found = ns.index.candidates(q, limit=want)
        top = max((c.score for c in found), default=0.0) or 1.0
        words = {c.id: round(0.5 * c.score / top + 0.5 * len(q & c.tokens) / len(q), 9) for c in found}
        lexical = sorted(found, key=lambda c: (-words[c.id], c.id))
        near: builtins.list[Candidate] = []
        cosines: dict[str, float] = {}
        if self.semantics is not None and self.semantics.enabled:
            cosines = dict(self.semantics.search(ns, query, ranking.SEMANTIC_CANDIDATES, self.settings.recall_floor))
            near = sorted(ns.index.by_hashes(cosines), key=lambda c: (-cosines[c.vhash], c.id))
        relevance = ranking.fused([(c.id, words[c.id]) for c in lexical],
                                  [(c.id, round(cosines[c.vhash], 6)) for c in near])
        pool = {c.id: c for c in near} | {c.id: c for c in lexical}
        pending = ns.usage.pending(ids=list(pool))
        paths: dict[int, tuple[str, ...]] = {}
        if files:
            paths = {r: m.paths for r, m in ns.index.documents(c.rowid for c in pool.values() if c.pathful).items()}
        ranked: builtins.list[tuple[float, Candidate, float, bool]] = []
        for c in pool.values():
            if (c.state == "archived" and not include_archived) or (c.state == "pending" and not include_pending):
                continue
            potency = ranking.potency_from(c.potency, c.since, c.tenured, pending.get(c.id), at)
            if potency < concepts.ARCHIVE_BELOW and not include_archived:
                continue
            matched = any(ranking.path_matches(p, f) for p in paths.get(c.rowid, ()) for f in files)
            ranked.append((ranking.score_from(c.state, c.fresh, relevance[c.id], potency, at, path_match=matched),
                           c, potency, matched))
        ranked.sort(key=lambda r: (-r[0], r[1].id))
        ranked = ranked[:limit]
        docs = ns.index.documents(c.rowid for _, c, _, _ in ranked)
        return [Hit(docs[c.rowid], score, potency, matched) for score, c, potency, matched in ranked]

    def context(self, namespace: str, files: Sequence[str] = (), query: str = "", limit: int = 20,
                *, record: bool = True, label: str | None = None) -> str:
        """The Markdown block an agent should load: memories about ``files`` first, then the strongest others.

        Pending memories (extracted from conversations, not yet promoted) are never in it.
        """
        files = [f for f in files if f and f.strip()]
        hits = self.recall(namespace, query, path=files, limit=limit, record=False,
                           include_pending=False) if files else []
        seen = {h.memory.id for h in hits}
        if len(hits) < limit:
            hits += [h for h in self.recall(namespace, query, limit=limit, record=False, include_pending=False)
                     if h.memory.id not in seen]
        hits = hits[:limit]
        if record and hits:
            with self.namespaces.using(namespace) as ns:
                ns.usage.record((h.memory.id for h in hits), now())
        return render_template("export/context.md.j2", namespace=label or namespace, hits=hits, files=files)

    def status(self, namespace: str) -> dict[str, Any]:
        """Counts by state, type and potency tier, the head commit and any malformed files."""
        at = now()
        with self.namespaces.using(namespace) as ns:
            head = ns.synced()
            counts = ns.index.counts()
            pending = ns.usage.pending()
            tiers = {"active": 0, "low": 0, "archived": 0}
            for memory in ns.index.all(states=["active"]):
                tiers[concepts.tier(ranking.effective_potency(memory, at, pending))] += 1
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
        with self.namespaces.using(namespace) as ns:
            out = [info for info in (ns.store.info(c) for c in ns.store.log()) if memory_id in info.memory_ids]
        if not out:
            raise MemoryNotFound(f"no memory {memory_id} in namespace {namespace!r}, now or before")
        return out

    def log(self, namespace: str, *, limit: int = 20, offset: int = 0) -> builtins.list[CommitInfo]:
        """Commits on main, newest first."""
        with self.namespaces.using(namespace) as ns:
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
        with self.namespaces.using(namespace) as ns:
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
