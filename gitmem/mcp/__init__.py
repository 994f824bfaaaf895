"""The MCP front end: gitmem's service as tools and resources for agents (Model Context Protocol).

::

    server.py   the tools and resources, on the official SDK's MCPServer
    access.py   who is calling and what they may do: the local user (stdio) or an API key (HTTP)
    http.py     streamable HTTP at /mcp beside the web app: API keys as bearer tokens, the host allow-list

``gitmem mcp`` serves it over stdio on the local ``GITMEM_HOME``; ``gitmem serve`` (any process
running the web app) answers it at ``/mcp``.
"""

from __future__ import annotations

from .access import Access, Caller, LocalAccess
from .server import build_server

__all__ = ["Access", "Caller", "LocalAccess", "build_server"]
