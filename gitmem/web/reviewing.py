"""The review pages: the list, and a review a person can finish, a page of commits at a time.

A review page groups its commits by kind (merge, supersede, link, archive, edit...), pages and
filters them, and says which is next to decide. Each open commit has its own Approve and Skip;
bulk actions (Approve all, Approve selected, Reject selected, Reject all open) name their count
on the button, ask to confirm (the browser's dialog, or a confirmation page without script), and
post the commit ids they decide with the version of the review the page showed: the server
decides exactly those, and nothing on a version that is no longer current (so boxes a Back
button restores never decide anything). Changes that lose words are flagged and left out of
Approve all unless ticked. After an action the page returns to where the reviewer was.
"""

from __future__ import annotations

from typing import Any

from flask import Response, abort, flash, make_response, render_template, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from ..errors import GitmemError, PermissionDenied
from ..service import REVIEW_STATUSES, summarise
from ..wording import plural
from .api import review_number, reviews, service
from .pages import back, bp, signed_in

#: Bulk actions: what each decides, and the verb its confirmation uses.
BULK = {"approve-all": "Merge", "approve-selected": "Merge", "reject-selected": "Reject", "reject-rest": "Reject"}
_WHERE = ("kind", "state", "lossy", "page")


@bp.get("/ns/<ns>/reviews")
def review_list(ns: str) -> str:
    """List a namespace's reviews, optionally only those with ?status=."""
    signed_in(ns)
    state = request.args.get("status") or None
    if state not in (None, *REVIEW_STATUSES):
        state = None
    service().require(ns)
    return render_template("reviews.html", ns=ns, reviews=reviews().list(ns, status=state),
                           status=state, states=REVIEW_STATUSES)


def _where(values: Any) -> dict[str, Any]:
    """The page's place (filter and page number) from a query or a form, as strings."""
    return {k: str(values.get(k)) for k in _WHERE if values.get(k)}


@bp.get("/ns/<ns>/reviews/<number>")
def review(ns: str, number: str) -> Response:
    """Show a review like a pull request: what changes, grouped by kind, a page of commits with their diffs.

    ``?kind=``, ``?state=`` and ``?lossy=1`` filter the commits; ``?page=`` pages them;
    ``?files=ID`` (or ``all``) shows those commits' file diffs, ``?view=split`` side by side.
    """
    who = signed_in(ns)
    n = review_number(number)
    service().require(ns)
    found = reviews().get(ns, n)
    listing = reviews().browse(ns, n, **_where(request.args))
    page = make_response(render_template(
        "review.html", ns=ns, review=found, listing=listing, commits=listing.ordered,
        summary=summarise(listing.ordered), can_review=who.allows(ns, "reviewer"), can_purge=who.allows(ns, "admin"),
        can_write=who.allows(ns, "writer"), split=request.args.get("view") == "split",
        pull=reviews().pull_advice(ns, found), where=listing.filter.query(),
        files=_files(request.args.get("files", ""), request.args.get("view") == "split")))
    # Back shows the review as it is now, never a kept copy with boxes ticked for another version.
    page.headers["Cache-Control"] = "no-store"
    return page


def _files(asked: str, split: bool) -> str | None:
    """Whose file diffs to show: ``all``, a commit id's first digits, or None (links to them instead)."""
    if asked == "all" or (split and not asked):
        return "all"
    asked = asked.lower()
    return asked if 4 <= len(asked) <= 40 and all(ch in "0123456789abcdef" for ch in asked) else None


def _ids(name: str) -> list[str]:
    """The commit ids a form posted under ``name``, each once, in order."""
    return list(dict.fromkeys(v for v in request.form.getlist(name) if v))


def _landing(ns: str, n: int, where: dict[str, Any], after: str | None) -> str:
    """Where the reviewer goes after a decision: the same filter, at the next open commit after ``after``."""
    try:
        listing = reviews().browse(ns, n, **where)
    except GitmemError:
        return url_for("pages.review", ns=ns, number=n)
    following = listing.next_undecided(after)
    if following is None:
        return url_for("pages.review", ns=ns, number=n, **listing.filter.query()) + "#decisions"
    page = listing.page_of(following.id)
    return url_for("pages.review", ns=ns, number=n, **listing.filter.query(page=page if page > 1 else None)) + \
        f"#commit-{following.id[:10]}"


def _decide(call: Any, message: str) -> bool:
    """Run a decision; flash what happened (or what went wrong); whether it happened."""
    try:
        call()
    except PermissionDenied:
        raise
    except GitmemError as exc:
        flash(str(exc), "error")  # the message says what went wrong and what to do
        return False
    if message:
        flash(message, "ok")
    return True


def _plural(n: int, word: str = "commit") -> str:
    return plural(n, word)


@bp.post("/ns/<ns>/reviews/<number>")
def review_action(ns: str, number: str) -> str | BaseResponse:
    """Comment on (writer), or decide (reviewer) from the review page.

    One commit: ``approve-one`` or ``skip-one`` with ``commit``. Several: ``approve-all`` (the
    ``lossless`` ids the page listed and any ticked), ``approve-selected``, ``reject-selected``
    (ticked ``commit`` ids; a reason), ``reject-rest`` (every open commit; a reason); each asks
    to confirm first unless ``confirmed=1``. Every decision carries the ``version`` the page showed.
    """
    n = review_number(number)
    action = request.form.get("action", "")
    where = _where(request.form)
    here = url_for("pages.review", ns=ns, number=n, **where)
    if action == "comment":
        who = signed_in(ns, "writer")
        text = request.form.get("text", "")
        _decide(lambda: reviews().comment(ns, n, actor=who.name, text=text), "Comment added.")
        return back(here + "#comments")
    who = signed_in(ns, "reviewer")
    version = request.form.get("version") or None
    if action in ("approve-one", "skip-one"):
        [commit] = _ids("commit")[:1] or [""]
        if not commit:
            abort(400, "the form must name the commit it decides (commit)")
        if version is None:
            abort(400, "the form must say which version of the review it showed (version)")
        if action == "approve-one":
            done = _decide(lambda: reviews().approve(ns, n, actor=who.name, commits=[commit], expected=1,
                                                     version=version, admin=who.allows(ns, "admin")),
                           f"Merged {commit[:10]}.")
        else:
            reason = request.form.get("reason") or None
            done = _decide(lambda: reviews().reject(ns, n, actor=who.name, reason=reason, commits=[commit],
                                                    version=version), f"Skipped {commit[:10]}.")
        return back(_landing(ns, n, where, commit) if done else here + f"#commit-{commit[:10]}")
    if action in BULK:
        return _bulk(ns, n, action, who.name, version, where, here, admin=who.allows(ns, "admin"))
    if action == "rerun":
        def rerun() -> None:
            reviews().check(ns, n, actor=who.name)  # a review main has overtaken stops blocking the run
            sent = service().dispatch(ns, background=True, started_by=f"{who.name} (the review page)")
            flash(f"Consolidation queued (task {sent.task}); its review appears in the list when it is ready."
                  if sent.task else "Consolidation ran again.", "ok")
        _decide(rerun, "")
        return back(here)
    abort(400, f"unknown review action {action!r}")


def _bulk(ns: str, n: int, action: str, actor: str, version: str | None, where: dict[str, Any],
          here: str, *, admin: bool = False) -> str | BaseResponse:
    """A decision about several commits: confirmed first, then exactly the ids posted, on the version seen."""
    if version is None:
        abort(400, "the form must say which version of the review it showed (version)")
    ids = _ids("commit")
    if action == "approve-all":
        ids = list(dict.fromkeys([*_ids("lossless"), *ids]))
    reason = (request.form.get("reason") or "").strip()
    rest = action == "reject-rest"
    count = int(request.form.get("count") or 0) if rest and (request.form.get("count") or "").isdigit() else None
    if not ids and not rest:
        flash("Select the commits first: tick their boxes.", "error")
        return back(here + "#decisions")
    if action.startswith("reject") and not reason:
        flash("Say why you reject them: a reason is required, so the author knows what to change.", "error")
        return back(here + "#decisions")
    if rest and count is None:
        abort(400, "the form must say how many commits it showed (count)")
    many = count if rest and count is not None else len(ids)
    if request.form.get("confirmed") != "1":
        shown = {c.id: c for c in reviews().browse(ns, n).ordered}
        return render_template("review_confirm.html", ns=ns, number=n, action=action, verb=BULK[action],
                               count=many, commits=[shown[i] for i in ids if i in shown], ids=ids,
                               reason=reason, version=version, where=where, here=here)
    if action.startswith("approve"):
        def approve() -> None:
            done = reviews().approve(ns, n, actor=actor, commits=ids, expected=len(ids), version=version, admin=admin)
            if action == "approve-all":
                # All that could merge did: record the ones main overtook, so the review can close.
                done = reviews().check(ns, n, actor=actor)
            stale = sum(1 for state in done.commit_states.values() if state == "stale")
            flash(f"Merged {_plural(len(ids))}; {_progress(done)}."
                  + (f" {stale} no longer appl{'ies' if stale == 1 else 'y'}: see below." if stale else ""), "ok")
        _decide(approve, "")
    else:
        def reject() -> None:
            done = reviews().reject(ns, n, actor=actor, reason=reason, commits=None if rest else ids,
                                    version=version, expected=many)
            flash(f"Rejected {_plural(many)}; {_progress(done)}.", "ok")
        _decide(reject, "")
    return back(_landing(ns, n, where, None))


def _progress(review: Any) -> str:
    """``review #3 is open (4 of 9 merged)``, ``review #3 is partly merged (8 of 9)`` and the like."""
    return f"review #{review.number} is {review.label}"
