"""The web front end: JSON API, feedback webhook, review pages, git over HTTP and the MCP endpoint.

``create_app(settings)`` builds a Flask app around one :class:`~gitmem.service.MemoryService`,
kept in ``app.extensions["gitmem"]``. Run it with ``gitmem serve`` or, in production, with
``gunicorn 'gitmem.web:create_app()'``.
"""

from __future__ import annotations

import logging
import os
import secrets
from importlib.metadata import entry_points
from typing import Any

import jinja2
from flask import Flask, Response, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from ..errors import GitmemError, NamespaceNotFound
from ..service import MemoryService, build_service
from ..settings import Settings
from ..templating import templates_dir
from .auth import SIGNATURE_WINDOW

log = logging.getLogger(__name__)
#: Entry points that add to the web app, called as ``fn(app)`` (the Slack bot mounts /slack/events).
EXTENSIONS_GROUP = "gitmem.web"

__all__ = ["create_app", "secret_key"]


def secret_key(settings: Settings) -> str:
    """The session signing key: ``settings.secret_key``, or a random one kept under ``home``."""
    if settings.secret_key:
        return settings.secret_key
    path = settings.secret_key_file
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"secret_key.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(secrets.token_urlsafe(48))
    try:
        # link() fails if another process won the race; everyone then reads the winner's key.
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return path.read_text(encoding="utf-8").strip()


def create_app(settings: Settings | None = None, service: MemoryService | None = None) -> Flask:
    """Build the Flask app; ``settings`` default to :meth:`Settings.from_env`."""
    if service is None:
        service = build_service(settings or Settings.from_env())
    settings = service.settings
    app = Flask(__name__, static_folder=None, template_folder=None)
    app.jinja_loader = jinja2.FileSystemLoader(str(templates_dir() / "web"))
    app.config.update(
        SECRET_KEY=secret_key(settings),
        MAX_CONTENT_LENGTH=settings.max_request_bytes,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_NAME="gitmem_session",
    )
    app.extensions["gitmem"] = service
    app.extensions["gitmem.keys"] = service.keys
    app.extensions["gitmem.replays"] = service.replay_guard(SIGNATURE_WINDOW)

    from . import (
        api,
        git,
        health,
        pages,
        reviewing,  # noqa: F401 - it adds the review pages to pages.bp
        webhook,
    )
    from .mcp import McpMount

    app.register_blueprint(api.bp)
    app.register_blueprint(webhook.bp)
    app.register_blueprint(pages.bp)
    app.register_blueprint(git.bp)
    app.register_blueprint(health.bp)
    app.register_error_handler(GitmemError, _gitmem_error)
    app.register_error_handler(HTTPException, _http_error)
    _mount_extensions(app)
    # The MCP endpoint (/mcp) sits in front of Flask: the SDK answers it as an ASGI app of its own.
    mount = McpMount(service, app.wsgi_app)
    app.extensions["gitmem.mcp"] = mount
    app.wsgi_app = mount  # type: ignore[method-assign]
    return app


def _mount_extensions(app: Flask) -> None:
    """Let installed front ends (the ``gitmem.web`` entry points) add their routes."""
    for point in entry_points(group=EXTENSIONS_GROUP):
        try:
            mount = point.load()
        except ImportError as exc:
            log.warning("web extension %s cannot be imported (%s); it is off", point.value, exc)
            continue
        mount(app)


def wants_json() -> bool:
    """Whether the error should be JSON: everything but the HTML pages."""
    return not request.blueprint == "pages"


def error_response(status: int, kind: str, message: str) -> tuple[Response | str, int]:
    if wants_json():
        body: dict[str, Any] = {"error": {"status": status, "type": kind, "message": message}}
        response = jsonify(body)
        if status == 401 and request.blueprint == "git":
            response.headers["WWW-Authenticate"] = 'Basic realm="gitmem", charset="UTF-8"'
        return response, status
    return render_template("error.html", status=status, message=message), status


def _gitmem_error(exc: GitmemError) -> tuple[Response | str, int]:
    message = str(exc)
    if isinstance(exc, NamespaceNotFound) and exc.namespace:
        # The fix an API caller can make itself, not a command for the server's shell.
        message = (f"namespace {exc.namespace!r} does not exist; an admin key creates it with POST "
                   f'/api/v1/namespaces and {{"name": "{exc.namespace}"}}')
    return error_response(exc.http_status, type(exc).__name__, message)


def _http_error(exc: HTTPException) -> tuple[Response | str, int] | HTTPException:
    if exc.code is None:
        return exc
    message = exc.description or exc.name
    if exc.code == 413:
        limit = request.max_content_length
        message = f"the request body is larger than the {limit}-byte limit"
    response, status = error_response(exc.code, exc.name.replace(" ", ""), message)
    allowed = getattr(exc, "valid_methods", None)
    if allowed and isinstance(response, Response):
        response.headers["Allow"] = ", ".join(allowed)
    return response, status
