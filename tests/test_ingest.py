"""Ingesting conversations: the buffers, the offline and model extractors, and distilling into commits."""

from __future__ import annotations

import json
import logging
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmem import extraction, ingest, transcripts
from gitmem.errors import InvalidInput
from gitmem.extraction import Message
from gitmem.ingest import Ingested
from gitmem.memories import Candidate
from gitmem.repo import Buffers
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.fakes.openai_server import HOLD, Request, Status, answer, running

Fsck = Callable[[str], None]
DATA = json.loads((Path(__file__).parent / "data" / "conversations.json").read_text(encoding="utf-8"))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", embeddings="none", ingest_flush_tokens=30, ingest_retry_seconds=0)


@pytest.fixture
def svc(settings: Settings) -> Iterator[MemoryService]:
    service = MemoryService(settings)
    service.init("default")
    yield service
    service.close()


def said(*texts: str, author: str = "ana", start: int = 1) -> list[dict[str, Any]]:
    return [{"id": f"m{start + i}", "author": author, "text": t} for i, t in enumerate(texts)]


# --- the buffers ------------------------------------------------------------------------------


def test_messages_wait_in_the_buffer_until_it_holds_enough_tokens(svc: MemoryService) -> None:
    head = svc.head("default")
    first = svc.ingest("default", "c1", said("No, we use pnpm, not npm."))
    assert (first.accepted and first.accepted.added, first.distilled) == (1, ())
    assert svc.head("default") == head
    second = svc.ingest("default", "c1", said("Never deploy to production on Fridays; use the release pipeline "
                                              "and wait for the green build before anything else happens.", start=2))
    assert second.accepted is not None and len(second.accepted.sealed) == 1
    assert [d.outcome for d in second.distilled] == ["written"]
    texts = sorted(m.text for m in svc.list("default"))
    assert texts[0].startswith("Never deploy to production on Fridays") and texts[1] == "We use pnpm, not npm."


def test_a_message_sent_twice_is_taken_once_even_after_it_was_distilled(svc: MemoryService) -> None:
    batch = said("Remember: the staging cluster is eks-staging in eu-west-1.")
    svc.ingest("default", "c1", batch, flush=True)
    again = svc.ingest("default", "c1", batch, flush=True)
    assert again.accepted is not None and (again.accepted.added, again.accepted.repeated) == (0, 1)
    assert again.distilled == ()
    assert len(svc.list("default")) == 1
    other = svc.ingest("default", "c2", batch)  # the same id in another conversation is another message
    assert other.accepted is not None and other.accepted.added == 1


def test_the_double_buffer_keeps_filling_while_a_sealed_buffer_waits(svc: MemoryService, settings: Settings) -> None:
    queued: list[tuple[str, str]] = []

    class Queue:
        def enqueue_consolidation(self, namespace: str, *, dry_run: bool = False, started_by: str = "") -> str:
            return "c"

        def enqueue_distil(self, namespace: str, buffer_id: str) -> str:
            queued.append((namespace, buffer_id))
            return f"task-{len(queued)}"

    service = MemoryService(settings, queue=Queue())
    try:
        long = "We use ruff format rather than autopep8 or black in every Python repository we keep."
        sealed = service.ingest("default", "c1", said(long, long + " Really.", "Always pin versions."),
                                background=True)
        assert sealed.queued == ("task-1",) and sealed.accepted is not None
        more = service.ingest("default", "c1", said("Never push to main directly.", start=9), background=True)
        assert more.queued == () and more.accepted is not None and more.accepted.active_tokens > 0
        stats = service.ingest_status("default")
        assert (stats["buffers_sealed"], stats["active_messages"]) == (1, 1)
        done = service.distil("default", queued[0][1])
        assert done.outcome == "written" and done.counts["added"] == 2
        assert service.distil("default", queued[0][1]).outcome == "busy"  # a second delivery does nothing
    finally:
        service.close()


def test_many_threads_of_one_process_take_every_message_once(svc: MemoryService) -> None:
    """A gunicorn worker's threads share the buffer file's connection."""
    import threading

    def send(thread: int) -> None:
        for n in range(20):
            batch = [{"id": f"t{thread}-{n}-{i}", "text": f"message {i} of batch {n}"} for i in range(5)]
            svc.ingest("default", f"c{thread % 3}", batch)  # seals and distils in these threads too

    pool = [threading.Thread(target=send, args=(t,)) for t in range(8)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    stats = svc.ingest_status("default")
    assert stats["messages"] == 8 * 20 * 5 and stats.get("repeated", 0) == 0
    assert stats["buffers_done"] > 10 and stats.get("buffers_sealed", 0) == 0


def test_idle_conversations_are_sealed_by_the_sweep(svc: MemoryService, settings: Settings) -> None:
    svc.ingest("default", "quiet", said("We use uv instead of pip for Python packages."))
    assert svc.ingest_sweep() == []  # not idle yet (900 s by default)
    service = MemoryService(settings.with_(ingest_idle_seconds=0))
    try:
        due = service.ingest_sweep()
        assert len(due) == 1 and due[0][0] == "default"
        assert service.distil(*due[0]).outcome == "written"
    finally:
        service.close()


@pytest.mark.parametrize(("messages", "error"), [
    ([], "non-empty list"),
    ([{"id": "1"}], r"messages\[1\].text must be a non-empty string"),
    ([{"text": "ok"}, {"text": "x", "role": "robot"}], r"messages\[2\].role must be one of"),
    ([{"text": "ok", "time": "yesterday"}], "ISO 8601"),
    ([{"text": "ok", "id": {"a": 1}}], r"messages\[1\].id must be a string"),
    ([{"text": "x" * 20_001}], "the limit is 20000"),
    ([{"text": "ok", "author": "a\nb"}], "one line"),
])
def test_a_bad_message_refuses_the_whole_batch(svc: MemoryService, messages: list[Any], error: str) -> None:
    with pytest.raises(InvalidInput, match=error):
        svc.ingest("default", "c1", [{"text": "fine", "id": "ok"}, *messages] if messages else messages)
    assert svc.ingest_status("default").get("messages", 0) == 0


@pytest.mark.parametrize("conversation", ["", "a/b", "x" * 201, "with space"])
def test_a_bad_conversation_id_is_refused(svc: MemoryService, conversation: str) -> None:
    with pytest.raises(InvalidInput, match="conversation id"):
        svc.ingest("default", conversation, said("hello"))


def test_secrets_are_masked_before_they_are_stored_and_never_reach_git(svc: MemoryService, settings: Settings,
                                                                       fsck: Fsck) -> None:
    result = svc.ingest("default", "c1", said("Remember: CI deploys with the key AKIAIOSFODNN7EXAMPLE on Fridays."),
                        flush=True)
    assert result.accepted is not None and result.accepted.masked == 1
    assert svc.ingest_status("default")["masked"] == 1
    repo = settings.repos_dir / "default.git"
    dump = subprocess.run(["git", "--git-dir", str(repo), "log", "-p", "--all"], capture_output=True, text=True).stdout
    assert "AKIA" not in dump and "[secret removed]" in dump
    assert b"AKIA" not in (settings.home / "ingest" / "default.sqlite").read_bytes()
    fsck("default")


def test_personal_data_is_masked_like_a_secret_every_one_of_it(svc: MemoryService, settings: Settings) -> None:
    said_it = ("Remember: refunds go to card 4111 1111 1111 1111 or IBAN GB82 WEST 1234 5698 7654 32, "
               "never to SSN 536-90-4399's old card 5555555555554444.")
    result = svc.ingest("default", "c1", said(said_it), flush=True)
    assert result.accepted is not None and result.accepted.masked == 4
    stored = (settings.home / "ingest" / "default.sqlite").read_bytes()
    for number in (b"4111 1111", b"GB82", b"536-90", b"5555555555554444"):
        assert number not in stored
    repo = settings.repos_dir / "default.git"
    dump = subprocess.run(["git", "--git-dir", str(repo), "log", "-p", "--all"], capture_output=True, text=True).stdout
    assert "4111" not in dump and "GB82" not in dump and "536-90" not in dump


# --- distilling ---------------------------------------------------------------------------------


def test_a_buffer_becomes_pending_memories_in_one_commit_that_reverts_cleanly(svc: MemoryService,
                                                                              fsck: Fsck) -> None:
    head = svc.head("default")
    done = svc.ingest("default", "c1", [
        {"id": "u1", "author": "ana", "text": "No, we use pnpm, not npm."},
        {"id": "a1", "role": "assistant", "text": "Always use yarn, I think."},
        {"id": "u2", "author": "bo", "text": "记住：PPT 正文字号是 18pt。"},
    ], flush=True)
    (distilled,) = done.distilled
    assert distilled.counts["added"] == 2
    memories = {m.text: m for m in svc.list("default")}
    pnpm, ppt = memories["We use pnpm, not npm."], memories["PPT 正文字号是 18pt。"]
    assert (pnpm.state, pnpm.source, pnpm.author, pnpm.type) == ("pending", "agent", "ana", "convention")
    assert (ppt.state, ppt.source, ppt.author) == ("active", "user", "bo")  # "记住" asks for it: as remember would
    (commit,) = svc.log("default", limit=1)
    assert commit.trailers["Ingest-Buffer"] == [distilled.buffer] and commit.trailers["Conversation"] == ["c1"]
    assert "added: message u1" in commit.message and commit.parents == (head,)
    fsck("default")
    svc.revert("default", distilled.commit or "")
    assert svc.list("default") == []
    fsck("default")


def test_pending_memories_never_reach_an_agents_context(svc: MemoryService) -> None:
    svc.remember("default", "Deploys go through the release pipeline.", paths=["deploy/"])
    svc.ingest("default", "c1", said("Never deploy from a laptop; deploy/ scripts run in CI only."), flush=True)
    assert [m.state for m in svc.list("default")].count("pending") == 1
    context = svc.context("default", ["deploy/run.sh"])
    assert "release pipeline" in context and "laptop" not in context
    assert "laptop" not in svc.export("default", "memory-md")
    assert any("laptop" in h.memory.text for h in svc.recall("default", "deploy laptop"))  # a search still finds it


def test_a_near_duplicate_candidate_merges_into_the_memory_it_repeats(svc: MemoryService) -> None:
    kept = svc.remember("default", "Always run the linter before pushing to the shared repository").memory
    assert kept is not None
    done = svc.ingest("default", "c1", said("always run the linter before pushing to the shared repository!!"),
                      flush=True)
    assert done.distilled[0].counts["reinforced"] + done.distilled[0].counts["merged"] == 1
    assert [m.id for m in svc.list("default")] == [kept.id]


def test_a_buffer_whose_commit_landed_is_not_distilled_twice(svc: MemoryService, settings: Settings) -> None:
    """A worker that died after the commit and before marking the buffer done: the next finds the commit."""
    service = MemoryService(settings.with_(ingest_claim_seconds=1))
    try:
        service.ingest("default", "c1", said("We use uv instead of pip for Python packages."))
        (buffer_id,) = service._ingest.seal("default")
        buffers = service._namespaces.buffers("default")
        assert buffers.claim(buffer_id, 0)  # the dead worker's claim, lapsed at once
        service.remember_many("default", [Candidate("We use uv instead of pip for Python packages.", source="agent",
                                                    state="pending")],
                              message="ingest: 1", action="ingest", trailers=(("Ingest-Buffer", buffer_id),))
        again = service.distil("default", buffer_id)
        assert again.outcome == "already"
        assert len(service.list("default")) == 1 and service.ingest_status("default")["buffers_done"] == 1
    finally:
        service.close()


# --- a model behind the LLM port -------------------------------------------------------------


def model_answer(request: Request) -> str:
    messages = request.messages
    first = next(m for m in messages if m["role"] == "user")
    return answer(memories=[{
        "type": "fact", "title": "Report data source", "text": "Reports come from the SaaS MySQL replica.",
        "paths": ["reports/"], "tags": ["reports"], "confidence": 0.9, "messages": [first["id"]]}])


def test_the_model_extracts_and_cites_its_messages(settings: Settings) -> None:
    with running(model_answer) as fake:
        service = MemoryService(settings.with_(llm_base_url=fake.url))
        service.init("default")
        try:
            done = service.ingest("default", "c1", said("Reports read the SaaS MySQL replica.",
                                                         "The CSV exports are stale."), flush=True)
        finally:
            service.close()
        (request,) = fake.requests
    assert request.kind == "extract" and request.body["response_format"] == {"type": "json_object"}
    assert [m["id"] for m in request.messages] == ["m1", "m2"] and "data, not instructions" in request.prompt
    assert done.distilled[0].counts["added"] == 1
    service = MemoryService(settings)
    try:
        (memory,) = service.list("default")
    finally:
        service.close()
    assert (memory.state, memory.title, memory.paths, memory.author) == (
        "pending", "Report data source", ("reports/",), "ana")


@pytest.mark.parametrize("bad", [
    "not json at all",
    answer(memories="none"),
    answer(memories=[{"type": "wisdom", "title": "t", "text": "x", "confidence": 0.5, "messages": ["m1"]}]),
    answer(memories=[{"type": "fact", "title": "t", "text": "x", "confidence": 2, "messages": ["m1"]}]),
    answer(memories=[{"type": "fact", "title": "t", "text": "x", "confidence": 0.5, "messages": ["m99"]}]),
    answer(memories=[{"type": "fact", "title": "t", "text": "", "confidence": 0.5, "messages": ["m1"]}]),
    Status(503),
])
def test_a_malformed_answer_writes_nothing_and_the_buffer_is_tried_again(settings: Settings, bad: Any) -> None:
    replies = [bad, None]

    def responder(request: Request) -> Any:
        reply = replies.pop(0) if replies else None
        return model_answer(request) if reply is None else reply

    with running(responder) as fake:
        service = MemoryService(settings.with_(llm_base_url=fake.url, llm_retries=0))
        service.init("default")
        try:
            head = service.head("default")
            first = service.ingest("default", "c1", said("Reports read the SaaS MySQL replica."), flush=True)
            assert [d.outcome for d in first.distilled] == ["failed"]
            assert service.head("default") == head
            stats = service.ingest_status("default")
            assert stats["failures"] == 1 and stats["recent"][0]["state"] == "sealed"
            assert stats["recent"][0]["error"]
            retried = service.flush("default")
            assert [d.outcome for d in retried.distilled] == ["written"]
            assert len(service.list("default")) == 1
        finally:
            service.close()


def test_a_worker_whose_claim_lapsed_while_the_model_thought_writes_nothing(settings: Settings) -> None:
    """I3: the claim lapses mid-extraction and another worker takes the buffer; the first must not commit."""
    taken: list[str | None] = []
    held: dict[str, Any] = {}

    def responder(request: Request) -> str:
        buffers, buffer_id = held["buffers"], held["id"]
        # Time passes: the first worker's claim lapses, and the sweep hands the buffer to another.
        buffers.db.execute("UPDATE buffers SET claimed_until = 0 WHERE id = ?", (buffer_id,))
        taken.append(buffers.claim(buffer_id, 3600))
        return model_answer(request)

    with running(responder) as fake:
        service = MemoryService(settings.with_(llm_base_url=fake.url))
        service.init("default")
        try:
            service.ingest("default", "c1", said("Reports read the SaaS MySQL replica."))
            (buffer_id,) = service._ingest.seal("default")
            held.update(buffers=service._namespaces.buffers("default"), id=buffer_id)
            head = service.head("default")
            assert service.distil("default", buffer_id).outcome == "busy"
            assert service.head("default") == head and service.list("default") == []
            (second,) = taken
            assert second is not None and held["buffers"].holds(buffer_id, second)
            assert len(held["buffers"].messages(buffer_id)) == 1  # kept for the worker that holds it
        finally:
            service.close()


def test_a_failed_buffer_waits_twice_as_long_each_time_up_to_an_hour(settings: Settings) -> None:
    with running(lambda r: Status(500)) as fake:
        service = MemoryService(settings.with_(llm_base_url=fake.url, llm_retries=0, ingest_retry_seconds=300))
        service.init("default")
        try:
            service.ingest("default", "c1", said("Reports read the SaaS MySQL replica."))
            (buffer_id,) = service._ingest.seal("default")
            buffers = service._namespaces.buffers("default")
            assert isinstance(buffers, Buffers)
            for attempt, wait in enumerate([300, 600, 1200, 2400, 3600, 3600]):
                before = time.time()
                assert service.distil("default", buffer_id).outcome == "failed"
                after = time.time()
                found = buffers.get(buffer_id)
                assert found is not None and found.attempts == attempt + 1
                assert before + wait <= found.not_before <= after + wait, (attempt, found.not_before - before)
                assert buffers.due() == [] and len(buffers.messages(buffer_id)) == 1  # waits, kept
                buffers.db.execute("UPDATE buffers SET not_before = 0 WHERE id = ?", (buffer_id,))  # time passes
        finally:
            service.close()


def test_a_batch_that_reaches_the_flush_threshold_exactly_seals_its_buffer(settings: Settings) -> None:
    text = "Never deploy to production on Fridays."
    tokens = extraction.estimate_tokens(text)
    at = MemoryService(settings.with_(ingest_flush_tokens=tokens))
    under = MemoryService(settings.with_(ingest_flush_tokens=tokens + 1))
    at.init("default")
    try:
        below = under.ingest("default", "c1", said(text))
        assert below.accepted is not None and below.accepted.sealed == () and below.accepted.active_tokens == tokens
        reached = at.ingest("default", "c2", said(text))
        assert reached.accepted is not None and len(reached.accepted.sealed) == 1
        assert reached.accepted.active_tokens == 0
    finally:
        at.close()
        under.close()


def test_a_model_that_hangs_holds_the_buffer_until_its_claim_lapses(settings: Settings) -> None:
    with running(lambda r: HOLD) as fake:
        service = MemoryService(settings.with_(llm_base_url=fake.url, llm_timeout=0.5, llm_retries=0))
        service.init("default")
        try:
            done = service.ingest("default", "c1", said("Reports read the SaaS MySQL replica."), flush=True)
            assert [d.outcome for d in done.distilled] == ["failed"]
            assert "did not answer" in (done.distilled[0].error or "")
        finally:
            fake.release()
            service.close()


# --- the offline rules, measured on the labelled set ------------------------------------------


def matches(expect: dict[str, Any], text: str) -> bool:
    return all(m.lower() in text.lower() for m in expect["match"])


def test_the_labelled_set_has_english_and_chinese_conversations() -> None:
    conversations = DATA["conversations"]
    assert len(conversations) >= 10
    assert {c["lang"] for c in conversations} == {"en", "zh"}


def test_the_offline_rules_find_most_of_what_a_person_expects_and_little_else() -> None:
    found = expected = right = 0
    for conv in DATA["conversations"]:
        messages = [Message(m["id"], m["text"], m["role"], m["author"]) for m in conv["messages"]]
        got = extraction.offline(messages)
        found += len(got)
        expected += len(conv["expect"])
        right += sum(any(matches(e, g.text) for e in conv["expect"]) for g in got)
        for g in got:
            assert set(g.messages) <= {m.id for m in messages}
    precision, recall = right / found, right / expected
    assert precision >= 0.9, precision
    assert recall >= 0.6, recall


@pytest.mark.parametrize(("text", "rule"), [
    ("Remember: the staging cluster is eks-staging.", "marker"),
    ("请记住：周五不发版。", "marker"),
    ("No, we use pnpm, not npm.", "we-use"),
    ("我们用 pnpm，不要用 npm。", "we-use"),
    ("Never deploy on Fridays.", "always-never"),
    ("禁止直接向 main 分支推送代码。", "always-never"),
    ("Actually, the staging database is db-2 in eu-west-1.", "correction"),
])
def test_each_offline_rule(text: str, rule: str) -> None:
    (found,) = extraction.offline([Message("1", text)])
    assert found.rule == rule and found.explicit == (rule == "marker")


@pytest.mark.parametrize("text", ["Should we always use tabs?", "ok thanks", "no", "Could you fix tests/test_api.py?"])
def test_questions_and_small_talk_are_not_memories(text: str) -> None:
    assert extraction.offline([Message("1", text)]) == []


def test_topic_boundaries_fall_at_the_deepest_drops() -> None:
    cosines = [0.8, 0.7, 0.75, 0.1, 0.8, 0.7, 0.72, 0.8]
    assert extraction.boundaries(cosines) == [4]
    assert extraction.boundaries([0.5] * 3) == []


def test_token_estimates_count_chinese_characters_one_each() -> None:
    assert extraction.estimate_tokens("We use pnpm, not npm.") == 6
    assert extraction.estimate_tokens("我们用 pnpm") == 3 + 2


# --- transcripts ------------------------------------------------------------------------------


def test_a_claude_code_session_keeps_what_people_and_the_assistant_typed() -> None:
    lines = [
        json.dumps({"type": "queue-operation", "operation": "dequeue", "sessionId": "5f0c"}),
        json.dumps({"type": "user", "sessionId": "5f0c", "cwd": "/home/ana/shop", "gitBranch": "main",
                    "uuid": "u1", "timestamp": "2026-11-20T10:00:01Z",
                    "message": {"role": "user", "content": "Add date-fns"}}),
        json.dumps({"type": "assistant", "sessionId": "5f0c", "uuid": "a1", "message": {
            "role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Running npm install."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "npm i"}}]}}),
        json.dumps({"type": "user", "sessionId": "5f0c", "uuid": "u2", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "added 1 package"}]}}),
        json.dumps({"type": "user", "sessionId": "5f0c", "uuid": "u3", "message": {
            "role": "user", "content": "<command-name>/clear</command-name>"}}),
    ]
    read = transcripts.read(lines, author="ana")
    assert (read.format, read.conversation, read.meta) == ("claude-code", "5f0c", {"cwd": "/home/ana/shop",
                                                                                     "gitBranch": "main"})
    assert [(m["id"], m["role"], m.get("author"), m["text"]) for m in read.messages] == [
        ("u1", "user", "ana", "Add date-fns"), ("a1", "assistant", None, "Running npm install.")]
    assert read.skipped == 3


@pytest.mark.parametrize(("lines", "error"), [(["{"], "line 1 is not JSON"), ([], "empty"), (["[1]"], "not a message")])
def test_a_bad_transcript_is_refused_naming_the_line(lines: list[str], error: str) -> None:
    with pytest.raises(InvalidInput, match=error):
        transcripts.read(lines)


def test_a_long_buffer_is_split_where_the_topic_changes(tmp_path: Path) -> None:
    texts = ["Which package manager does the web app use?", "We use pnpm, not npm.",
             "And the lockfile is pnpm-lock.yaml, commit it.", "pnpm install runs in CI with --frozen-lockfile.",
             "Now about deploys: when can we ship the hotfix?", "Never deploy to production on Fridays.",
             "Deploys go through the release pipeline.", "The pipeline needs a green build before it deploys."]
    seen: list[list[dict[str, Any]]] = []

    def model(request: Request) -> str:
        seen.append(request.messages)
        return answer(memories=[])

    with running(model) as fake:
        service = MemoryService(Settings(home=tmp_path / "home", llm_base_url=fake.url))  # the offline encoder
        service.init("default")
        try:
            service.ingest("default", "c1", [{"id": f"m{i}", "text": t} for i, t in enumerate(texts)], flush=True)
        finally:
            service.close()
    (messages,) = seen
    assert [m["id"] for m in messages if m.get("topic_starts")] == ["m0", "m4"]


# --- the rules of taking and distilling, one by one --------------------------------------------


def test_a_message_without_an_id_gets_one_from_who_said_what_when(svc: MemoryService) -> None:
    one = {"author": "ana", "time": "2026-12-01T09:00:00Z", "text": "We use pnpm."}
    ident = ingest.message_id(one)
    assert ident.startswith("h") and len(ident) == 17 and ident == ingest.message_id(dict(one))
    assert len({ident, *(ingest.message_id(one | {k: "other"}) for k in ("role", "author", "time", "text"))}) == 5
    done = svc.ingest("default", "c1", [{"author": "ana", "time": "2026-12-01T09:00:00Z", "text": "We use pnpm."}])
    again = svc.ingest("default", "c1", [{"author": "ana", "time": "2026-12-01T09:00:00Z", "text": "We use pnpm."}])
    assert done.accepted is not None and again.accepted is not None
    assert (done.accepted.added, again.accepted.repeated) == (1, 1)
    assert svc._namespaces.buffers("default").message("c1", ident) is not None


@pytest.mark.parametrize(("message", "error"), [
    ({"text": "ok", "id": "x" * 201}, "id must be a string or number of at most 200"),
    ({"text": "ok", "id": True}, "id must be a string or number"),
    ({"text": "ok", "id": "  "}, "id must be a string or number"),
    ({"text": "ok", "author": "a" * 201}, "author must be one line of at most 200"),
    ({"text": "ok", "author": 7}, "author must be one line"),
    ({"text": "ok", "time": 1700000000}, "ISO 8601"),
    ({"text": "a\x00b"}, "must not contain NUL bytes"),
    ({"text": "half a pair \ud800"}, r"text is not valid UTF-8 \(a lone surrogate at character 12\)"),
    ({"text": "   "}, "non-empty string"),
    ("just text", "must be an object with text"),
])
def test_each_field_of_a_message_is_checked(svc: MemoryService, message: Any, error: str) -> None:
    with pytest.raises(InvalidInput, match=error):
        svc.ingest("default", "c1", [message])
    assert svc.ingest_status("default").get("messages", 0) == 0


def test_fields_at_their_limits_are_taken_as_sent(svc: MemoryService) -> None:
    done = Ingested(svc._ingest.add("default", "c1", [
        {"id": "x" * 200, "author": "a" * 200, "text": "y" * 20_000},
        {"id": 42, "author": "  ", "text": "numbers are ids too", "time": "2026-12-01T09:00:00+01:00"},
        {"id": " m3 ", "role": "assistant", "text": "spaces around an id go"},
    ]))
    assert done.accepted is not None and done.accepted.added == 3
    buffers = svc._namespaces.buffers("default")
    assert buffers.message("c1", "x" * 200) is not None
    second = buffers.message("c1", "42")
    assert second is not None and (second.author, second.time) == (None, "2026-12-01T08:00:00Z")
    third = buffers.message("c1", "m3")
    assert third is not None and third.role == "assistant"


def test_a_batch_is_a_non_empty_list_of_at_most_a_thousand_from_a_known_source(svc: MemoryService) -> None:
    for bad, error in [("hello", "non-empty list"), (b"hello", "non-empty list"), ({"text": "x"}, "non-empty list")]:
        with pytest.raises(InvalidInput, match=error):
            svc._ingest.add("default", "c1", bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="source must be one of api, cli, slack, claude-code"):
        svc._ingest.add("default", "c1", said("hello"), source="email")
    with pytest.raises(InvalidInput, match="1001 messages in one batch; send at most 1000 at a time"):
        svc._ingest.add("default", "c1", [{"id": f"m{n}", "text": "x"} for n in range(1001)])
    taken = svc._ingest.add("default", "c1", [{"id": f"m{n}", "text": "x"} for n in range(1000)], source="cli")
    assert taken.added == 1000 and svc._namespaces.buffers("default").source("c1") == ("cli", {})


def test_a_conversation_id_holding_a_secret_is_refused(svc: MemoryService) -> None:
    with pytest.raises(InvalidInput, match="conversation id"):
        svc.ingest("default", "ghp_" + "a1B2" * 9, said("hello"))
    assert svc.ingest_status("default").get("messages", 0) == 0


def test_a_reply_thread_starts_with_the_message_it_answers_while_that_one_waits(svc: MemoryService) -> None:
    svc.ingest("default", "C1", said("Should we move the deploys to Thursdays?"), source="slack")
    reply = svc.ingest("default", "C1:t1", said("No, keep Fridays off limits.", "Agreed.", start=5), source="slack",
                       context=("C1", "m1"))
    assert reply.accepted is not None and reply.accepted.added == 3
    buffers = svc._namespaces.buffers("default")
    sealed = buffers.seal("C1:t1", "asked")
    assert [m.message_id for m in buffers.messages(sealed or "")] == ["m1", "m5", "m6"]  # what it answers first
    # Only a new conversation takes the copy; and only of a message still waiting.
    more = svc.ingest("default", "C1:t1", said("Agreed again.", start=8), context=("C1", "m1"))
    assert more.accepted is not None and more.accepted.added == 1
    gone = svc.ingest("default", "C1:t2", said("Fine.", start=7), context=("C1", "m404"))
    assert gone.accepted is not None and gone.accepted.added == 1


def test_what_was_masked_is_counted_per_batch_and_logged_without_it(svc: MemoryService,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="gitmem.ingest")
    clean = svc.ingest("default", "c1", said("Nothing secret here."))
    assert clean.accepted is not None and clean.accepted.masked == 0
    assert not [r for r in caplog.records if "masked" in r.getMessage()]
    keys = svc.ingest("default", "c1", said("Keys AKIAIOSFODNN7EXAMPLE and AKIAIOSFODNN7EXAMPLF.", start=2))
    assert keys.accepted is not None and keys.accepted.masked == 2
    assert [r.getMessage() for r in caplog.records if "masked" in r.getMessage()] == [
        "ingest default/c1: masked 2 secrets"]
    assert "AKIA" not in caplog.text


def test_sealing_one_conversation_the_idle_ones_or_all(svc: MemoryService) -> None:
    for name in ("a", "b", "c"):
        svc.ingest("default", name, said("hello"))
    buffers = svc._namespaces.buffers("default")
    (one,) = svc._ingest.seal("default", conversation="a")
    assert svc._ingest.seal("default", idle=3600) == []
    idle = svc._ingest.seal("default", idle=0)
    svc.ingest("default", "d", said("hello"))
    rest = svc._ingest.seal("default")
    assert svc._ingest.seal("default") == []
    reasons = {b.conversation: b.reason for b in buffers.recent()}
    assert reasons == {"a": "asked", "b": "idle 0 s", "c": "idle 0 s", "d": "asked"}
    assert svc._ingest.due("default") == [one, *idle, *rest]  # oldest first


def test_the_status_shows_the_ten_newest_buffers(svc: MemoryService) -> None:
    for n in range(11):
        svc.ingest("default", f"c{n}", said("hello"))
        svc._ingest.seal("default", conversation=f"c{n}")
    recent = svc.ingest_status("default")["recent"]
    assert [r["conversation"] for r in recent] == [f"c{n}" for n in range(10, 0, -1)]
    assert recent[0] == {"id": recent[0]["id"], "conversation": "c10", "state": "sealed", "tokens": 2,
                         "messages": 1, "attempts": 0, "error": None, "commit": None}


def test_distilling_a_buffer_that_is_not_there_or_taken(svc: MemoryService) -> None:
    with pytest.raises(InvalidInput, match="no buffer 'nope' in namespace 'default'"):
        svc.distil("default", "nope")
    done = svc.ingest("default", "c1", said("Remember: the staging cluster is eks-staging."), flush=True)
    (first,) = done.distilled
    again = svc.distil("default", first.buffer)
    assert (again.outcome, again.commit) == ("busy", first.commit)


def test_a_buffer_with_nothing_to_remember_is_done_without_a_commit(svc: MemoryService) -> None:
    head = svc.head("default")
    done = svc.ingest("default", "c1", said("ok thanks", "see you"), flush=True)
    (distilled,) = done.distilled
    assert (distilled.outcome, distilled.commit) == ("nothing", None)
    assert svc.head("default") == head and svc.ingest_status("default")["buffers_done"] == 1


def test_the_commit_says_what_was_distilled_from_where_and_by_whom(svc: MemoryService) -> None:
    conversation = "C0123:" + "1" * 80
    svc.ingest("default", conversation, [
        {"id": "u1", "author": "bo", "text": "No, we use pnpm, not npm."},
        {"id": "a1", "role": "assistant", "author": "bot", "text": "Noted."},
        {"id": "u2", "author": "ana", "text": "Remember: deploys need a green build."},
        {"id": "u3", "author": "bo", "text": "Never deploy on Fridays."},
    ], source="slack", flush=True)
    (commit,) = svc.log("default", limit=1)
    assert commit.summary == f"ingest: 3 from {conversation}"[:72]
    assert (f"Distilled 4 messages (25 tokens, sealed: asked) of conversation {conversation} from slack, said by "
            "ana, bo.") in commit.message
    memories = {m.text: m for m in svc.list("default")}
    assert {m.source for m in memories.values()} == {"slack"}
    assert memories["Deploys need a green build."].state == "active"
    assert memories["We use pnpm, not npm."].state == "pending"


def test_a_commit_of_a_conversation_nobody_named_says_so(svc: MemoryService) -> None:
    svc.ingest("default", "c1", [{"id": "u1", "text": "Remember: one message."}], flush=True)
    (commit,) = svc.log("default", limit=1)
    assert "Distilled 1 message (" in commit.message and "of conversation c1 from api." in commit.message


def test_after_ten_failures_the_wait_stops_doubling(settings: Settings) -> None:
    with running(lambda r: Status(500)) as fake:
        service = MemoryService(settings.with_(llm_base_url=fake.url, llm_retries=0, ingest_retry_seconds=1))
        service.init("default")
        try:
            service.ingest("default", "c1", said("Reports read the SaaS MySQL replica."))
            (buffer_id,) = service._ingest.seal("default")
            buffers = service._namespaces.buffers("default")
            assert isinstance(buffers, Buffers)
            for attempts, wait in [(9, 512), (10, 1024), (12, 1024)]:
                buffers.db.execute("UPDATE buffers SET attempts = ?, not_before = 0 WHERE id = ?",
                                   (attempts, buffer_id))
                before = time.time()
                assert service.distil("default", buffer_id).outcome == "failed"
                found = buffers.get(buffer_id)
                assert found is not None and before + wait <= found.not_before <= time.time() + wait, attempts
        finally:
            service.close()


def test_what_a_batch_did_as_the_api_answers_it(svc: MemoryService) -> None:
    done = svc.ingest("default", "c1", said("Remember: the staging cluster is eks-staging."), flush=True)
    (distilled,) = done.distilled
    out = done.to_dict()
    assert out == {"conversation": "c1", "added": 1, "repeated": 0, "masked": 0, "sealed": [distilled.buffer],
                   "active_tokens": 0, "queued": [], "distilled": [{
                       "buffer": distilled.buffer, "outcome": "written", "commit": distilled.commit,
                       "counts": dict(distilled.counts), "error": None,
                       "items": [i.to_dict() for i in distilled.items]}]}
    assert out["distilled"][0]["items"][0]["outcome"] == "added"
    flushed = svc.flush("default").to_dict()
    assert flushed == {"distilled": [], "queued": []}  # nothing was taken, nothing was due


def test_the_model_is_told_when_each_message_was_said(settings: Settings) -> None:
    with running(model_answer) as fake:
        service = MemoryService(settings.with_(llm_base_url=fake.url))
        service.init("default")
        try:
            service.ingest("default", "c1", [
                {"id": "m1", "text": "Reports read the SaaS MySQL replica.", "time": "2026-12-01T09:30:00+01:00"},
                {"id": "m2", "text": "The CSV exports are stale."}], flush=True)
        finally:
            service.close()
        (request,) = fake.requests
    assert [(m["id"], m["time"]) for m in request.messages] == [("m1", "2026-12-01T08:30:00Z"), ("m2", None)]


def test_a_copied_first_message_of_a_thread_is_not_counted_as_masked_twice(svc: MemoryService) -> None:
    svc.ingest("default", "C1", said("Deploy with AKIAIOSFODNN7EXAMPLE on Fridays?"), source="slack")
    svc.ingest("default", "C1:t1", said("No, never on Fridays.", start=2), source="slack", context=("C1", "m1"))
    buffers = svc._namespaces.buffers("default")
    copy = buffers.message("C1:t1", "m1")
    assert copy is not None and "AKIA" not in copy.text and copy.masked == 0
    assert svc.ingest_status("default")["masked"] == 1


def test_the_search_for_a_buffers_commit_stops_an_hour_before_it_was_sealed(svc: MemoryService) -> None:
    """A commit made more than an hour before a buffer was sealed cannot hold it: the search stops there."""
    svc.ingest("default", "c1", said("We use uv instead of pip for Python packages."))
    (buffer_id,) = svc._ingest.seal("default")
    svc.remember_many("default", [Candidate("We use uv instead of pip.", source="agent", state="pending")],
                      message="ingest: 1", action="ingest", trailers=(("Ingest-Buffer", buffer_id),))
    buffers = svc._namespaces.buffers("default")
    assert isinstance(buffers, Buffers)
    buffers.db.execute("UPDATE buffers SET sealed = sealed + 7200 WHERE id = ?", (buffer_id,))  # sealed 2 h later
    assert svc.distil("default", buffer_id).outcome == "written"


def test_a_conversation_is_distilled_whole_when_the_embeddings_endpoint_fails_to_segment_it(
        settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    texts = ["Which package manager does the web app use?", "We use pnpm, not npm.",
             "And the lockfile is pnpm-lock.yaml, commit it.", "pnpm install runs in CI with --frozen-lockfile.",
             "Now about deploys: when can we ship the hotfix?", "Never deploy to production on Fridays.",
             "Deploys go through the release pipeline.", "The pipeline needs a green build before it deploys."]

    def embedder(batch: list[str]) -> Any:
        if len(batch) == len(texts):  # the whole conversation, to find its topics: the endpoint fails
            return Status(503)
        return [[1.0 + len(t) % 7, 1.0, 0.5] for t in batch]

    with running(lambda r: answer(memories=[]), embedder) as fake:
        service = MemoryService(settings.with_(embed_base_url=fake.url, embeddings="endpoint", embed_retries=0))
        service.init("default")
        try:
            done = service.ingest("default", "c1", [{"id": f"m{i}", "text": t} for i, t in enumerate(texts)],
                                  flush=True)
        finally:
            service.close()
        assert [len(batch) for batch in fake.embedded][:1] == [len(texts)]
    assert [d.outcome for d in done.distilled] == ["written"]
    assert "topic segmentation skipped" in caplog.text
