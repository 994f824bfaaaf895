"""``/mcp``: the MCP front end's streamable HTTP endpoint, mounted into the web app's WSGI stack.

Requests for ``/mcp`` go to :class:`gitmem.mcp.http.WsgiBridge`, everything else to Flask. The
MCP SDK is imported on the first ``/mcp`` request, so a process that never serves one never loads it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..service import MemoryService

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from ..mcp.http import WsgiBridge

PATHS = ("/mcp", "/mcp/")


class McpMount:
    """A WSGI app that sends ``/mcp`` to the MCP endpoint and everything else to ``app``."""

    def __init__(self, service: MemoryService, app: WSGIApplication) -> None:
        self.service = service
        self.app = app
        self._lock = threading.Lock()
        self._bridge: WsgiBridge | None = None

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        """Dispatch on the path."""
        if environ.get("PATH_INFO") in PATHS:
            return self.bridge()(environ, start_response)
        return self.app(environ, start_response)

    def bridge(self) -> WsgiBridge:
        """The MCP endpoint, made on first use."""
        with self._lock:
            if self._bridge is None:
                from ..mcp.http import WsgiBridge

                self._bridge = WsgiBridge(self.service)
            return self._bridge

    def close(self) -> None:
        """Stop the MCP endpoint's event loop, if it ever started."""
        with self._lock:
            if self._bridge is not None:
                self._bridge.close()
