"""``gitmem agent install|hook``: wire a coding agent (Claude Code, Cursor, Codex) to the team's memory."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..agents import CLIENTS, KEY_VARIABLE, Target, hook_folder, hook_output, hook_transcript
from ..errors import GitmemError, InvalidInput, Unavailable
from ..wording import plural

if TYPE_CHECKING:
    import httpx
from .base import emit, json_option, main, namespace_option, ns_name, service, settings
from .credential import read_keys, save_key

HOOK_INPUT_LIMIT = 1 << 20  # what a hook reads of the JSON its client sends
HOOK_TIMEOUT = 10.0  # seconds the hook waits for a gitmem server


@main.group()
def agent() -> None:
    """Connect a coding agent to gitmem: its MCP entry and a hook that loads memories at session start."""


@agent.command("install")
@click.argument("client", type=click.Choice(CLIENTS))
@click.option("--url", metavar="URL", help="A gitmem server (http://host:8000) instead of `gitmem mcp` here.")
@click.option("--key", metavar="KEY", help="The API key for --url (from `gitmem key create`).")
@click.option("--project", "project", type=click.Path(file_okay=False, path_type=Path),
              help="Write the project's files in this folder (.mcp.json, .cursor/, .codex/) instead of your own.")
@click.option("--print", "dry_run", is_flag=True, help="Show what would be written; write nothing.")
@click.option("--ingest", is_flag=True,
              help="claude-code: also a session-end hook that ingests the session into pending memories.")
@namespace_option
@json_option
def install(client: str, url: str | None, key: str | None, project: Path | None, dry_run: bool, ingest: bool,
            namespace: str | None, as_json: bool) -> None:
    """Write CLIENT's MCP entry for gitmem and a session-start hook that loads `gitmem context`.

    CLIENT is claude-code, cursor or codex. Without --url the agent runs `gitmem mcp` on this
    machine's $GITMEM_HOME; with --url and --key it talks to `gitmem serve` at /mcp. The hook
    runs `gitmem agent hook CLIENT`, which prints the memories about the files changed in the
    project the session starts in. Other entries of the files are kept; a file that changes is
    first copied to FILE.gitmem-backup-TIME; a second run changes nothing.

    \b
    Example: gitmem agent install claude-code --namespace team
             gitmem agent install cursor --url http://memory:8000 --key gmk_... --print
    """  # noqa: D301 - click's \b marker is a real backspace; r""" breaks it
    config = settings()
    target = Target(client=client, home=Path.home(), project=None if project is None else project.resolve(),
                    url=url, key=key, namespace=None if namespace is None else ns_name(namespace),
                    command=(sys.executable, "-m", "gitmem"),
                    gitmem_home=None if url else str(config.home.resolve()), ingest=ingest)
    files = service().agent_install(target, dry_run=dry_run)
    saved = None
    if key is not None and url is not None and not dry_run:
        saved = save_key(url.strip().rstrip("/").removesuffix("/mcp"), key.strip())
    notes = []
    if key is not None and (project is not None or client == "codex"):
        notes.append(f"the MCP entry reads the key from ${KEY_VARIABLE}: export {KEY_VARIABLE}=... where {client} "
                     "runs")
    if url is not None and key is None:
        notes.append(f"no --key: the server answers /mcp only with a key; give one, or set ${KEY_VARIABLE}")
    if client == "codex":
        notes.append("Codex runs hooks only with [features] codex_hooks = true in its config.toml (set by this "
                     "install)")

    def human() -> None:
        for f in files:
            if dry_run:
                click.echo(f"# {f.path} ({f.purpose}{'' if f.changed else ', unchanged'})")
                click.echo(f.after, nl=False)
            else:
                backup = f" (backup: {f.backup})" if f.backup else ""
                click.echo(f"{f.outcome}: {f.path}{backup}")
        if saved is not None:
            click.echo(f"key for the hook kept in {saved}")
        for note in notes:
            click.echo(f"note: {note}", err=True)

    emit({"client": client, "dry_run": dry_run, "files": [f.to_dict() for f in files],
          "key_file": None if saved is None else str(saved), "notes": notes}, as_json, human)


@agent.command("hook")
@click.argument("client", type=click.Choice(CLIENTS))
@click.option("--url", metavar="URL", help="Ask this gitmem server (key: $GITMEM_KEY or the one install kept).")
@click.option("--limit", "-l", type=click.IntRange(1, 200), default=20, show_default=True)
@click.option("--ingest", is_flag=True,
              help="The session-end hook instead: ingest the transcript the client names (claude-code).")
@namespace_option
def hook(client: str, url: str | None, limit: int, ingest: bool, namespace: str | None) -> None:
    """The session-start hook: print the memories for the files in play, as CLIENT's hook expects.

    Reads the JSON the client sends on standard input for the project folder, finds the files
    changed there (or in the last commit), and prints `gitmem context` for them. It never stops
    a session: when memories cannot be loaded it says why on standard error and prints nothing.
    With --ingest it is Claude Code's session-end hook: the session's transcript goes to
    ingestion (this machine's, or the server's with --url), to become pending memories.
    """
    raw = "" if sys.stdin.isatty() else sys.stdin.read(HOOK_INPUT_LIMIT)
    if ingest:
        try:
            click.echo(_ingest_session(client, raw, url, ns_name(namespace)), err=True)
        except (GitmemError, OSError) as exc:
            click.echo(f"gitmem: the session was not ingested: {exc}", err=True)
        return
    folder = hook_folder(raw, Path.cwd())
    name = ns_name(namespace)
    try:
        files = service().files_in_play(folder)
        text = _remote_context(url, name, files, limit) if url else service().context(name, files, "", limit)
    except (GitmemError, OSError) as exc:
        click.echo(f"gitmem: no memories loaded: {exc}", err=True)
        return
    click.echo(hook_output(client, text))


def _ingest_session(client: str, raw: str, url: str | None, namespace: str) -> str:
    """Send a finished session's transcript to ingestion; a line saying what was taken."""
    from .. import transcripts

    if client != "claude-code":
        raise InvalidInput(f"--ingest reads Claude Code's session files, not {client}'s")
    path, session = hook_transcript(raw)
    read = transcripts.read(path.read_text(encoding="utf-8").splitlines())
    conversation = transcripts.conversation_id(session or read.conversation or path.stem)
    messages = [{k: v for k, v in m.items() if k != "line"} for m in read.messages]
    if url is None:
        done = service().ingest(namespace, conversation, messages, source="claude-code", meta=read.meta, flush=True)
        added = done.accepted.added if done.accepted else 0
        return f"gitmem: {plural(added, 'new message')} of session {conversation} ingested"
    base = url.strip().rstrip("/").removesuffix("/mcp")
    key = os.environ.get(KEY_VARIABLE) or read_keys().get(base)
    if not key:
        raise InvalidInput(f"no key for {base}: set ${KEY_VARIABLE} or run `gitmem agent install ... --key`")
    added = 0
    for start in range(0, len(messages), 1000):
        last = start + 1000 >= len(messages)
        response = _http("POST", base, f"/api/v1/namespaces/{namespace}/conversations/{conversation}/messages",
                         json={"messages": messages[start : start + 1000], "flush": last},
                         headers={"Authorization": f"Bearer {key}"})
        if response.status_code != 202:
            raise InvalidInput(f"{base} answered {response.status_code}: {response.text[:200]}")
        added += int(response.json().get("added", 0))
    return f"gitmem: {plural(added, 'new message')} of session {conversation} sent to {base}"


def _remote_context(url: str, namespace: str, files: list[str], limit: int) -> str:
    base = url.strip().rstrip("/").removesuffix("/mcp")
    key = os.environ.get(KEY_VARIABLE) or read_keys().get(base)
    if not key:
        raise InvalidInput(f"no key for {base}: set ${KEY_VARIABLE} or run `gitmem agent install ... --key`")
    params: list[tuple[str, str | int | float | bool | None]] = [("file", f) for f in files]
    response = _http("GET", base, f"/api/v1/namespaces/{namespace}/context", params=[*params, ("limit", limit)],
                     headers={"Authorization": f"Bearer {key}", "Accept": "text/markdown"})
    if response.status_code != 200:
        try:
            message = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = response.text[:200]
        raise InvalidInput(f"{base} answered {response.status_code}: {message}")
    return response.text


def _http(method: str, base: str, path: str, **kwargs: Any) -> httpx.Response:
    """One request to a gitmem server; one that does not answer is :class:`Unavailable` (httpx loads here)."""
    import httpx

    try:
        return httpx.request(method, f"{base}{path}", timeout=HOOK_TIMEOUT, **kwargs)
    except httpx.HTTPError as exc:
        raise Unavailable(f"{base} did not answer: {exc}") from exc
