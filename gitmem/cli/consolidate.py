"""Consolidation commands: ``consolidate``, ``review list|show|approve|reject|comment``, ``worker``."""

from __future__ import annotations

import re
import warnings
from typing import TYPE_CHECKING, Any

import click

from ..service import REVIEW_STATUSES, summarise
from ..wording import plural
from .base import actor_of, emit, json_option, main, namespace_option, ns_name, service, settings

if TYPE_CHECKING:  # imported in the commands: consolidation pulls in the LLM client, slow to load
    from ..service import Review, RunResult


def _review_number(ctx: click.Context, param: click.Parameter, value: str) -> int:
    """A review number in ASCII digits, ``12`` or ``#12`` (click's int would take ``٣`` as 3)."""
    if not re.fullmatch(r"#?[0-9]{1,9}", value.strip()):
        raise click.BadParameter(f"{value!r} is not a review number (see `gitmem review list`)", ctx, param)
    return int(value.strip().lstrip("#"))


def _actor_option(func: Any) -> Any:
    return click.option("--actor", default=None, metavar="NAME",
                        help="Who is acting (default: your login name).")(func)


def _actor(actor: str | None) -> str:
    return actor_of(actor)


def _inline(pieces: list[Any]) -> str:
    """A word diff on one line, as ``git diff --word-diff`` writes it: ``[-old-]{+new+}``."""
    marks = {"del": ("[-", "-]"), "ins": ("{+", "+}"), "same": ("", "")}
    return "".join(f"{marks[p.op][0]}{p.text}{marks[p.op][1]}" for p in pieces)


def _progress(review: Review) -> str:
    """``merged 4 of 8 as 1a2b3c4d5e; 4 open``."""
    states = list(review.commit_states.values())
    total = max(len(states), review.commit_count)
    text = f"merged {states.count('merged')} of {total}"
    if review.merged_commit:
        text += f" as {review.merged_commit[:10]}"
    for state in ("open", "stale", "skipped"):
        n = total - len(states) if state == "open" else states.count(state)
        if n:
            text += f"; {n} {state}"
    return text


def _review_line(review: Review) -> str:
    return (f"#{review.number:<4} {review.status:<8} {review.kind:<13} {review.author:<10} "
            f"{review.created:%Y-%m-%d %H:%M}  {review.title}")


@main.command(name="consolidate")
@click.option("--dry-run", is_flag=True, help="Print the plan and write nothing.")
@click.option("--queue", is_flag=True, help="Hand the run to the workers (`gitmem worker`) even with no broker set.")
@namespace_option
@json_option
def consolidate_command(dry_run: bool, queue: bool, namespace: str | None, as_json: bool) -> None:
    """Merge related memories and tidy their lifecycle on a branch, then open a review.

    Runs here with a progress bar, or on the workers when GITMEM_BROKER_URL is set (or --queue).
    Nothing reaches main until the review is approved with `gitmem review approve`.
    """
    name = ns_name(namespace)
    svc = service()
    if dry_run:
        planned = svc.consolidate(name, dry_run=True)
        emit(planned.to_dict(), as_json, lambda: _print_plan(planned))
        return

    def progress(done: int, total: int, label: str) -> None:
        if as_json:
            return
        width = 30
        filled = width * done // max(total, 1)
        text = " ".join(label.split())[:40]
        click.echo(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {text:<40}", nl=False, err=True)
        if done >= total:
            click.echo("", err=True)

    sent = svc.dispatch(name, background=queue, progress=progress, started_by=f"{actor_of(None)} (gitmem consolidate)")
    if sent.result is None:
        emit({"namespace": name, "task": sent.task}, as_json,
             lambda: click.echo(f"consolidation of {name} queued as task {sent.task}"))
        return
    result = sent.result
    emit(result.to_dict(), as_json, lambda: _print_run(result))


def _print_plan(result: RunResult) -> None:
    plan = result.plan
    for cluster in plan.clusters:
        kind = "pair" if cluster.pair else "cluster"
        click.echo(f"{kind} (min similarity {cluster.min_similarity:.2f}):")
        for m in cluster.members:
            click.echo(f"  {m.id}  {m.source:<13} {' '.join(m.text.split())[:100]}")
    for item in plan.lifecycle:
        click.echo(f"{item.action:<8} {item.memory.id}  {item.reason}")
    click.echo(result.summary)


def _print_run(result: RunResult) -> None:
    for decision in result.decisions:
        click.echo(f"{decision.kind:<8} {', '.join(decision.memory_ids)}: {decision.reason}")
    click.echo(result.summary)
    if result.review is not None:
        click.echo(f"see it with `gitmem review show {result.review}`; approve with "
                   f"`gitmem review approve {result.review}`")


@main.group()
def review() -> None:
    """Reviews of proposed changes (consolidation runs, amendments): list, show, decide."""


@review.command(name="list")
@click.option("--status", type=click.Choice(REVIEW_STATUSES), help="Only these.")
@namespace_option
@json_option
def review_list(status: str | None, namespace: str | None, as_json: bool) -> None:
    """List reviews, oldest first."""
    reviews = service().reviews.list(ns_name(namespace), status=status)

    def human() -> None:
        if not reviews:
            click.echo("no reviews")
        for r in reviews:
            click.echo(_review_line(r))

    emit([r.to_dict() for r in reviews], as_json, human)


@review.command(name="show")
@click.argument("number", callback=_review_number)
@namespace_option
@json_option
def review_show(number: int, namespace: str | None, as_json: bool) -> None:
    """Show a review: its commits, their reasons and a unified diff per memory."""
    reviews = service().reviews
    name = ns_name(namespace)
    found = reviews.get(name, number)
    commits = reviews.diff(name, number)

    def human() -> None:
        click.echo(_review_line(found))
        if found.stale_reason:
            click.echo(f"stale: {found.stale_reason}")
        if found.description:
            click.echo(found.description)
        click.echo(f"what changes: {summarise(commits)}")
        for commit in commits:
            click.echo(f"\ncommit {commit.id[:10]}  [{commit.state}]  {commit.summary}")
            if commit.note:
                click.echo(f"stale: {commit.note}")
            if commit.reason:
                click.echo(commit.reason)
            for memory in commit.memories:
                if memory.change == "changed" and memory.text_changed:
                    click.echo(f"  {memory.id} text: {_inline(memory.text)}")
                if memory.fields:
                    click.echo(f"  {memory.id} fields: {memory.fields_line()}")
                if memory.lost:
                    click.echo(f"  {memory.id} merged away; words lost: {' '.join(memory.lost)}")
            for f in commit.files:
                click.echo(f.unified.rstrip("\n"))
        for c in found.comments:
            click.echo(f"\n{c['actor']} at {c['at']}: {c['text']}")

    emit(found.to_dict() | {"commits": [c.to_dict() for c in commits]}, as_json, human)


@review.command(name="approve")
@click.argument("number", callback=_review_number)
@click.option("--commit", "commits", multiple=True, metavar="SHA",
              help="Approve only this commit of the review (repeat for more).")
@_actor_option
@namespace_option
@json_option
def review_approve(number: int, commits: tuple[str, ...], actor: str | None, namespace: str | None,
                   as_json: bool) -> None:
    """Merge a review's open commits (or only some of them) into main; the rest stay open."""
    reviews = service().reviews
    # Whoever runs gitmem on the server owns its home: an admin (a purge needs one).
    found = reviews.approve(ns_name(namespace), number, actor=_actor(actor), commits=list(commits) if commits else None,
                            admin=True)

    def human() -> None:
        click.echo(f"review #{found.number}: {_progress(found)}")
        advice = reviews.pull_advice(ns_name(namespace), found)
        if advice:
            click.echo(advice)

    emit(found.to_dict(), as_json, human)


@review.command(name="reject")
@click.argument("number", callback=_review_number)
@click.option("--reason", default=None,
              help="Why (added to the thread, so the author knows what to change); needed unless one --commit.")
@click.option("--commit", "commits", multiple=True, metavar="SHA",
              help="Turn down only this commit of the review (repeat for more); the rest stay open.")
@_actor_option
@namespace_option
@json_option
def review_reject(number: int, reason: str | None, commits: tuple[str, ...], actor: str | None,
                  namespace: str | None, as_json: bool) -> None:
    """Turn down what is left of a review (or only some commits of it); main is untouched."""
    found = service().reviews.reject(ns_name(namespace), number, actor=_actor(actor), reason=reason,
                                     commits=list(commits) if commits else None)
    emit(found.to_dict(), as_json, lambda: click.echo(f"review #{found.number} {found.label}"))


@review.command(name="comment")
@click.argument("number", callback=_review_number)
@click.argument("text")
@_actor_option
@namespace_option
@json_option
def review_comment(number: int, text: str, actor: str | None, namespace: str | None, as_json: bool) -> None:
    """Add a comment to a review's thread."""
    found = service().reviews.comment(ns_name(namespace), number, actor=_actor(actor), text=text)
    emit(found.to_dict(), as_json,
         lambda: click.echo(f"review #{found.number}: {plural(len(found.comments), 'comment')}"))


@main.command()
@click.option("--beat", is_flag=True,
              help="Also run the scheduler (daily consolidation and maintenance of every namespace).")
@click.option("--concurrency", "-c", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Worker processes.")
@click.option("--loglevel", "-l", default="INFO", show_default=True, help="Celery log level.")
@click.option("--hostname", default=None, help="Worker node name (default: celery@<host>).")
def worker(beat: bool, concurrency: int, loglevel: str, hostname: str | None) -> None:
    """Run a Celery worker for consolidation and maintenance (embedded broker unless GITMEM_BROKER_URL is set)."""
    from celery.exceptions import SecurityWarning

    from ..broker import worker_argv
    from ..tasks import create_worker

    config = settings()
    app = create_worker(config)
    if not {"pickle", "application/x-python-serialize"} & set(app.conf.accept_content):
        # Celery warns of a worker run as root because a worker that takes pickle runs whatever it
        # is sent. gitmem's take JSON only (and Celery refuses pickle to root outright), so the
        # warning does not apply: in a container the worker is root as the web server is.
        warnings.filterwarnings("ignore", message="You're running the worker with superuser privileges",
                                category=SecurityWarning)
    app.worker_main(worker_argv(config, beat=beat, concurrency=concurrency, loglevel=loglevel,
                                hostname=hostname))
