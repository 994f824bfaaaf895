"""Feedback buttons on memory cards: Confirm, Reject (asks why), Discuss and Amend (modals).

Each becomes the same commit as the web webhook's feedback (``MemoryService.feedback``) with the
Slack user as actor, and the message is drawn again from the repository to show what happened.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from slack_bolt import Ack, App
from slack_sdk import WebClient

from gitmem.errors import GitmemError

from .blocks import AMEND, CONFIRM, DISCUSS, REJECT, Cards, error_text
from .bot import Bot, Target, metadata
from .text import actor, clip, escape, role_of

log = logging.getLogger(__name__)
INPUT_BLOCK, INPUT_ACTION = "gitmem_text", "text"
MODAL_INPUT_LIMIT = 3000

MODALS: dict[str, dict[str, str]] = {
    "reject": {"callback": "gitmem_reject_memory", "title": "Reject memory", "submit": "Reject",
               "label": "Why is it wrong?", "hint": "Say what is wrong, so the next reader knows."},
    "discuss": {"callback": "gitmem_discuss_memory", "title": "Discuss memory", "submit": "Post",
                "label": "Your comment", "hint": "Write the comment to add to this memory's thread."},
    "amend": {"callback": "gitmem_amend_memory", "title": "Amend memory", "submit": "Save",
              "label": "Text", "hint": "Write the memory's new text."},
}


def notice_for(action: str, user: str, *, text: str = "", review: int | None = None, changed: bool = True) -> str:
    """One line saying what a user's feedback did."""
    if action == "confirm":
        return f":white_check_mark: <@{user}> confirmed this."
    if action == "reject":
        return f":no_entry_sign: <@{user}> rejected this: {escape(clip(text, 300))}"
    if action == "discuss":
        return f":speech_balloon: <@{user}>: {escape(clip(text, 300))}"
    if review is not None:
        return f":pencil2: <@{user}> proposed an amendment: review #{review}, waiting for a reviewer."
    if not changed:
        return f"<@{user}>'s amendment says the same as the memory; nothing changed."
    return f":pencil2: <@{user}> amended this."


def open_text_modal(bot: Bot, client: WebClient, trigger_id: str, action: str, cards: Cards,
                    memory_id: str, target: Target, *, initial: str | None = None) -> None:
    """Open the modal that asks for a reason, a comment or the amended text."""
    spec = MODALS[action]
    element: dict[str, Any] = {"type": "plain_text_input", "action_id": INPUT_ACTION, "multiline": True,
                               "max_length": MODAL_INPUT_LIMIT,
                               "placeholder": {"type": "plain_text", "text": spec["hint"][:150]}}
    if initial:
        element["initial_value"] = initial
    client.views_open(trigger_id=trigger_id, view={
        "type": "modal",
        "callback_id": spec["callback"],
        "title": {"type": "plain_text", "text": spec["title"]},
        "submit": {"type": "plain_text", "text": spec["submit"]},
        "close": {"type": "plain_text", "text": "Cancel"},
        "private_metadata": metadata(v=cards.value(memory_id), t=target.to_dict()),
        "blocks": [
            {"type": "context", "elements": [{"type": "mrkdwn",
                                              "text": f"Memory `{memory_id}` in `{escape(cards.namespace)}`"}]},
            {"type": "input", "block_id": INPUT_BLOCK, "element": element,
             "label": {"type": "plain_text", "text": spec["label"]}},
        ],
    })


def submitted_text(view: dict[str, Any]) -> str:
    """The text typed into a modal's one input."""
    values = view.get("state", {}).get("values", {})
    return str(values.get(INPUT_BLOCK, {}).get(INPUT_ACTION, {}).get("value") or "").strip()


def register(app: App, bot: Bot) -> None:
    """Add the memory feedback buttons and their modals to the Bolt app."""

    def just_ack(ack: Ack) -> None:
        ack()

    def confirm(body: dict[str, Any], client: WebClient) -> None:
        cards, memory_id = Cards.parse(body["actions"][0]["value"])
        user = body["user"]["id"]
        target = Target.of(body)
        try:
            bot.service.feedback(cards.namespace, memory_id, "confirm", actor=actor(user))
        except GitmemError as exc:
            bot.tell(client, target.channel, user, error_text(str(exc)))
            return
        notice = notice_for("confirm", user)
        bot.update(client, target, bot.render_cards(cards, {memory_id: notice}), notice)

    def opener(action: str) -> Callable[..., None]:
        def open_modal(body: dict[str, Any], client: WebClient) -> None:
            cards, memory_id = Cards.parse(body["actions"][0]["value"])
            user = body["user"]["id"]
            target = Target.of(body)
            initial = None
            if action == "amend":
                try:
                    initial = bot.service.show(cards.namespace, memory_id).text
                except GitmemError as exc:
                    bot.tell(client, target.channel, user, error_text(str(exc)))
                    return
                if len(initial) > MODAL_INPUT_LIMIT:
                    bot.tell(client, target.channel, user,
                             f"Memory `{memory_id}` is too long to edit in Slack; use "
                             f"`gitmem amend {memory_id} -n {escape(cards.namespace)}`.")
                    return
            open_text_modal(bot, client, body["trigger_id"], action, cards, memory_id, target, initial=initial)

        open_modal.__name__ = f"open_{action}_modal"
        return open_modal

    def check_text(action: str) -> Callable[..., None]:
        def ack_text(ack: Ack, view: dict[str, Any]) -> None:
            if not submitted_text(view):
                ack(response_action="errors", errors={INPUT_BLOCK: MODALS[action]["hint"]})
                return
            ack()

        ack_text.__name__ = f"ack_{action}_text"
        return ack_text

    def submitter(action: str) -> Callable[..., None]:
        def submit(body: dict[str, Any], view: dict[str, Any], client: WebClient) -> None:
            text = submitted_text(view)
            if not text:
                return  # refused by the ack
            data = json.loads(view["private_metadata"])
            cards, memory_id = Cards.parse(data["v"])
            target = Target.from_dict(data["t"])
            user = body["user"]["id"]
            try:
                result = bot.service.feedback(cards.namespace, memory_id, action, actor=actor(user), text=text,
                                              role=role_of(bot.settings, user))
            except GitmemError as exc:
                bot.tell(client, target.channel, user, error_text(str(exc)))
                return
            notice = notice_for(action, user, text=text, review=result.review,
                                changed=result.commit is not None or result.review is not None)
            bot.update(client, target, bot.render_cards(cards, {memory_id: notice}), notice)

        submit.__name__ = f"submit_{action}"
        return submit

    app.action(CONFIRM)(ack=just_ack, lazy=[confirm])
    for action, action_id in (("reject", REJECT), ("discuss", DISCUSS), ("amend", AMEND)):
        app.action(action_id)(ack=just_ack, lazy=[opener(action)])
        app.view(MODALS[action]["callback"])(ack=check_text(action), lazy=[submitter(action)])
