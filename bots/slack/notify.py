"""The ``gitmem.notifiers`` entry point: post reviews to Slack and show how they ended.

``on_event(settings, event)`` is called by :mod:`gitmem.notify` in whichever process opened or
decided the review (web app, Celery worker, CLI). It does nothing unless a bot token and a review
channel are configured, and a Slack failure is logged, never raised into the caller.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from slack_sdk.errors import SlackApiError

from gitmem.errors import GitmemError
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.wording import plural

from .app import web_client
from .blocks import Block, context
from .bot import Bot
from .review_cards import OUTCOME_BLOCK, VIEW_REVIEW, merge_as_commit, review_blocks, review_outcome, review_url
from .reviews import PostedReviews, posted_messages, redraw_posted
from .text import clip, escape

log = logging.getLogger(__name__)


def _pushed(settings: Settings, namespace: str, event: Mapping[str, Any]) -> None:
    """Say in the review channel that someone pushed straight to main (a reviewer's ``git push``)."""
    actor, count = str(event.get("actor") or "someone"), int(event.get("commits") or 0)
    after = str(event.get("after") or "")
    text = f"{escape(actor)} pushed {plural(count, 'commit')} to main in {escape(namespace)} (now {escape(after[:10])})"
    assert settings.slack_review_channel is not None
    try:
        web_client(settings).chat_postMessage(channel=settings.slack_review_channel, text=text)
    except SlackApiError as exc:
        log.warning("Slack notification of a push to %s failed: %s", namespace, exc.response.get("error"))


def on_event(settings: Settings, event: Mapping[str, Any]) -> None:
    """Post ``review.opened`` to the review channel and to each reviewer; redraw them when it is decided.

    The channel's card has no decision buttons (everyone there sees it); each reviewer gets a
    copy with them. ``review.updated`` (decided in part) draws them again with what is left;
    ``review.closed`` shows the outcome. A push straight to main (``push.merged``) is said in
    the channel in one line.
    """
    if not settings.slack_bot_token or not settings.slack_review_channel:
        return
    kind = event.get("event")
    namespace = str(event.get("namespace") or "")
    if kind == "push.merged" and namespace:
        _pushed(settings, namespace, event)
        return
    review = event.get("review") or {}
    if not namespace or "number" not in review:
        return
    number = int(review["number"])
    client = web_client(settings)
    url = review_url(settings.public_url, namespace, number)
    try:
        if kind == "review.opened":
            summary = str(event.get("summary") or review.get("title") or f"review #{number}")
            try:
                commits = [c.to_dict() for c in MemoryService(settings).reviews.diff(namespace, number, detail=())]
            except GitmemError as exc:  # gone meanwhile, or another host's repository: the event's merges
                log.info("review #%s of %s: drawing it from the event (%s)", number, namespace, exc)
                commits = [merge_as_commit(m) for m in event.get("merges") or [] if isinstance(m, Mapping)]
            blocks = review_blocks(namespace, review, summary, commits, url=url)
            text = f"Review #{number} in {escape(namespace)}: {escape(clip(summary, 200))}"
            sent = client.chat_postMessage(channel=settings.slack_review_channel, blocks=blocks, text=text)
            copies = _to_reviewers(settings, client, review_blocks(namespace, review, summary, commits, url=url,
                                                                   decide=True), text)
            PostedReviews(settings.state_dir).save(namespace, number, str(sent["channel"]), str(sent["ts"]), blocks,
                                                   copies)
        elif kind == "review.updated":
            # Decided in part (web, CLI or Slack): draw the cards again with what is left to decide.
            posted = PostedReviews(settings.state_dir).load(namespace, number)
            if posted:
                service = MemoryService(settings)
                commits = [c.to_dict() for c in service.reviews.diff(namespace, number, detail=())]
                outcome = review_outcome(review)
                title = str(review.get("title") or "")
                drawn = []
                for i, message in enumerate(posted_messages(posted)):
                    blocks = [*review_blocks(namespace, review, title, commits, url=url, decide=i > 0),
                              context(outcome, block_id=OUTCOME_BLOCK)]
                    client.chat_update(channel=message["channel"], ts=message["ts"], text=outcome, blocks=blocks)
                    drawn.append({"channel": message["channel"], "ts": message["ts"], "blocks": blocks})
                PostedReviews(settings.state_dir).save(namespace, number, drawn[0]["channel"], drawn[0]["ts"],
                                                       drawn[0]["blocks"], drawn[1:])
        elif kind == "review.closed":
            redraw_posted(Bot(MemoryService(settings)), client, namespace, number, review_outcome(review))
    except SlackApiError as exc:
        log.warning("Slack notification of %s for review #%s failed: %s", kind, number, exc.response.get("error"))


def _to_reviewers(settings: Settings, client: Any, blocks: list[Block], text: str) -> list[dict[str, Any]]:
    """Each reviewer's own copy of a card, with its decision buttons: where each went."""
    if not any(b.get("type") == "actions" and any(e.get("action_id") != VIEW_REVIEW for e in b["elements"])
               for b in blocks):
        return []  # nothing to decide from Slack (a card drawn from the event alone): no copies
    copies = []
    for reviewer in settings.slack_reviewers:
        try:
            sent = client.chat_postMessage(channel=reviewer, blocks=blocks, text=text)
        except SlackApiError as exc:
            log.warning("Slack copy of a review for %s failed: %s", reviewer, exc.response.get("error"))
            continue
        copies.append({"channel": str(sent["channel"]), "ts": str(sent["ts"]), "blocks": blocks})
    return copies
