"""The app factory: one service in app.extensions, the Slack mount, the session key, search page."""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Callable

from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.web import create_app, secret_key

from .conftest import Client, Keys, typed_client


def test_one_service_shared_by_every_blueprint(svc: MemoryService) -> None:
    app = create_app(service=svc)
    assert app.extensions["gitmem"] is svc
    assert {"api", "webhook", "pages", "git", "health"} <= set(app.blueprints)
    assert not any(rule.rule.startswith("/slack") for rule in app.url_map.iter_rules())


def test_secret_key_is_generated_once_and_kept(settings: Settings) -> None:
    first = secret_key(settings)
    assert len(first) >= 40 and secret_key(settings) == first
    assert (settings.home / "secret_key").stat().st_mode & 0o077 == 0
    assert secret_key(settings.with_(secret_key="configured")) == "configured"


def test_slack_events_mounted_when_configured(settings: Settings) -> None:
    secret = "slack-signing-secret"
    service = MemoryService(settings.with_(slack_signing_secret=secret, slack_bot_token="xoxb-test",
                                           slack_api_url="http://127.0.0.1:9/api/"))
    service.init("default")
    app = create_app(service=service)
    assert "/slack/events" in {rule.rule for rule in app.url_map.iter_rules()}
    body = b'{"type": "url_verification", "token": "x", "challenge": "c-123"}'
    stamp = str(int(time.time()))
    signature = "v0=" + hmac.new(secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
    client = typed_client(app)
    signed = client.post("/slack/events", data=body, content_type="application/json",
                         headers={"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature})
    assert signed.status_code == 200 and "c-123" in signed.get_data(as_text=True)
    forged = client.post("/slack/events", data=body, content_type="application/json",
                         headers={"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": "v0=00"})
    assert forged.status_code == 401
    service.close()


def test_search_page_finds_memories(client: Client, keys: Keys, remember: Callable[..., str]) -> None:
    mid = remember("Feature flags live in LaunchDarkly", paths=["src/flags/"])
    form = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token is not None
    client.post("/login", data={"key": keys.reader, "csrf_token": token.group(1)})
    page = client.get("/ns/default/search?q=feature+flags").get_data(as_text=True)
    assert f"/ns/default/memories/{mid}" in page
    by_path = client.get("/ns/default/search?path=src/flags/admin.ts").get_data(as_text=True)
    assert f"/ns/default/memories/{mid}" in by_path
    nothing = client.get("/ns/default/search?q=kubernetes").get_data(as_text=True)
    assert "Nothing matches" in nothing


def test_pages_show_html_errors(client: Client, keys: Keys) -> None:
    form = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token is not None
    client.post("/login", data={"key": keys.reader, "csrf_token": token.group(1)})
    missing = client.get("/ns/default/memories/0123456789")
    assert missing.status_code == 404 and missing.mimetype == "text/html"
    assert "no memory 0123456789" in missing.get_data(as_text=True)
    elsewhere = client.get("/ns/other/")
    assert elsewhere.status_code == 403 and elsewhere.mimetype == "text/html"
