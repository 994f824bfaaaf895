"""Two-way sync and mirrors: ``gitmem sync DIR`` and ``gitmem mirror``."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import SyncConflict
from ..wording import plural
from .base import actor_of, emit, json_option, main, namespace_option, ns_name, service


def _git_url(url: str, namespace: str | None) -> str:
    """``http://HOST`` becomes the namespace's git URL; a URL with ``/git/`` in it stays as it is."""
    if "/git/" in url:
        return url
    return f"{url.rstrip('/')}/git/{ns_name(namespace)}.git"


@main.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--url", envvar="GITMEM_URL", default=None, metavar="URL",
              help="The server (http://HOST:PORT, or the namespace's git URL). Default: $GITMEM_URL, else the "
                   "clone's origin.")
@click.option("--key", envvar="GITMEM_KEY", default=None, metavar="KEY",
              help="Your gitmem key. Default: $GITMEM_KEY.")
@click.option("--to", "to", type=click.Choice(["auto", "main", "review"]), default="auto", show_default=True,
              help="Where to push: main when the key may (reviewer, admin), else a review; or only one of them.")
@click.option("--message", "-m", default=None, help="Message of the commit of your edits.")
@click.option("--actor", default=None, help="Who edits (the commit author). Default: the local user.")
@click.option("--dry-run", is_flag=True, help="Show what would be committed, pulled and pushed; change nothing.")
@namespace_option
@json_option
def sync(directory: Path, url: str | None, key: str | None, to: str, message: str | None, actor: str | None,
         dry_run: bool, namespace: str | None, as_json: bool) -> None:
    """Sync a clone, or a plain folder of Markdown memories, with a gitmem server.

    Commits the memory files you edited (<type>/<name>.md and README.md; other files are left
    out and named), fetches the server's main, rebases your commits on it and pushes them: to
    main when your key is a reviewer's or an admin's, else to your review branch
    (refs/heads/review/sync-<you>), which opens a review or updates the one open. A plain folder
    becomes a clone on its first sync; its files are laid over the server's memories (only
    additions and edits count). Conflicts are named file by file and nothing is pushed (exit 4).
    """
    svc = service()
    try:
        result = svc.sync(directory, url=_git_url(url, namespace) if url else None, key=key,
                          actor=actor_of(actor), to=to, message=message, dry_run=dry_run)
    except SyncConflict as exc:
        for name in exc.files:
            click.echo(f"conflict: {name}", err=True)
        raise

    def human() -> None:
        prefix = "would " if dry_run else ""
        if result.adopted:
            click.echo(f"{directory} {'would become' if dry_run else 'is now'} a clone of {result.url}")
        for name in result.committed:
            click.echo(f"{prefix}commit: {name}")
        for name in result.left_out:
            click.echo(f"left out (not a memory file): {name}")
        if result.pulled:
            click.echo(f"{prefix}take in " + ("new commits" if result.pulled < 0 else plural(result.pulled, "commit"))
                       + " from the server")
        for line in result.messages:
            click.echo(f"server: {line}")
        if result.pushed_to and result.pushed and not dry_run:
            click.echo(f"pushed {plural(result.pushed, 'commit')} to {result.pushed_to}")
        elif result.pushed_to:
            click.echo(f"would push to {result.pushed_to}")
        elif not result.committed:
            click.echo("up to date: nothing to push")

    emit(result.to_dict(), as_json, human)


@main.group()
def mirror() -> None:
    """Mirrors: push a namespace's main and review branches to upstream remotes after every change.

    The workers push (`gitmem worker`, or the one `gitmem serve` starts), tried again when a mirror
    is down; a mirror never holds up or loses a write. Tokens come from the environment:
    GITMEM_MIRROR_CREDENTIALS=github.com=TOKEN,gitlab.example.com=user:TOKEN.
    """


@mirror.command("add")
@click.argument("namespace")
@click.argument("url")
@click.option("--name", default=None, help="The mirror's name. Default: from the URL's host.")
def mirror_add(namespace: str, url: str, name: str | None) -> None:
    """Mirror NAMESPACE to URL (https://, ssh://, git@host:path or a path to a repository)."""
    added = service().mirror_add(namespace, url, name=name)
    click.echo(f"{namespace} mirrors to {added} ({url}); push it now with `gitmem mirror push {namespace}`")


@mirror.command("list")
@click.argument("namespace")
@json_option
def mirror_list(namespace: str, as_json: bool) -> None:
    """List NAMESPACE's mirrors with the outcome of their last push."""
    data = service().mirror_status(namespace)

    def human() -> None:
        if not data:
            click.echo(f"{namespace} has no mirrors; add one with `gitmem mirror add {namespace} URL`")
        for name, entry in data.items():
            state = {True: "ok", False: "failing", None: "not pushed yet"}[entry["ok"]]
            behind = ", behind" if entry["behind"] else ""
            error = f": {entry['error']}" if entry.get("error") else ""
            click.echo(f"{name}  {entry['url']}  {state}{behind}{error}")

    emit(data, as_json, human)


@mirror.command("remove")
@click.argument("namespace")
@click.argument("name")
def mirror_remove(namespace: str, name: str) -> None:
    """Stop mirroring NAMESPACE to the mirror NAME (what it holds stays there)."""
    service().mirror_remove(namespace, name)
    click.echo(f"{namespace} no longer mirrors to {name}")


@mirror.command("push")
@click.argument("namespace")
@click.option("--name", default=None, help="Only this mirror.")
@json_option
def mirror_push(namespace: str, name: str | None, as_json: bool) -> None:
    """Push NAMESPACE's branches to its mirrors now, in this process (exit 7 when one fails)."""
    data = service().mirror_push(namespace, name=name)

    def human() -> None:
        for mirror_name, entry in data.items():
            click.echo(f"{mirror_name}: {'ok' if entry['ok'] else 'failing: ' + str(entry['error'])}")

    emit(data, as_json, human)
    if any(not entry["ok"] for entry in data.values()):
        raise SystemExit(7)
