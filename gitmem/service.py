"""The memory service: the one facade the CLI, web app, Celery worker, Slack bot and MCP server call.

Front ends build it with :func:`build_service` from :class:`~gitmem.settings.Settings` (read from
the environment by the entry point, never here) and call its methods; every method takes a
namespace first. Behind it: ``recall`` (reading), ``memories`` (the write gate and every change),
``feedback``, ``export``, ``reviews``, ``consolidate``, ``maintenance``, and the repository layer
``repo/`` (git, the search index, the usage log, locks: the only code that touches them).

How consolidation runs is decided here and nowhere else: on the workers when a broker is
configured or the caller cannot wait, in this process otherwise (:meth:`MemoryService.dispatch`).

What only some commands use (consolidation, ingestion, the graph: :mod:`gitmem.deferred`; imports,
exports, agent files) is imported and built on first use, so ``gitmem show`` or an agent's
session-start hook pays for none of it; names re-exported from those modules load the same way
(:func:`__getattr__`).
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import importlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .concepts import check_id, iso, now
from .corrections import Corrections
from .deferred import Deferred
from .feedback import FEEDBACK_ACTIONS, Feedback, FeedbackResult
from .maintenance import BackedUp, Maintained, Maintenance, Restored
from .memories import BatchResult, Candidate, Memories, Outcome, WriteResult
from .pushes import Pushes
from .recall import Comment, Hit, Recall
from .redaction import Purged, Redactions
from .repo import (
    ALL_NAMESPACES,
    KINDS,
    ROLES,
    AlreadyRunning,
    ApiKey,
    CommitInfo,
    KeyStore,
    Namespaces,
    ObjectCounts,
    ReplayGuard,
    SignedOut,
    Watch,
    WatchList,
    file_heads,
    files_in_play,
    refusal,
    rewrite,
    role_rank,
    syncing,
    workers,
)
from .repo import check_namespace as check_namespace
from .repo.beat import die_with_parent, hold_beat_lock
from .repo.mirrors import Mirrors
from .repo.replays import replay_guard
from .repo.syncing import SyncResult
from .reviews import STATUSES as REVIEW_STATUSES
from .reviews import Review, Reviews, summarise
from .semantic import Semantics
from .settings import Settings

if TYPE_CHECKING:  # loaded on first use: see the module's docstring
    from . import agents, importers
    from .consolidate import Dispatched, Plan, Progress, RunResult, TaskQueue
    from .graph import Graph
    from .ingest import MAX_MESSAGE_CHARS, Accepted, Distilled, Ingested
    from .llm import LLM

#: Names this module exports from modules it loads only when asked: name -> module.
_LATER = {
    "Dispatched": "consolidate", "Plan": "consolidate", "RunResult": "consolidate", "TaskQueue": "consolidate",
    "Graph": "graph", "MAX_MESSAGE_CHARS": "ingest", "Accepted": "ingest", "Distilled": "ingest", "Ingested": "ingest",
}


def __getattr__(name: str) -> Any:
    """A re-exported name of a module loaded on first use (``from gitmem.service import Plan``)."""
    module = _LATER.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


__all__ = [
    "ALL_NAMESPACES", "MAX_MESSAGE_CHARS", "Accepted", "AlreadyRunning", "ApiKey", "BackedUp", "BatchResult",
    "Candidate", "Comment", "CommitInfo", "Dispatched", "Distilled", "FEEDBACK_ACTIONS", "FeedbackResult", "Graph",
    "Hit", "KINDS",
    "Ingested", "KeyStore", "Maintained", "MemoryService", "ObjectCounts", "Outcome", "Plan", "REVIEW_STATUSES",
    "ROLES", "ReplayGuard", "Restored", "Review", "Reviews", "RunResult", "TaskQueue", "Watch", "WriteResult",
    "build_service", "check_id", "check_namespace", "refusal", "role_rank", "summarise",
    "SignedOut", "die_with_parent", "hold_beat_lock",
]
log = logging.getLogger(__name__)
#: Seconds between a change and the push to the namespace's mirrors that carries it.
MIRROR_DELAY = 1.0
#: Who starts the runs the trigger after writes queues (a consolidation review says it).
TRIGGERED_BY = "gitmem's background worker, on its own after writes (the trigger: more active memories than " \
    "GITMEM_CONSOLIDATE_MIN_ACTIVE, or a day since the last run)"


class MemoryService(Deferred):
    """Everything a front end can do with memories, reviews and consolidation."""

    def __init__(self, settings: Settings, *, queue: TaskQueue | None = None, trigger: bool = False) -> None:
        """Open the service over ``settings.home``; ``trigger``: writes that add memories may start a run."""
        self.settings = settings
        self._queue = queue
        self._namespaces = Namespaces(settings)
        self.reviews = Reviews(self._namespaces, settings)
        self._semantics = Semantics(settings, self._embeddings)
        recall = Recall(self._namespaces, settings, self._semantics)
        memories = Memories(self._namespaces, settings, on_added=self._added if trigger else None,
                            semantics=self._semantics, on_proposed=self._supersede)
        self._memories = memories
        self._corrections = Corrections(self._namespaces, memories, self.reviews)
        feedback = Feedback(self._namespaces, memories, self.reviews, settings)
        maintenance = Maintenance(self._namespaces, settings)
        self._mirror_seen: dict[str, tuple[int, bool, float]] = {}
        if trigger:
            self._namespaces.on_change = self._changed
        self._pushes = Pushes(self._namespaces, self.reviews, settings, self._semantics,
                              on_main=self._added if trigger else None)
        # Registers itself as the decider of purge reviews: their approval rewrites the history.
        self._redactions = Redactions(self._namespaces, self.reviews, settings,
                                      mirrors=lambda namespace: self._mirrors(namespace).push())
        self.purge_history = self._redactions.request
        self._keys: KeyStore | None = None
        self._watches = WatchList(settings.home)

        # The memory operations, as the modules behind them define them.
        self.show = recall.show
        self.list = recall.list
        self.recall = recall.recall
        self.context = recall.context
        self.context_hits = recall.context_hits
        self._recall_status = recall.status
        self.history = recall.history
        self.log = recall.log
        self.discussion = recall.discussion
        self.remember = memories.remember
        self.remember_many = memories.remember_many
        self.amend = memories.amend
        self.choose = memories.choose
        self.forget = memories.forget
        self.revert = memories.revert
        self.restore = memories.restore
        self.fold_usage = memories.fold_usage
        self.feedback = feedback.feedback
        self.may_amend_directly = feedback.may_amend_directly
        self.maintain = maintenance.maintain
        self.backup = maintenance.backup
        self.restore_backup = maintenance.restore

    # --- namespaces ----------------------------------------------------------------------------

    def namespaces(self) -> builtins.list[str]:
        """Names of the namespaces that have a repository."""
        return self._namespaces.names()

    def exists(self, namespace: str) -> bool:
        """Whether ``namespace`` has a repository."""
        return self._namespaces.exists(namespace)

    def init(self, namespace: str) -> str:
        """Create the namespace's repository if it does not exist yet (idempotent); its path."""
        return str(self._namespaces.init(namespace).store.path)

    def require(self, namespace: str) -> None:
        """Raise :class:`~gitmem.errors.NamespaceNotFound` unless ``namespace`` exists."""
        self._namespaces.open(namespace)

    def head(self, namespace: str) -> str:
        """The commit ``main`` of ``namespace`` points at."""
        return str(self._namespaces.open(namespace).store.head().id)

    def attach(self, repo_path: Path) -> str:
        """Open a clone of a memory repository to read; the name to pass to recall and context."""
        return self._namespaces.attach(repo_path)

    def close(self) -> None:
        """Close every open index, log and vector file."""
        self._semantics.close()
        self._namespaces.close()

    def vectors(self, namespace: str, *, rebuild: bool = False,
                progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Embed every live memory that has no vector yet (``rebuild``: all of them again); counts."""
        ns = self._namespaces.open(namespace)
        with ns.lock:
            ns.synced()
            store = self._semantics.store(ns)
            if store is None:
                return {"namespace": namespace, "model": None, "embedded": 0, "vectors": 0}
            if rebuild:
                self._semantics.forget(ns)
                store.clear()
            embedded = self._semantics.fill(ns, progress=progress)
            return {"namespace": namespace, "model": store.model, "embedded": embedded, "vectors": store.count()}

    @property
    def keys(self) -> KeyStore:
        """The API keys (``$GITMEM_HOME/keys.json``)."""
        if self._keys is None:
            self._keys = KeyStore(self.settings.home)
        return self._keys

    @functools.cached_property
    def signed_out(self) -> SignedOut:
        """The page sessions signed out (``$GITMEM_HOME/signed-out.json``): they are refused."""
        return SignedOut(self.settings.home)

    def replay_guard(self, window: int) -> ReplayGuard:
        """Where every web process keeps the signed webhook requests it saw within ``window`` seconds."""
        return replay_guard(self.settings, window)

    # --- imports --------------------------------------------------------------------------------

    def import_memories(self, namespace: str, fmt: str, files: object, *, dry_run: bool = False,
                        actor: str | None = None, origin: str = "", create: bool = False) -> importers.ImportReport:
        """Import another store's memories (files: relative path -> text) in one commit; see :mod:`gitmem.importers`."""
        from . import importers

        importer = importers.Importer(self._memories, self._namespaces)
        return importer.run(namespace, fmt, importers.check_files(files), dry_run=dry_run, actor=actor,
                            origin=origin, create=create)

    def import_source(self, fmt: str, path: Path) -> dict[str, str]:
        """The files of a source on disk (a folder, or a JSON file), to pass to :meth:`import_memories`."""
        from . import importers

        return importers.read_source(path, fmt)

    # --- agents ---------------------------------------------------------------------------------

    def agent_install(self, target: agents.Target, *, dry_run: bool = False) -> builtins.list[agents.AgentFile]:
        """Write a coding agent's MCP entry and session-start hook (``dry_run``: only say what)."""
        from . import agents

        return agents.install(target, dry_run=dry_run)

    def files_in_play(self, directory: Path, limit: int = 50) -> builtins.list[str]:
        """The files being worked on in an agent's project (a git working tree); [] outside one."""
        return files_in_play(directory, limit)

    def file_heads(self, directory: Path, files: builtins.list[str]) -> dict[str, str]:
        """The first kilobytes of ``files`` under ``directory`` and of their project's manifests (for ``context``)."""
        return file_heads(directory, files)

    # --- git push --------------------------------------------------------------------------------

    def push_advertisement(self, namespace: str) -> bytes:
        """What ``git push`` reads first: the branches of ``namespace`` and what the server speaks."""
        return self._pushes.advertise(namespace)

    def push_refused(self, message: str) -> bytes:
        """An advertisement that stops ``git push`` with ``fatal: remote error: <message>``."""
        from .repo import receive

        return receive.refused_advertisement(message)

    def receive_push(self, namespace: str, body: IO[bytes], *, actor: str, role: str,
                     base_url: str | None = None) -> bytes:
        """Take a ``git push`` request; the answer for the client (see :mod:`gitmem.pushes`)."""
        return self._pushes.receive(namespace, body, actor=actor, role=role, base_url=base_url)

    def rewritten(self, namespace: str) -> dict[str, str]:
        """Commit id -> what to tell a clone that has it, for every commit a purge of ``namespace`` rewrote."""
        return rewrite.rewritten_commits(self._namespaces.open(namespace).store)

    def last_purge(self) -> Purged | None:
        """What the last purge approved in this process did (commits rewritten, time, mirrors), if any."""
        return self._redactions.last

    def status(self, namespace: str) -> dict[str, Any]:
        """Counts by state, type and potency tier, head, malformed files, and each mirror's status."""
        data = self._recall_status(namespace)
        data["mirrors"] = self.mirror_status(namespace)
        return data

    # --- mirrors ---------------------------------------------------------------------------------

    def mirrors(self, namespace: str) -> dict[str, str]:
        """The mirrors of ``namespace``: name -> URL."""
        return self._mirrors(namespace).list()

    def mirror_add(self, namespace: str, url: str, *, name: str | None = None) -> str:
        """Mirror ``namespace`` to ``url`` from now on (the workers push after every change); its name."""
        added = self._mirrors(namespace).add(url, name)
        self._mirror_seen.pop(namespace, None)
        return added

    def mirror_remove(self, namespace: str, name: str) -> None:
        """Stop mirroring ``namespace`` to the mirror ``name``."""
        self._mirrors(namespace).remove(name)
        self._mirror_seen.pop(namespace, None)

    def mirror_push(self, namespace: str, *, name: str | None = None) -> dict[str, dict[str, Any]]:
        """Push ``namespace``'s branches to its mirrors now, in this process; each one's status."""
        return self._mirrors(namespace).push(name)

    def mirror_status(self, namespace: str) -> dict[str, dict[str, Any]]:
        """Each mirror of ``namespace``: URL, whether the last push worked, its error, whether it is behind."""
        return self._mirrors(namespace).status()

    def mirrors_behind(self, namespace: str) -> bool:
        """Whether a mirror of ``namespace`` lacks a change or failed its last push."""
        return self._mirrors(namespace).behind()

    def _mirrors(self, namespace: str) -> Mirrors:
        ns = self._namespaces.open(namespace)
        return Mirrors(ns.store, ns.state, self.settings)

    def _changed(self, namespace: str) -> None:
        """After a ref moved: queue a push to the namespace's mirrors, a moment later, once per moment.

        The push runs :data:`MIRROR_DELAY` seconds later and sends the branches as they are then,
        so every change within that moment needs no push of its own. Queuing never fails the
        write; a push that was never queued is made up by the beat's sweep.
        """
        seen = self._mirror_seen.get(namespace)
        config = self._namespaces.repo_path(namespace) / "config"
        try:
            stamp = config.stat().st_mtime_ns
        except OSError:
            return
        if seen is None or seen[0] != stamp:
            seen = (stamp, bool(self.mirrors(namespace)), 0.0)
        if not seen[1]:
            self._mirror_seen[namespace] = seen
            return
        moment = time.monotonic()
        if moment - seen[2] < MIRROR_DELAY * 0.8:
            return
        self._mirror_seen[namespace] = (seen[0], True, moment)
        try:
            from .broker import CeleryQueue

            CeleryQueue(self.settings).enqueue_mirror(namespace, countdown=MIRROR_DELAY)
        except Exception:  # a broker that is down must not fail a write; the sweep catches up
            log.exception("could not queue the push of %s to its mirrors", namespace)

    def sync(self, path: Path, *, url: str | None, key: str | None, actor: str, to: str = "auto",
             message: str | None = None, dry_run: bool = False) -> SyncResult:
        """Sync a clone or a plain folder of memories with a gitmem server (see :mod:`gitmem.repo.syncing`)."""
        return syncing.sync(path, url=url, key=key, actor=actor, to=to, message=message, dry_run=dry_run)

    # --- export and consolidation --------------------------------------------------------------

    def export(self, namespace: str, fmt: str, dest: Path | None = None) -> str:
        """Export as ``memory-md``, ``json``, ``okf`` (a folder at ``dest``), or ``graph`` (an HTML page)."""
        if fmt == "graph":
            return self._graphs.page(namespace)
        from . import export as exporting

        return exporting.export(self._namespaces, namespace, fmt, dest)

    def consolidate(self, namespace: str, *, dry_run: bool = False, progress: Progress | None = None,
                    llm: LLM | None = None, started_by: str = "") -> RunResult:
        """Consolidate ``namespace`` in this process (``dry_run``: only plan); see :mod:`gitmem.consolidate`."""
        return self._consolidation.run(namespace, dry_run=dry_run, progress=progress, llm=llm, started_by=started_by)

    def dispatch(self, namespace: str, *, background: bool = False, progress: Progress | None = None,
                 started_by: str = "") -> Dispatched:
        """Run consolidation where it belongs: queued when a broker is set or ``background``, else here.

        ``background`` is for callers that must not wait (a web request); the queue is then the
        embedded broker when none is configured, served by ``gitmem serve``'s worker.
        ``started_by``: who asks, kept in the review the run opens.
        """
        from .consolidate import Dispatched

        self.require(namespace)
        if self.settings.broker_url or background:
            return Dispatched(task=self.queue.enqueue_consolidation(namespace, started_by=started_by))
        return Dispatched(result=self.consolidate(namespace, progress=progress, started_by=started_by))

    # --- conversations ---------------------------------------------------------------------------

    def ingest(self, namespace: str, conversation: str, messages: builtins.list[Any], *, source: str = "api",
               meta: dict[str, Any] | None = None, flush: bool = False, background: bool = False,
               context: tuple[str, str] | None = None) -> Ingested:
        """Buffer a batch of a conversation's messages; a buffer it seals is distilled where it belongs.

        ``flush``: seal the conversation's buffer after this batch, however small; ``context``:
        the message this conversation answers (see :meth:`gitmem.ingest.Ingest.add`). As with
        :meth:`dispatch`: queued for the workers when a broker is set or ``background`` (a web
        request), distilled in this process otherwise. See :mod:`gitmem.ingest`.
        """
        accepted = self._ingest.add(namespace, conversation, messages, source=source, meta=meta, context=context)
        if flush:
            more = tuple(self._ingest.seal(namespace, conversation=accepted.conversation))
            accepted = dataclasses.replace(accepted, sealed=accepted.sealed + more, active_tokens=0)
        return self._distil_all(namespace, accepted, accepted.sealed, background)

    def flush(self, namespace: str, *, conversation: str | None = None, idle: float | None = None,
              background: bool = False) -> Ingested:
        """Seal active buffers (one conversation's, the idle ones, or all) and distil every due buffer."""
        self._ingest.seal(namespace, conversation=conversation, idle=idle)
        return self._distil_all(namespace, None, self._ingest.due(namespace), background)

    def ingest_sweep(self) -> builtins.list[tuple[str, str]]:
        """Seal idle conversations in every namespace; the (namespace, buffer) pairs due for distilling."""
        due: builtins.list[tuple[str, str]] = []
        for namespace in self.namespaces():
            if self._namespaces.has_buffers(namespace):
                self._ingest.seal(namespace, idle=self.settings.ingest_idle_seconds)
                due.extend((namespace, b) for b in self._ingest.due(namespace))
        return due

    def _distil_all(self, namespace: str, accepted: Accepted | None, buffers: builtins.list[str] | tuple[str, ...],
                    background: bool) -> Ingested:
        from .ingest import Ingested

        if self.settings.broker_url or background:
            return Ingested(accepted, queued=tuple(self.queue.enqueue_distil(namespace, b) for b in buffers))
        done: builtins.list[Distilled] = [self._ingest.distil(namespace, b) for b in buffers]
        return Ingested(accepted, distilled=tuple(done))

    # --- the background worker of `gitmem serve` -------------------------------------------------

    def worker_started(self, pid: int) -> None:
        """Record the background worker ``gitmem serve`` just started (see :mod:`gitmem.repo.workers`)."""
        workers.started(self.settings.state_dir, pid)

    def worker_stopped(self, pid: int) -> None:
        """Forget the background worker ``gitmem serve`` stopped."""
        workers.stopped(self.settings.state_dir, pid)

    def worker_starting(self) -> bool:
        """Whether the background worker ``gitmem serve`` started on this host is still coming up."""
        return workers.starting(self.settings.state_dir)

    # --- watched channels ------------------------------------------------------------------------

    def watch(self, namespace: str, channel: str, actor: str) -> tuple[Watch, bool]:
        """Ingest a chat channel's conversations into ``namespace`` from now on.

        The list is shared by every process on the home (``$GITMEM_HOME/ingest/watched.json``).
        Returns the watch and whether it is new (False: the channel was watched already).
        """
        self.require(namespace)
        watch, added = self._watches.add(namespace, channel, actor, iso(now()))
        if added:
            log.info("%s now watches channel %s into %s", actor, channel, namespace)
        return watch, added

    def unwatch(self, namespace: str, channel: str, actor: str) -> Watch | None:
        """Stop ingesting a channel into ``namespace``; the watch it was, or None if it was not watched.

        Messages already taken stay in their buffers and are distilled as usual.
        """
        gone = self._watches.remove(namespace, channel)
        if gone is not None:
            log.info("%s stopped the watch of channel %s into %s", actor, channel, namespace)
        return gone

    def watching(self, namespace: str | None = None) -> builtins.list[Watch]:
        """The watched channels, all or one namespace's, oldest first."""
        return self._watches.list(namespace)

    def watched(self, namespace: str, channel: str) -> Watch | None:
        """Whether ``channel`` is watched into ``namespace`` (cheap: asked for every chat message)."""
        return self._watches.get(namespace, channel)

    def run_state(self, namespace: str) -> dict[str, Any]:
        """When consolidation last ran and was last queued in ``namespace``."""
        return self._consolidation.state(namespace).read()

    @property
    def queue(self) -> TaskQueue:
        """The task queue on the configured (or embedded) broker."""
        if self._queue is None:
            from .broker import CeleryQueue  # Celery loads only when something is queued

            self._queue = CeleryQueue(self.settings)
        return self._queue

    def _supersede(self, namespace: str, new_id: str, old_ids: tuple[str, ...], actor: str) -> None:
        """Open the review that retires what an agent's statement corrects (see :mod:`gitmem.corrections`)."""
        self._corrections.propose(namespace, new_id, old_ids, actor=actor)

    def _added(self, namespace: str) -> None:
        """After a write added a memory: have it embedded, and queue consolidation when the trigger rule says so."""
        # Workers embed what a process without its encoder loaded wrote (a CLI's remember, a web
        # process before its first recall): where there are workers to do it. Else the next recall does.
        has_workers = self.settings.broker_url is not None or workers.alive(self.settings.state_dir)
        if self._semantics.enabled and not self._semantics.loaded and has_workers:
            try:
                self.queue.enqueue_embed(namespace)
            except Exception:  # the next recall embeds it instead
                log.exception("queueing the embedding of %s failed", namespace)
        if not self._consolidation.should_trigger(namespace):
            return
        state = self._consolidation.state(namespace)
        state.write(last_enqueued=iso(now()))
        task_id = self.queue.enqueue_consolidation(namespace, started_by=TRIGGERED_BY)
        state.write(last_task=task_id)
        log.info("consolidation of %s queued as %s", namespace, task_id)


def build_service(settings: Settings, *, queue: TaskQueue | None = None) -> MemoryService:
    """The service as every front end uses it: writes that add memories may trigger consolidation."""
    return MemoryService(settings, queue=queue, trigger=True)

