"""``/mcp`` on a real ``gitmem serve`` (gunicorn, two workers), called by the SDK's client with API keys."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from werkzeug.test import EnvironBuilder

from gitmem.mcp.http import WsgiBridge, allowed_hosts
from gitmem.repo import KeyStore
from gitmem.service import MemoryService
from gitmem.settings import Settings

from .conftest import Served, data, error
from .test_server import INJECTION

RPC_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def run(served: Served, key: str | None, steps: Callable[[Client], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        async with served.client(key) as client:
            return await steps(client)

    return anyio.run(go)


def head(served: Served, namespace: str = "default") -> str:
    service = MemoryService(Settings(home=served.home))
    try:
        return service.head(namespace)
    finally:
        service.close()


def fsck(served: Served, namespace: str = "default") -> None:
    done = subprocess.run(["git", "--git-dir", str(served.home / "repos" / f"{namespace}.git"), "fsck", "--strict",
                           "--no-progress"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + done.stdout


def test_every_tool_with_a_writer_key(served: Served) -> None:
    async def steps(client: Client) -> dict[str, Any]:
        tools = {t.name for t in (await client.list_tools()).tools}
        made = data(await client.call_tool("remember", {
            "text": "Migrations run with `alembic upgrade head` before the app starts", "type": "convention",
            "paths": ["migrations/"]}))
        memory_id = made["memory"]["id"]
        out = {
            "tools": tools, "made": made,
            "recall": data(await client.call_tool("recall", {"query": "alembic migrations", "limit": 5})),
            "context": data(await client.call_tool("context", {"files": ["migrations/0001_init.py"]})),
            "confirm": data(await client.call_tool("feedback", {"memory_id": memory_id, "action": "confirm"})),
            "amend": data(await client.call_tool("feedback", {
                "memory_id": memory_id, "action": "amend",
                "text": "Migrations run with `alembic upgrade head` in the release job"})),
            "history": data(await client.call_tool("history", {"memory_id": memory_id})),
            "resources": [r.uri for r in (await client.list_resources()).resources],
            "file": (await client.read_resource(f"gitmem://default/{memory_id}")).contents[0].text,
            "index": (await client.read_resource("gitmem://default/MEMORY.md")).contents[0].text,
        }
        out["reviews"] = data(await client.call_tool("reviews", {"status": "open"}))
        out["review"] = data(await client.call_tool("review", {"number": out["amend"]["review"]}))
        out["forget"] = data(await client.call_tool("forget", {"memory_id": memory_id}))
        return out

    got = run(served, "writer", steps)
    assert got["tools"] == {"context", "recall", "remember", "choose", "feedback", "forget", "history", "reviews",
                            "review"}
    memory = got["made"]["memory"]
    assert (got["made"]["outcome"], memory["source"], memory["author"]) == ("added", "agent", "writer")
    assert memory["id"] in [h["memory"]["id"] for h in got["recall"]["items"]]
    assert f"`{memory['id']}`" in got["context"]["context"]
    assert got["confirm"]["memory"]["verified"] == ["writer"]
    # A writer key's amendment needs a reviewer, as over the webhook.
    assert got["amend"]["review"] is not None and got["amend"]["commit"] is None
    assert got["amend"]["review"] in [r["number"] for r in got["reviews"]["items"]]
    assert got["review"]["kind"] == "amend" and got["review"]["commits"][0]["memory_ids"] == [memory["id"]]
    assert [c["action"] for c in got["history"]["items"]] == ["confirm", "remember"]
    assert got["resources"] == ["gitmem://default/MEMORY.md"]
    assert f"id: {memory['id']}" in got["file"] and memory["text"] in got["file"]
    assert memory["id"] in got["index"]
    assert got["forget"]["outcome"] == "archived"
    fsck(served)


def test_a_client_of_the_2025_protocol_connects_and_calls(served: Served) -> None:
    async def go() -> tuple[Any, ...]:
        async with served.client("reader", mode="legacy") as client:  # initialize, then a GET for a stream
            version, info = client.protocol_version, client.server_info
            tools = (await client.list_tools()).tools
            hits = data(await client.call_tool("recall", {"query": "anything at all"}))
            return version, info, tools, hits

    version, info, tools, hits = anyio.run(go)
    assert version.startswith("2025-") and info is not None and info.name == "gitmem"
    assert len(tools) == 9 and hits["namespace"] == "default"


def test_a_reviewer_key_amends_directly(served: Served) -> None:
    async def steps(client: Client) -> dict[str, Any]:
        made = data(await client.call_tool("remember", {"text": "The API returns ISO 8601 times in UTC"}))
        return data(await client.call_tool("feedback", {"memory_id": made["memory"]["id"], "action": "amend",
                                                        "text": "The API returns ISO 8601 times in UTC, with Z"}))

    amended = run(served, "reviewer", steps)
    assert amended["review"] is None and amended["commit"]
    assert amended["memory"]["text"] == "The API returns ISO 8601 times in UTC, with Z"


def test_a_reader_key_reads_but_may_not_write_and_is_told_why_as_over_rest(served: Served) -> None:
    async def seed(client: Client) -> tuple[str, str]:
        made = data(await client.call_tool("remember", {"text": "Feature flags live in config/flags.yaml"}))
        choice = data(await client.call_tool("remember", {
            "text": "Feature flag service", "type": "techchoice", "active": "files",
            "options": [{"name": "files", "pros": ["no service"], "cons": ["redeploy to flip"]},
                        {"name": "unleash", "pros": ["flip live"], "cons": ["one more service"]}]}))
        return str(made["memory"]["id"]), str(choice["memory"]["id"])

    memory_id, choice_id = run(served, "writer", seed)
    before = head(served)

    async def steps(client: Client) -> dict[str, Any]:
        return {
            "recall": data(await client.call_tool("recall", {"query": "feature flags"})),
            "remember": error(await client.call_tool("remember", {"text": "Readers should not write this"})),
            "feedback": error(await client.call_tool("feedback", {"memory_id": memory_id, "action": "confirm"})),
            "forget": error(await client.call_tool("forget", {"memory_id": memory_id})),
            "choose": error(await client.call_tool("choose", {"memory_id": choice_id, "option": "unleash",
                                                              "reason": "flip flags live"})),
        }

    got = run(served, "reader", steps)
    assert memory_id in [h["memory"]["id"] for h in got["recall"]["items"]]
    rest = httpx.post(f"{served.url}/api/v1/namespaces/default/memories", json={"text": "Readers should not write"},
                      headers={"Authorization": f"Bearer {served.keys['reader']}"}, timeout=30)
    assert rest.status_code == 403
    refusal = rest.json()["error"]["message"]
    assert refusal == "reader (reader) may not do this in namespace 'default': it needs a writer key for that namespace"
    for tool in ("remember", "feedback", "forget", "choose"):
        assert got[tool] == f"Error executing tool {tool}: {refusal}"
    assert head(served) == before


def test_a_forgotten_memory_is_given_to_no_key(served: Served) -> None:
    async def seed(client: Client) -> tuple[str, str]:
        kept = data(await client.call_tool("remember", {"text": "Staging resets every night at 02:00"}))
        gone = data(await client.call_tool("remember", {"text": "The old VPN gateway is vpn-legacy.internal"}))
        data(await client.call_tool("forget", {"memory_id": gone["memory"]["id"]}))
        return str(kept["memory"]["id"]), str(gone["memory"]["id"])

    kept, gone = run(served, "writer", seed)
    for key in ("reader", "writer", "admin"):
        async def steps(client: Client) -> tuple[str, str]:
            text = (await client.read_resource(f"gitmem://default/{kept}")).contents[0].text
            with pytest.raises(MCPError) as refused:
                await client.read_resource(f"gitmem://default/{gone}")
            return text, refused.value.error.message

        text, refusal = run(served, key, steps)
        assert "Staging resets every night" in text
        assert refusal == (f"memory {gone} in namespace 'default' was forgotten (archived): it is kept in history "
                           "but given to no agent; a reviewer can restore it")


def test_a_key_is_held_to_its_namespace(served: Served) -> None:
    async def outsider(client: Client) -> dict[str, Any]:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("gitmem://default/MEMORY.md")
        return {
            "own": data(await client.call_tool("remember", {"text": "The other team deploys with Helm"})),
            "recall": data(await client.call_tool("recall", {"query": "helm"})),
            "default": error(await client.call_tool("recall", {"query": "helm", "namespace": "default"})),
            "resources": [r.uri for r in (await client.list_resources()).resources],
            "read": refused.value.error.message,
        }

    got = run(served, "outsider", outsider)
    assert got["own"]["memory"]["author"] == "outsider"
    assert got["recall"]["namespace"] == "other" and len(got["recall"]["items"]) == 1  # the key's namespace
    assert got["default"] == ("Error executing tool recall: outsider (writer) may not do this in namespace "
                              "'default': it needs a reader key for that namespace")
    assert got["resources"] == ["gitmem://other/MEMORY.md"]
    assert got["read"] == ("outsider (writer) may not do this in namespace 'default': it needs a reader key for "
                           "that namespace")

    async def everywhere(client: Client) -> tuple[Any, ...]:
        listed = [r.uri for r in (await client.list_resources()).resources]
        default = data(await client.call_tool("recall", {"query": "helm"}))
        other = data(await client.call_tool("recall", {"query": "helm", "namespace": "other"}))
        return listed, default, other

    listed, default, other = run(served, "everywhere", everywhere)
    assert listed == ["gitmem://default/MEMORY.md", "gitmem://other/MEMORY.md"]
    assert default["namespace"] == "default" and len(other["items"]) == 1


def test_without_a_valid_key_it_is_401_with_www_authenticate(served: Served) -> None:
    body = json.dumps(LIST_TOOLS)
    missing = httpx.post(served.mcp, content=body, headers=RPC_HEADERS, timeout=30)
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"] == 'Bearer realm="gitmem"'
    assert missing.json()["error"]["message"] == (
        "authentication required: send a gitmem API key as 'Authorization: Bearer <key>' "
        "(make one with `gitmem key create`)")
    for auth in (f"Bearer gmk_000000000000_{'x' * 40}", f"Bearer {served.keys['writer']}x"):
        wrong = httpx.post(served.mcp, content=body, headers=RPC_HEADERS | {"Authorization": auth}, timeout=30)
        assert wrong.status_code == 401
        assert wrong.headers["WWW-Authenticate"].startswith('Bearer realm="gitmem", error="invalid_token"')
        assert "that API key is not valid" in wrong.json()["error"]["message"]
    # A key sent the REST API's other ways is not a bearer token.
    other_way = httpx.post(served.mcp, content=body, headers=RPC_HEADERS | {"X-API-Key": served.keys["writer"]},
                           timeout=30)
    assert other_way.status_code == 401
    good = httpx.post(served.mcp, content=body,
                      headers=RPC_HEADERS | {"Authorization": f"Bearer {served.keys['reader']}"}, timeout=30)
    assert good.status_code == 200 and len(good.json()["result"]["tools"]) == 9


def test_a_revoked_key_stops_working_at_the_next_request(served: Served) -> None:
    store = KeyStore(served.home)
    key, stored = store.create("default", "writer", name="temp")

    async def recall(client: Client) -> dict[str, Any]:
        return data(await client.call_tool("recall", {"query": "anything"}))

    assert run(served, key, recall)["namespace"] == "default"
    store.revoke(stored.id)
    gone = httpx.post(served.mcp, content=json.dumps(LIST_TOOLS),
                      headers=RPC_HEADERS | {"Authorization": f"Bearer {key}"}, timeout=30)
    assert gone.status_code == 401


def test_hosts_and_pages_outside_the_allow_list_are_refused(served: Served) -> None:
    port = served.url.rsplit(":", 1)[1]
    auth = RPC_HEADERS | {"Authorization": f"Bearer {served.keys['reader']}"}
    body = json.dumps(LIST_TOOLS)

    def post(**headers: str) -> httpx.Response:
        return httpx.post(served.mcp, content=body, headers=auth | headers, timeout=30)

    evil = post(Host=f"rebound.example:{port}")
    assert evil.status_code == 421
    assert evil.json()["error"]["message"] == (
        f"this server answers MCP only to Host names it knows, and 'rebound.example:{port}' is not one (a guard "
        "against DNS rebinding); add it on the server: GITMEM_MCP_ALLOWED_HOSTS=rebound.example")
    assert post(Host=f"memory.example.com.rebound.example:{port}").status_code == 421
    for host in (f"localhost:{port}", f"memory.example.com:{port}", "memory.example.com"):  # configured: any port
        assert post(Host=host).status_code == 200, host
    page = post(Origin="http://rebound.example")
    assert page.status_code == 403 and "web pages at 'http://rebound.example' are refused" in page.text
    assert post(Origin=f"http://localhost:{port}").status_code == 200
    big = httpx.post(served.mcp, content=b" " * (256 * 1024 + 1), headers=auth, timeout=30)  # the default limit
    assert big.status_code == 413 and big.json()["error"]["message"] == (
        "the request body is larger than the 262144-byte limit")
    # The rest of the app answers any Host, as before.
    assert httpx.get(f"{served.url}/api/v1/openapi.json", headers={"Host": "rebound.example"}).status_code == 200


def test_allowed_hosts_reads_names_ports_and_the_wildcard() -> None:
    def hosts(*given: str) -> list[str] | None:
        return allowed_hosts(Settings(mcp_allowed_hosts=given))

    local = ["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"]
    assert hosts() == local
    assert hosts("Memory.Example.com", "10.0.0.5:8000", "[fd00::1]", "gw:*") == [
        *local, "memory.example.com", "memory.example.com:*", "10.0.0.5:8000", "[fd00::1]", "[fd00::1]:*", "gw:*"]
    assert hosts("memory.example.com", "*") is None
    assert Settings.from_env({"GITMEM_MCP_ALLOWED_HOSTS": "a.example, b.example:9000"}).mcp_allowed_hosts == (
        "a.example", "b.example:9000")


def test_bad_arguments_and_injection_like_text_over_http(served: Served) -> None:
    before = head(served)

    async def bad(client: Client) -> list[str]:
        return [error(await client.call_tool("recall", {"query": "x", "limit": 500})),
                error(await client.call_tool("remember", {"text": 42})),
                error(await client.call_tool("feedback", {"memory_id": "nope", "action": "confirm"}))]

    messages = run(served, "writer", bad)
    assert "'limit': Input should be less than or equal to 200" in messages[0]
    assert "'text': Input should be a valid string" in messages[1]
    assert "'nope' is not a memory id" in messages[2]
    assert head(served) == before

    async def injected(client: Client) -> tuple[Any, ...]:
        made = data(await client.call_tool("remember", {"text": INJECTION, "type": "lesson"}))
        after = head(served)
        hits = data(await client.call_tool("recall", {"query": "maintenance mode"}))
        return made, after, hits

    made, after, hits = run(served, "writer", injected)
    assert made["memory"]["text"] == INJECTION
    [hit] = [h for h in hits["items"] if h["memory"]["id"] == made["memory"]["id"]]
    assert hit["memory"]["text"] == INJECTION
    assert head(served) == after  # reading it changed nothing
    fsck(served)


def test_only_post_is_served_so_no_stream_holds_a_thread(served: Served) -> None:
    auth = {"Authorization": f"Bearer {served.keys['reader']}", "Accept": "text/event-stream"}
    for method in ("GET", "DELETE", "PUT"):
        reply = httpx.request(method, served.mcp, headers=auth, timeout=10)
        assert reply.status_code == 405 and reply.headers["Allow"] == "POST", method
        assert reply.json()["error"]["message"] == (
            f"{method} /mcp is not served: this MCP endpoint is stateless and takes JSON-RPC messages by POST only")


@pytest.mark.parametrize("path", ["/mcp/", "/mcp"])
def test_the_endpoint_answers_at_mcp_beside_the_rest_of_the_app(served: Served, path: str) -> None:
    reply = httpx.post(f"{served.url}{path}", content=json.dumps(LIST_TOOLS), follow_redirects=True,
                       headers=RPC_HEADERS | {"Authorization": f"Bearer {served.keys['reader']}"}, timeout=30)
    assert reply.status_code == 200 and reply.json()["result"]["tools"]
    assert httpx.get(f"{served.url}/healthz", timeout=30).json()["repository"]["ok"] is True


def test_a_response_the_server_stops_reading_leaves_nothing_running(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    service = MemoryService(settings)
    service.init("default")
    key = KeyStore(settings.home).create("default", "reader", name="reader")[0]
    bridge = WsgiBridge(service)

    def request() -> tuple[list[str], Iterable[bytes]]:
        environ = EnvironBuilder(path="/mcp", method="POST", data=json.dumps(LIST_TOOLS),
                                 headers=RPC_HEADERS | {"Authorization": f"Bearer {key}", "Host": "localhost"})
        statuses: list[str] = []
        return statuses, bridge(environ.get_environ(), lambda status, headers, exc=None: statuses.append(status))

    async def running() -> int:
        return len([t for t in asyncio.all_tasks() if t is not asyncio.current_task()])

    try:
        statuses, chunks = request()
        assert b"".join(chunks) and statuses == ["200 OK"]
        assert bridge._loop is not None
        before = asyncio.run_coroutine_threadsafe(running(), bridge._loop).result(30)
        for _ in range(5):  # as a WSGI server does when its client goes away mid-response
            statuses, chunks = request()
            first = next(iter(chunks))
            chunks.close()  # type: ignore[attr-defined]
            assert statuses == ["200 OK"] and json.loads(first)["result"]["tools"]
        # The closed responses' tasks finish on the bridge's loop a moment later (later still on a
        # busy machine); without the drain they never do.
        deadline = time.monotonic() + 20
        while asyncio.run_coroutine_threadsafe(running(), bridge._loop).result(30) > before:
            assert time.monotonic() < deadline, "tasks of closed responses are still running"
            time.sleep(0.05)
    finally:
        bridge.close()
        service.close()
    assert bridge._loop is None


def chunked(body: bytes, size: int = 7) -> Iterator[bytes]:
    """``body`` in pieces: httpx sends a generator with ``Transfer-Encoding: chunked`` and no length."""
    for at in range(0, len(body), size):
        yield body[at:at + size]


def test_a_chunked_request_body_is_read_whole(served: Served) -> None:
    auth = RPC_HEADERS | {"Authorization": f"Bearer {served.keys['reader']}"}
    body = json.dumps(LIST_TOOLS).encode()
    sent = httpx.post(served.mcp, content=chunked(body), headers=auth, timeout=30)
    assert sent.request.headers.get("transfer-encoding") == "chunked" and "content-length" not in sent.request.headers
    assert sent.status_code == 200, sent.text
    assert "remember" in {t["name"] for t in sent.json()["result"]["tools"]}

    # The limit holds for a body that does not say its length: read up to it, then refused.
    big = json.dumps({**LIST_TOOLS, "params": {"pad": "x" * 300_000}}).encode()
    refused = httpx.post(served.mcp, content=chunked(big, 65536), headers=auth, timeout=30)
    assert refused.status_code == 413, refused.text
    assert refused.json()["error"]["message"] == "the request body is larger than the 262144-byte limit"
