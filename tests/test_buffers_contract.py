"""The buffers' contract (tests/contracts/buffers.py) run against SQLite in the shared home and against Redis.

Redis is the real server at 127.0.0.1:6379 (database 14), each test under a prefix of its own that
is deleted after it; without a Redis server the Redis half is skipped.
"""

from __future__ import annotations

import stat
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmem.repo import Buffers
from gitmem.service import MemoryService
from gitmem.settings import Settings

from .contracts.buffers import BuffersContract, said
from .test_tasks import redis_up

REDIS = "redis://127.0.0.1:6379/14"


@pytest.fixture(params=["sqlite", "redis"])
def buffers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """One namespace's buffers, on each backend."""
    if request.param == "sqlite":
        found = Buffers(tmp_path / "ingest" / "default.sqlite")
        yield found
        found.close()
        return
    if not redis_up():
        pytest.skip("Redis is not running at 127.0.0.1:6379")
    from gitmem.repo.redisbuffers import RedisBuffers

    found_redis = RedisBuffers(REDIS, f"test-{uuid.uuid4().hex}", "default")
    try:
        yield found_redis
    finally:
        keys = list(found_redis.client.scan_iter(match=found_redis.prefix + "*"))
        if keys:
            found_redis.client.delete(*keys)
        found_redis.close()


class TestBuffersContract(BuffersContract):
    """Every guarantee, on each backend."""


@pytest.mark.skipif(not redis_up(), reason="Redis is not running at 127.0.0.1:6379")
def test_with_redis_configured_the_buffers_leave_no_file_in_the_shared_home(tmp_path: Path) -> None:
    queue = f"test-{uuid.uuid4().hex}"
    settings = Settings(home=tmp_path / "home", redis_url=REDIS, celery_queue=queue)
    svc = MemoryService(settings)
    try:
        svc.init("default")
        done = svc.ingest("default", "c1", [{"id": "m1", "text": "we use pnpm, not npm"}], source="api", flush=False)
        assert done.accepted is not None and done.accepted.added == 1
        assert not (settings.home / "ingest").exists()
        # A second process, as another host would, sees the message.
        other = MemoryService(settings)
        try:
            assert other.ingest_status("default")["messages"] == 1
            again = other.ingest("default", "c1", [{"id": "m1", "text": "we use pnpm, not npm"}], source="api")
            assert again.accepted is not None and again.accepted.repeated == 1
        finally:
            other.close()
        backup = svc.backup(tmp_path / "backup")
        assert "default's conversation buffers" in backup.manifest["not_included"]
    finally:
        buffers = svc._namespaces.buffers("default")
        keys = list(buffers.client.scan_iter(match=buffers.prefix + "*"))  # type: ignore[union-attr]
        if keys:
            buffers.client.delete(*keys)  # type: ignore[union-attr]
        svc.close()


@pytest.mark.skipif(not redis_up(), reason="Redis is not running at 127.0.0.1:6379")
def test_a_distilled_buffer_leaves_nothing_of_its_messages_in_redis() -> None:
    from gitmem.repo import Buffered
    from gitmem.repo.redisbuffers import RedisBuffers

    buffers = RedisBuffers(REDIS, f"test-{uuid.uuid4().hex}", "default")
    try:
        buffers.append("c1", "api", [Buffered("c1", f"m{n}", "user", None, "x" * 50, None, 13, 0) for n in range(3)])
        sealed = buffers.seal("c1", "asked")
        assert sealed is not None and buffers.claim(sealed, 60) is not None
        buffers.done(sealed, "c0ffee", {})
        keys = {k.decode() for k in buffers.client.scan_iter(match=buffers.prefix + "*")}
        # What stays: the ids seen (taken once, ever), the buffer's record and the counters.
        assert keys == {buffers.prefix + k for k in ("convs", "conv:c1", "seen:c1", f"buf:{sealed}", "bufs",
                                                     "counters")}
    finally:
        keys = list(buffers.client.scan_iter(match=buffers.prefix + "*"))
        if keys:
            buffers.client.delete(*keys)
        buffers.close()


# --- SQLite in the shared home only --------------------------------------------------------------------


def test_the_buffer_files_are_made_where_the_home_does_not_exist_yet_one_per_namespace(tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    first = Buffers(home / "ingest" / "default.sqlite")
    second = Buffers(home / "ingest" / "team.sqlite")  # the folder is there now
    try:
        first.append("c1", "api", said("c1", "m1"))
        assert second.known("c1") is False and first.known("c1")
    finally:
        first.close()
        second.close()


def test_a_copy_of_the_buffers_is_whole_and_readable_by_its_owner_only(tmp_path: Path) -> None:
    found = Buffers(tmp_path / "ingest" / "default.sqlite")
    try:
        found.append("c1", "api", said("c1", "m1", "m2"))
        found.copy_to(tmp_path / "backup" / "ingest" / "default.sqlite")
        found.copy_to(tmp_path / "backup" / "ingest" / "team.sqlite")
    finally:
        found.close()
    for name in ("default", "team"):
        copy = tmp_path / "backup" / "ingest" / f"{name}.sqlite"
        assert stat.S_IMODE(copy.stat().st_mode) == 0o600
        copied = Buffers(copy)
        try:
            assert copied.stats()["active_messages"] == 2 and copied.message("c1", "m2") is not None
        finally:
            copied.close()


def test_a_claim_holds_for_its_seconds_from_now(tmp_path: Path) -> None:
    found = Buffers(tmp_path / "ingest" / "default.sqlite")
    try:
        found.append("c1", "api", said("c1", "m1"))
        sealed = found.seal("c1", "asked")
        before = time.time()
        assert found.claim(sealed, 0.5) is not None
        after = time.time()
        (until,) = found.db.execute("SELECT claimed_until FROM buffers WHERE id = ?", (sealed,)).fetchone()
        assert before + 0.5 <= until <= after + 0.5
    finally:
        found.close()
