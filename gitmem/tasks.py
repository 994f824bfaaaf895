"""The Celery worker's tasks: consolidation, maintenance, and distilling ingested conversations.

Consolidation runs after writes and daily, maintenance daily, distilling when a conversation's
buffer is sealed, with a sweep on the beat for idle conversations and buffers whose worker died.

``create_worker(settings)`` builds the app a worker runs; the module-level ``app`` (for ``celery
-A gitmem.tasks worker``) reads :meth:`Settings.from_env` the first time its configuration is
needed. Tasks are thin: they build the service in the worker process (never at import) and call
it; a run holds a per-namespace lock so two runs of one namespace never overlap.

A run that finds the namespace locked is tried again after the lock's lease
(``GITMEM_LOCK_LEASE_SECONDS``), up to :data:`RETRIES_WHILE_LOCKED` times: the holder may be a
run whose worker died, whose lease lapses by then. A run that finds a consolidation review open,
or that lost its lease, ends without writing and says so in its result (``skipped``).

Maintenance (packing a repository) runs here too, on the beat, never in the path of a write, and
so do pushes to a namespace's mirrors: queued after every change, tried again with a growing delay
when a mirror fails, and swept on the beat for any mirror that fell behind.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery, signals

from .broker import (
    CONSOLIDATE,
    CONSOLIDATE_ALL,
    DISTIL,
    EMBED,
    INGEST_SWEEP,
    MAINTAIN,
    MAINTAIN_ALL,
    MIRROR,
    MIRROR_ALL,
    celery_config,
    create_celery,
)
from .errors import AlreadyRunning, Conflict, LeaseLost, ReviewStillOpen
from .service import MemoryService, die_with_parent, hold_beat_lock
from .settings import Settings

log = logging.getLogger(__name__)
RETRIES_WHILE_LOCKED = 3
MIRROR_RETRIES = 5  # then the beat's sweep (mirror_retry_seconds) keeps trying


def create_worker(settings: Settings) -> Celery:
    """A Celery app for ``settings`` with gitmem's tasks registered, for a worker to run."""
    app = create_celery(settings)
    _register(app)
    # The beat (``worker --beat``, or ``celery beat``) schedules only while it holds the home's beat
    # lock, and an embedded one ends with its worker (see gitmem.repo.beat).
    signals.beat_init.connect(_beat_init, weak=False, dispatch_uid="gitmem-beat-lock")
    signals.beat_embedded_init.connect(_beat_embedded_init, weak=False, dispatch_uid="gitmem-beat-parent")
    return app


def _beat_embedded_init(sender: Any, **_: Any) -> None:
    die_with_parent()


def _beat_init(sender: Any, **_: Any) -> None:
    hold_beat_lock(_settings_of(sender.app).home / "beat.lock")


def _settings_of(app: Celery) -> Settings:
    found = getattr(app, "gitmem_settings", None)
    if found is None:
        found = Settings.from_env()
        app.gitmem_settings = found
    assert isinstance(found, Settings)
    return found


def _service(app: Celery) -> MemoryService:
    """The worker process's service, opened on first use (after the fork, never at import)."""
    found = getattr(app, "gitmem_service", None)
    if found is None:
        found = MemoryService(_settings_of(app))
        app.gitmem_service = found
    assert isinstance(found, MemoryService)
    return found


#: Who starts the runs the beat queues (a consolidation review says it).
SCHEDULED_BY = "gitmem's background worker, on its daily schedule (GITMEM_CONSOLIDATE_SCHEDULE_HOURS)"

def _consolidate(task: Any, namespace: str, dry_run: bool = False, started_by: str = "") -> dict[str, Any]:
    service = _service(task.app)
    try:
        return service.consolidate(namespace, dry_run=dry_run, started_by=started_by or "gitmem's workers").to_dict()
    except AlreadyRunning as exc:
        if task.request.retries < RETRIES_WHILE_LOCKED:
            log.info("%s; trying again in %g s", exc, service.settings.lock_lease_seconds)
            raise task.retry(countdown=service.settings.lock_lease_seconds, max_retries=RETRIES_WHILE_LOCKED) from exc
        return _skipped(namespace, dry_run, exc)
    except ReviewStillOpen as exc:
        return _skipped(namespace, dry_run, exc, review=exc.number)
    except LeaseLost as exc:
        log.warning("%s", exc)
        return _skipped(namespace, dry_run, exc, lease_lost=True)


def _skipped(namespace: str, dry_run: bool, exc: Conflict, review: int | None = None,
             **more: Any) -> dict[str, Any]:
    return {"namespace": namespace, "dry_run": dry_run, "skipped": True, "review": review,
            "summary": str(exc), **more}


def _consolidate_all(task: Any) -> list[str]:
    """Enqueue a run for every namespace without an open consolidation review."""
    service = _service(task.app)
    queued = []
    for namespace in service.namespaces():
        if service.consolidation_open(namespace):
            continue
        task.app.send_task(CONSOLIDATE, args=[namespace], kwargs={"dry_run": False, "started_by": SCHEDULED_BY})
        queued.append(namespace)
    return queued


def _maintain(task: Any, namespace: str) -> dict[str, Any]:
    try:
        return _service(task.app).maintain(namespace).to_dict()
    except AlreadyRunning as exc:
        return {"namespace": namespace, "skipped": True, "summary": str(exc)}


def _maintain_all(task: Any) -> list[str]:
    """Enqueue the packing of every namespace."""
    namespaces = _service(task.app).namespaces()
    for namespace in namespaces:
        task.app.send_task(MAINTAIN, args=[namespace])
    return namespaces


def _mirror(task: Any, namespace: str) -> dict[str, Any]:
    """Push a namespace's branches to its mirrors; try a failing one again later, backing off."""
    status = _service(task.app).mirror_push(namespace)
    failing = sorted(name for name, entry in status.items() if not entry.get("ok"))
    if failing and task.request.retries < MIRROR_RETRIES:
        countdown = min(300, 5 * 2 ** task.request.retries)
        log.warning("mirrors %s of %s failed; trying again in %d s", ", ".join(failing), namespace, countdown)
        raise task.retry(countdown=countdown, max_retries=MIRROR_RETRIES)
    return {"namespace": namespace, "mirrors": status}


def _mirror_all(task: Any) -> list[str]:
    """Enqueue a push for every namespace with a mirror that fell behind (was down, or missed a change)."""
    service = _service(task.app)
    queued = []
    for namespace in service.namespaces():
        if service.mirrors_behind(namespace):
            task.app.send_task(MIRROR, args=[namespace])
            queued.append(namespace)
    return queued


def _distil(task: Any, namespace: str, buffer_id: str) -> dict[str, Any]:
    """Distil one sealed conversation buffer (a failure puts it back for the sweep to queue again)."""
    return _service(task.app).distil(namespace, buffer_id).to_dict()


def _ingest_sweep(task: Any) -> dict[str, list[str]]:
    """Seal idle conversations and queue every buffer due for distilling, in every namespace."""
    queued: dict[str, list[str]] = {}
    for namespace, buffer_id in _service(task.app).ingest_sweep():
        task.app.send_task(DISTIL, args=[namespace, buffer_id])
        queued.setdefault(namespace, []).append(buffer_id)
    return queued


def _embed(task: Any, namespace: str) -> dict[str, Any]:
    """Embed the memories of ``namespace`` that have no sentence vector yet (written since the last time)."""
    return _service(task.app).vectors(namespace)


def _register(app: Celery) -> None:
    app.task(name=CONSOLIDATE, bind=True)(_consolidate)
    app.task(name=CONSOLIDATE_ALL, bind=True)(_consolidate_all)
    app.task(name=MAINTAIN, bind=True)(_maintain)
    app.task(name=MAINTAIN_ALL, bind=True)(_maintain_all)
    app.task(name=MIRROR, bind=True)(_mirror)
    app.task(name=MIRROR_ALL, bind=True)(_mirror_all)
    app.task(name=DISTIL, bind=True)(_distil)
    app.task(name=INGEST_SWEEP, bind=True)(_ingest_sweep)
    app.task(name=EMBED, bind=True)(_embed)


def _lazy_app() -> Celery:
    lazy = Celery("gitmem", set_as_current=False)

    def configure() -> dict[str, Any]:
        return celery_config(_settings_of(lazy))

    lazy.add_defaults(configure)
    _register(lazy)
    return lazy


#: The app ``celery -A gitmem.tasks`` finds; configured from the environment on first use.
app = _lazy_app()
