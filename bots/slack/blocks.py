"""Block Kit messages the bot sends: memory cards, plans and help (review cards: :mod:`.review_cards`).

Pure functions from data to blocks. Every piece of user text goes through :func:`escape` (or
into a ``plain_text`` field), so a memory that says ``<!channel>`` is shown, never sent.

Messages whose buttons act on memories carry a :class:`Cards` value in each button: the
namespace, the ids shown and the heading. That is enough to draw the whole message again from
the repository after any button or modal, whether the message is ephemeral or not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gitmem.concepts import TYPES, Memory, iso, now, title_from
from gitmem.templating import render_template
from gitmem.wording import plural

from .text import SECTION_LIMIT, clip, escape, person

Block = dict[str, Any]

CONFIRM, REJECT, DISCUSS, AMEND = "gitmem_confirm", "gitmem_reject", "gitmem_discuss", "gitmem_amend"
MEMORY_ACTIONS = (CONFIRM, REJECT, DISCUSS, AMEND)
RUN_CONSOLIDATION, CANCEL_CONSOLIDATION = "gitmem_consolidate_run", "gitmem_consolidate_cancel"
BUTTON_VALUE_LIMIT = 2000
# Groups a plan message lists at most (Block Kit allows 50 blocks a message).
MAX_GROUPS_SHOWN = 40


@dataclass(frozen=True)
class Cards:
    """What a message of memory cards shows: enough to draw it again from the repository."""

    namespace: str
    ids: tuple[str, ...]
    heading: str

    def value(self, memory_id: str) -> str:
        """The button value for an action on ``memory_id`` in this message."""
        data = {"n": self.namespace, "i": list(self.ids), "h": clip(self.heading, 150), "m": memory_id}
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    @staticmethod
    def parse(value: str) -> tuple[Cards, str]:
        """Read a button value back: the message's cards and the memory the button is for."""
        data = json.loads(value)
        if not isinstance(data, dict):
            raise ValueError("button value is not an object")
        cards = Cards(str(data["n"]), tuple(str(i) for i in data["i"]), str(data.get("h", "")))
        return cards, str(data["m"])


def text_section(mrkdwn: str) -> Block:
    """A section of mrkdwn text, clipped to Slack's limit."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(mrkdwn, SECTION_LIMIT)}}


def context(mrkdwn: str, block_id: str | None = None) -> Block:
    """A context block (Slack's small grey text), clipped to Slack's limit."""
    block: Block = {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(mrkdwn, SECTION_LIMIT)}]}
    if block_id:
        block["block_id"] = block_id
    return block


def button(label: str, action_id: str, value: str, style: str | None = None) -> Block:
    """A button that sends ``action_id`` with ``value``; ``style`` is ``primary`` or ``danger``."""
    element: Block = {"type": "button", "text": {"type": "plain_text", "text": label, "emoji": True},
                      "action_id": action_id, "value": value[:BUTTON_VALUE_LIMIT]}
    if style:
        element["style"] = style
    return element


def help_blocks(namespace: str) -> list[Block]:
    """What ``/mem help`` shows (``templates/slack/help.mrkdwn.j2``)."""
    text = render_template("slack/help.mrkdwn.j2", types=TYPES, namespace=escape(namespace))
    return [text_section(text.strip())]


def error_text(message: str) -> str:
    """An error for the person who typed something: the one-line reason, escaped."""
    return f":warning: {escape(message)}"


# --- memory cards ------------------------------------------------------------------------------


def memory_card(memory: Memory, cards: Cards, *, comments: int = 0, last_comment: str | None = None,
                notice: str | None = None, at: datetime | None = None) -> list[Block]:
    """One memory: its title and text, what is known about it, and the feedback buttons."""
    at = at or now()
    head = f"`{memory.type}` `{memory.id}`"
    if memory.title != title_from(memory.text):
        head += f"  *{escape(memory.title)}*"  # a title of its own, not just the first line
    section = f"{head}\n{escape(memory.text)}"
    if memory.options:
        section += "\n" + options_mrkdwn(memory)
    facts = [f"potency {memory.potency_at(at):.2f}", f"by {person(memory.author)}"]
    if memory.state != "active":
        facts.append(memory.state)
    if memory.verified:
        facts.append(":white_check_mark: confirmed by " + ", ".join(person(v) for v in memory.verified))
    if memory.state == "archived" and memory.archived_reason:
        facts.append(":no_entry_sign: " + escape(clip(memory.archived_reason, 200)))
    if comments:
        talk = f":speech_balloon: {plural(comments, 'comment')}"
        if last_comment:
            talk += f", latest: {last_comment}"
        facts.append(talk)
    blocks: list[Block] = [text_section(section), context(" · ".join(facts))]
    if notice:
        blocks.append(context(notice))
    value = cards.value(memory.id)
    buttons = []
    if memory.state != "archived":
        buttons += [button("Confirm", CONFIRM, value, "primary"), button("Reject", REJECT, value, "danger")]
    buttons += [button("Discuss", DISCUSS, value), button("Amend", AMEND, value)]
    blocks.append({"type": "actions", "block_id": f"gitmem_memory:{memory.id}", "elements": buttons})
    return blocks


def options_mrkdwn(memory: Memory) -> str:
    """A techchoice's options for a card: one line each with what it says of itself, the active one marked.

    Its description, pros and cons, configuration and status, as far as the option has them.
    """
    active = (memory.active or "").casefold()
    lines = ["*Options*"]
    for option in memory.options:
        mark = " _(active)_" if option.name.casefold() == active else ""
        parts = [escape(option.description)] if option.description else []
        if option.pros or option.cons:
            pros = "; ".join(escape(p) for p in option.pros) or "-"
            cons = "; ".join(escape(c) for c in option.cons) or "-"
            parts.append(f":heavy_plus_sign: {pros}  :heavy_minus_sign: {cons}")
        if option.config:
            parts.append(f":gear: {escape(option.config)}")
        if option.status:
            parts.append(f"_{escape(option.status)}_")
        lines.append(f"• *{escape(option.name)}*{mark}: " + "  ".join(parts))
    if memory.choices:
        last = memory.choices[-1]
        by = f" by {person(last.by)}" if last.by else ""
        why = f": {escape(last.reason)}" if last.reason else ""
        lines.append(f"Chosen {escape(last.option)} on {iso(last.at)[:10]}{by}{why}")
    return "\n".join(lines)


def missing_card(memory_id: str, notice: str | None = None) -> list[Block]:
    """What a card message shows in place of a memory deleted since the message was drawn."""
    blocks = [context(f"Memory `{escape(memory_id)}` no longer exists.")]
    if notice:
        blocks.append(context(notice))
    return blocks


def heading_block(cards: Cards) -> Block:
    """The first block of a card message: its heading and the namespace."""
    return text_section(f"{escape(cards.heading)}  ·  namespace `{escape(cards.namespace)}`")


# --- watched channels --------------------------------------------------------------------------

WATCH_NOTICE_BLOCK = "gitmem_watch_notice"
# Block Kit's 50 blocks, less the heading, the footer and "...and N more".
MAX_WATCH_SECTIONS = 45


def channel_link(channel: str) -> str:
    """A channel as mrkdwn: Slack shows ``<#C123>`` as the channel's name."""
    return f"<#{escape(channel)}>"


def watch_notice_blocks(namespace: str, user: str) -> list[Block]:
    """The notice the bot posts in a channel it now reads: who turned it on, what is read, how to stop."""
    return [
        text_section(f":eyes: *gitmem now reads this channel.* <@{escape(user)}> turned it on with `/mem watch`."),
        text_section(
            f"From now on, messages here and in threads go into the namespace `{escape(namespace)}`, where they "
            "are distilled into *pending* memories, each with its speaker as author. A reviewer promotes or "
            "discards them; agents do not see them until then. Bot messages, edits and deletions are not read, "
            "and a message that starts with `remember:` is remembered as before."),
        context("Anyone in this channel can stop it: `/mem unwatch` · `/mem watching` lists the watched channels",
                block_id=WATCH_NOTICE_BLOCK),
    ]


def unwatch_notice_blocks(namespace: str, user: str) -> list[Block]:
    """The notice the bot posts in a channel it stops reading."""
    return [
        text_section(f":no_entry_sign: *gitmem stopped reading this channel.* <@{escape(user)}> turned it off "
                     "with `/mem unwatch`."),
        context(f"Messages taken before are still distilled into `{escape(namespace)}`. `/mem watch` turns it "
                "on again.", block_id=WATCH_NOTICE_BLOCK),
    ]


def watch_reply_blocks(namespace: str, channel: str, *, by: str | None, since: str, added: bool,
                       hint: str | None = None) -> list[Block]:
    """The answer to ``/mem watch`` for the person who typed it."""
    if added:
        head = (f":white_check_mark: Watching {channel_link(channel)} into `{escape(namespace)}`. I posted a notice "
                "in the channel so everyone knows.")
    else:
        head = (f"{channel_link(channel)} is already watched into `{escape(namespace)}`, since {escape(since[:10])} "
                f"by {person(by)}.")
    blocks = [text_section(head)]
    if hint:
        blocks.append(text_section(f":warning: {hint}"))
    blocks.append(context("Messages are buffered per channel and thread, then distilled into pending memories. "
                          "`/mem unwatch` stops it."))
    return blocks


def watching_blocks(watches: Sequence[Mapping[str, Any]], channel: str | None, namespace: str,
                    mapped: Mapping[str, str]) -> list[Block]:
    """What ``/mem watching`` shows: every watched channel, and whether this one is.

    ``mapped``: the namespace each listed channel ingests into now; a watch recorded under
    another namespace (the channel was moved) is marked as not read.
    """
    here = any(w["channel"] == channel and w["namespace"] == namespace for w in watches)
    if not watches:
        return [text_section("No channel is watched. Type `/mem watch` in a channel to have gitmem read it."),
                context("A watched channel's messages are distilled into pending memories.")]
    lines = []
    for w in watches:
        line = (f"• {channel_link(str(w['channel']))} → `{escape(str(w['namespace']))}` · since "
                f"{escape(str(w['since'])[:10])} by {person(str(w['by']))}")
        now_in = mapped.get(str(w["channel"]))
        if now_in is not None and now_in != w["namespace"]:
            line += f" · :warning: now maps to `{escape(now_in)}`: not read until `/mem watch` there again"
        lines.append(line)
    sections: list[list[str]] = [[]]
    for line in lines:
        line = clip(line, SECTION_LIMIT)
        if sections[-1] and len("\n".join([*sections[-1], line])) > SECTION_LIMIT:
            sections.append([])
        sections[-1].append(line)
    kept = sections[:MAX_WATCH_SECTIONS]
    blocks: list[Block] = [text_section(f"*Watched channels* ({len(watches)})")]
    blocks += [text_section("\n".join(section)) for section in kept]
    shown = sum(len(section) for section in kept)
    if shown < len(lines):
        blocks.append(context(f"…and {len(lines) - shown} more."))
    where = channel_link(channel) if channel else "This channel"
    blocks.append(context(f"{where} is watched: `/mem unwatch` stops it." if here
                          else f"{where} is not watched: `/mem watch` starts it."))
    return blocks


# --- consolidation -----------------------------------------------------------------------------


def plan_blocks(namespace: str, summary: str, plan: Mapping[str, Any]) -> list[Block]:
    """The consolidation plan (a dry run's summary and the groups it found), with a Run button."""
    groups = [*plan.get("clusters", []), *plan.get("pairs", [])]
    blocks: list[Block] = [text_section(f"*Consolidation plan for `{escape(namespace)}`*\n{escape(summary)}")]
    for group in groups[:MAX_GROUPS_SHOWN]:
        members = group.get("members", [])
        lines = "\n".join(f"• {escape(clip(' '.join(str(m.get('text', '')).split()), 300))}" for m in members)
        label = "Near-duplicates" if group.get("kind") == "pair" else "Related"
        blocks.append(text_section(f"*{label}* ({len(members)})\n{lines}"))
    if len(groups) > MAX_GROUPS_SHOWN:
        blocks.append(context(f"…and {len(groups) - MAX_GROUPS_SHOWN} more groups."))
    if not groups and not plan.get("lifecycle"):
        blocks.append(context("Nothing to consolidate right now."))
        return blocks
    value = json.dumps({"n": namespace})
    blocks.append(context("Running it writes the changes on a review branch; nothing reaches main until "
                          "a reviewer approves the review."))
    blocks.append({"type": "actions", "block_id": "gitmem_consolidate", "elements": [
        button("Run it", RUN_CONSOLIDATION, value, "primary"),
        button("Cancel", CANCEL_CONSOLIDATION, value),
    ]})
    return blocks


def status_blocks(status: Mapping[str, Any]) -> list[Block]:
    """What ``/mem status`` shows: counts by state, type and potency tier, and the head commit."""
    by_state = status.get("by_state", {})
    by_type = {k: v for k, v in status.get("by_type", {}).items() if v}
    tiers = status.get("by_tier", {})
    lines = [
        f"*Namespace `{escape(str(status.get('namespace')))}`*: {plural(int(status.get('total', 0)), 'memory')}",
        "by state: " + ", ".join(f"{k} {v}" for k, v in by_state.items()),
        "by type: " + (", ".join(f"{k} {v}" for k, v in by_type.items()) or "none yet"),
        "active memories by potency: " + ", ".join(f"{k} {v}" for k, v in tiers.items()),
        f"head `{str(status.get('head', ''))[:10]}`",
    ]
    if status.get("malformed"):
        lines.append(f":warning: {plural(len(status['malformed']), 'file')} that gitmem cannot parse; "
                     "`gitmem status` names them")
    return [text_section("\n".join(lines))]
