"""``gitmem ingest``: a conversation transcript into pending memories; ``gitmem conversations``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import transcripts
from ..errors import InvalidInput
from ..service import Accepted, Ingested
from ..wording import plural
from .base import emit, json_option, main, namespace_option, ns_name, service


@main.command()
@click.argument("transcript", required=False)
@click.option("--conversation", "-c", help="Conversation id (default: a Claude Code session's id, else the file name).")
@click.option("--author", help="Who typed a Claude Code session's prompts (its files do not say).")
@click.option("--no-flush", is_flag=True,
              help="Leave the last messages buffered until the conversation goes on or falls idle.")
@click.option("--flush", "flush_only", is_flag=True,
              help="Without TRANSCRIPT: seal every conversation's buffer now and distil what is due.")
@namespace_option
@json_option
def ingest(transcript: str | None, conversation: str | None, author: str | None, no_flush: bool, flush_only: bool,
           namespace: str | None, as_json: bool) -> None:
    """Read a conversation and extract what it says worth remembering, as pending memories.

    TRANSCRIPT is JSON Lines of messages ({"id", "role", "author", "text", "time"}, only text
    required) or a Claude Code session file (~/.claude/projects/*/*.jsonl), or - for standard
    input. Messages are buffered per conversation and distilled every GITMEM_INGEST_FLUSH_TOKENS
    tokens, here (or on the workers when a broker is configured), one commit per buffer.
    Sending the same messages again takes nothing twice.
    """
    name = ns_name(namespace)
    svc = service()
    if transcript is None:
        if not flush_only:
            raise InvalidInput("give a transcript file (or - for standard input), or --flush")
        done = svc.flush(name)
        emit(done.to_dict(), as_json, lambda: _report(done, name))
        return
    if flush_only:
        raise InvalidInput("--flush goes without a transcript (a transcript is flushed anyway, unless --no-flush)")
    read = _read(transcript, author)
    label = conversation or read.conversation or transcripts.conversation_id(
        "stdin" if transcript == "-" else Path(transcript).stem)
    source = "claude-code" if read.format == "claude-code" else "cli"
    messages = [{k: v for k, v in m.items() if k != "line"} for m in read.messages]
    done = Ingested(None)
    for start in range(0, len(messages), 500):
        batch = messages[start : start + 500]
        last = start + 500 >= len(messages)
        step = svc.ingest(name, label, batch, source=source, meta=read.meta, flush=last and not no_flush)
        done = Ingested(step.accepted if done.accepted is None else _sum(done, step),
                        done.distilled + step.distilled, done.queued + step.queued)
    emit({**done.to_dict(), "format": read.format, "skipped_lines": read.skipped}, as_json,
         lambda: _report(done, name, read.format, read.skipped))


def _read(transcript: str, author: str | None) -> transcripts.Transcript:
    if transcript == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(transcript).read_bytes()
        except OSError as exc:
            raise InvalidInput(f"cannot read {transcript}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{transcript} is not valid UTF-8 (byte {exc.start})") from None
    return transcripts.read(text.splitlines(), author=author)


def _sum(done: Ingested, step: Ingested) -> Accepted:
    a, b = done.accepted, step.accepted
    assert a is not None and b is not None
    return Accepted(a.conversation, a.added + b.added, a.repeated + b.repeated, a.masked + b.masked,
                    a.sealed + b.sealed, b.active_tokens)


def _report(done: Ingested, namespace: str, fmt: str | None = None, skipped: int = 0) -> None:
    a = done.accepted
    if a is not None:
        more = f", {a.repeated} seen before" if a.repeated else ""
        more += f", {a.masked} secrets masked" if a.masked else ""
        more += f" ({fmt}; {plural(skipped, 'line')} of tool output and bookkeeping skipped)" if skipped else ""
        click.echo(f"conversation {a.conversation}: {plural(a.added, 'new message')}{more}")
    for d in done.distilled:
        if d.outcome == "failed":
            click.echo(f"buffer {d.buffer[:12]}: not distilled, kept to try again later: {d.error}")
        elif d.outcome in ("written", "nothing"):
            counts = ", ".join(f"{n} {k}" for k, n in d.counts.items() if n) or "nothing to remember"
            commit = f" in commit {d.commit[:10]}" if d.commit else ""
            click.echo(f"buffer {d.buffer[:12]}: {counts}{commit}")
            for item in d.items:
                why = f" ({item.reason})" if item.reason else ""
                click.echo(f"  {item.outcome:<10} {item.memory_id or '-':<10}  {item.label}{why}")
        else:
            click.echo(f"buffer {d.buffer[:12]}: {d.outcome}")
    if done.queued:
        click.echo(f"{plural(len(done.queued), 'buffer')} queued for the workers")
    if a is not None and a.active_tokens and not done.distilled and not done.queued:
        click.echo(f"{plural(a.active_tokens, 'token')} wait in the buffer (`gitmem ingest --flush` distils them now)")
    if any(d.commit for d in done.distilled):
        click.echo("pending memories are never given to agents until consolidation promotes them; "
                   f"`gitmem show ID --namespace {namespace}` shows one")


@main.command()
@namespace_option
@json_option
def conversations(namespace: str | None, as_json: bool) -> None:
    """Show ingestion: messages taken, repeats, masked secrets, buffers and their state."""
    name = ns_name(namespace)
    stats = service().ingest_status(name)

    def human() -> None:
        for key in ("messages", "repeated", "masked", "active_messages", "buffers_sealed", "buffers_claimed",
                    "buffers_done", "failures"):
            click.echo(f"{key.replace('_', ' '):<16} {stats.get(key, 0)}")
        for b in stats["recent"]:
            error = f"  ({b['error'][:80]})" if b["error"] else ""
            click.echo(f"{b['id'][:12]}  {b['state']:<8} {b['conversation'][:30]:<30} {b['messages']:>4} msgs "
                       f"{b['tokens']:>6} tok  {(b['commit'] or '')[:10]}{error}")

    emit(stats, as_json, human)
