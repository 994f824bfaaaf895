"""The ``/mem`` slash command: remember, recall, amend, forget, status, consolidate, review, watch, help.

The ack listener only parses (bad input is answered there, ephemeral, with what to type); the
work runs in a lazy listener after Slack has its acknowledgement, and answers through the
command's response URL.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from gitmem.errors import GitmemError
from gitmem.wording import plural

from .blocks import Cards, error_text, help_blocks, plan_blocks, status_blocks
from .bot import Bot, Target
from .feedback import notice_for, open_text_modal
from .review_cards import review_list_blocks
from .text import Command, Usage, actor, clip, escape, is_reviewer, namespace_for, parse_command, role_of
from .watching import unwatch, watch, watching

log = logging.getLogger(__name__)
RECALL_LIMIT = 5
OUTCOMES = {
    "added": "Remembered",
    "reinforced": "Already remembered: reinforced",
    "merged": "Merged into a memory that says much the same",
}


def register(app: App, bot: Bot) -> None:
    """Add ``/mem`` to the Bolt app."""

    def ack_mem(ack: Ack, command: dict[str, Any]) -> None:
        try:
            parsed = parse_command(command.get("text", ""))
        except Usage as exc:
            ack(text=str(exc), response_type="ephemeral")
            return
        if parsed.name == "help":
            namespace = namespace_for(bot.settings, command.get("channel_id"))
            ack(blocks=help_blocks(namespace), text="gitmem help", response_type="ephemeral")
            return
        ack()

    def run_mem(command: dict[str, Any], respond: Respond, client: WebClient) -> None:
        try:
            parsed = parse_command(command.get("text", ""))
        except Usage:
            return  # answered by the ack
        if parsed.name == "help":
            return
        try:
            run(bot, parsed, command, respond, client)
        except GitmemError as exc:
            respond(response_type="ephemeral", text=error_text(str(exc)) + "\nType `/mem help` for the commands.")

    app.command("/mem")(ack=ack_mem, lazy=[run_mem])


def run(bot: Bot, cmd: Command, command: dict[str, Any], respond: Respond, client: WebClient) -> None:
    """Carry out one parsed command and answer through ``respond``."""
    service = bot.service
    user = command["user_id"]
    ns = bot.namespace(command.get("channel_id"))
    who = actor(user)
    if cmd.name == "remember":
        result = service.remember(ns, cmd.text, type=cmd.type or "fact", source="user", author=who)
        assert result.memory is not None
        cards = Cards(ns, (result.memory.id,), OUTCOMES.get(result.outcome, "Remembered"))
        respond(response_type="ephemeral", text=f"{cards.heading}: {escape(result.memory.title)}",
                blocks=bot.render_cards(cards))
    elif cmd.name == "recall":
        # A person's search, not a delivery: it is no use of the memories it lists.
        hits = service.recall(ns, cmd.text, limit=RECALL_LIMIT, record=False)
        if not hits:
            respond(response_type="ephemeral",
                    text=f"Nothing in `{escape(ns)}` matches “{escape(clip(cmd.text, 100))}”. Try other "
                         "words, or store it with `/mem remember text`.")
            return
        cards = Cards(ns, tuple(h.memory.id for h in hits), f"Recall: {clip(cmd.text, 100)}")
        respond(response_type="ephemeral", text=f"{plural(len(hits), 'memory')} for {escape(clip(cmd.text, 100))}",
                blocks=bot.render_cards(cards))
    elif cmd.name == "amend":
        cards = Cards(ns, (cmd.memory_id,), "Amend")
        if not cmd.text:
            memory = service.show(ns, cmd.memory_id)
            target = Target(command.get("channel_id"), None, command.get("response_url"), True)
            open_text_modal(bot, client, command["trigger_id"], "amend", cards, cmd.memory_id, target,
                            initial=memory.text)
            return
        amended = service.feedback(ns, cmd.memory_id, "amend", actor=who, text=cmd.text,
                                   role=role_of(bot.settings, user))
        notice = notice_for("amend", user, review=amended.review,
                            changed=amended.commit is not None or amended.review is not None)
        respond(response_type="ephemeral", text=notice, blocks=bot.render_cards(cards, {cmd.memory_id: notice}))
    elif cmd.name == "forget":
        forgotten = service.forget(ns, cmd.memory_id, reason=cmd.text or None, actor=who)
        notice = (f":wastebasket: <@{user}> archived this." if forgotten.outcome == "archived"
                  else "This memory was already archived.")
        cards = Cards(ns, (cmd.memory_id,), "Forget")
        respond(response_type="ephemeral", text=notice, blocks=bot.render_cards(cards, {cmd.memory_id: notice}))
    elif cmd.name == "status":
        respond(response_type="ephemeral", text=f"Status of {escape(ns)}", blocks=status_blocks(service.status(ns)))
    elif cmd.name == "consolidate":
        dry = service.consolidate(ns, dry_run=True)
        respond(response_type="ephemeral", text=f"Consolidation plan for {escape(ns)}",
                blocks=plan_blocks(ns, dry.summary, dry.plan.to_dict()))
    elif cmd.name == "review":
        reviews = [r.to_dict() for r in service.reviews.list(ns, status="open")]
        respond(response_type="ephemeral", text=f"{plural(len(reviews), 'open review')} in {escape(ns)}",
                blocks=review_list_blocks(ns, reviews, service.settings.public_url,
                                          decide=is_reviewer(service.settings, user)))
    elif cmd.name == "watch":
        watch(bot, command, respond, client)
    elif cmd.name == "unwatch":
        unwatch(bot, command, respond, client)
    elif cmd.name == "watching":
        watching(bot, command, respond)
