"""The MCP server over streamable HTTP at ``/mcp``, beside the web app, on the same host and port.

The SDK serves ASGI; gitmem's web app is WSGI under gunicorn's threads. Rather than move the whole
app (the API, git over HTTP, the pages) onto an ASGI server for one endpoint, ``/mcp`` is the one
ASGI app mounted into the WSGI app: :class:`WsgiBridge` runs it on an event loop of its own in each
process (made when the first ``/mcp`` request reaches that process, so after gunicorn forks) and
hands it requests with ``a2wsgi``. That loop also holds the SDK's lifespan
(``session_manager.run()``) for as long as the process lives.

The server is stateless (every POST carries its own calls, answered as JSON): any of gunicorn's
workers, on any host, can answer any request, with no session to lose between them. Other methods
get 405: there is no SSE stream to open, and an open one would hold a gunicorn thread.

In front of the SDK, as the REST API does: an API key as a bearer token (the SDK's
``TokenVerifier``, :class:`KeyVerifier`), a 401 with ``WWW-Authenticate`` without one, and each
tool checking the key's role and namespace (:class:`KeyAccess`). And the SDK's guard against DNS
rebinding: a ``Host`` (and a browser's ``Origin``) outside localhost and
``settings.mcp_allowed_hosts`` is refused, 421, with the setting to change.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from a2wsgi import ASGIMiddleware
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import PermissionDenied
from ..service import ALL_NAMESPACES, ApiKey, KeyStore, MemoryService, refusal
from ..settings import Settings
from .access import Caller
from .server import build_server

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

__all__ = ["PATH", "KeyAccess", "KeyVerifier", "WsgiBridge", "allowed_hosts", "allowed_origins", "asgi_app"]

PATH = "/mcp"
LOCALHOST = ("127.0.0.1", "localhost", "[::1]")
START_SECONDS = 30.0  # for the event loop and the SDK's lifespan to come up
AFTER_RESPONSE_SECONDS = 10.0  # a request's ASGI task may finish this long after its response
_HOST = re.compile(r"(\[[^\]]*\]|[^:\[\]]+)(:([0-9]+|\*))?")


class KeyVerifier:
    """The SDK's ``TokenVerifier`` over gitmem's API keys: a bearer token is a key (``gmk_...``)."""

    def __init__(self, keys: KeyStore) -> None:
        self.keys = keys

    async def verify_token(self, token: str) -> AccessToken | None:
        """The key's identity, or None for a key that is not valid (the middleware then says 401)."""
        key = self.keys.verify(token)
        if key is None:
            return None
        return AccessToken(token=token, client_id=key.id, scopes=[key.role],
                           claims={"name": key.name, "namespace": key.namespace})


class KeyAccess:
    """What the key of the current request may do: its role on its namespace (or every one, ``*``)."""

    creates_namespaces = False  # as over REST, only an admin creates namespaces, and not through MCP

    def __init__(self, keys: KeyStore, settings: Settings) -> None:
        self.keys = keys
        self.settings = settings

    def _key(self) -> ApiKey:
        token = get_access_token()
        key = None if token is None else self.keys.get(token.client_id)
        if key is None:  # revoked since the request was authenticated
            raise PermissionDenied("this API key is no longer valid (revoked); make a new one with `gitmem key create`")
        return key

    def require(self, namespace: str, role: str) -> Caller:
        """The key's holder, if the key grants ``role`` on ``namespace``; the REST API's refusal otherwise."""
        key = self._key()
        if not key.allows(namespace, role):
            raise refusal(key.name, key.role, namespace, role)
        return Caller(key.name, key.role)

    def default_namespace(self) -> str:
        """The key's namespace, or the configured default for a key of every namespace."""
        namespace = self._key().namespace
        return self.settings.default_namespace if namespace == ALL_NAMESPACES else str(namespace)

    def readable(self, namespaces: Iterable[str]) -> list[str]:
        """The namespaces the key may read."""
        key = self._key()
        return [n for n in namespaces if key.allows(n, "reader")]


def allowed_hosts(settings: Settings) -> list[str] | None:
    """The ``Host`` values ``/mcp`` answers: localhost's and the configured ones; None for any (``*``).

    A name without a port stands for that name on any port (``name`` and ``name:*``).
    """
    if "*" in settings.mcp_allowed_hosts:
        return None
    out: list[str] = []
    for host in (*LOCALHOST, *settings.mcp_allowed_hosts):
        match = _HOST.fullmatch(host.strip().lower())
        if match is None:
            continue
        out += [match.group(0)] if match.group(2) else [match.group(0), f"{match.group(0)}:*"]
    return out


def allowed_origins(hosts: list[str]) -> list[str]:
    """The ``Origin`` values of web pages on the allowed hosts."""
    return [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]


def _matches(value: str, patterns: list[str]) -> bool:
    """The SDK's rule: equal to a pattern, or ``base:*`` matching ``base:<anything>``."""
    value = value.lower()
    return any(value == p or (p.endswith(":*") and value.startswith(p[:-1])) for p in patterns)


async def _error(send: Send, status: int, kind: str, message: str, headers: Iterable[tuple[str, str]] = ()) -> None:
    """A JSON error in the REST API's shape."""
    body = json.dumps({"error": {"status": status, "type": kind, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *((k.encode("latin-1"), v.encode("latin-1")) for k, v in headers)]})
    await send({"type": "http.response.body", "body": body})


class _Guard:
    """What ``/mcp`` refuses before it reads a request, saying what to change.

    A ``Host`` or ``Origin`` outside the allow-list (the SDK's guard against DNS rebinding, which
    stays on behind this one), any method but POST, and a declared body over
    ``GITMEM_MAX_REQUEST_BYTES``.
    """

    def __init__(self, app: ASGIApp, hosts: list[str] | None, max_bytes: int) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = None if hosts is None else allowed_origins(hosts)
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if self.hosts is not None and not _matches(host, self.hosts):
            name = host.rsplit(":", 1)[0] if host and not host.endswith("]") else host
            await _error(send, 421, "MisdirectedRequest",
                         f"this server answers MCP only to Host names it knows, and {host!r} is not one (a guard "
                         f"against DNS rebinding); add it on the server: GITMEM_MCP_ALLOWED_HOSTS={name or 'NAME'}")
            return
        origin = headers.get("origin")
        if origin and self.origins is not None and not _matches(origin, self.origins):
            await _error(send, 403, "Forbidden",
                         f"MCP requests from web pages at {origin!r} are refused; if that site is yours, add its "
                         "host to GITMEM_MCP_ALLOWED_HOSTS on the server")
            return
        if scope["method"] != "POST":
            # No SSE stream to open (GET) and no session to end (DELETE): the server is stateless, and
            # under WSGI a stream would hold one of gunicorn's threads for as long as it stayed open.
            await _error(send, 405, "MethodNotAllowed",
                         f"{scope['method']} /mcp is not served: this MCP endpoint is stateless and takes "
                         "JSON-RPC messages by POST only", [("allow", "POST")])
            return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_bytes:
            await _error(send, 413, "RequestEntityTooLarge",
                         f"the request body is larger than the {self.max_bytes}-byte limit")
            return
        await self.app(scope, receive, send)


class _RequireKey:
    """A 401 with ``WWW-Authenticate`` unless the SDK's bearer backend accepted the request's key."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or isinstance(scope.get("user"), AuthenticatedUser):
            await self.app(scope, receive, send)
            return
        auth = Headers(scope=scope).get("authorization", "")
        if auth[:7].lower() == "bearer " and auth[7:].strip():
            message = "that API key is not valid (revoked, mistyped or never made); make one with `gitmem key create`"
            challenge = f'Bearer realm="gitmem", error="invalid_token", error_description="{message}"'
        else:
            message = ("authentication required: send a gitmem API key as 'Authorization: Bearer <key>' "
                       "(make one with `gitmem key create`)")
            challenge = 'Bearer realm="gitmem"'  # RFC 6750 3.1: no error code when no credentials came
        await _error(send, 401, "Unauthenticated", message, [("www-authenticate", challenge)])


def asgi_app(service: MemoryService) -> tuple[ASGIApp, StreamableHTTPSessionManager]:
    """The ``/mcp`` endpoint as an ASGI app, and the session manager whose ``run()`` must hold while it serves."""
    settings = service.settings
    server = build_server(service, KeyAccess(service.keys, settings))
    hosts = allowed_hosts(settings)
    security = (TransportSecuritySettings(enable_dns_rebinding_protection=False) if hosts is None else
                TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=allowed_origins(hosts)))
    endpoint = server.streamable_http_app(streamable_http_path=PATH, stateless_http=True, json_response=True,
                                          max_request_body_size=settings.max_request_bytes,
                                          transport_security=security)
    app: ASGIApp = AuthenticationMiddleware(AuthContextMiddleware(_RequireKey(endpoint)),
                                            backend=BearerAuthBackend(KeyVerifier(service.keys)))
    return _Guard(app, hosts, settings.max_request_bytes), server.session_manager


def _chunked(environ: WSGIEnvironment) -> bool:
    """Whether the request's body comes without a length: in chunks, read to its end."""
    return ("chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
            or bool(environ.get("wsgi.input_terminated")))


def _read_up_to(stream: Any, most: int) -> bytes:
    """At most ``most`` bytes of ``stream``, reading until it ends (a read may return less than asked)."""
    parts: list[bytes] = []
    size = 0
    while size < most:
        part = stream.read(min(65536, most - size))
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


class _Drained:
    """a2wsgi's response, run to its end even when the server stops reading it (a client gone).

    a2wsgi lets the request's ASGI task finish only as the WSGI server asks for more of the
    response; a server that closes it early would leave the task (and the SDK's per-request
    transport) waiting for ever. The response is one JSON body, so the rest is at most a few
    empty chunks.
    """

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = iter(chunks)

    def __iter__(self) -> Iterator[bytes]:
        return self.chunks

    def close(self) -> None:
        """Read what is left (the ASGI task then ends), discarding it."""
        for _ in self.chunks:
            pass


class WsgiBridge:
    """The ``/mcp`` ASGI app as a WSGI app, served on an event loop of this process's own."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._wsgi: ASGIMiddleware | None = None
        self._running: Future[None] | None = None

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        """Serve one request, starting the loop and the SDK's lifespan in this process first if needed."""
        with self._lock:
            if self._pid != os.getpid():  # never started, or inherited through a fork without its thread
                self._start()
            wsgi = self._wsgi
        assert wsgi is not None
        if not environ.get("CONTENT_LENGTH") and _chunked(environ):
            # a2wsgi reads CONTENT_LENGTH bytes of the body, so none of one sent in chunks: read it
            # here and say its length. One byte past the limit is enough for _Guard's 413.
            body = _read_up_to(environ["wsgi.input"], self.service.settings.max_request_bytes + 1)
            environ = {**environ, "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body))}
            environ.pop("HTTP_TRANSFER_ENCODING", None)
        return _Drained(wsgi(environ, start_response))  # type: ignore[arg-type]

    def _start(self) -> None:
        app, manager = asgi_app(self.service)
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="gitmem-mcp", daemon=True)
        thread.start()
        ready = threading.Event()

        async def lifespan() -> None:
            self._stop = asyncio.Event()
            async with manager.run():
                ready.set()
                await self._stop.wait()
            # Whatever a request left running (none should) ends with the loop, not after it.
            left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in left:
                task.cancel()
            await asyncio.gather(*left, return_exceptions=True)

        running = asyncio.run_coroutine_threadsafe(lifespan(), loop)
        if not ready.wait(START_SECONDS):
            running.cancel()
            raise RuntimeError(f"the MCP endpoint did not start within {START_SECONDS:.0f} s")
        self._pid, self._loop, self._thread, self._running = os.getpid(), loop, thread, running
        self._wsgi = ASGIMiddleware(app, wait_time=AFTER_RESPONSE_SECONDS, loop=loop)  # type: ignore[arg-type]

    def close(self) -> None:
        """End the SDK's lifespan and stop the loop (the process's exit does it too)."""
        with self._lock:
            loop, thread, stop, running = self._loop, self._thread, self._stop, self._running
            if loop is None or thread is None or stop is None or running is None or self._pid != os.getpid():
                return
            loop.call_soon_threadsafe(stop.set)
            running.result(START_SECONDS)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(START_SECONDS)
            loop.close()
            self._pid = self._loop = self._thread = self._stop = self._wsgi = self._running = None
