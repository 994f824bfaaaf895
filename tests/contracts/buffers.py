"""The conversation buffers' contract: what ingestion relies on from SQLite in the shared home and from Redis alike.

Read from :mod:`gitmem.repo.buffers` and from how :mod:`gitmem.ingest` uses it: a message id is
taken once, ever; sealing moves the active messages into a new buffer while the conversation keeps
filling a fresh one; a sealed buffer is claimed by one worker at a time, and a claim that lapsed
may be taken by another, whose token then holds it and the first's no longer does; a distilled
buffer drops its messages; a failed one waits ``retry_in`` seconds and counts its attempts.

Claims that lapse are made with a claim of no seconds, never by sleeping past one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from gitmem.repo import Buffered

Make = Callable[[], Any]


def said(conversation: str, *ids: str, tokens: int = 10, masked: int = 0) -> list[Buffered]:
    """Messages ``ids`` of ``conversation``, each ``tokens`` long."""
    return [Buffered(conversation, i, "user", "ana", f"text of {i}", "2026-12-01T09:00:00Z", tokens, masked)
            for i in ids]


class BuffersContract:
    """Run against each implementation by ``tests/test_buffers_contract.py``'s ``buffers`` fixture."""

    def test_a_message_id_is_taken_once_ever(self, buffers: Any) -> None:
        first = buffers.append("c1", "api", said("c1", "m1", "m2"), {"channel": "C1"})
        assert (first.added, first.repeated, first.active_tokens, first.active_messages) == (2, 0, 20, 2)
        again = buffers.append("c1", "api", said("c1", "m2", "m3"))
        assert (again.added, again.repeated, again.active_tokens, again.active_messages) == (1, 1, 30, 3)
        sealed = buffers.seal("c1", "full")
        token = buffers.claim(sealed, 60)
        assert token is not None
        buffers.done(sealed, "c0ffee", {"added": 3})
        # Even after its buffer was distilled and its messages dropped.
        after = buffers.append("c1", "api", said("c1", "m1", "m4"))
        assert (after.added, after.repeated, after.active_messages) == (1, 1, 1)
        # Ids are per conversation.
        assert buffers.append("c2", "api", said("c2", "m1")).added == 1
        assert buffers.known("c1") and buffers.known("c2") and not buffers.known("c3")
        assert buffers.source("c1") == ("api", {"channel": "C1"}) and buffers.source("c3") == ("api", {})

    def test_sealing_moves_the_active_messages_and_the_conversation_keeps_filling(self, buffers: Any) -> None:
        assert buffers.seal("c1", "asked") is None  # nothing to seal
        buffers.append("c1", "slack", said("c1", "m1", "m2", tokens=7))
        assert buffers.active() == ["c1"]
        sealed = buffers.seal("c1", "asked")
        assert sealed is not None and buffers.active() == []
        filling = buffers.append("c1", "slack", said("c1", "m3"))
        assert (filling.active_messages, filling.active_tokens) == (1, 10)
        got = buffers.get(sealed)
        assert (got.id, got.conversation, got.reason, got.tokens, got.messages, got.state, got.attempts) == (
            sealed, "c1", "asked", 14, 2, "sealed", 0)
        assert [(m.message_id, m.text, m.author, m.tokens) for m in buffers.messages(sealed)] == [
            ("m1", "text of m1", "ana", 7), ("m2", "text of m2", "ana", 7)]
        # A message is found while a buffer holds it, sealed or active.
        assert buffers.message("c1", "m2").text == "text of m2" and buffers.message("c1", "m3") is not None
        assert buffers.message("c1", "nope") is None and buffers.get("nope") is None

    def test_idle_names_conversations_whose_last_message_is_old_enough(self, buffers: Any) -> None:
        buffers.append("quiet", "api", said("quiet", "m1"))
        buffers.append("busy", "api", said("busy", "m1"))
        assert sorted(buffers.idle(0)) == ["busy", "quiet"]
        assert buffers.idle(3600) == []
        buffers.seal("quiet", "idle")
        assert buffers.idle(0) == ["busy"]

    def test_one_claim_at_a_time_and_a_lapsed_claim_passes_to_the_next(self, buffers: Any) -> None:
        buffers.append("c1", "api", said("c1", "m1"))
        sealed = buffers.seal("c1", "asked")
        assert buffers.due() == [sealed]
        first = buffers.claim(sealed, 0)  # a claim that lapses at once: its worker died
        assert first is not None and buffers.holds(sealed, first)
        assert buffers.due() == [sealed]
        second = buffers.claim(sealed, 3600)
        assert second is not None and second != first
        assert buffers.holds(sealed, second)
        assert not buffers.holds(sealed, first), "a lapsed claim taken by another must not hold the buffer"
        assert buffers.claim(sealed, 3600) is None and buffers.due() == []
        assert buffers.get(sealed).claim == second and buffers.get(sealed).state == "claimed"
        assert buffers.claim("nope", 60) is None and not buffers.holds("nope", second)
        # A token nobody was given holds nothing, whatever it looks like.
        assert not buffers.holds(sealed, "f" * 32) and not buffers.holds(sealed, "0" * 32)

    def test_a_distilled_buffer_drops_its_messages(self, buffers: Any) -> None:
        buffers.append("c1", "api", said("c1", "m1", "m2"))
        sealed = buffers.seal("c1", "asked")
        buffers.append("c1", "api", said("c1", "m3"))
        token = buffers.claim(sealed, 60)
        buffers.done(sealed, "c0ffee", {"added": 1})
        got = buffers.get(sealed)
        assert (got.state, got.commit, got.error, got.claim) == ("done", "c0ffee", None, None)
        assert buffers.messages(sealed) == []
        assert buffers.message("c1", "m1") is None and buffers.message("c1", "m2") is None
        assert buffers.message("c1", "m3") is not None  # the active buffer's are kept
        assert not buffers.holds(sealed, token) and buffers.due() == [] and buffers.claim(sealed, 60) is None
        nothing = buffers.seal("c1", "asked")
        buffers.claim(nothing, 60)
        buffers.done(nothing, None, {})
        assert buffers.get(nothing).commit is None

    def test_a_failed_buffer_waits_and_counts_its_attempts(self, buffers: Any) -> None:
        buffers.append("c1", "api", said("c1", "m1"))
        sealed = buffers.seal("c1", "asked")
        token = buffers.claim(sealed, 60)
        assert buffers.failed(sealed, "BadAnswer: prose", 3600) == 1
        got = buffers.get(sealed)
        assert (got.state, got.attempts, got.error, got.claim) == ("sealed", 1, "BadAnswer: prose", None)
        assert not buffers.holds(sealed, token)
        assert buffers.due() == [] and buffers.claim(sealed, 60) is None  # not before an hour
        assert len(buffers.messages(sealed)) == 1  # never dropped
        buffers.failed(sealed, "again", 0)  # a retry due now
        assert buffers.due() == [sealed] and buffers.get(sealed).attempts == 2
        assert buffers.claim(sealed, 60) is not None

    def test_a_retry_waits_from_the_failure_and_keeps_the_start_of_a_long_error(self, buffers: Any) -> None:
        buffers.append("c1", "api", said("c1", "m1"))
        sealed = buffers.seal("c1", "asked")
        buffers.claim(sealed, 60)
        before = time.time()
        buffers.failed(sealed, "Unavailable: " + "x" * 3000, 600)
        after = time.time()
        got = buffers.get(sealed)
        assert before + 600 <= got.not_before <= after + 600
        assert got.error == ("Unavailable: " + "x" * 3000)[:2000]
        assert buffers.failed("nope", "gone", 60) == 0  # no such buffer: no attempt counted
        assert buffers.stats()["failures"] == 1

    def test_the_newest_twenty_buffers_unless_asked_for_more(self, buffers: Any) -> None:
        for n in range(21):
            buffers.append("c1", "api", said("c1", f"m{n}"))
            buffers.seal("c1", f"buffer {n}")
        assert [b.reason for b in buffers.recent()] == [f"buffer {n}" for n in range(20, 0, -1)]
        assert len(buffers.recent(21)) == 21

    def test_the_counters_and_the_newest_buffers(self, buffers: Any) -> None:
        buffers.append("c1", "api", said("c1", "m1", "m2", masked=1))
        buffers.append("c1", "api", said("c1", "m2"))
        done = buffers.seal("c1", "first")
        buffers.claim(done, 60)
        buffers.done(done, "c0ffee", {})
        buffers.append("c1", "api", said("c1", "m3"))
        failed = buffers.seal("c1", "second")
        buffers.claim(failed, 60)
        buffers.failed(failed, "down", 3600)
        buffers.append("c1", "api", said("c1", "m4"))
        claimed = buffers.seal("c1", "third")
        buffers.claim(claimed, 60)
        buffers.append("c2", "api", said("c2", "m1", "m2"))
        assert buffers.stats() == {"messages": 6, "repeated": 1, "masked": 2, "distilled": 1, "failures": 1,
                                   "buffers_done": 1, "buffers_sealed": 1, "buffers_claimed": 1,
                                   "active_messages": 2}
        assert [b.reason for b in buffers.recent(2)] == ["third", "second"]
        assert [b.id for b in buffers.recent()] == [claimed, failed, done]

    def test_threads_taking_the_same_messages_take_each_once(self, buffers: Any) -> None:
        ids = [f"m{n}" for n in range(40)]
        added: list[int] = []

        def send() -> None:
            added.append(buffers.append("c1", "api", said("c1", *ids)).added)

        threads = [threading.Thread(target=send) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sum(added) == 40 and sorted(added)[-1] >= 1
        sealed = buffers.seal("c1", "asked")
        assert sorted(m.message_id for m in buffers.messages(sealed)) == sorted(ids)

    @pytest.mark.parametrize("workers", [4])
    def test_only_one_worker_claims_a_buffer(self, buffers: Any, workers: int) -> None:
        buffers.append("c1", "api", said("c1", "m1"))
        sealed = buffers.seal("c1", "asked")
        tokens: list[str | None] = []
        threads = [threading.Thread(target=lambda: tokens.append(buffers.claim(sealed, 60))) for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len([t for t in tokens if t is not None]) == 1
