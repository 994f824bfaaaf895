"""A local HTTP server speaking the OpenAI chat-completions and embeddings protocols.

Tests give it a responder: a function from the request (``Request``: the JSON body, the prompt
and the memories quoted in it) to the reply's text content, or to :data:`HOLD` to keep the
client waiting until :meth:`FakeOpenAI.release` (a slow model; the client's timeout fires), or to
a :class:`Status` for an HTTP error. The responder may be swapped while the server runs, and
:meth:`FakeOpenAI.stop` takes the endpoint away altogether. ``POST /v1/embeddings`` answers with
the ``embedder``'s vectors (a function from the input texts to a list of vectors, or a
:class:`Status`), in the order OpenAI documents (``data[i].index``), here deliberately reversed.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    """One chat-completions request as the fake received it."""

    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def prompt(self) -> str:
        return str(self.body["messages"][-1]["content"])

    @property
    def system(self) -> str:
        return str(self.body["messages"][0]["content"])

    @property
    def kind(self) -> str:
        """``merge``, ``pair``, ``judge`` or ``extract``, read from the prompt."""
        if "Messages (JSON data" in self.prompt:
            return "extract"
        if "Memories (JSON data" in self.prompt:
            return "merge"
        if "Target (JSON data" in self.prompt:
            return "pair"
        return "judge"

    def quoted(self, label: str) -> Any:
        """The JSON quoted after ``<label> (JSON data, not instructions):``."""
        match = re.search(re.escape(label) + r" \(JSON data, not instructions\):\n(.*?)\n\n", self.prompt, re.S)
        assert match, f"no {label} block in the prompt"
        return json.loads(match.group(1))

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation's messages of an extract prompt."""
        return list(self.quoted("Messages"))

    @property
    def memories(self) -> list[dict[str, Any]]:
        """The memories of a merge prompt (or the target and candidate of a pair prompt)."""
        if self.kind == "merge":
            return list(self.quoted("Memories"))
        if self.kind == "pair":
            return [self.quoted("Target"), self.quoted("Candidate")]
        return [self.quoted("Memory")]


@dataclass(frozen=True)
class Status:
    """Answer with this HTTP status and body instead of a completion."""

    code: int
    body: str = "{}"


HOLD = object()
Responder = Callable[[Request], Any]
Embedder = Callable[[list[str]], Any]


def answer(**fields: Any) -> str:
    """A JSON reply body, as a well-behaved model would write it."""
    return json.dumps(fields, ensure_ascii=False)


@dataclass
class FakeOpenAI:
    """The server; use :func:`running` to start and stop it."""

    responder: Responder
    embedder: Embedder | None = None
    embedded: list[list[str]] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    received: threading.Event = field(default_factory=threading.Event)
    _release: threading.Event = field(default_factory=threading.Event)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def release(self) -> None:
        """Let held requests finish (they then answer with an error the client no longer reads)."""
        self._release.set()

    def kinds(self) -> list[str]:
        return [r.kind for r in self.requests]

    def stop(self) -> None:
        """Stop serving and free the port: from now on connections are refused (an endpoint that is gone)."""
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()

    def embeddings(self, body: dict[str, Any]) -> tuple[int, str]:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        self.embedded.append(texts)
        if self.embedder is None:
            return 404, '{"error": "no embeddings here"}'
        reply = self.embedder(texts)
        if isinstance(reply, Status):
            return reply.code, reply.body
        data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(reply)]
        return 200, json.dumps({"object": "list", "data": data[::-1], "model": body.get("model", "fake"),
                                "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    def handle(self, request: Request) -> tuple[int, str]:
        self.requests.append(request)
        self.received.set()
        reply = self.responder(request)
        if reply is HOLD:
            self._release.wait(60)
            return 503, '{"error": "released"}'
        if isinstance(reply, Status):
            return reply.code, reply.body
        body = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": request.body.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": str(reply)}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return 200, json.dumps(body, ensure_ascii=False)


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the http.server API)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path.rstrip("/") == "/v1/embeddings":
                code, text = fake.embeddings(json.loads(raw))
            elif self.path.rstrip("/") != "/v1/chat/completions":
                code, text = 404, '{"error": "unknown path"}'
            else:
                request = Request(json.loads(raw), {k.lower(): v for k, v in self.headers.items()})
                code, text = fake.handle(request)
            data = text.encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a slow answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def running(responder: Responder, embedder: Embedder | None = None) -> Iterator[FakeOpenAI]:
    """Serve a fake on 127.0.0.1 on a free port for the duration of the block."""
    fake = FakeOpenAI(responder, embedder)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.server = server
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release()
        server.shutdown()
        server.server_close()
        thread.join(10)
