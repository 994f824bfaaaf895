"""Notifications after consolidation and reviews, for front ends to subscribe to.

Events are plain dicts. ``review.opened`` (after a run opened a review) carries ``namespace``,
``review`` (:meth:`gitmem.reviews.Review.to_dict`), ``summary`` ("consolidated 7 memories into
3, review #2") and ``merges`` (``[{"before": [texts], "after": text}]``); ``review.updated``
(some commits approved or found stale, others still open) and ``review.closed`` (nothing left
open: approved, rejected or stale) carry ``namespace`` and ``review``.

Subscribers are functions ``fn(settings, event)``: registered in-process with :func:`subscribe`,
or installed as entry points in the group ``gitmem.notifiers``. An event carries data only; a
subscriber that needs to read more builds its own service from the settings it is given. A
failing subscriber is logged and never fails the operation that published the event.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .settings import Settings

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "gitmem.notifiers"
Subscriber = Callable[[Settings, dict[str, Any]], None]
_subscribers: list[Subscriber] = []


def subscribe(fn: Subscriber) -> Subscriber:
    """Register ``fn`` for every event published in this process (usable as a decorator)."""
    if fn not in _subscribers:
        _subscribers.append(fn)
    return fn


def unsubscribe(fn: Subscriber) -> None:
    """Stop calling ``fn``."""
    if fn in _subscribers:
        _subscribers.remove(fn)


def _installed() -> list[Subscriber]:
    from importlib.metadata import entry_points  # scans every installed package: only when publishing

    out: list[Subscriber] = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            out.append(point.load())
        except Exception:  # a broken plugin must not break consolidation
            log.exception("cannot load notifier %s", point.value)
    return out


def publish(settings: Settings, event: dict[str, Any]) -> None:
    """Call every subscriber with ``event``; failures are logged, never raised."""
    for fn in [*_subscribers, *_installed()]:
        try:
            fn(settings, event)
        except Exception:
            log.exception("notifier %r failed on %s", fn, event.get("event"))
