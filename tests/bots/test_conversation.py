"""Spoken commands in messages, the "Remember this" shortcut, and feedback on posted messages."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from gitmem.service import MemoryService
from tests.bots.conftest import ALICE, BOB, CHANNEL, REVIEWER, TEAM_CHANNEL, Slack
from tests.fakes.slack_api import BOT_USER


@pytest.mark.parametrize("text, stored", [
    ("记住：这个项目使用 pnpm 作为包管理器", "这个项目使用 pnpm 作为包管理器"),
    ("记一下:API 请求需要带 token", "API 请求需要带 token"),
    ("请记住：测试数据库用 SQLite", "测试数据库用 SQLite"),
    ("remember: deploys happen on Tuesdays", "deploys happen on Tuesdays"),
    ("Remember： the VPN drops at midnight", "the VPN drops at midnight"),
    ("remember: decision: we squash-merge pull requests", "we squash-merge pull requests"),
])
def test_spoken_command_remembers_as_the_user_and_answers_in_a_thread(
        slack: Slack, svc: MemoryService, fsck: Callable[[str], None], text: str, stored: str) -> None:
    response = slack.message(text, user=BOB)
    assert response.status_code == 200
    head = slack.commits()[0]
    assert (head.action, head.actor) == ("remember", f"slack:{BOB}")
    memory = svc.show("default", head.memory_ids[0])
    assert memory.text == stored
    assert (memory.source, memory.author) == ("user", f"slack:{BOB}")
    if "decision:" in text:
        assert memory.type == "decision"
    reply = slack.last("chat.postMessage")
    assert reply.args["channel"] == CHANNEL
    assert reply.args["thread_ts"].startswith("1699999999.")
    assert stored in reply.text and "Remembered" in reply.text
    fsck("default")


def test_a_spoken_command_in_a_thread_is_answered_in_that_thread(slack: Slack) -> None:
    slack.message("remember: answer where I asked", thread_ts="1699999990.000001")
    assert slack.last("chat.postMessage").args["thread_ts"] == "1699999990.000001"


def test_the_channel_namespace_applies_to_spoken_commands(slack: Slack, svc: MemoryService) -> None:
    slack.message("记住：团队频道的记忆", channel=TEAM_CHANNEL)
    assert svc.exists("team")
    assert slack.commits("team")[0].action == "remember"


@pytest.mark.parametrize("event", [
    {"text": "we should remember: this is not a command"},
    {"text": "remember that thing?"},
    {"text": "remember: edited", "subtype": "message_changed"},
    {"text": "remember: from a bot", "bot_id": "B123", "subtype": "bot_message"},
    {"text": "remember: my own echo", "user": BOT_USER},
])
def test_other_messages_change_nothing(slack: Slack, event: dict[str, str]) -> None:
    before = len(slack.commits())
    slack.message(**event)  # type: ignore[arg-type]
    assert len(slack.commits()) == before
    assert not slack.calls("chat.postMessage", "chat.postEphemeral")


def test_a_retry_after_a_timeout_is_not_remembered_twice(slack: Slack) -> None:
    before = len(slack.commits())
    event = {"type": "message", "channel": CHANNEL, "user": ALICE, "text": "remember: once", "ts": "1699999999.5"}
    slack.event(event, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    assert len(slack.commits()) == before
    slack.event(event)
    assert len(slack.commits()) == before + 1


def test_an_empty_spoken_command_says_what_to_type(slack: Slack) -> None:
    before = len(slack.commits())
    slack.message("记住：   ", user=BOB)
    assert len(slack.commits()) == before
    told = slack.last("chat.postEphemeral")
    assert told.args["user"] == BOB and "remember: what to keep" in told.text


def test_the_same_statement_twice_reinforces(slack: Slack) -> None:
    slack.message("remember: builds run on the CI box")
    slack.message("remember: builds run on the CI box")
    assert slack.commits()[0].action == "reinforce"
    assert "reinforced" in slack.last("chat.postMessage").text


# --- the message shortcut ------------------------------------------------------------------------


def shortcut_payload(slack: Slack, text: str, user: str = ALICE) -> dict[str, object]:
    return {"type": "message_action", "callback_id": "gitmem_remember_this", "trigger_id": "trigger-shortcut",
            "user": {"id": user, "username": "alice", "team_id": "T0GITMEM"},
            "channel": {"id": CHANNEL, "name": "general"}, "message_ts": "1699999000.000100",
            "message": {"type": "message", "user": BOB, "ts": "1699999000.000100", "text": text},
            "response_url": slack.fake.response_url("shortcut")}


def test_remember_this_stores_the_message_with_its_permalink(slack: Slack, svc: MemoryService) -> None:
    slack.interact(shortcut_payload(slack, "the release branch is cut on Mondays &amp; tagged"))
    link = slack.last("chat.getPermalink")
    assert (link.args["channel"], link.args["message_ts"]) == (CHANNEL, "1699999000.000100")
    head = slack.commits()[0]
    assert (head.action, head.actor) == ("remember", f"slack:{ALICE}")
    memory = svc.show("default", head.memory_ids[0])
    assert memory.text == ("the release branch is cut on Mondays & tagged\n\n"
                           f"Source: https://gitmem-test.slack.com/archives/{CHANNEL}/p1699999000000100")
    assert memory.source == "slack"
    told = slack.last("chat.postEphemeral")
    assert told.args["user"] == ALICE and "Remembered" in told.text


def test_remember_this_without_a_permalink_still_remembers(slack: Slack, svc: MemoryService) -> None:
    slack.fake.fail("chat.getPermalink", "channel_not_found")
    slack.caplog.set_level("INFO")
    slack.interact(shortcut_payload(slack, "keep it anyway"))
    assert svc.show("default", slack.commits()[0].memory_ids[0]).text == "keep it anyway"


def test_remember_this_answers_through_the_response_url_when_not_in_the_channel(slack: Slack) -> None:
    slack.fake.fail("chat.postEphemeral", "not_in_channel")
    slack.interact(shortcut_payload(slack, "the bot is not in this channel"))
    reply = slack.last("respond")
    assert reply.path == "/respond/shortcut" and "Remembered" in reply.text


def test_remember_this_on_an_empty_message_says_what_to_do(slack: Slack) -> None:
    before = len(slack.commits())
    slack.interact(shortcut_payload(slack, "   "))
    assert len(slack.commits()) == before
    assert "no text to remember" in slack.last("chat.postEphemeral").text


# --- feedback on a posted message: chat.update for everyone -------------------------------------


def spoken(slack: Slack, text: str) -> tuple[str, object]:
    slack.message(f"remember: {text}")
    ack = slack.last("chat.postMessage")
    memory_id = json.loads(ack.blocks[-1]["elements"][0]["value"])["m"]
    return str(memory_id), ack


def test_confirm_updates_the_thread_reply(slack: Slack, svc: MemoryService) -> None:
    memory_id, ack = spoken(slack, "ship small pull requests")
    slack.press(ack, "gitmem_confirm", user=BOB)  # type: ignore[arg-type]
    assert slack.commits()[0].action == "confirm"
    update = slack.last("chat.update")
    assert update.args["channel"] == CHANNEL and update.args["ts"] == ack.response["ts"]  # type: ignore[attr-defined]
    assert f"<@{BOB}> confirmed this" in update.text
    assert f"confirmed by <@{BOB}>" in update.text


def test_reject_asks_for_a_reason_then_archives(slack: Slack, svc: MemoryService) -> None:
    memory_id, ack = spoken(slack, "tabs, not spaces")
    before = len(slack.commits())
    slack.press(ack, "gitmem_reject", user=BOB)  # type: ignore[arg-type]
    assert len(slack.commits()) == before
    modal = slack.last("views.open")
    assert modal.view["callback_id"] == "gitmem_reject_memory"
    response = slack.submit(modal, "   ", user=BOB)
    assert response.get_json()["response_action"] == "errors"
    assert len(slack.commits()) == before
    slack.submit(modal, "we use spaces <!here>", user=BOB)
    head = slack.commits()[0]
    assert (head.action, head.actor) == ("reject", f"slack:{BOB}")
    memory = svc.show("default", memory_id)
    assert memory.state == "archived" and memory.archived_reason == "we use spaces <!here>"
    update = slack.last("chat.update")
    assert update.args["ts"] == ack.response["ts"]  # type: ignore[attr-defined]
    assert "rejected this: we use spaces &lt;!here&gt;" in update.text
    assert "<!here>" not in update.text
    assert "gitmem_confirm" not in json.dumps(update.blocks)


def test_discuss_adds_to_the_thread_of_the_memory(slack: Slack, svc: MemoryService) -> None:
    memory_id, ack = spoken(slack, "on-call rotates weekly")
    slack.press(ack, "gitmem_discuss", user=BOB)  # type: ignore[arg-type]
    slack.submit(slack.last("views.open"), "is it Monday to Monday?", user=BOB)
    head = slack.commits()[0]
    assert (head.action, head.actor) == ("discuss", f"slack:{BOB}")
    assert [c.text for c in svc.discussion("default", memory_id)] == ["is it Monday to Monday?"]
    assert "1 comment" in slack.last("chat.update").text


def test_amend_by_a_reviewer_changes_main(slack: Slack, svc: MemoryService) -> None:
    memory_id, ack = spoken(slack, "standup is at 9:30")
    slack.press(ack, "gitmem_amend", user=REVIEWER)  # type: ignore[arg-type]
    modal = slack.last("views.open")
    assert modal.view["blocks"][1]["element"]["initial_value"] == "standup is at 9:30"
    slack.submit(modal, "standup is at 9:45", user=REVIEWER)
    assert (slack.commits()[0].action, slack.commits()[0].actor) == ("amend", f"slack:{REVIEWER}")
    assert svc.show("default", memory_id).text == "standup is at 9:45"
    update = slack.last("chat.update")
    assert "amended this" in update.text and "standup is at 9:45" in update.text


def test_amend_by_anyone_else_opens_a_review(slack: Slack, svc: MemoryService) -> None:
    memory_id, ack = spoken(slack, "the wiki lives in Notion")
    before = len(slack.commits())
    slack.press(ack, "gitmem_amend", user=BOB)  # type: ignore[arg-type]
    slack.submit(slack.last("views.open"), "the wiki lives in Confluence", user=BOB)
    assert len(slack.commits()) == before  # main unchanged
    assert svc.show("default", memory_id).text == "the wiki lives in Notion"
    (review,) = svc.reviews.list("default", status="open")
    assert review.kind == "amend" and review.author == f"slack:{BOB}"
    assert f"review #{review.number}" in slack.last("chat.update").text


def test_a_button_on_a_memory_that_is_gone_says_so(slack: Slack, svc: MemoryService) -> None:
    memory_id, ack = spoken(slack, "a memory about to be purged")
    svc.forget("default", memory_id, purge=True, actor="admin")
    before = len(slack.commits())
    slack.press(ack, "gitmem_confirm", user=BOB)  # type: ignore[arg-type]
    told = slack.last("chat.postEphemeral")
    assert told.args["user"] == BOB and memory_id in told.text and ":warning:" in told.text
    assert len(slack.commits()) == before
