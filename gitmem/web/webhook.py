"""The feedback webhook: ``POST /api/v1/feedback`` from agents, tools and chat bots.

Authenticated by an API key (writer or above on the namespace) or by an HMAC signature of the
body (see :mod:`.auth`). The actor is the key's name, as everywhere in the API; only callers
trusted to speak for others name another in the body's ``actor``: an admin key, or a signed
request (a trusted integration such as a chat bot). The actor goes into the commit's trailers.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from ..errors import InvalidInput, PermissionDenied
from ..service import FEEDBACK_ACTIONS, check_namespace
from . import inputs
from .api import service
from .auth import caller, require

bp = Blueprint("webhook", __name__, url_prefix="/api/v1")


@bp.post("/feedback")
def feedback() -> tuple[Response, int]:
    """Take feedback on a memory from an agent, tool or bot; 202 when an amendment opens a review."""
    who = caller(allow_signature=True)
    data = inputs.body()
    inputs.known(data, "namespace", "memory_id", "action", "text", "actor")
    namespace = inputs.string(data, "namespace")
    namespace = service().settings.default_namespace if namespace is None else check_namespace(namespace)
    require(namespace, "writer", allow_signature=True)
    action = inputs.string(data, "action", required=True) or ""
    memory_id = inputs.string(data, "memory_id", required=True) or ""
    actor = inputs.string(data, "actor") or who.name
    if who.key is not None and actor != who.name and who.role != "admin":
        raise PermissionDenied(
            f"this key acts as {who.name!r}; only an admin key or a signed request (a trusted "
            f"integration, such as a chat bot) may name another actor ({actor!r}); leave 'actor' out"
        )
    if action not in FEEDBACK_ACTIONS:
        raise InvalidInput(f"unknown action {action!r}; use one of: {', '.join(FEEDBACK_ACTIONS)}")
    result = service().feedback(namespace, memory_id, action, actor=actor,
                                text=inputs.string(data, "text"),
                                role=who.role if who.key is not None else None)
    status = 202 if result.review is not None else 200
    return jsonify(result.to_dict()), status
