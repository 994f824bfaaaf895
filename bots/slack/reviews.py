"""Reviews in Slack: the review card, Approve / Reject of the changes shown (reviewers only), consolidation.

When a review opens, :mod:`bots.slack.notify` posts its card to the review channel (no decision
buttons: everyone there sees it) and a copy with the buttons to each reviewer, and keeps where
they went (channel, ts, blocks) in ``$GITMEM_HOME/state/<ns>/slack/``, so any process (web app,
Socket Mode, Celery worker) can redraw them once the review is decided. A button decides the
changes its card shows, by id, on the version of the review the card was drawn from.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from gitmem.errors import GitmemError
from gitmem.wording import plural

from .blocks import CANCEL_CONSOLIDATION, RUN_CONSOLIDATION, Block, context, error_text, text_section
from .bot import Bot, Target, metadata
from .review_cards import (
    APPROVE_REVIEW,
    REJECT_REVIEW,
    REVIEW_ACTIONS_BLOCK,
    SHOW_REVIEW,
    VIEW_REVIEW,
    decided_blocks,
    parse_review_value,
    review_blocks,
    review_choice,
    review_list_blocks,
    review_outcome,
    review_url,
)
from .text import actor, clip, escape, is_reviewer

log = logging.getLogger(__name__)
REJECT_REVIEW_VIEW = "gitmem_reject_review"
REASON_BLOCK, REASON_ACTION = "gitmem_reason", "reason"


class PostedReviews:
    """Where each review's Slack message went, one small JSON file per review."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    def _path(self, namespace: str, number: int) -> Path:
        return self.state_dir / namespace / "slack" / f"review-{int(number)}.json"

    def save(self, namespace: str, number: int, channel: str, ts: str, blocks: Sequence[Block],
             copies: Sequence[Mapping[str, Any]] = ()) -> None:
        """Record where review ``number``'s message went, the blocks it showed, and the reviewers' copies.

        ``copies``: ``{"channel", "ts", "blocks"}`` of each reviewer's own card (written atomically).
        """
        path = self._path(namespace, number)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        data = {"channel": channel, "ts": ts, "blocks": list(blocks), "copies": [dict(c) for c in copies]}
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)

    def load(self, namespace: str, number: int) -> dict[str, Any] | None:
        """Where review ``number``'s message went and its blocks; None if none was posted or it is unreadable."""
        try:
            data = json.loads(self._path(namespace, number).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None


def posted_messages(posted: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The review channel's message and the reviewers' copies, as recorded (``channel``, ``ts``, ``blocks``)."""
    if not posted:
        return []
    copies = [c for c in posted.get("copies") or [] if isinstance(c, Mapping) and c.get("channel") and c.get("ts")]
    return [posted, *copies]


def redraw_posted(bot: Bot, client: WebClient, namespace: str, number: int, outcome: str) -> Target | None:
    """Show the decision on the review's channel message and the reviewers' copies; return the channel's."""
    posted = PostedReviews(bot.settings.state_dir).load(namespace, number)
    if not posted:
        return None
    for message in posted_messages(posted):
        try:
            client.chat_update(channel=message["channel"], ts=message["ts"], text=outcome,
                               blocks=decided_blocks(message.get("blocks") or [], outcome))
        except SlackApiError as exc:
            log.warning("could not update review message: %s", exc.response.get("error"))
    return Target(posted["channel"], posted["ts"])


def notifier_installed() -> bool:
    """Whether ``bots.slack.notify:on_event`` is installed as a ``gitmem.notifiers`` entry point."""
    return any(point.value == "bots.slack.notify:on_event" for point in entry_points(group="gitmem.notifiers"))


def show_decision(bot: Bot, client: WebClient, body: Mapping[str, Any], target: Target, namespace: str,
                  number: int, review: Mapping[str, Any], list_message: bool) -> None:
    """Redraw the message the decision came from, and the review's channel message."""
    outcome = review_outcome(review)
    stored = PostedReviews(bot.settings.state_dir).load(namespace, number)
    if not notifier_installed():
        redraw_posted(bot, client, namespace, number, outcome)
    # Otherwise the review.updated or review.closed event redrew them (bots.slack.notify).
    recorded = {(m["channel"], m["ts"]) for m in posted_messages(stored)}
    if list_message:
        still_open = [r.to_dict() for r in bot.service.reviews.list(namespace, status="open")]
        listed = review_list_blocks(namespace, still_open, bot.settings.public_url, decide=True)
        bot.update(client, target, [*listed, context(f"#{number}: {outcome}")], outcome)
    elif (target.channel, target.ts) not in recorded:
        blocks = (body.get("message") or {}).get("blocks") or [text_section(f"Review #{number}")]
        bot.update(client, target, decided_blocks(blocks, outcome), outcome)


def register(app: App, bot: Bot) -> None:
    """Add the review buttons, the reject-reason modal and the consolidation buttons."""

    def just_ack(ack: Ack) -> None:
        ack()

    def refuse(client: WebClient, target: Target, user: str, verb: str) -> None:
        reviewers = ", ".join(f"<@{r}>" for r in bot.settings.slack_reviewers) or "nobody yet"
        bot.tell(client, target.channel, user,
                 f":no_entry: Only reviewers can {verb} reviews. Ask one of them: {reviewers}.")

    def from_list(body: Mapping[str, Any]) -> bool:
        return str(body["actions"][0].get("block_id", "")).startswith(f"{REVIEW_ACTIONS_BLOCK}:")

    def unnamed(client: WebClient, target: Target, user: str, number: int) -> None:
        bot.tell(client, target.channel, user, error_text(
            f"This button does not say which changes it decides; open review #{number} (`/mem review`, "
            "Show changes) and decide from there."))

    def approve(body: dict[str, Any], client: WebClient) -> None:
        value = body["actions"][0]["value"]
        namespace, number = parse_review_value(value)
        user, target = body["user"]["id"], Target.of(body)
        if not is_reviewer(bot.settings, user):
            refuse(client, target, user, "approve")
            return
        ids, version = review_choice(value)
        if not ids:
            unnamed(client, target, user, number)
            return
        try:
            review = bot.service.reviews.approve(namespace, number, actor=actor(user), commits=ids,
                                                 expected=len(ids), version=version)
        except GitmemError as exc:
            bot.tell(client, target.channel, user, error_text(str(exc)))
            return
        show_decision(bot, client, body, target, namespace, number, review.to_dict(), from_list(body))

    def ask_reason(body: dict[str, Any], client: WebClient) -> None:
        value = body["actions"][0]["value"]
        namespace, number = parse_review_value(value)
        user, target = body["user"]["id"], Target.of(body)
        if not is_reviewer(bot.settings, user):
            refuse(client, target, user, "reject")
            return
        ids, version = review_choice(value)
        if not ids:
            unnamed(client, target, user, number)
            return
        changes = plural(len(ids), "change")
        client.views_open(trigger_id=body["trigger_id"], view={
            "type": "modal",
            "callback_id": REJECT_REVIEW_VIEW,
            "title": {"type": "plain_text", "text": f"Reject review #{number}"[:24]},
            "submit": {"type": "plain_text", "text": f"Reject {len(ids)}"},
            "close": {"type": "plain_text", "text": "Cancel"},
            "private_metadata": metadata(n=namespace, r=number, t=target.to_dict(), list=from_list(body), i=ids,
                                         v=version),
            "blocks": [{"type": "input", "block_id": REASON_BLOCK, "label": {"type": "plain_text",
                                                                             "text": f"Why reject the {changes}?"},
                        "element": {"type": "plain_text_input", "action_id": REASON_ACTION, "multiline": True,
                                    "max_length": 1000}}],
        })

    def reason_of(view: Mapping[str, Any]) -> str:
        values = view.get("state", {}).get("values", {})
        return str(values.get(REASON_BLOCK, {}).get(REASON_ACTION, {}).get("value") or "").strip()

    def ack_reason(ack: Ack, view: dict[str, Any]) -> None:
        if not reason_of(view):
            ack(response_action="errors", errors={REASON_BLOCK: "Say why, so the author knows what to change."})
            return
        ack()

    def reject(body: dict[str, Any], view: dict[str, Any], client: WebClient) -> None:
        reason = reason_of(view)
        if not reason:
            return
        data = json.loads(view["private_metadata"])
        namespace, number, target = data["n"], int(data["r"]), Target.from_dict(data["t"])
        user = body["user"]["id"]
        if not is_reviewer(bot.settings, user):
            refuse(client, target, user, "reject")
            return
        ids = [str(i) for i in data.get("i") or []]
        if not ids:
            unnamed(client, target, user, number)
            return
        try:
            review = bot.service.reviews.reject(namespace, number, actor=actor(user), reason=reason, commits=ids,
                                                version=data.get("v"), expected=len(ids))
        except GitmemError as exc:
            bot.tell(client, target.channel, user, error_text(str(exc)))
            return
        decided = dict(review.to_dict())
        decided.setdefault("reason", reason)
        show_decision(bot, client, {}, target, namespace, number, decided, bool(data.get("list")))

    def run_consolidation(body: dict[str, Any], respond: Respond) -> None:
        namespace = json.loads(body["actions"][0]["value"])["n"]
        settings = bot.settings
        where = f" in <#{settings.slack_review_channel}>" if settings.slack_review_channel else ""
        respond(replace_original=True, text=f":hourglass_flowing_sand: Consolidating `{escape(namespace)}`…")
        try:
            sent = bot.service.dispatch(namespace, started_by=f"{actor(body['user']['id'])} (Slack)")
        except GitmemError as exc:
            respond(replace_original=True, text=error_text(str(exc)))
            return
        result = sent.result
        if result is None:
            respond(replace_original=True, text=f":hourglass_flowing_sand: Consolidation of `{escape(namespace)}` "
                    f"is queued (task `{escape(str(sent.task))}`); its review will be posted{where} when it is "
                    "ready.")
            return
        blocks: list[Block] = [text_section(f":broom: `{escape(namespace)}`: {escape(clip(result.summary, 2000))}")]
        if result.review is not None:
            # The same card as the review channel's: Approve only beside the changes it merges.
            review = bot.service.reviews.get(namespace, result.review)
            commits = [c.to_dict() for c in bot.service.reviews.diff(namespace, result.review, detail=())]
            blocks = [*review_blocks(namespace, review.to_dict(), result.summary, commits,
                                     url=review_url(settings.public_url, namespace, result.review),
                                     decide=is_reviewer(settings, body["user"]["id"])),
                      context(f"Review #{result.review} is open{where}.")]
        respond(replace_original=True, text=escape(result.summary), blocks=blocks)

    def show(body: dict[str, Any], client: WebClient, respond: Respond) -> None:
        """A review's card, with its decision buttons, for the reviewer who asked (from a list)."""
        namespace, number = parse_review_value(body["actions"][0]["value"])
        user, target = body["user"]["id"], Target.of(body)
        if not is_reviewer(bot.settings, user):
            refuse(client, target, user, "decide")
            return
        try:
            review = bot.service.reviews.get(namespace, number)
            commits = [c.to_dict() for c in bot.service.reviews.diff(namespace, number, detail=())]
        except GitmemError as exc:
            bot.tell(client, target.channel, user, error_text(str(exc)))
            return
        blocks = review_blocks(namespace, review.to_dict(), str(review.title), commits, decide=True,
                               url=review_url(bot.settings.public_url, namespace, number))
        respond(response_type="ephemeral", replace_original=False, text=f"Review #{number}", blocks=blocks)

    def cancel_consolidation(respond: Respond) -> None:
        respond(replace_original=True, text="Consolidation cancelled; nothing was changed.")

    app.action(VIEW_REVIEW)(just_ack)  # a link: Slack opens it, and tells the app it was pressed
    app.action(APPROVE_REVIEW)(ack=just_ack, lazy=[approve])
    app.action(SHOW_REVIEW)(ack=just_ack, lazy=[show])
    app.action(REJECT_REVIEW)(ack=just_ack, lazy=[ask_reason])
    app.view(REJECT_REVIEW_VIEW)(ack=ack_reason, lazy=[reject])
    app.action(RUN_CONSOLIDATION)(ack=just_ack, lazy=[run_consolidation])
    app.action(CANCEL_CONSOLIDATION)(ack=just_ack, lazy=[cancel_consolidation])
