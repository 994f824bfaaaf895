"""Maintenance commands: ``maintain``, ``vectors``, ``backup`` and ``restore-backup``."""

from __future__ import annotations

from pathlib import Path

import click

from ..service import AlreadyRunning, Maintained, ObjectCounts
from .base import emit, json_option, main, service

_NAMESPACES_HELP = "Only this namespace (repeat for more). Default: every namespace."


def _size(count: int) -> str:
    value, unit = float(count), "B"
    for bigger in ("KB", "MB", "GB"):
        if value < 1000:
            break
        value, unit = value / 1000, bigger
    return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"


def _counts(before: ObjectCounts, after: ObjectCounts) -> str:
    return (f"loose objects {before.loose:,} -> {after.loose:,}, packs {before.packs} -> {after.packs}, "
            f"size {_size(before.size_bytes)} -> {_size(after.size_bytes)}")


@main.command()
@click.option("--namespace", "-n", "namespaces", multiple=True, metavar="NS", help=_NAMESPACES_HELP)
@json_option
@click.pass_context
def maintain(ctx: click.Context, namespaces: tuple[str, ...], as_json: bool) -> None:
    """Pack each namespace's repository: loose objects into one pack, refs into packed-refs.

    libgit2 never packs, so every memory leaves its objects as loose files. This runs `git
    pack-refs`, `git repack -A -d` and `git prune`, keeping unreachable objects younger than two
    weeks, so it is safe while others write. Prints `git count-objects -v` figures before and
    after. The workers do it on a schedule (`gitmem worker --beat`, every
    GITMEM_MAINTAIN_SCHEDULE_HOURS, default 24); a namespace being packed already is skipped.
    """
    svc = service()
    names = list(namespaces) or svc.namespaces()
    for name in names:
        svc.require(name)  # an unknown namespace stops the command before anything is packed
    done: list[Maintained] = []
    skipped: list[str] = []
    for name in names:
        try:
            result = svc.maintain(name)
        except AlreadyRunning as exc:
            if len(names) == 1:
                raise
            click.echo(f"{name}: skipped: {exc}", err=True)
            skipped.append(name)
            continue
        done.append(result)
        if not as_json:
            click.echo(f"{name}: {_counts(result.before, result.after)} ({result.seconds:.1f} s)")
    if as_json:
        emit([r.to_dict() for r in done], True, lambda: None)
    elif not names:
        click.echo("no namespaces to maintain")
    if skipped:
        ctx.exit(AlreadyRunning.exit_code)


@main.command()
@click.option("--namespace", "-n", "namespaces", multiple=True, metavar="NS", help=_NAMESPACES_HELP)
@click.option("--rebuild", is_flag=True, help="Drop the stored vectors and embed every memory again.")
@json_option
def vectors(namespaces: tuple[str, ...], rebuild: bool, as_json: bool) -> None:
    """Embed every memory that has no sentence vector yet (derived state under state/).

    Recall and consolidation fill the vectors they need on their own; this does it all at once,
    for example after importing many memories or changing GITMEM_EMBEDDINGS, with a progress
    line on standard error. With GITMEM_EMBEDDINGS=none there is nothing to do.
    """
    svc = service()
    names = list(namespaces) or svc.namespaces()
    for name in names:
        svc.require(name)
    done = []
    for name in names:
        def progress(count: int, total: int, name: str = name) -> None:
            if not as_json:
                click.echo(f"\r{name}: embedded {count:,} of {total:,}", nl=count >= total, err=True)

        result = svc.vectors(name, rebuild=rebuild, progress=progress)
        done.append(result)
        if not as_json:
            if result["model"] is None:
                click.echo(f"{name}: semantics are off (GITMEM_EMBEDDINGS=none)")
            else:
                click.echo(f"{name}: {result['embedded']:,} embedded, {result['vectors']:,} vectors "
                           f"({result['model']})")
    if as_json:
        emit(done, True, lambda: None)
    elif not names:
        click.echo("no namespaces")


@main.command()
@click.argument("dest", type=click.Path(path_type=Path))
@click.option("--namespace", "-n", "namespaces", multiple=True, metavar="NS", help=_NAMESPACES_HELP)
@json_option
def backup(dest: Path, namespaces: tuple[str, ...], as_json: bool) -> None:
    """Back up the namespaces, API keys and session secret into DEST, a new or empty folder.

    \b
    DEST/repos/NS.bundle   each namespace: a git bundle of all its refs (main, reviews)
    DEST/keys.json         the API keys (hashed), when there are any
    DEST/secret_key        the page sessions' key, unless GITMEM_SECRET_KEY sets it
    DEST/MANIFEST.json     what, when, versions, each namespace's main

    Files are mode 0600, the folder 0700. Restore with `gitmem restore-backup DEST`, or with git
    alone: `git clone --mirror DEST/repos/NS.bundle $GITMEM_HOME/repos/NS.git` (see docs/backup.md).
    """  # noqa: D301 - click's \b marker is a real backspace; r""" breaks it
    result = service().backup(dest, list(namespaces) or None)

    def human() -> None:
        for name, entry in result.manifest["namespaces"].items():
            click.echo(f"{name}: {entry['bundle']} (main {str(entry['main'])[:10]}, {entry['refs']} refs, "
                       f"{_size(entry['bytes'])})")
        for name in result.manifest["files"]:
            click.echo(f"{name}")
        click.echo(f"backup written to {result.dest}")

    emit(result.to_dict(), as_json, human)


@main.command(name="restore-backup")
@click.argument("src", type=click.Path(path_type=Path))
@json_option
def restore_backup(src: Path, as_json: bool) -> None:
    """Restore a backup made by `gitmem backup` into $GITMEM_HOME, which must not hold any of it.

    Each bundle is cloned as a mirror into repos/NS.git, checked against the manifest's main,
    and configured as gitmem configures its repositories; keys.json and secret_key are copied
    (mode 0600). Search indexes are rebuilt on first use.
    """
    result = service().restore_backup(src)

    def human() -> None:
        for name, main_id in result.namespaces.items():
            click.echo(f"{name}: main {main_id[:10]}")
        for name in result.files:
            click.echo(name)
        click.echo(f"restored into {result.home}")

    emit(result.to_dict(), as_json, human)
