"""Text in and out of Slack: escaping, actors, namespaces, and parsing what people type.

Pure functions, no I/O. Slack sends text with ``&``, ``<`` and ``>`` encoded as entities; gitmem
stores what the person typed, so incoming text is unescaped, and everything a memory says is
escaped again on the way out so that ``<!channel>`` or ``<@U123>`` inside a memory is shown as
text instead of pinging anyone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitmem.concepts import TYPES
from gitmem.settings import Settings

_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,20}$")
_ID_SHAPE = re.compile(r"^[0-9a-fA-F]{10}$")
# "remember:", "记住：", "记一下：", "请记住：" with an ASCII or full-width colon at the very start.
_SPOKEN = re.compile(r"^\s*(?:remember|记住|记一下|请记住)\s*[:：]\s*(?P<text>.*)\Z", re.IGNORECASE | re.DOTALL)
_TYPE_PREFIX = re.compile(r"^\s*(?P<type>[A-Za-z]+)\s*[:：]\s*(?P<rest>.*)\Z", re.DOTALL)

ACTOR_PREFIX = "slack:"
SECTION_LIMIT = 3000



def escape(text: str) -> str:
    """Escape text for Slack mrkdwn so markup and mentions in it are shown, not acted on."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    """Undo the entity encoding Slack applies to message and command text."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def clip(text: str, limit: int) -> str:
    """Shorten text to ``limit`` characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def actor(user_id: str) -> str:
    """The actor (and author) name gitmem records for a Slack user: ``slack:U123``."""
    return f"{ACTOR_PREFIX}{user_id}"


def person(name: str | None) -> str:
    """Show an actor in mrkdwn: a Slack user as a mention, anyone else as escaped text."""
    if not name:
        return "someone"
    if name.startswith(ACTOR_PREFIX) and _USER_ID.match(name[len(ACTOR_PREFIX):]):
        return f"<@{name[len(ACTOR_PREFIX):]}>"
    return escape(name)


def namespace_for(settings: Settings, channel_id: str | None) -> str:
    """The namespace a channel writes to: its entry in the mapping, else the default."""
    if channel_id and channel_id in settings.slack_channel_namespaces:
        return settings.slack_channel_namespaces[channel_id]
    return settings.default_namespace


def is_reviewer(settings: Settings, user_id: str) -> bool:
    """Whether the Slack user may approve or reject reviews."""
    return user_id in settings.slack_reviewers


def role_of(settings: Settings, user_id: str) -> str | None:
    """The feedback role of a Slack user: reviewers amend directly, others propose."""
    return "reviewer" if is_reviewer(settings, user_id) else None


def looks_like_id(value: str) -> bool:
    """Whether ``value`` has the shape of a memory id (10 hex characters)."""
    return bool(_ID_SHAPE.match(value))


def split_type(text: str) -> tuple[str | None, str]:
    """Split an optional leading ``type:`` off memory text (``decision: use pnpm``)."""
    found = _TYPE_PREFIX.match(text)
    if found and found.group("type").lower() in TYPES:
        return found.group("type").lower(), found.group("rest").strip()
    return None, text.strip()


def spoken(text: str) -> str | None:
    """The text after a spoken "remember:" / "记住：" command, or None if the message is not one."""
    found = _SPOKEN.match(text)
    return found.group("text").strip() if found else None


@dataclass(frozen=True)
class Command:
    """One parsed ``/mem`` command: the subcommand and its arguments."""

    name: str
    text: str = ""
    memory_id: str = ""
    type: str | None = None


class Usage(ValueError):
    """What was typed is not a command; the message says what to type instead."""


ALIASES = {"add": "remember", "search": "recall", "find": "recall", "reviews": "review", "?": "help"}
NAMES = ("remember", "recall", "amend", "forget", "status", "consolidate", "review", "watch", "unwatch", "watching",
         "help")
# Subcommands that take no argument.
BARE = ("status", "consolidate", "review", "watch", "unwatch", "watching", "help")


def parse_command(raw: str) -> Command:
    """Parse the text after ``/mem``; raise :class:`Usage` saying what to type when it is wrong."""
    text = unescape(raw or "").strip()
    if not text:
        return Command("help")
    head, _, rest = text.partition(" ")
    if "\n" in head:
        head, _, more = head.partition("\n")
        rest = more + " " + rest
    name = ALIASES.get(head.lower(), head.lower())
    rest = rest.strip()
    if name not in NAMES:
        raise Usage(f"I don't know `{escape(clip(head, 40))}`. Type `/mem help` to see the commands, "
                    "or `/mem remember your text` to store a memory.")
    if name == "remember":
        memory_type, body = split_type(rest)
        if not body:
            raise Usage("Nothing to remember. Type `/mem remember [type:] text`, "
                        "for example `/mem remember decision: we deploy on Tuesdays`.")
        return Command("remember", text=body, type=memory_type)
    if name == "recall":
        if not rest:
            raise Usage("Recall what? Type `/mem recall words to look for`.")
        return Command("recall", text=rest)
    if name in ("amend", "forget"):
        memory_id, _, body = rest.partition(" ")
        if not memory_id:
            raise Usage(f"Which memory? Type `/mem {name} ID` with the 10-character id "
                        "shown by `/mem recall`.")
        if not looks_like_id(memory_id):
            raise Usage(f"`{escape(clip(memory_id, 40))}` is not a memory id. Ids are 10 characters "
                        f"like `3f9a0c12be`; find one with `/mem recall`, then `/mem {name} ID`.")
        return Command(name, text=body.strip(), memory_id=memory_id.lower())
    if rest and name in BARE:
        raise Usage(f"`/mem {name}` takes nothing after it. Type `/mem {name}`.")
    return Command(name)
