"""``gitmem slack`` over Socket Mode: the real SocketModeHandler against a local Socket Mode server."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bots.slack import socket_mode_handler
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.bots.conftest import ALICE, CHANNEL, SettlingExecutor, slack_settings
from tests.fakes.slack_api import BOT_USER, TEAM, FakeSlack
from tests.fakes.slack_socket import FakeSocketMode


@pytest.fixture
def settings(tmp_path: Path, fake_slack: FakeSlack) -> Settings:
    # Socket Mode needs no signing secret: requests arrive over the app's own authenticated socket.
    return slack_settings(tmp_path / "home", fake_slack).with_(slack_app_token="xapp-test-token",
                                                               slack_signing_secret=None)


@pytest.fixture
def socket(svc: MemoryService, fake_slack: FakeSlack,
           caplog: pytest.LogCaptureFixture) -> Iterator[tuple[FakeSocketMode, SettlingExecutor]]:
    caplog.set_level(logging.INFO)
    executor = SettlingExecutor()
    with FakeSocketMode() as server:
        fake_slack.socket_url = server.url
        handler = socket_mode_handler(svc, listener_executor=executor)
        handler.connect()  # type: ignore[no-untyped-call]
        try:
            yield server, executor
        finally:
            handler.client.auto_reconnect_enabled = False
            server.hang_up()
            handler.close()  # type: ignore[no-untyped-call]
            executor.shutdown(wait=True)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def command(text: str) -> dict[str, Any]:
    return {"token": "legacy", "team_id": TEAM, "channel_id": CHANNEL, "user_id": ALICE, "command": "/mem",
            "text": text, "api_app_id": "A0GITMEM", "response_url": "", "trigger_id": "trigger-socket"}


def test_socket_mode_runs_commands_and_spoken_memories(
        socket: tuple[FakeSocketMode, SettlingExecutor], svc: MemoryService, fake_slack: FakeSlack) -> None:
    server, executor = socket
    opened = fake_slack.of("apps.connections.open")
    assert opened and opened[0].token == "xapp-test-token"

    ack = server.send("slash_commands", command("rememberr typo"))
    assert "/mem help" in ack["payload"]["text"]

    fake_slack.reset()
    ack = server.send("events_api", {
        "token": "legacy", "team_id": TEAM, "api_app_id": "A0GITMEM", "type": "event_callback",
        "event_id": "Ev0SOCKET", "event_time": 1700000000,
        "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
        "event": {"type": "message", "channel": CHANNEL, "user": ALICE, "text": "记住：Socket Mode 也能记",
                  "ts": "1699999999.000001", "channel_type": "channel"}})
    executor.settle()
    head = svc.log("default", limit=1)[0]
    assert (head.action, head.actor) == ("remember", f"slack:{ALICE}")
    assert svc.show("default", head.memory_ids[0]).text == "Socket Mode 也能记"
    (reply,) = fake_slack.of("chat.postMessage")
    assert reply.args["thread_ts"] == "1699999999.000001"
