"""``gitmem mcp`` for real: a subprocess on the local home, driven over stdio by the SDK's own client."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from gitmem.service import MemoryService
from gitmem.settings import Settings

from .conftest import clean_env, data, error
from .test_server import INJECTION


def stdio(home: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "gitmem", "mcp", *args], env=clean_env(home))


def test_gitmem_mcp_serves_every_tool_over_stdio(settings: Settings, fsck: Callable[[str], None],
                                                 tmp_path: Path) -> None:
    errlog = (tmp_path / "stderr.log").open("w+")

    async def go() -> dict[str, Any]:
        server = stdio_client(stdio(settings.home, "--actor", "dana", "--namespace", "team"), errlog=errlog)
        async with Client(server) as client:
            made = data(await client.call_tool("remember", {"text": INJECTION, "type": "lesson", "paths": ["ci/"]}))
            memory_id = made["memory"]["id"]
            return {
                "made": made,
                "recall": data(await client.call_tool("recall", {"query": "maintenance mode", "files": ["ci/x.yml"]})),
                "context": data(await client.call_tool("context", {"files": ["ci/deploy.yml"]})),
                "discuss": data(await client.call_tool("feedback", {"memory_id": memory_id, "action": "discuss",
                                                                    "text": "This is an attack, not a lesson"})),
                "amend": data(await client.call_tool("feedback", {"memory_id": memory_id, "action": "amend",
                                                                  "text": "Never pipe a download into a shell"})),
                "reviews": data(await client.call_tool("reviews", {})),
                "review": data(await client.call_tool("review", {"number": 1})),
                "history": data(await client.call_tool("history", {"memory_id": memory_id})),
                "file": (await client.read_resource(f"gitmem://team/{memory_id}")).contents[0].text,
                "bad": error(await client.call_tool("recall", {"query": "x", "limit": "lots"})),
                "forget": data(await client.call_tool("forget", {"memory_id": memory_id, "reason": "an attack"})),
            }

    try:
        got = anyio.run(go)
        errlog.seek(0)
        stderr = errlog.read()
    finally:
        errlog.close()
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    memory = got["made"]["memory"]
    assert got["made"]["outcome"] == "added"
    assert (memory["text"], memory["author"], memory["source"]) == (INJECTION, "dana", "agent")
    [hit] = got["recall"]["items"]
    assert hit["memory"]["text"] == INJECTION and hit["path_match"] is True
    assert got["recall"]["namespace"] == "team"  # --namespace: where calls that name none go
    assert f"`{memory['id']}`" in got["context"]["context"]
    assert got["discuss"]["action"] == "discuss"
    assert got["amend"]["review"] == 1  # dana is no maintainer: the amendment waits for a reviewer
    assert [r["number"] for r in got["reviews"]["items"]] == [1]
    assert got["review"]["commits"][0]["memory_ids"] == [memory["id"]]
    assert [c["action"] for c in got["history"]["items"]] == ["discuss", "remember"]
    assert got["file"].endswith(INJECTION + "\n")
    assert "'limit': Input should be a valid integer" in got["bad"]
    assert got["forget"]["outcome"] == "archived"
    service = MemoryService(settings)
    try:
        assert service.show("team", memory["id"]).state == "archived"
        assert service.namespaces() == ["team"]  # made by the first remember, as `gitmem remember` does
    finally:
        service.close()
    fsck("team")


def test_gitmem_mcp_with_a_bad_setting_says_so_in_one_line(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home") | {"GITMEM_MAX_TEXT_CHARS": "0"}
    done = subprocess.run([sys.executable, "-m", "gitmem", "mcp"], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 2
    assert done.stderr == "error: GITMEM_MAX_TEXT_CHARS must be at least 1, not 0\n"
    assert done.stdout == ""


def test_the_first_recall_by_meaning_waits_for_the_encoder_loading_beside_initialize(settings: Settings,
                                                                                      tmp_path: Path) -> None:
    service = MemoryService(settings)
    service.init("default")
    service.remember("default", "Store all timestamps in UTC.")  # a person's: no vector yet, no model prepared
    service.remember("default", "PPT body text is 18pt.")
    service.close()
    errlog = (tmp_path / "stderr.log").open("w+")

    async def go() -> dict[str, Any]:
        async with Client(stdio_client(stdio(settings.home), errlog=errlog)) as client:
            return data(await client.call_tool("recall", {"query": "时间用什么时区存储？"}))

    try:
        got = anyio.run(go)
        errlog.seek(0)
        stderr = errlog.read()
    finally:
        errlog.close()
    assert "Traceback" not in stderr, stderr
    # No word of the query is in the memory: only its vector finds it, so the recall had the model.
    assert got["items"][0]["memory"]["text"] == "Store all timestamps in UTC."
    assert list((settings.state_dir / "models").glob("*/manifest.json"))


def test_gitmem_mcp_loads_the_encoder_unasked_once_it_has_answered_initialize(settings: Settings,
                                                                               tmp_path: Path) -> None:
    errlog = (tmp_path / "stderr.log").open("w+")
    models = settings.state_dir / "models"

    async def go() -> bool:
        async with Client(stdio_client(stdio(settings.home), errlog=errlog)):
            # No call made: the server prepares the encoder by itself (from the wheel: seconds).
            with anyio.move_on_after(120):
                while not list(models.glob("*/manifest.json")):
                    await anyio.sleep(0.1)
            return bool(list(models.glob("*/manifest.json")))

    try:
        prepared = anyio.run(go)
    finally:
        errlog.close()
    assert prepared
