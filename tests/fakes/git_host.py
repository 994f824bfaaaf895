"""A small Git host over smart HTTP (``git http-backend`` with pushing on), standing in for GitHub.

It serves the bare repositories under ``root`` at ``http://127.0.0.1:PORT/<name>.git`` and takes
pushes from clients that send ``Authorization: Basic`` with the expected token as the password, as
GitHub and GitLab take a personal access token. ``stop()`` takes it down (connections refused) and
``start()`` brings it back on the same port, to test a mirror that is down and back up.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class GitHost:
    """A git HTTP server on ``127.0.0.1:port`` over the repositories in ``root``."""

    def __init__(self, root: Path, token: str) -> None:
        self.root = root
        self.token = token
        self.port = free_port()
        self.pushes = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}.git"

    def create(self, name: str) -> Path:
        path = self.root / f"{name}.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
        return path

    def start(self) -> None:
        host = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._backend()

            def do_POST(self) -> None:
                self._backend()

            def _backend(self) -> None:
                auth = self.headers.get("Authorization", "")
                expected = "Basic " + base64.b64encode(f"gitmem:{host.token}".encode()).decode()
                if auth != expected:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    body = self._chunked()
                env = {"PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": str(host.root), "GIT_HTTP_EXPORT_ALL": "1",
                       "REQUEST_METHOD": self.command, "PATH_INFO": path, "QUERY_STRING": query,
                       "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
                       "REMOTE_USER": "gitmem", "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.receivepack",
                       "GIT_CONFIG_VALUE_0": "true"}
                if self.headers.get("Content-Encoding"):
                    env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
                if path.endswith("git-receive-pack") and self.command == "POST":
                    host.pushes += 1
                git = shutil.which("git") or "git"
                out = subprocess.run([git, "http-backend"], input=body, env=env, capture_output=True).stdout
                sep = b"\r\n\r\n" if b"\r\n\r\n" in out else b"\n\n"
                head, _, rest = out.partition(sep)
                status = 200
                headers = []
                for line in head.decode("latin-1").splitlines():
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.strip().split()[0])
                    elif name:
                        headers.append((name.strip(), value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(rest)))
                self.end_headers()
                self.wfile.write(rest)

            def _chunked(self) -> bytes:
                data = b""
                while True:
                    size = int(self.rfile.readline().strip(), 16)
                    if size == 0:
                        self.rfile.readline()
                        return data
                    data += self.rfile.read(size)
                    self.rfile.readline()

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            assert self._thread is not None
            self._thread.join()
            self._server = None
