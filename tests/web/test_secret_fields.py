"""A secret is refused in every field that reaches git, through every front end: one test per field.

Text and titles were always scanned; these are the structural fields beside them (tags, paths,
authors, a tech choice's pros and cons, ingestion's ids), which land in frontmatter, the index,
commit subjects and trailers just as surely. Each case sends a GitHub token in one field, with
everything else valid, and checks the refusal names the field and the kind and that nothing was
written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from mcp import Client

from gitmem.mcp import LocalAccess, build_server
from gitmem.service import MemoryService

from ..conftest import Run
from ..mcp.conftest import error
from .conftest import Client as Http
from .conftest import Keys

TOKEN = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB"
NS = "/api/v1/namespaces/default"
OPTIONS = [{"name": "pnpm", "pros": ["fast installs"], "cons": ["fewer users"]},
           {"name": "npm", "pros": ["ships with node"], "cons": ["slow"]}]


def with_token(options: list[dict[str, Any]], field: str) -> list[dict[str, Any]]:
    """The two options with the token among the first one's ``field`` (pros or cons)."""
    first = {**options[0], field: [*options[0][field], f"token {TOKEN}"]}
    return [first, *options[1:]]


def techchoice(svc: MemoryService) -> str:
    """A techchoice in ``default``: its id."""
    made = svc.remember("default", "Package manager for the web app", type="techchoice", options=OPTIONS,
                        active="pnpm", reason="fast CI")
    assert made.memory is not None
    return made.memory.id


# --- the API ----------------------------------------------------------------------------------------

API: dict[str, tuple[str, str, Callable[[str], dict[str, Any]], str]] = {
    # field: (role, path under the namespace, body given the techchoice's id, the field's name in the refusal)
    "POST memories tags": ("writer", "/memories", lambda _: {"text": "We use pnpm", "tags": ["tooling", TOKEN]},
                           "tag"),
    "POST memories paths": ("writer", "/memories", lambda _: {"text": "We use pnpm", "paths": [f"ci/{TOKEN}.yml"]},
                            "path"),
    "POST memories author": ("admin", "/memories", lambda _: {"text": "We use pnpm", "author": TOKEN}, "author"),
    "POST memories option pros": ("writer", "/memories", lambda _: {
        "text": "Package manager", "type": "techchoice", "options": with_token(OPTIONS, "pros"), "active": "pnpm",
        "reason": "fast CI"}, "pro"),
    "POST memories option cons": ("writer", "/memories", lambda _: {
        "text": "Package manager", "type": "techchoice", "options": with_token(OPTIONS, "cons"), "active": "pnpm",
        "reason": "fast CI"}, "con"),
    "POST choose pros": ("writer", "/memories/{id}/choose", lambda _: {
        "option": "yarn", "reason": "berry", "pros": [TOKEN], "cons": ["another lockfile"]}, "pro"),
    "POST choose cons": ("writer", "/memories/{id}/choose", lambda _: {
        "option": "yarn", "reason": "berry", "pros": ["plug and play"], "cons": [TOKEN]}, "con"),
    "PATCH memories tags": ("reviewer", "/memories/{id}", lambda _: {"tags": [TOKEN]}, "tag"),
    "PATCH memories paths": ("reviewer", "/memories/{id}", lambda _: {"paths": [TOKEN]}, "path"),
    "ingest message author": ("writer", "/conversations/c1/messages", lambda _: {
        "messages": [{"id": "m1", "text": "we use pnpm", "author": f"ana {TOKEN}"}]}, "messages[0].author"),
    "ingest message id": ("writer", "/conversations/c1/messages", lambda _: {
        "messages": [{"id": TOKEN, "text": "we use pnpm"}]}, "messages[0].id"),
    "ingest conversation id": ("writer", f"/conversations/{TOKEN}/messages", lambda _: {
        "messages": [{"id": "m1", "text": "we use pnpm"}]}, "conversation id"),
}


@pytest.mark.parametrize("field", sorted(API))
def test_the_api_refuses_a_secret_in_each_field(field: str, client: Http, keys: Keys, svc: MemoryService) -> None:
    role, path, body, name = API[field]
    memory_id = techchoice(svc)
    before = svc.head("default")
    send = client.patch if field.startswith("PATCH") else client.post
    got = send(NS + path.format(id=memory_id), json=body(memory_id), headers=keys.auth(role))
    assert got.status_code == 400, got.json
    assert got.json["error"]["message"].startswith(f"{name} carries what looks like a GitHub Token")
    assert svc.head("default") == before
    assert svc.ingest_status("default").get("messages", 0) == 0


IMPORTS: dict[str, tuple[str, dict[str, str], str]] = {
    # field: (format, files, the field's name in the refusal)
    "okf tags": ("okf", {"fact/pnpm.md": f"---\ntype: Fact\ntags: [tooling, {TOKEN}]\n---\nWe use pnpm\n"}, "tag"),
    "basic-memory tags": ("basic-memory", {"pnpm.md": f"---\ntitle: pnpm\ntags:\n- {TOKEN}\n---\nWe use pnpm\n"},
                          "tag"),
    "pi-memory-spaced paths": ("pi-memory-spaced", {"memory-store.json": json.dumps({"memories": [
        {"id": "a", "content": "We use pnpm", "type": "convention", "paths": [TOKEN], "tags": []}]})}, "path"),
    "pi-memory-spaced tags": ("pi-memory-spaced", {"memory-store.json": json.dumps({"memories": [
        {"id": "a", "content": "We use pnpm", "type": "convention", "paths": [], "tags": [TOKEN]}]})}, "tag"),
    "mem0 user_id": ("mem0", {"memories.json": json.dumps([{"id": "a", "memory": "Uses pnpm", "user_id": TOKEN}])},
                     "author"),
    "mem0 categories": ("mem0", {"memories.json": json.dumps([{"id": "a", "memory": "Uses pnpm",
                                                                "categories": [TOKEN]}])}, "tag"),
    "mem0 metadata paths": ("mem0", {"memories.json": json.dumps([{"id": "a", "memory": "Uses pnpm",
                                                                    "metadata": {"paths": [TOKEN]}}])}, "path"),
}


@pytest.mark.parametrize("field", sorted(IMPORTS))
def test_an_import_refuses_the_item_with_a_secret_in_a_field(field: str, svc: MemoryService) -> None:
    fmt, files, name = IMPORTS[field]
    before = svc.head("default")
    report = svc.import_memories("default", fmt, files, actor="ana", origin="a test")
    [item] = report.items
    assert item.outcome == "refused"
    assert item.reason.startswith(f"{name} carries what looks like a GitHub Token"), item.reason
    assert svc.head("default") == before


# --- the CLI ----------------------------------------------------------------------------------------

CLI: dict[str, tuple[tuple[str, ...], str]] = {
    # field: (arguments, the field's name in the refusal)
    "remember --tag": (("remember", "We use pnpm", "--tag", TOKEN), "tag"),
    "remember --path": (("remember", "We use pnpm", "--path", TOKEN), "path"),
    "remember --author": (("remember", "We use pnpm", "--author", TOKEN), "author"),
    "remember --pro": (("remember", "Package manager", "--type", "techchoice", "--option", "pnpm", "--option", "npm",
                        "--pro", f"pnpm={TOKEN}", "--con", "pnpm=fewer users", "--pro", "npm=ships with node",
                        "--con", "npm=slow", "--active", "pnpm", "--reason", "fast CI"), "pro"),
    "remember --con": (("remember", "Package manager", "--type", "techchoice", "--option", "pnpm", "--option", "npm",
                        "--pro", "pnpm=fast", "--con", f"pnpm={TOKEN}", "--pro", "npm=ships with node",
                        "--con", "npm=slow", "--active", "pnpm", "--reason", "fast CI"), "con"),
    "choose --pro": (("choose", "{id}", "yarn", "--reason", "berry", "--pro", TOKEN, "--con", "lockfile"), "pro"),
    "choose --con": (("choose", "{id}", "yarn", "--reason", "berry", "--pro", "pnp", "--con", TOKEN), "con"),
    "choose --actor": (("choose", "{id}", "npm", "--reason", "the CI image", "--actor", TOKEN), "actor"),
}


@pytest.mark.parametrize("field", sorted(CLI))
def test_the_cli_refuses_a_secret_in_each_field(field: str, gitmem: Run, svc: MemoryService) -> None:
    args, name = CLI[field]
    memory_id = techchoice(svc)
    before = svc.head("default")
    done = gitmem(*(a.format(id=memory_id) for a in args), ok=False)
    assert done.returncode == 2, done.stderr
    assert f"{name} carries what looks like a GitHub Token" in done.stderr
    assert svc.head("default") == before


def test_the_cli_refuses_a_secret_in_an_ingested_sessions_author_and_conversation(gitmem: Run,
                                                                                   svc: MemoryService) -> None:
    # A Claude Code session's line: its files do not say who typed the prompts, --author does.
    line = json.dumps({"type": "user", "sessionId": "5f0c", "uuid": "u1",
                       "message": {"role": "user", "content": "we use pnpm"}}).encode()
    for flag, name in (("--conversation", "conversation id"), ("--author", "messages[0].author")):
        done = gitmem("ingest", "-", flag, TOKEN, input=line, ok=False)
        assert done.returncode == 2 and name in done.stderr and "GitHub Token" in done.stderr, done.stderr
    assert svc.ingest_status("default").get("messages", 0) == 0


# --- MCP ----------------------------------------------------------------------------------------------

MCP: dict[str, tuple[str, dict[str, Any], str]] = {
    # field: (tool, arguments, the field's name in the refusal)
    "remember tags": ("remember", {"text": "We use pnpm", "tags": [TOKEN]}, "tag"),
    "remember paths": ("remember", {"text": "We use pnpm", "paths": [TOKEN]}, "path"),
    "remember option pros": ("remember", {"text": "Package manager", "type": "techchoice",
                                          "options": with_token(OPTIONS, "pros"), "active": "pnpm"}, "pro"),
    "remember option cons": ("remember", {"text": "Package manager", "type": "techchoice",
                                          "options": with_token(OPTIONS, "cons"), "active": "pnpm"}, "con"),
    "choose pros": ("choose", {"memory_id": "{id}", "option": "yarn", "reason": "berry", "pros": [TOKEN],
                               "cons": ["lockfile"]}, "pro"),
    "choose cons": ("choose", {"memory_id": "{id}", "option": "yarn", "reason": "berry", "pros": ["pnp"],
                               "cons": [TOKEN]}, "con"),
}


@pytest.mark.parametrize("field", sorted(MCP))
def test_mcp_refuses_a_secret_in_each_field(field: str, svc: MemoryService) -> None:
    tool, arguments, name = MCP[field]
    memory_id = techchoice(svc)
    before = svc.head("default")
    arguments = {k: v.format(id=memory_id) if k == "memory_id" else v for k, v in arguments.items()}

    async def call() -> str:
        async with Client(build_server(svc, LocalAccess("dana", "default"))) as client:
            return error(await client.call_tool(tool, arguments))

    refusal = anyio.run(call)
    assert f"{name} carries what looks like a GitHub Token" in refusal
    assert svc.head("default") == before
