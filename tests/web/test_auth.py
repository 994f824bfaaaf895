"""Who is calling: every way a key is presented, page sessions kept off the API, signed webhooks.

Real requests to the app (Flask's test client), one per way a caller can present itself, each
checked by what the caller gets back and what is written.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from flask import Flask

from gitmem.repo import KeyStore
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.web import auth, create_app
from gitmem.web.auth import SIGNATURE_WINDOW, Caller, Unauthenticated, sign

from .conftest import Client, Keys, typed_client

NS = "/api/v1/namespaces/default"
SECRET = "webhook-shared-secret"


def basic(user: str, key: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{key}".encode()).decode()}


def message(response: object) -> str:
    body = getattr(response, "json")  # noqa: B009 - the typed response's JSON
    assert isinstance(body, dict)
    return str(body["error"]["message"])


@pytest.mark.parametrize("how", ["bearer", "BEARER", "x-api-key", "basic", "basic-spaces", "padded"])
def test_a_key_is_taken_from_each_header_a_client_may_send(client: Client, keys: Keys, how: str) -> None:
    headers = {
        "bearer": {"Authorization": f"Bearer {keys.reader}"},
        "BEARER": {"Authorization": f"BEARER   {keys.reader} "},
        "x-api-key": {"X-API-Key": f" {keys.reader} "},
        "basic": basic("anything", keys.reader),
        "basic-spaces": {"Authorization": "basic  " + base64.b64encode(f"me: {keys.reader} ".encode()).decode()},
        # X-API-Key wins over an Authorization header meant for a proxy in front.
        "padded": {"X-API-Key": keys.reader, "Authorization": "Bearer gmk_000000000000_xxxxxxxxxxxxxxxxxxxxxxxx"},
    }[how]
    response = client.get(NS, headers=headers)
    assert response.status_code == 200, response.json


@pytest.mark.parametrize(("headers", "says"), [
    ({}, "authentication required: send an API key as 'Authorization: Bearer <key>'"),
    ({"Authorization": "Bearer "}, "authentication required"),
    ({"Authorization": "Bearer"}, "authentication required"),
    ({"Authorization": "Token abc"}, "authentication required"),
    ({"Authorization": "ApiKey abc"}, "authentication required"),  # a scheme gitmem does not take, whatever its name
    ({"X-API-Key": ""}, "authentication required"),
    ({"Authorization": "Basic "}, "authentication required"),
    ({"Authorization": "Basic " + base64.b64encode(b"user-only").decode()}, "authentication required"),
    ({"Authorization": "Basic " + base64.b64encode(b"user:  ").decode()}, "authentication required"),
    ({"Authorization": "Basic !!!"}, "the Basic credentials are not valid base64 of user:key"),
    ({"Authorization": "Basic " + base64.b64encode(b"user:\xff\xfe").decode()},
     "the Basic credentials are not valid base64 of user:key"),
    ({"X-API-Key": "gmk_000000000000_xxxxxxxxxxxxxxxxxxxxxxxx"}, "that API key is not valid (revoked, mistyped"),
    ({"Authorization": "Bearer not-a-key"}, "that API key is not valid"),
])
def test_no_key_or_a_wrong_one_is_401_saying_what_to_send(client: Client, keys: Keys, headers: dict[str, str],
                                                          says: str) -> None:
    response = client.get(NS, headers=headers)
    assert response.status_code == 401
    assert message(response).startswith(says)


def test_a_key_reaches_its_own_namespace_and_role_only(client: Client, keys: Keys, svc: MemoryService) -> None:
    svc.init("other")
    assert client.get("/api/v1/namespaces/other", headers=keys.auth("other")).status_code == 200
    refused = client.get(NS, headers=keys.auth("other"))
    assert refused.status_code == 403
    assert message(refused) == "outsider (writer) may not do this in namespace 'default': it needs a reader key for " \
                               "that namespace"
    before = svc.head("default")
    written = client.post(f"{NS}/memories", headers=keys.auth("reader"), json={"text": "Readers cannot write"})
    assert written.status_code == 403 and "reader (reader) may not do this" in message(written)
    assert svc.head("default") == before


def test_a_page_session_never_authenticates_the_api(client: Client, keys: Keys, svc: MemoryService) -> None:
    # A session cookie rides along with any request a browser makes, from any site: the API takes keys only.
    form = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token is not None
    assert client.post("/login", data={"key": keys.admin, "csrf_token": token.group(1)}).status_code == 303
    assert client.get("/ns/default/").status_code == 200
    before = svc.head("default")
    api = client.post(f"{NS}/memories", json={"text": "Written with a cookie"})
    assert api.status_code == 401 and svc.head("default") == before


def test_a_signed_out_session_and_a_revoked_key_each_say_why(client: Client, keys: Keys, settings: Settings) -> None:
    def sign_in(key: str) -> str:
        form = client.get("/login").get_data(as_text=True)
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert token is not None
        assert client.post("/login", data={"key": key, "csrf_token": token.group(1)}).status_code == 303
        page = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/ns/default/").get_data(as_text=True))
        assert page is not None
        return page.group(1)

    token = sign_in(keys.writer)
    assert client.post("/logout", data={"csrf_token": token}).status_code == 303
    again = client.get("/ns/default/", follow_redirects=True).get_data(as_text=True)
    assert "/login" in client.get("/ns/default/").headers["Location"]
    assert "sign in" in again.lower()

    sign_in(keys.reviewer)
    store = KeyStore(settings.home)
    [reviewer] = [k for k in store.list() if k.name == "reviewer"]
    store.revoke(reviewer.id)
    page = client.get("/ns/default/", follow_redirects=True).get_data(as_text=True)
    assert "your key was revoked; sign in again" in page


def test_every_sign_out_stays_in_force_when_others_follow(app: Flask, keys: Keys) -> None:
    """Signing out records each session until its cookie would expire; a later sign-out keeps the earlier ones."""
    copies = []
    for _ in range(2):
        client = typed_client(app)
        form = client.get("/login").get_data(as_text=True)
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert token is not None
        assert client.post("/login", data={"key": keys.writer, "csrf_token": token.group(1)}).status_code == 303
        page = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/ns/default/").get_data(as_text=True))
        assert page is not None
        cookie = client.get_cookie("gitmem_session")
        assert cookie is not None
        copies.append(cookie.value)
        assert client.post("/logout", data={"csrf_token": page.group(1)}).status_code == 303
    for value in copies:
        thief = typed_client(app)
        thief.set_cookie("gitmem_session", value)
        assert thief.get("/ns/default/").status_code == 302


def test_a_caller_is_authenticated_once_per_request(app: Flask, keys: Keys, settings: Settings) -> None:
    store = KeyStore(settings.home)
    [reader] = [k for k in store.list() if k.name == "reader"]
    from gitmem.web.auth import caller

    with app.test_request_context(NS, headers={"Authorization": f"Bearer {keys.reader}"}):
        first = caller()
        assert first == Caller("reader", "key", reader)
        assert (first.role, first.source) == ("reader", "user")
        store.revoke(reader.id)
        assert caller() is first  # the request goes on as it began
    with app.test_request_context(NS, headers={"Authorization": f"Bearer {keys.reader}"}), \
            pytest.raises(Unauthenticated):
        caller()
    webhook = Caller("webhook", "signature")
    assert (webhook.role, webhook.source) == ("writer", "agent")
    assert webhook.allows("any", "reader") and webhook.allows("any", "writer")
    assert not webhook.allows("any", "reviewer") and not webhook.allows("any", "admin")
    assert Unauthenticated("x").http_status == 401


# --- signed webhooks ----------------------------------------------------------------------------------


def test_sign_is_hmac_sha256_of_the_timestamp_and_the_body() -> None:
    expected = hmac.new(b"s3cret", b"1700000000.{\"a\": 1}", hashlib.sha256).hexdigest()
    assert sign("s3cret", 1700000000, b'{"a": 1}') == "sha256=" + expected


@pytest.fixture
def signed_app(settings: Settings) -> Iterator[tuple[Client, MemoryService]]:
    service = MemoryService(settings.with_(hmac_secret=SECRET))
    service.init("default")
    yield typed_client(create_app(service=service)), service
    service.close()


def feedback(client: Client, body: dict[str, str], *, at: int | None = None, secret: str = SECRET,
             signature: str | None = None, stamp: str | None = None) -> tuple[int, str]:
    raw = json.dumps(body).encode()
    when = int(time.time()) if at is None else at
    headers = {"Content-Type": "application/json", "X-Gitmem-Timestamp": str(when) if stamp is None else stamp,
               "X-Gitmem-Signature": sign(secret, when, raw) if signature is None else signature}
    response = client.post("/api/v1/feedback", data=raw, headers=headers)
    return response.status_code, message(response) if response.status_code >= 400 else ""


def test_a_signed_webhook_acts_as_a_writer(signed_app: tuple[Client, MemoryService]) -> None:
    client, svc = signed_app
    memory = svc.remember("default", "Staging resets every night").memory
    assert memory is not None
    body = {"memory_id": memory.id, "action": "confirm", "actor": "slack:U1"}
    assert feedback(client, body, signature=" " + sign(SECRET, int(time.time()), json.dumps(body).encode()) + " ") \
        == (200, "")
    assert svc.show("default", memory.id).verified == ("slack:U1",)
    # The same signed request again is a replay, refused with nothing written.
    raw = json.dumps({"memory_id": memory.id, "action": "discuss", "actor": "slack:U1", "text": "why?"}).encode()
    now = int(time.time())
    headers = {"Content-Type": "application/json", "X-Gitmem-Timestamp": str(now),
               "X-Gitmem-Signature": sign(SECRET, now, raw)}
    assert client.post("/api/v1/feedback", data=raw, headers=headers).status_code == 200
    head = svc.head("default")
    replay = client.post("/api/v1/feedback", data=raw, headers=headers)
    assert replay.status_code == 401
    assert message(replay) == "this signed request was already received (replay refused)"
    assert svc.head("default") == head
    # A writer's amendment opens a review (202), main is left: the signed webhook gets what a writer key gets.
    amend = {"memory_id": memory.id, "action": "amend", "actor": "slack:U1", "text": "Staging resets at noon"}
    status, _ = feedback(client, amend)
    assert status == 202 and svc.show("default", memory.id).text == "Staging resets every night"


@pytest.mark.parametrize(("forge", "says"), [
    ("bad-stamp", "X-Gitmem-Timestamp must be the Unix time in seconds"),
    ("float-stamp", "X-Gitmem-Timestamp must be the Unix time in seconds"),
    ("stale", f"the signature timestamp is more than {SIGNATURE_WINDOW} s away from now; sign again"),
    ("future", "the signature timestamp is more than 300 s away from now; sign again"),
    ("wrong-secret", "the request signature does not match its body"),
    ("bare-hex", "the request signature does not match its body"),
])
def test_a_forged_or_stale_signature_is_401_and_says_which(signed_app: tuple[Client, MemoryService], forge: str,
                                                           says: str) -> None:
    client, svc = signed_app
    body = {"memory_id": "0123456789", "action": "confirm", "actor": "mallory"}
    now = int(time.time())
    raw = json.dumps(body).encode()
    kwargs: dict[str, object] = {
        "bad-stamp": {"stamp": "yesterday"}, "float-stamp": {"stamp": f"{now}.5"},
        "stale": {"at": now - 3600}, "future": {"at": now + 3600}, "wrong-secret": {"secret": "guess"},
        "bare-hex": {"signature": sign(SECRET, now, raw).removeprefix("sha256="), "at": now},
    }[forge]  # type: ignore[assignment]
    before = svc.head("default")
    assert feedback(client, body, **kwargs) == (401, says)  # type: ignore[arg-type]
    assert svc.head("default") == before


@pytest.mark.parametrize(("age", "status"), [(-300, 200), (300, 200), (301, 401), (-301, 401)])
def test_a_signature_five_minutes_away_is_the_last_one_accepted(signed_app: tuple[Client, MemoryService],
                                                                 monkeypatch: pytest.MonkeyPatch, age: int,
                                                                 status: int) -> None:
    client, svc = signed_app
    memory = svc.remember("default", "Staging resets every night").memory
    assert memory is not None
    stamp = int(time.time())
    # The server's clock (its own reading only), exactly ``age`` seconds after the stamp.
    monkeypatch.setattr(auth, "time", SimpleNamespace(time=lambda: stamp + age + 0.0))
    got, _ = feedback(client, {"memory_id": memory.id, "action": "confirm", "actor": "slack:U1"}, at=stamp)
    assert got == status


def test_signatures_are_refused_where_no_secret_is_set(client: Client) -> None:
    assert feedback(client, {"memory_id": "0123456789", "action": "confirm"}) == (
        401, "signed requests are not enabled here (GITMEM_HMAC_SECRET is unset)")


def test_a_signature_is_taken_only_where_the_endpoint_allows_it(signed_app: tuple[Client, MemoryService]) -> None:
    client, _ = signed_app
    raw = b""
    now = int(time.time())
    response = client.get(NS, headers={"X-Gitmem-Timestamp": str(now), "X-Gitmem-Signature": sign(SECRET, now, raw)})
    assert response.status_code == 401 and message(response).startswith("authentication required")
