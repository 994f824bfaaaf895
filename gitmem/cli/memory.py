"""Core commands: init, remember, recall, show, amend, forget, log, revert, restore, status, export."""

from __future__ import annotations

from pathlib import Path

import click
from click.core import ParameterSource

from .. import concepts, techchoice
from ..concepts import Memory
from ..errors import InvalidInput, MemoryNotFound, NamespaceNotFound
from ..service import FEEDBACK_ACTIONS, CommitInfo, WriteResult
from ..wording import plural
from .base import actor_of, emit, json_option, main, namespace_option, ns_name, read_text_arg, service

# Types and sources are checked by the service, so a bad one gets the same one-line error as
# every other bad input.
_TYPE_HELP = "Kind of memory: " + ", ".join(concepts.TYPES) + "."
_SOURCE_HELP = (
    "Who is saying it: " + ", ".join(concepts.SOURCES) + "; very similar agent text merges into an existing memory."
)


def _line(memory: Memory, potency: float | None = None) -> str:
    shown = memory.potency if potency is None else potency
    flags = "" if memory.state == "active" else f" [{memory.state}]"
    text = " ".join(memory.text.split())
    if len(text) > 100:
        text = text[:99] + "…"
    return f"{memory.id}  {memory.type:<10} {shown:4.2f}{flags}  {text}"


def _commit_line(info: CommitInfo) -> str:
    return f"{info.id[:10]}  {info.action:<10} {info.actor:<12} {info.summary}"


@main.command()
@namespace_option
@json_option
def init(namespace: str | None, as_json: bool) -> None:
    """Create a namespace's memory repository (does nothing if it exists)."""
    name = ns_name(namespace)
    path = service().init(name)
    emit({"namespace": name, "repository": path}, as_json,
         lambda: click.echo(f"namespace {name}: {path}"))


@main.command()
@click.argument("text")
@click.option("--type", "-t", "memory_type", default="fact", show_default=True, help=_TYPE_HELP)
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for more).")
@click.option("--path", "paths", multiple=True, help="A file, folder or glob the memory is about (repeat).")
@click.option("--title", help="Title (default: the first line of the text).")
@click.option("--source", default="user", show_default=True, help=_SOURCE_HELP)
@click.option("--author", help="Who said it (default: the local user); the commit names them too.")
@click.option("--pending", is_flag=True, help="Store as pending until consolidation promotes it.")
@click.option("--option", "options", multiple=True, metavar="NAME",
              help="techchoice: an option (repeat; two or more, each with --pro and --con, or --describe).")
@click.option("--pro", "pros", multiple=True, metavar="NAME=TEXT", help="techchoice: a pro of option NAME (repeat).")
@click.option("--con", "cons", multiple=True, metavar="NAME=TEXT", help="techchoice: a con of option NAME (repeat).")
@click.option("--describe", "descriptions", multiple=True, metavar="NAME=TEXT",
              help="techchoice: what option NAME is, or why it is there.")
@click.option("--config", "configs", multiple=True, metavar="NAME=TEXT",
              help="techchoice: how option NAME is set up (configuration notes).")
@click.option("--status", "statuses", multiple=True, metavar="NAME=TEXT",
              help="techchoice: where option NAME stands (candidate, deprecated...; --active names the one in use).")
@click.option("--active", metavar="NAME", help="techchoice: the option chosen now.")
@click.option("--reason", help="techchoice: why the active option is chosen (kept in its record).")
@namespace_option
@json_option
def remember(text: str, memory_type: str, tags: tuple[str, ...], paths: tuple[str, ...], title: str | None,
             source: str, author: str | None, pending: bool, options: tuple[str, ...], pros: tuple[str, ...],
             cons: tuple[str, ...], descriptions: tuple[str, ...], configs: tuple[str, ...],
             statuses: tuple[str, ...], active: str | None, reason: str | None, namespace: str | None,
             as_json: bool) -> None:
    """Remember TEXT ('-' reads it from standard input) through the write gate.

    Identical text reinforces the existing memory; very similar text from an agent is merged into
    it; anything else is added. Creates the namespace if needed. A note that starts with YAML
    frontmatter gives its title, type, tags and paths (options win); a leading '# Heading'
    titles it.

    \b
    Example: gitmem remember "We use pnpm, not npm" --type convention --path package.json

    \b
    A technology choice lists its options, each with pros and cons (or a description,
    --describe), and the active one:
    gitmem remember "Package manager for the web app" --type techchoice \\
        --option pnpm --pro "pnpm=fast installs" --con "pnpm=fewer users" \\
        --option npm --pro "npm=ships with node" --con "npm=slow" --active pnpm
    """  # noqa: D301 - click's \b marker is a real backspace; r""" breaks it
    name = ns_name(namespace)
    # A note with YAML frontmatter (a file from `gitmem show` or a notes app) brings its title,
    # type, tags and paths; options given on the command line win.
    body, note = concepts.read_note(read_text_arg(text))
    if click.get_current_context().get_parameter_source("memory_type") == ParameterSource.DEFAULT:
        memory_type = note.get("type", memory_type)
    title = title or note.get("title")
    tags = tags or note.get("tags", ())
    paths = paths or note.get("paths", ())
    given = {"pros": pros, "cons": cons, "description": descriptions, "config": configs, "status": statuses}
    choices = _options(options, given) if options or any(given.values()) else note.get("options")
    active = active or note.get("active")

    def write() -> WriteResult:
        return service().remember(name, body, type=memory_type, title=title, tags=tags, paths=paths,
                                  source=source, author=actor_of(author), state="pending" if pending else "active",
                                  options=choices, active=active, reason=reason)

    try:
        result = write()
    except NamespaceNotFound:
        # The input was valid (it is checked first); create the namespace and write.
        service().init(name)
        result = write()
    memory = result.memory
    assert memory is not None

    def human() -> None:
        note = f" (into {result.similar_to})" if result.outcome == "merged" else ""
        click.echo(f"{result.outcome}{note}: {memory.id} {memory.path}")

    emit(result.to_dict(), as_json, human)


_FLAGS = {"pros": "--pro", "cons": "--con", "description": "--describe", "config": "--config", "status": "--status"}


def _options(names: tuple[str, ...], given: dict[str, tuple[str, ...]]) -> list[dict[str, object]]:
    """Options from ``--option NAME`` and ``--pro/--con/--describe/--config/--status NAME=TEXT``.

    The service checks them; here only that each names one of the options.
    """
    options: dict[str, dict[str, object]] = {n: {"pros": [], "cons": []} for n in names}
    for key, values in given.items():
        flag = _FLAGS[key]
        for item in values:
            option, sep, text = item.partition("=")
            found = options.get(option.strip()) if sep else None
            if found is None:
                raise InvalidInput(f"{flag} {item!r}: write {flag} NAME=TEXT with NAME one of the --option names "
                                   f"({', '.join(names) or 'none given'})")
            if key in ("pros", "cons"):
                found[key].append(text)  # type: ignore[attr-defined]
            elif key in found:
                raise InvalidInput(f"{flag} is given twice for option {option.strip()!r}; give it once")
            else:
                found[key] = text
    return [{"name": n, **v} for n, v in options.items()]


@main.command()
@click.argument("memory_id")
@click.argument("option")
@click.option("--reason", required=True, help="Why this option is chosen now (kept in the record).")
@click.option("--pro", "pros", multiple=True, help="A pro of the option (repeat; a new one needs one, or --describe).")
@click.option("--con", "cons", multiple=True, help="A con of the option (repeat; a new one needs one, or --describe).")
@click.option("--describe", "description", help="What the option is, or why it is there.")
@click.option("--config", help="How the option is set up (configuration notes).")
@click.option("--status", help="Where the option stands, if not simply in use (e.g. trial).")
@click.option("--actor", help="Who chooses (default: the local user).")
@namespace_option
@json_option
def choose(memory_id: str, option: str, reason: str, pros: tuple[str, ...], cons: tuple[str, ...],
           description: str | None, config: str | None, status: str | None, actor: str | None,
           namespace: str | None, as_json: bool) -> None:
    """Make OPTION the active one of technology choice MEMORY_ID, for a reason.

    An append-only change: a new OPTION is added with its pros and cons (or a description),
    every option stays, and the choice joins the memory's record of choices (one commit;
    `gitmem revert` undoes it).

    \b
    Example: gitmem choose 3f2a9c1b7e npm --reason "the CI image only has npm"
    """  # noqa: D301 - click's \b marker is a real backspace; r""" breaks it
    result = service().choose(ns_name(namespace), memory_id, option, reason=reason, pros=pros, cons=cons,
                              description=description, config=config, status=status, actor=actor_of(actor))
    memory = result.memory
    assert memory is not None

    def human() -> None:
        click.echo(f"chosen: {memory.active} for {memory.id} ({memory.title}) in {(result.commit or '')[:10]}")
        click.echo(techchoice.options_table(memory))

    emit(result.to_dict(), as_json, human)


@main.command()
@click.argument("query", required=False, default="")
@click.option("--path", "paths", multiple=True, help="A file you are working on (repeat).")
@click.option("--limit", "-l", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--archived", is_flag=True, help="Include archived memories.")
@click.option("--no-record", is_flag=True, help="Do not count this as a use of the memories.")
@namespace_option
@json_option
def recall(query: str, paths: tuple[str, ...], limit: int, archived: bool, no_record: bool,
           namespace: str | None, as_json: bool) -> None:
    """Find memories for QUERY and/or the files you work on, best first."""
    hits = service().recall(ns_name(namespace), query, path=list(paths), limit=limit,
                            record=not no_record, include_archived=archived)

    def human() -> None:
        if not hits:
            click.echo("no memories found")
        for hit in hits:
            click.echo(_line(hit.memory, hit.potency) + ("  ← path" if hit.path_match else ""))
            if hit.memory.options:
                for row in techchoice.options_table(hit.memory).splitlines():
                    click.echo(f"    {row}".rstrip())

    emit([h.to_dict() for h in hits], as_json, human)


@main.command()
@click.argument("memory_id")
@namespace_option
@json_option
def show(memory_id: str, namespace: str | None, as_json: bool) -> None:
    """Show one memory with all its fields (for one merged away: the memory that replaced it)."""
    try:
        memory = service().show(ns_name(namespace), memory_id, record=True)  # a person opened it: a use
    except MemoryNotFound as exc:
        raise service().reviews.missing(ns_name(namespace), memory_id, exc) from None
    emit(memory.to_dict(), as_json, lambda: click.echo(concepts.render(memory).decode(), nl=False))


@main.command()
@click.argument("memory_id")
@click.argument("text", required=False)
@click.option("--title")
@click.option("--type", "-t", "memory_type", help=_TYPE_HELP)
@click.option("--tag", "tags", multiple=True, help="Replace the tags (repeat).")
@click.option("--path", "paths", multiple=True, help="Replace the paths (repeat).")
@click.option("--tenured/--not-tenured", default=None, help="Keep it from decaying out of the active tier.")
@click.option("--actor", help="Who is amending (default: the local user).")
@namespace_option
@json_option
def amend(memory_id: str, text: str | None, title: str | None, memory_type: str | None,
          tags: tuple[str, ...], paths: tuple[str, ...], tenured: bool | None, actor: str | None,
          namespace: str | None, as_json: bool) -> None:
    """Change a memory's TEXT ('-' for standard input), title, type, tags, paths or tenure."""
    result = service().amend(
        ns_name(namespace), memory_id, text=None if text is None else read_text_arg(text), title=title,
        type=memory_type, tags=tags or None, paths=paths or None, tenured=tenured, actor=actor_of(actor),
    )
    emit(result.to_dict(), as_json, lambda: click.echo(f"{result.outcome}: {memory_id}"))


@main.command()
@click.argument("memory_id")
@click.option("--purge", is_flag=True, help="Delete the file instead of archiving it.")
@click.option("--reason", help="Why (kept in the commit and the memory).")
@click.option("--actor", help="Who is forgetting it (default: the local user).")
@namespace_option
@json_option
def forget(memory_id: str, purge: bool, reason: str | None, actor: str | None, namespace: str | None,
           as_json: bool) -> None:
    """Archive a memory (kept, never recalled); --purge deletes its file (git history keeps it)."""
    result = service().forget(ns_name(namespace), memory_id, purge=purge, reason=reason, actor=actor_of(actor))
    emit(result.to_dict(), as_json, lambda: click.echo(f"{result.outcome}: {memory_id}"))


@main.command()
@click.argument("memory_id", required=False)
@click.option("--limit", "-l", type=click.IntRange(1, 10000), default=20, show_default=True)
@namespace_option
@json_option
def log(memory_id: str | None, limit: int, namespace: str | None, as_json: bool) -> None:
    """The commits of a namespace, or the history of one memory, newest first."""
    name = ns_name(namespace)
    infos = service().history(name, memory_id)[:limit] if memory_id else service().log(name, limit=limit)
    data = [{"id": i.id, "summary": i.summary, "action": i.action, "actor": i.actor, "time": i.time,
             "memory_ids": list(i.memory_ids), "message": i.message} for i in infos]

    def human() -> None:
        for info in infos:
            click.echo(_commit_line(info))

    emit(data, as_json, human)


@main.command()
@click.argument("commit")
@click.option("--actor", help="Who is reverting (default: the local user).")
@namespace_option
@json_option
def revert(commit: str, actor: str | None, namespace: str | None, as_json: bool) -> None:
    """Undo one commit with a new commit; refuses (and changes nothing) if it would conflict."""
    result = service().revert(ns_name(namespace), commit, actor=actor_of(actor))
    emit(result.to_dict(), as_json, lambda: click.echo(f"{result.outcome}: {result.commit or commit}"))


@main.command()
@click.argument("memory_id")
@click.argument("commit")
@click.option("--actor", help="Who is restoring (default: the local user).")
@namespace_option
@json_option
def restore(memory_id: str, commit: str, actor: str | None, namespace: str | None, as_json: bool) -> None:
    """Bring a memory back to how it was at COMMIT (see `gitmem log MEMORY_ID`)."""
    result = service().restore(ns_name(namespace), memory_id, commit, actor=actor_of(actor))
    emit(result.to_dict(), as_json, lambda: click.echo(f"{result.outcome}: {memory_id}"))


@main.command()
@namespace_option
@json_option
def status(namespace: str | None, as_json: bool) -> None:
    """Counts by state, type and potency tier."""
    data = service().status(ns_name(namespace))

    def human() -> None:
        click.echo(f"namespace {data['namespace']} at {data['head'][:10]}: {plural(data['total'], 'memory')}")
        click.echo("  " + "  ".join(f"{k} {v}" for k, v in data["by_state"].items()))
        click.echo("  tiers: " + "  ".join(f"{k} {v}" for k, v in data["by_tier"].items()))
        click.echo("  " + "  ".join(f"{k} {v}" for k, v in data["by_type"].items() if v))
        if data["pending_uses"]:
            click.echo(f"  {plural(data['pending_uses'], 'use')} not yet folded into the files")
        for path, reason in data["malformed"].items():
            click.echo(f"  malformed: {path}: {reason}")
        for name, mirror in data.get("mirrors", {}).items():
            state = {True: "ok", False: "failing", None: "not pushed yet"}[mirror["ok"]]
            behind = ", behind" if mirror["behind"] else ""
            error = f": {mirror['error']}" if mirror.get("error") else ""
            click.echo(f"  mirror {name} ({mirror['url']}): {state}{behind}{error}")

    emit(data, as_json, human)


@main.command()
@click.option("--format", "fmt", type=click.Choice(["memory-md", "okf", "json", "graph"]), default="memory-md",
              show_default=True,
              help="MEMORY.md index for agents, an OKF folder, JSON, or the memory graph (one HTML file).")
@click.option("--output", "-o", type=click.Path(path_type=Path),
              help="File (memory-md, json, graph) or empty folder (okf) to write; default standard output.")
@namespace_option
def export(fmt: str, output: Path | None, namespace: str | None) -> None:
    """Export a namespace for agents and other tools."""
    if fmt == "okf" and output is None:
        raise click.UsageError("--format okf needs --output FOLDER")
    result = service().export(ns_name(namespace), fmt, output if fmt == "okf" else None)
    if fmt == "okf":
        click.echo(f"wrote {result}")
    elif output is not None:
        try:
            output.write_text(result, encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(f"cannot write {output}: {exc.strerror}; give a file you can create") from None
        click.echo(f"wrote {output}")
    else:
        click.echo(result, nl=False)


@main.command()
@click.argument("files", nargs=-1)
@click.option("--query", "-q", default="", help="What the agent is about to do.")
@click.option("--limit", "-l", type=click.IntRange(1, 200), default=20, show_default=True)
@click.option("--repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Read a clone of the memory repository (e.g. from `git clone`) instead of a namespace.")
@namespace_option
@json_option
def context(files: tuple[str, ...], query: str, limit: int, repo: Path | None, namespace: str | None,
            as_json: bool) -> None:
    """Print the memory block an agent should load for FILES: memories about them first.

    \b
    Example (an agent hook): gitmem context --repo ~/team-memory src/app.ts package.json
    """  # noqa: D301 - click's \b marker is a real backspace; r""" breaks it
    if repo is not None:
        name, label, record = service().attach(repo), repo.resolve().name, False
    else:
        name = ns_name(namespace)
        label, record = name, True
    # The files' imports and their project's manifests show the frameworks in use, when they are here.
    heads = service().file_heads(Path.cwd(), list(files)) if files else None
    text = service().context(name, list(files), query, limit, record=record, label=label, heads=heads)
    emit({"namespace": label, "files": list(files), "context": text}, as_json, lambda: click.echo(text, nl=False))


@main.command()
@namespace_option
@json_option
def fold(namespace: str | None, as_json: bool) -> None:
    """Fold recorded uses (from recall) into the memory files in one commit."""
    commit = service().fold_usage(ns_name(namespace))
    emit({"commit": commit}, as_json, lambda: click.echo(f"folded: {commit}" if commit else "no uses to fold"))


@main.command()
@click.argument("memory_id")
@click.argument("action", type=click.Choice(FEEDBACK_ACTIONS))
@click.argument("text", required=False)
@click.option("--actor", help="Who gives the feedback (default: the local user).")
@namespace_option
@json_option
def feedback(memory_id: str, action: str, text: str | None, actor: str | None, namespace: str | None,
             as_json: bool) -> None:
    """Confirm, reject (TEXT: why), discuss (TEXT: the comment) or amend (TEXT: the new text) a memory.

    The same feedback as the webhook, the pages and Slack: an amendment from someone the policy
    does not let change main directly opens a review.
    """
    result = service().feedback(ns_name(namespace), memory_id, action, actor=actor_of(actor), text=text)

    def human() -> None:
        if result.review is not None:
            click.echo(f"{action}: {memory_id}: opened review #{result.review} (`gitmem review show {result.review}`)")
        else:
            click.echo(f"{action}: {memory_id}" + (f" in {result.commit[:10]}" if result.commit else " (no change)"))

    emit(result.to_dict(), as_json, human)


@main.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(["okf", "pi-memory-spaced", "basic-memory", "mem0"]))
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--dry-run", is_flag=True, help="Report what the import would do; write nothing.")
@click.option("--actor", help="Who imports (default: the local user); the commit names them.")
@namespace_option
@json_option
def import_command(fmt: str, path: Path, dry_run: bool, actor: str | None, namespace: str | None,
                   as_json: bool) -> None:
    """Import another memory store at PATH, in one commit that `gitmem revert` undoes whole.

    FORMAT is okf (a pi-okf-memory folder: type folders, .meta/weights.json), pi-memory-spaced
    (its memory-store.json), basic-memory (a project folder of notes with [[wiki links]]) or
    mem0 (a JSON export of memories). Every item goes through the write gate: text already
    stored is skipped (so running it twice changes nothing), near-duplicates merge, a bad item
    is refused with the reason and the rest go on. Creates the namespace if needed.

    \b
    Example: gitmem import okf ~/.pi/agent/okf-memory --dry-run
    """  # noqa: D301 - click's \b marker is a real backspace; r""" breaks it
    name = ns_name(namespace)
    files = service().import_source(fmt, path)
    report = service().import_memories(name, fmt, files, dry_run=dry_run, actor=actor_of(actor),
                                       origin=path.resolve().name, create=True)

    def human() -> None:
        counts = report.counts()
        done = "would import" if dry_run else "imported"
        into = name + ((" (a new namespace it would create)" if dry_run else " (a new namespace)")
                       if report.new_namespace else "")
        click.echo(f"{done} {plural(len(report.items), fmt + ' item')} into {into}: "
                   + ", ".join(f"{n} {outcome}" for outcome, n in counts.items())
                   + (f" (commit {report.commit[:10]}; `gitmem revert {report.commit[:10]}` undoes it)"
                      if report.commit else ""))
        for item in report.items:
            if item.outcome != "added" or item.note:
                why = "; ".join(part for part in (item.reason, item.note) if part)
                click.echo(f"  {item.outcome:<10} {item.label}" + (f": {why}" if why else ""))

    emit(report.to_dict(), as_json, human)
