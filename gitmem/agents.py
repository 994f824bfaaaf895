"""Agent hooks: the MCP entry and the session-start hook each coding agent reads from its own config.

``gitmem agent install claude-code|cursor|codex`` writes, in the files that client reads:

- **the MCP server entry**, ``gitmem mcp`` over stdio on this machine, or gitmem's ``/mcp`` over
  streamable HTTP with an API key (``--url``, ``--key``);
- **a session-start hook** that runs ``gitmem agent hook CLIENT``, which prints ``gitmem
  context`` for the files in play in the client's hook output format.

Where each client keeps them (user scope in the home folder; project scope in a project):

=============  ===================================  ========================================
client         MCP entry                            session-start hook
=============  ===================================  ========================================
claude-code    ``~/.claude.json`` / ``.mcp.json``   ``~/.claude/settings.json`` /
               (``mcpServers``)                     ``.claude/settings.json`` (``SessionStart``)
cursor         ``~/.cursor/mcp.json`` /             ``~/.cursor/hooks.json`` /
               ``.cursor/mcp.json``                 ``.cursor/hooks.json`` (``sessionStart``)
codex          ``~/.codex/config.toml`` /           ``~/.codex/hooks.json`` / ``.codex/hooks.json``
               ``.codex/config.toml``               (``SessionStart``), with ``[features]
               (``[mcp_servers.gitmem]``)           codex_hooks = true`` in ``config.toml``
=============  ===================================  ========================================

Every other entry of those files is kept as it was. A file that would change is first copied
to ``FILE.gitmem-backup-TIME`` beside it; a file that does not parse is reported and left alone,
and so is every other file of the same install (all files are checked before any is written).
Running it again changes nothing. A project's files never hold the key itself: they name the
``GITMEM_KEY`` environment variable, as each client documents.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import InvalidInput

CLIENTS = ("claude-code", "cursor", "codex")
SERVER = "gitmem"
KEY_VARIABLE = "GITMEM_KEY"
HOOK_MARK = "gitmem agent hook"  # how an installed hook is found again, to be replaced, not doubled
# Codex matches SessionStart on how the session began; Claude Code also starts after /compact.
_SOURCES = {"claude-code": "startup|resume|clear|compact", "codex": "startup|resume|clear"}
_TOML_HEADER = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]\s*(?:#.*)?$")


@dataclass(frozen=True)
class Target:
    """Where and how to install: the client, user or project scope, local or remote gitmem."""

    client: str
    home: Path  # the user's home folder (user scope)
    project: Path | None = None  # a project folder (project scope) instead of the home folder
    url: str | None = None  # a gitmem server; None: `gitmem mcp` on this machine
    key: str | None = None
    namespace: str | None = None
    command: tuple[str, ...] = ("gitmem",)  # how to run gitmem here (an absolute interpreter path)
    gitmem_home: str | None = None  # GITMEM_HOME for the local server, when it is not the default
    ingest: bool = False  # also a session-end hook that ingests the session's transcript (Claude Code)


@dataclass(frozen=True)
class AgentFile:
    """One config file of an install: its path, its text before and after, and what happened."""

    path: Path
    before: str | None  # None: the file did not exist
    after: str
    purpose: str  # "mcp", "hook" or "features"
    outcome: str = "planned"  # planned, written, unchanged
    backup: Path | None = None

    @property
    def changed(self) -> bool:
        """Whether the install changes the file."""
        return self.before != self.after

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: path, purpose, outcome, backup and the new text."""
        return {"path": str(self.path), "purpose": self.purpose, "outcome": self.outcome,
                "backup": None if self.backup is None else str(self.backup), "content": self.after}


def check_target(target: Target) -> Target:
    """Validate what was asked for: a known client, a key only with a URL, an http(s) URL."""
    if target.client not in CLIENTS:
        raise InvalidInput(f"unknown agent {target.client!r}; use one of: {', '.join(CLIENTS)}")
    if target.key is not None and not target.url:
        raise InvalidInput("--key goes with --url (a gitmem server); on this machine `gitmem mcp` needs no key")
    if target.ingest and target.client != "claude-code":
        raise InvalidInput("--ingest is for claude-code, whose session files gitmem reads; "
                           f"{target.client}'s transcripts are not read yet")
    if target.url is not None:
        url = target.url.strip().rstrip("/")
        if not re.match(r"^https?://[^\s/]+(/\S*)?$", url):
            raise InvalidInput(f"--url {target.url!r} is not an http(s) address like http://127.0.0.1:8000")
        if url.endswith("/mcp"):
            url = url[: -len("/mcp")]
        key = None if target.key is None else target.key.strip()
        if key is not None and (not key or any(c.isspace() for c in key)):
            raise InvalidInput("--key is empty or holds spaces; paste the key `gitmem key create` printed")
        return replace(target, url=url, key=key)
    return target


# --- what each client's files say ------------------------------------------------------------


def _paths(target: Target) -> dict[str, Path]:
    root = target.project if target.project is not None else target.home
    project = target.project is not None
    if target.client == "claude-code":
        return {"mcp": root / (".mcp.json" if project else ".claude.json"),
                "hook": root / ".claude" / "settings.json"}
    if target.client == "cursor":
        return {"mcp": root / ".cursor" / "mcp.json", "hook": root / ".cursor" / "hooks.json"}
    return {"mcp": root / ".codex" / "config.toml", "hook": root / ".codex" / "hooks.json"}


def _key_reference(target: Target) -> str | None:
    """The key as the MCP entry carries it: itself in a user's own file, a variable in a project's."""
    if target.key is None:
        return None
    if target.project is None:
        return target.key
    return "${env:" + KEY_VARIABLE + "}" if target.client == "cursor" else "${" + KEY_VARIABLE + "}"


def mcp_entry(target: Target) -> dict[str, Any]:
    """The client's MCP server entry for gitmem (JSON clients; Codex's TOML is written from it)."""
    if target.url is not None:
        entry: dict[str, Any] = {"url": f"{target.url}/mcp"}
        if target.client == "claude-code":
            entry = {"type": "http", **entry}
        if target.client == "codex":
            if target.key is not None:
                entry["bearer_token_env_var"] = KEY_VARIABLE  # Codex takes a bearer token from a variable
        elif target.key is not None:
            entry["headers"] = {"Authorization": f"Bearer {_key_reference(target)}"}
        return entry
    args = [*target.command[1:], "mcp"]
    if target.namespace:
        args += ["--namespace", target.namespace]
    entry = {"command": target.command[0], "args": args}
    if target.gitmem_home:
        entry["env"] = {"GITMEM_HOME": target.gitmem_home}
    return entry


def hook_command(target: Target) -> str:
    """The shell command the session-start hook runs."""
    words = [*target.command, "agent", "hook", target.client]
    if target.namespace:
        words += ["--namespace", target.namespace]
    if target.url is not None:
        words += ["--url", target.url]
    command = " ".join(shlex.quote(w) for w in words)
    if target.gitmem_home and target.url is None:
        command = f"GITMEM_HOME={shlex.quote(target.gitmem_home)} {command}"
    return command


def ingest_command(target: Target) -> str:
    """The shell command the session-end hook runs: the session's transcript into pending memories."""
    return hook_command(target).replace(" hook claude-code", " hook claude-code --ingest", 1)


def _load_json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}); fix or move it, then run "
                           "this again (nothing was changed)") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; fix or move it (nothing was changed)")
    return data


def _object(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise InvalidInput(f"{path}: {key!r} is not an object; fix it, then run this again (nothing was changed)")
    return value


def _list(data: dict[str, Any], key: str, path: Path) -> list[Any]:
    value = data.setdefault(key, [])
    if not isinstance(value, list):
        raise InvalidInput(f"{path}: {key!r} is not a list; fix it, then run this again (nothing was changed)")
    return value


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _with_mcp_json(path: Path, text: str | None, entry: dict[str, Any]) -> str:
    data = _load_json(path, text)
    _object(data, "mcpServers", path)[SERVER] = entry
    return _dump(data) if data != _load_json(path, text) or text is None else str(text)


def _ours(hook: Any) -> bool:
    return isinstance(hook, dict) and HOOK_MARK in str(hook.get("command", ""))


def _with_nested_hook(path: Path, text: str | None, event: str, matcher: str, command: str,
                      timeout: int | None) -> str:
    """Claude Code's and Codex's shape: hooks.EVENT[] = {matcher, hooks: [{type, command}]}."""
    data = _load_json(path, text)
    groups = _list(_object(data, "hooks", path), event, path)
    handler: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        handler["timeout"] = timeout
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(inner, list) and any(_ours(h) for h in inner):
            group["matcher"] = matcher
            group["hooks"] = [handler if _ours(h) else h for h in inner]
            break
    else:
        groups.append({"matcher": matcher, "hooks": [handler]})
    return _dump(data) if data != _load_json(path, text) or text is None else str(text)


def _with_cursor_hook(path: Path, text: str | None, command: str) -> str:
    """Cursor's shape: {version: 1, hooks: {sessionStart: [{command}]}}."""
    data = _load_json(path, text)
    data.setdefault("version", 1)
    entries = _list(_object(data, "hooks", path), "sessionStart", path)
    handler = {"command": command}
    for i, entry in enumerate(entries):
        if _ours(entry):
            entries[i] = handler
            break
    else:
        entries.append(handler)
    return _dump(data) if data != _load_json(path, text) or text is None else str(text)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string is a JSON string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {value!r}")


def _load_toml(path: Path, text: str | None) -> dict[str, Any]:
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{path} is not valid TOML ({exc}); fix or move it, then run this again "
                           "(nothing was changed)") from None


def _tables(lines: Sequence[str]) -> list[tuple[int, str]]:
    """(line number, name) of each ``[table]`` header; array tables ``[[x]]`` count as boundaries too."""
    out = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("[["):
            out.append((i, "[[" + stripped))
        else:
            match = _TOML_HEADER.match(line)
            if match:
                out.append((i, "".join(match.group(1).split())))
    return out


def _set_toml_table(path: Path, text: str | None, table: str, values: dict[str, Any], *,
                    replace: bool) -> str:
    """``text`` with ``[table]`` holding ``values``: the whole table replaced, or only those keys set.

    Edits lines so the user's comments and layout elsewhere stay as they were; the result is
    parsed again to make sure it says what was meant.
    """
    before = _load_toml(path, text)
    lines = (text or "").splitlines()
    headers = _tables(lines)
    start = next((i for i, name in headers if name == table), None)
    body = [f"{k} = {_toml_value(v)}" for k, v in values.items()]
    if start is None:
        dotted = table.split(".")
        node: Any = before
        for part in dotted:
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            raise InvalidInput(f"{path} defines [{table}] in a form this installer does not edit (dotted keys or "
                               f"an inline table); move it into a [{table}] table and run this again")
        block = ([""] if lines and lines[-1].strip() else []) + [f"[{table}]", *body]
        new_lines = lines + block
    else:
        end = next((i for i, _ in headers if i > start), len(lines))
        section = lines[start + 1:end]
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1  # keep the blank lines before the next table
            section = lines[start + 1:end]
        if replace:
            kept: list[str] = [line for line in section if line.strip().startswith("#")]
        else:
            names = set(values)
            kept = [line for line in section
                    if line.split("=", 1)[0].strip().strip('"') not in names or "=" not in line]
        new_lines = lines[:start + 1] + kept + body + lines[end:]
    result = "\n".join(new_lines) + "\n"
    after = _load_toml(path, result)
    node = after
    for part in table.split("."):
        node = node[part]
    if any(node.get(k) != v for k, v in values.items()) or (replace and set(node) != set(values)):
        raise InvalidInput(f"{path}: could not set [{table}] safely; add it by hand: " + "; ".join(body))
    return result if result != text else str(text)


def plan(target: Target, read: Callable[[Path], str | None]) -> list[AgentFile]:
    """The files an install writes, with their text before and after; ``read`` gives a file's text or None.

    Raises :class:`~gitmem.errors.InvalidInput`, naming the file, when one does not parse.
    """
    target = check_target(target)
    paths = _paths(target)
    command = hook_command(target)
    files: list[AgentFile] = []
    mcp_path, hook_path = paths["mcp"], paths["hook"]
    mcp_before, hook_before = read(mcp_path), read(hook_path)
    entry = mcp_entry(target)
    if target.client == "codex":
        mcp_after = _set_toml_table(mcp_path, mcp_before, f"mcp_servers.{SERVER}", entry, replace=True)
        # Codex runs hooks only with this feature on (its hooks are experimental).
        mcp_after = _set_toml_table(mcp_path, mcp_after, "features", {"codex_hooks": True}, replace=False)
        hook_after = _with_nested_hook(hook_path, hook_before, "SessionStart", _SOURCES["codex"], command, 30)
    elif target.client == "cursor":
        mcp_after = _with_mcp_json(mcp_path, mcp_before, entry)
        hook_after = _with_cursor_hook(hook_path, hook_before, command)
    else:
        mcp_after = _with_mcp_json(mcp_path, mcp_before, entry)
        hook_after = _with_nested_hook(hook_path, hook_before, "SessionStart", _SOURCES["claude-code"], command, 30)
        if target.ingest:
            hook_after = _with_nested_hook(hook_path, hook_after, "SessionEnd", "", ingest_command(target), 120)
    files.append(AgentFile(mcp_path, mcp_before, mcp_after, "mcp"))
    files.append(AgentFile(hook_path, hook_before, hook_after, "hook"))
    return files


# --- writing, with a backup of what was there ---------------------------------------------------


def read_file(path: Path) -> str | None:
    """A config file's text, or None when there is none."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text; fix or move it (nothing was changed)") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from None


def _backup_path(path: Path, at: datetime) -> Path:
    stamp = at.strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}.gitmem-backup-{stamp}")
    n = 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.gitmem-backup-{stamp}-{n}")
    return candidate


def _write_atomically(path: Path, text: str, mode: int | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def install(target: Target, *, dry_run: bool = False) -> list[AgentFile]:
    """Plan the install and, unless ``dry_run``, write every changed file after backing it up.

    All files are planned (so all are checked) before the first is written.
    """
    files = plan(target, read_file)
    if dry_run:
        return files
    at = datetime.now(UTC)
    done: list[AgentFile] = []
    for f in files:
        if not f.changed:
            done.append(AgentFile(f.path, f.before, f.after, f.purpose, "unchanged"))
            continue
        backup = None
        mode = None
        try:
            if f.before is not None:
                backup = _backup_path(f.path, at)
                mode = f.path.stat().st_mode & 0o777
                _write_atomically(backup, f.before, mode)
            elif target.key is not None and target.project is None:
                mode = 0o600  # a new file of the user's holding the key: theirs alone
            else:
                mode = 0o644
            _write_atomically(f.path, f.after, mode)
        except OSError as exc:
            raise InvalidInput(f"cannot write {f.path}: {exc.strerror}"
                               + (f" (its backup is {backup})" if backup else "")) from None
        done.append(AgentFile(f.path, f.before, f.after, f.purpose, "written", backup))
    return done


# --- the hook's output ---------------------------------------------------------------------------


def hook_output(client: str, context: str) -> str:
    """What the session-start hook prints: the context block in the client's hook output format.

    Claude Code and Codex read ``hookSpecificOutput.additionalContext``; Cursor reads
    ``additional_context``.
    """
    if client == "cursor":
        return json.dumps({"additional_context": context}, ensure_ascii=False)
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}},
                      ensure_ascii=False)


def hook_transcript(stdin_text: str) -> tuple[Path, str | None]:
    """The transcript file and session id Claude Code names in a session-end hook's input.

    Raises :class:`~gitmem.errors.InvalidInput` when the input names no transcript.
    """
    try:
        data = json.loads(stdin_text) if stdin_text.strip() else {}
    except json.JSONDecodeError:
        data = {}
    path = data.get("transcript_path") if isinstance(data, dict) else None
    if not isinstance(path, str) or not path.strip():
        raise InvalidInput("the hook's input names no transcript_path (run it as Claude Code's SessionEnd hook)")
    session = data.get("session_id")
    return Path(path).expanduser(), session if isinstance(session, str) and session.strip() else None


def hook_folder(stdin_text: str, default: Path) -> Path:
    """The project folder a hook runs for, from the JSON the client sends on standard input.

    Claude Code and Codex send ``cwd``; Cursor sends ``workspace_roots``. Anything else (no
    input, not JSON) means the folder the hook was started in.
    """
    try:
        data = json.loads(stdin_text) if stdin_text.strip() else {}
    except json.JSONDecodeError:
        return default
    if not isinstance(data, dict):
        return default
    roots = data.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        return Path(roots[0])
    cwd = data.get("cwd")
    return Path(cwd) if isinstance(cwd, str) and cwd else default
