"""Reading conversation transcripts into messages for ingestion (no I/O: lines in, messages out).

Two formats, told apart by their lines:

- JSON Lines of messages, one object per line: ``{"id", "role", "author", "text", "time"}``
  (only ``text`` is required; see :func:`gitmem.ingest.check_message`).
- Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``) read as they are:
  the people's prompts and the assistant's text replies are kept; tool calls, tool results (file
  contents, command output), thinking, slash-command echoes and bookkeeping lines are skipped.
  The conversation is the session id; the working directory and branch go with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidInput

#: What Claude Code puts in a "user" turn that no person typed.
_MACHINE = re.compile(r"^\s*<(?:command-name|command-message|command-args|local-command-stdout|system-reminder|"
                      r"user-prompt-submit-hook|bash-input|bash-stdout|bash-stderr)>")
_UNSAFE = re.compile(r"[^\w.:@+-]")


@dataclass
class Transcript:
    """A transcript's messages, the conversation id it names (if any), its format and context."""

    format: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    conversation: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    skipped: int = 0


def conversation_id(name: str) -> str:
    """``name`` made into a conversation id (unsafe characters become ``-``, at most 200)."""
    return _UNSAFE.sub("-", name).strip("-")[:200] or "conversation"


def read(lines: Iterable[str], *, author: str | None = None) -> Transcript:
    """Parse a transcript; ``author`` names the person behind a Claude Code session's prompts.

    Raises :class:`InvalidInput` naming the line for a line that is not JSON, and when nothing
    in the file is a message.
    """
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except (ValueError, RecursionError) as exc:
            raise InvalidInput(f"line {number} is not JSON ({type(exc).__name__}); a transcript is JSON Lines: "
                               "one message object per line, or a Claude Code session file") from None
    if not rows:
        raise InvalidInput("the transcript is empty")
    claude = any(isinstance(r, dict) and "sessionId" in r and r.get("type") in ("user", "assistant")
                 for _, r in rows)
    found = _claude_code(rows, author) if claude else _plain(rows)
    if not found.messages:
        raise InvalidInput("the transcript holds no message with text to read")
    return found


def _plain(rows: list[tuple[int, Any]]) -> Transcript:
    out = Transcript("jsonl")
    for number, row in rows:
        if not isinstance(row, dict):
            raise InvalidInput(f"line {number} is not a message object")
        out.messages.append({"line": number, **row})
    return out


def _claude_code(rows: list[tuple[int, Any]], author: str | None) -> Transcript:
    out = Transcript("claude-code")
    for _, row in rows:
        if not isinstance(row, dict) or row.get("type") not in ("user", "assistant") or row.get("isMeta"):
            out.skipped += 1
            continue
        if out.conversation is None and isinstance(row.get("sessionId"), str):
            out.conversation = conversation_id(row["sessionId"])
            out.meta = {k: row[k] for k in ("cwd", "gitBranch", "version") if isinstance(row.get(k), str) and row[k]}
        message = row.get("message")
        text = _text(message.get("content")) if isinstance(message, dict) else ""
        if not text or (row["type"] == "user" and _MACHINE.match(text)):
            out.skipped += 1
            continue
        item: dict[str, Any] = {"text": text, "role": "user" if row["type"] == "user" else "assistant"}
        if isinstance(row.get("uuid"), str):
            item["id"] = row["uuid"]
        if isinstance(row.get("timestamp"), str):
            item["time"] = row["timestamp"]
        if item["role"] == "user" and author:
            item["author"] = author
        out.messages.append(item)
    return out


def _text(content: Any) -> str:
    """The typed text of a message's content: a string, or the ``text`` parts of a list."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str) and p.strip()).strip()
    return ""
