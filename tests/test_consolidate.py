"""Consolidation: clusters without chaining, decisions from a fake LLM, commits on a review branch."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from gitmem import clustering, concepts, notify
from gitmem.concepts import Memory, new_id
from gitmem.endpoints import OpenAICompatible
from gitmem.errors import NamespaceNotFound
from gitmem.repo import MAIN, AlreadyRunning, Change, RunState
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.similarity import token_set
from tests.conftest import namespace_of
from tests.fakes.openai_server import HOLD, FakeOpenAI, Request, answer, running

DATA = Path(__file__).resolve().parent / "data" / "cursorrules.jsonl"  # tests/data/README.md


def plant(svc: MemoryService, text: str, *, days: float = 0, namespace: str = "default", **fields: Any) -> Memory:
    """Write a memory straight to main, with whatever age and usage a test needs."""
    at = concepts.now() - timedelta(days=days)
    memory_id = new_id()
    title = concepts.title_from(text)
    memory = Memory(id=memory_id, type=fields.pop("type", "convention"), text=text, title=title,
                    created=at, updated=at, source=fields.pop("source", "agent"), **fields)
    memory = memory.replace(path=concepts.file_path(memory.type, f"{concepts.slugify(title)}-{memory_id}"))
    ns = namespace_of(svc, namespace)
    ns.store.transact(lambda head: Change({memory.path: concepts.render(memory)}, f"remember: {title}",
                                          "remember", (memory_id,), memory.source, None))
    ns.synced()
    return memory


def refs(svc: MemoryService) -> dict[str, str]:
    repo = namespace_of(svc, "default").store.repo
    return {name: str(repo.references[name].target) for name in repo.references}


def texts(svc: MemoryService, state: str = "active") -> list[str]:
    return sorted(m.text for m in svc.list("default", state=state, limit=1000))


@pytest.fixture
def llm_server() -> Iterator[Callable[[Callable[[Request], Any]], tuple[FakeOpenAI, OpenAICompatible]]]:
    """Start a fake OpenAI server with a responder; returns it with a client pointed at it."""
    started: list[Any] = []

    def start(responder: Callable[[Request], Any], **kw: Any) -> tuple[FakeOpenAI, OpenAICompatible]:
        context = running(responder)
        fake = context.__enter__()
        started.append(context)
        options = {"timeout": 5.0, "retries": 0} | kw
        return fake, OpenAICompatible(fake.url, "fake", None, **options)

    yield start
    for context in started:
        context.__exit__(None, None, None)


def longest(request: Request) -> str:
    """A model that merges every cluster into its longest member and keeps judged memories."""
    if request.kind == "merge":
        return answer(merged=max((m["text"] for m in request.memories), key=len), reason="one topic")
    if request.kind == "pair":
        return answer(action="ignore", memory=None, reason="different")
    return answer(verdict="keep", reason="keep")


# --- clustering ------------------------------------------------------------------------------------


def corpus(n: int, seed: int = 7) -> list[frozenset[str]]:
    """Statements from a small vocabulary with many near-duplicates and shared words."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(300)] + ["use", "the", "for", "and", "with", "never", "always"]
    bases = [" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))) for _ in range(n // 4)]
    out = []
    for i in range(n):
        parts = rng.choice(bases).split()
        for _ in range(rng.randint(0, 3)):
            parts[rng.randrange(len(parts))] = rng.choice(words)
        out.append(token_set(" ".join(parts) if i % 9 else ""))  # some empty sets too
    return out


def test_indexed_search_finds_exactly_the_pairs_and_clusters_of_all_pairs() -> None:
    sets = corpus(800)
    fast = clustering.similar_pairs(sets, 0.3)
    slow = clustering.all_pairs(sets, 0.3)
    assert sorted(fast) == sorted(slow)
    assert len(slow) > 100
    assert clustering.find_clusters(sets, 0.3) == clustering.find_clusters(sets, 0.3, baseline=True)


def test_real_statements_cluster_like_all_pairs_without_a_giant_component() -> None:
    lines = DATA.read_text(encoding="utf-8").splitlines()
    sets = [token_set(json.loads(line)["text"]) for line in random.Random(3).sample(lines, 700)]
    clusters = clustering.find_clusters(sets, 0.3)
    assert clusters == clustering.find_clusters(sets, 0.3, baseline=True)
    assert clusters and max(len(c) for c in clusters) <= 8
    for cluster in clusters:  # every member is close to every other: no chaining
        for a in cluster:
            for b in cluster:
                if a < b:
                    assert 2 * len(sets[a] & sets[b]) / (len(sets[a]) + len(sets[b])) >= 0.3


def test_chains_of_pairwise_similar_statements_are_not_merged_into_one_cluster() -> None:
    a = token_set("alpha beta gamma delta")
    b = token_set("gamma delta epsilon zeta")
    c = token_set("epsilon zeta eta theta")
    assert clustering.find_clusters([a, b, c], 0.3) == [[0, 1]]  # b joins a, c stays out


def test_clusters_hold_at_most_eight_members() -> None:
    sets = [token_set(f"use strict typescript mode everywhere {i}") for i in range(20)]
    clusters = clustering.find_clusters(sets, 0.3)
    assert sorted(len(c) for c in clusters) == [4, 8, 8]


# --- runs ------------------------------------------------------------------------------------------


def test_dry_run_plans_and_writes_nothing(svc: MemoryService) -> None:
    plant(svc, "Use descriptive variable and method names.")
    plant(svc, "Use descriptive variable and method names (e.g., IsUserSignedIn).")
    before = refs(svc)
    result = svc.consolidate("default", dry_run=True)
    assert refs(svc) == before
    assert result.review is None and result.dry_run
    plan = result.to_dict()["plan"]
    assert len(plan["clusters"]) == 1
    assert {m["text"] for m in plan["clusters"][0]["members"]} >= {"Use descriptive variable and method names."}
    assert "nothing written" in result.summary


def test_a_cluster_is_merged_on_a_branch_and_reaches_main_when_approved(
        svc: MemoryService, llm_server: Any, events: list[dict[str, Any]], fsck: Callable[[str], None]) -> None:
    a = plant(svc, "Run the unit tests before every commit.", tags=("testing",), paths=("tests/",),
              access_count=2, potency=0.5)
    b = plant(svc, "Run unit tests with pytest before you commit.", tags=("pytest",), access_count=3,
              tenured=True, potency=0.9, days=1)
    c = plant(svc, "Before a commit, run the unit tests and the linter.", paths=("src/",), days=2)
    other = plant(svc, "Deploy with docker compose on the staging box.")
    merged_text = "Before every commit run the unit tests with pytest, and the linter."
    fake, llm = llm_server(lambda r: answer(merged=merged_text, reason="all about testing before commits"))
    main_before = namespace_of(svc, "default").store.head_id()

    result = svc.consolidate("default", llm=llm)

    assert result.summary == "consolidated 3 memories into 1, review #1"
    assert namespace_of(svc, "default").store.head_id() == main_before  # nothing on main yet
    assert fake.kinds() == ["merge"]
    review = svc.reviews.get("default", 1)
    assert review.status == "open" and review.kind == "consolidation" and review.base == main_before
    assert review.branch.startswith("refs/heads/consolidate/default/")
    [commit] = svc.reviews.diff("default", 1)
    assert "all about testing before commits" in commit.reason
    assert sorted(f.status for f in commit.files) == ["added", "deleted", "deleted", "deleted"]
    assert events[-1]["event"] == "review.opened"
    assert events[-1]["summary"] == "consolidated 3 memories into 1, review #1"
    assert events[-1]["merges"] == [{"before": [c.text, b.text, a.text], "after": merged_text}]  # oldest first

    svc.reviews.approve("default", 1, actor="alice")

    active = svc.list("default", state="active")
    assert sorted(m.text for m in active) == sorted([merged_text, other.text])
    new = next(m for m in active if m.text == merged_text)
    assert set(new.supersedes) == {a.id, b.id, c.id}
    assert set(new.tags) == {"testing", "pytest"} and set(new.paths) == {"tests/", "src/"}
    assert new.tenured and new.access_count == 5
    assert new.potency >= b.potency_at(concepts.now()) - 0.001  # the highest potency
    assert new.source == "consolidation"
    assert svc.recall("default", "unit tests before commit", record=False)[0].memory.id == new.id
    assert namespace_of(svc, "default").store.info(namespace_of(svc, "default").store.head()).action == "consolidate"
    fsck("default")


def test_a_vetoed_cluster_changes_nothing(svc: MemoryService, llm_server: Any) -> None:
    plant(svc, "Use React Query for server state.")
    plant(svc, "Use Zustand for client state, React Query for server state.")
    fake, llm = llm_server(lambda r: answer(merged=None, reason="these are not one topic"))
    before = refs(svc)
    result = svc.consolidate("default", llm=llm)
    assert result.review is None
    assert result.summary == "nothing to consolidate"
    assert result.to_dict()["counts"]["vetoed"] == 1
    assert "not one topic" in result.decisions[0].reason
    assert {k: v for k, v in refs(svc).items() if k != "refs/gitmem/reviews"} == before


def test_a_malformed_answer_is_a_veto_and_never_written(svc: MemoryService, llm_server: Any) -> None:
    plant(svc, "Use React Query for server state.")
    plant(svc, "Use React Query for all server state.")
    _, llm = llm_server(lambda r: "I merged them: Use React Query for server state.")
    result = svc.consolidate("default", llm=llm)
    # Close in meaning, so asked as a pair (update/delete/ignore) or a cluster (merge/veto): either
    # way an answer that does not parse writes nothing.
    assert result.review is None and result.count("veto", "ignore") == 1
    assert "did not parse" in result.decisions[0].reason


def test_a_conflict_is_resolved_towards_the_users_statement(
        svc: MemoryService, llm_server: Any, fsck: Callable[[str], None]) -> None:
    user = svc.remember("default", "Indent with tabs.", type="preference", source="user").memory
    assert user is not None
    spaces = plant(svc, "Indent with 4 spaces.", days=-1)
    never_tabs = plant(svc, "Indent Python with 4 spaces, never tabs.", days=-2)

    def respond(request: Request) -> str:
        users = [m for m in request.memories if m["source"] == "user"]
        return answer(merged=users[0]["text"], reason="the user's statement wins the conflict")

    fake, llm = llm_server(respond)
    user_file = namespace_of(svc, "default").store.read(user.path)
    result = svc.consolidate("default", llm=llm)
    assert {m["source"] for m in fake.requests[0].memories} == {"user", "agent"}
    assert result.summary == "consolidated 3 memories into 1, review #1"
    svc.reviews.approve("default", 1, actor="bob")
    assert texts(svc) == ["Indent with tabs."]
    assert namespace_of(svc, "default").store.read(user.path) == user_file  # the user's memory is untouched
    assert {spaces.id, never_tabs.id}.isdisjoint(m.id for m in svc.list("default", limit=100))
    fsck("default")


def test_user_statements_alone_are_never_merged(svc: MemoryService, llm_server: Any) -> None:
    svc.remember("default", "Indent with tabs.", source="user")
    svc.remember("default", "Indent with tabs in Go.", source="user")
    fake, llm = llm_server(longest)
    result = svc.consolidate("default", llm=llm)
    assert result.plan.clusters == () and fake.requests == []


def test_highly_similar_pairs_get_update_delete_or_ignore(svc: MemoryService, llm_server: Any) -> None:
    old = plant(svc, "Always use pnpm to install packages in the web app.", days=3, access_count=1)
    new = plant(svc, "Always use pnpm to install packages in the web app, never npm.", days=1)
    fake, llm = llm_server(lambda r: answer(action="delete", memory=None, reason="the newer one replaces it"))
    result = svc.consolidate("default", llm=llm)
    assert result.review is not None
    assert fake.kinds() == ["pair"]
    assert [m["id"] for m in fake.requests[0].memories] == [old.id, new.id]  # target is the older
    assert result.plan.clusters[0].pair
    svc.reviews.approve("default", result.review, actor="carol")
    [kept] = svc.list("default")
    assert kept.id == new.id and kept.supersedes == (old.id,)


def test_pair_update_folds_the_details_into_the_target(svc: MemoryService, llm_server: Any) -> None:
    old = plant(svc, "Always use pnpm to install packages in the web app.", days=3, access_count=1)
    plant(svc, "Always use pnpm to install packages in the web app, never npm.", days=1, access_count=2)
    updated = "Always use pnpm (never npm) to install packages in the web app."
    _, llm = llm_server(lambda r: answer(action="update", memory=updated, reason="same fact, more detail"))
    result = svc.consolidate("default", llm=llm)
    assert result.review is not None
    svc.reviews.approve("default", result.review, actor="carol")
    [kept] = svc.list("default")
    assert (kept.id, kept.text, kept.access_count) == (old.id, updated, 3)


def test_chinese_and_english_clusters_in_one_run(svc: MemoryService, llm_server: Any) -> None:
    plant(svc, "提交代码前必须运行单元测试。")
    plant(svc, "提交代码之前一定要运行单元测试和格式检查。")
    plant(svc, "Use descriptive variable and method names.")
    plant(svc, "Use descriptive variable and method names (e.g., IsUserSignedIn).")
    plant(svc, "部署使用 docker compose。")
    fake, llm = llm_server(longest)
    result = svc.consolidate("default", llm=llm)
    assert len(result.plan.clusters) == 2
    assert result.summary == "consolidated 4 memories into 2, review #1"
    svc.reviews.approve("default", 1, actor="dan")
    assert texts(svc) == sorted([
        "提交代码之前一定要运行单元测试和格式检查。",
        "Use descriptive variable and method names (e.g., IsUserSignedIn).",
        "部署使用 docker compose。",
    ])


def test_lifecycle_passes(svc: MemoryService, llm_server: Any) -> None:
    faded = plant(svc, "Old convention nobody follows.", days=60, potency=0.3, access_count=4,
                  last_used=concepts.now() - timedelta(days=60))
    stale = plant(svc, "Never used statement from long ago.", days=40, potency=1.0)
    judged = plant(svc, "Prefer Postgres for new services.", days=10)
    fresh = plant(svc, "Keep CI under ten minutes.", days=1)
    tenured = plant(svc, "A tenured rule that is never recalled.", days=40, potency=1.0, tenured=True)
    used_pending = plant(svc, "Pending statement that agents keep using.", state="pending",
                         access_count=3, days=2)
    dead_pending = plant(svc, "Zq xv qq.", state="pending", days=40)
    grey_pending = plant(svc, "Prefer Postgres for new services, with pgbouncer.", state="pending",
                         days=10)

    def respond(request: Request) -> str:
        if "never_used" in request.prompt or "no agent has used it" in request.prompt:
            return answer(verdict="archive", reason="a one-off")
        return answer(verdict="promote", reason="useful")

    fake, llm = llm_server(respond)
    plan = svc.plan("default")
    actions = {a.memory.id: a.action for a in plan.lifecycle}
    assert actions == {faded.id: "archive", stale.id: "archive", judged.id: "judge",
                       used_pending.id: "promote", dead_pending.id: "discard", grey_pending.id: "judge"}
    assert fresh.id not in actions and tenured.id not in actions
    result = svc.consolidate("default", llm=llm)
    assert sorted(fake.kinds()) == ["judge", "judge"]
    assert result.summary == "archived 3, promoted 2, discarded 1, review #1"
    commits = svc.reviews.diff("default", 1)
    assert len(commits) == 6  # one commit per decision
    svc.reviews.approve("default", 1, actor="erin")
    states = {m.id: m.state for m in svc.list("default", limit=100)}
    assert states[faded.id] == states[stale.id] == states[judged.id] == "archived"
    assert states[dead_pending.id] == "archived"
    assert states[used_pending.id] == states[grey_pending.id] == "active"
    assert states[fresh.id] == states[tenured.id] == "active"
    archived = svc.show("default", stale.id)
    assert archived.archived_reason and "never used" in archived.archived_reason


def test_verified_never_used_memories_are_neither_archived_nor_judged(svc: MemoryService) -> None:
    old = plant(svc, "Never used but confirmed from long ago.", days=40, potency=1.0, verified=("dana",))
    grey = plant(svc, "Prefer Postgres for new services.", days=10, verified=("erin",))
    unverified = plant(svc, "Never used and unconfirmed from long ago.", days=40, potency=1.0)
    plan = svc.plan("default")
    assert {a.memory.id: a.action for a in plan.lifecycle} == {unverified.id: "archive"}
    assert old.id in plan.potencies and grey.id in plan.potencies


def test_a_memory_used_yesterday_is_not_archived_however_old(svc: MemoryService) -> None:
    yesterday = concepts.now() - timedelta(days=1)
    used = plant(svc, "Stored long ago, used yesterday.", days=100, access_count=5, last_used=yesterday)
    forgotten = plant(svc, "Stored long ago, last used long ago.", days=100, access_count=5,
                      last_used=concepts.now() - timedelta(days=90))
    plan = svc.plan("default")
    assert plan.potencies[used.id] == pytest.approx(0.8 * 0.95, rel=1e-3)
    assert {a.memory.id: a.action for a in plan.lifecycle} == {forgotten.id: "archive"}


def test_a_merge_unions_the_related_links_of_what_it_replaces(svc: MemoryService, llm_server: Any) -> None:
    anchor = svc.remember("default", "Run the unit tests before every commit.", source="user").memory
    assert anchor is not None
    a = plant(svc, "Run unit tests with pytest before you commit.", days=1, related=("aaaaaaaaaa",))
    b = plant(svc, "Before a commit, run the unit tests and the linter.", days=2,
              related=("bbbbbbbbbb", a.id))
    merged_text = "Before every commit run the unit tests with pytest, and the linter."
    _, llm = llm_server(lambda r: answer(merged=merged_text, reason="all about testing before commits"))
    result = svc.consolidate("default", llm=llm)
    # The user's statement stays as it is, linked: it counts in neither number (as the review's summary).
    assert result.summary == "consolidated 2 memories into 1, review #1"
    svc.reviews.approve("default", 1, actor="alice")
    new = next(m for m in svc.list("default") if m.text == merged_text)
    # The replaced memories' links, and the user's statement it was merged beside; never a replaced id.
    assert set(new.related) == {"aaaaaaaaaa", "bbbbbbbbbb", anchor.id}
    assert set(new.supersedes) == {a.id, b.id}
    assert svc.show("default", anchor.id).text == "Run the unit tests before every commit."


def test_a_pair_update_unions_the_related_links(svc: MemoryService, llm_server: Any) -> None:
    old = plant(svc, "Always use pnpm to install packages in the web app.", days=3,
                related=("aaaaaaaaaa",))
    new = plant(svc, "Always use pnpm to install packages in the web app, never npm.", days=1,
                related=("bbbbbbbbbb", old.id))
    updated = "Always use pnpm (never npm) to install packages in the web app."
    _, llm = llm_server(lambda r: answer(action="update", memory=updated, reason="same fact, more detail"))
    result = svc.consolidate("default", llm=llm)
    assert result.review is not None
    svc.reviews.approve("default", result.review, actor="carol")
    [kept] = svc.list("default")
    assert kept.id == old.id and kept.supersedes == (new.id,)
    assert kept.related == ("aaaaaaaaaa", "bbbbbbbbbb")


def test_recorded_usage_is_folded_before_planning(svc: MemoryService) -> None:
    memory = plant(svc, "Deploy with docker compose on the staging box.")
    svc.recall("default", "docker compose staging")
    svc.consolidate("default")
    folded = svc.show("default", memory.id)
    assert folded.access_count == 1 and folded.last_used is not None
    assert svc.status("default")["pending_uses"] == 0
    assert svc.fold_usage("default") is None  # nothing left to fold
    # The fold is a commit on main, made before the run planned on it.
    [usage] = [c for c in svc.log("default", limit=5) if c.action == "usage"]
    assert usage.memory_ids == (memory.id,)


def test_an_unavailable_model_leaves_the_clusters_alone(svc: MemoryService, llm_server: Any) -> None:
    plant(svc, "Use descriptive variable and method names.")
    plant(svc, "Use descriptive variable and method names, always.")
    plant(svc, "提交代码前必须运行单元测试。")
    plant(svc, "提交代码前必须运行全部单元测试。")
    fake, llm = llm_server(lambda r: HOLD, timeout=0.2)
    result = svc.consolidate("default", llm=llm)
    assert result.review is None
    assert result.llm_failures == 1 and len(fake.requests) == 1  # the second cluster is not asked
    assert all(d.kind in ("veto", "ignore") for d in result.decisions)


def test_two_runs_of_one_namespace_never_overlap(svc: MemoryService) -> None:
    with RunState(svc.settings.state_dir, "default").lock():
        with pytest.raises(AlreadyRunning, match="already running"):
            svc.consolidate("default")
    assert svc.consolidate("default").summary == "nothing to consolidate"


def test_an_unknown_namespace_is_a_clear_error(svc: MemoryService) -> None:
    with pytest.raises(NamespaceNotFound, match="gitmem init"):
        svc.consolidate("nope")
    assert namespace_of(svc, "default").store.head_id(MAIN) is not None


def test_a_failing_subscriber_never_fails_the_run(svc: MemoryService, caplog: pytest.LogCaptureFixture) -> None:
    plant(svc, "Use descriptive variable and method names.")
    plant(svc, "Use descriptive variable and method names (e.g., IsUserSignedIn).")

    def broken(settings: Settings, event: dict[str, Any]) -> None:
        raise RuntimeError("chat is down")

    notify.subscribe(broken)
    try:
        result = svc.consolidate("default")
    finally:
        notify.unsubscribe(broken)
    assert result.review == 1
    assert "chat is down" in caplog.text
