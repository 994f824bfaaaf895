"""Review cards in Slack: the changes a card shows, and buttons that decide only those.

A card lists at most :data:`MAX_MERGES_SHOWN` open changes of a review. Its decision buttons
("Approve the N shown", "Reject the N shown…", or "Approve all (N)" when it shows every open
change) carry the ids of the changes shown and the review's version: the server decides exactly
those, and nothing once the review changed. A card shows decision buttons only to someone who
may decide: the review channel's card has none (everyone sees it), reviewers get their own copy
with them, and a list of reviews offers "Show" (the card, to the one who asked) and "View review".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from gitmem.wording import plural

from .blocks import Block, button, context, text_section
from .text import SECTION_LIMIT, clip, escape, person

APPROVE_REVIEW, REJECT_REVIEW = "gitmem_review_approve", "gitmem_review_reject"
SHOW_REVIEW = "gitmem_review_show"
VIEW_REVIEW = "gitmem_review_view"
REVIEW_ACTIONS_BLOCK = "gitmem_review_actions"
REVIEW_LIST_BLOCK = "gitmem_review_list"
OUTCOME_BLOCK = "gitmem_review_outcome"
# Block Kit allows 50 blocks a message: two for the heading, one per change, one for "...and N
# more", one for the buttons, and room for the outcome line added once it is decided.
MAX_MERGES_SHOWN = 40
#: Digits of a commit id a button carries: unique in any review, and 40 of them fit a button's value.
ID_DIGITS = 12


def review_value(namespace: str, number: int, ids: Sequence[str] = (), version: str | None = None) -> str:
    """The value of a review's buttons: the namespace, the review, the changes they decide and its version."""
    data: dict[str, Any] = {"n": namespace, "r": number}
    if ids:
        data["i"] = [str(i)[:ID_DIGITS] for i in ids]
    if version:
        data["v"] = version
    return json.dumps(data, separators=(",", ":"))


def parse_review_value(value: str) -> tuple[str, int]:
    """Read a review button's value back as ``(namespace, number)``."""
    data = json.loads(value)
    if not isinstance(data, dict):
        raise ValueError("button value is not an object")
    return str(data["n"]), int(data["r"])


def review_choice(value: str) -> tuple[list[str], str | None]:
    """The changes a review button decides and the version of the review it was drawn from.

    An empty list: a button from before buttons named their changes, which decides nothing.
    """
    data = json.loads(value)
    ids = data.get("i") if isinstance(data, dict) else None
    version = data.get("v") if isinstance(data, dict) else None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return [], None
    return list(ids), version if isinstance(version, str) else None


def review_url(public_url: str | None, namespace: str, number: int) -> str | None:
    """The review's page on the web app, when its address is configured."""
    if not public_url:
        return None
    return f"{public_url.rstrip('/')}/ns/{quote(namespace, safe='')}/reviews/{int(number)}"


def _confirm(title: str, text: str, yes: str, style: str = "primary") -> Block:
    return {"title": {"type": "plain_text", "text": clip(title, 100)},
            "text": {"type": "mrkdwn", "text": clip(text, 300)},
            "confirm": {"type": "plain_text", "text": clip(yes, 30)},
            "deny": {"type": "plain_text", "text": "Cancel"}, "style": style}


def _view(url: str) -> Block:
    return {"type": "button", "text": {"type": "plain_text", "text": "View review"}, "action_id": VIEW_REVIEW,
            "url": url}


def review_buttons(namespace: str, number: int, block_id: str = REVIEW_ACTIONS_BLOCK, *, shown: Sequence[str],
                   open_count: int, version: str | None, url: str | None = None) -> Block:
    """Approve / Reject the changes ``shown`` (and View review), in a block :func:`decided_blocks` removes.

    When the card shows every open change (``open_count``) Approve says "Approve all (N)";
    otherwise "Approve the N shown", and Reject turns down the shown ones too: a button never
    decides a change its card does not show. The ids and the review's version ride in the value.
    """
    n, rest = len(shown), open_count - len(shown)
    value = review_value(namespace, number, shown, version)
    changes = plural(n, "change")
    if rest > 0:
        label, reject_label = f"Approve the {n} shown", f"Reject the {n} shown…"
        where = "on the review page" if url else f"with `gitmem review show {number}`"
        text = (f"This merges the {changes} listed in this message into main. The other {rest} stay open: "
                f"see them {where}.")
    else:
        label, reject_label = f"Approve all ({n})", "Reject…"
        text = f"This merges the {changes} listed in this message into main."
    approve = button(label, APPROVE_REVIEW, value, "primary")
    approve["confirm"] = _confirm(f"Merge {changes} of review #{number}?", text, f"Merge {n}")
    reject = button(reject_label, REJECT_REVIEW, value, "danger")
    elements = [approve, reject]
    if url:
        elements.insert(0, _view(url))
    return {"type": "actions", "block_id": block_id, "elements": elements}


def _commit_text(index: int, commit: Mapping[str, Any]) -> str:
    """One commit of a review as mrkdwn: what becomes what, by whom, why, and the words lost."""
    memories = [m for m in commit.get("memories") or [] if isinstance(m, Mapping)]
    result = commit.get("result")
    reason = str(commit.get("reason") or "").split("\n\n")[0].removeprefix("Reason: ")
    head = f"*{index}.* {escape(clip(str(commit.get('summary') or ''), 200))}"
    lines = [head]
    if reason:
        lines.append(f"_{escape(clip(' '.join(reason.split()), 300))}_")
    for m in memories:
        if m.get("id") == result:
            continue
        text = escape(clip(" ".join(str(m.get("before") or m.get("after") or "").split()), 300))
        by = f" (by {person(m.get('author'))})" if m.get("author") else ""
        mark = {"removed": "−", "added": "+", "changed": "~"}.get(str(m.get("change")), "•")
        lines.append(f"{mark} {text}{by}")
        if m.get("change") == "changed" and m.get("after") != m.get("before"):
            lines.append(f"→ {escape(clip(' '.join(str(m.get('after') or '').split()), 300))}")
        lost = [str(w) for w in m.get("lost_words") or []]
        if lost:
            lines.append(f"    lost: ~{escape(clip(' '.join(lost), 200))}~")
    kept = next((m for m in memories if m.get("id") == result), None)
    if result:
        after = str((kept or {}).get("after") or "") or "(a memory kept as it is)"
        named = f" `{escape(str(result))}`" if str(result) != "after" else ""
        lines.append(f"*→ becomes*{named}: {escape(clip(' '.join(after.split()), 500))}")
    return clip("\n".join(lines), SECTION_LIMIT)


def merge_as_commit(merge: Mapping[str, Any]) -> dict[str, Any]:
    """A merge as an event lists it (``{"before": [texts], "after": text}``) in the shape of a review commit."""
    before = [str(t) for t in merge.get("before") or []]
    memories = [{"id": f"before-{i}", "change": "removed", "before": t} for i, t in enumerate(before)]
    memories.append({"id": "after", "change": "added", "after": str(merge.get("after") or "")})
    return {"summary": f"merge {len(before)} into one", "memories": memories, "result": "after", "state": "open"}


def review_blocks(namespace: str, review: Mapping[str, Any], summary: str, commits: Sequence[Mapping[str, Any]],
                  *, url: str | None = None, decide: bool = False) -> list[Block]:
    """A review card: the summary, as many open changes as Block Kit allows, and buttons for those alone.

    Slack takes at most 50 blocks and 3,000 characters a text: the card lists up to
    :data:`MAX_MERGES_SHOWN` open commits, one section each, and says how many more there are.
    ``decide``: whoever sees the card may decide (a reviewer's own copy); otherwise it has no
    decision buttons, only "View review" when the web app's address is known.
    """
    number = int(review["number"])
    open_commits = [c for c in commits if c.get("state", "open") == "open"]
    blocks: list[Block] = [
        text_section(f":broom: *Review #{number}* in `{escape(namespace)}`: {escape(summary)}"),
        context(f"{escape(str(review.get('title') or ''))} · opened by "
                f"{person(review.get('author'))} · `gitmem review show {number} -n {escape(namespace)}`"),
    ]
    shown = open_commits[:MAX_MERGES_SHOWN]
    for i, commit in enumerate(shown, 1):
        blocks.append(text_section(_commit_text(i, commit)))
    if len(open_commits) > len(shown):
        more = len(open_commits) - len(shown)
        where = "on the review page" if url else f"with `gitmem review show {number}`"
        blocks.append(context(f"…and {plural(more, 'more change')}, shown {where}."))
    ids = [str(c["id"]) for c in shown if c.get("id")]
    if decide and ids:
        blocks.append(review_buttons(namespace, number, shown=ids, open_count=len(open_commits),
                                     version=review.get("version"), url=url))
    elif url:
        blocks.append({"type": "actions", "block_id": REVIEW_ACTIONS_BLOCK, "elements": [_view(url)]})
    return blocks


def review_outcome(review: Mapping[str, Any]) -> str:
    """One line saying how a review ended (or that it is still open)."""
    status = str(review.get("status") or "open")
    who = person(review.get("decided_by")) if review.get("decided_by") else "someone"
    if status in ("approved", "merged"):
        merged = review.get("merged_commit")
        tail = f" · merged as `{escape(str(merged))[:10]}`" if merged else ""
        states = list((review.get("commit_states") or {}).values())
        total = int(review.get("commit_count") or 0)
        part = states.count("merged")
        if total and part < total:
            tail += f" · merged {part} of {total}"
        return f":white_check_mark: Approved by {who}{tail}"
    if status == "rejected":
        reason = ""
        comments = review.get("comments") or []
        if review.get("reason"):
            reason = str(review["reason"])
        elif comments and isinstance(comments[-1], Mapping):
            reason = str(comments[-1].get("text") or "")
        return f":no_entry_sign: Rejected by {who}" + (f": {escape(clip(reason, 300))}" if reason else "")
    if status == "stale":
        why = review.get("stale_reason") or "main changed the memories under review"
        return f":hourglass: Stale: {escape(str(why))}"
    merged = int(review.get("merged_count") or 0)
    if status == "open" and merged:
        total = int(review.get("commit_count") or 0)
        return f":white_check_mark: {who} merged {merged} of {total} so far; the rest is still open"
    return f"Review is {escape(status)}"


def decided_blocks(blocks: Sequence[Block], outcome: str) -> list[Block]:
    """A review message after the decision: the same text, no buttons, and the outcome."""
    kept = [b for b in blocks if not str(b.get("block_id", "")).startswith(REVIEW_ACTIONS_BLOCK)
            and b.get("block_id") != "gitmem_review_outcome"]
    return [*kept, context(outcome, block_id="gitmem_review_outcome")]


def review_list_blocks(namespace: str, reviews: Sequence[Mapping[str, Any]], public_url: str | None = None,
                       *, decide: bool = False) -> list[Block]:
    """Open reviews of a namespace, each with View review and (for who may decide) Show its changes.

    A list shows no change, so it has no button that decides one: "Show" answers with the
    review's card, whose buttons decide what it shows.
    """
    if not reviews:
        return [text_section(f"No open reviews in `{escape(namespace)}`.")]
    blocks: list[Block] = [text_section(f"*Open reviews in `{escape(namespace)}`*")]
    blocks[0]["block_id"] = REVIEW_LIST_BLOCK
    for review in reviews[:15]:
        number = int(review["number"])
        left = int(review.get("commit_count") or 0) - len(review.get("commit_states") or {})
        blocks.append(text_section(
            f"*#{number}* {escape(str(review.get('title') or ''))}\n"
            f"{escape(str(review.get('kind') or ''))} · by {person(review.get('author'))}"
            + (f" · {plural(left, 'change')} to decide" if left > 0 else "")))
        elements: list[Block] = []
        url = review_url(public_url, namespace, number)
        if url:
            elements.append(_view(url))
        if decide and left > 0:
            elements.append(button("Show changes", SHOW_REVIEW, review_value(namespace, number)))
        if elements:
            blocks.append({"type": "actions", "block_id": f"{REVIEW_ACTIONS_BLOCK}:{number}", "elements": elements})
    return blocks
