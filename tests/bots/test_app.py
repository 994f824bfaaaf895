"""Signatures, mounting in the gitmem web app, the manifest, ``gitmem slack``, and the text helpers."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
import yaml
from click.testing import CliRunner, Result
from slack_sdk.signature import SignatureVerifier

import bots.slack
from bots.slack import create_bolt_app
from bots.slack.remembering import SHORTCUT
from bots.slack.text import Usage, escape, parse_command, person, split_type, spoken, unescape
from gitmem.cli import base, main
from gitmem.errors import InvalidInput
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.web import create_app
from tests.bots.conftest import SECRET, Slack
from tests.fakes.slack_api import FakeSlack

MANIFEST = Path(bots.slack.__file__).parent / "manifest.yaml"


def test_exports() -> None:
    assert sorted(bots.slack.__all__) == sorted(
        name for name in dir(bots.slack) if not name.startswith("_") and callable(getattr(bots.slack, name)))


# --- signatures: 401 and nothing happens ---------------------------------------------------------


@pytest.mark.parametrize("how", ["unsigned", "wrong secret", "six minutes old", "body changed"])
def test_bad_signatures_are_refused_and_change_nothing(slack: Slack, how: str) -> None:
    before = len(slack.commits())
    calls = len(slack.fake.calls)
    body = urlencode({"command": "/mem", "text": "remember forged", "user_id": "UEVIL00001",
                      "channel_id": "CGENERAL01", "team_id": "T0GITMEM",
                      "response_url": slack.fake.response_url("forged"), "trigger_id": "t"})
    if how == "unsigned":
        response = slack.post(body, "application/x-www-form-urlencoded", sign=False)
    elif how == "wrong secret":
        response = slack.post(body, "application/x-www-form-urlencoded", secret="not-the-secret")
    elif how == "six minutes old":
        response = slack.post(body, "application/x-www-form-urlencoded", timestamp=int(time.time()) - 360)
    else:
        stamp = str(int(time.time()))
        signature = SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)
        response = slack.client.post("/slack/events", data=(body + "x").encode(), headers={
            "Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature})
        slack.executor.settle()
    assert response.status_code == 401
    assert len(slack.commits()) == before
    assert len(slack.fake.calls) == calls


def test_url_verification_echoes_the_challenge(slack: Slack) -> None:
    body = json.dumps({"type": "url_verification", "token": "legacy", "challenge": "c-123"})
    response = slack.post(body, "application/json")
    assert response.status_code == 200 and response.get_json() == {"challenge": "c-123"}


# --- mounting ------------------------------------------------------------------------------------


def test_the_web_app_mounts_slack_events(settings: Settings, fake_slack: FakeSlack) -> None:
    app = create_app(settings)
    client = app.test_client()
    body = urlencode({"command": "/mem", "text": "nonsense", "user_id": "UALICE0001", "channel_id": "C1",
                      "team_id": "T0GITMEM", "response_url": fake_slack.response_url(), "trigger_id": "t"})
    assert client.post("/slack/events", data=body,
                       headers={"Content-Type": "application/x-www-form-urlencoded"}).status_code == 401
    stamp = str(int(time.time()))
    response = client.post("/slack/events", data=body, headers={
        "Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)})
    assert response.status_code == 200
    assert "/mem help" in response.get_json()["text"]
    assert app.extensions["gitmem.slack"] is not None


def test_the_web_app_without_slack_settings_has_no_endpoint(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path / "home"))
    assert "gitmem.slack" not in app.extensions
    assert app.test_client().post("/slack/events", data="x").status_code in (404, 405)


def test_the_bot_needs_its_token_and_secret(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="SLACK_BOT_TOKEN"):
        create_bolt_app(MemoryService(Settings(home=tmp_path)))
    with pytest.raises(InvalidInput, match="SLACK_SIGNING_SECRET"):
        create_bolt_app(MemoryService(Settings(home=tmp_path, slack_bot_token="xoxb-1")))
    assert create_bolt_app(MemoryService(Settings(home=tmp_path, slack_bot_token="xoxb-1")), socket_mode=True)


# --- gitmem slack ----------------------------------------------------------------------------------


@pytest.fixture
def run_cli(tmp_path: Path) -> Iterator[Callable[..., Result]]:
    """Run ``gitmem ARGS`` in-process with only the given GITMEM_/SLACK_ variables set."""

    def run(*args: str, **env: str) -> Result:
        base.settings.cache_clear()
        base.service.cache_clear()
        unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith(("GITMEM_", "SLACK_"))}
        return CliRunner().invoke(main, list(args), env={**unset, "GITMEM_HOME": str(tmp_path / "home"), **env})

    yield run
    base.settings.cache_clear()
    base.service.cache_clear()


def test_gitmem_slack_says_which_tokens_are_missing(run_cli: Callable[..., Result]) -> None:
    done = run_cli("slack")
    assert done.exit_code == 2 and "SLACK_BOT_TOKEN" in done.output
    done = run_cli("slack", SLACK_BOT_TOKEN="xoxb-1")
    assert done.exit_code == 2 and "SLACK_APP_TOKEN" in done.output
    done = run_cli("slack", "--http", "0", SLACK_BOT_TOKEN="xoxb-1")
    assert done.exit_code == 2 and "SLACK_SIGNING_SECRET" in done.output
    help_text = run_cli("slack", "--help").output
    assert "Socket Mode" in help_text and "--http" in help_text


# --- the manifest ------------------------------------------------------------------------------------


def test_the_manifest_declares_what_the_bot_listens_to() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    features, settings = manifest["features"], manifest["settings"]
    (command,) = features["slash_commands"]
    assert command["command"] == "/mem" and command["url"] == "https://YOUR-HOST/slack/events"
    (shortcut,) = features["shortcuts"]
    assert (shortcut["type"], shortcut["callback_id"]) == ("message", SHORTCUT)
    assert settings["interactivity"] == {"is_enabled": True, "request_url": "https://YOUR-HOST/slack/events"}
    assert settings["event_subscriptions"]["request_url"] == "https://YOUR-HOST/slack/events"
    assert {"message.channels", "message.groups", "message.im"} <= set(settings["event_subscriptions"]["bot_events"])
    assert {"commands", "chat:write", "channels:history", "groups:history", "channels:join"} <= set(
        manifest["oauth_config"]["scopes"]["bot"])  # the last three: watched channels (/mem watch)


# --- text ----------------------------------------------------------------------------------------------


def test_escape_and_unescape() -> None:
    typed = "a <@U1> & <!channel> > b"
    assert unescape("a &lt;@U1&gt; &amp; &lt;!channel&gt; &gt; b") == typed
    assert escape(typed) == "a &lt;@U1&gt; &amp; &lt;!channel&gt; &gt; b"
    assert unescape("&amp;lt;") == "&lt;"
    assert person("slack:UALICE0001") == "<@UALICE0001>"
    assert person("slack:<!here>") == "slack:&lt;!here&gt;"
    assert person("<b>") == "&lt;b&gt;"


@pytest.mark.parametrize("text, expected", [
    ("记住：用 pnpm", "用 pnpm"),
    ("  记一下 : 带 token", "带 token"),
    ("请记住:SQLite", "SQLite"),
    ("REMEMBER: caps", "caps"),
    ("remember:\nline one\nline two", "line one\nline two"),
    ("remember this", None),
    ("please remember: no", None),
    ("记住这个", None),
])
def test_spoken(text: str, expected: str | None) -> None:
    assert spoken(text) == expected


def test_parse_command() -> None:
    assert parse_command("remember lesson: never deploy on Friday").type == "lesson"
    assert parse_command("remember note: not a type").text == "note: not a type"
    assert parse_command("add x").name == "remember"
    assert parse_command("search x").name == "recall"
    with pytest.raises(Usage, match="not a memory id"):
        parse_command("amend 0123456789ab")
    assert parse_command("Amend 0123456789 new text").text == "new text"
    assert parse_command("forget ABCDEF0123").memory_id == "abcdef0123"
    with pytest.raises(Usage, match="takes nothing"):
        parse_command("status please")
    assert split_type("Decision: x") == ("decision", "x")


def test_no_token_will_be_unused_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         caplog: pytest.LogCaptureFixture) -> None:
    # Set up as docs/slack.md says: the token in SLACK_BOT_TOKEN, which Bolt also reads by itself.
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    caplog.set_level(logging.DEBUG)
    settings = Settings.from_env({**os.environ, "GITMEM_HOME": str(tmp_path)})
    create_bolt_app(MemoryService(settings))
    create_bolt_app(MemoryService(settings), socket_mode=True)
    assert "will be unused" not in caplog.text


def test_gitmem_slack_http_serves_on_gunicorn(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITMEM_", "SLACK_"))}
    with FakeSlack() as fake:
        env.update(GITMEM_HOME=str(tmp_path / "home"), SLACK_BOT_TOKEN="xoxb-test-token",
                   SLACK_SIGNING_SECRET=SECRET, GITMEM_SLACK_API_URL=fake.api_url)
        proc = subprocess.Popen([sys.executable, "-m", "gitmem", "slack", "--http", str(port)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            body = json.dumps({"type": "url_verification", "challenge": "c-123", "token": "unused"})
            deadline = time.monotonic() + 90
            while True:
                stamp = str(int(time.time()))
                signature = SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)
                try:
                    answer = httpx.post(f"http://127.0.0.1:{port}/slack/events", content=body, timeout=10, headers={
                        "Content-Type": "application/json", "X-Slack-Request-Timestamp": stamp,
                        "X-Slack-Signature": signature})
                    break
                except httpx.TransportError:
                    assert proc.poll() is None and time.monotonic() < deadline, "gitmem slack --http never answered"
                    time.sleep(0.3)
            assert answer.status_code == 200 and answer.json() == {"challenge": "c-123"}
            # The production server gitmem serve uses, not Flask's development server (Werkzeug).
            assert answer.headers["server"].startswith("gunicorn"), answer.headers
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
    assert "development server" not in err
