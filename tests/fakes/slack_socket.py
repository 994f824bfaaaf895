"""A local WebSocket server that speaks Slack's Socket Mode, for ``gitmem slack`` tests.

``apps.connections.open`` on :class:`~tests.fakes.slack_api.FakeSlack` hands out this server's
``ws://`` URL. The server says hello, answers pings, and :meth:`FakeSocketMode.send` delivers an
envelope (a slash command, an event, an interaction) and blocks until the app acknowledges it,
returning the acknowledgement, as Slack's side of the socket would see it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import queue
import socket
import struct
import threading
import uuid
from typing import Any

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TEXT, CLOSE, PING, PONG = 0x1, 0x8, 0x9, 0xA


def frame(opcode: int, data: bytes) -> bytes:
    """A server-to-client frame (servers never mask)."""
    head = bytes([0x80 | opcode])
    if len(data) < 126:
        head += bytes([len(data)])
    elif len(data) < 1 << 16:
        head += bytes([126]) + struct.pack("!H", len(data))
    else:
        head += bytes([127]) + struct.pack("!Q", len(data))
    return head + data


class FakeSocketMode:
    """One Socket Mode connection at a time, on 127.0.0.1."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.acks: queue.Queue[dict[str, Any]] = queue.Queue()
        self.connected = threading.Event()
        self.conn: socket.socket | None = None
        self.send_lock = threading.Lock()
        self.thread = threading.Thread(target=self._serve, name="fake-socket-mode", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.listener.getsockname()[:2]
        return f"ws://{host}:{port}/link/?ticket={uuid.uuid4().hex}"

    def __enter__(self) -> FakeSocketMode:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.hang_up()
        self.listener.close()
        self.thread.join(timeout=10)

    def hang_up(self) -> None:
        """Close the connection from Slack's side (the client sees it at once, without a timeout)."""
        if self.conn is not None:
            try:
                self.conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.conn.close()

    def send(self, kind: str, payload: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        """Deliver an envelope of ``kind`` and return the app's acknowledgement of it."""
        assert self.connected.wait(timeout), "the app never connected"
        envelope_id = uuid.uuid4().hex
        self._send_text({"envelope_id": envelope_id, "type": kind, "payload": payload,
                         "accepts_response_payload": kind != "events_api", "retry_attempt": 0,
                         "retry_reason": ""})
        while True:
            ack = self.acks.get(timeout=timeout)
            if ack.get("envelope_id") == envelope_id:
                return ack

    def _send_text(self, data: dict[str, Any]) -> None:
        assert self.conn is not None
        with self.send_lock:
            self.conn.sendall(frame(TEXT, json.dumps(data).encode("utf-8")))

    def _serve(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return  # closed before anyone connected
        self.conn = conn
        reader = conn.makefile("rb")
        request = b""
        while not request.endswith(b"\r\n\r\n"):
            line = reader.readline()
            if not line:
                return
            request += line
        headers = dict(line.split(": ", 1) for line in request.decode().split("\r\n")[1:] if ": " in line)
        accept = base64.b64encode(hashlib.sha1((headers["Sec-WebSocket-Key"] + GUID).encode()).digest())
        with self.send_lock:
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
        self._send_text({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A0GITMEM"}})
        self.connected.set()
        try:
            while True:
                opcode, data = self._read_frame(reader)
                if opcode == PING:
                    with self.send_lock:
                        conn.sendall(frame(PONG, data))
                elif opcode == TEXT:
                    self.acks.put(json.loads(data))
                elif opcode == CLOSE:
                    return
        except (OSError, EOFError, ValueError):
            return

    @staticmethod
    def _read_frame(reader: Any) -> tuple[int, bytes]:
        def read(n: int) -> bytes:
            data = reader.read(n)
            if len(data) < n:
                raise EOFError
            return bytes(data)

        first, second = read(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", read(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", read(8))[0]
        mask = read(4) if second & 0x80 else b"\0\0\0\0"
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(read(length)))
        return first & 0x0F, data
