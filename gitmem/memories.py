"""Memory operations over namespaces: read, remember (the write gate), amend, forget, revert, restore.

Every change is one commit on ``main`` through :meth:`gitmem.repo.Namespace.commit`. Feedback
(confirm, reject, discuss, amend) is in :mod:`gitmem.feedback`; exports in :mod:`gitmem.export`.
"""

from __future__ import annotations

import builtins
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import concepts, ranking
from .concepts import Memory, check_id, now
from .errors import InvalidInput, MemoryNotFound
from .repo import Change, Commit, CommitInfo, Namespaces, match_tokens
from .settings import Settings
from .similarity import dice, normalise, token_set
from .templating import render_template

log = logging.getLogger(__name__)
AUTO_SOURCES = ("agent", "import", "consolidation")
DISCUSSIONS = ".gitmem/discussions"


@dataclass(frozen=True)
class WriteResult:
    """What a write did: the outcome, the memory after it, and the commit (None when unchanged)."""

    outcome: str
    memory: Memory | None
    commit: str | None
    similar_to: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the outcome, the memory after the write, the commit and ``similar_to``."""
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
        """A JSON-ready dict, with the score and potency rounded."""
        return {"memory": self.memory.to_dict(), "score": round(self.score, 6),
                "potency": round(self.potency, 4), "path_match": self.path_match}


@dataclass(frozen=True)
class Comment:
    """One entry in a memory's discussion thread."""

    actor: str
    at: datetime
    text: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the time as an ISO 8601 string)."""
        return {"actor": self.actor, "at": concepts.iso(self.at), "text": self.text}


class Memories:
    """Remember, recall, amend, forget, history, revert and restore memories in any namespace."""

    def __init__(self, namespaces: Namespaces, settings: Settings,
                 on_added: Callable[[str], None] | None = None) -> None:
        """Work on ``namespaces``; ``on_added(namespace)`` is called after a write adds a memory."""
        self.namespaces = namespaces
        self.settings = settings
        self.on_added = on_added

    # --- reading -------------------------------------------------------------------------------

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
        with self.namespaces.using(namespace) as ns:
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
                potency = ranking.effective_potency(memory, at, pending)
                if potency < concepts.ARCHIVE_BELOW and not include_archived:
                    continue
                matched = any(ranking.path_matches(p, f) for p in memory.paths for f in files)
                if files and not query and not matched:
                    continue
                score = ranking.score(memory, relevance, potency, at, path_match=matched)
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
        title = concepts.clean_title(title, limit=self.settings.max_title_chars) if title else concepts.title_from(text)
        tags = concepts.clean_list(tags, what="tag", limit=80)
        paths = concepts.clean_list(paths, what="path", limit=400)
        related = concepts.clean_list(related, what="related id", limit=40)
        author = concepts.clean_list([author] if author else [], what="author", limit=200)[0] if author else None
        if state not in ("active", "pending"):
            raise InvalidInput("a new memory is either active or pending")
        result: dict[str, Any] = {}

        # Plans run inside _commit, on an index snapshot pinned at ``head``: what it finds is there.
        def plan(head: Commit) -> Change | None:
            at = now()
            same = ns.index.by_norm(normalise(text))
            if same:
                old = ns.current(head, same[0].id)
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
                    old = ns.current(head, best.id)
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
            path = ns.free_path(head, memory_type, title, memory_id)
            memory = Memory(id=memory_id, type=memory_type, text=text, title=title,
                            description=concepts.description_from(text), tags=tags,
                            paths=paths, source=source, author=author, created=at, updated=at,
                            state=state, related=related, tenured=tenured, path=path)
            result.update(outcome="added", memory=memory, similar_to=None)
            return Change({path: concepts.render(memory)}, f"remember: {title}", "remember",
                          (memory_id,), source, author)

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        if result["outcome"] == "added" and self.on_added is not None:
            try:
                self.on_added(namespace)
            except Exception:  # a trigger must never fail the write that fired it
                log.exception("after-write hook failed in %s", namespace)
        return WriteResult(result["outcome"], result["memory"], commit, result["similar_to"])

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
        change = self.amend_change(namespace, memory_id, text=text, title=title, type=type, tags=tags,
                                    paths=paths, tenured=tenured, actor=actor, reason=reason)
        result: dict[str, Any] = {}

        def plan(head: Commit) -> Change | None:
            built = change(head)
            result["memory"] = built[0]
            return built[1]

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        return WriteResult("amended" if commit else "unchanged", result["memory"], commit)

    def amend_change(self, namespace: str, memory_id: str, *, text: str | None, title: str | None,
                      type: str | None, tags: Iterable[str] | None, paths: Iterable[str] | None,
                      tenured: bool | None, actor: str | None, reason: str,
                      action: str = "amend") -> Callable[[Commit], tuple[Memory, Change | None]]:
        """Validate an amendment and return a plan builder: head -> (memory, Change | None)."""
        limit = self.settings.max_text_chars
        new_text = None if text is None else concepts.clean_text(text, limit=limit)
        new_title = None if title is None else concepts.clean_title(title, limit=self.settings.max_title_chars)
        new_type = None if type is None else concepts.clean_type(type)
        new_tags = None if tags is None else concepts.clean_list(tags, what="tag", limit=80)
        new_paths = None if paths is None else concepts.clean_list(paths, what="path", limit=400)
        ns = self.namespaces.open(namespace)

        def build(head: Commit) -> tuple[Memory, Change | None]:
            old = ns.current(head, memory_id)
            changes: dict[str, Any] = {}
            if new_text is not None and new_text != old.text:
                changes["text"] = new_text
                changes["description"] = concepts.description_from(new_text)
                if new_title is None and old.title == concepts.title_from(old.text):
                    changes["title"] = concepts.title_from(new_text)
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
                new = new.replace(path=ns.free_path(head, new.type, new.title, new.id))
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

        def plan(head: Commit) -> Change | None:
            old = ns.current(head, memory_id)
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

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        return WriteResult(result["outcome"], result["memory"], commit)

    def revert(self, namespace: str, commit_id: str, *, actor: str | None = None) -> WriteResult:
        """Undo one commit of main with a new commit; a conflicting revert changes nothing."""
        result: dict[str, Any] = {}

        def plan(head: Commit) -> Change | None:
            target = ns.store.commit(commit_id)
            if not ns.store.is_ancestor(target, head):
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

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        return WriteResult(result["outcome"], None, commit)

    def restore(self, namespace: str, memory_id: str, commit_id: str, *, actor: str | None = None) -> WriteResult:
        """Bring a memory back to how it was at ``commit_id`` (its usage figures stay current)."""
        memory_id = check_id(memory_id)
        result: dict[str, Any] = {}

        def plan(head: Commit) -> Change | None:
            source = ns.store.commit(commit_id)
            current = ns.index.get(memory_id)
            old = ns.version_at(source, memory_id, current.path if current else None)
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
                new = new.replace(path=ns.free_path(head, new.type, new.title, new.id))
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

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        return WriteResult(result["outcome"], result["memory"], commit)

    def fold_usage(self, namespace: str, *, actor: str | None = None) -> str | None:
        """Fold the recorded uses into the memory files in one commit; None when there were none."""
        with self.namespaces.using(namespace) as ns, ns.usage.folding():
            high = ns.usage.high_water()
            if not high:
                return None
            pending = ns.usage.pending(up_to=high)

            def plan(head: Commit) -> Change | None:
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

            commit = ns.commit(plan)
            ns.usage.clear(high)
            return commit

