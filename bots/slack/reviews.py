"""Reviews in Slack: the review message, Approve / Reject (reviewers only), and running consolidation.

When consolidation opens a review, :mod:`bots.slack.notify` posts a message with the merges and
two buttons and keeps where it went (channel, ts, blocks) in ``$GITMEM_HOME/state/<ns>/slack/``,
so any process (web app, Socket Mode, Celery worker) can redraw it once the review is decided.
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

from .blocks import (
    APPROVE_REVIEW,
    CANCEL_CONSOLIDATION,
    REJECT_REVIEW,
    REVIEW_ACTIONS_BLOCK,
    RUN_CONSOLIDATION,
    VIEW_REVIEW,
    Block,
    context,
    decided_blocks,
    error_text,
    parse_review_value,
    review_blocks,
    review_count,
    review_list_blocks,
    review_outcome,
    review_url,
    text_section,
)
from .bot import Bot, Target, metadata
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

    def save(self, namespace: str, number: int, channel: str, ts: str, blocks: Sequence[Block]) -> None:
        """Record where review ``number``'s message went and the blocks it showed (written atomically)."""
        path = self._path(namespace, number)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"channel": channel, "ts": ts, "blocks": list(blocks)}, ensure_ascii=False),
                       encoding="utf-8")
        os.replace(tmp, path)

    def load(self, namespace: str, number: int) -> dict[str, Any] | None:
        """Where review ``number``'s message went and its blocks; None if none was posted or it is unreadable."""
        try:
            data = json.loads(self._path(namespace, number).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None


def redraw_posted(bot: Bot, client: WebClient, namespace: str, number: int, outcome: str) -> Target | None:
    """Show the decision on the review's channel message, if one was posted; return where it is."""
    posted = PostedReviews(bot.settings.state_dir).load(namespace, number)
    if not posted:
        return None
    target = Target(posted["channel"], posted["ts"])
    try:
        client.chat_update(channel=posted["channel"], ts=posted["ts"], text=outcome,
                           blocks=decided_blocks(posted["blocks"], outcome))
    except SlackApiError as exc:
        log.warning("could not update review message: %s", exc.response.get("error"))
    return target


def notifier_installed() -> bool:
    """Whether ``bots.slack.notify:on_event`` is installed as a ``gitmem.notifiers`` entry point."""
    return any(point.value == "bots.slack.notify:on_event" for point in entry_points(group="gitmem.notifiers"))


def show_decision(bot: Bot, client: WebClient, body: Mapping[str, Any], target: Target, namespace: str,
                  number: int, review: Mapping[str, Any], list_message: bool) -> None:
    """Redraw the message the decision came from, and the review's channel message."""
    outcome = review_outcome(review)
    if notifier_installed():
        # The review.closed event already redrew the channel message (bots.slack.notify).
        stored = PostedReviews(bot.settings.state_dir).load(namespace, number)
        posted = Target(stored["channel"], stored["ts"]) if stored else None
    else:
        posted = redraw_posted(bot, client, namespace, number, outcome)
    if list_message:
        still_open = [r.to_dict() for r in bot.service.reviews.list(namespace, status="open")]
        listed = review_list_blocks(namespace, still_open, bot.settings.public_url)
        bot.update(client, target, [*listed, context(f"#{number}: {outcome}")], outcome)
    elif posted is None or (posted.channel, posted.ts) != (target.channel, target.ts):
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

    def approve(body: dict[str, Any], client: WebClient) -> None:
        namespace, number = parse_review_value(body["actions"][0]["value"])
        user, target = body["user"]["id"], Target.of(body)
        if not is_reviewer(bot.settings, user):
            refuse(client, target, user, "approve")
            return
        count = review_count(body["actions"][0]["value"])
        if count is None:
            bot.tell(client, target.channel, user, error_text(
                f"This button does not say how many changes it merges; open review #{number} "
                "(`/mem review`) and approve it from there."))
            return
        try:
            review = bot.service.reviews.approve(namespace, number, actor=actor(user), expected=count)
        except GitmemError as exc:
            bot.tell(client, target.channel, user, error_text(str(exc)))
            return
        show_decision(bot, client, body, target, namespace, number, review.to_dict(), from_list(body))

    def ask_reason(body: dict[str, Any], client: WebClient) -> None:
        namespace, number = parse_review_value(body["actions"][0]["value"])
        user, target = body["user"]["id"], Target.of(body)
        if not is_reviewer(bot.settings, user):
            refuse(client, target, user, "reject")
            return
        client.views_open(trigger_id=body["trigger_id"], view={
            "type": "modal",
            "callback_id": REJECT_REVIEW_VIEW,
            "title": {"type": "plain_text", "text": f"Reject review #{number}"[:24]},
            "submit": {"type": "plain_text", "text": "Reject"},
            "close": {"type": "plain_text", "text": "Cancel"},
            "private_metadata": metadata(n=namespace, r=number, t=target.to_dict(), list=from_list(body)),
            "blocks": [{"type": "input", "block_id": REASON_BLOCK, "label": {"type": "plain_text",
                                                                             "text": "Why reject it?"},
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
        try:
            review = bot.service.reviews.reject(namespace, number, actor=actor(user), reason=reason)
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
            commits = [c.to_dict() for c in bot.service.reviews.diff(namespace, result.review)]
            blocks = [*review_blocks(namespace, review.to_dict(), result.summary, commits,
                                     url=review_url(settings.public_url, namespace, result.review)),
                      context(f"Review #{result.review} is open{where}.")]
        respond(replace_original=True, text=escape(result.summary), blocks=blocks)

    def cancel_consolidation(respond: Respond) -> None:
        respond(replace_original=True, text="Consolidation cancelled; nothing was changed.")

    app.action(VIEW_REVIEW)(just_ack)  # a link: Slack opens it, and tells the app it was pressed
    app.action(APPROVE_REVIEW)(ack=just_ack, lazy=[approve])
    app.action(REJECT_REVIEW)(ack=just_ack, lazy=[ask_reason])
    app.view(REJECT_REVIEW_VIEW)(ack=ack_reason, lazy=[reject])
    app.action(RUN_CONSOLIDATION)(ack=just_ack, lazy=[run_consolidation])
    app.action(CANCEL_CONSOLIDATION)(ack=just_ack, lazy=[cancel_consolidation])
