"""Build the Bolt app over a :class:`MemoryService`, and mount it on Flask or run it in Socket Mode.

Every listener acknowledges at once and does its work in a lazy listener (``process_before_response``
is on, so the acknowledgement is exactly what the ack function said); slow work such as
consolidation goes to Celery when a broker is configured.
"""

from __future__ import annotations

import logging
from concurrent.futures import Executor
from typing import TYPE_CHECKING

from slack_bolt import App
from slack_bolt.logger import get_bolt_logger
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_sdk import WebClient

from gitmem.errors import InvalidInput
from gitmem.service import MemoryService, build_service
from gitmem.settings import Settings

if TYPE_CHECKING:
    import flask
    from slack_bolt.adapter.socket_mode import SocketModeHandler

EVENTS_PATH = "/slack/events"


class _TokenComesWithTheClient(logging.Filter):
    """Drop Bolt's "`token` will be unused" warning, which would reach every gitmem user.

    gitmem gives Bolt the bot token inside its Web API client (pointed at GITMEM_SLACK_API_URL
    when set), and Bolt also reads SLACK_BOT_TOKEN from the environment by itself; it is the same
    token (settings take it from there), so nothing is unused.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != warning_client_prioritized_and_token_skipped()


get_bolt_logger(App).addFilter(_TokenComesWithTheClient())


def web_client(settings: Settings) -> WebClient:
    """A Web API client with the bot token, pointed at ``GITMEM_SLACK_API_URL`` when set."""
    if settings.slack_api_url:
        base = settings.slack_api_url.rstrip("/") + "/"
        return WebClient(token=settings.slack_bot_token, base_url=base)
    return WebClient(token=settings.slack_bot_token)


def create_bolt_app(service: MemoryService, *, socket_mode: bool = False,
                    listener_executor: Executor | None = None) -> App:
    """The Bolt app with every gitmem listener; needs the bot token (and, over HTTP, the signing secret)."""
    from . import commands, feedback, remembering, reviews
    from .bot import Bot

    settings = service.settings
    if not settings.slack_bot_token:
        raise InvalidInput("Slack is not configured: set SLACK_BOT_TOKEN (the xoxb- bot token)")
    if not socket_mode and not settings.slack_signing_secret:
        raise InvalidInput("Slack is not configured: set SLACK_SIGNING_SECRET (Basic Information page)")
    app = App(
        name="gitmem",
        # The token comes with the client (giving both only earns a warning).
        signing_secret=settings.slack_signing_secret or "",
        client=web_client(settings),
        process_before_response=True,
        # Checked lazily on the first request, so the web app starts even when Slack is away.
        token_verification_enabled=False,
        request_verification_enabled=not socket_mode,
        listener_executor=listener_executor,
    )
    bot = Bot(service)
    for module in (commands, feedback, remembering, reviews):
        module.register(app, bot)
    return app


def init_app(app: flask.Flask, *, listener_executor: Executor | None = None) -> None:
    """Register ``POST /slack/events`` on a Flask app whose ``extensions["gitmem"]`` is the service."""
    from flask import request
    from slack_bolt.adapter.flask import SlackRequestHandler

    service: MemoryService = app.extensions["gitmem"]
    bolt = create_bolt_app(service, listener_executor=listener_executor)
    handler = SlackRequestHandler(bolt)
    app.extensions["gitmem.slack"] = bolt

    def slack_events() -> flask.Response:
        return handler.handle(request)

    app.add_url_rule(EVENTS_PATH, endpoint="slack_events", view_func=slack_events, methods=["POST"])


def mount(app: flask.Flask) -> None:
    """The ``gitmem.web`` entry point: serve ``/slack/events`` when the token and signing secret are set."""
    settings: Settings = app.extensions["gitmem"].settings
    if settings.slack_signing_secret and settings.slack_bot_token:
        init_app(app)


def create_flask_app(service: MemoryService | None = None, *,
                     listener_executor: Executor | None = None) -> flask.Flask:
    """A Flask app serving only ``/slack/events``: the bot on its own, without the web app."""
    import flask

    app = flask.Flask("gitmem.slack")
    app.extensions["gitmem"] = service or build_service(Settings.from_env())
    init_app(app, listener_executor=listener_executor)
    return app


def socket_mode_handler(service: MemoryService, *, listener_executor: Executor | None = None) -> SocketModeHandler:
    """A Socket Mode handler (``.start()`` blocks) for teams that cannot expose a URL."""
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    settings = service.settings
    bolt = create_bolt_app(service, socket_mode=True, listener_executor=listener_executor)
    if not settings.slack_app_token:
        raise InvalidInput("Socket Mode needs SLACK_APP_TOKEN (an xapp- app-level token with connections:write)")
    return SocketModeHandler(bolt, settings.slack_app_token, web_client=web_client(settings))
