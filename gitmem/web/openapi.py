"""The OpenAPI 3.0 document of the JSON API, served at ``/api/v1/openapi.json``."""

from __future__ import annotations

import functools
from typing import Any

from ..concepts import SOURCES, STATES, TYPES
from ..service import FEEDBACK_ACTIONS, REVIEW_STATUSES, ROLES
from ..wording import a_or_an

NS = {"name": "ns", "in": "path", "required": True, "description": "Namespace name",
      "schema": {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,63}$"}}
MEMORY_ID = {"name": "memory_id", "in": "path", "required": True,
             "schema": {"type": "string", "pattern": "^[0-9a-f]{10}$"}}
NUMBER = {"name": "number", "in": "path", "required": True,
          "schema": {"type": "string", "pattern": "^[0-9]{1,9}$"}}
COMMIT = {"name": "commit", "in": "path", "required": True,
          "schema": {"type": "string", "pattern": "^[0-9a-f]{4,40}$"}}


def _query(name: str, schema: dict[str, Any], description: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "in": "query", "required": False, "schema": schema}
    if description:
        out["description"] = description
    return out


def _paging(default: int) -> list[dict[str, Any]]:
    return [_query("offset", {"type": "integer", "minimum": 0, "maximum": 10**9, "default": 0}),
            _query("limit", {"type": "integer", "minimum": 1, "maximum": 200, "default": default})]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


ERRORS = {str(code): {"$ref": f"#/components/responses/E{code}"}
          for code in (400, 401, 403, 404, 409, 413, 422, 503)}


def _op(summary: str, role: str, ok: dict[str, Any], *, params: list[dict[str, Any]] | None = None,
        body: dict[str, Any] | None = None, status: str = "200",
        extra: dict[str, Any] | None = None, security: list[dict[str, list[str]]] | None = None,
        ) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "description": f"Needs {a_or_an(role)} **{role}** key.",
                          "parameters": params or [],
                          "responses": {status: ok, **(extra or {}), **ERRORS}}
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    if security is not None:
        op["security"] = security
    return op


def _obj(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return out


STR = {"type": "string"}
STRS = {"type": "array", "items": {"type": "string"}}
ANY_OBJECT = {"type": "object"}


def _page(item: str) -> dict[str, Any]:
    return {"type": "object", "required": ["items"], "properties": {
        "items": {"type": "array", "items": _ref(item)}, "offset": {"type": "integer"},
        "limit": {"type": "integer"}, "next_offset": {"type": "integer", "nullable": True}}}


@functools.cache
def document() -> dict[str, Any]:
    """The whole document (built once)."""
    option = _obj({"name": {"type": "string", "minLength": 1}, "pros": STRS, "cons": STRS,
                   "description": {"type": "string", "description": "what the option is (or give pros and cons)"},
                   "config": {"type": "string", "description": "how it is set up"},
                   "status": {"type": "string", "description": "where it stands: candidate, deprecated..."}},
                  ("name",))
    memory = {"type": "object", "required": ["id", "type", "text", "title", "state"], "properties": {
        "id": STR, "type": {"type": "string", "enum": list(TYPES)}, "text": STR, "title": STR,
        "description": STR, "tags": STRS, "paths": STRS, "source": STR,
        "author": {"type": "string", "nullable": True}, "created": STR, "updated": STR,
        "potency": {"type": "number"}, "last_used": {"type": "string", "nullable": True},
        "access_count": {"type": "integer"}, "state": {"type": "string", "enum": list(STATES)},
        "tenured": {"type": "boolean"}, "verified": STRS, "related": STRS, "supersedes": STRS,
        "archived_reason": {"type": "string", "nullable": True}, "path": STR,
        "options": {"type": "array", "items": option}, "active": {"type": "string", "nullable": True},
        "choices": {"type": "array", "items": {"type": "object", "properties": {
            "option": STR, "at": STR, "by": {"type": "string", "nullable": True}, "reason": STR}}}}}
    write = {"type": "object", "required": ["outcome"], "properties": {
        "outcome": STR, "memory": {**_ref("Memory"), "nullable": True},
        "commit": {"type": "string", "nullable": True},
        "similar_to": {"type": "string", "nullable": True}}}
    commit = {"type": "object", "required": ["id", "summary"], "properties": {
        "id": STR, "summary": STR, "message": STR, "time": {"type": "integer"}, "actor": STR,
        "action": STR, "memory_ids": STRS, "parents": STRS}}
    review = {"type": "object", "required": ["number", "status"], "properties": {
        "number": {"type": "integer"}, "title": STR, "status": STR, "kind": STR, "label": STR, "version": STR}}
    error = {"type": "object", "required": ["error"], "properties": {"error": {
        "type": "object", "required": ["status", "message"], "properties": {
            "status": {"type": "integer"}, "type": STR, "message": STR}}}}
    messages = {400: "Bad input: malformed JSON, wrong types, unknown fields or values",
                401: "Missing or invalid key, or a stale or forged signature",
                403: "The key's role does not allow this", 404: "No such namespace, memory, commit or review",
                409: "Conflicts with the repository's current state", 413: "Body too large",
                422: "A memory file in the repository does not parse", 503: "A backing service is down"}
    remember_body = _obj({
        "text": {"type": "string", "minLength": 1}, "type": {"type": "string", "enum": list(TYPES)},
        "title": STR, "tags": STRS, "paths": STRS,
        "source": {"type": "string", "enum": list(SOURCES),
                   "description": "default: the key's kind, user for a person's key, agent for an agent's"},
        "author": {"type": "string", "description": "who said it: the key's name (the default), or, for an "
                   "admin key only, another's; the commit's actor is the key's name"},
        "state": {"type": "string", "enum": ["active", "pending"]},
        "options": {"type": "array", "items": option,
                    "description": "techchoice: two or more, each with pros and cons or a description"},
        "active": {"type": "string", "description": "techchoice: the option chosen now"},
        "reason": {"type": "string", "description": "techchoice: why the active option is chosen"}}, ("text",))
    choose_body = _obj({"option": {"type": "string", "minLength": 1}, "reason": {"type": "string", "minLength": 1},
                        "pros": STRS, "cons": STRS, "description": STR, "config": STR, "status": STR},
                       ("option", "reason"))
    amend_body = _obj({"text": STR, "title": STR, "type": {"type": "string", "enum": list(TYPES)},
                       "tags": STRS, "paths": STRS, "tenured": {"type": "boolean"}, "reason": STR})
    feedback_body = _obj({
        "namespace": STR, "memory_id": STR,
        "action": {"type": "string", "enum": list(FEEDBACK_ACTIONS)}, "text": STR, "actor": STR},
        ("memory_id", "action"))
    feedback_ok = {"type": "object", "properties": {
        "action": STR, "memory": _ref("Memory"), "commit": {"type": "string", "nullable": True},
        "review": {"type": "integer", "nullable": True}}}
    review_path = "/namespaces/{ns}/reviews/{number}"
    message = _obj({"id": {"oneOf": [{"type": "string", "minLength": 1, "maxLength": 200}, {"type": "integer"}]},
                    "role": {"type": "string", "enum": ["user", "assistant", "system", "tool"]},
                    "author": STR, "text": {"type": "string", "minLength": 1, "maxLength": 20000},
                    "time": {"type": "string", "format": "date-time"}}, ("text",))
    conversation = {"name": "conversation", "in": "path", "required": True,
                    "description": "Conversation id: a session id, a Slack channel and thread",
                    "schema": {"type": "string", "pattern": "^[A-Za-z0-9_.:@+-]{1,200}$"}}
    paths: dict[str, Any] = {
        "/namespaces/{ns}/conversations/{conversation}/messages": {
            "post": _op("Buffer a conversation's messages for extraction into pending memories", "writer",
                        _json(ANY_OBJECT, "Stored; a sealed buffer is queued for distilling"), status="202",
                        params=[NS, conversation],
                        body=_obj({"messages": {"type": "array", "items": message, "minItems": 1, "maxItems": 1000},
                                   "flush": {"type": "boolean"}}, ("messages",))),
        },
        "/namespaces/{ns}/conversations": {
            "get": _op("Ingestion counters and the newest buffers", "reader", _json(ANY_OBJECT, "Counters"),
                       params=[NS]),
        },
        "/namespaces": {
            "get": _op("Namespaces the key can read", "reader",
                       _json({"type": "object", "properties": {"items": STRS}}, "Names")),
            "post": _op("Create a namespace", "admin", _json(ANY_OBJECT, "Created"), status="201",
                        body=_obj({"name": NS["schema"]}, ("name",)),
                        extra={"200": _json(ANY_OBJECT, "Already existed")}),
        },
        "/namespaces/{ns}": {"get": _op("Status: counts by state, type and tier", "reader",
                                        _json(ANY_OBJECT, "Status"), params=[NS])},
        "/namespaces/{ns}/memories": {
            "get": _op("List memories", "reader", _json(_page("Memory"), "A page of memories"),
                       params=[NS, _query("state", {"type": "string", "enum": list(STATES)}),
                               _query("type", {"type": "string", "enum": list(TYPES)}),
                               *_paging(50)]),
            "post": _op("Remember through the write gate (add, reinforce or merge)", "writer",
                        _json(_ref("WriteResult"), "Added"), params=[NS], body=remember_body,
                        status="201", extra={"200": _json(_ref("WriteResult"), "Reinforced or merged")}),
        },
        "/namespaces/{ns}/memories/{memory_id}": {
            "get": _op("One memory", "reader", _json(_ref("Memory"), "The memory"),
                       params=[NS, MEMORY_ID]),
            "patch": _op("Amend directly (maintainers, reviewer and admin keys; others use "
                         "feedback, which opens a review)", "reviewer",
                         _json(_ref("WriteResult"), "Amended"), params=[NS, MEMORY_ID], body=amend_body),
            "delete": _op("Forget: archive, or purge the file", "writer (admin to purge)",
                          _json(_ref("WriteResult"), "Archived or purged"),
                          params=[NS, MEMORY_ID, _query("purge", {"type": "boolean"}),
                                  _query("reason", STR)]),
        },
        "/namespaces/{ns}/memories/{memory_id}/history": {
            "get": _op("Commits that changed the memory, newest first", "reader",
                       _json(_page("Commit"), "A page of commits"), params=[NS, MEMORY_ID, *_paging(50)])},
        "/namespaces/{ns}/memories/{memory_id}/discussion": {
            "get": _op("The memory's discussion thread", "reader", _json(ANY_OBJECT, "Comments"),
                       params=[NS, MEMORY_ID])},
        "/namespaces/{ns}/memories/{memory_id}/restore": {
            "post": _op("Restore the memory to its version at a commit", "reviewer",
                        _json(_ref("WriteResult"), "Restored"), params=[NS, MEMORY_ID],
                        body=_obj({"commit": {"type": "string", "pattern": "^[0-9a-f]{4,40}$"}},
                                  ("commit",)))},
        "/namespaces/{ns}/memories/{memory_id}/choose": {
            "post": _op("Make an option the techchoice's active one, for a reason (append-only; a new "
                        "option needs pros and cons)", "writer",
                        _json(_ref("WriteResult"), "Chosen"), params=[NS, MEMORY_ID], body=choose_body)},
        "/namespaces/{ns}/memories/{memory_id}/purge-history": {
            "post": _op("Ask to purge a memory from every commit: opens a review of kind purge, which only an "
                        "admin's approval carries out (it rewrites the namespace's history)", "admin",
                        _json(_ref("Review"), "The purge review, open"), params=[NS, MEMORY_ID],
                        body=_obj({"reason": STR}, ("reason",)), status="201")},
        "/namespaces/{ns}/import": {
            "post": _op("Import another store's memories (okf, pi-memory-spaced, basic-memory, mem0), given as "
                        "files, through the write gate in one commit", "admin",
                        _json(ANY_OBJECT, "The report: commit, counts, and each item's outcome and reason"),
                        params=[NS], body=_obj({
                            "format": {"type": "string", "enum": ["okf", "pi-memory-spaced", "basic-memory", "mem0"]},
                            "files": {"type": "object", "additionalProperties": {"type": "string"},
                                      "description": "relative path -> file text"},
                            "dry_run": {"type": "boolean"}}, ("format", "files")))},
        "/namespaces/{ns}/recall": {
            "get": _op("Recall memories by relevance x potency x recency", "reader",
                       _json({"type": "object", "properties": {"items": {"type": "array"}}}, "Hits"),
                       params=[NS, _query("q", STR, "Query text"),
                               _query("path", STR, "A file the caller works on (repeatable)"),
                               _query("limit", {"type": "integer", "minimum": 1, "maximum": 200}),
                               _query("dry", {"type": "boolean"}, "Do not count as a use")])},
        "/namespaces/{ns}/context": {
            "get": _op("The Markdown block an agent should load for its files", "reader",
                       {"description": "Markdown (or JSON with Accept: application/json)",
                        "content": {"text/markdown": {"schema": STR},
                                    "application/json": {"schema": ANY_OBJECT}}},
                       params=[NS, _query("file", STR, "A file path (repeatable)"), _query("q", STR),
                               _query("limit", {"type": "integer", "minimum": 1, "maximum": 200})]),
            "post": _op("The context block, files in the body", "reader",
                        {"description": "Markdown (or JSON with Accept: application/json)",
                         "content": {"text/markdown": {"schema": STR},
                                     "application/json": {"schema": ANY_OBJECT}}},
                        params=[NS], body=_obj({"files": STRS, "q": STR,
                                                "limit": {"type": "integer", "minimum": 1,
                                                          "maximum": 200}}))},
        "/namespaces/{ns}/commits": {
            "get": _op("Commits on main, newest first", "reader", _json(_page("Commit"), "Commits"),
                       params=[NS, *_paging(20)])},
        "/namespaces/{ns}/commits/{commit}/revert": {
            "post": _op("Revert a commit of main with a new commit", "reviewer",
                        _json(_ref("WriteResult"), "Reverted"), params=[NS, COMMIT])},
        "/namespaces/{ns}/consolidate": {
            "post": _op("Trigger consolidation, or plan it with dry_run", "writer (reader for a dry run)",
                        _json(ANY_OBJECT, "The plan (dry run)"), params=[NS],
                        body=_obj({"dry_run": {"type": "boolean"}}),
                        extra={"202": _json(ANY_OBJECT, "Queued")})},
        "/namespaces/{ns}/reviews": {
            "get": _op("Reviews", "reader", _json(_page("Review"), "A page of reviews"),
                       params=[NS, _query("status", {"type": "string",
                                                     "enum": list(REVIEW_STATUSES)}),
                               *_paging(50)])},
        review_path: {"get": _op("A review with its commits and diffs", "reader",
                                 _json(_ref("Review"), "The review"), params=[NS, NUMBER])},
        f"{review_path}/approve": {
            "post": _op("Approve and merge (every open commit, or those listed; the rest stay open)", "reviewer",
                        _json(_ref("Review"), "Merged"), params=[NS, NUMBER],
                        body=_obj({"commits": STRS, "expected": {"type": "integer", "minimum": 1},
                                   "version": {"type": "string"}}))},
        f"{review_path}/reject": {
            "post": _op("Turn down what is left of the review, or the commits listed, saying why (one commit: "
                        "no reason needed)", "reviewer", _json(_ref("Review"), "Rejected"),
                        params=[NS, NUMBER], body=_obj({"reason": {"type": "string"}, "commits": STRS,
                                                        "expected": {"type": "integer", "minimum": 1},
                                                        "version": {"type": "string"}}))},
        f"{review_path}/comments": {
            "post": _op("Comment on the review", "writer", _json(_ref("Review"), "Commented"),
                        params=[NS, NUMBER], body=_obj({"text": {"type": "string", "minLength": 1}},
                                                       ("text",)))},
        "/feedback": {
            "post": _op("Feedback webhook: confirm, reject, discuss or amend a memory",
                        "writer key, or an HMAC signature", _json(feedback_ok, "Applied"),
                        body=feedback_body,
                        extra={"202": _json(feedback_ok, "Amendment opened a review")},
                        security=[{"bearer": []}, {"apiKey": []}, {"signature": [], "timestamp": []}])},
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "gitmem", "version": "1",
                 "description": "The team's long-term memory for coding agents, kept in Git. "
                                f"Keys have roles ({', '.join(ROLES)}) per namespace."},
        "servers": [{"url": "/api/v1"}],
        "security": [{"bearer": []}, {"apiKey": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                "signature": {"type": "apiKey", "in": "header", "name": "X-Gitmem-Signature",
                              "description": "sha256=<hex HMAC-SHA256 of '<timestamp>.<body>'>"},
                "timestamp": {"type": "apiKey", "in": "header", "name": "X-Gitmem-Timestamp"},
            },
            "schemas": {"Memory": memory, "WriteResult": write, "Commit": commit, "Review": review,
                        "Error": error},
            "responses": {f"E{code}": _json(_ref("Error"), text) for code, text in messages.items()},
        },
    }
