"""The task broker: Celery's configuration, and the queue front ends hand consolidation runs to.

The beat schedule runs consolidation of every namespace (``consolidate_schedule_hours``) and
maintenance, the packing of every namespace's repository (``maintain_schedule_hours``), each
a daily task that queues one task per namespace, and pushes again to every mirror that fell
behind (``mirror_retry_seconds``: one that was down, or a push that never ran).

With ``GITMEM_BROKER_URL`` unset the broker is embedded: kombu's filesystem transport in
``$GITMEM_HOME/state/broker`` and results in ``$GITMEM_HOME/state/results``, no server needed, so
``gitmem worker`` works out of the box. With ``redis://`` or ``amqp://`` it uses that broker.
Enqueuing sends a task by name and needs none of the task code (:mod:`gitmem.tasks`), so the
service can hand work to the workers without importing them.

Tasks are acknowledged when they finish, not when they start (``task_acks_late``), and a task
whose pool process dies is handed back to the broker (``task_reject_on_worker_lost``), so a run
cut short by a dying worker is run again. How soon depends on the broker: RabbitMQ redelivers
as soon as the dead worker's connection closes; Redis after ``broker_visibility_timeout``
seconds (``GITMEM_BROKER_VISIBILITY_TIMEOUT``, an hour by default: it must be longer than the
longest run, or a run still going is handed to a second worker, which then finds the namespace
locked); the embedded broker takes a message off its folder when a worker receives it, so a
worker killed outright loses its run (a pool process that dies is still handed back), and the
next trigger or the daily schedule runs it again. Runs are safe to repeat: see
:mod:`gitmem.consolidate`.
"""

from __future__ import annotations

import os
import time
import uuid
from datetime import timedelta
from typing import Any

from celery import Celery
from celery.app.backends import by_url
from kombu.connection import Connection
from kombu.exceptions import ChannelError
from kombu.transport import filesystem, get_transport_cls
from kombu.utils.json import dumps

from .errors import InvalidInput
from .settings import Settings

CONSOLIDATE = "gitmem.consolidate"
CONSOLIDATE_ALL = "gitmem.consolidate_all"
MAINTAIN = "gitmem.maintain"
MAINTAIN_ALL = "gitmem.maintain_all"
MIRROR = "gitmem.mirror"
MIRROR_ALL = "gitmem.mirror_all"
DISTIL = "gitmem.distil"
INGEST_SWEEP = "gitmem.ingest_sweep"
EMBED = "gitmem.embed"


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
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "broker_connection_retry_on_startup": True,
        "result_expires": timedelta(days=7),
        "beat_schedule_filename": str(settings.state_dir / "celerybeat-schedule"),
        "beat_schedule": {
            "consolidate-every-namespace": {
                "task": CONSOLIDATE_ALL,
                "schedule": timedelta(hours=settings.consolidate_schedule_hours),
            },
            "maintain-every-namespace": {
                "task": MAINTAIN_ALL,
                "schedule": timedelta(hours=settings.maintain_schedule_hours),
            },
            "mirror-what-fell-behind": {
                "task": MIRROR_ALL,
                "schedule": timedelta(seconds=settings.mirror_retry_seconds),
            },
            # Seal idle conversations and queue buffers whose worker died or whose retry is due.
            "sweep-conversation-buffers": {
                "task": INGEST_SWEEP,
                "schedule": timedelta(seconds=max(5.0, min(60.0, settings.ingest_idle_seconds / 4))),
            },
        },
    }
    if is_embedded(settings):
        broker = settings.state_dir / "broker"
        queue, control, results = broker / "queue", broker / "control", settings.state_dir / "results"
        for folder in (queue, control, results):
            folder.mkdir(parents=True, exist_ok=True)
        # kombu ignores the host of a filesystem broker but warns when none is named.
        conf["broker_url"] = "filesystem://localhost//"
        conf["broker_transport"] = "gitmem.broker:AtomicFilesystemTransport"
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
        _check_client("GITMEM_BROKER_URL", url, _transport)
        conf["broker_url"] = url
        default_backend = url if url.startswith(("redis://", "rediss://")) else "rpc://"
        conf["result_backend"] = settings.result_backend or default_backend
        conf["broker_connection_timeout"] = 5
        if url.startswith(("redis://", "rediss://")):
            visibility = settings.broker_visibility_timeout
            conf["broker_transport_options"] = {
                "visibility_timeout": visibility,
                # Look for runs of dead workers to hand back a few times per visibility timeout,
                # at most every 10 s (kombu's own default sweep is 100 s apart).
                "unacked_restore_interval": max(1, min(10, int(visibility / 4))),
                "unacked_restore_throttle": 1,
            }
    if settings.result_backend:
        _check_client("GITMEM_RESULT_BACKEND", settings.result_backend, by_url)
    return conf


def _transport(url: str) -> Any:
    """The kombu transport class of a broker URL (imports its client)."""
    return get_transport_cls(Connection(url).transport_cls)  # type: ignore[no-untyped-call]  # kombu is untyped


def _check_client(setting: str, url: str, load: Any) -> None:
    """Refuse, in one line, a broker or result backend whose Python client gitmem does not install.

    gitmem installs the clients of Redis and RabbitMQ; a SQL (``sqla+``, ``db+``), MongoDB or
    other transport needs its own package, which Celery would otherwise report as a traceback
    at the worker's start.
    """
    try:
        load(url)
    except ImportError as exc:
        scheme = url.partition("://")[0]  # never the rest: it may hold a password
        raise InvalidInput(f"{setting} {scheme}://... needs the Python package {exc.name or 'it names'}, which "
                           f"gitmem does not install: install it beside gitmem (pip install {exc.name}), or use "
                           "redis:// (or amqp:// for the broker)") from None


class _AtomicFilesystemChannel(filesystem.Channel):
    """kombu's filesystem channel, writing each message under a hidden name and renaming it in.

    kombu's own writes the message file in place, so a worker that lists the folder in between
    takes an empty file: the message is lost and the worker stops on the JSON error. Mirrors
    queue a push after every change, which makes that moment common enough to matter.
    """

    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]  # kombu names it twice
        name = f"{int(round(time.monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        temp = os.path.join(self.data_folder_out, f".{name}.tmp")  # never taken: not "<id>.<queue>.msg"
        try:
            with open(temp, "wb") as out:
                out.write(str(dumps(payload)).encode())  # type: ignore[no-untyped-call]
            os.rename(temp, final)
        except OSError as exc:
            raise ChannelError(f"cannot add file {final!r} to the broker folder") from exc


class AtomicFilesystemTransport(filesystem.Transport):
    """The embedded broker's transport: kombu's filesystem transport with atomic message files."""

    Channel = _AtomicFilesystemChannel


def create_celery(settings: Settings) -> Celery:
    """A Celery app for ``settings`` without tasks: enough to send tasks by name."""
    app = Celery("gitmem", set_as_current=False)
    app.conf.update(celery_config(settings))
    app.gitmem_settings = settings
    return app


_apps: dict[tuple[Any, ...], Celery] = {}


def app_for(settings: Settings) -> Celery:
    """A cached app per broker configuration, for enqueuing from front ends."""
    key = (str(settings.home), settings.broker_url, settings.result_backend, settings.celery_queue,
           settings.consolidate_schedule_hours, settings.maintain_schedule_hours, settings.mirror_retry_seconds)
    found = _apps.get(key)
    if found is None:
        found = _apps[key] = create_celery(settings)
    return found


class CeleryQueue:
    """The task queue on the configured broker (see :class:`gitmem.consolidate.TaskQueue`)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def enqueue_consolidation(self, namespace: str, *, dry_run: bool = False, started_by: str = "") -> str:
        """Send a consolidation run of ``namespace`` to the workers (``started_by``: who asks); the task id."""
        policy = {"max_retries": 3, "interval_start": 0, "interval_step": 0.5, "interval_max": 2}
        kwargs: dict[str, Any] = {"dry_run": dry_run} | ({"started_by": started_by} if started_by else {})
        result = app_for(self.settings).send_task(CONSOLIDATE, args=[namespace], kwargs=kwargs,
                                                  retry=True, retry_policy=policy)
        return str(result.id)

    def enqueue_mirror(self, namespace: str, *, countdown: float = 0) -> str:
        """Send a push of ``namespace`` to its mirrors to the workers, ``countdown`` seconds from now."""
        policy = {"max_retries": 3, "interval_start": 0, "interval_step": 0.5, "interval_max": 2}
        result = app_for(self.settings).send_task(MIRROR, args=[namespace], countdown=countdown or None,
                                                  retry=True, retry_policy=policy)
        return str(result.id)

    def enqueue_distil(self, namespace: str, buffer_id: str) -> str:
        """Send the distilling of a sealed conversation buffer to the workers; returns the task id."""
        policy = {"max_retries": 3, "interval_start": 0, "interval_step": 0.5, "interval_max": 2}
        result = app_for(self.settings).send_task(DISTIL, args=[namespace, buffer_id], retry=True,
                                                  retry_policy=policy)
        return str(result.id)

    def enqueue_embed(self, namespace: str) -> str:
        """Send the embedding of ``namespace``'s new memories to the workers; returns the task id."""
        policy = {"max_retries": 3, "interval_start": 0, "interval_step": 0.5, "interval_max": 2}
        result = app_for(self.settings).send_task(EMBED, args=[namespace], retry=True, retry_policy=policy)
        return str(result.id)


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
