"""Web commands: ``gitmem serve`` and ``gitmem key create|revoke|list``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import click

from ..errors import NamespaceNotFound
from ..service import ALL_NAMESPACES, KINDS, ROLES, KeyStore
from ..serving import check_address
from ..wording import article
from .base import emit, json_option, main, ns_name, service, settings

WORKER_STOP_SECONDS = 15


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
    including background consolidation; the child stops when the server does. With a broker
    configured it serves only: run `gitmem worker` elsewhere. Under the hood this is gunicorn;
    in production you may run `gunicorn 'gitmem.web:create_app()'` yourself.
    """
    config = settings()
    check_address(host, port)
    master = os.getpid()
    child: subprocess.Popen[bytes] | None = None
    if config.broker_url is None and not no_worker:
        child = subprocess.Popen([sys.executable, "-m", "gitmem", "worker", "--beat"])
        click.echo(f"started background worker (pid {child.pid}) on the embedded broker", err=True)
    try:
        _gunicorn(host, port, workers, threads)
    finally:
        # gunicorn forks its workers from here; only the master owns the background worker.
        if child is not None and os.getpid() == master:
            _stop(child)


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
