"""Serving a WSGI app with gunicorn, as ``gitmem serve`` and ``gitmem slack --http`` do.

gunicorn (25.1 and later) opens a control socket for ``gunicornc``, by default one path per user
(``$XDG_RUNTIME_DIR/gunicorn.ctl`` or ``~/.gunicorn/gunicorn.ctl``): a second server under the
same HOME takes the path over, and stopping either deletes the other's socket. Each server here
gets its own, named after what it serves and where it listens, in that folder.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import InvalidInput

#: The longest path a Unix socket may have is 108 bytes on Linux (104 on macOS), with its final NUL.
MAX_SOCKET_PATH = 100


def control_socket(default: str, name: str, host: str, port: int) -> str | None:
    """The control socket of one server: ``<gunicorn's folder>/<name>-<host>-<port>.ctl``; None if too long.

    A server on port 0 (any free port) is named by its process id instead.
    """
    where = f"{host}-{port}" if port else f"pid{os.getpid()}"
    path = str(Path(default).with_name(f"{name}-{where}.ctl"))
    return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


def check_address(host: str, port: int) -> None:
    """Fail at once, naming the address, when it cannot be listened on (gunicorn would retry 5 s).

    The check binds and lets go; a port taken in between still meets gunicorn's retries.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise InvalidInput(f"cannot listen on {host}: {exc.strerror}; give an address of this machine "
                           "with --host") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn does
        try:
            probe.bind(address)
        except OSError as exc:
            raise InvalidInput(f"cannot listen on {host}:{port}: {exc.strerror}; stop what is using it "
                               "or choose another --port") from None


def serve(load: Callable[[], Any], *, host: str, port: int, workers: int, threads: int, name: str) -> None:
    """Run gunicorn (gthread workers, access log on standard output) serving the app ``load()`` makes."""
    from gunicorn.app.base import BaseApplication  # loaded only by the processes that serve

    class Server(BaseApplication):  # type: ignore[misc]  # gunicorn is untyped
        def load_config(self) -> None:
            for setting, value in {"bind": f"{host}:{port}", "workers": workers, "threads": threads,
                                   "worker_class": "gthread", "accesslog": "-", "timeout": 120}.items():
                self.cfg.set(setting, value)
            if "control_socket" in self.cfg.settings:
                path = control_socket(self.cfg.control_socket, name, host, port)
                if path is None:  # too long to bind: no control socket rather than a server that fails
                    self.cfg.set("control_socket_disable", True)
                else:
                    self.cfg.set("control_socket", path)

        def load(self) -> Any:
            return load()

    Server().run()
