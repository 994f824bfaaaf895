"""Remembering from conversation: spoken "remember:" / "记住：" messages and the "Remember this" shortcut.

Every message event comes here (Bolt runs one listener per event); a message that is not a
spoken command is handed to :mod:`.watching`, which buffers it when its channel is watched. A
spoken command is remembered at once and not buffered too: its memory is already written.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import Ack, App, BoltRequest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from gitmem.errors import GitmemError

from . import watching
from .blocks import Cards, error_text
from .bot import Bot
from .commands import OUTCOMES
from .text import actor, escape, split_type, spoken, unescape

log = logging.getLogger(__name__)
SHORTCUT = "gitmem_remember_this"
# Message subtypes that are people talking; edits, joins, bot posts and the like are not commands.
TALK_SUBTYPES = (None, "thread_broadcast", "file_share")


def register(app: App, bot: Bot) -> None:
    """Listen for spoken commands in messages, and add the "Remember this" shortcut."""

    def just_ack(ack: Ack) -> None:
        ack()

    def on_message(event: dict[str, Any], client: WebClient, request: BoltRequest, body: dict[str, Any]) -> None:
        if request.headers.get("x-slack-retry-reason", [""])[0] == "http_timeout":
            return  # acknowledged at once, so this one is being handled already
        if event.get("subtype") not in TALK_SUBTYPES or event.get("bot_id") or not event.get("user"):
            return
        text = spoken(unescape(event.get("text") or ""))
        if text is None:
            # Bolt runs one listener per event: talk in a watched channel is buffered from here.
            watching.take(bot, event, body.get("team_id"))
            return
        channel, user = event["channel"], event["user"]
        memory_type, said = split_type(text)
        if not said:
            bot.tell(client, channel, user, "Nothing to remember after `remember:`. Type "
                     "`remember: what to keep`, or `记住：要记住的内容`.")
            return
        try:
            ns = bot.namespace(channel)
            result = bot.service.remember(ns, said, type=memory_type or "fact", source="user",
                                          author=actor(user))
        except GitmemError as exc:
            bot.tell(client, channel, user, error_text(str(exc)))
            return
        assert result.memory is not None
        cards = Cards(ns, (result.memory.id,), OUTCOMES.get(result.outcome, "Remembered"))
        client.chat_postMessage(channel=channel, thread_ts=event.get("thread_ts") or event["ts"],
                                text=f"{cards.heading}: {escape(result.memory.title)}",
                                blocks=bot.render_cards(cards))

    def remember_this(body: dict[str, Any], client: WebClient) -> None:
        message = body.get("message") or {}
        channel, user = body["channel"]["id"], body["user"]["id"]
        text = unescape(message.get("text") or "").strip()
        if not text:
            bot.tell(client, channel, user, "That message has no text to remember. Use the shortcut "
                     "on a message with words in it, or type `/mem remember text`.")
            return
        try:
            link = client.chat_getPermalink(channel=channel, message_ts=message["ts"]).get("permalink")
        except SlackApiError as exc:
            log.warning("chat.getPermalink failed: %s", exc.response.get("error"))
            link = None
        if link:
            text = f"{text}\n\nSource: {link}"
        try:
            ns = bot.namespace(channel)
            result = bot.service.remember(ns, text, source="slack", author=actor(user))
        except GitmemError as exc:
            bot.tell(client, channel, user, error_text(str(exc)))
            return
        assert result.memory is not None
        cards = Cards(ns, (result.memory.id,), OUTCOMES.get(result.outcome, "Remembered"))
        blocks, note = bot.render_cards(cards), f"{cards.heading}: {escape(result.memory.title)}"
        try:
            client.chat_postEphemeral(channel=channel, user=user, text=note, blocks=blocks)
        except SlackApiError as exc:
            # The bot may not be in the channel; the shortcut's response URL works everywhere.
            if not body.get("response_url"):
                raise
            log.info("chat.postEphemeral failed (%s); answering via response_url", exc.response.get("error"))
            WebhookClient(body["response_url"]).send(response_type="ephemeral", text=note, blocks=blocks)

    app.event("message")(ack=just_ack, lazy=[on_message])
    app.shortcut(SHORTCUT)(ack=just_ack, lazy=[remember_this])
