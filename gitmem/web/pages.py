"""HTML pages for people: dashboard, search, a memory, the memory graph (reviews: :mod:`.reviewing`).

Every page but the graph works without JavaScript. Sign-in puts a key's id in the (signed) session cookie;
every form post carries a per-session CSRF token and must come from this site's own origin.
Memory text is rendered as Markdown with raw HTML disabled, so a memory cannot run script here,
and with images shown as links, so a page never loads what a memory points at.
"""

from __future__ import annotations

import difflib
import hmac
import secrets
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Response,
    abort,
    flash,
    redirect,
    render_template,
    request,
    send_from_directory,
    session,
    url_for,
)
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup
from werkzeug.wrappers import Response as BaseResponse

from ..concepts import STATES, TYPES, iso
from ..errors import GitmemError, MemoryNotFound, PermissionDenied
from ..templating import templates_dir
from ..wording import article, plural
from .api import reviews, service
from .auth import Caller, Unauthenticated, end_session, keystore, require, session_key, start_session

bp = Blueprint("pages", __name__, static_folder=None)
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})


def _image_as_link(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict,
                   env: EnvType) -> str:
    """An image as a link to it (inside a link, its text alone).

    So a page never loads what a memory points at, such as a third-party tracking pixel.
    """
    token = tokens[idx]
    text = escapeHtml(self.renderInlineAsText(token.children or [], options, env))
    depth = sum({"link_open": 1, "link_close": -1}.get(t.type, 0) for t in tokens[:idx])
    if depth > 0:
        return text
    src = escapeHtml(str(token.attrGet("src") or ""))
    return f'<a href="{src}" class="image">{text or src}</a>'


_markdown.add_render_rule("image", _image_as_link)


def markdown(text: str) -> Markup:
    """Memory text as HTML: raw HTML in it is shown as text, never passed through; images as links."""
    return Markup(_markdown.render(text))  # noqa: S704 - html=False escapes every tag


@bp.app_template_filter("iso")
def _iso(moment: Any) -> str:
    return iso(moment) if isinstance(moment, datetime) else str(moment or "")


# "1 commit", "2 commits"; "an admin": the wording every surface shares (gitmem.wording).
bp.add_app_template_filter(plural, "plural")
bp.add_app_template_filter(article, "article")


@bp.app_template_filter("timestamp")
def _timestamp(seconds: Any) -> str:
    return iso(datetime.fromtimestamp(int(seconds), UTC))


@bp.app_template_filter("human")
def human_time(moment: Any, at: datetime | None = None) -> str:
    """A moment as a person says it: ``just now``, ``5 minutes ago``, ``yesterday``, ``3 Mar 2024``."""
    if isinstance(moment, int | float):
        moment = datetime.fromtimestamp(moment, UTC)
    if not isinstance(moment, datetime):
        return str(moment or "")
    # gitmem writes UTC; a time without a zone is one of those.
    when: datetime = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    at = at or datetime.now(UTC)
    seconds = (at - when).total_seconds()
    if seconds < 0:
        return when.strftime("%-d %b %Y %H:%M")
    for limit, size, unit in ((60, 1, ""), (3600, 60, "minute"), (86400, 3600, "hour"), (7 * 86400, 86400, "day")):
        if seconds < limit:
            if not unit:
                return "just now"
            n = int(seconds // size)
            if unit == "day" and n == 1:
                return "yesterday"
            return f"{plural(n, unit)} ago"
    return when.strftime("%-d %b %Y")


def side_by_side(old: str | None, new: str | None) -> Markup:
    """A two-column diff table (difflib escapes every line it shows)."""
    table = difflib.HtmlDiff(wrapcolumn=60).make_table(
        (old or "").splitlines(), (new or "").splitlines(), "before", "after", context=True, numlines=2)
    return Markup(table)  # noqa: S704 - HtmlDiff escapes &, < and > in every line


# --- session, CSRF ---------------------------------------------------------------------------------


def csrf_token() -> str:
    """This session's CSRF token, made on first use; every form posts it back."""
    token = session.get("csrf")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        session["csrf"] = token
    return token


@bp.app_context_processor
def _globals() -> dict[str, Any]:
    return {"csrf_token": csrf_token, "markdown": markdown, "side_by_side": side_by_side,
            "signed_in": session.get("key_name"), "open_review_count": _open_review_count}


def _open_review_count(ns: str) -> int:
    """How many reviews of ``ns`` are open, for the navigation; 0 when they cannot be read."""
    return len(open_reviews(ns))


@bp.before_request
def _check_post() -> None:
    if request.method != "POST":
        return
    origin = request.headers.get("Origin") or request.headers.get("Referer")
    if origin and urlsplit(origin).netloc != request.host:
        abort(403, "this form was posted from another site")
    sent = request.form.get("csrf_token", "")
    token = session.get("csrf")
    if not isinstance(token, str) or not hmac.compare_digest(sent, token):
        abort(403, "the form expired or did not come from this site; reload the page and try again")


def signed_in(namespace: str, role: str = "reader") -> Caller:
    """The caller of a page, who needs ``role`` on ``namespace``; others are sent to sign in."""
    return require(namespace, role, allow_session=True)


@bp.errorhandler(Unauthenticated)
def _sign_in_first(exc: Unauthenticated) -> BaseResponse:
    flash(str(exc))
    here = request.full_path.rstrip("?") if request.method == "GET" else None
    return redirect(url_for("pages.login", next=here))


def back(default: str) -> BaseResponse:
    """Redirect to ``default`` after a form post (303, so the browser follows with a GET)."""
    return redirect(default, code=303)


def local_target(target: str | None, default: str) -> str:
    r"""``target`` when it is a path on this site, else ``default``: where to send a browser next.

    Browsers drop tabs and line breaks from URLs, trim spaces and read ``\`` as ``/``, so
    ``/<TAB>/evil.example`` or ``/\evil.example`` would become ``//evil.example``, another site.
    Only a plain path starting with a single ``/`` passes: no whitespace, no control or format
    characters, no backslash, and neither scheme nor host once split as a URL.
    """
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return default
    if any(ch.isspace() or unicodedata.category(ch).startswith("C") for ch in target):
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return default
    return target


def act(message: str, target: str, call: Any) -> BaseResponse:
    """Run a write for a form post; show what happened (or what went wrong) on ``target``."""
    try:
        call()
    except PermissionDenied:
        raise
    except GitmemError as exc:
        flash(str(exc), "error")  # the message says what went wrong; the class name says nothing more
    else:
        if message:
            flash(message, "ok")
    return back(target)


# --- sign-in --------------------------------------------------------------------------------------


@bp.route("/login", methods=["GET", "POST"])
def login() -> str | tuple[str, int] | BaseResponse:
    """Show the sign-in form; on POST, sign in with an API key and go on to ?next=."""
    target = local_target(request.values.get("next"), url_for("pages.index"))
    if request.method == "POST":
        stored = keystore().verify(request.form.get("key", ""))
        if stored is None:
            flash("that key is not valid (revoked, mistyped or never made)", "error")
            return render_template("login.html", next=target), 401
        start_session(stored)
        csrf_token()
        return back(target)
    return render_template("login.html", next=target)


@bp.post("/logout")
def logout() -> BaseResponse:
    """Sign out (every copy of this session's cookie too) and go to the sign-in page."""
    end_session()
    return back(url_for("pages.login"))


@bp.get("/")
def index() -> str | BaseResponse:
    """Send a signed-in person to their one namespace's dashboard, or list the namespaces they can see."""
    if not session.get("key_id"):
        return redirect(url_for("pages.login"))
    stored = session_key()  # Unauthenticated (signed out, revoked) sends them to sign in
    names = [n for n in service().namespaces() if stored.covers(n)]
    if len(names) == 1:
        return redirect(url_for("pages.dashboard", ns=names[0]))
    return render_template("index.html", namespaces=names)


# --- namespace pages ------------------------------------------------------------------------------


def open_reviews(ns: str) -> list[Any]:
    """A namespace's open reviews; none if they cannot be read, so the dashboard still shows."""
    try:
        return list(reviews().list(ns, status="open"))
    except GitmemError:
        return []


@bp.get("/ns/<ns>/")
def dashboard(ns: str) -> str:
    """Show a namespace's dashboard: its status, strongest memories and open reviews."""
    signed_in(ns)
    status = service().status(ns)
    strongest = service().recall(ns, "", limit=10, record=False)
    return render_template("dashboard.html", ns=ns, status=status, strongest=strongest,
                           reviews=open_reviews(ns), types=TYPES, states=STATES)


@bp.get("/ns/<ns>/search")
def search(ns: str) -> str:
    """Search a namespace's memories by ?q= and ?path=, without recording a use."""
    signed_in(ns)
    query = request.args.get("q", "")
    path = request.args.get("path", "")
    hits = []
    if query.strip() or path.strip():
        hits = service().recall(ns, query, path=path or None, limit=50, record=False)
    return render_template("search.html", ns=ns, q=query, path=path, hits=hits)


# The graph page runs only its own scripts; the layout runs in a worker made from a blob.
GRAPH_CSP = ("default-src 'self'; script-src 'self'; worker-src blob:; style-src 'self'; img-src 'self' data:; "
             "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


GRAPH_EMBED_AT_MOST = 256


@bp.get("/ns/<ns>/graph")
def graph(ns: str) -> Response:
    """Show a namespace's memory graph: memories as nodes, their links as edges, with filters and search."""
    signed_in(ns)
    # A request embeds a few new memories' texts, never a whole namespace's (`gitmem vectors` does).
    found = service().graph(ns, embed_at_most=GRAPH_EMBED_AT_MOST)
    memory_url = url_for("pages.dashboard", ns=ns) + "memories/"
    response = Response(render_template("graph.html", ns=ns, data=found.script_json(), memory_url=memory_url))
    response.headers["Content-Security-Policy"] = GRAPH_CSP
    return response


# Rows of a memory's history where Revert means nothing: a confirmation, a comment, folded uses.
NO_REVERT = frozenset({"confirm", "discuss", "usage", "reinforce", "revert", "init"})


@bp.get("/ns/<ns>/memories/<memory_id>")
def memory(ns: str, memory_id: str) -> str | BaseResponse:
    """Show a memory with its history (each commit's text diff) and discussion, and the actions the caller may take."""
    who = signed_in(ns)
    try:
        found = service().show(ns, memory_id, record=True)  # a person opened it: a use
    except MemoryNotFound as exc:
        pointed = reviews().missing(ns, memory_id, exc)
        if pointed.replaced_by is None:
            raise
        flash(f"Memory {memory_id} was merged into this one.", "ok")
        return redirect(url_for("pages.memory", ns=ns, memory_id=pointed.replaced_by))
    history = service().history(ns, memory_id)
    diffs = {c.id: [d for d in reviews().commit_diff(ns, c.id) if d.id == memory_id] for c in history}
    return render_template("memory.html", ns=ns, memory=found, history=history, diffs=diffs,
                           discussion=service().discussion(ns, memory_id), in_review=reviews().open_for(ns, memory_id),
                           no_revert=NO_REVERT, can_write=who.allows(ns, "writer"),
                           can_review=who.allows(ns, "reviewer"))


@bp.post("/ns/<ns>/memories/<memory_id>/feedback")
def memory_feedback(ns: str, memory_id: str) -> BaseResponse:
    """Confirm, reject, discuss or amend a memory from the form on its page (writer)."""
    who = signed_in(ns, "writer")
    action = request.form.get("action", "")
    text = request.form.get("text") or None
    target = url_for("pages.memory", ns=ns, memory_id=memory_id)
    done = {"confirm": "Confirmed.", "reject": "Rejected and archived.", "discuss": "Comment added.",
            "amend": "Amendment saved."}.get(action, "Done.")
    if action == "reject" and not (text or "").strip():
        # As a review's reject: archiving someone's memory needs a reason they can read.
        flash("Say why it is wrong: rejecting archives the memory, and a reason is required.", "error")
        return back(target)

    def call() -> None:
        result = service().feedback(ns, memory_id, action, actor=who.name, text=text, role=who.role)
        if result.review is not None:
            flash(f"Your amendment opened review #{result.review}.", "ok")

    return act(done, target, call)


@bp.get("/ns/<ns>/commits/<commit>")
def commit(ns: str, commit: str) -> str:
    """Show one commit: who, when, why, and what it did to each memory."""
    signed_in(ns)
    info = reviews().commit_info(ns, commit)
    return render_template("commit.html", ns=ns, info=info, changes=reviews().commit_diff(ns, commit))


@bp.get("/ns/<ns>/commits/<commit>/revert")
def revert_preview(ns: str, commit: str) -> str | tuple[str, int]:
    """Show what reverting a commit would do, with the button that does it (reviewer)."""
    signed_in(ns, "reviewer")
    target = local_target(request.args.get("back"), url_for("pages.dashboard", ns=ns))
    try:
        info = reviews().commit_info(ns, commit)
        changes = reviews().revert_preview(ns, commit)
    except GitmemError as exc:
        return render_template("revert.html", ns=ns, commit=commit, info=None, changes=[], problem=str(exc),
                               back=target), exc.http_status
    return render_template("revert.html", ns=ns, commit=commit, info=info, changes=changes, problem=None,
                           back=target)


@bp.post("/ns/<ns>/commits/<commit>/revert")
def revert(ns: str, commit: str) -> BaseResponse:
    """Revert a commit from its preview page's form (reviewer) and go back to the page it came from."""
    who = signed_in(ns, "reviewer")
    target = local_target(request.form.get("back"), url_for("pages.dashboard", ns=ns))
    return act(f"Reverted {commit[:10]}.", target, lambda: service().revert(ns, commit, actor=who.name))


@bp.post("/ns/<ns>/memories/<memory_id>/restore")
def restore(ns: str, memory_id: str) -> BaseResponse:
    """Bring a memory back to how it was after one commit of its history (reviewer)."""
    who = signed_in(ns, "reviewer")
    commit = request.form.get("commit", "")
    target = url_for("pages.memory", ns=ns, memory_id=memory_id)
    return act(f"Restored as of {commit[:10]}.", target,
               lambda: service().restore(ns, memory_id, commit, actor=who.name))


@bp.get("/static/<path:name>")
def static(name: str) -> Response:
    """Serve the pages' stylesheet and other static files, cached for an hour."""
    return send_from_directory(templates_dir() / "web" / "static", name, max_age=3600)
