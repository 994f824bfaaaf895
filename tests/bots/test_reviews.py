"""Consolidation from Slack, the review message it posts, and Approve / Reject for reviewers only."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points

import pytest

from bots.slack.notify import on_event
from gitmem import notify
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.bots.conftest import BOB, CHANNEL, REVIEW_CHANNEL, REVIEWER, Slack
from tests.fakes.slack_api import Call, FakeSlack

RELATED = ("the deploy script needs the staging token set",
           "the deploy script needs the staging token and the region set",
           "set the staging token before running the deploy script")


def installed() -> bool:
    return any(p.value == "bots.slack.notify:on_event" for p in entry_points(group=notify.ENTRY_POINT_GROUP))


@pytest.fixture(autouse=True)
def notifier() -> Iterator[None]:
    """The Slack notifier, as the entry point when the package is installed with it, else in-process."""
    if installed():
        yield
        return
    notify.subscribe(on_event)
    try:
        yield
    finally:
        notify.unsubscribe(on_event)


@pytest.fixture
def related(svc: MemoryService) -> list[str]:
    """Three agent memories that consolidation merges into one."""
    return [str(svc.remember("default", text, source="agent").memory.id) for text in RELATED]  # type: ignore[union-attr]


def run_consolidation(slack: Slack) -> Call:
    """/mem consolidate, then Run it; returns the review message posted to the review channel."""
    slack.command("consolidate")
    plan = slack.last("respond")
    slack.press(plan, "gitmem_consolidate_run")
    posted = [c for c in slack.calls("chat.postMessage") if c.args["channel"] == REVIEW_CHANNEL]
    assert len(posted) == 1
    return posted[0]


def reviewers_copy(slack: Slack) -> Call:
    """The card the reviewer was sent for the last review: the one with decision buttons."""
    return [c for c in slack.calls("chat.postMessage") if c.args["channel"] == REVIEWER][-1]


def buttons(call: Call) -> dict[str, dict[str, object]]:
    """A message's buttons by action id."""
    return {e["action_id"]: e for b in call.blocks if b["type"] == "actions" for e in b["elements"]}


def test_consolidate_shows_the_plan_and_changes_nothing(slack: Slack, svc: MemoryService, related: list[str]) -> None:
    head = slack.commits()[0].id
    slack.command("consolidate")
    plan = slack.last("respond")
    assert "1 cluster of 3 memories" in plan.text
    for text in RELATED:
        assert text in plan.text
    assert "gitmem_consolidate_run" in json.dumps(plan.blocks)
    assert slack.commits()[0].id == head
    assert svc.reviews.list("default") == []


def test_cancel_changes_nothing(slack: Slack, svc: MemoryService, related: list[str]) -> None:
    slack.command("consolidate")
    slack.press(slack.last("respond"), "gitmem_consolidate_cancel")
    assert "cancelled" in slack.last("respond").text
    assert svc.reviews.list("default") == []


def test_consolidate_with_nothing_to_do_has_no_run_button(slack: Slack) -> None:
    slack.command("consolidate")
    plan = slack.last("respond")
    assert "Nothing to consolidate" in plan.text
    assert "gitmem_consolidate_run" not in json.dumps(plan.blocks)


def test_running_posts_the_review_with_merges_and_buttons(slack: Slack, svc: MemoryService, related: list[str]) -> None:
    head = slack.commits()[0].id
    message = run_consolidation(slack)
    (review,) = svc.reviews.list("default", status="open")
    assert review.kind == "consolidation"
    assert slack.commits()[0].id == head  # nothing reaches main before approval
    # The third says something the others do not (run it before): kept apart, linked, not merged away.
    assert f"consolidated 2 memories into 1, review #{review.number}" in message.text
    sections = [b["text"]["text"] for b in message.blocks if b["type"] == "section"]
    [merge] = [t for t in sections if t.startswith("*1.* consolidate: merge 2 into")]
    assert all(text in merge for text in RELATED[:2]) and "*→ becomes*" in merge
    assert "_offline rules" in merge and "nothing is lost" in merge  # the reason
    # Everyone in the channel sees this card: it decides nothing. The reviewer's own copy does.
    assert buttons(message) == {}  # no decision buttons, and no web address configured for View review
    copy = reviewers_copy(slack)
    assert copy.blocks[:-1] == message.blocks and RELATED[1] in json.dumps(copy.blocks)
    approve = buttons(copy)["gitmem_review_approve"]
    assert approve["text"]["text"] == "Approve all (1)"  # the card shows every open change
    assert approve["confirm"]["text"]["text"] == "This merges the 1 change listed in this message into main."
    [shown] = svc.reviews.diff("default", review.number)
    assert json.loads(approve["value"]) == {"n": "default", "r": review.number, "i": [shown.id[:12]],
                                            "v": review.version}
    assert "gitmem_review_reject" in buttons(copy)
    result = slack.last("respond")  # to alice, who ran it: she is no reviewer, so no buttons
    assert result.args["replace_original"] is True and "gitmem_review_approve" not in json.dumps(result.blocks)
    assert f"review #{review.number}" in result.text


def test_only_reviewers_may_approve(slack: Slack, svc: MemoryService, related: list[str]) -> None:
    run_consolidation(slack)
    message = reviewers_copy(slack)
    head = slack.commits()[0].id
    slack.press(message, "gitmem_review_approve", user=BOB)  # a payload forged or forwarded: still refused
    refusal = slack.last("chat.postEphemeral")
    assert refusal.args["user"] == BOB and refusal.args["channel"] == REVIEWER
    assert "Only reviewers can approve" in refusal.text and f"<@{REVIEWER}>" in refusal.text
    assert [r.status for r in svc.reviews.list("default")] == ["open"]
    assert slack.commits()[0].id == head
    assert not slack.calls("chat.update")


def test_approve_merges_and_updates_the_message_for_everyone(
        slack: Slack, svc: MemoryService, related: list[str], fsck: Callable[[str], None]) -> None:
    message = run_consolidation(slack)
    copy = reviewers_copy(slack)
    slack.press(copy, "gitmem_review_approve", user=REVIEWER)
    (review,) = svc.reviews.list("default")
    assert review.status == "merged" and review.decided_by == f"slack:{REVIEWER}"
    assert svc.status("default")["by_state"]["active"] == 2  # the merged rule and the one kept apart
    updates = slack.calls("chat.update")
    # The channel's card and the reviewer's copy each show the outcome, once.
    assert sorted((u.args["channel"], u.args["ts"]) for u in updates) == sorted(
        [(REVIEW_CHANNEL, message.response["ts"]), (REVIEWER, copy.response["ts"])])
    for last in updates:
        assert f"Approved by <@{REVIEWER}>" in last.text
        assert "gitmem_review_approve" not in json.dumps(last.blocks)
        assert RELATED[1] in json.dumps(last.blocks)  # the merges stay visible
    fsck("default")


def test_only_reviewers_may_reject(slack: Slack, svc: MemoryService, related: list[str]) -> None:
    run_consolidation(slack)
    slack.press(reviewers_copy(slack), "gitmem_review_reject", user=BOB)
    assert "Only reviewers can reject" in slack.last("chat.postEphemeral").text
    assert not slack.calls("views.open")
    assert [r.status for r in svc.reviews.list("default")] == ["open"]


def test_reject_asks_why_and_closes_the_review(slack: Slack, svc: MemoryService, related: list[str]) -> None:
    message = run_consolidation(slack)
    head = slack.commits()[0].id
    slack.press(reviewers_copy(slack), "gitmem_review_reject", user=REVIEWER)
    modal = slack.last("views.open")
    assert modal.view["callback_id"] == "gitmem_reject_review"
    assert slack.submit(modal, "", user=REVIEWER).get_json()["response_action"] == "errors"
    assert [r.status for r in svc.reviews.list("default")] == ["open"]
    slack.submit(modal, "the region is not always needed", user=REVIEWER)
    (review,) = svc.reviews.list("default")
    assert review.status == "rejected" and review.decided_by == f"slack:{REVIEWER}"
    assert slack.commits()[0].id == head
    [last] = [u for u in slack.calls("chat.update") if u.args["ts"] == message.response["ts"]][-1:]
    assert f"Rejected by <@{REVIEWER}>: the region is not always needed" in last.text


def test_a_rejection_modal_submitted_by_someone_else_is_refused(
        slack: Slack, svc: MemoryService, related: list[str]) -> None:
    run_consolidation(slack)
    slack.press(reviewers_copy(slack), "gitmem_review_reject", user=REVIEWER)
    slack.submit(slack.last("views.open"), "not mine to reject", user=BOB)
    assert "Only reviewers can reject" in slack.last("chat.postEphemeral").text
    assert [r.status for r in svc.reviews.list("default")] == ["open"]


def test_review_lists_open_reviews_and_shows_a_card_to_decide_from(
        slack: Slack, svc: MemoryService, related: list[str]) -> None:
    message = run_consolidation(slack)
    slack.command("review", user=REVIEWER)
    listing = slack.last("respond")
    assert "Open reviews in `default`" in listing.text and "#1" in listing.text and "1 change to decide" in listing.text
    # A list shows no change, so nothing in it decides one.
    assert set(buttons(listing)) == {"gitmem_review_show"}
    slack.press(listing, "gitmem_review_show", user=REVIEWER, number=1)
    card = slack.last("respond")
    assert card.args["response_type"] == "ephemeral" and RELATED[1] in json.dumps(card.blocks)
    assert buttons(card)["gitmem_review_approve"]["text"]["text"] == "Approve all (1)"
    slack.press(card, "gitmem_review_approve", user=REVIEWER)
    assert svc.reviews.get("default", 1).status == "merged"
    channel_update = [u for u in slack.calls("chat.update") if u.args["ts"] == message.response["ts"]][-1]
    assert "Approved by" in channel_update.text


def test_who_may_not_decide_sees_no_decision_button(slack: Slack, svc: MemoryService, related: list[str]) -> None:
    run_consolidation(slack)
    slack.command("review", user=BOB)
    listing = slack.last("respond")
    assert "#1" in listing.text and buttons(listing) == {}
    assert [c.args["channel"] for c in slack.calls("chat.postMessage")] == [REVIEW_CHANNEL, REVIEWER]


def test_approving_a_decided_review_says_so(slack: Slack, svc: MemoryService, related: list[str]) -> None:
    run_consolidation(slack)
    message = reviewers_copy(slack)
    slack.press(message, "gitmem_review_approve", user=REVIEWER)
    slack.press(message, "gitmem_review_approve", user=REVIEWER)
    assert "already merged" in slack.last("chat.postEphemeral").text


def test_a_proposed_amendment_can_be_approved_from_the_list(slack: Slack, svc: MemoryService) -> None:
    slack.command("remember the wiki lives in Notion", user=BOB)
    memory_id = slack.commits()[0].memory_ids[0]
    slack.command(f"amend {memory_id} the wiki lives in Confluence", user=BOB)
    assert "review #1" in slack.last("respond").text
    slack.command("review", user=REVIEWER)
    slack.press(slack.last("respond"), "gitmem_review_show", user=REVIEWER, number=1)
    slack.press(slack.last("respond"), "gitmem_review_approve", user=REVIEWER)
    assert svc.show("default", memory_id).text == "the wiki lives in Confluence"


# --- the notifier on its own -------------------------------------------------------------------


def test_the_notifier_escapes_merges_and_does_nothing_unconfigured(
        tmp_path: object, fake_slack: FakeSlack, settings: Settings) -> None:
    event = {"event": "review.opened", "namespace": "default", "summary": "consolidated 2 memories into 1, review #7",
             "review": {"number": 7, "title": "Consolidated", "author": "gitmem", "status": "open"},
             "merges": [{"before": ["ping <!channel>", "a & b"], "after": "ping <@U123> & co"}]}
    on_event(Settings(home=settings.home), event)
    assert not fake_slack.calls
    on_event(settings, event)
    (posted,) = fake_slack.of("chat.postMessage")
    assert posted.args["channel"] == REVIEW_CHANNEL
    assert "&lt;!channel&gt;" in posted.text and "a &amp; b" in posted.text and "&lt;@U123&gt; &amp; co" in posted.text
    assert "<!channel>" not in posted.text and "<@U123>" not in posted.text
    on_event(settings, {"event": "review.closed", "namespace": "default",
                       "review": {"number": 7, "status": "rejected", "decided_by": "slack:UREVIEWER1",
                                  "comments": [{"actor": "slack:UREVIEWER1", "text": "no <b>"}]}})
    (update,) = fake_slack.of("chat.update")
    assert update.args["ts"] == posted.response["ts"]
    assert "Rejected by <@UREVIEWER1>: no &lt;b&gt;" in update.text


def test_a_push_to_main_is_said_in_the_review_channel(fake_slack: FakeSlack, settings: Settings) -> None:
    on_event(settings, {"event": "push.merged", "namespace": "default", "actor": "rita <b>", "commits": 2,
                        "before": "a" * 40, "after": "b" * 40, "summary": "rita pushed 2 commit(s) to main"})
    (posted,) = fake_slack.of("chat.postMessage")
    assert posted.args["channel"] == REVIEW_CHANNEL
    assert posted.text == "rita &lt;b&gt; pushed 2 commits to main in default (now bbbbbbbbbb)"


def test_the_notifier_logs_slack_failures_instead_of_raising(
        fake_slack: FakeSlack, settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    fake_slack.fail("chat.postMessage", "channel_not_found")
    on_event(settings, {"event": "review.opened", "namespace": "default", "summary": "s",
                        "review": {"number": 1}, "merges": []})
    assert "channel_not_found" in caplog.text
    assert CHANNEL not in caplog.text


def test_approving_a_stale_review_explains_and_marks_the_message(
        slack: Slack, svc: MemoryService, related: list[str]) -> None:
    message = run_consolidation(slack)
    svc.amend("default", related[0], text="the deploy script reads the token from the vault", actor="someone")
    head = slack.commits()[0].id
    slack.press(reviewers_copy(slack), "gitmem_review_approve", user=REVIEWER)
    assert "is stale" in slack.last("chat.postEphemeral").text
    assert svc.reviews.get("default", 1).status == "stale"
    assert slack.commits()[0].id == head
    update = [u for u in slack.calls("chat.update") if u.args["ts"] == message.response["ts"]][-1]
    assert "Stale" in update.text


# --- cards that never approve what they do not show (issue 11) ---------------------------------------


def test_a_card_of_100_changes_fits_block_kit_and_approves_only_the_ones_it_shows(
        slack: Slack, svc: MemoryService, fake_slack: FakeSlack) -> None:
    from gitmem import concepts
    from gitmem.repo import Change

    changes = []
    for k in range(100):
        memory = svc.remember("default", f"Service {k} answers in {'very ' * 40}little time at p99.").memory
        assert memory is not None
        text = f"Service {k} answers within {100 + k} ms at p99, {'measured weekly, ' * 30}."
        new = memory.replace(text=text, title=concepts.title_from(text), description=concepts.description_from(text))
        changes.append(Change({memory.path: concepts.render(new)}, f"amend: {memory.title}", "amend", (memory.id,),
                              None, "sam", body="tighten"))
    number = svc.reviews.propose("default", changes, title="Latency budgets", author="sam", kind="amend").number
    [channel] = [c for c in fake_slack.of("chat.postMessage") if c.args["channel"] == REVIEW_CHANNEL]
    card = reviewers_copy(slack)
    for blocks in (channel.blocks, card.blocks):
        assert len(blocks) <= 50
        texts = [b["text"]["text"] for b in blocks if "text" in b] + [
            e["text"] for b in blocks if b["type"] == "context" for e in b["elements"]]
        assert texts and all(len(t) <= 3000 for t in texts)
    listed = [t for t in texts if re.match(r"^\*\d+\.\* amend:", t)]
    assert 10 <= len(listed) < 100
    assert any(f"and {100 - len(listed)} more changes" in t for t in texts)
    assert "Approve all" not in json.dumps(card.blocks)  # never a button for changes the card does not show
    approve, reject = buttons(card)["gitmem_review_approve"], buttons(card)["gitmem_review_reject"]
    assert approve["text"]["text"] == f"Approve the {len(listed)} shown"
    assert reject["text"]["text"] == f"Reject the {len(listed)} shown…"
    confirm = approve["confirm"]["text"]["text"]
    assert f"the {len(listed)} changes listed in this message" in confirm
    assert f"other {100 - len(listed)} stay open" in confirm
    assert len(confirm) <= 300 and len(approve["value"]) <= 2000
    commits = svc.reviews.diff("default", number)
    assert json.loads(approve["value"])["i"] == [c.id[:12] for c in commits[:len(listed)]]
    # A change decided elsewhere first: the card's review changed, so nothing merges from it.
    svc.reviews.approve("default", number, actor="web-user", commits=[commits[0].id])
    head = slack.commits()[0].id
    slack.press(card, "gitmem_review_approve", user=REVIEWER)
    assert "changed since you looked at it" in slack.last("chat.postEphemeral").text
    assert slack.commits()[0].id == head
    # The partial approval redrew the card with what is left: the next ones shown, and only those approve.
    redrawn = [u for u in fake_slack.of("chat.update") if u.args["ts"] == card.response["ts"]][-1]
    assert f"Approve the {len(listed)} shown" in json.dumps(redrawn.blocks)
    assert "merged 1 of 100 so far" in redrawn.text
    slack.press(redrawn, "gitmem_review_approve", user=REVIEWER)
    review = svc.reviews.get("default", number)
    assert review.merged_count == 1 + len(listed) and review.status == "open"
    assert {c.id for c in commits[1:len(listed) + 1]} <= {c for c, s in review.commit_states.items() if s == "merged"}


def test_a_card_links_to_the_review_page_when_the_web_address_is_known(
        tmp_path: object, fake_slack: FakeSlack, settings: Settings, svc: MemoryService) -> None:
    memory = svc.remember("default", "the wiki lives in Notion").memory
    assert memory is not None
    number = svc.feedback("default", memory.id, "amend", actor="bob", text="the wiki lives in Confluence").review
    on_event(settings.with_(public_url="https://gitmem.example.com/"),
             {"event": "review.opened", "namespace": "default", "summary": "bob proposes an amendment",
              "review": svc.reviews.get("default", number).to_dict()})
    posted = fake_slack.of("chat.postMessage")[-1]
    [view] = [e for b in posted.blocks if b["type"] == "actions" for e in b["elements"]
              if e["action_id"] == "gitmem_review_view"]
    assert view["url"] == f"https://gitmem.example.com/ns/default/reviews/{number}"
    shown = json.dumps(posted.blocks, ensure_ascii=False)
    assert "the wiki lives in Notion" in shown and "the wiki lives in Confluence" in shown
