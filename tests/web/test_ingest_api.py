"""The conversations API: POST a batch of messages, GET the counters; keys and bad input."""

from __future__ import annotations

import json

from gitmem.service import MemoryService

from .conftest import Client, Keys

URL = "/api/v1/namespaces/default/conversations/slack:C01:1712.5/messages"


def test_a_writer_posts_messages_and_they_are_queued_for_the_workers(client: Client, keys: Keys,
                                                                     svc: MemoryService) -> None:
    body = {"messages": [{"id": "m1", "author": "ana", "text": "No, we use pnpm, not npm."},
                         {"id": "m2", "role": "assistant", "text": "Switching to pnpm."}], "flush": True}
    response = client.post(URL, json=body, headers=keys.auth("writer"))
    assert response.status_code == 202, response.json
    data = response.json
    assert (data["conversation"], data["added"], data["repeated"], len(data["sealed"]), len(data["queued"])) == (
        "slack:C01:1712.5", 2, 0, 1, 1)
    again = client.post(URL, json=body, headers=keys.auth("writer")).json
    assert (again["added"], again["repeated"], again["queued"]) == (0, 2, [])
    status = client.get("/api/v1/namespaces/default/conversations", headers=keys.auth("reader")).json
    assert status["messages"] == 2 and status["buffers_sealed"] == 1
    assert svc.list("default") == []  # nothing is extracted in the request


def test_only_a_writer_of_the_namespace_may_post(client: Client, keys: Keys) -> None:
    body = {"messages": [{"text": "hello"}]}
    assert client.post(URL, json=body).status_code == 401
    assert client.post(URL, json=body, headers=keys.auth("reader")).status_code == 403
    assert client.post(URL, json=body, headers=keys.auth("other")).status_code == 403
    status = client.get("/api/v1/namespaces/default/conversations", headers=keys.auth("reader")).json
    assert status.get("messages", 0) == 0


def test_bad_input_is_a_400_naming_it_and_stores_nothing(client: Client, keys: Keys) -> None:
    writer = keys.auth("writer")
    cases = [
        ({"messages": "hello"}, "messages must be a list"),
        ({"messages": []}, "non-empty list"),
        ({"messages": [{"text": "ok"}, {"text": ""}]}, "messages[1].text"),
        ({"messages": [{"text": "ok"}], "extra": 1}, "extra"),
        ({"messages": [{"text": "ok"}] * 1001}, "at most 1000"),
    ]
    for body, error in cases:
        response = client.post(URL, json=body, headers=writer)
        assert response.status_code == 400 and error in response.json["error"]["message"], (body, response.json)
    bad_id = client.post("/api/v1/namespaces/default/conversations/a b/messages", json={"messages": [{"text": "x"}]},
                         headers=writer)
    assert bad_id.status_code == 400 and "conversation id" in bad_id.json["error"]["message"]
    status = client.get("/api/v1/namespaces/default/conversations", headers=keys.auth("reader")).json
    assert status.get("messages", 0) == 0


def test_a_lone_surrogate_anywhere_in_a_message_is_a_400_not_a_500(client: Client, keys: Keys) -> None:
    # JSON may escape half of a surrogate pair ("\ud800"): Python reads it as a str that UTF-8 cannot hold.
    for field, message in (("text", {"id": "m1", "text": "we use pnpm \ud800"}),
                           ("author", {"id": "m1", "text": "we use pnpm", "author": "ana\udc00"}),
                           ("id", {"id": "m1\ud83d", "text": "we use pnpm"})):
        response = client.post(URL, data=json.dumps({"messages": [message]}), content_type="application/json",
                                headers=keys.auth("writer"))
        assert response.status_code == 400, (field, response.json)
        assert response.json["error"]["message"].startswith(f"messages[0].{field} "), response.json
        assert "UTF-8" in response.json["error"]["message"]
    status = client.get("/api/v1/namespaces/default/conversations", headers=keys.auth("reader")).json
    assert status.get("messages", 0) == 0
