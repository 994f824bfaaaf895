"""Fixtures for the web tests: an app over the shared service, keys of every role, a live server."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.serving import make_server
from werkzeug.test import TestResponse

from gitmem.repo import KeyStore
from gitmem.service import MemoryService
from gitmem.web import create_app


class JsonResponse(TestResponse):
    """A test response whose ``json`` is typed for indexing (the tests check the status first)."""

    @property
    def json(self) -> Any:
        return self.get_json(silent=True)


class Client(FlaskClient):
    """Flask's test client, returning :class:`JsonResponse`."""

    def get(self, *args: Any, **kw: Any) -> JsonResponse:
        return cast(JsonResponse, super().get(*args, **kw))

    def post(self, *args: Any, **kw: Any) -> JsonResponse:
        return cast(JsonResponse, super().post(*args, **kw))

    def patch(self, *args: Any, **kw: Any) -> JsonResponse:
        return cast(JsonResponse, super().patch(*args, **kw))

    def put(self, *args: Any, **kw: Any) -> JsonResponse:
        return cast(JsonResponse, super().put(*args, **kw))

    def delete(self, *args: Any, **kw: Any) -> JsonResponse:
        return cast(JsonResponse, super().delete(*args, **kw))


def typed_client(app: Flask) -> Client:
    """A test client of ``app`` with typed JSON responses."""
    app.test_client_class = Client
    client = app.test_client()
    client.response_wrapper = JsonResponse
    assert isinstance(client, Client)
    return client


@pytest.fixture
def app(svc: MemoryService) -> Flask:
    """The web app over the ``svc`` fixture's service (namespace ``default`` exists)."""
    app = create_app(service=svc)
    app.config["TESTING"] = True
    return app


@pytest.fixture
def client(app: Flask) -> Client:
    return typed_client(app)


@dataclass(frozen=True)
class Keys:
    reader: str
    writer: str
    reviewer: str
    admin: str
    other: str  # a writer key for another namespace

    def auth(self, role: str) -> dict[str, str]:
        """Headers that authenticate with the key of ``role``."""
        return {"Authorization": f"Bearer {getattr(self, role)}"}


@pytest.fixture
def keys(svc: MemoryService) -> Keys:
    """One key per role on ``default``, named after the role, and a writer key on ``other``."""
    store = KeyStore(svc.settings.home)
    made = {role: store.create("default", role, name=role)[0]
            for role in ("reader", "writer", "reviewer", "admin")}
    made["other"] = store.create("other", "writer", name="outsider")[0]
    return Keys(**made)


@contextmanager
def serving(app: Flask) -> Iterator[str]:
    """``app`` served over real HTTP on 127.0.0.1 (a threaded werkzeug server) for the block; its URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.fixture
def live_server(app: Flask) -> Iterator[str]:
    """The app served over real HTTP on 127.0.0.1 (a threaded werkzeug server); yields its URL."""
    with serving(app) as url:
        yield url


@pytest.fixture
def remember(svc: MemoryService) -> Callable[..., str]:
    """Remember a memory in ``default`` straight through the service; returns its id."""

    def add(text: str, **kw: object) -> str:
        result = svc.remember("default", text, **kw)  # type: ignore[arg-type]
        assert result.memory is not None
        return result.memory.id

    return add
