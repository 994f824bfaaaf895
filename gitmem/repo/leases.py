"""Consolidation leases on Redis: one run of a namespace at a time across hosts, with fencing tokens.

The file lock of :mod:`.runstate` holds on one host only. With Redis configured, a run also
takes a lease: the key ``<prefix>:lease:<namespace>``, set only if absent and with an expiry
(redis-py's :class:`~redis.lock.Lock`). Its value starts with the run's fencing token, a number
from ``INCR <prefix>:fence:<namespace>``, so every holder gets a larger number than any before
it; the host and process follow, for messages and operators. While the run lives, a thread
renews the lease every third of its length. A holder that dies or stalls (killed, stopped,
frozen, cut off from Redis) stops renewing and the key expires, so another host can take over.

Before a run moves any ref it calls :meth:`Lease.check`, which asks Redis whether the key still
holds its token. A run whose lease expired, whether or not another run took it since, raises
:class:`~gitmem.errors.LeaseLost` and writes nothing more; the branch it may have left is an
orphan the next run deletes. The check sits right before each compare-and-swap, so what remains
is the gap between the two (microseconds to milliseconds, against a lease of a minute renewed
every twenty seconds): a run would have to stall for the whole lease in exactly that gap.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis
from redis.exceptions import LockError, RedisError

from ..errors import AlreadyRunning, LeaseLost, Unavailable
from ..settings import Settings

log = logging.getLogger(__name__)


def connect(url: str) -> redis.Redis:
    """A Redis client that fails within seconds when the server is gone, instead of hanging."""
    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5, health_check_interval=30)


@dataclass(frozen=True)
class Holder:
    """Who holds a namespace's lease: the fencing token, host and process."""

    token: int
    host: str
    pid: int

    @classmethod
    def parse(cls, value: bytes | str) -> Holder | None:
        """Read ``<token>:<host>:<pid>`` as :class:`RedisLeases` writes it; None for anything else."""
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        token, _, rest = text.partition(":")
        host, _, pid = rest.rpartition(":")
        try:
            return cls(int(token), host, int(pid))
        except ValueError:
            return None

    def __str__(self) -> str:
        return f"host {self.host}, pid {self.pid}, token {self.token}"


class Lease:
    """A held lease: its fencing token, and the check a run makes before it moves a ref."""

    def __init__(self, lock: Any, namespace: str, token: int, seconds: float) -> None:
        self._lock = lock
        self.namespace = namespace
        self.token = token
        self.seconds = seconds
        self._stop = threading.Event()
        self._renewer = threading.Thread(target=self._renew, name=f"gitmem-lease-{namespace}", daemon=True)

    def check(self) -> None:
        """Raise :class:`LeaseLost` unless Redis still holds this lease's token."""
        try:
            owned = bool(self._lock.owned())
        except RedisError as exc:
            raise LeaseLost(f"cannot confirm the consolidation lease of namespace {self.namespace!r} "
                            f"(token {self.token}) with Redis ({exc}); the run stopped before writing "
                            "more") from exc
        if not owned:
            raise LeaseLost(f"the consolidation lease of namespace {self.namespace!r} (token {self.token}) "
                            f"expired after {self.seconds:g} s without renewal (the run stalled or lost "
                            "Redis); the run stopped before writing more, and another run may go on")

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self._lock.extend(self.seconds, replace_ttl=True)
            except LockError:
                log.warning("consolidation lease of %s (token %s) was lost", self.namespace, self.token)
                return  # expired or taken over; check() says so before the next write
            except RedisError as exc:
                log.warning("cannot renew the consolidation lease of %s: %s", self.namespace, exc)

    def _start(self) -> None:
        self._renewer.start()

    def _end(self) -> None:
        self._stop.set()
        self._renewer.join(self.seconds)
        try:
            self._lock.release()
        except LockError:
            pass  # it expired meanwhile; nothing of ours to release
        except RedisError as exc:
            log.warning("cannot release the consolidation lease of %s (it expires by itself): %s",
                        self.namespace, exc)


class RedisLeases:
    """Leases on namespaces in one Redis, for every process of one deployment (``prefix``)."""

    def __init__(self, url: str, prefix: str, seconds: float) -> None:
        self.url = url
        self.prefix = prefix
        self.seconds = seconds
        self._client: redis.Redis | None = None

    @property
    def client(self) -> redis.Redis:
        """The Redis client, made on first use (after a worker forks, never before)."""
        if self._client is None:
            self._client = connect(self.url)
        return self._client

    def key(self, namespace: str) -> str:
        """The lease's key for ``namespace``."""
        return f"{self.prefix}:lease:{namespace}"

    def holder(self, namespace: str) -> Holder | None:
        """Who holds the lease of ``namespace`` now, if anyone."""
        value = self.client.get(self.key(namespace))
        return None if value is None else Holder.parse(value)

    @contextmanager
    def hold(self, namespace: str) -> Iterator[Lease]:
        """Hold the lease of ``namespace`` for the block, renewed; raise :class:`AlreadyRunning` if taken."""
        try:
            token = int(self.client.incr(f"{self.prefix}:fence:{namespace}"))
            # thread_local=False: the renewing thread must see the token this thread acquired with.
            lock = self.client.lock(self.key(namespace), timeout=self.seconds, blocking=False, thread_local=False)
            acquired = lock.acquire(token=f"{token}:{socket.gethostname()}:{os.getpid()}")
            holder = None if acquired else self.holder(namespace)
        except RedisError as exc:
            raise Unavailable(f"cannot reach Redis to lock namespace {namespace!r} for consolidation: {exc}; "
                              "check GITMEM_REDIS_URL (or GITMEM_BROKER_URL)") from exc
        if not acquired:
            where = f" ({holder})" if holder else ""
            raise AlreadyRunning(f"a consolidation of namespace {namespace!r} is already running{where}; "
                                 "wait for it to finish")
        lease = Lease(lock, namespace, token, self.seconds)
        lease._start()
        try:
            yield lease
        finally:
            lease._end()


_shared: dict[tuple[str, str, float], RedisLeases] = {}
_shared_lock = threading.Lock()


def shared_leases(settings: Settings) -> RedisLeases | None:
    """The consolidation leases on the Redis every host shares (one client per process), or None."""
    url = settings.shared_redis_url
    if url is None:
        return None
    key = (url, settings.celery_queue, float(settings.lock_lease_seconds))
    with _shared_lock:
        found = _shared.get(key)
        if found is None:
            found = _shared[key] = RedisLeases(url, settings.celery_queue, settings.lock_lease_seconds)
        return found
