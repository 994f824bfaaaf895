"""gitmem in Slack: remembering, recalling, feedback on memories and deciding reviews.

It answers ``/mem``, spoken "remember:" / "记住：" and the "Remember this" shortcut, puts feedback
buttons on memories, posts reviews with Approve / Reject, and buffers the conversations of the
channels watched with ``/mem watch`` into gitmem's ingestion.

Mount it on the gitmem Flask app with :func:`init_app` (``POST /slack/events``), run it on its own
with :func:`create_flask_app`, or over Socket Mode with ``gitmem slack``.
"""

from __future__ import annotations

from .app import create_bolt_app, create_flask_app, init_app, mount, socket_mode_handler, web_client

__all__ = ["create_bolt_app", "create_flask_app", "init_app", "mount", "socket_mode_handler", "web_client"]
