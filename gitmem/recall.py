"""Reading memories: show, list, recall (ranked search), the context block for agents, status, history.

Reads never write a commit: a recall records its hits in the usage log, which consolidation
folds into the files later (:meth:`gitmem.memories.Memories.fold_usage`).
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import concepts, details, lexicon, pathprofile, ranking, techchoice
from .concepts import Memory, check_id, now
from .errors import InvalidInput, MemoryNotFound
from .repo import DISCUSSIONS, Candidate, CommitInfo, Namespace, Namespaces, category_term, techs_of
from .semantic import Semantics
from .settings import Settings
from .similarity import dice, token_set
from .templating import render_template
from .words import Terms, query_terms, written

#: How much the query's own wording (stop words and all) counts among hits alike in terms, and how
#: many hits past the limit are read for it.
EXACTNESS = 0.05
EXACT_RERANK = 10


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


def _stamp(moment: datetime | None) -> float:
    """A time as whole seconds since the epoch (0 for none): ties break by the second, then by id."""
    return float(int(moment.timestamp())) if moment is not None else 0.0


_GENERIC_HEAD = re.compile(r"\s*(?:services?|tools?|tooling|systems?|platforms?|providers?|programs?|software|"
                           r"solutions?|setup|engines?|apps?|工具|系统|平台|服务)\b", re.IGNORECASE)


def lexicon_techs(memory: Memory) -> frozenset[str]:
    """The technologies a memory names, in its words or its tags, as the index keeps them."""
    return techs_of(memory.title, memory.text, memory.tags)


def asked(query: str) -> Terms:
    """A query's terms, where the words naming a kind of tool stand for every tool of that kind.

    "What package manager do we use?" asks for memories naming npm, pnpm, yarn, uv...: the words
    "package manager" become the kind's index term (:func:`gitmem.repo.category_term`), which a
    memory naming any of them holds; "用什么包管理器" likewise.
    """
    spans = lexicon.category_spans(query)
    if not spans:
        return query_terms(query)
    rest, last = [], 0
    for start, end, _ in spans:
        rest.append(query[last:start])
        # "CI service", "linter tool": the word after a kind names nothing more.
        head = _GENERIC_HEAD.match(query, end)
        last = head.end() if head else end
    rest.append(query[last:])
    terms = query_terms(" , ".join(rest))
    kinds = tuple(dict.fromkeys(category_term(c) for _, _, c in spans))
    return Terms(terms.words + kinds, terms.pairs)


def profiles_of(files: Sequence[str], heads: Mapping[str, str] | None = None) -> builtins.list[pathprofile.Profile]:
    """What each file is (:func:`gitmem.pathprofile.profile`), with its first kilobytes where the caller read them.

    ``heads`` may also hold the project's manifests (``package.json``, ``pyproject.toml``): a
    file takes the signs its project's manifests show in the file's own ecosystems (a Django
    dependency makes ``models.py`` Django's; a React one does not make it React's).
    """
    heads = heads or {}
    project = [pathprofile.profile(name, head) for name, head in heads.items() if name not in files]
    out = []
    for f in files:
        mine = pathprofile.profile(f, heads.get(f))
        for other in project:
            signs = frozenset(k for k in other.techs if lexicon.known(k) and lexicon.ecosystems(k) & mine.ecosystems)
            if signs:
                mine = mine | pathprofile.Profile(other.path, frozenset(), frozenset(), signs)
        out.append(mine)
    return out


def specific(techs: Collection[str], profiles: Sequence[pathprofile.Profile]) -> bool:
    """Whether a memory names something one of the files is: its language, a tool or a framework it shows."""
    return any(k in p.languages or k in p.techs or (lexicon.known(k) and lexicon.scope(k) == "tool"
                                                    and lexicon.ecosystems(k) & p.ecosystems)
               for k in techs for p in profiles)


def applies(paths: Sequence[str], techs: Collection[str], files: Sequence[str],
            profiles: Sequence[pathprofile.Profile]) -> bool:
    """Whether a memory applies to an agent working on ``files`` (any of them; every memory when none).

    A memory with ``paths`` is about those paths: it applies to the files they cover, and to
    others only as a rule for what they are ("We use pnpm" about ``package.json`` is a rule for a
    TypeScript file too, "Reports go through the SaaS MySQL" about ``reports/`` is not). One
    without applies when the technologies it names fit one of the files
    (:func:`gitmem.pathprofile.applies`): a team-wide rule, or one for the file's language, its
    tools, or a framework the file shows signs of; never one naming another language or framework.
    """
    if not files:
        return True
    if paths and any(ranking.path_matches(p, f) for p in paths for f in files):
        return True
    if paths:
        return specific(techs, profiles) and pathprofile.applies_to_any(techs, profiles)
    return pathprofile.applies_to_any(techs, profiles)


def _newest_first(hits: builtins.list[Hit]) -> builtins.list[Hit]:
    """``hits`` with each newer statement moved above an older one it restates with a value changed.

    "The office Wi-Fi network is called Lighthouse" then goes above "... called Harbor" said
    before it, whatever their scores: among live memories that conflict, the newer wins.
    """
    out = list(hits)
    for i in range(len(out)):
        for j in range(i + 1, len(out)):
            old, new = out[i].memory, out[j].memory
            if new.updated > old.updated and details.one_value_apart(new.text, old.text):
                out.insert(i, out.pop(j))
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

    def show(self, namespace: str, memory_id: str, *, record: bool = False) -> Memory:
        """One memory by id; ``record``: it was opened by a person or fetched by an agent, which is a use."""
        memory_id = check_id(memory_id)
        with self.namespaces.using(namespace) as ns:
            head = ns.synced()
            memory = ns.index.get(memory_id)
            if memory is None:
                raise ns.not_found(head, memory_id)
            if record and memory.state != "archived":
                ns.usage.record([memory.id], now())
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
        ``include_pending`` is False. Every memory a query returns counts as a use (unless
        ``record=False``: a search page, a person's search in Slack); a listing, with no query,
        never does.
        """
        if not isinstance(query, str):
            raise InvalidInput("query must be a string")
        most = self.settings.max_text_chars
        query = concepts.clean_text(query, limit=most, what="query", scan=False) if query.strip() else ""
        files = _files(path)
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit must be between 1 and 1000")
        at = now()
        with self.namespaces.using(namespace) as ns, ns.index.at(ns.store, ns.synced()):
            # One snapshot of the index for the whole search: another process's write re-indexes
            # files, and a row read after it would not be the row a candidate named.
            if query:
                hits = self._matching(ns, query, files, limit, at, include_archived, include_pending)
            else:
                hits = self._strongest(ns, files, limit, at, include_archived, include_pending)
            if record and query and hits:
                ns.usage.record((h.memory.id for h in hits), at)
        return hits

    def _strongest(self, ns: Namespace, files: builtins.list[str], limit: int, at: datetime,
                   include_archived: bool, include_pending: bool) -> builtins.list[Hit]:
        """With no query: the memories about ``files``, or the strongest of all, by potency and recency."""
        if files:
            candidates = ns.index.all(states=None, with_paths=True)
        else:
            # `gitmem recall --archived` with no query lists the archived ones too, as it does by file.
            candidates = ns.index.all(states=None if include_archived else ["active", "pending"])
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
        """Hits of a query ranked as :meth:`recall` says, decoding the documents of the hits only.

        A memory is a hit on evidence (:func:`ranking.relevance`): by its words, when it holds at
        least half of what the query's informative words weigh, or by its meaning alone, when its
        sentence vector is at least ``settings.recall_floor`` (a cosine) from the query's. A memory
        superseded by a live one gives its place to that one. Equal scores go to the newer statement
        (to the second), then to the id, so the same query on the same repository ranks alike.
        """
        terms = asked(query)
        size = ns.index.size()
        weighted = ranking.weights(terms.words, ns.index.doc_freqs(terms.words), size)
        informative = [w for w, x in weighted.items() if x > 0]
        found = ns.index.candidates(informative + list(terms.pairs), limit=ranking.candidates(limit)) \
            if informative else []
        cosines: dict[str, float] = {}
        if self.semantics is not None and self.semantics.enabled and terms.words:
            cosines = self.semantics.nearest(ns, query, ranking.SEMANTIC_CANDIDATES, also=[c.vhash for c in found])
        lowest = self.settings.recall_floor - ranking.CROSS_LINGUAL
        near = [c for c in ns.index.by_hashes(h for h, cos in cosines.items() if cos >= lowest)]
        pool = {c.id: c for c in near} | {c.id: c for c in found}
        quoted = self._quoted(ns, query, pool.values(), cosines, weighted, terms)
        relevance: dict[str, float] = {}
        for c in pool.values():
            floor = ranking.floor_for(self.settings.recall_floor, terms.words, c.terms)
            value = ranking.relevance(ranking.lexical(weighted, terms.pairs, c.terms), cosines.get(c.vhash), floor,
                                      quoted=c.id in quoted)
            if value is not None:
                relevance[c.id] = value
        # A superseded memory still live (its successor waits for review) gives way to its successor.
        successors = ns.index.successors()
        for old_id in [i for i in relevance if i in successors]:
            new_id = successors[old_id]
            if new_id not in pool:
                pool.update({c.id: c for c in ns.index.by_ids([new_id])})
            if new_id in pool:
                relevance[new_id] = max(relevance.get(new_id, 0.0), relevance[old_id])
            del relevance[old_id]
        pending = ns.usage.pending(ids=list(relevance))
        paths: dict[int, tuple[str, ...]] = {}
        if files:
            paths = {r: m.paths for r, m in ns.index.documents(
                pool[i].rowid for i in relevance if pool[i].pathful).items()}
        ranked: builtins.list[tuple[float, Candidate, float, bool]] = []
        for memory_id, value in relevance.items():
            c = pool[memory_id]
            if (c.state == "archived" and not include_archived) or (c.state == "pending" and not include_pending):
                continue
            potency = ranking.potency_from(c.potency, c.since, c.tenured, pending.get(c.id), at)
            if potency < concepts.ARCHIVE_BELOW and not include_archived:
                continue
            matched = any(ranking.path_matches(p, f) for p in paths.get(c.rowid, ()) for f in files)
            ranked.append((ranking.score_from(c.state, c.fresh, value, potency, at, path_match=matched),
                           c, potency, matched))
        ranked.sort(key=lambda r: (-round(r[0], 9), -_stamp(r[1].updated), r[1].id))
        # The best few are read whole: of two that hold the query's terms alike ("prop" and
        # "props" are one term), the one written as the query is wins, by a hair.
        ranked = ranked[:limit + EXACT_RERANK]
        docs = ns.index.documents(c.rowid for _, c, _, _ in ranked)
        said = token_set(query)
        hits = [Hit(docs[c.rowid], score * (1 + EXACTNESS * dice(said, token_set(docs[c.rowid].text))), potency,
                    matched) for score, c, potency, matched in ranked]
        hits.sort(key=lambda h: (-round(h.score, 9), -_stamp(h.memory.updated), h.memory.id))
        return _newest_first(hits[:limit])

    @staticmethod
    def _quoted(ns: Namespace, query: str, pool: Iterable[Candidate], cosines: Mapping[str, float],
                weighted: Mapping[str, float], terms: Terms) -> set[str]:
        """The memories that hold the query as it is said: its words in order, or every word as written.

        Only those the sentence vector doubts (a cosine under :data:`ranking.UNRELATED`) are read:
        "maintenance mode instructions" holds its words in a memory the encoder cannot place, while
        "What is my manager's name?" holds "manager" and "name" in no memory, only their stems.
        """
        out: set[str] = set()
        doubtful = []
        for c in pool:
            if ranking.quoted(weighted, terms.pairs, c.terms):
                out.add(c.id)
            elif cosines.get(c.vhash, 1.0) < ranking.UNRELATED:
                doubtful.append(c)
        said = written(query)
        if doubtful and said:
            docs = ns.index.documents(c.rowid for c in doubtful)
            out.update(c.id for c in doubtful if said <= written(docs[c.rowid].text))
        return out

    def context(self, namespace: str, files: Sequence[str] = (), query: str = "", limit: int = 20,
                *, record: bool = True, label: str | None = None, heads: Mapping[str, str] | None = None) -> str:
        """The Markdown block an agent should load for ``files`` (see :meth:`context_hits`).

        What it delivers counts as a use of each memory (unless ``record=False``).
        """
        files = _files(files)
        hits = self.context_hits(namespace, files, query, limit, heads=heads)
        if record and hits:
            with self.namespaces.using(namespace) as ns:
                ns.usage.record((h.memory.id for h in hits), now())
        return render_template("export/context.md.j2", namespace=label or namespace, hits=hits, files=files)

    def context_hits(self, namespace: str, files: Sequence[str] = (), query: str = "", limit: int = 20,
                     *, heads: Mapping[str, str] | None = None) -> builtins.list[Hit]:
        """The memories an agent working on ``files`` should have, best first, and nothing else.

        With a query, its hits (:meth:`recall`) that apply to the files (:func:`applies`); nothing
        when none does. Without, the memories about the files (their ``paths`` cover one) first,
        then the rules for what the files are (their language, tools and frameworks), then the
        team-wide rules, each strongest first (potency x recency). ``heads``: the
        first kilobytes of files the caller could read, whose imports show the frameworks in use.
        Pending memories (extracted from conversations, not yet promoted) are never in it.
        """
        files = _files(files)
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit must be between 1 and 1000")
        profiles = profiles_of(files, heads)
        if query.strip():
            hits = self.recall(namespace, query, path=files, limit=1000 if files else limit, record=False,
                               include_pending=False)
            return [h for h in hits if h.path_match or applies(
                h.memory.paths, lexicon_techs(h.memory), files, profiles)][:limit]
        at = now()
        with self.namespaces.using(namespace) as ns, ns.index.at(ns.store, ns.synced()):
            live = ns.index.in_states(["active"])
            pathful = {r: m.paths for r, m in ns.index.documents(c.rowid for c in live if c.pathful).items()}
            pending = ns.usage.pending(ids=[c.id for c in live])
            ranked: builtins.list[tuple[int, float, Candidate, float, bool]] = []
            for c in live:
                potency = ranking.potency_from(c.potency, c.since, c.tenured, pending.get(c.id), at)
                if potency < concepts.ARCHIVE_BELOW:
                    continue
                paths = pathful.get(c.rowid, ())
                matched = any(ranking.path_matches(p, f) for p in paths for f in files)
                if not matched and not applies(paths, c.techs, files, profiles):
                    continue
                strength = ranking.score_from(c.state, c.fresh, 1.0, potency, at, path_match=matched)
                tier = 0 if matched else 1 if specific(c.techs, profiles) else 2
                ranked.append((tier, strength, c, potency, matched))
            ranked.sort(key=lambda r: (r[0], -round(r[1], 9), -_stamp(r[2].updated), r[2].id))
            ranked = ranked[:limit]
            docs = ns.index.documents(r[2].rowid for r in ranked)
        return [Hit(docs[c.rowid], strength, potency, matched) for _, strength, c, potency, matched in ranked]

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


def _files(path: str | Sequence[str] | None) -> builtins.list[str]:
    """The files a recall is about, blanks dropped; each must be text UTF-8 can hold (the block names them)."""
    files = [path] if isinstance(path, str) else list(path or [])
    for file in files:
        if not isinstance(file, str):
            raise InvalidInput("each file must be a string")
        try:
            file.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(f"file {file!r} is not valid UTF-8 (a lone surrogate)") from None
    return [f for f in files if f.strip()]
