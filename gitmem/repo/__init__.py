"""The repository layer: the only code that touches pygit2, SQLite and file locks.

::

    store.py      one bare git repository: trees, commits, compare-and-swap refs, replay, revert
    index.py      the derived search index (SQLite FTS5)
    usage.py      the usage log: memory uses waiting to be folded into the repository
    sqlitedb.py   how the layer's SQLite databases are opened and written
    namespace.py  a namespace's open handles and how a plan becomes a commit; the registry
    runstate.py   the per-namespace consolidation lock and trigger state
    leases.py     the same lock across hosts: a lease on Redis with fencing tokens (loads redis)
    packing.py    packing, object counts and bundles, by the git program
    receive.py    the receiving side of git push: pkt-lines, a quarantined pack, what it brings
    rewrite.py    a purge: the whole history rewritten without a text, what held it deleted
    audit.py      the audit log of what history no longer shows (audit.jsonl in the shared home)
    keys.py       API keys, stored hashed in keys.json
    records.py    a JSON file of records every process shares (keys, watched channels)
    replays.py    webhook signatures seen recently (SQLite, or Redis when hosts share one)
    vectors.py    the derived sentence vectors and semantic neighbour pairs (SQLite)
    workspace.py  the files in play in an agent's project (a git working tree), for its hooks
    workers.py    the background worker `gitmem serve` started, so /healthz can tell it is starting
    buffers.py    conversations' messages waiting to be distilled (SQLite in the shared home)
    watches.py    the chat channels whose conversations are ingested (watched.json in the shared home)
    sessions.py   page sessions that were signed out (signed-out.json in the shared home)

Everything above this layer works with the names exported here and never imports pygit2.
"""

from __future__ import annotations

from . import packing, receive, workers
from .buffers import Appended, Buffered, Buffers, Sealed
from .index import (
    Candidate,
    Row,
    SearchIndex,
    category_term,
    is_memory_path,
    match_tokens,
    search_terms,
    techs_of,
    text_hash,
)
from .keys import ALL_NAMESPACES, KINDS, ROLES, ApiKey, KeyStore, refusal, role_rank
from .namespace import DISCUSSIONS, REPO_README, Namespace, Namespaces, Plan, check_namespace
from .packing import ObjectCounts
from .replays import RedisReplayGuard, ReplayGuard, SqliteReplayGuard
from .runstate import AlreadyRunning, Fence, Leases, LocalFence, RunState
from .sessions import SignedOut
from .store import MAIN, Change, Commit, CommitInfo, FileChange, Guard, Store, parse_trailers, refused_part
from .usage import UsageLog
from .vectors import VectorStore
from .watches import Watch, WatchList, check_channel
from .workspace import file_heads, files_in_play

__all__ = [
    "ALL_NAMESPACES", "DISCUSSIONS", "MAIN", "REPO_README", "ROLES", "AlreadyRunning", "ApiKey", "Appended",
    "Buffered", "Buffers", "Candidate", "KINDS", "Sealed",
    "Change", "Commit", "CommitInfo", "Fence", "FileChange", "Guard", "KeyStore", "Leases", "LocalFence",
    "Namespace", "Namespaces", "ObjectCounts", "Plan", "RedisReplayGuard", "ReplayGuard", "Row", "RunState",
    "SearchIndex", "SqliteReplayGuard", "Store", "UsageLog", "VectorStore", "Watch", "WatchList", "check_channel",
    "category_term", "check_namespace", "file_heads", "files_in_play", "is_memory_path", "match_tokens", "packing",
    "parse_trailers", "receive", "refusal", "refused_part", "role_rank", "search_terms", "techs_of", "text_hash",
    "SignedOut",
    "workers",
]
