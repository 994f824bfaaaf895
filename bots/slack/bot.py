"""What every listener shares: the service, where a message lives, and how to redraw it."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from gitmem.errors import MemoryNotFound
from gitmem.service import MemoryService
from gitmem.settings import Settings

from .blocks import Block, Cards, heading_block, memory_card, missing_card
from .text import clip, escape, namespace_for, person

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Target:
    """The message a button was pressed in, so it can be redrawn after the action."""

    channel: str | None = None
    ts: str | None = None
    response_url: str | None = None
    ephemeral: bool = False

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> Target:
        """The message of a ``block_actions`` payload."""
        container = body.get("container") or {}
        channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
        ts = container.get("message_ts") or (body.get("message") or {}).get("ts")
        return cls(channel, ts, body.get("response_url"), bool(container.get("is_ephemeral")))

    def to_dict(self) -> dict[str, Any]:
        """The target as plain data, to carry in a modal's ``private_metadata``."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Target:
        """Read back a target saved with :meth:`to_dict`."""
        return cls(data.get("channel"), data.get("ts"), data.get("response_url"), bool(data.get("ephemeral")))


def metadata(**values: Any) -> str:
    """A modal's ``private_metadata``: what to act on and which message to redraw."""
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"))


class Bot:
    """The service plus the Slack-side helpers the listeners have in common."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service

    @property
    def settings(self) -> Settings:
        """The settings the service was built from."""
        return self.service.settings

    def namespace(self, channel: str | None) -> str:
        """The channel's namespace, created on first use (names come only from the settings)."""
        name = namespace_for(self.settings, channel)
        if not self.service.exists(name):
            self.service.init(name)
        return name

    def render_cards(self, cards: Cards, notices: Mapping[str, str] | None = None) -> list[Block]:
        """Draw a message of memory cards from the repository as it is now."""
        notices = notices or {}
        blocks: list[Block] = [heading_block(cards)]
        for memory_id in cards.ids:
            try:
                memory = self.service.show(cards.namespace, memory_id)
            except MemoryNotFound:
                blocks += missing_card(memory_id, notices.get(memory_id))
                continue
            comments = self.service.discussion(cards.namespace, memory_id)
            last = None
            if comments:
                last = f"{person(comments[-1].actor)}: {escape(clip(' '.join(comments[-1].text.split()), 120))}"
            blocks += memory_card(memory, cards, comments=len(comments), last_comment=last,
                                  notice=notices.get(memory_id))
        return blocks

    def update(self, client: WebClient, target: Target, blocks: list[Block], text: str) -> None:
        """Redraw a message: ``chat.update`` for a posted one, its response URL for an ephemeral one."""
        if not target.ephemeral and target.channel and target.ts:
            client.chat_update(channel=target.channel, ts=target.ts, blocks=blocks, text=text)
        elif target.response_url:
            WebhookClient(target.response_url).send(replace_original=True, text=text, blocks=blocks)
        else:
            log.warning("no way to redraw the message: %r", target)

    def tell(self, client: WebClient, channel: str | None, user: str, text: str) -> None:
        """An ephemeral message to one user (errors and refusals)."""
        if not channel:
            log.warning("cannot tell %s %r: no channel", user, text)
            return
        try:
            client.chat_postEphemeral(channel=channel, user=user, text=text)
        except SlackApiError as exc:
            log.warning("chat.postEphemeral to %s failed: %s", channel, exc.response.get("error"))
