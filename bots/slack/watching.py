"""Watched channels: ``/mem watch``, ``/mem unwatch``, ``/mem watching``, and buffering what is said.

A channel is read only after someone in it types ``/mem watch``; the bot then posts a notice
there, for everyone, naming who turned it on and how to stop it (``/mem unwatch``, which anyone in
the channel may type, and which posts a notice too). The list lives behind the service, in the
shared home, so every web replica and bot process reads the same one.

Each person's message in a watched channel goes to gitmem's ingestion as one conversation per
channel (``slack:C0123``) and one per thread (``slack:C0123:1712345678.000100``), with the
message's ``ts`` as its id (so a message Slack delivers twice is taken once) and the speaker as
author. Sealed buffers are distilled on the workers into pending memories (``source: slack``).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from slack_bolt import Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from gitmem.concepts import iso
from gitmem.errors import GitmemError
from gitmem.service import MAX_MESSAGE_CHARS
from gitmem.wording import plural

from .blocks import unwatch_notice_blocks, watch_notice_blocks, watch_reply_blocks, watching_blocks
from .bot import Bot
from .text import actor, clip, escape, namespace_for, unescape

log = logging.getLogger(__name__)
# conversations.join answers these for channels it cannot join: private ones and DMs, where the
# bot must be invited (and posting the notice fails if it was not).
_CANNOT_JOIN = ("method_not_supported_for_channel_type", "channel_not_found")


def conversation_of(channel: str, event: dict[str, Any]) -> str:
    """The conversation a message belongs to: its thread's, or the channel's top level."""
    thread = event.get("thread_ts")
    if thread and thread != event.get("ts"):
        return f"slack:{channel}:{thread}"
    return f"slack:{channel}"


def message_of(channel: str, event: dict[str, Any]) -> dict[str, Any] | None:
    """The message as ingestion takes it, or None when it has no text or no usable ``ts``."""
    ts = str(event.get("ts") or "")
    text = unescape(event.get("text") or "").strip()
    try:
        when = datetime.fromtimestamp(float(ts), UTC)
    except (ValueError, OverflowError, OSError):
        return None
    if not text:
        return None
    return {"id": f"{channel}:{ts}", "role": "user", "author": actor(str(event["user"])),
            "text": clip(text, MAX_MESSAGE_CHARS), "time": iso(when)}


def take(bot: Bot, event: dict[str, Any], team: str | None = None) -> bool:
    """Buffer a person's message when its channel is watched; whether it was handed to ingestion."""
    channel = event.get("channel")
    if not channel or not event.get("user"):
        return False
    namespace = namespace_for(bot.settings, channel)
    if not bot.service.watched(namespace, channel):
        return False
    message = message_of(channel, event)
    if message is None:
        return False
    conversation = conversation_of(channel, event)
    thread = event.get("thread_ts")
    meta = {"channel": channel, "thread": thread, "team": team}
    # A thread's replies are distilled with the message that started it, while that still waits.
    context = (f"slack:{channel}", f"{channel}:{thread}") if conversation != f"slack:{channel}" else None
    try:
        bot.service.ingest(namespace, conversation, [message], source="slack", meta=meta, background=True,
                           context=context)
    except GitmemError as exc:
        log.warning("message %s in %s not buffered: %s", event.get("ts"), channel, exc)
        return False
    return True


def _join(client: WebClient, channel: str) -> str | None:
    """Join a public channel, so its messages reach the bot; a hint for the user when that failed."""
    try:
        client.conversations_join(channel=channel)
    except SlackApiError as exc:
        error = str(exc.response.get("error"))
        if error in _CANNOT_JOIN:
            return None  # private channel or DM: posting the notice tells whether the bot is in it
        log.info("conversations.join %s failed: %s", channel, error)
        return (f"I could not join this channel myself (`{escape(error)}`"
                + (": reinstall the app from the updated manifest to grant `channels:join`" if error == "missing_scope"
                   else "") + "). If I am not in it yet, `/invite @gitmem` so its messages reach me.")
    return None


def watch(bot: Bot, command: dict[str, Any], respond: Respond, client: WebClient) -> None:
    """``/mem watch``: read this channel from now on, and tell the channel so."""
    channel, user = str(command["channel_id"]), str(command["user_id"])
    namespace = bot.namespace(channel)
    found = bot.service.watched(namespace, channel)
    if found is not None:
        respond(response_type="ephemeral", text=f"This channel is already watched into {escape(namespace)}",
                blocks=watch_reply_blocks(namespace, channel, by=found.by, since=found.since, added=False))
        return
    hint = _join(client, channel)
    watched, added = bot.service.watch(namespace, channel, actor(user))
    if added:
        try:
            client.chat_postMessage(channel=channel, text="gitmem now reads this channel; /mem unwatch stops it",
                                    blocks=watch_notice_blocks(namespace, user))
        except SlackApiError as exc:
            # No notice, no reading: a channel is never read without telling the people in it.
            bot.service.unwatch(namespace, channel, actor(user))
            error = escape(str(exc.response.get("error")))
            respond(response_type="ephemeral",
                    text=f":warning: I cannot post in this channel (`{error}`), so I would not receive its "
                         "messages either. Invite me with `/invite @gitmem`, then type `/mem watch` again.")
            return
    respond(response_type="ephemeral", text=f"Watching this channel into {escape(namespace)}",
            blocks=watch_reply_blocks(namespace, channel, by=watched.by, since=watched.since, added=added, hint=hint))


def unwatch(bot: Bot, command: dict[str, Any], respond: Respond, client: WebClient) -> None:
    """``/mem unwatch``: stop reading this channel, and tell the channel so."""
    channel, user = str(command["channel_id"]), str(command["user_id"])
    namespace = bot.namespace(channel)
    gone = bot.service.unwatch(namespace, channel, actor(user))
    if gone is None:
        respond(response_type="ephemeral",
                text=f"This channel is not watched into `{escape(namespace)}`: nothing to stop. "
                     "`/mem watching` lists the watched channels.")
        return
    try:
        client.chat_postMessage(channel=channel, text="gitmem stopped reading this channel",
                                blocks=unwatch_notice_blocks(namespace, user))
    except SlackApiError as exc:
        log.info("the unwatch notice in %s was not posted: %s", channel, exc.response.get("error"))
    respond(response_type="ephemeral",
            text=f"Stopped watching this channel. Messages taken before are still distilled into "
                 f"`{escape(namespace)}`.")


def watching(bot: Bot, command: dict[str, Any], respond: Respond) -> None:
    """``/mem watching``: the watched channels, and whether this one is."""
    channel = command.get("channel_id")
    watches = bot.service.watching()
    mapped = {w.channel: namespace_for(bot.settings, w.channel) for w in watches}
    count = plural(len(watches), "watched channel")
    respond(response_type="ephemeral", text=count,
            blocks=watching_blocks([w.to_dict() for w in watches], channel, namespace_for(bot.settings, channel),
                                   mapped))
