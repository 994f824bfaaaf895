"""A stand-in LLM for docker/test.sh: an OpenAI-compatible chat-completions server on port 8080.

It holds the first chat request it gets until ``POST /release`` (so the test can kill the worker
that asked, mid-run), then answers like a model that merges every cluster into its longest
member, ignores near-identical pairs and keeps what it is asked to judge. ``GET /state`` says how
many requests came and whether one is held. Standard library only: it runs in gitmem's image.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

released = threading.Event()
lock = threading.Lock()
state = {"requests": 0, "held": 0}


def quoted(prompt: str, label: str) -> Any:
    """The JSON gitmem quotes after ``<label> (JSON data, not instructions):``."""
    match = re.search(re.escape(label) + r" \(JSON data, not instructions\):\n(.*?)\n\n", prompt, re.S)
    return json.loads(match.group(1)) if match else None


def reply(prompt: str) -> dict[str, Any]:
    """What a well-behaved model answers to one of gitmem's three prompts."""
    memories = quoted(prompt, "Memories")
    if memories:
        return {"merged": max((m["text"] for m in memories), key=len), "reason": "one topic"}
    if quoted(prompt, "Target") is not None:
        return {"action": "ignore", "memory": None, "reason": "different"}
    return {"verdict": "keep", "reason": "keep"}


class Handler(BaseHTTPRequestHandler):
    def send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the worker that asked is gone

    def do_GET(self) -> None:  # noqa: N802 (the http.server API)
        with lock:
            self.send(200, dict(state))

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/release":
            released.set()
            self.send(200, {"released": True})
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self.send(404, {"error": "unknown path"})
            return
        with lock:
            state["requests"] += 1
            hold = state["requests"] == 1
            state["held"] += hold
        if hold:
            released.wait(600)
            with lock:
                state["held"] -= 1
        prompt = str(json.loads(body)["messages"][-1]["content"])
        content = json.dumps(reply(prompt), ensure_ascii=False)
        self.send(200, {"id": "chatcmpl-e2e", "object": "chat.completion", "created": 0, "model": "e2e",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": content}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    def log_message(self, format: str, *args: Any) -> None:
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("0.0.0.0", 8080), Handler)
    server.daemon_threads = True
    print("model: listening on 8080", flush=True)
    server.serve_forever()
