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
from .blocks import context, merge_as_commit, review_blocks, review_outcome, review_url
from .bot import Bot
from .reviews import PostedReviews, redraw_posted
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
    """Post ``review.opened`` to the review channel; redraw it on ``review.updated`` and ``review.closed``.

    A push straight to main (``push.merged``) is said there in one line.
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
                commits = [c.to_dict() for c in MemoryService(settings).reviews.diff(namespace, number)]
            except GitmemError as exc:  # gone meanwhile, or another host's repository: the event's merges
                log.info("review #%s of %s: drawing it from the event (%s)", number, namespace, exc)
                commits = [merge_as_commit(m) for m in event.get("merges") or [] if isinstance(m, Mapping)]
            blocks = review_blocks(namespace, review, summary, commits, url=url)
            text = f"Review #{number} in {escape(namespace)}: {escape(clip(summary, 200))}"
            sent = client.chat_postMessage(channel=settings.slack_review_channel, blocks=blocks, text=text)
            PostedReviews(settings.state_dir).save(namespace, number, str(sent["channel"]), str(sent["ts"]), blocks)
        elif kind == "review.updated":
            # Decided in part (web, CLI or Slack): draw the card again with what is left to decide.
            posted = PostedReviews(settings.state_dir).load(namespace, number)
            if posted:
                service = MemoryService(settings)
                commits = [c.to_dict() for c in service.reviews.diff(namespace, number)]
                outcome = review_outcome(review)
                blocks = [*review_blocks(namespace, review, str(review.get("title") or ""), commits, url=url),
                          context(outcome, block_id="gitmem_review_outcome")]
                client.chat_update(channel=posted["channel"], ts=posted["ts"], text=outcome, blocks=blocks)
                PostedReviews(settings.state_dir).save(namespace, number, posted["channel"], posted["ts"], blocks)
        elif kind == "review.closed":
            redraw_posted(Bot(MemoryService(settings)), client, namespace, number, review_outcome(review))
    except SlackApiError as exc:
        log.warning("Slack notification of %s for review #%s failed: %s", kind, number, exc.response.get("error"))
