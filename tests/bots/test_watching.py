"""Watched channels: ``/mem watch``, ``unwatch`` and ``watching``, and their messages into ingestion.

Signed requests through the Flask adapter, the bot's Web API calls to the local fake, the
buffers and the watch list in the test's home, and a real ``gitmem worker`` distilling.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bots.slack.blocks import WATCH_NOTICE_BLOCK
from bots.slack.watching import conversation_of
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.bots.conftest import ALICE, BOB, CHANNEL, TEAM_CHANNEL, Slack, slack_settings
from tests.fakes.slack_api import FakeSlack
from tests.test_tasks import wait_for, worker

FLUSH_TOKENS = 20  # three short messages fill a buffer
THREAD = "1699999990.000001"


@pytest.fixture
def settings(tmp_path: Path, fake_slack: FakeSlack) -> Settings:
    return slack_settings(tmp_path / "home", fake_slack).with_(ingest_flush_tokens=FLUSH_TOKENS)


def counters(svc: MemoryService, namespace: str = "default") -> dict[str, Any]:
    return svc.ingest_status(namespace)


def watch(slack: Slack, channel: str = CHANNEL, user: str = ALICE) -> None:
    slack.command("watch", channel=channel, user=user)


def section_texts(blocks: list[dict[str, Any]]) -> list[str]:
    return [b["text"]["text"] for b in blocks if b["type"] == "section"]


# --- /mem watch ---------------------------------------------------------------------------------


def test_watch_joins_posts_a_notice_for_everyone_and_answers_with_a_card(slack: Slack, svc: MemoryService) -> None:
    watch(slack)
    assert slack.last("conversations.join").args["channel"] == CHANNEL
    (notice,) = slack.calls("chat.postMessage")
    assert notice.args["channel"] == CHANNEL and "thread_ts" not in notice.args  # in the channel, for all
    blocks = notice.blocks
    assert [b["type"] for b in blocks] == ["section", "section", "context"]
    head, what = section_texts(blocks)
    assert ":eyes: *gitmem now reads this channel.*" in head and f"<@{ALICE}>" in head
    assert "namespace `default`" in what and "*pending* memories" in what and "Bot messages, edits" in what
    assert blocks[-1]["block_id"] == WATCH_NOTICE_BLOCK
    assert "`/mem unwatch`" in blocks[-1]["elements"][0]["text"]
    assert notice.args["text"]  # the notification's fallback text
    reply = slack.last("respond")
    assert reply.args["response_type"] == "ephemeral"
    assert f"Watching <#{CHANNEL}> into `default`" in section_texts(reply.blocks)[0]
    assert "`/mem unwatch` stops it" in reply.text
    (watched,) = svc.watching()
    assert (watched.namespace, watched.channel, watched.by) == ("default", CHANNEL, f"slack:{ALICE}")


def test_watch_twice_says_since_when_and_posts_no_second_notice(slack: Slack, svc: MemoryService) -> None:
    watch(slack)
    watch(slack, user=BOB)
    assert len(slack.calls("chat.postMessage")) == 1
    text = section_texts(slack.last("respond").blocks)[0]
    assert "is already watched into `default`" in text and f"by <@{ALICE}>" in text
    assert svc.watching()[0].by == f"slack:{ALICE}"


def test_watch_where_the_bot_cannot_post_is_undone_and_says_to_invite_it(slack: Slack, svc: MemoryService) -> None:
    slack.fake.fail("conversations.join", "method_not_supported_for_channel_type")  # a private channel
    slack.fake.fail("chat.postMessage", "not_in_channel")
    watch(slack)
    assert svc.watching() == []
    reply = slack.last("respond")
    assert "not_in_channel" in reply.text and "/invite @gitmem" in reply.text
    slack.message("we use pnpm, not npm")
    assert counters(svc).get("messages", 0) == 0


def test_watch_without_the_join_scope_hints_to_invite_the_bot(slack: Slack, svc: MemoryService) -> None:
    slack.fake.fail("conversations.join", "missing_scope")
    watch(slack)
    assert len(svc.watching()) == 1
    hint = section_texts(slack.last("respond").blocks)[1]
    assert "missing_scope" in hint and "channels:join" in hint and "/invite @gitmem" in hint


def test_watch_takes_no_argument(slack: Slack, svc: MemoryService) -> None:
    response = slack.command("watch #general")
    assert "takes nothing after it" in response.get_json()["text"]
    assert svc.watching() == []


# --- messages into the buffer -------------------------------------------------------------------


def test_a_message_in_a_watched_channel_is_buffered_with_its_speaker(slack: Slack, svc: MemoryService) -> None:
    watch(slack)
    slack.message("which package manager do we use?", user=BOB)
    slack.message("pnpm", user=ALICE, thread_ts=THREAD)
    stats = counters(svc)
    assert (stats["messages"], stats["active_messages"]) == (2, 2)
    assert not slack.calls("chat.postEphemeral")
    svc.flush("default")  # seal both conversations to see where each message went
    buffers = {b["conversation"]: b for b in counters(svc)["recent"]}
    assert set(buffers) == {f"slack:{CHANNEL}", f"slack:{CHANNEL}:{THREAD}"}
    assert all(b["messages"] == 1 and b["state"] == "done" for b in buffers.values())


def test_conversations_are_the_channel_and_each_thread() -> None:
    assert conversation_of(CHANNEL, {"ts": "1.2"}) == f"slack:{CHANNEL}"
    assert conversation_of(CHANNEL, {"ts": THREAD, "thread_ts": THREAD}) == f"slack:{CHANNEL}"  # the parent
    assert conversation_of(CHANNEL, {"ts": "1.3", "thread_ts": THREAD}) == f"slack:{CHANNEL}:{THREAD}"


def test_a_message_slack_delivers_again_is_taken_once(slack: Slack, svc: MemoryService) -> None:
    watch(slack)
    event = {"type": "message", "channel": CHANNEL, "user": BOB, "text": "we deploy from main", "ts": "1699999999.7"}
    slack.event(event)
    slack.event(event, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_error"})
    slack.event(event)  # the same event again, without a retry header
    stats = counters(svc)
    assert (stats["messages"], stats["repeated"]) == (1, 2)


def test_a_threads_replies_start_with_the_message_they_answer(slack: Slack, svc: MemoryService) -> None:
    watch(slack)
    slack.event({"type": "message", "channel": CHANNEL, "user": ALICE, "text": "Which package manager?",
                 "ts": THREAD})
    slack.event({"type": "message", "channel": CHANNEL, "user": BOB, "text": "pnpm, not npm.", "ts": "1.9",
                 "thread_ts": THREAD})
    slack.event({"type": "message", "channel": CHANNEL, "user": ALICE, "text": "thanks", "ts": "2.0",
                 "thread_ts": THREAD})
    buffers = svc._namespaces.buffers("default")
    thread = buffers.message(f"slack:{CHANNEL}:{THREAD}", f"{CHANNEL}:{THREAD}")
    assert thread is not None and thread.text == "Which package manager?"
    assert counters(svc)["messages"] == 4  # the question once in the channel, once at the thread's start


def test_an_unwatched_channel_is_not_read(slack: Slack, svc: MemoryService) -> None:
    slack.message("we use pnpm, not npm")
    assert counters(svc).get("messages", 0) == 0
    watch(slack)  # this channel, not the team's
    slack.message("the team channel is not watched", channel=TEAM_CHANNEL)
    assert not svc.exists("team")
    assert counters(svc).get("messages", 0) == 0


@pytest.mark.parametrize("event", [
    {"text": "an edit", "subtype": "message_changed"},
    {"text": "", "subtype": "message_deleted"},
    {"text": "from a bot", "bot_id": "B123", "subtype": "bot_message"},
    {"text": "from an app as a person", "bot_id": "B123"},
    {"text": "<@UBOB000002> has joined the channel", "subtype": "channel_join"},
    {"text": "   "},
])
def test_bots_edits_deletions_and_joins_are_not_read(slack: Slack, svc: MemoryService, event: dict[str, str]) -> None:
    watch(slack)
    slack.message(**event)  # type: ignore[arg-type]
    assert counters(svc).get("messages", 0) == 0


def test_a_spoken_command_in_a_watched_channel_is_remembered_not_buffered(slack: Slack, svc: MemoryService) -> None:
    watch(slack)
    slack.message("remember: the VPN drops at midnight", user=BOB)
    assert slack.commits()[0].action == "remember"
    assert counters(svc).get("messages", 0) == 0


def test_a_secret_in_a_watched_channel_is_masked_before_it_is_stored(slack: Slack, svc: MemoryService) -> None:
    watch(slack)
    slack.message("the deploy key is ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", user=BOB)
    stats = counters(svc)
    assert (stats["messages"], stats["masked"]) == (1, 1)


def test_the_channel_mapping_picks_the_namespace_of_a_watch(slack: Slack, svc: MemoryService) -> None:
    watch(slack, channel=TEAM_CHANNEL)
    assert [(w.namespace, w.channel) for w in svc.watching()] == [("team", TEAM_CHANNEL)]
    assert "namespace `team`" in section_texts(slack.last("chat.postMessage").blocks)[1]
    slack.message("the team builds with bazel", channel=TEAM_CHANNEL)
    assert counters(svc, "team")["messages"] == 1
    assert counters(svc).get("messages", 0) == 0


# --- /mem unwatch and /mem watching -------------------------------------------------------------


def test_unwatch_stops_reading_and_tells_the_channel(slack: Slack, svc: MemoryService) -> None:
    watch(slack)
    slack.message("we use pnpm, not npm", user=BOB)
    slack.command("unwatch", user=BOB)
    assert svc.watching() == []
    notice = slack.last("chat.postMessage")
    assert notice.args["channel"] == CHANNEL
    assert ":no_entry_sign: *gitmem stopped reading this channel.*" in notice.text and f"<@{BOB}>" in notice.text
    assert "still distilled into `default`" in notice.text
    assert "Stopped watching" in slack.last("respond").text
    slack.message("said after the watch ended", user=BOB)
    assert counters(svc)["messages"] == 1


def test_unwatch_where_the_bot_can_no_longer_post_still_stops(slack: Slack, svc: MemoryService) -> None:
    watch(slack)
    slack.fake.fail("chat.postMessage", "not_in_channel")  # the bot was removed from the channel
    slack.command("unwatch")
    assert svc.watching() == []
    assert "Stopped watching" in slack.last("respond").text


def test_unwatch_in_a_channel_not_watched_changes_nothing(slack: Slack, svc: MemoryService) -> None:
    slack.command("unwatch")
    assert "not watched into `default`: nothing to stop" in slack.last("respond").text
    assert not slack.calls("chat.postMessage")


def test_watching_lists_every_watched_channel(slack: Slack, svc: MemoryService) -> None:
    slack.command("watching")
    assert "No channel is watched" in slack.last("respond").text
    watch(slack)
    watch(slack, channel=TEAM_CHANNEL, user=BOB)
    slack.command("watching")
    reply = slack.last("respond")
    assert reply.args["response_type"] == "ephemeral"
    assert reply.args["text"] == "2 watched channels"
    heading, listed = section_texts(reply.blocks)
    assert heading == "*Watched channels* (2)"
    lines = listed.split("\n")
    assert lines[0].startswith(f"• <#{CHANNEL}> → `default` · since 20") and lines[0].endswith(f"by <@{ALICE}>")
    assert lines[1].startswith(f"• <#{TEAM_CHANNEL}> → `team`") and lines[1].endswith(f"by <@{BOB}>")
    assert reply.blocks[-1]["elements"][0]["text"] == f"<#{CHANNEL}> is watched: `/mem unwatch` stops it."
    slack.command("watching", channel="CRANDOM001")
    last = slack.last("respond").blocks[-1]["elements"][0]["text"]
    assert last == "<#CRANDOM001> is not watched: `/mem watch` starts it."


def test_watching_marks_a_channel_moved_to_another_namespace(slack: Slack, svc: MemoryService) -> None:
    svc.init("ops")
    svc.watch("ops", CHANNEL, f"slack:{ALICE}")  # watched before the mapping sent the channel elsewhere
    slack.message("not read: the channel now maps to default")
    assert counters(svc, "ops").get("messages", 0) == 0
    slack.command("watching")
    listed = section_texts(slack.last("respond").blocks)[1]
    assert "now maps to `default`: not read until `/mem watch` there again" in listed


def test_the_help_names_watch(slack: Slack) -> None:
    body = slack.command("help").get_json()
    assert "`/mem watch`" in json.dumps(body["blocks"])


# --- end to end: a sealed buffer distilled by a real worker into pending memories ---------------


def test_a_watched_conversation_becomes_pending_memories_by_its_speakers(
        slack: Slack, svc: MemoryService, settings: Settings, tmp_path: Path, fsck: Callable[[str], None]) -> None:
    watch(slack)
    slack.message("which package manager do we use here?", user=BOB)
    slack.message("we use pnpm, not npm", user=ALICE)
    assert counters(svc).get("buffers_sealed", 0) == 0
    slack.message("always run the linter before pushing", user=BOB)  # past FLUSH_TOKENS: sealed and queued
    assert counters(svc)["buffers_sealed"] == 1
    assert svc.list("default", state="pending") == []  # queued for the workers, not distilled here
    log = tmp_path / "worker.log"
    with worker(settings, log):
        wait_for(lambda: counters(svc).get("buffers_done", 0) == 1, "distilling the sealed buffer", log)
    pending = {m.text: m for m in svc.list("default", state="pending")}
    assert set(pending) == {"We use pnpm, not npm", "Always run the linter before pushing"}
    assert pending["We use pnpm, not npm"].author == f"slack:{ALICE}"
    assert pending["Always run the linter before pushing"].author == f"slack:{BOB}"
    assert {m.source for m in pending.values()} == {"slack"}
    head = slack.commits()[0]
    assert head.action == "ingest" and head.trailers["Conversation"] == [f"slack:{CHANNEL}"]
    assert f"said by slack:{ALICE}, slack:{BOB}" in head.message
    fsck("default")
