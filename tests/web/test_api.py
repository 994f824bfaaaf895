"""The JSON API through Flask's test client: what agents and tools see."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from gitmem.service import MemoryService

from ..conftest import push_refused_entry
from .conftest import Client, Keys

API = "/api/v1/namespaces/default"


def head(svc: MemoryService) -> str:
    return str(svc.status("default")["head"])


def test_remember_then_recall_and_get(client: Client, keys: Keys, fsck: Callable[[str], None]) -> None:
    made = client.post(f"{API}/memories", headers=keys.auth("writer"),
                       json={"text": "Run the tests with `pytest -x`", "type": "convention",
                             "tags": ["testing"], "paths": ["tests/"]})
    assert made.status_code == 201
    memory = made.json["memory"]
    assert made.json["outcome"] == "added" and memory["author"] == "writer"
    assert made.headers["Location"].endswith(f"/memories/{memory['id']}")

    got = client.get(f"{API}/memories/{memory['id']}", headers=keys.auth("reader"))
    assert got.status_code == 200 and got.json["text"] == "Run the tests with `pytest -x`"

    hits = client.get(f"{API}/recall?q=pytest&limit=5", headers=keys.auth("reader")).json["items"]
    assert [h["memory"]["id"] for h in hits] == [memory["id"]]
    by_path = client.get(f"{API}/recall?path=tests/web/test_api.py", headers=keys.auth("reader"))
    assert by_path.json["items"][0]["path_match"] is True

    again = client.post(f"{API}/memories", headers=keys.auth("writer"),
                        json={"text": "Run the tests with `pytest -x`"})
    assert again.status_code == 200 and again.json["outcome"] == "reinforced"
    fsck("default")


def test_context_block_for_the_files_an_agent_works_on(client: Client, keys: Keys,
                                                        remember: Callable[..., str]) -> None:
    mine = remember("Migrations live in db/migrations and run with make migrate", paths=["db/"])
    remember("The CSS uses BEM naming", paths=["web/css/"])
    block = client.get(f"{API}/context?file=db/migrations/0001.sql", headers=keys.auth("reader"))
    assert block.status_code == 200 and block.mimetype == "text/markdown"
    assert mine in block.get_data(as_text=True)
    posted = client.post(f"{API}/context", headers={**keys.auth("reader"), "Accept": "application/json"},
                         json={"files": ["db/migrations/0001.sql"]})
    assert posted.json["files"] == ["db/migrations/0001.sql"] and mine in posted.json["context"]


def test_list_pages_through_memories(client: Client, keys: Keys, remember: Callable[..., str]) -> None:
    ids = {remember(f"memory number {i} about topic {chr(97 + i)}") for i in range(5)}
    seen: set[str] = set()
    offset: int | None = 0
    while offset is not None:
        page = client.get(f"{API}/memories?limit=2&offset={offset}", headers=keys.auth("reader")).json
        assert len(page["items"]) <= 2
        seen |= {m["id"] for m in page["items"]}
        offset = page["next_offset"]
    assert seen == ids


def test_amend_forget_history_revert(client: Client, keys: Keys, svc: MemoryService,
                                     remember: Callable[..., str], fsck: Callable[[str], None]) -> None:
    mid = remember("Deploys happen on Tuesdays")
    amended = client.patch(f"{API}/memories/{mid}", headers=keys.auth("reviewer"),
                           json={"text": "Deploys happen on Thursdays"})
    assert amended.status_code == 200 and amended.json["memory"]["text"] == "Deploys happen on Thursdays"

    history = client.get(f"{API}/memories/{mid}/history", headers=keys.auth("reader")).json["items"]
    assert [c["action"] for c in history] == ["amend", "remember"]
    assert history[0]["actor"] == "reviewer"

    reverted = client.post(f"{API}/commits/{history[0]['id']}/revert", headers=keys.auth("reviewer"))
    assert reverted.status_code == 200 and reverted.json["outcome"] == "reverted"
    assert svc.show("default", mid).text == "Deploys happen on Tuesdays"

    gone = client.delete(f"{API}/memories/{mid}?reason=obsolete", headers=keys.auth("writer"))
    assert gone.json["memory"]["state"] == "archived"
    assert gone.json["memory"]["archived_reason"] == "obsolete"
    restored = client.post(f"{API}/memories/{mid}/restore", headers=keys.auth("reviewer"),
                           json={"commit": history[0]["id"]})
    assert restored.json["memory"]["state"] == "active"
    fsck("default")


def test_writer_cannot_amend_main_directly(client: Client, keys: Keys, svc: MemoryService,
                                          remember: Callable[..., str]) -> None:
    mid = remember("Use tabs")
    before = head(svc)
    refused = client.patch(f"{API}/memories/{mid}", headers=keys.auth("writer"), json={"text": "Use spaces"})
    assert refused.status_code == 403 and "feedback" in refused.json["error"]["message"]
    assert head(svc) == before


def test_purge_needs_admin(client: Client, keys: Keys, svc: MemoryService,
                           remember: Callable[..., str]) -> None:
    mid = remember("A secret that was pasted by mistake")
    assert client.delete(f"{API}/memories/{mid}?purge=true", headers=keys.auth("writer")).status_code == 403
    assert client.delete(f"{API}/memories/{mid}?purge=true", headers=keys.auth("admin")).status_code == 200
    assert client.get(f"{API}/memories/{mid}", headers=keys.auth("reader")).status_code == 404


def test_namespaces_are_per_key(client: Client, keys: Keys, svc: MemoryService) -> None:
    svc.init("other")
    assert client.get("/api/v1/namespaces", headers=keys.auth("reader")).json["items"] == ["default"]
    assert client.get("/api/v1/namespaces", headers=keys.auth("other")).json["items"] == ["other"]
    made = client.post("/api/v1/namespaces", headers=keys.auth("admin"), json={"name": "default"})
    assert made.status_code == 200 and made.json["created"] is False
    refused = client.post("/api/v1/namespaces", headers=keys.auth("admin"), json={"name": "third"})
    assert refused.status_code == 403 and not svc.exists("third")


def test_status_counts(client: Client, keys: Keys, remember: Callable[..., str]) -> None:
    remember("one fact")
    remember("one decision", type="decision")
    status = client.get(API, headers=keys.auth("reader")).json
    assert status["total"] == 2 and status["by_type"]["decision"] == 1


def test_openapi_document_lists_every_endpoint(client: Client) -> None:
    doc = client.get("/api/v1/openapi.json").json
    assert doc["openapi"].startswith("3.")
    for path in ("/namespaces/{ns}/memories", "/namespaces/{ns}/recall", "/namespaces/{ns}/context",
                 "/namespaces/{ns}/reviews/{number}/approve", "/feedback",
                 "/namespaces/{ns}/commits/{commit}/revert", "/namespaces/{ns}/consolidate"):
        assert path in doc["paths"]


# --- bad input: a JSON error and nothing changed ----------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "status"),
    [({}, 401), ({"Authorization": "Bearer gmk_000000000000_nopenopenopenopenopenope"}, 401),
     ({"X-API-Key": "not-a-key"}, 401), ({"Authorization": "Basic !!!"}, 401)],
)
def test_missing_or_wrong_key(client: Client, svc: MemoryService, headers: dict[str, str],
                              status: int) -> None:
    before = head(svc)
    response = client.post(f"{API}/memories", headers=headers, json={"text": "sneaky"})
    assert response.status_code == status
    assert response.json["error"]["message"]
    assert head(svc) == before


def test_reader_key_cannot_write(client: Client, keys: Keys, svc: MemoryService) -> None:
    before = head(svc)
    response = client.post(f"{API}/memories", headers=keys.auth("reader"), json={"text": "x"})
    assert response.status_code == 403 and "writer" in response.json["error"]["message"]
    other = client.post(f"{API}/memories", headers=keys.auth("other"), json={"text": "x"})
    assert other.status_code == 403
    assert head(svc) == before


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b"\xff\xfe", "UTF-8"),
        (b'{"text": 42}', "must be a string"),
        (b'{"text": "ok", "tags": "not-a-list"}', "list of strings"),
        (b'{"text": "ok", "tags": [1]}', "list of strings"),
        (b'{"text": "ok", "type": "opinion"}', "unknown type"),
        (b'{"text": "ok", "colour": "blue"}', "unknown field"),
        (b'{"text": ""}', "empty"),
        (b'{}', "required"),
        (b'{"text": "ok", "state": "archived"}', "active or pending"),
    ],
)
def test_malformed_bodies(client: Client, keys: Keys, svc: MemoryService, body: bytes,
                          needle: str) -> None:
    before = head(svc)
    response = client.post(f"{API}/memories", data=body, headers={**keys.auth("writer"),
                                                                   "Content-Type": "application/json"})
    assert response.status_code == 400, response.json
    assert needle in response.json["error"]["message"]
    assert head(svc) == before


def test_oversized_body_is_413(client: Client, keys: Keys, svc: MemoryService) -> None:
    before = head(svc)
    big = "x" * (svc.settings.max_request_bytes + 1)
    response = client.post(f"{API}/memories", headers=keys.auth("writer"), json={"text": big})
    assert response.status_code == 413 and "limit" in response.json["error"]["message"]
    assert head(svc) == before


def test_unknown_things_are_404(client: Client, keys: Keys, svc: MemoryService) -> None:
    key = KeyStoreFor(svc).admin_everywhere()
    auth = {"Authorization": f"Bearer {key}"}
    assert client.get("/api/v1/namespaces/nowhere/memories", headers=auth).status_code == 404
    assert client.get(f"{API}/memories/0123456789", headers=auth).status_code == 404
    assert client.post(f"{API}/commits/abcdef1234/revert", headers=auth).status_code == 404
    assert client.get("/api/v1/nothing-here", headers=auth).json["error"]["status"] == 404


def test_bad_query_values(client: Client, keys: Keys) -> None:
    auth = keys.auth("reader")
    for url in (f"{API}/recall?limit=zero", f"{API}/recall?limit=0", f"{API}/memories?offset=-1",
                f"{API}/memories?state=sleeping", f"{API}/memories/not-an-id", f"{API}/reviews?status=x"):
        response = client.get(url, headers=auth)
        assert response.status_code == 400, url
        assert response.json["error"]["message"]


def test_wrong_method_is_json_405(client: Client, keys: Keys) -> None:
    response = client.put(f"{API}/memories", headers=keys.auth("writer"))
    assert response.status_code == 405 and response.json["error"]["status"] == 405
    assert "POST" in response.headers["Allow"]


class KeyStoreFor:
    def __init__(self, svc: MemoryService) -> None:
        from gitmem.repo import KeyStore

        self.store = KeyStore(svc.settings.home)

    def admin_everywhere(self) -> str:
        return self.store.create("*", "admin", name="root")[0]


def test_deeply_nested_json_is_400(client: Client, keys: Keys) -> None:
    body = b"[" * 100_000 + b"]" * 100_000
    response = client.post(f"{API}/memories", data=body, headers=keys.auth("writer"))
    assert response.status_code == 400 and "deeply" in response.json["error"]["message"]


HUGE_NUMBER = b'{"text": "x", "n": ' + b"9" * 4301 + b"}"


def test_a_number_too_long_for_python_is_400(client: Client, keys: Keys, svc: MemoryService) -> None:
    before = head(svc)
    response = client.post(f"{API}/memories", data=HUGE_NUMBER,
                           headers={**keys.auth("writer"), "Content-Type": "application/json"})
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.json["error"]["type"] == "InvalidInput"
    assert "digits" in response.json["error"]["message"]
    assert head(svc) == before


def test_a_number_too_long_for_python_is_400_over_http(live_server: str, keys: Keys, svc: MemoryService) -> None:
    before = head(svc)
    response = httpx.post(f"{live_server}{API}/memories", content=HUGE_NUMBER,
                          headers={**keys.auth("writer"), "Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["status"] == 400
    assert head(svc) == before


def test_revert_with_a_tree_entry_git_refuses_is_422(client: Client, keys: Keys, svc: MemoryService) -> None:
    svc.remember("default", "Entries named .. are refused by git")
    push_refused_entry(svc.settings.repos_dir / "default.git")
    target = str(svc.remember("default", "A later memory").commit)
    response = client.post(f"{API}/commits/{target}/revert", headers=keys.auth("reviewer"))
    assert response.status_code == 422
    assert response.json["error"]["type"] == "MalformedConcept"
    assert "../escape.md" in response.json["error"]["message"]
    assert head(svc) == target
    status = client.get(API, headers=keys.auth("reader")).json
    assert list(status["malformed"]) == ["../escape.md"]


@pytest.mark.parametrize("field", ["tags", "paths"])
def test_ten_thousand_tags_or_paths_are_refused(client: Client, keys: Keys, svc: MemoryService,
                                                remember: Callable[..., str], field: str) -> None:
    mid = remember("A memory with a few tags", tags=["a"])
    before = head(svc)
    many = [f"item-{i}" for i in range(10_000)]
    added = client.post(f"{API}/memories", headers=keys.auth("writer"), json={"text": "x", field: many})
    amended = client.patch(f"{API}/memories/{mid}", headers=keys.auth("reviewer"), json={field: many})
    for response in (added, amended):
        assert response.status_code == 400
        assert f"more than 50 {field}" in response.json["error"]["message"]
    assert head(svc) == before
    fifty = client.post(f"{API}/memories", headers=keys.auth("writer"), json={"text": "x", field: many[:50]})
    assert fifty.status_code == 201 and len(fifty.json["memory"][field]) == 50


def test_a_namespace_named_x_dot_git_is_refused(client: Client, svc: MemoryService) -> None:
    key = KeyStoreFor(svc).admin_everywhere()
    response = client.post("/api/v1/namespaces", headers={"Authorization": f"Bearer {key}"}, json={"name": "x.git"})
    assert response.status_code == 400
    assert "must not end in '.git'" in response.json["error"]["message"]
    assert svc.namespaces() == ["default"]


TECH = {"text": "Package manager for the web app", "type": "techchoice", "active": "pnpm", "reason": "disk space",
        "options": [{"name": "pnpm", "pros": ["fast installs"], "cons": ["fewer users"]},
                    {"name": "npm", "pros": ["ships with node"], "cons": ["slow"]}]}


def test_a_techchoice_over_http_remember_choose_recall(live_server: str, keys: Keys, svc: MemoryService,
                                                       fsck: Callable[[str], None]) -> None:
    url = f"{live_server}{API}"
    made = httpx.post(f"{url}/memories", headers=keys.auth("writer"), json=TECH)
    assert made.status_code == 201, made.text
    memory = made.json()["memory"]
    assert (memory["active"], [o["name"] for o in memory["options"]]) == ("pnpm", ["pnpm", "npm"])
    choose = f"{url}/memories/{memory['id']}/choose"
    refused = httpx.post(choose, headers=keys.auth("reader"), json={"option": "npm", "reason": "CI"})
    assert refused.status_code == 403
    before = head(svc)
    for bad in ({"option": "npm"}, {"option": "yarn", "reason": "x"}, {"option": "npm", "reason": "x", "pros": "a"},
                {"option": "npm", "reason": "x", "why": "y"}, {"option": 3, "reason": "x"}):
        response = httpx.post(choose, headers=keys.auth("writer"), json=bad)
        assert response.status_code == 400, (bad, response.text)
    assert head(svc) == before
    chosen = httpx.post(choose, headers=keys.auth("writer"), json={"option": "npm", "reason": "CI has only npm"})
    assert chosen.status_code == 200 and chosen.json()["outcome"] == "chosen"
    assert chosen.json()["memory"]["choices"][-1] == {
        "option": "npm", "at": chosen.json()["memory"]["updated"], "by": "writer", "reason": "CI has only npm"}
    hits = httpx.get(f"{url}/recall", params={"q": "package manager"}, headers=keys.auth("reader")).json()["items"]
    assert hits[0]["memory"]["active"] == "npm"
    assert "| npm (active) | ships with node | slow |" in hits[0]["options_table"]
    fsck("default")


@pytest.mark.parametrize("options", [
    "pnpm", [{"name": "pnpm", "pros": ["a"], "cons": ["b"]}], [{"name": "pnpm"}, {"name": "npm"}], [1, 2],
    [{"name": "pnpm", "pros": ["a"], "cons": [7]}, {"name": "npm", "pros": ["a"], "cons": ["b"]}],
])
def test_bad_techchoice_options_are_400(client: Client, keys: Keys, svc: MemoryService, options: object) -> None:
    before = head(svc)
    response = client.post(f"{API}/memories", headers=keys.auth("writer"), json={**TECH, "options": options})
    assert response.status_code == 400 and response.json["error"]["message"]
    assert head(svc) == before


def test_a_role_too_weak_is_named_with_its_article(client: Client, keys: Keys) -> None:
    refused = client.post("/api/v1/namespaces", headers=keys.auth("writer"), json={"name": "ops"})
    assert refused.status_code == 403
    assert "it needs an admin key for that namespace" in refused.json["error"]["message"]
