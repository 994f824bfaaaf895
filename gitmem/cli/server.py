"""Web commands: ``gitmem serve`` and ``gitmem key create|revoke|list``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import click

from ..errors import NamespaceNotFound
from ..service import ALL_NAMESPACES, KINDS, ROLES, KeyStore
from ..serving import check_address
from ..wording import article
from .base import emit, json_option, main, ns_name, service, settings

WORKER_STOP_SECONDS = 15
WATCH_SECONDS = 0.5  # how often serve looks at its background worker
RESTART_SECONDS = 1.0  # then doubling, up to MAX_RESTART_SECONDS, while it keeps dying young
MAX_RESTART_SECONDS = 60.0
STEADY_SECONDS = 30.0  # a worker that ran this long died of something else than its start


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", "-p", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on.")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 64),
              help="gunicorn worker processes.")
@click.option("--threads", default=4, show_default=True, type=click.IntRange(1, 256),
              help="Threads per worker process.")
@click.option("--no-worker", is_flag=True,
              help="Do not start a background worker, even with the embedded broker.")
def serve(host: str, port: int, workers: int, threads: int, no_worker: bool) -> None:
    """Serve the web app: API, webhook, review pages and git over HTTP.

    With no broker configured (GITMEM_BROKER_URL unset), this also runs `gitmem worker --beat`
    on the embedded broker as a child process, so one command on one machine does everything,
    including background consolidation; the child is started again if it dies, and stops when
    the server does. With a broker
    configured it serves only: run `gitmem worker` elsewhere. Under the hood this is gunicorn;
    in production you may run `gunicorn 'gitmem.web:create_app()'` yourself.
    """
    config = settings()
    check_address(host, port)
    master = os.getpid()
    child: Supervised | None = None
    if config.broker_url is None and not no_worker:
        # /healthz says "starting", not "degraded", until each worker it starts answers its first ping.
        child = Supervised([sys.executable, "-m", "gitmem", "worker", "--beat"], "background worker",
                           on_start=service().worker_started)
        child.start()
    try:
        _gunicorn(host, port, workers, threads)
    finally:
        # gunicorn forks its workers from here; only the master owns the background worker.
        if child is not None and os.getpid() == master:
            child.stop()
            if child.process is not None:
                service().worker_stopped(child.process.pid)


class Supervised:
    """A child process kept running: started again when it dies, until :meth:`stop`.

    A thread of the server's master process watches it. A child that keeps dying soon after it
    starts is started again after a wait that doubles, up to a minute, so a broken one does not spin.
    """

    def __init__(self, argv: list[str], what: str, on_start: Callable[[int], None] | None = None) -> None:
        """Run ``argv``, called ``what`` in messages; ``on_start(pid)`` after each start."""
        self.argv, self.what, self.on_start = argv, what, on_start
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None
        self.started = 0.0

    def start(self) -> None:
        """Start the child and the thread that watches it."""
        self._spawn()
        self._watcher = threading.Thread(target=self._watch, name=f"gitmem-{self.what}", daemon=True)
        self._watcher.start()

    def _spawn(self) -> None:
        with self._lock:
            if self._stopping.is_set():
                return
            self.process = subprocess.Popen(self.argv)
            self.started = time.monotonic()
        click.echo(f"started {self.what} (pid {self.process.pid}) on the embedded broker", err=True)
        if self.on_start is not None:
            self.on_start(self.process.pid)

    def _watch(self) -> None:
        wait = RESTART_SECONDS
        while not self._stopping.wait(WATCH_SECONDS):
            process = self.process
            # poll(), not wait(): gunicorn's master reaps every child that exits, this one too.
            if process is None or process.poll() is None:
                continue
            ran = time.monotonic() - self.started
            wait = RESTART_SECONDS if ran > STEADY_SECONDS else min(wait * 2, MAX_RESTART_SECONDS)
            click.echo(f"{self.what} (pid {process.pid}) died (exit {process.returncode}); starting it again "
                       f"in {wait:g} s", err=True)
            if self._stopping.wait(wait):
                return
            self._spawn()

    def stop(self) -> None:
        """Stop watching, then stop the child (SIGTERM, then SIGKILL after a while)."""
        with self._lock:
            self._stopping.set()
            process = self.process
        if self._watcher is not None:
            self._watcher.join()
        if process is not None:
            _stop(process)


def _stop(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=WORKER_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    click.echo(f"background worker stopped (exit {child.returncode})", err=True)


def _gunicorn(host: str, port: int, workers: int, threads: int) -> None:
    from ..serving import serve
    from ..web import create_app

    serve(create_app, host=host, port=port, workers=workers, threads=threads, name="gitmem")


@main.group()
def key() -> None:
    """API keys: make, list and revoke them (roles: reader, writer, reviewer, admin)."""


@key.command("create")
@click.option("--namespace", "-n", default=None, metavar="NS",
              help=f"Namespace the key is for ('{ALL_NAMESPACES}' for every namespace). Default: default.")
@click.option("--role", "-r", type=click.Choice(ROLES), required=True, help="What the key may do.")
@click.option("--name", help="Who uses the key; recorded as the actor of its changes.")
@click.option("--kind", type=click.Choice(KINDS), default="person", show_default=True,
              help="Who uses the key: a person, or an agent. What it writes without naming a source is "
                   "recorded as theirs (source user or agent).")
@click.option("--create", "create_namespace", is_flag=True,
              help="Create the namespace when it does not exist yet (else that is refused).")
@json_option
def key_create(namespace: str | None, role: str, name: str | None, kind: str, create_namespace: bool,
               as_json: bool) -> None:
    """Make a key and print it once; only a hash of it is stored.

    The namespace must exist (`gitmem init --namespace NS`, or --create here), so a mistyped
    name is caught now rather than at the key's first use.
    """
    name_of_ns = ns_name(namespace)
    svc = service()
    if name_of_ns != ALL_NAMESPACES and not svc.exists(name_of_ns):
        if not create_namespace:
            known = ", ".join(svc.namespaces()) or "none yet"
            raise NamespaceNotFound(
                f"namespace {name_of_ns!r} does not exist (there are: {known}); create it with "
                f"`gitmem init --namespace {name_of_ns}`, or pass --create to make it with the key")
        svc.init(name_of_ns)
    secret, stored = svc.keys.create(name_of_ns, role, name, kind=kind)

    def human() -> None:
        click.echo(secret)
        click.echo(f"key {stored.id} ({stored.name}, {article(stored.kind)}): {stored.role} on {stored.namespace}. "
                   "Save it now; it cannot be shown again.", err=True)

    emit({"key": secret, **stored.to_dict()}, as_json, human)


@key.command("revoke")
@click.argument("key_id")
@json_option
def key_revoke(key_id: str, as_json: bool) -> None:
    """Revoke a key by its id (see `gitmem key list`); it stops working at once."""
    gone = KeyStore(settings().home).revoke(key_id)
    emit(gone.to_dict(), as_json, lambda: click.echo(f"revoked key {gone.id} ({gone.name})"))


@key.command("list")
@click.option("--namespace", "-n", default=None, metavar="NS", help="Only keys that apply to NS.")
@json_option
def key_list(namespace: str | None, as_json: bool) -> None:
    """List keys (ids, roles, kinds, namespaces and names; never the keys themselves)."""
    found = KeyStore(settings().home).list(None if namespace is None else ns_name(namespace))

    def human() -> None:
        for k in found:
            click.echo(f"{k.id}  {k.role:<8} {k.kind:<6} {k.namespace:<20} {k.name}  (created {k.created})")

    emit([k.to_dict() for k in found], as_json, human)
