"""The JSON API under ``/api/v1``: one view per service call, described in :mod:`.openapi`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from flask import Blueprint, Response, current_app, jsonify, request, url_for
from kombu.exceptions import OperationalError

from ..errors import InvalidInput, MemoryNotFound, PermissionDenied, Unavailable
from ..service import REVIEW_STATUSES, MemoryService, check_namespace
from . import inputs
from .auth import caller, require
from .openapi import document

if TYPE_CHECKING:
    from ..service import Reviews

bp = Blueprint("api", __name__, url_prefix="/api/v1")
MAX_PAGE = 200


def service() -> MemoryService:
    """The app's :class:`MemoryService`, put in ``app.extensions`` by the app factory."""
    svc = current_app.extensions["gitmem"]
    assert isinstance(svc, MemoryService)
    return svc


def reviews() -> Reviews:
    """The reviews of the app's service."""
    return service().reviews


def created(data: Any, location: str) -> tuple[Response, int]:
    """A 201 Created response: ``data`` as JSON and a ``Location`` header."""
    response = jsonify(data)
    response.headers["Location"] = location
    return response, 201


@bp.get("/openapi.json")
def openapi() -> Response:
    """Serve the OpenAPI document that describes this API."""
    return jsonify(document())


# --- namespaces -----------------------------------------------------------------------------------


@bp.get("/namespaces")
def namespaces() -> Response:
    """List the namespaces the caller may read."""
    who = caller()
    names = [n for n in service().namespaces() if who.allows(n, "reader")]
    return jsonify({"items": names})


@bp.post("/namespaces")
def create_namespace() -> tuple[Response, int]:
    """Create a namespace (admin); 201 if it is new, 200 if it already existed."""
    caller()
    data = inputs.body()
    inputs.known(data, "name")
    name = check_namespace(inputs.string(data, "name", required=True))
    require(name, "admin")
    existed = service().exists(name)
    service().init(name)
    response = jsonify({"name": name, "created": not existed})
    return response, 200 if existed else 201


@bp.get("/namespaces/<ns>")
def status(ns: str) -> Response:
    """Show a namespace's status: counts by state, type and potency tier, head and malformed files."""
    require(ns, "reader")
    return jsonify(service().status(ns))


# --- memories -------------------------------------------------------------------------------------


@bp.get("/namespaces/<ns>/memories")
def list_memories(ns: str) -> Response:
    """List a page of memories in path order, optionally only those of ?state= and ?type=."""
    require(ns, "reader")
    offset = inputs.query_int("offset", 0, 0, 10**9)
    limit = inputs.query_int("limit", 50, 1, MAX_PAGE)
    found = service().list(ns, state=request.args.get("state") or None,
                           type=request.args.get("type") or None, offset=offset, limit=limit + 1)
    items = [m.to_dict() for m in found[:limit]]
    return jsonify(inputs.page(items, offset, limit, len(found) > limit))


@bp.post("/namespaces/<ns>/memories")
def remember(ns: str) -> tuple[Response, int]:
    """Remember text through the write gate (writer); 201 with a Location if a memory was added, else 200."""
    who = require(ns, "writer")
    data = inputs.body()
    inputs.known(data, "text", "type", "title", "tags", "paths", "source", "author", "state", "options", "active",
                 "reason")
    options = data.get("options")
    if options is not None and not isinstance(options, list):
        raise InvalidInput("'options' must be a list of {name, pros, cons, description, config, status}")
    author = inputs.string(data, "author")
    if author is not None and author != who.name and who.role != "admin":
        # As the feedback webhook: only an admin key may write in another's name.
        raise PermissionDenied(f"this key writes as {who.name!r}; only an admin key may name another author "
                               f"({author!r}); leave 'author' out")
    result = service().remember(
        ns,
        inputs.string(data, "text", required=True) or "",
        type=inputs.string(data, "type") or "fact",
        title=inputs.string(data, "title"),
        tags=inputs.strings(data, "tags") or (),
        paths=inputs.strings(data, "paths") or (),
        source=inputs.string(data, "source") or who.source,
        author=author or who.name,
        actor=who.name,
        state=inputs.string(data, "state") or "active",
        options=options,
        active=inputs.string(data, "active"),
        reason=inputs.string(data, "reason"),
    )
    assert result.memory is not None
    location = url_for("api.get_memory", ns=ns, memory_id=result.memory.id)
    if result.outcome == "added":
        return created(result.to_dict(), location)
    return jsonify(result.to_dict()), 200


@bp.get("/namespaces/<ns>/memories/<memory_id>")
def get_memory(ns: str, memory_id: str) -> Response:
    """Show one memory by id; for one merged away, the 404 names the memory that replaced it."""
    require(ns, "reader")
    try:
        return jsonify(service().show(ns, memory_id, record=True).to_dict())  # fetched by id: a use
    except MemoryNotFound as exc:
        raise reviews().missing(ns, memory_id, exc) from None


@bp.patch("/namespaces/<ns>/memories/<memory_id>")
def amend(ns: str, memory_id: str) -> Response:
    """Amend a memory directly, for callers the policy lets skip review; others get 403."""
    who = require(ns, "writer")
    if not service().may_amend_directly(who.name, who.role):
        raise PermissionDenied(
            f"{who.name} ({who.role}) may not change memories directly; propose the change with "
            "POST /api/v1/feedback and action 'amend', which opens a review"
        )
    data = inputs.body()
    inputs.known(data, "text", "title", "type", "tags", "paths", "tenured", "reason")
    result = service().amend(
        ns, memory_id,
        text=inputs.string(data, "text"), title=inputs.string(data, "title"),
        type=inputs.string(data, "type"), tags=inputs.strings(data, "tags"),
        paths=inputs.strings(data, "paths"), tenured=inputs.boolean(data, "tenured"),
        actor=who.name, reason=inputs.string(data, "reason") or "",
    )
    return jsonify(result.to_dict())


@bp.delete("/namespaces/<ns>/memories/<memory_id>")
def forget(ns: str, memory_id: str) -> Response:
    """Archive a memory (writer), or delete its file with ?purge=true (admin)."""
    purge = inputs.query_bool("purge")
    who = require(ns, "admin" if purge else "writer")
    reason = request.args.get("reason") or None
    return jsonify(service().forget(ns, memory_id, purge=purge, reason=reason, actor=who.name).to_dict())


@bp.post("/namespaces/<ns>/memories/<memory_id>/purge-history")
def purge_history(ns: str, memory_id: str) -> tuple[Response, int]:
    """Ask to purge a memory from every commit (admin, with a reason): opens a review an admin approves."""
    who = require(ns, "admin")
    data = inputs.body()
    inputs.known(data, "reason")
    reason = inputs.string(data, "reason", required=True) or ""
    review = service().purge_history(ns, memory_id, actor=who.name, reason=reason)
    return jsonify(review.to_dict()), 201


@bp.post("/namespaces/<ns>/memories/<memory_id>/choose")
def choose(ns: str, memory_id: str) -> Response:
    """Make an option the techchoice's active one, for a reason (writer): an append-only change."""
    who = require(ns, "writer")
    data = inputs.body()
    inputs.known(data, "option", "reason", "pros", "cons", "description", "config", "status")
    result = service().choose(
        ns, memory_id, inputs.string(data, "option", required=True) or "",
        reason=inputs.string(data, "reason", required=True) or "",
        pros=inputs.strings(data, "pros") or (), cons=inputs.strings(data, "cons") or (),
        description=inputs.string(data, "description"), config=inputs.string(data, "config"),
        status=inputs.string(data, "status"), actor=who.name,
    )
    return jsonify(result.to_dict())


@bp.post("/namespaces/<ns>/import")
def import_memories(ns: str) -> Response:
    """Import another store's memories, given as files, in one commit (admin); ``dry_run`` writes nothing.

    A namespace that does not exist yet is created, as ``POST /namespaces`` would for the same
    admin key (a dry run creates none and reports the import into an empty one).
    """
    who = require(ns, "admin")
    data = inputs.body()
    inputs.known(data, "format", "files", "dry_run")
    fmt = inputs.string(data, "format", required=True) or ""
    dry_run = inputs.boolean(data, "dry_run") or False
    report = service().import_memories(ns, fmt, data.get("files"), dry_run=dry_run, actor=who.name, origin="the API",
                                       create=True)
    return jsonify(report.to_dict())


@bp.get("/namespaces/<ns>/memories/<memory_id>/history")
def history(ns: str, memory_id: str) -> Response:
    """List a page of the commits on main that changed a memory, newest first."""
    require(ns, "reader")
    offset = inputs.query_int("offset", 0, 0, 10**9)
    limit = inputs.query_int("limit", 50, 1, MAX_PAGE)
    commits = service().history(ns, memory_id)
    items = [commit_dict(c) for c in commits[offset:offset + limit]]
    return jsonify(inputs.page(items, offset, limit, len(commits) > offset + limit))


@bp.get("/namespaces/<ns>/memories/<memory_id>/discussion")
def discussion(ns: str, memory_id: str) -> Response:
    """List a memory's discussion thread, oldest first."""
    require(ns, "reader")
    return jsonify({"items": [c.to_dict() for c in service().discussion(ns, memory_id)]})


@bp.post("/namespaces/<ns>/memories/<memory_id>/restore")
def restore(ns: str, memory_id: str) -> Response:
    """Bring a memory back to how it was at the given commit (reviewer)."""
    who = require(ns, "reviewer")
    data = inputs.body()
    inputs.known(data, "commit")
    commit = inputs.string(data, "commit", required=True) or ""
    return jsonify(service().restore(ns, memory_id, commit, actor=who.name).to_dict())


# --- recall and context ---------------------------------------------------------------------------


@bp.get("/namespaces/<ns>/recall")
def recall(ns: str) -> Response:
    """Recall memories matching ?q= and ?path= for a reader; ?dry=true records no use."""
    require(ns, "reader")
    limit = inputs.query_int("limit", 10, 1, MAX_PAGE)
    hits = service().recall(ns, request.args.get("q", ""), path=request.args.getlist("path"),
                            limit=limit, record=not inputs.query_bool("dry"))
    return jsonify({"items": [h.to_dict() for h in hits]})


@bp.route("/namespaces/<ns>/context", methods=["GET", "POST"])
def context(ns: str) -> Response:
    """Give the memory block an agent should load for some files, as Markdown or (if accepted) JSON."""
    require(ns, "reader")
    if request.method == "POST":
        data = inputs.body()
        inputs.known(data, "files", "q", "limit")
        files = inputs.strings(data, "files") or []
        query = inputs.string(data, "q") or ""
        limit = data.get("limit", 20)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"field 'limit' must be a whole number from 1 to {MAX_PAGE}")
    else:
        files = request.args.getlist("file")
        query = request.args.get("q", "")
        limit = inputs.query_int("limit", 20, 1, MAX_PAGE)
    block = service().context(ns, files, query, limit)
    if "application/json" in request.headers.get("Accept", ""):
        return jsonify({"namespace": ns, "files": files, "context": block})
    return Response(block, mimetype="text/markdown")


# --- commits --------------------------------------------------------------------------------------


def commit_dict(info: Any) -> dict[str, Any]:
    """A commit as the API shows it."""
    return {"id": info.id, "summary": info.summary, "message": info.message, "time": info.time,
            "actor": info.actor, "action": info.action, "memory_ids": list(info.memory_ids),
            "parents": list(info.parents)}


@bp.get("/namespaces/<ns>/commits")
def log(ns: str) -> Response:
    """List a page of the commits on main, newest first."""
    require(ns, "reader")
    offset = inputs.query_int("offset", 0, 0, 10**9)
    limit = inputs.query_int("limit", 20, 1, MAX_PAGE)
    commits = service().log(ns, limit=limit + 1, offset=offset)
    return jsonify(inputs.page([commit_dict(c) for c in commits[:limit]], offset, limit,
                               len(commits) > limit))


@bp.post("/namespaces/<ns>/commits/<commit>/revert")
def revert(ns: str, commit: str) -> Response:
    """Undo a commit of main with a new commit (reviewer)."""
    who = require(ns, "reviewer")
    return jsonify(service().revert(ns, commit, actor=who.name).to_dict())


# --- consolidation --------------------------------------------------------------------------------


@bp.post("/namespaces/<ns>/consolidate")
def consolidate(ns: str) -> tuple[Response, int]:
    """Queue a consolidation run (writer, 202), or with ``dry_run`` return its plan (reader, 200)."""
    data = inputs.body()
    inputs.known(data, "dry_run")
    dry_run = bool(inputs.boolean(data, "dry_run"))
    who = require(ns, "reader" if dry_run else "writer")
    if dry_run:
        return jsonify({"dry_run": True, "plan": service().plan(ns).to_dict()}), 200
    try:
        # A request never waits for a run: it goes to the workers.
        sent = service().dispatch(ns, background=True, started_by=f"{who.name} (the API)")
    except (OSError, OperationalError) as exc:
        raise Unavailable(f"the task broker did not answer ({exc}); try again later") from None
    return jsonify({"dry_run": False, "task_id": sent.task, "status": "queued"}), 202


# --- conversations --------------------------------------------------------------------------------


@bp.post("/namespaces/<ns>/conversations/<conversation>/messages")
def ingest(ns: str, conversation: str) -> tuple[Response, int]:
    """Buffer a batch of a conversation's messages (writer); 202: stored, distilled on the workers."""
    require(ns, "writer")
    data = inputs.body()
    inputs.known(data, "messages", "flush")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise InvalidInput("messages must be a list of {id, role, author, text, time} objects")
    try:
        done = service().ingest(ns, conversation, messages, source="api", flush=bool(inputs.boolean(data, "flush")),
                                background=True)
    except (OSError, OperationalError) as exc:
        # The messages are stored; the sweep on the workers' beat queues their buffer again.
        raise Unavailable(f"the messages are stored, but the task broker did not answer ({exc}); they are "
                          "distilled once it does") from None
    return jsonify(done.to_dict()), 202


@bp.get("/namespaces/<ns>/conversations")
def conversations(ns: str) -> Response:
    """Ingestion counters and the newest buffers of a namespace (reader)."""
    require(ns, "reader")
    return jsonify(service().ingest_status(ns))


# --- reviews --------------------------------------------------------------------------------------



@bp.get("/namespaces/<ns>/reviews")
def list_reviews(ns: str) -> Response:
    """List a page of a namespace's reviews, optionally only those with ?status=."""
    require(ns, "reader")
    state = request.args.get("status") or None
    if state is not None and state not in REVIEW_STATUSES:
        raise InvalidInput(f"unknown review status {state!r}; use one of: {', '.join(REVIEW_STATUSES)}")
    offset = inputs.query_int("offset", 0, 0, 10**9)
    limit = inputs.query_int("limit", 50, 1, MAX_PAGE)
    service().require(ns)
    found = reviews().list(ns, status=state)
    items = [r.to_dict() for r in found[offset:offset + limit]]
    return jsonify(inputs.page(items, offset, limit, len(found) > offset + limit))


def review_number(number: str) -> int:
    """The review number in a URL; :class:`InvalidInput` unless it is a whole number."""
    # ASCII digits only: str.isdigit() and int() also take other scripts' digits ("٣" is 3).
    if not re.fullmatch(r"[0-9]{1,9}", number):
        raise InvalidInput(f"{number!r} is not a review number")
    return int(number)


@bp.get("/namespaces/<ns>/reviews/<number>")
def show_review(ns: str, number: str) -> Response:
    """Show a review with each of its commits and their diffs."""
    require(ns, "reader")
    n = review_number(number)
    service().require(ns)
    review = reviews().get(ns, n)
    commits = reviews().diff(ns, n)
    return jsonify(review.to_dict() | {"commits": [c.to_dict() for c in commits]})


@bp.post("/namespaces/<ns>/reviews/<number>/approve")
def approve(ns: str, number: str) -> Response:
    """Approve a review (reviewer): merge its open commits, or only those listed in ``commits``, into main.

    ``expected``: how many commits the caller saw to merge; ``version``: the review's ``version`` the
    caller saw. Any other number or version merges nothing (409).
    """
    who = require(ns, "reviewer")
    data = inputs.body()
    inputs.known(data, "commits", "expected", "version")
    n = review_number(number)
    expected = _expected(data)
    service().require(ns)
    review = reviews().approve(ns, n, actor=who.name, commits=inputs.strings(data, "commits"), expected=expected,
                               version=inputs.string(data, "version"), admin=who.allows(ns, "admin"))
    return jsonify(review.to_dict())


def _expected(data: dict[str, Any]) -> int | None:
    """The ``expected`` count of a decision's body, if given: a whole number, 1 or more."""
    expected = data.get("expected")
    if expected is not None and (isinstance(expected, bool) or not isinstance(expected, int) or expected < 1):
        raise InvalidInput("expected must be a whole number of commits, 1 or more")
    return expected


@bp.post("/namespaces/<ns>/reviews/<number>/reject")
def reject(ns: str, number: str) -> Response:
    """Turn down what is left of a review, or only the ``commits`` listed (reviewer); main is not touched.

    ``reason`` is required unless one commit is listed. ``expected`` and ``version``: what the caller
    saw; any other number or version decides nothing (409).
    """
    who = require(ns, "reviewer")
    data = inputs.body()
    inputs.known(data, "reason", "commits", "expected", "version")
    n = review_number(number)
    expected = _expected(data)
    service().require(ns)
    review = reviews().reject(ns, n, actor=who.name, reason=inputs.string(data, "reason") or "",
                              commits=inputs.strings(data, "commits"), version=inputs.string(data, "version"),
                              expected=expected)
    return jsonify(review.to_dict())


@bp.post("/namespaces/<ns>/reviews/<number>/comments")
def comment(ns: str, number: str) -> Response:
    """Add a comment to a review's thread (writer)."""
    who = require(ns, "writer")
    data = inputs.body()
    inputs.known(data, "text")
    n = review_number(number)
    service().require(ns)
    text = inputs.string(data, "text", required=True) or ""
    return jsonify(reviews().comment(ns, n, actor=who.name, text=text).to_dict())
