"""Who calls the MCP server and what they may do: the local user over stdio, or an API key over HTTP.

Every tool asks its :class:`Access` for the caller with the role it needs on the namespace it
touches, as the REST API's views ask :func:`gitmem.web.auth.require`: the same roles, the same
namespaces, the same refusal (:func:`gitmem.service.refusal`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from ..service import check_namespace


@dataclass(frozen=True)
class Caller:
    """Who is calling: recorded as the actor of every change they make."""

    name: str
    #: The key's role, which the feedback policy consults (reviewers and admins amend directly);
    #: None for the local user, whom the policy judges by name alone, as it does a signed webhook.
    role: str | None


class Access(Protocol):
    """What a caller may do, and the namespace their calls go to when they name none."""

    #: Whether remembering into a namespace that does not exist creates it (as the CLI does).
    creates_namespaces: bool

    def require(self, namespace: str, role: str) -> Caller:
        """The caller, if they hold at least ``role`` on ``namespace``; else :class:`PermissionDenied`."""
        ...

    def default_namespace(self) -> str:
        """The namespace of a call that names none."""
        ...

    def readable(self, namespaces: Iterable[str]) -> list[str]:
        """Those of ``namespaces`` the caller may read."""
        ...


class LocalAccess:
    """The user of this machine, over stdio: every namespace, every role, as the CLI allows them."""

    creates_namespaces = True

    def __init__(self, actor: str, namespace: str) -> None:
        """Act as ``actor``; calls that name no namespace go to ``namespace``."""
        self.caller = Caller(actor, None)
        self.namespace = check_namespace(namespace)

    def require(self, namespace: str, role: str) -> Caller:
        """The local user may do anything the CLI may."""
        return self.caller

    def default_namespace(self) -> str:
        """The namespace ``gitmem mcp`` was started with."""
        return self.namespace

    def readable(self, namespaces: Iterable[str]) -> list[str]:
        """Every namespace."""
        return list(namespaces)
