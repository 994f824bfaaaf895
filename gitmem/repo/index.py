"""The search index: derived, disposable state beside each repository.

The index is a SQLite database with an FTS5 table, rebuilt from the repository or brought up to
date from the git diff between the commit it last saw and the branch head. It is never the source
of truth: delete it and the next call rebuilds it. The usage log beside it is :mod:`.usage`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pygit2

from ..concepts import TYPES, Memory, choices_from, options_from, parse, parse_time
from ..errors import MalformedConcept
from ..lexicon import categories as lexicon_categories
from ..lexicon import kinds as lexicon_kinds
from ..lexicon import mentions, mentions_in_name
from ..similarity import normalise, tokens
from ..words import document_terms
from .sqlitedb import connect as _connect
from .sqlitedb import immediate
from .store import Store, refused_part

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories(
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    path TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    state TEXT NOT NULL,
    norm TEXT NOT NULL,
    tokens TEXT NOT NULL,
    doc TEXT NOT NULL,
    -- what ranking needs, so a search decodes the documents of its hits only (Unix seconds)
    potency REAL NOT NULL,
    since REAL NOT NULL,
    fresh REAL NOT NULL,
    tenured INTEGER NOT NULL,
    pathful INTEGER NOT NULL,
    vhash TEXT NOT NULL, -- the text's hash: what its sentence vector is stored under
    terms TEXT NOT NULL, -- what recall weighs (gitmem.words): stemmed words, word pairs, CJK pieces
    techs TEXT NOT NULL, -- the technologies it names (gitmem.lexicon), for what applies to a file
    updated REAL NOT NULL, -- when it was last stated: newer statements rank first among equals
    supersedes TEXT NOT NULL -- ids of the memories it replaces, space-separated
);
CREATE INDEX IF NOT EXISTS memories_id ON memories(id);
CREATE INDEX IF NOT EXISTS memories_vhash ON memories(vhash);
CREATE INDEX IF NOT EXISTS memories_norm ON memories(norm);
CREATE TABLE IF NOT EXISTS problems(path TEXT PRIMARY KEY, reason TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    terms, tokenize = "unicode61 remove_diacritics 0 tokenchars '_'"
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts_terms USING fts5vocab(fts, 'row');
CREATE TABLE IF NOT EXISTS vocab(term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
"""
_SCHEMA_VERSION = "7"
# A search scores every document that holds any of its tokens. Past this many postings it leaves
# out the commonest tokens (recall still counts them in its coverage of the query): at 100,000
# memories "use" alone is in a quarter of them, and scoring those took most of a query's time.
SEARCH_POSTINGS = 800
# The document frequencies behind that choice are refreshed when the index grew or shrank by this.
VOCAB_DRIFT = 0.1


def match_tokens(title: str, text: str, tags: Iterable[str]) -> list[str]:
    """The tokens a memory is matched by: its title, text and tags."""
    return tokens(f"{title}\n{text}\n{' '.join(tags)}")


def techs_of(title: str, text: str, tags: Iterable[str]) -> frozenset[str]:
    """The technologies a memory names, in its words or its tags (a tag "rust", "go.mdc")."""
    found = set(mentions(f"{title}\n{text}"))
    for tag in tags:
        found |= mentions_in_name(tag)
    return frozenset(found)


def search_terms(title: str, text: str, tags: Iterable[str]) -> list[str]:
    """The terms a memory is found by: the words of its title, text and tags, and the kinds of tool it names.

    The words are :func:`gitmem.words.document_terms`'; a kind is a term (:func:`category_term`)
    that a memory holds when it names a tool of that kind or the kind itself, so that "package
    manager" finds a memory naming pnpm, and "database" one that says "database".
    """
    said = f"{title}\n{text}"
    kinds = {category_term(k) for key in techs_of(title, text, tags) for k in lexicon_kinds(key)}
    kinds |= {category_term(c) for c in lexicon_categories(said)}
    return list(document_terms(f"{said}\n{' '.join(tags)}").all()) + sorted(kinds)


def category_term(category: str) -> str:
    """The index term for a kind of tool ("package_manager" -> "__package_manager"); no word looks like it."""
    return f"__{category}"


def text_hash(text: str) -> str:
    """The key a memory's sentence vector is stored under: a hash of its text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def is_memory_path(path: str) -> bool:
    """Whether a repository path holds a memory: ``<type>/<name>.md``."""
    folder, _, name = path.partition("/")
    return folder in TYPES and name.endswith(".md") and "/" not in name


@dataclass(frozen=True)
class Row:
    """A memory as the index holds it, with the tokens used for matching."""

    memory: Memory
    tokens: frozenset[str]


@dataclass(frozen=True)
class Candidate:
    """A search hit with what ranking needs, before its document is decoded."""

    rowid: int
    id: str
    state: str
    potency: float
    since: datetime  # the last use, else creation: where potency decays from
    fresh: datetime  # the last use, else the last update: what recency counts from
    tenured: bool
    pathful: bool
    score: float
    vhash: str = ""
    terms: frozenset[str] = frozenset()
    updated: datetime | None = None
    supersedes: tuple[str, ...] = ()
    techs: frozenset[str] = frozenset()


def memory_to_doc(memory: Memory) -> str:
    """The JSON document the index keeps for a memory (read back by :func:`doc_to_memory`)."""
    return json.dumps(memory.to_dict(), ensure_ascii=False)


# Recall decodes a few hundred rows per query, mostly the same ones again and again. A Memory
# is immutable, so one decoded per distinct document can be shared.
@functools.lru_cache(maxsize=8192)
def doc_to_memory(doc: str) -> Memory:
    """The memory an index document holds (the inverse of :func:`memory_to_doc`)."""
    data: dict[str, Any] = json.loads(doc)
    for key in ("created", "updated", "last_used"):
        data[key] = parse_time(data[key])
    for key in ("tags", "paths", "verified", "related", "supersedes"):
        data[key] = tuple(data[key])
    data["options"] = options_from(data.get("options"))
    data["choices"] = choices_from(data.get("choices"))
    return Memory(**data)


@functools.lru_cache(maxsize=65536)
def _token_set(tokens: str) -> frozenset[str]:
    return frozenset(tokens.split())


_CANDIDATE_COLUMNS = ("m.rowid, m.id, m.state, m.potency, m.since, m.fresh, m.tenured, m.pathful, m.vhash, "
                      "m.terms, m.updated, m.supersedes, m.techs")


def _duplicate_of(db: sqlite3.Connection, path: str) -> str:
    """The id a file set aside as a duplicate claims (see :meth:`SearchIndex._add`)."""
    row = db.execute("SELECT reason FROM problems WHERE path=?", (path,)).fetchone()
    return str(row[0]).split()[2].rstrip(":") if row else ""


class SearchIndex:
    """FTS5 index of one namespace's memories, kept in step with the branch head."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._size: tuple[str | None, int] | None = None
        self._successors: tuple[str | None, dict[str, str]] | None = None
        # The index is derived from the repository: after a crash it is rebuilt, not trusted.
        self.db = _connect(path, durable=False)
        # Check and (re)create the schema under the write lock: processes opening a new index at
        # once would otherwise each drop the tables another had just made.
        with self._write() as db:
            version = None
            try:
                row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
                version = row[0] if row else None
            except sqlite3.OperationalError:
                pass
            if version != _SCHEMA_VERSION:
                for table in ("meta", "memories", "problems", "fts_terms", "vocab", "fts"):
                    db.execute(f"DROP TABLE IF EXISTS {table}")
                # executescript() would commit the transaction; run the statements one by one.
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT INTO meta VALUES('schema', ?)", (_SCHEMA_VERSION,))

    def close(self) -> None:
        """Close the database connection."""
        self.db.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with immediate(self.db) as db:
            yield db

    @contextmanager
    def at(self, store: Store, head: pygit2.Commit) -> Iterator[None]:
        """Read the index as of ``head`` for the whole block, whatever other processes sync meanwhile.

        Several processes share one index file and each syncs it to the head it planned on; without
        a snapshot, one that read an older head could move the index back between another's sync
        and its queries, and the write gate would miss a memory that is on main (a duplicate).
        """
        if self.db.in_transaction:  # already pinned by an outer block
            yield
            return
        head_id = str(head.id)
        while True:
            self.sync(store, head)
            self.db.execute("BEGIN")  # WAL: the first read below fixes the snapshot
            if self.indexed_commit() == head_id:
                break
            self.db.execute("COMMIT")
        try:
            yield
        finally:
            self.db.execute("COMMIT")

    def rebuild(self, store: Store) -> None:
        """Index main from nothing and drop the pages that held what was there before (after a purge).

        Deleted rows stay in the database file's free pages and in FTS5's segments until they
        are merged and vacuumed: a purged text must not.
        """
        with self._write() as db:
            db.execute("DELETE FROM meta WHERE key='commit'")
        self.sync(store)
        with self._write() as db:
            db.execute("INSERT INTO fts(fts) VALUES('optimize')")
            db.execute("DELETE FROM vocab")  # a term of the old text; refilled from what is indexed now
            db.execute("INSERT INTO vocab SELECT term, doc FROM fts_terms")
        try:
            self.db.execute("VACUUM")
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError:
            # Another process reads the index right now; its pages go at its next rebuild.
            logging.getLogger(__name__).warning("could not vacuum the index %s after a purge", self.path)

    def indexed_commit(self) -> str | None:
        """The commit the index was last brought to, or None for a new index."""
        row = self.db.execute("SELECT value FROM meta WHERE key='commit'").fetchone()
        return row[0] if row else None

    def sync(self, store: Store, head: pygit2.Commit | None = None) -> None:
        """Bring the index to the head of main, reading only the files that changed."""
        head = head or store.head()
        head_id = str(head.id)
        if self.indexed_commit() == head_id:
            return
        with self._write() as db:
            seen = self.indexed_commit()  # another process may have synced meanwhile
            if seen == head_id:
                return
            old: pygit2.Commit | None = None
            if seen is not None:
                try:
                    old = store.commit(seen)
                except LookupError:
                    old = None
            if old is None:
                db.execute("DELETE FROM memories")
                db.execute("DELETE FROM fts")
                db.execute("DELETE FROM problems")
                # A rebuild takes each file from one walk of the tree; looking every path up
                # again would decompress its folder's tree once per file.
                for path, content in store.files(head):
                    if is_memory_path(path):
                        self._add(db, path, content)
                    else:
                        self._check_name(db, path)
            changed = store.changed_paths(old, head) if old is not None else []
            # Removals first: a memory moved to another file must not meet itself as a duplicate.
            freed: set[str] = set()
            for old_path, _ in changed:
                if old_path and is_memory_path(old_path):
                    freed |= self._remove(db, old_path)
            for old_path, new_path in changed:
                if old_path and not is_memory_path(old_path):
                    db.execute("DELETE FROM problems WHERE path=?", (old_path,))
                if new_path and not is_memory_path(new_path):
                    self._check_name(db, new_path)
            added = [new_path for _, new_path in changed if new_path and is_memory_path(new_path)]
            # A file set aside as a duplicate gets its turn when the file holding its id goes.
            added += [path for (path,) in db.execute("SELECT path FROM problems WHERE reason LIKE 'duplicate id %'")
                      if _duplicate_of(db, path) in freed and path not in added]
            for new_path in added:
                data = store.read(new_path, head)
                if data is not None:
                    self._remove(db, new_path)
                    self._add(db, new_path, data)
            db.execute("INSERT OR REPLACE INTO meta VALUES('commit', ?)", (head_id,))

    def apply(self, parent_id: str, commit_id: str, changes: Mapping[str, bytes | None],
              parsed: Mapping[str, Memory] | None = None) -> bool:
        """Move the index from ``parent_id`` to ``commit_id`` by the file changes of that commit.

        The writer already holds the changed files, so this skips the tree diff and blob reads of
        :meth:`sync` (a diff costs time in proportion to the whole tree). Returns False, changing
        nothing, when the index is not at ``parent_id``; :meth:`sync` then does the work.
        """
        if self.indexed_commit() != parent_id:
            return False
        with self._write() as db:
            if self.indexed_commit() != parent_id:
                return False
            if db.execute("SELECT 1 FROM problems WHERE reason LIKE 'duplicate id %' LIMIT 1").fetchone():
                return False  # rare: let sync() sort out which file holds each id
            paths = [path for path in changes if is_memory_path(path)]
            for path in paths:  # removals first, as in sync()
                self._remove(db, path)
            known = parsed or {}
            for path in paths:
                data = changes[path]
                if data is not None:
                    self._add(db, path, data, known.get(path))
            db.execute("INSERT OR REPLACE INTO meta VALUES('commit', ?)", (commit_id,))
        return True

    def _remove(self, db: sqlite3.Connection, path: str) -> set[str]:
        """Drop a file from the index; returns the memory id it held, if any."""
        row = db.execute("SELECT rowid, id FROM memories WHERE path=?", (path,)).fetchone()
        if row:
            db.execute("DELETE FROM fts WHERE rowid=?", (row[0],))
            db.execute("DELETE FROM memories WHERE rowid=?", (row[0],))
        db.execute("DELETE FROM problems WHERE path=?", (path,))
        return {row[1]} if row else set()

    def _check_name(self, db: sqlite3.Connection, path: str) -> None:
        """List a path git refuses (an entry named '..' or '.git', pushed by hand) as a problem."""
        part = refused_part(path)
        if part is not None:
            reason = (f"git refuses the name {part!r} (a tree made by hand?); reverts fail while it "
                      "is on main: revert the commit that added it, or remove it from main with git")
            db.execute("INSERT OR REPLACE INTO problems VALUES(?, ?)", (path, reason))

    def _add(self, db: sqlite3.Connection, path: str, data: bytes, memory: Memory | None = None) -> None:
        """Index the file at ``path`` (``memory``: its parsed form, when the writer has it)."""
        if memory is None or memory.path != path:
            try:
                memory = parse(data, path)
            except MalformedConcept as exc:
                db.execute("INSERT OR REPLACE INTO problems VALUES(?, ?)", (path, exc.reason))
                return
        holder = db.execute("SELECT path FROM memories WHERE id=?", (memory.id,)).fetchone()
        if holder is not None:
            # A file copied by hand keeps its id; two memories with one id would hide each other.
            reason = f"duplicate id {memory.id}: {holder[0]} has it too; give this file a new id"
            db.execute("INSERT OR REPLACE INTO problems VALUES(?, ?)", (path, reason))
            return
        toks = " ".join(match_tokens(memory.title, memory.text, memory.tags))
        terms = " ".join(search_terms(memory.title, memory.text, memory.tags))
        techs = " ".join(sorted(techs_of(memory.title, memory.text, memory.tags)))
        cur = db.execute(
            "INSERT INTO memories(id, path, type, state, norm, tokens, doc, potency, since, fresh, tenured, "
            "pathful, vhash, terms, techs, updated, supersedes) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (memory.id, path, memory.type, memory.state, normalise(memory.text), toks,
             memory_to_doc(memory), memory.potency, (memory.last_used or memory.created).timestamp(),
             (memory.last_used or memory.updated).timestamp(), int(memory.tenured), int(bool(memory.paths)),
             text_hash(memory.text), terms, techs, memory.updated.timestamp(), " ".join(memory.supersedes)),
        )
        db.execute("INSERT INTO fts(rowid, terms) VALUES(?, ?)", (cur.lastrowid, terms))

    # --- queries -------------------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory | None:
        """The memory with ``memory_id``, or None if the index does not hold it."""
        row = self.db.execute("SELECT doc FROM memories WHERE id=? ORDER BY rowid LIMIT 1",
                              (memory_id,)).fetchone()
        return doc_to_memory(row[0]) if row else None

    def holds(self, path: str) -> bool:
        """Whether a file at ``path`` is indexed, as a memory or as a problem."""
        return self.db.execute("SELECT 1 FROM memories WHERE path=? UNION ALL SELECT 1 FROM problems WHERE path=? "
                               "LIMIT 1", (path, path)).fetchone() is not None

    def by_norm(self, norm: str) -> list[Memory]:
        """Memories whose normalised text is ``norm``: the exact duplicates the write gate looks for."""
        rows = self.db.execute("SELECT doc FROM memories WHERE norm=?", (norm,)).fetchall()
        return [doc_to_memory(r[0]) for r in rows]

    def search(self, query_terms: Iterable[str], limit: int = 50) -> list[tuple[Row, float]]:
        """Memories sharing terms with the query, best BM25 first, with their BM25 score (> 0)."""
        rows = self._ranked(query_terms, limit, "m.doc, m.tokens")
        return [(Row(doc_to_memory(d), _token_set(t)), -s) for d, t, s in rows]

    def candidates(self, query_terms: Iterable[str], limit: int = 50) -> list[Candidate]:
        """Memories holding any of the query's terms, best BM25 first, with the fields to rank by."""
        return self._candidates(self._ranked(query_terms, limit, _CANDIDATE_COLUMNS), scored=True)

    @staticmethod
    def _candidates(rows: Iterable[tuple[Any, ...]], *, scored: bool) -> list[Candidate]:
        stamp = functools.partial(datetime.fromtimestamp, tz=UTC)
        out = []
        for row in rows:
            r, i, st, p, since, fresh, ten, pf, vh, terms, updated, sup, techs = row[:13]
            out.append(Candidate(r, i, st, p, stamp(since), stamp(fresh), bool(ten), bool(pf),
                                 -row[13] if scored else 0.0, vh, _token_set(terms), stamp(updated),
                                 tuple(sup.split()), _token_set(techs)))
        return out

    def successors(self) -> dict[str, str]:
        """Memory id -> the live memory that supersedes it (the newest, when several do)."""
        commit = self.indexed_commit()
        if self._successors is None or self._successors[0] != commit:
            rows = self.db.execute("SELECT id, supersedes FROM memories WHERE supersedes != '' AND state != 'archived' "
                                   "ORDER BY updated, id").fetchall()
            self._successors = (commit, {old: new for new, olds in rows for old in olds.split() if old != new})
        return self._successors[1]

    def size(self) -> int:
        """How many memories the index holds (in every state), as of the commit it was last brought to."""
        commit = self.indexed_commit()
        if self._size is None or self._size[0] != commit:
            self._size = (commit, int(self.db.execute("SELECT COUNT(*) FROM memories").fetchone()[0]))
        return self._size[1]

    def doc_freqs(self, terms: Iterable[str]) -> dict[str, int]:
        """How many memories hold each of ``terms`` (a term none holds is left out)."""
        wanted = sorted(set(terms))
        if not wanted:
            return {}
        rows = self.db.execute(f"SELECT term, doc FROM fts_terms WHERE term IN ({','.join('?' * len(wanted))})",
                               wanted).fetchall()
        return {term: int(df) for term, df in rows}

    def by_hashes(self, hashes: Iterable[str]) -> list[Candidate]:
        """The memories whose text hashes are ``hashes``, with the fields to rank by (score 0)."""
        wanted = list(hashes)
        if not wanted:
            return []
        rows = self.db.execute(f"SELECT {_CANDIDATE_COLUMNS} FROM memories m "
                               f"WHERE vhash IN ({','.join('?' * len(wanted))})", wanted).fetchall()
        return self._candidates(rows, scored=False)

    def in_states(self, states: Iterable[str]) -> list[Candidate]:
        """Every memory in ``states``, with the fields to rank by (score 0), in id order."""
        wanted = list(states)
        rows = self.db.execute(f"SELECT {_CANDIDATE_COLUMNS} FROM memories m "
                               f"WHERE state IN ({','.join('?' * len(wanted))}) ORDER BY id", wanted).fetchall()
        return self._candidates(rows, scored=False)

    def by_ids(self, ids: Iterable[str]) -> list[Candidate]:
        """The memories with these ids, with the fields to rank by (score 0)."""
        wanted = list(ids)
        if not wanted:
            return []
        rows = self.db.execute(f"SELECT {_CANDIDATE_COLUMNS} FROM memories m "
                               f"WHERE id IN ({','.join('?' * len(wanted))})", wanted).fetchall()
        return self._candidates(rows, scored=False)

    def texts(self, hashes: Iterable[str]) -> dict[str, str]:
        """The text of each of ``hashes`` the index holds."""
        wanted = list(hashes)
        out: dict[str, str] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            out.update(self.db.execute(
                f"SELECT vhash, json_extract(doc, '$.text') FROM memories WHERE vhash IN ({','.join('?' * len(part))})",
                part).fetchall())
        return out

    def hashes(self, *, states: Iterable[str]) -> list[str]:
        """The distinct text hashes of the memories in ``states``, sorted."""
        states = list(states)
        rows = self.db.execute(f"SELECT DISTINCT vhash FROM memories WHERE state IN ({','.join('?' * len(states))}) "
                               "ORDER BY vhash", states).fetchall()
        return [r[0] for r in rows]

    def _ranked(self, query_tokens: Iterable[str], limit: int, columns: str) -> list[tuple[Any, ...]]:
        """``columns`` of the best BM25 matches, then the score; the query's selective tokens only."""
        unique = self._selective(sorted(set(query_tokens)))
        if not unique:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)
        # Rank in FTS alone, then join the few rows kept: joining first would carry the document
        # of every matching row through the sort (3x slower on 5,000 memories).
        return self.db.execute(
            f"SELECT {columns}, f.score FROM (SELECT rowid, bm25(fts) AS score FROM fts "
            "WHERE fts MATCH ? ORDER BY score, rowid LIMIT ?) AS f "
            "JOIN memories m ON m.rowid = f.rowid ORDER BY f.score, f.rowid",
            (match, limit),
        ).fetchall()

    def documents(self, rowids: Iterable[int]) -> dict[int, Memory]:
        """The memories at these rows of the index."""
        wanted = list(rowids)
        if not wanted:
            return {}
        rows = self.db.execute(f"SELECT rowid, doc FROM memories WHERE rowid IN ({','.join('?' * len(wanted))})",
                               wanted).fetchall()
        return {r: doc_to_memory(d) for r, d in rows}

    def _selective(self, tokens: list[str]) -> list[str]:
        """The query tokens worth scoring: all of them, or the rarest within :data:`SEARCH_POSTINGS`."""
        row = self.db.execute("SELECT MAX(rowid) FROM memories").fetchone()
        size = int(row[0] or 0)
        if size <= SEARCH_POSTINGS or len(tokens) <= 2:
            return tokens
        freqs = self._doc_freqs(tokens, size)
        kept: list[str] = []
        postings = 0
        for token in sorted(tokens, key=lambda t: (freqs.get(t, 0), t)):
            df = freqs.get(token, 0)
            if len(kept) >= 2 and postings + df > SEARCH_POSTINGS:
                break
            kept.append(token)
            postings += df
        return kept

    def _doc_freqs(self, tokens: list[str], size: int) -> dict[str, int]:
        """How many memories hold each token, as of the last refresh (a term new since then counts 0)."""
        row = self.db.execute("SELECT value FROM meta WHERE key='vocab_size'").fetchone()
        seen = int(row[0]) if row else 0
        # Refreshing needs the write lock: not from inside a read snapshot (the write gate's).
        if abs(size - seen) > VOCAB_DRIFT * max(seen, 1) and not self.db.in_transaction:
            with self._write() as db:
                db.execute("DELETE FROM vocab")
                db.execute("INSERT INTO vocab SELECT term, doc FROM fts_terms")
                db.execute("INSERT OR REPLACE INTO meta VALUES('vocab_size', ?)", (str(size),))
        rows = self.db.execute(f"SELECT term, df FROM vocab WHERE term IN ({','.join('?' * len(tokens))})",
                               tokens).fetchall()
        return {term: int(df) for term, df in rows}

    def all(self, *, states: Iterable[str] | None = None, types: Iterable[str] | None = None,
            offset: int = 0, limit: int = -1, with_paths: bool = False) -> list[Memory]:
        """Memories in path order, filtered by state and type."""
        sql = "SELECT doc FROM memories WHERE 1=1"
        args: list[Any] = []
        if states is not None:
            states = list(states)
            sql += f" AND state IN ({','.join('?' * len(states))})"
            args += states
        if types is not None:
            types = list(types)
            sql += f" AND type IN ({','.join('?' * len(types))})"
            args += types
        if with_paths:
            sql += " AND json_array_length(json_extract(doc, '$.paths')) > 0"
        sql += " ORDER BY path LIMIT ? OFFSET ?"
        args += [limit, offset]
        return [doc_to_memory(r[0]) for r in self.db.execute(sql, args).fetchall()]

    def rows(self, *, states: Iterable[str]) -> list[Row]:
        """Every memory in the given states with its tokens (for clustering)."""
        states = list(states)
        rows = self.db.execute(
            f"SELECT doc, tokens FROM memories WHERE state IN ({','.join('?' * len(states))}) ORDER BY path",
            states,
        ).fetchall()
        return [Row(doc_to_memory(d), frozenset(t.split())) for d, t in rows]

    def counts(self) -> dict[str, dict[str, int]]:
        """How many memories the index holds in each state and of each type."""
        by_state = dict(self.db.execute("SELECT state, COUNT(*) FROM memories GROUP BY state").fetchall())
        by_type = dict(self.db.execute("SELECT type, COUNT(*) FROM memories GROUP BY type").fetchall())
        return {"state": by_state, "type": by_type}

    def problems(self) -> dict[str, str]:
        """Files left out of the index (malformed, or a duplicate id): path -> reason."""
        return dict(self.db.execute("SELECT path, reason FROM problems ORDER BY path").fetchall())
