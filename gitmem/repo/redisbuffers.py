"""Conversation buffers on the Redis hosts share: the contract of :class:`~gitmem.repo.buffers.Buffers`, not on a file.

SQLite's locks are not safe on NFS, so with several hosts (``settings.shared_redis_url``) the
buffers live in Redis. Every change that reads before it writes (take a message once, seal,
claim, finish, fail) is one Lua script, which Redis runs alone: two hosts never both take a
message id or a claim. For "acknowledged means kept" as SQLite's full fsync gives it, run Redis
with ``appendonly yes`` and ``appendfsync always`` (see docs/hosts.md).

Keys, under ``gitmem:<queue>:buffers:<namespace>:``::

    convs                 set of conversations that took a message
    conv:<c>              hash: source, meta (JSON), first, last, active_tokens
    seen:<c>              set of every message id the conversation took, ever
    held:<c>              hash: message id -> the message (JSON), while no commit holds it
    active:<c>            list of the active buffer's message ids, oldest first
    activeconvs           sorted set: conversation -> when its active buffer last took a message
    buf:<b>               hash: a sealed buffer (as the SQLite ``buffers`` row)
    msgs:<b>              list of the sealed buffer's message ids
    open                  sorted set: buffers not done, by when sealed
    bufs                  sorted set: every buffer, by when sealed
    counters              hash: messages, repeated, masked, distilled, failures, active_messages, state:<s>
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable
from typing import Any

import redis
from redis.exceptions import RedisError

from ..errors import Unavailable
from .buffers import Appended, Buffered, Sealed
from .leases import connect

_APPEND = """
local p, conv, source, meta, now = KEYS[1], ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local c = p .. 'conv:' .. conv
redis.call('SADD', p .. 'convs', conv)
if redis.call('HSETNX', c, 'source', source) == 1 then
  redis.call('HSET', c, 'meta', meta, 'first', now, 'active_tokens', 0)
end
redis.call('HSET', c, 'last', now)
local added, repeated, masked = 0, 0, 0
for i = 5, #ARGV, 4 do
  local id = ARGV[i]
  if redis.call('SADD', p .. 'seen:' .. conv, id) == 1 then
    redis.call('RPUSH', p .. 'active:' .. conv, id)
    redis.call('HSET', p .. 'held:' .. conv, id, ARGV[i + 1])
    redis.call('HINCRBY', c, 'active_tokens', ARGV[i + 2])
    masked = masked + tonumber(ARGV[i + 3])
    added = added + 1
  else
    repeated = repeated + 1
  end
end
local counters = p .. 'counters'
redis.call('HINCRBY', counters, 'messages', added)
redis.call('HINCRBY', counters, 'repeated', repeated)
redis.call('HINCRBY', counters, 'masked', masked)
redis.call('HINCRBY', counters, 'active_messages', added)
if added > 0 then redis.call('ZADD', p .. 'activeconvs', now, conv) end
return {added, repeated, tonumber(redis.call('HGET', c, 'active_tokens')), redis.call('LLEN', p .. 'active:' .. conv)}
"""

_SEAL = """
local p, conv, id, reason, now = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local active = p .. 'active:' .. conv
local count = redis.call('LLEN', active)
if count == 0 then return false end
local c = p .. 'conv:' .. conv
local tokens = redis.call('HGET', c, 'active_tokens') or 0
redis.call('RENAME', active, p .. 'msgs:' .. id)
redis.call('HSET', c, 'active_tokens', 0)
redis.call('ZREM', p .. 'activeconvs', conv)
redis.call('HSET', p .. 'buf:' .. id, 'id', id, 'conversation', conv, 'sealed', now, 'reason', reason,
           'tokens', tokens, 'messages', count, 'state', 'sealed', 'attempts', 0, 'not_before', 0,
           'claimed_until', 0)
redis.call('ZADD', p .. 'open', now, id)
redis.call('ZADD', p .. 'bufs', now, id)
local counters = p .. 'counters'
redis.call('HINCRBY', counters, 'active_messages', -count)
redis.call('HINCRBY', counters, 'state:sealed', 1)
return id
"""

_CLAIM = """
local p, id, token, now, seconds = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local b = p .. 'buf:' .. id
local state = redis.call('HGET', b, 'state')
local due = (state == 'sealed' and tonumber(redis.call('HGET', b, 'not_before')) <= now)
  or (state == 'claimed' and tonumber(redis.call('HGET', b, 'claimed_until')) <= now)
if not due then return 0 end
redis.call('HSET', b, 'state', 'claimed', 'claim', token, 'claimed_until', now + seconds)
redis.call('HINCRBY', p .. 'counters', 'state:' .. state, -1)
redis.call('HINCRBY', p .. 'counters', 'state:claimed', 1)
return 1
"""

_DONE = """
local p, id, commit, result = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local b = p .. 'buf:' .. id
local state = redis.call('HGET', b, 'state')
if not state then return 0 end
redis.call('HSET', b, 'state', 'done', 'commit_id', commit, 'result', result, 'error', '', 'claim', '')
local conv = redis.call('HGET', b, 'conversation')
local ids = redis.call('LRANGE', p .. 'msgs:' .. id, 0, -1)
for i = 1, #ids, 1000 do
  redis.call('HDEL', p .. 'held:' .. conv, unpack(ids, i, math.min(i + 999, #ids)))
end
redis.call('DEL', p .. 'msgs:' .. id)
redis.call('ZREM', p .. 'open', id)
local counters = p .. 'counters'
redis.call('HINCRBY', counters, 'state:' .. state, -1)
redis.call('HINCRBY', counters, 'state:done', 1)
redis.call('HINCRBY', counters, 'distilled', 1)
return 1
"""

_FAILED = """
local p, id, err, not_before = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local b = p .. 'buf:' .. id
local state = redis.call('HGET', b, 'state')
if not state then return 0 end
redis.call('HSET', b, 'state', 'sealed', 'error', err, 'not_before', not_before, 'claim', '', 'claimed_until', 0)
local counters = p .. 'counters'
redis.call('HINCRBY', counters, 'state:' .. state, -1)
redis.call('HINCRBY', counters, 'state:sealed', 1)
redis.call('HINCRBY', counters, 'failures', 1)
return redis.call('HINCRBY', b, 'attempts', 1)
"""


def prefix(queue: str, namespace: str) -> str:
    """The keys of one namespace's buffers start with this."""
    return f"gitmem:{queue}:buffers:{namespace}:"


class RedisBuffers:
    """One namespace's buffers in Redis; the same methods and promises as :class:`~gitmem.repo.buffers.Buffers`."""

    def __init__(self, url: str, queue: str, namespace: str) -> None:
        """Keep the buffers of ``namespace`` under the deployment's ``queue`` in the Redis at ``url``."""
        self.url = url
        self.prefix = prefix(queue, namespace)
        self.client: redis.Redis = connect(url)
        self._append, self._seal, self._claim, self._done, self._failed = (
            self.client.register_script(s) for s in (_APPEND, _SEAL, _CLAIM, _DONE, _FAILED))

    def _run(self, what: str, call: Any) -> Any:
        try:
            return call()
        except RedisError as exc:
            raise Unavailable(f"cannot reach Redis to {what} ({exc}); the conversation's messages are not "
                              "taken: send them again") from exc

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()

    def exists(self) -> bool:
        """Whether the namespace ever took a message."""
        return bool(self._run("read the buffers", lambda: self.client.exists(self.prefix + "convs")))

    def append(self, conversation: str, source: str, messages: Iterable[Buffered],
               meta: dict[str, Any] | None = None) -> Appended:
        """Add messages to the conversation's active buffer; a message id seen before is ignored."""
        args: list[Any] = [conversation, source, json.dumps(meta or {}), time.time()]
        for m in messages:
            held = [m.role, m.author, m.text, m.time, m.tokens, m.masked]
            args += [m.message_id, json.dumps(held, ensure_ascii=False), m.tokens, m.masked]
        added, repeated, tokens, count = self._run("take the messages",
                                                   lambda: self._append(keys=[self.prefix], args=args))
        return Appended(int(added), int(repeated), int(tokens), int(count))

    def known(self, conversation: str) -> bool:
        """Whether the conversation has taken any message."""
        return bool(self._run("read the buffers", lambda: self.client.sismember(self.prefix + "convs", conversation)))

    def message(self, conversation: str, message_id: str) -> Buffered | None:
        """A message still held in a buffer (not yet distilled), or None."""
        raw = self._run("read the buffers", lambda: self.client.hget(self.prefix + "held:" + conversation, message_id))
        return None if raw is None else _buffered(conversation, message_id, raw)

    def seal(self, conversation: str, reason: str) -> str | None:
        """Move the conversation's active messages into a new sealed buffer; its id, or None if empty."""
        found = self._run("seal the buffer", lambda: self._seal(
            keys=[self.prefix], args=[conversation, uuid.uuid4().hex, reason, time.time()]))
        return None if found is None else _text(found)

    def idle(self, seconds: float) -> list[str]:
        """Conversations with active messages and none newer than ``seconds`` ago."""
        found = self._run("read the buffers", lambda: self.client.zrangebyscore(
            self.prefix + "activeconvs", "-inf", time.time() - seconds))
        return [_text(c) for c in found]

    def active(self) -> list[str]:
        """Conversations with active messages."""
        return [_text(c) for c in self._run("read the buffers", lambda: self.client.zrange(
            self.prefix + "activeconvs", 0, -1))]

    def due(self) -> list[str]:
        """Sealed buffers ready to distil: never claimed, failed and waited out, or whose claim lapsed."""
        now = time.time()
        ids = [_text(b) for b in self._run("read the buffers", lambda: self.client.zrange(self.prefix + "open", 0, -1))]
        out = []
        for buffer_id in ids:
            state, not_before, claimed_until = self._run("read the buffers", lambda b=buffer_id: self.client.hmget(
                self.prefix + "buf:" + b, "state", "not_before", "claimed_until"))
            state = _text(state) if state is not None else None
            if ((state == "sealed" and float(not_before or 0) <= now)
                    or (state == "claimed" and float(claimed_until or 0) <= now)):
                out.append(buffer_id)
        return out

    def claim(self, buffer_id: str, seconds: float) -> str | None:
        """Hold a due buffer for ``seconds``; the claim's token, or None when it is not due (or not there)."""
        token = uuid.uuid4().hex
        taken = self._run("claim the buffer", lambda: self._claim(
            keys=[self.prefix], args=[buffer_id, token, time.time(), seconds]))
        return token if int(taken) else None

    def holds(self, buffer_id: str, token: str) -> bool:
        """Whether the claim ``token`` still holds the buffer (it has not lapsed and been taken)."""
        state, claim = self._run("read the buffer", lambda: self.client.hmget(
            self.prefix + "buf:" + buffer_id, "state", "claim"))
        return state is not None and _text(state) == "claimed" and claim is not None and _text(claim) == token

    def get(self, buffer_id: str) -> Sealed | None:
        """One buffer, or None."""
        row = self._run("read the buffer", lambda: self.client.hgetall(self.prefix + "buf:" + buffer_id))
        return _sealed(row) if row else None

    def source(self, conversation: str) -> tuple[str, dict[str, Any]]:
        """Where a conversation comes from (api, cli, slack, claude-code) and what its source said of it."""
        source, meta = self._run("read the buffers", lambda: self.client.hmget(
            self.prefix + "conv:" + conversation, "source", "meta"))
        return (_text(source), json.loads(meta)) if source is not None else ("api", {})

    def messages(self, buffer_id: str) -> list[Buffered]:
        """A buffer's messages in the order they arrived."""
        found = self.get(buffer_id)
        if found is None:
            return []
        ids = self._run("read the buffer", lambda: self.client.lrange(self.prefix + "msgs:" + buffer_id, 0, -1))
        if not ids:
            return []
        held = self._run("read the buffer", lambda: self.client.hmget(
            self.prefix + "held:" + found.conversation, ids))
        return [_buffered(found.conversation, _text(i), raw) for i, raw in zip(ids, held, strict=True)
                if raw is not None]

    def done(self, buffer_id: str, commit: str | None, result: dict[str, Any]) -> None:
        """Mark a buffer distilled and drop its messages (its commit holds what they said)."""
        self._run("finish the buffer", lambda: self._done(
            keys=[self.prefix], args=[buffer_id, commit or "", json.dumps(result)]))

    def failed(self, buffer_id: str, error: str, retry_in: float) -> int:
        """Put a buffer back to be tried again after ``retry_in`` seconds; how many attempts it has had."""
        return int(self._run("put the buffer back", lambda: self._failed(
            keys=[self.prefix], args=[buffer_id, error[:2000], time.time() + retry_in])))

    def stats(self) -> dict[str, int]:
        """Counters and the buffers in each state, for status pages."""
        raw = self._run("read the buffers", lambda: self.client.hgetall(self.prefix + "counters"))
        out: dict[str, int] = {}
        for name, value in ((_text(k), int(v)) for k, v in raw.items()):
            if name.startswith("state:"):
                if value:
                    out["buffers_" + name[6:]] = value
            elif value:
                out[name] = value
        out["active_messages"] = int(raw.get(b"active_messages", 0))
        return out

    def recent(self, limit: int = 20) -> list[Sealed]:
        """The newest buffers, newest first."""
        ids = self._run("read the buffers", lambda: self.client.zrevrange(self.prefix + "bufs", 0, limit - 1))
        return [s for s in (self.get(_text(i)) for i in ids) if s is not None]


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _buffered(conversation: str, message_id: str, raw: bytes | str) -> Buffered:
    role, author, text, when, tokens, masked = json.loads(raw)
    return Buffered(conversation, message_id, role, author, text, when, int(tokens), int(masked))


def _sealed(row: dict[bytes, bytes]) -> Sealed:
    field = {_text(k): _text(v) for k, v in row.items()}
    return Sealed(field["id"], field["conversation"], float(field["sealed"]), field["reason"], int(field["tokens"]),
                  int(field["messages"]), field["state"], int(field["attempts"]), field.get("error") or None,
                  field.get("commit_id") or None, field.get("claim") or None, float(field.get("not_before") or 0))
