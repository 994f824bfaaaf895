"""The feedback webhook: confirm, reject, discuss, amend; keys and HMAC-signed requests."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator, Mapping

import pytest
from flask import Flask

from gitmem.repo import KeyStore
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.web import create_app
from gitmem.web.auth import sign

from .conftest import Client, typed_client

SECRET = "webhook-shared-secret"
URL = "/api/v1/feedback"


@pytest.fixture
def hsvc(settings: Settings) -> Iterator[MemoryService]:
    """A service whose settings have a webhook secret and a maintainer named alice."""
    service = MemoryService(settings.with_(hmac_secret=SECRET, maintainers=("alice",)))
    service.init("default")
    yield service
    service.close()


@pytest.fixture
def hclient(hsvc: MemoryService) -> Client:
    app: Flask = create_app(service=hsvc)
    return typed_client(app)


@pytest.fixture
def mid(hsvc: MemoryService) -> str:
    result = hsvc.remember("default", "The staging database is reset every night")
    assert result.memory is not None
    return result.memory.id


@pytest.fixture
def writer(hsvc: MemoryService) -> dict[str, str]:
    return {"X-API-Key": KeyStore(hsvc.settings.home).create("default", "writer", name="ci-bot")[0]}


def signed(body: Mapping[str, object], *, at: float | None = None,
           secret: str = SECRET) -> tuple[bytes, dict[str, str]]:
    raw = json.dumps(body).encode()
    stamp = int(time.time() if at is None else at)
    return raw, {"Content-Type": "application/json", "X-Gitmem-Timestamp": str(stamp),
                 "X-Gitmem-Signature": sign(secret, stamp, raw)}


def trailers(svc: MemoryService) -> dict[str, list[str]]:
    return svc.log("default", limit=1)[0].trailers


def test_confirm_marks_verified_and_names_the_actor(hclient: Client, hsvc: MemoryService, mid: str,
                                                    fsck: Callable[[str], None]) -> None:
    admin = {"X-API-Key": KeyStore(hsvc.settings.home).create("default", "admin", name="ops")[0]}
    response = hclient.post(URL, headers=admin,  # an admin key may speak for someone else
                            json={"namespace": "default", "memory_id": mid, "action": "confirm",
                                  "actor": "dana"})
    assert response.status_code == 200
    assert response.json["memory"]["verified"] == ["dana"]
    assert hsvc.show("default", mid).access_count == 1
    assert trailers(hsvc)["Actor"] == ["dana"] and trailers(hsvc)["Action"] == ["confirm"]
    fsck("default")


def test_reject_archives_with_the_reason(hclient: Client, hsvc: MemoryService, mid: str,
                                         writer: dict[str, str]) -> None:
    response = hclient.post(URL, headers=writer, json={"memory_id": mid, "action": "reject",
                                                       "text": "it is reset weekly now"})
    assert response.status_code == 200
    memory = hsvc.show("default", mid)
    assert memory.state == "archived" and memory.archived_reason == "it is reset weekly now"
    assert trailers(hsvc)["Actor"] == ["ci-bot"]


@pytest.mark.parametrize("text", [None, "", "   "])
def test_reject_without_a_reason_is_400_and_changes_nothing(hclient: Client, hsvc: MemoryService, mid: str,
                                                             writer: dict[str, str], text: str | None) -> None:
    before = hsvc.status("default")["head"]
    body = {"memory_id": mid, "action": "reject"} | ({} if text is None else {"text": text})
    response = hclient.post(URL, headers=writer, json=body)
    assert response.status_code == 400 and "reason is required" in response.json["error"]["message"]
    assert hsvc.status("default")["head"] == before and hsvc.show("default", mid).state == "active"


def test_discuss_adds_to_the_thread_and_leaves_the_memory(hclient: Client, hsvc: MemoryService,
                                                          mid: str, writer: dict[str, str]) -> None:
    before = hsvc.show("default", mid)
    response = hclient.post(URL, headers=writer, json={"memory_id": mid, "action": "discuss",
                                                       "text": "Is this still true?"})
    assert response.status_code == 200
    assert [(c.actor, c.text) for c in hsvc.discussion("default", mid)] == [("ci-bot", "Is this still true?")]
    assert hsvc.show("default", mid) == before


def test_amend_by_a_writer_opens_a_review_and_leaves_main(hclient: Client, hsvc: MemoryService,
                                                          mid: str, writer: dict[str, str]) -> None:
    before = hsvc.status("default")["head"]
    response = hclient.post(URL, headers=writer, json={"memory_id": mid, "action": "amend",
                                                       "text": "The staging database is reset weekly"})
    assert response.status_code == 202 and isinstance(response.json["review"], int)
    assert hsvc.status("default")["head"] == before
    assert hsvc.show("default", mid).text == "The staging database is reset every night"


def test_amend_by_a_maintainer_changes_main(hclient: Client, hsvc: MemoryService, mid: str) -> None:
    alice = {"X-API-Key": KeyStore(hsvc.settings.home).create("default", "writer", name="alice")[0]}
    response = hclient.post(URL, headers=alice, json={"memory_id": mid, "action": "amend",
                                                      "text": "The staging database is reset weekly"})
    assert response.status_code == 200 and response.json["review"] is None
    assert hsvc.show("default", mid).text == "The staging database is reset weekly"


def test_a_writer_key_cannot_pose_as_a_maintainer(hclient: Client, hsvc: MemoryService, mid: str,
                                                  writer: dict[str, str]) -> None:
    before = hsvc.status("default")["head"]
    response = hclient.post(URL, headers=writer, json={"memory_id": mid, "action": "amend",
                                                       "actor": "alice", "text": "changed behind her back"})
    assert response.status_code == 403
    assert hsvc.status("default")["head"] == before


def test_a_writer_key_acts_as_itself_only(hclient: Client, hsvc: MemoryService, mid: str,
                                          writer: dict[str, str]) -> None:
    before = hsvc.status("default")["head"]
    response = hclient.post(URL, headers=writer, json={"memory_id": mid, "action": "confirm", "actor": "eve"})
    assert response.status_code == 403 and "this key acts as 'ci-bot'" in response.json["error"]["message"]
    assert hsvc.status("default")["head"] == before
    same = hclient.post(URL, headers=writer, json={"memory_id": mid, "action": "confirm", "actor": "ci-bot"})
    assert same.status_code == 200 and trailers(hsvc)["Actor"] == ["ci-bot"]


def test_signed_request_is_accepted_once(hclient: Client, hsvc: MemoryService, mid: str) -> None:
    raw, headers = signed({"memory_id": mid, "action": "confirm", "actor": "slack:U123"})
    first = hclient.post(URL, data=raw, headers=headers)
    assert first.status_code == 200 and first.json["memory"]["verified"] == ["slack:U123"]
    head = hsvc.status("default")["head"]
    replay = hclient.post(URL, data=raw, headers=headers)
    assert replay.status_code == 401 and "replay" in replay.json["error"]["message"]
    assert hsvc.status("default")["head"] == head


@pytest.mark.parametrize("forge", ["stale", "future", "wrong-secret", "tampered", "no-timestamp"])
def test_stale_or_forged_signatures_are_401(hclient: Client, hsvc: MemoryService, mid: str,
                                            forge: str) -> None:
    body = {"memory_id": mid, "action": "reject", "actor": "mallory"}
    # Just outside the five-minute window on either side (time only moves a stale one further out).
    at = {"stale": math.floor(time.time()) - 301, "future": math.ceil(time.time()) + 301}.get(forge)
    raw, headers = signed(body, at=at, secret="guess" if forge == "wrong-secret" else SECRET)
    if forge == "tampered":
        raw = raw.replace(b"mallory", b"alice")
    if forge == "no-timestamp":
        del headers["X-Gitmem-Timestamp"]
    before = hsvc.status("default")["head"]
    response = hclient.post(URL, data=raw, headers=headers)
    assert response.status_code == 401 and response.json["error"]["message"]
    assert hsvc.status("default")["head"] == before



@pytest.mark.parametrize("offset", [-299, 299])
def test_signatures_within_five_minutes_are_accepted(hclient: Client, hsvc: MemoryService, mid: str,
                                                     offset: int) -> None:
    at = math.ceil(time.time()) + offset if offset < 0 else math.floor(time.time()) + offset
    raw, headers = signed({"memory_id": mid, "action": "confirm", "actor": "slack:U123"}, at=at)
    response = hclient.post(URL, data=raw, headers=headers)
    assert response.status_code == 200, response.json
    assert hsvc.show("default", mid).verified == ("slack:U123",)


def test_signatures_are_refused_when_no_secret_is_set(client: Client, svc: MemoryService) -> None:
    raw, headers = signed({"memory_id": "0123456789", "action": "confirm"})
    response = client.post(URL, data=raw, headers=headers)
    assert response.status_code == 401 and "GITMEM_HMAC_SECRET" in response.json["error"]["message"]


@pytest.mark.parametrize(
    ("body", "status"),
    [({"memory_id": "0123456789", "action": "confirm"}, 404),
     ({"memory_id": "nope", "action": "confirm"}, 400),
     ({"action": "confirm"}, 400),
     ({"memory_id": "0123456789", "action": "applaud"}, 400),
     ({"memory_id": "0123456789", "action": "confirm", "namespace": "elsewhere"}, 403)],
)
def test_bad_feedback_changes_nothing(hclient: Client, hsvc: MemoryService, writer: dict[str, str],
                                      body: dict[str, str], status: int) -> None:
    before = hsvc.status("default")["head"]
    response = hclient.post(URL, headers=writer, json=body)
    assert response.status_code == status and response.json["error"]["message"]
    assert hsvc.status("default")["head"] == before


def test_reader_key_cannot_give_feedback(hclient: Client, hsvc: MemoryService, mid: str) -> None:
    reader = {"X-API-Key": KeyStore(hsvc.settings.home).create("default", "reader")[0]}
    response = hclient.post(URL, headers=reader, json={"memory_id": mid, "action": "confirm"})
    assert response.status_code == 403


def test_a_number_too_long_for_python_is_400(hclient: Client, hsvc: MemoryService, mid: str,
                                             writer: dict[str, str]) -> None:
    before = hsvc.status("default")["head"]
    raw = f'{{"memory_id": "{mid}", "action": "confirm", "n": {"9" * 4301}}}'.encode()
    stamp = int(time.time())
    for headers in ({**writer, "Content-Type": "application/json"},
                    {"Content-Type": "application/json", "X-Gitmem-Timestamp": str(stamp),
                     "X-Gitmem-Signature": sign(SECRET, stamp, raw)}):
        response = hclient.post(URL, data=raw, headers=headers)
        assert response.status_code == 400, response.get_data(as_text=True)
        assert "digits" in response.json["error"]["message"]
    assert hsvc.status("default")["head"] == before


def test_an_empty_namespace_is_refused_not_taken_for_the_default(hclient: Client, hsvc: MemoryService, mid: str,
                                                                 writer: dict[str, str]) -> None:
    before = hsvc.status("default")["head"]
    response = hclient.post(URL, headers=writer, json={"memory_id": mid, "action": "confirm", "namespace": ""})
    assert response.status_code == 400 and "invalid namespace ''" in response.json["error"]["message"]
    assert hsvc.status("default")["head"] == before
