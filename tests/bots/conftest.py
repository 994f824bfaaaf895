"""Fixtures for the Slack bot: a fake Slack Web API, settings pointing at it, and signed requests.

Requests go through the real Flask adapter with real signatures. Lazy listeners run on a real
thread pool; :meth:`Slack.post` waits for them to finish before returning, so tests never sleep.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import flask.testing
import pytest
from slack_sdk.signature import SignatureVerifier

from bots.slack import create_flask_app
from gitmem.repo import CommitInfo
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.fakes.slack_api import BOT_USER, TEAM, Call, FakeSlack

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
REVIEWER = "UREVIEWER1"
ALICE = "UALICE0001"
BOB = "UBOB000002"
CHANNEL = "CGENERAL01"
TEAM_CHANNEL = "CTEAMCHAN1"
REVIEW_CHANNEL = "CREVIEWS01"


class SettlingExecutor(ThreadPoolExecutor):
    """A thread pool that can wait until every task submitted so far (and any they submit) is done."""

    def __init__(self) -> None:
        super().__init__(max_workers=4, thread_name_prefix="slack-lazy")
        self.futures: list[Future[Any]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = super().submit(fn, *args, **kwargs)
        self.futures.append(future)
        return future

    def settle(self) -> None:
        while True:
            pending = [f for f in self.futures if not f.done()]
            if not pending:
                break
            wait(pending, timeout=60)
        for future in self.futures:
            future.result()


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        yield fake


def slack_settings(home: Path, fake: FakeSlack) -> Settings:
    return Settings(
        home=home,
        slack_bot_token="xoxb-test-token",
        slack_signing_secret=SECRET,
        slack_api_url=fake.api_url,
        slack_channel_namespaces={TEAM_CHANNEL: "team"},
        slack_reviewers=(REVIEWER,),
        slack_review_channel=REVIEW_CHANNEL,
    )


@pytest.fixture
def settings(tmp_path: Path, fake_slack: FakeSlack) -> Settings:
    """Overrides the shared fixture: Slack configured against the local fake."""
    return slack_settings(tmp_path / "home", fake_slack)


@dataclass
class Slack:
    """Sends signed requests to the bot as Slack would, and reads back what the bot sent."""

    client: flask.testing.FlaskClient
    fake: FakeSlack
    executor: SettlingExecutor
    service: MemoryService
    caplog: pytest.LogCaptureFixture
    _n: Iterator[int] = field(default_factory=lambda: count(1))

    def post(self, body: str, content_type: str, *, timestamp: int | None = None,
             secret: str = SECRET, sign: bool = True, headers: dict[str, str] | None = None) -> Any:
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": stamp, **(headers or {})}
        if sign:
            headers["X-Slack-Signature"] = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
        response = self.client.post("/slack/events", data=body.encode("utf-8"), headers=headers)
        self.executor.settle()
        errors = [r for r in self.caplog.records if r.levelno >= logging.ERROR]
        assert not errors, "\n".join(r.getMessage() for r in errors)
        return response

    # --- request builders --------------------------------------------------------------------------

    def command(self, text: str, *, user: str = ALICE, channel: str = CHANNEL, **kw: Any) -> Any:
        n = next(self._n)
        form = {"token": "legacy", "team_id": TEAM, "team_domain": "gitmem-test", "channel_id": channel,
                "channel_name": "general", "user_id": user, "user_name": user.lower(), "command": "/mem",
                "text": text, "api_app_id": "A0GITMEM", "response_url": self.fake.response_url(f"cmd{n}"),
                "trigger_id": f"trigger-cmd-{n}"}
        return self.post(urlencode(form), "application/x-www-form-urlencoded", **kw)

    def event(self, event: dict[str, Any], **kw: Any) -> Any:
        n = next(self._n)
        body = {"token": "legacy", "team_id": TEAM, "api_app_id": "A0GITMEM", "type": "event_callback",
                "event_id": f"Ev{n:08d}", "event_time": int(time.time()),
                "event": {"event_ts": event.get("ts"), **event},
                "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}]}
        return self.post(json.dumps(body), "application/json", **kw)

    def message(self, text: str, *, user: str = ALICE, channel: str = CHANNEL, **extra: Any) -> Any:
        ts = f"1699999999.{next(self._n):06d}"
        return self.event({"type": "message", "channel": channel, "user": user, "text": text, "ts": ts,
                           "channel_type": "channel", **extra})

    def interact(self, payload: dict[str, Any], **kw: Any) -> Any:
        payload = {"team": {"id": TEAM, "domain": "gitmem-test"}, "api_app_id": "A0GITMEM", "token": "legacy",
                   "is_enterprise_install": False, **payload}
        return self.post(urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded", **kw)

    def press(self, call: Call, action_id: str, *, user: str = ALICE, memory_id: str | None = None,
              number: int | None = None) -> Any:
        """Press a button in a message the bot sent (``call``), as ``user``."""
        for block in call.blocks:
            if block.get("type") != "actions":
                continue
            for element in block["elements"]:
                if element["action_id"] != action_id:
                    continue
                value = json.loads(element["value"])
                if memory_id is not None and value.get("m") != memory_id:
                    continue
                if number is not None and value.get("r") != number:
                    continue
                return self.interact(self._action_payload(call, block, element, user))
        raise AssertionError(f"no {action_id} button in {call.blocks}")

    def _action_payload(self, call: Call, block: dict[str, Any], element: dict[str, Any], user: str) -> dict[str, Any]:
        n = next(self._n)
        ephemeral = call.method in ("respond", "chat.postEphemeral")
        channel = str(call.args.get("channel") or CHANNEL)
        response = call.response if isinstance(call.response, dict) else {}
        ts = str(call.args.get("ts") or response.get("ts") or response.get("message_ts") or f"1700000000.{n:06d}")
        payload: dict[str, Any] = {
            "type": "block_actions", "user": {"id": user, "username": user.lower(), "team_id": TEAM},
            "trigger_id": f"trigger-action-{n}",
            "container": {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": ephemeral},
            "channel": {"id": channel, "name": "general"},
            "response_url": self.fake.response_url(f"action{n}"),
            "actions": [{"type": "button", "action_id": element["action_id"], "block_id": block.get("block_id", ""),
                         "value": element["value"], "text": element["text"], "action_ts": f"1700000001.{n:06d}"}],
        }
        if not ephemeral:
            payload["message"] = {"type": "message", "user": BOT_USER, "ts": ts, "text": call.args.get("text"),
                                  "blocks": call.blocks}
        return payload

    def submit(self, view_call: Call, text: str, *, user: str = ALICE) -> Any:
        """Submit a modal the bot opened (``view_call`` is its views.open) with ``text`` in its input."""
        view = view_call.view
        block = next(b for b in view["blocks"] if b["type"] == "input")
        state = {block["block_id"]: {block["element"]["action_id"]: {"type": "plain_text_input", "value": text}}}
        payload = {"type": "view_submission", "user": {"id": user, "username": user.lower(), "team_id": TEAM},
                   "trigger_id": "trigger-view", "view": {"id": "V0GITMEM", "team_id": TEAM, **view,
                                                          "state": {"values": state}}}
        return self.interact(payload)

    # --- reading back -----------------------------------------------------------------------------

    def calls(self, *methods: str) -> list[Call]:
        return self.fake.of(*methods)

    def last(self, *methods: str) -> Call:
        found = self.fake.of(*methods)
        assert found, f"no {methods} call; calls were {[c.method for c in self.fake.calls]}"
        return found[-1]

    def commits(self, namespace: str = "default") -> list[CommitInfo]:
        return self.service.log(namespace, limit=100)


@pytest.fixture
def slack(svc: MemoryService, fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture) -> Iterator[Slack]:
    executor = SettlingExecutor()
    app = create_flask_app(svc, listener_executor=executor)
    caplog.set_level(logging.INFO)
    try:
        yield Slack(app.test_client(), fake_slack, executor, svc, caplog)
    finally:
        executor.shutdown(wait=True)
