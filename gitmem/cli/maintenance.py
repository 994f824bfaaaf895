"""Maintenance commands: ``maintain``."""

from __future__ import annotations

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
