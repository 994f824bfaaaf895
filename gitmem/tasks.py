"""The Celery app: consolidation runs in workers, triggered after writes and on a daily beat.

``create_celery(settings)`` builds an app; the module-level ``app`` (for ``celery -A
gitmem.tasks worker``) reads :meth:`Settings.from_env` the first time its configuration is needed.
With ``GITMEM_BROKER_URL`` unset the broker is embedded: kombu's filesystem transport in
``$GITMEM_HOME/state/broker`` and results in ``$GITMEM_HOME/state/results``, no server needed, so
``gitmem worker`` works out of the box. With ``redis://`` or ``amqp://`` it uses that broker.

Tasks are thin: they build a :class:`MemoryService` in the worker process (never at import) and
call :func:`gitmem.consolidate.run`, which holds a per-namespace lock so two runs of one
namespace never overlap.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from celery import Celery

from . import concepts
from .consolidate import AlreadyRunning, read_state, write_state
from .consolidate import run as run_consolidation
from .errors import NamespaceNotFound
from .service import MemoryService, WriteResult, check_namespace
from .settings import Settings

log = logging.getLogger(__name__)

CONSOLIDATE = "gitmem.consolidate"
CONSOLIDATE_ALL = "gitmem.consolidate_all"
# The trigger enqueues a namespace at most this often, however many writes arrive.
TRIGGER_THROTTLE = timedelta(hours=1)


def is_embedded(settings: Settings) -> bool:
    """Whether the broker is the serverless one under ``state_dir``."""
    return not settings.broker_url


def celery_config(settings: Settings) -> dict[str, Any]:
    """The Celery configuration for these settings (creates the embedded broker's folders)."""
    conf: dict[str, Any] = {
        "task_default_queue": settings.celery_queue,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "enable_utc": True,
        "timezone": "UTC",
        "worker_prefetch_multiplier": 1,
        "broker_connection_retry_on_startup": True,
        "result_expires": timedelta(days=7),
        "beat_schedule_filename": str(settings.state_dir / "celerybeat-schedule"),
        "beat_schedule": {
            "consolidate-every-namespace": {
                "task": CONSOLIDATE_ALL,
                "schedule": timedelta(hours=settings.consolidate_schedule_hours),
            },
        },
    }
    if is_embedded(settings):
        broker = settings.state_dir / "broker"
        queue, control, results = broker / "queue", broker / "control", settings.state_dir / "results"
        for folder in (queue, control, results):
            folder.mkdir(parents=True, exist_ok=True)
        conf["broker_url"] = "filesystem://"
        conf["broker_transport_options"] = {
            "data_folder_in": str(queue),
            "data_folder_out": str(queue),
            "control_folder": str(control),
            "store_processed": False,
            "polling_interval": 0.2,
        }
        conf["result_backend"] = settings.result_backend or f"file://{results}"
    else:
        url = str(settings.broker_url)
        conf["broker_url"] = url
        default_backend = url if url.startswith(("redis://", "rediss://")) else "rpc://"
        conf["result_backend"] = settings.result_backend or default_backend
        conf["broker_connection_timeout"] = 5
    return conf


def create_celery(settings: Settings) -> Celery:
    """A Celery app for ``settings`` with gitmem's tasks registered."""
    app = Celery("gitmem", set_as_current=False)
    app.conf.update(celery_config(settings))
    app.gitmem_settings = settings
    _register(app)
    return app


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


def _consolidate(task: Any, namespace: str, dry_run: bool = False) -> dict[str, Any]:
    service = _service(task.app)
    try:
        return run_consolidation(service, namespace, dry_run=dry_run).to_dict()
    except AlreadyRunning as exc:
        return {"namespace": namespace, "dry_run": dry_run, "skipped": True, "review": None,
                "summary": str(exc)}


def _consolidate_all(task: Any) -> list[str]:
    """Enqueue a run for every namespace without an open consolidation review."""
    service = _service(task.app)
    queued = []
    for namespace in service.namespaces():
        if open_consolidation(service, namespace):
            continue
        task.app.send_task(CONSOLIDATE, args=[namespace], kwargs={"dry_run": False})
        queued.append(namespace)
    return queued


def _register(app: Celery) -> None:
    app.task(name=CONSOLIDATE, bind=True)(_consolidate)
    app.task(name=CONSOLIDATE_ALL, bind=True)(_consolidate_all)


def _lazy_app() -> Celery:
    lazy = Celery("gitmem", set_as_current=False)

    def configure() -> dict[str, Any]:
        return celery_config(_settings_of(lazy))

    lazy.add_defaults(configure)
    _register(lazy)
    return lazy


#: The app ``celery -A gitmem.tasks`` finds; configured from the environment on first use.
app = _lazy_app()

_apps: dict[tuple[Any, ...], Celery] = {}


def app_for(settings: Settings) -> Celery:
    """A cached app per broker configuration, for enqueuing from front ends."""
    key = (str(settings.home), settings.broker_url, settings.result_backend, settings.celery_queue,
           settings.consolidate_schedule_hours)
    found = _apps.get(key)
    if found is None:
        found = _apps[key] = create_celery(settings)
    return found


def enqueue_consolidation(settings: Settings, namespace: str, *, dry_run: bool = False) -> str:
    """Hand a consolidation run of ``namespace`` to the workers; returns the task id."""
    check_namespace(namespace)
    if not (settings.repos_dir / f"{namespace}.git" / "HEAD").exists():
        raise NamespaceNotFound(f"namespace {namespace!r} does not exist; create it with "
                                f"`gitmem init --namespace {namespace}`")
    result = app_for(settings).send_task(CONSOLIDATE, args=[namespace], kwargs={"dry_run": dry_run},
                                         retry=True, retry_policy={"max_retries": 3, "interval_start": 0,
                                                                   "interval_step": 0.5, "interval_max": 2})
    return str(result.id)


def open_consolidation(service: MemoryService, namespace: str) -> bool:
    """Whether a consolidation review of ``namespace`` is waiting for a decision."""
    return bool([r for r in service.reviews.list(namespace, status="open") if r.kind == "consolidation"])


def should_trigger(service: MemoryService, namespace: str, at: datetime | None = None) -> bool:
    """The trigger rule after a write added a memory.

    Run when more than ``consolidate_min_active`` memories are active, or when
    ``consolidate_interval_hours`` have passed since the last run (since the namespace was created
    if it never ran); but never more often than :data:`TRIGGER_THROTTLE`, and not while a
    consolidation review is still open.
    """
    at = at or concepts.now()
    state = read_state(service, namespace)
    last_enqueued = concepts.parse_time(state.get("last_enqueued"))
    if last_enqueued is not None and at - last_enqueued < TRIGGER_THROTTLE:
        return False
    ns = service.ns(namespace)
    ns.synced()
    active = ns.index.counts()["state"].get("active", 0)
    if active > service.settings.consolidate_min_active:
        return not open_consolidation(service, namespace)
    last_run = concepts.parse_time(state.get("last_run"))
    if last_run is None:
        first = next(iter(reversed(list(ns.store.log()))), None)
        last_run = datetime.fromtimestamp(first.commit_time, UTC) if first is not None else at
    if at - last_run >= timedelta(hours=service.settings.consolidate_interval_hours):
        return not open_consolidation(service, namespace)
    return False


def install_trigger(service: MemoryService,
                    enqueue: Callable[[Settings, str], str] | None = None) -> Callable[[str, WriteResult], None]:
    """Enqueue consolidation after writes that add memories, when :func:`should_trigger` says so."""
    send = enqueue or enqueue_consolidation

    def trigger(namespace: str, result: WriteResult) -> None:
        if result.outcome != "added" or not should_trigger(service, namespace):
            return
        write_state(service, namespace, last_enqueued=concepts.iso(concepts.now()))
        task_id = send(service.settings, namespace)
        write_state(service, namespace, last_task=task_id)
        log.info("consolidation of %s enqueued as %s", namespace, task_id)

    service.write_listeners.append(trigger)
    return trigger


def worker_argv(settings: Settings, *, beat: bool = False, concurrency: int = 1, loglevel: str = "INFO",
                hostname: str | None = None, pool: str | None = None) -> list[str]:
    """Arguments for ``app.worker_main``: the embedded broker needs no gossip, mingle or heartbeat."""
    argv = ["worker", f"--concurrency={concurrency}", f"--loglevel={loglevel}",
            f"--queues={settings.celery_queue}"]
    if beat:
        argv.append("--beat")
    if hostname:
        argv.append(f"--hostname={hostname}")
    if pool:
        argv.append(f"--pool={pool}")
    if is_embedded(settings):
        argv += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    return argv
