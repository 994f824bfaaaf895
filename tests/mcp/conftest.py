"""Fixtures for the MCP front end: the SDK's own client, in process, over stdio and over HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from gitmem.repo import KeyStore
from gitmem.service import MemoryService
from gitmem.settings import Settings

STARTUP_LIMIT = 90.0
ALSO_ALLOWED = "memory.example.com"  # GITMEM_MCP_ALLOWED_HOSTS of the served fixture


def data(result: CallToolResult) -> dict[str, Any]:
    """A successful tool result's JSON; its one text block is the same JSON (the memory text is a value)."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    [block] = result.content
    assert block.type == "text" and json.loads(block.text) == result.structured_content
    return result.structured_content


def error(result: CallToolResult) -> str:
    """A tool error's message."""
    assert result.is_error, result.structured_content
    [block] = result.content
    assert block.type == "text"
    return block.text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITMEM_", "SLACK_"))}
    env["GITMEM_HOME"] = str(home)
    return env


@dataclass(frozen=True)
class Served:
    """A real ``gitmem serve``: its URL, its home and a key per role on ``default`` (and others)."""

    url: str
    home: Path
    keys: dict[str, str]

    @property
    def mcp(self) -> str:
        return f"{self.url}/mcp"

    @asynccontextmanager
    async def client(self, key: str | None = None, mode: str = "auto") -> AsyncIterator[Client]:
        """The SDK's client over streamable HTTP with ``key`` (a role name or a key) as the bearer token.

        ``mode="legacy"``: the initialize handshake of the 2025 protocol, as most agents speak it today.
        """
        sent = {} if key is None else {"Authorization": f"Bearer {self.keys.get(key, key)}"}
        async with httpx2.AsyncClient(headers=sent, timeout=60) as http:
            async with Client(streamable_http_client(self.mcp, http_client=http), mode=mode) as client:
                yield client


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``gitmem serve`` (two gunicorn workers, no background worker) over a home with two namespaces."""
    home = tmp_path_factory.mktemp("mcp-served") / "home"
    service = MemoryService(Settings(home=home))
    service.init("default")
    service.init("other")
    service.close()
    store = KeyStore(home)
    keys = {role: store.create("default", role, name=role)[0] for role in ("reader", "writer", "reviewer", "admin")}
    keys["outsider"] = store.create("other", "writer", name="outsider")[0]
    keys["everywhere"] = store.create("*", "reader", name="everywhere")[0]
    port = free_port()
    log = home.parent / "serve.log"
    env = clean_env(home) | {"GITMEM_MCP_ALLOWED_HOSTS": ALSO_ALLOWED}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gitmem", "serve", "--no-worker", "--port", str(port), "--workers", "2",
             "--threads", "4"], env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_LIMIT
        while True:
            try:
                if httpx.get(f"{url}/api/v1/openapi.json", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.3)
        yield Served(url, home, keys)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(timeout=60) == 0, log.read_text(errors="replace")[-3000:]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
