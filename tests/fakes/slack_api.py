"""A local HTTP server that speaks enough of Slack's Web API for the bot, and records every call.

Point ``WebClient(base_url=fake.api_url)`` (``GITMEM_SLACK_API_URL``) at it. It answers
``POST /api/<method>`` the way Slack does (form or JSON bodies, ``{"ok": true, ...}``), and accepts
posts to response URLs under ``/respond/`` so those are recorded too. ``fail(method, error)``
makes the next calls of a method answer ``{"ok": false, "error": error}``.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

BOT_USER = "UBOT0GITMEM"
TEAM = "T0GITMEM"


@dataclass
class Call:
    """One request the bot made: the API method (or ``respond`` for a response URL) and its arguments."""

    method: str
    args: dict[str, Any]
    token: str | None = None
    path: str = ""
    response: Any = None

    @property
    def blocks(self) -> list[dict[str, Any]]:
        value = self.args.get("blocks") or []
        return json.loads(value) if isinstance(value, str) else list(value)

    @property
    def text(self) -> str:
        """Every piece of text in the message (fallback text and blocks), for assertions."""
        return "\n".join([str(self.args.get("text") or ""), *_texts(self.blocks)])

    @property
    def view(self) -> dict[str, Any]:
        value = self.args.get("view") or {}
        return json.loads(value) if isinstance(value, str) else dict(value)


def _texts(node: Any) -> list[str]:
    out: list[str] = []
    if isinstance(node, dict):
        if node.get("type") in ("mrkdwn", "plain_text") and isinstance(node.get("text"), str):
            out.append(node["text"])
        for value in node.values():
            if isinstance(value, dict | list):
                out += _texts(value)
    elif isinstance(node, list):
        for item in node:
            out += _texts(item)
    return out


@dataclass
class FakeSlack:
    """The server's state: recorded calls and queued failures."""

    calls: list[Call] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None
    socket_url: str | None = None  # what apps.connections.open hands out (see slack_socket.py)
    _ts: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def response_url(self, name: str = "1") -> str:
        return f"{self.url}/respond/{name}"

    def fail(self, method: str, error: str) -> None:
        with self.lock:
            self.failures[method] = error

    def of(self, *methods: str) -> list[Call]:
        """Recorded calls of the given methods, oldest first."""
        with self.lock:
            return [c for c in self.calls if c.method in methods]

    def reset(self) -> None:
        with self.lock:
            self.calls.clear()

    def next_ts(self) -> str:
        return f"1700000000.{next(self._ts):06d}"

    def answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            error = self.failures.get(method)
        if error:
            return {"ok": False, "error": error}
        channel = args.get("channel")
        if method == "auth.test":
            return {"ok": True, "url": "https://gitmem-test.slack.com/", "team": "gitmem", "user": "gitmem",
                    "team_id": TEAM, "user_id": BOT_USER, "bot_id": "B0GITMEM", "is_enterprise_install": False}
        if method == "chat.postMessage":
            ts = self.next_ts()
            return {"ok": True, "channel": channel, "ts": ts,
                    "message": {"type": "message", "text": args.get("text"), "user": BOT_USER, "ts": ts}}
        if method == "chat.update":
            return {"ok": True, "channel": channel, "ts": args.get("ts"), "text": args.get("text")}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": self.next_ts()}
        if method == "chat.getPermalink":
            ts = str(args.get("message_ts", "")).replace(".", "")
            return {"ok": True, "channel": channel, "permalink": f"https://gitmem-test.slack.com/archives/{channel}/p{ts}"}
        if method == "conversations.join":
            return {"ok": True, "channel": {"id": channel, "is_member": True}}
        if method == "apps.connections.open":
            return {"ok": True, "url": self.socket_url} if self.socket_url else {"ok": False, "error": "not_allowed"}
        if method in ("views.open", "views.update", "views.push"):
            view = args.get("view")
            view = json.loads(view) if isinstance(view, str) else view
            return {"ok": True, "view": {"id": "V0GITMEM", **(view or {})}}
        return {"ok": False, "error": "unknown_method"}

    def __enter__(self) -> FakeSlack:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8")
                split = urlsplit(self.path)
                args: dict[str, Any] = dict(parse_qsl(split.query))
                if raw:
                    if "json" in (self.headers.get("Content-Type") or ""):
                        args.update(json.loads(raw))
                    else:
                        args.update(parse_qsl(raw, keep_blank_values=True))
                auth = self.headers.get("Authorization") or ""
                token = auth.removeprefix("Bearer ") or args.get("token")
                if split.path.startswith("/respond/"):
                    body: Any = "ok"
                    call = Call("respond", args, token, split.path, body)
                    content_type = "text/plain"
                elif split.path.startswith("/api/"):
                    method = split.path.removeprefix("/api/")
                    body = fake.answer(method, args)
                    call = Call(method, args, token, split.path, body)
                    content_type = "application/json; charset=utf-8"
                else:
                    self.send_error(404)
                    return
                with fake.lock:
                    fake.calls.append(call)
                data = (body if isinstance(body, str) else json.dumps(body)).encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                """Keep test output quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), name="fake-slack",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()
