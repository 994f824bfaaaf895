"""The memory service against real temporary repositories, each checked with ``git fsck --strict``."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gitmem import concepts
from gitmem.concepts import Memory
from gitmem.errors import (
    CommitNotFound,
    GitmemError,
    InvalidInput,
    MalformedConcept,
    MemoryNotFound,
    NamespaceNotFound,
    RevertConflict,
)
from gitmem.memories import Candidate
from gitmem.ranking import path_matches
from gitmem.repo import Change
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.similarity import similarity
from tests.conftest import git, namespace_of, push_refused_entry

Fsck = Callable[[str], None]


def repo(svc: MemoryService, namespace: str = "default") -> Path:
    return svc.settings.repos_dir / f"{namespace}.git"


def head(svc: MemoryService, namespace: str = "default") -> str:
    return git(repo(svc, namespace), "rev-parse", "main").strip()


def changed(svc: MemoryService, commit: str | None) -> list[str]:
    assert commit is not None
    out = git(repo(svc), "-c", "core.quotePath=false", "diff-tree", "--no-commit-id", "--name-only", "-r", commit)
    return sorted(out.split("\n")[:-1])


def trailers(svc: MemoryService, commit: str | None) -> list[str]:
    assert commit is not None
    out = git(repo(svc), "log", "-1", "--format=%(trailers:only,unfold)", commit)
    return [line for line in out.splitlines() if line]


def file_at(svc: MemoryService, path: str, rev: str = "main") -> Memory:
    data = git(repo(svc), "show", f"{rev}:{path}").encode()
    return concepts.parse(data, path)


def exists(svc: MemoryService, path: str) -> bool:
    done = subprocess.run(["git", "--git-dir", str(repo(svc)), "cat-file", "-e", f"main:{path}"],
                          capture_output=True)
    return done.returncode == 0


def put(svc: MemoryService, memory: Memory, namespace: str = "default") -> None:
    """Write a memory file directly (as an import or a hand edit would), e.g. one made long ago."""
    ns = namespace_of(svc, namespace)
    ns.store.transact(lambda h: Change({memory.path: concepts.render(memory)}, "import", "import",
                                       (memory.id,), "import", "test"))


def aged(days: float, **fields: object) -> Memory:
    at = concepts.now() - timedelta(days=days)
    memory_id = concepts.new_id()
    base = Memory(id=memory_id, type="fact", text=f"memory {memory_id}", title=f"memory {memory_id}",
                  created=at, updated=at, path=f"fact/aged-{memory_id}.md")
    return base.replace(**fields)


# --- remember, show, list, recall -------------------------------------------------------------------


def test_remember_writes_one_file_in_one_commit_with_trailers(svc: MemoryService, fsck: Fsck) -> None:
    before = head(svc)
    result = svc.remember("default", "Use pnpm for every JavaScript package.", type="convention",
                          tags=["js"], paths=["web/"], author="ann")
    assert result.outcome == "added"
    memory = result.memory
    assert memory is not None and concepts.is_id(memory.id)
    assert memory.path == "convention/use-pnpm-for-every-javascript-package.md"
    assert git(repo(svc), "rev-parse", "main~1").strip() == before
    assert head(svc) == result.commit
    assert changed(svc, result.commit) == [memory.path]
    assert trailers(svc, result.commit) == [f"Memory-Id: {memory.id}", "Action: remember",
                                            "Source: user", "Actor: ann"]
    stored = file_at(svc, memory.path)
    assert stored.text == "Use pnpm for every JavaScript package."
    assert (stored.tags, stored.paths, stored.potency, stored.state) == (("js",), ("web/",), 0.8, "active")
    assert svc.show("default", memory.id) == stored
    fsck("default")


def test_show_list_and_recall(svc: MemoryService, fsck: Fsck) -> None:
    a = svc.remember("default", "Deploys happen on Tuesdays after the standup.", type="decision").memory
    b = svc.remember("default", "Database migrations need two reviewers.", type="convention").memory
    c = svc.remember("default", "The staging database is reset every night.", type="fact").memory
    assert a and b and c
    assert svc.show("default", a.id.upper()).id == a.id
    assert {m.id for m in svc.list("default")} == {a.id, b.id, c.id}
    assert [m.id for m in svc.list("default", type="convention")] == [b.id]
    assert len(svc.list("default", limit=2)) == 2
    assert len(svc.list("default", offset=2)) == 1
    hits = svc.recall("default", "database reviewers")
    assert hits[0].memory.id == b.id
    # c shares only "database", the commoner word: a third of what the query says is no evidence.
    assert {h.memory.id for h in hits} == {b.id}
    assert {h.memory.id for h in svc.recall("default", "database")} == {b.id, c.id}
    assert svc.recall("default", "nothing like this at all") == []
    fsck("default")


def test_namespaces_are_separate_repositories(settings: Settings, fsck: Fsck) -> None:
    svc = MemoryService(settings)
    with pytest.raises(NamespaceNotFound, match="gitmem init --namespace team"):
        svc.recall("team", "x")
    svc.init("team")
    svc.init("team")
    svc.remember("team", "Only in team.")
    assert svc.namespaces() == ["team"]
    assert (settings.repos_dir / "team.git" / "HEAD").exists()
    with pytest.raises(InvalidInput, match="invalid namespace"):
        svc.init("../escape")
    fsck("team")
    svc.close()


# --- the write gate ---------------------------------------------------------------------------------

GATE = [
    pytest.param(
        "Always use pnpm to install JavaScript dependencies in this repo",
        "always use PNPM to install JavaScript dependencies, in this repo!",
        "Always use pnpm to install JavaScript dependencies in this repo too",
        "Always use pnpm to install JavaScript dependencies in this repo, except in docs",
        id="english",
    ),
    pytest.param(
        "所有前端依赖都用 pnpm 安装，不要用 npm",
        "所有前端依赖都用PNPM安装 不要用npm。",
        "所有前端依赖都用 pnpm 来安装，不要用 npm",
        "所有前端依赖都用 pnpm 安装，不要用 npm 和 yarn",
        id="chinese",
    ),
]


@pytest.mark.parametrize("text,same,similar,correction", GATE)
def test_write_gate(svc: MemoryService, fsck: Fsck, text: str, same: str, similar: str,
                    correction: str) -> None:
    first = svc.remember("default", text, type="convention", tags=["js"], paths=["web/"])
    assert first.memory is not None
    original = first.memory

    # Highly similar text from an agent is merged: paths and tags unioned, potency +0.05, text kept.
    merged = svc.remember("default", similar, source="agent", tags=["js", "tooling"],
                          paths=["package.json"], author="bot")
    assert merged.outcome == "merged" and merged.similar_to == original.id
    assert changed(svc, merged.commit) == [original.path]
    assert trailers(svc, merged.commit) == [f"Memory-Id: {original.id}", "Action: merge",
                                            "Source: agent", "Actor: bot"]
    after = file_at(svc, original.path)
    assert after.text == text
    assert after.tags == ("js", "tooling")
    assert after.paths == ("web/", "package.json")
    assert after.potency == pytest.approx(0.85, abs=1e-3)
    assert similar in git(repo(svc), "log", "-1", "--format=%b", "main"), "the merged text is in the log"

    # Normalised-identical text reinforces the existing memory: one use (30% of what it lacks of 1), no new file.
    again = svc.remember("default", same, source="agent", tags=["deps"])
    assert again.outcome == "reinforced" and again.similar_to == original.id
    assert changed(svc, again.commit) == [original.path]
    assert "Action: reinforce" in trailers(svc, again.commit)
    stored = file_at(svc, original.path)
    assert stored.access_count == 1 and stored.text == text
    assert stored.tags == ("js", "tooling", "deps")
    assert stored.potency == pytest.approx(0.85 + 0.3 * 0.15, abs=1e-3)

    # A user's own similar statement may be a correction: it is kept as a new memory.
    own = svc.remember("default", correction, source="user")
    assert own.outcome == "added" and own.memory is not None
    assert own.memory.id != original.id
    assert len(svc.list("default")) == 2
    fsck("default")


def test_reinforcing_an_archived_memory_brings_it_back(svc: MemoryService) -> None:
    memory = svc.remember("default", "Feature flags live in flags.yaml.").memory
    assert memory is not None
    svc.forget("default", memory.id, reason="outdated")
    result = svc.remember("default", "feature flags live in flags.yaml")
    assert result.outcome == "reinforced"
    assert svc.show("default", memory.id).state == "active"
    assert svc.show("default", memory.id).archived_reason is None


def test_similar_text_is_not_merged_into_an_archived_memory(svc: MemoryService) -> None:
    memory = svc.remember("default", "Always use pnpm to install JavaScript dependencies in this repo").memory
    assert memory is not None
    svc.forget("default", memory.id)
    result = svc.remember("default", "Always use pnpm to install JavaScript dependencies in this repo too",
                          source="agent")
    assert result.outcome == "added"



# The gate compares token sets: these statements are exactly 0.8, just under 0.8 and exactly 0.6
# similar to STORED (checked below with gitmem.similarity, which the gate's score equals for
# one-line texts with no tags).
STORED = "Always run the unit tests before you push"
AT_0_8 = "Always run all unit tests before you push"
UNDER_0_8 = "Always run the unit tests before pushing"
AT_0_6 = "Always run the smoke tests after you push"


@pytest.mark.parametrize(("text", "score", "outcome"), [
    (AT_0_8, 0.8, "merged"),
    (UNDER_0_8, 0.7857, "added"),
    (AT_0_6, 0.6, "added"),
])
def test_the_write_gate_merges_from_0_8_similar_up(settings: Settings, text: str, score: float,
                                                   outcome: str) -> None:
    # Words alone: with sentence vectors "before pushing" says the same as "before you push" and
    # merges (tests/test_semantic.py).
    svc = MemoryService(settings.with_(embeddings="none"))
    svc.init("default")
    assert similarity(STORED, text) == pytest.approx(score, abs=1e-4)
    assert svc.settings.high_similarity == 0.8
    original = svc.remember("default", STORED).memory
    assert original is not None
    result = svc.remember("default", text, source="agent")
    assert result.outcome == outcome
    assert (result.similar_to == original.id) is (outcome == "merged")
    assert len(svc.list("default")) == (1 if outcome == "merged" else 2)


@pytest.mark.parametrize("source", ["agent", "import", "consolidation"])
def test_the_write_gate_threshold_is_inclusive(settings: Settings, source: str) -> None:
    exact = similarity(STORED, UNDER_0_8)
    for threshold, outcome in ((exact, "merged"), (math.nextafter(exact, 1.0), "added")):
        svc = MemoryService(settings.with_(home=settings.home / f"{threshold}", high_similarity=threshold,
                                           embeddings="none"))
        svc.init("default")
        svc.remember("default", STORED)
        assert svc.remember("default", UNDER_0_8, source=source).outcome == outcome, threshold
        svc.close()


def test_a_users_statement_is_never_merged_however_similar(svc: MemoryService) -> None:
    svc.remember("default", STORED)
    for source, text in (("user", AT_0_8), ("slack", "Always run the unit tests before you push to main")):
        assert similarity(STORED, text) >= 0.8
        assert svc.remember("default", text, source=source).outcome == "added"
    assert len(svc.list("default")) == 3



def test_the_write_gate_merges_into_the_most_similar_memory(svc: MemoryService) -> None:
    loose = svc.remember("default", "Run the linter before you push").memory
    close = svc.remember("default", STORED).memory
    assert loose is not None and close is not None
    result = svc.remember("default", AT_0_8, source="agent")
    assert (result.outcome, result.similar_to) == ("merged", close.id)



def test_the_write_gate_looks_past_archived_memories(svc: MemoryService) -> None:
    gone = svc.remember("default", "Always run all unit tests before you push!").memory
    assert gone is not None
    svc.forget("default", gone.id)
    faded = aged(9, text=STORED, title=STORED)
    put(svc, faded)
    result = svc.remember("default", AT_0_8.replace("all", "all the"), source="agent")
    assert (result.outcome, result.similar_to) == ("merged", faded.id)
    # Potency +0.05 on what it had faded to, kept to four places.
    assert svc.show("default", faded.id).potency == round(0.8 * 0.95**9 + 0.05, 4) == 0.5542


def test_the_write_gate_merges_into_a_pending_memory_and_keeps_it_pending(svc: MemoryService) -> None:
    pending = svc.remember("default", STORED, state="pending").memory
    assert pending is not None
    merged = svc.remember("default", AT_0_8, source="agent")
    assert (merged.outcome, merged.similar_to) == ("merged", pending.id)
    again = svc.remember("default", STORED.lower(), source="agent")
    assert again.outcome == "reinforced" and svc.show("default", pending.id).state == "pending"


def test_the_write_gate_never_lifts_potency_past_1(svc: MemoryService) -> None:
    memory = svc.remember("default", STORED).memory
    assert memory is not None
    for _ in range(3):  # reinforced: 0.8 -> 0.86 -> 0.902 -> 0.9314 (30% of the gap each time)
        svc.remember("default", STORED.upper(), source="agent")
    assert svc.show("default", memory.id).potency == pytest.approx(0.9314, abs=1e-4)
    for text, expected in ((AT_0_8, 0.9814), ("Always run all the unit tests before you push", 1.0)):
        assert svc.remember("default", text, source="agent").outcome == "merged"  # +0.05, capped at 1
        assert svc.show("default", memory.id).potency == pytest.approx(expected, abs=1e-4)


def test_remember_defaults_and_limits(svc: MemoryService) -> None:
    memory = svc.remember("default", "Defaults of a new memory.", paths=["p" * 400], related=["r" * 40],
                          author="a" * 200).memory
    assert memory is not None
    assert (memory.tenured, memory.state, memory.source, memory.type) == (False, "active", "user", "fact")
    assert svc.show("default", memory.id).tenured is False
    assert svc.remember("default", "Tags up to 80 characters.", tags=["t" * 80]).memory is not None
    for field, value in (("paths", ["p" * 401]), ("related", ["r" * 41]), ("author", "a" * 201),
                         ("tags", ["t" * 81])):
        with pytest.raises(InvalidInput, match="is over"):
            svc.remember("default", f"Too long a {field}.", **{field: value})  # type: ignore[arg-type]


def test_a_write_that_adds_queues_consolidation_and_survives_a_queue_that_fails(
        settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    queued: list[str] = []

    class Queue:
        def enqueue_consolidation(self, namespace: str, *, dry_run: bool = False, started_by: str = "") -> str:
            queued.append(namespace)
            raise RuntimeError("broker down")

    svc = MemoryService(settings.with_(consolidate_min_active=0), queue=Queue(), trigger=True)
    svc.init("default")
    result = svc.remember("default", "Triggers never fail the write that fired them.")
    assert queued == ["default"]  # more than 0 active memories: the rule says run
    assert "broker down" in caplog.text
    assert result.outcome == "added" and result.memory is not None
    assert svc.show("default", result.memory.id).text == "Triggers never fail the write that fired them."
    svc.close()


# --- amend, forget, history ---------------------------------------------------------------------------


def test_amend(svc: MemoryService, fsck: Fsck) -> None:
    memory = svc.remember("default", "Run tests with pytest -x.", tags=["py"]).memory
    assert memory is not None
    result = svc.amend("default", memory.id, text="Run tests with pytest -q.", tags=["py", "ci"], actor="bo",
                       reason="quieter output")
    assert result.outcome == "amended" and result.memory is not None
    assert changed(svc, result.commit) == [memory.path]
    assert trailers(svc, result.commit) == [f"Memory-Id: {memory.id}", "Action: amend", "Source: user",
                                            "Actor: bo"]
    assert "quieter output" in git(repo(svc), "log", "-1", "--format=%b", "main")
    stored = file_at(svc, memory.path)
    assert stored.text == "Run tests with pytest -q."
    assert stored.title == "Run tests with pytest -q.", "a title made from the text follows the text"
    assert stored.tags == ("py", "ci")
    assert stored.created == memory.created and stored.id == memory.id

    before = head(svc)
    same = svc.amend("default", memory.id, text="Run tests with pytest -q.")
    assert same.outcome == "unchanged" and same.commit is None
    assert head(svc) == before
    with pytest.raises(InvalidInput, match="nothing to amend"):
        svc.amend("default", memory.id)
    fsck("default")


def test_amend_keeps_a_title_and_description_set_by_hand(svc: MemoryService, fsck: Fsck) -> None:
    from tests.test_consolidate import plant

    titled = svc.remember("default", "Deploys happen on Tuesdays only", title="Deploy days").memory
    described = plant(svc, "Releases are tagged on Fridays", description="When we tag", source="user")
    taken = plant(svc, "Hotfixes skip the queue", description="Hotfixes skip the queue", source="user")
    assert titled is not None
    for memory, text in ((titled, "Deploys happen on Tuesdays and Wednesdays only"),
                         (described, "Releases are tagged on Thursdays"), (taken, "Hotfixes skip the release queue")):
        svc.amend("default", memory.id, text=text, actor="bo")
    kept_title, kept_description, followed = (file_at(svc, m.path) for m in (titled, described, taken))
    assert kept_title.title == "Deploy days"
    assert kept_title.description == "Deploys happen on Tuesdays and Wednesdays only"
    assert (kept_description.title, kept_description.description) == ("Releases are tagged on Thursdays", "When we tag")
    assert followed.title == followed.description == "Hotfixes skip the release queue"
    fsck("default")


def test_amending_the_type_moves_the_file_in_one_commit(svc: MemoryService, fsck: Fsck) -> None:
    memory = svc.remember("default", "Never deploy on Fridays.", type="fact").memory
    assert memory is not None
    result = svc.amend("default", memory.id, type="lesson")
    assert result.memory is not None
    assert result.memory.path == "lesson/never-deploy-on-fridays.md"
    assert changed(svc, result.commit) == ["fact/never-deploy-on-fridays.md", "lesson/never-deploy-on-fridays.md"]
    assert not exists(svc, memory.path)
    assert file_at(svc, result.memory.path).type == "lesson"
    assert svc.show("default", memory.id).path == result.memory.path
    assert [m.id for m in svc.list("default", type="lesson")] == [memory.id]
    assert svc.list("default", type="fact") == []
    fsck("default")


def test_forget_archives_and_purge_deletes(svc: MemoryService, fsck: Fsck) -> None:
    memory = svc.remember("default", "Use black for formatting.").memory
    assert memory is not None
    archived = svc.forget("default", memory.id, reason="we moved to ruff format", actor="cy")
    assert archived.outcome == "archived"
    assert changed(svc, archived.commit) == [memory.path]
    assert "Action: forget" in trailers(svc, archived.commit)
    stored = file_at(svc, memory.path)
    assert stored.state == "archived" and stored.archived_reason == "we moved to ruff format"
    assert svc.recall("default", "black formatting") == []
    assert svc.recall("default", "black formatting", include_archived=True)[0].memory.id == memory.id
    again = svc.forget("default", memory.id)
    assert again.outcome == "unchanged" and again.commit is None

    purged = svc.forget("default", memory.id, purge=True)
    assert purged.outcome == "purged"
    assert changed(svc, purged.commit) == [memory.path]
    assert not exists(svc, memory.path)
    with pytest.raises(MemoryNotFound):
        svc.show("default", memory.id)
    assert [c.action for c in svc.history("default", memory.id)] == ["forget", "forget", "remember"]
    fsck("default")


def test_an_actor_name_cannot_slip_a_commit_into_another_memorys_history(svc: MemoryService) -> None:
    victim = svc.remember("default", "The victim memory.").memory
    other = svc.remember("default", "Another memory.").memory
    assert victim and other
    svc.forget("default", other.id, actor=f"mallory\nMemory-Id: {victim.id}")
    assert [c.action for c in svc.history("default", victim.id)] == ["remember"]


def test_history_lists_the_commits_of_one_memory_newest_first(svc: MemoryService) -> None:
    memory = svc.remember("default", "Cache keys include the locale.").memory
    other = svc.remember("default", "Logs are kept for 30 days.").memory
    assert memory and other
    svc.amend("default", memory.id, tags=["cache"])
    svc.feedback("default", memory.id, "confirm", actor="dee")
    history = svc.history("default", memory.id)
    assert [c.action for c in history] == ["confirm", "amend", "remember"]
    assert history[0].actor == "dee"
    assert all(memory.id in c.memory_ids for c in history)
    with pytest.raises(MemoryNotFound):
        svc.history("default", "0123456789")


# --- revert and restore -----------------------------------------------------------------------------


def test_revert_undoes_one_commit(svc: MemoryService, fsck: Fsck) -> None:
    memory = svc.remember("default", "Services talk over gRPC.").memory
    assert memory is not None
    amended = svc.amend("default", memory.id, text="Services talk over HTTP/JSON.")
    reverted = svc.revert("default", str(amended.commit), actor="eve")
    assert reverted.outcome == "reverted"
    assert changed(svc, reverted.commit) == [memory.path]
    assert trailers(svc, reverted.commit)[-2:] == ["Actor: eve", f"Reverts: {amended.commit}"]
    assert svc.show("default", memory.id).text == "Services talk over gRPC."

    added = svc.remember("default", "Every service has a runbook.").memory
    assert added is not None
    first = svc.history("default", added.id)[0].id
    svc.revert("default", first[:12])
    with pytest.raises(MemoryNotFound):
        svc.show("default", added.id)
    fsck("default")


def test_a_conflicting_revert_changes_nothing(svc: MemoryService, fsck: Fsck) -> None:
    memory = svc.remember("default", "Use Postgres 15.").memory
    assert memory is not None
    first = svc.amend("default", memory.id, text="Use Postgres 16.")
    svc.amend("default", memory.id, text="Use Postgres 17.")
    before = head(svc)
    with pytest.raises(RevertConflict, match=memory.path):
        svc.revert("default", str(first.commit))
    assert head(svc) == before
    assert svc.show("default", memory.id).text == "Use Postgres 17."
    fsck("default")


def test_reverting_twice_changes_nothing_the_second_time(svc: MemoryService) -> None:
    memory = svc.remember("default", "Tabs, not spaces, in Makefiles.").memory
    assert memory is not None
    amended = svc.amend("default", memory.id, tags=["make"])
    svc.revert("default", str(amended.commit))
    before = head(svc)
    again = svc.revert("default", str(amended.commit))
    assert again.outcome == "unchanged" and again.commit is None
    assert head(svc) == before


def test_only_commits_of_main_can_be_reverted(svc: MemoryService) -> None:
    ns = namespace_of(svc, "default")
    side = ns.store.write_commit(ns.store.head(), Change({"fact/x.md": b"x"}, "side", "remember"))
    ns.store.move_ref("refs/heads/side", side, None, "side branch")
    before = head(svc)
    with pytest.raises(InvalidInput, match="not on main"):
        svc.revert("default", str(side))
    assert head(svc) == before


def test_restore_brings_back_an_earlier_version(svc: MemoryService, fsck: Fsck) -> None:
    memory = svc.remember("default", "Release notes go in CHANGELOG.md.", tags=["docs"]).memory
    assert memory is not None
    v1 = head(svc)
    svc.amend("default", memory.id, text="Release notes go in the wiki.", tags=["wiki"])
    svc.recall("default", "release notes")
    svc.fold_usage("default")
    used = svc.show("default", memory.id)
    assert used.access_count == 1

    restored = svc.restore("default", memory.id, v1, actor="fay")
    assert restored.outcome == "restored"
    assert changed(svc, restored.commit) == [memory.path]
    assert f"Restored-From: {v1}" in trailers(svc, restored.commit)
    now = svc.show("default", memory.id)
    assert (now.text, now.tags) == ("Release notes go in CHANGELOG.md.", ("docs",))
    assert now.access_count == 1 and now.potency == used.potency, "usage figures stay current"
    assert svc.restore("default", memory.id, v1).outcome == "unchanged"

    svc.forget("default", memory.id, purge=True)
    back = svc.restore("default", memory.id, v1)
    assert back.outcome == "restored"
    assert svc.show("default", memory.id).text == "Release notes go in CHANGELOG.md."
    first = git(repo(svc), "rev-list", "--max-parents=0", "main").strip()
    with pytest.raises(MemoryNotFound, match="did not exist"):
        svc.restore("default", memory.id, first)
    fsck("default")


# --- status, usage and potency ------------------------------------------------------------------------


def test_status_counts_by_state_type_and_tier(svc: MemoryService) -> None:
    a = svc.remember("default", "Prefer small pull requests.", type="preference").memory
    svc.remember("default", "Staging mirrors production data weekly.", type="fact")
    assert a is not None
    svc.forget("default", a.id)
    put(svc, aged(50))
    status = svc.status("default")
    assert status["head"] == head(svc)
    assert status["total"] == 3
    assert status["by_state"] == {"active": 2, "pending": 0, "archived": 1}
    assert status["by_type"]["preference"] == 1 and status["by_type"]["fact"] == 2
    assert status["by_tier"] == {"active": 1, "low": 0, "archived": 1}
    assert status["malformed"] == {}


def test_recall_records_usage_without_a_commit_and_folds_it_later(svc: MemoryService, fsck: Fsck) -> None:
    a = svc.remember("default", "Feature branches are rebased before merging.").memory
    b = svc.remember("default", "Merging needs a green pipeline.").memory
    c = svc.remember("default", "Unrelated: lunch is at noon.").memory
    assert a and b and c
    before = head(svc)
    hits = svc.recall("default", "merging")
    assert {h.memory.id for h in hits} == {a.id, b.id}
    svc.recall("default", "rebased feature branches")
    assert head(svc) == before, "a read costs no commit"
    assert svc.status("default")["pending_uses"] == 2, "a use a day, b one: a's two recalls today are one use"
    again = {h.memory.id: h.potency for h in svc.recall("default", "merging", record=False)}
    assert again[b.id] == pytest.approx(0.86, abs=1e-4), "pending uses count before they are folded"
    # A listing is no use, nor is a search that returns nothing.
    svc.recall("default", "")
    assert svc.recall("default", "quarterly tax filing") == []
    assert svc.status("default")["pending_uses"] == 2

    commit = svc.fold_usage("default", actor="cron")
    assert commit == head(svc)
    assert git(repo(svc), "rev-list", "--count", f"{before}..main").strip() == "1"
    assert changed(svc, commit) == sorted([a.path, b.path])
    assert "Action: usage" in trailers(svc, commit)
    assert file_at(svc, a.path).access_count == 1
    assert file_at(svc, b.path).access_count == 1
    assert file_at(svc, b.path).potency == pytest.approx(0.86)
    assert file_at(svc, c.path).access_count == 0
    assert svc.status("default")["pending_uses"] == 0
    assert svc.fold_usage("default") is None
    fsck("default")


def test_losing_the_usage_log_loses_no_memory(svc: MemoryService, settings: Settings) -> None:
    memory = svc.remember("default", "Secrets live in the vault.").memory
    assert memory is not None
    svc.recall("default", "vault secrets")
    svc.close()
    (settings.state_dir / "default" / "usage.sqlite").unlink()
    fresh = MemoryService(settings)
    assert fresh.show("default", memory.id).text == "Secrets live in the vault."
    assert fresh.fold_usage("default") is None
    fresh.close()


def test_potency_decays_lazily_and_old_memories_stop_being_recalled(svc: MemoryService) -> None:
    week = aged(7, text="Week-old note about the release train.")
    old = aged(60, text="Old note about the release train.")
    tenured = aged(60, text="Tenured note about the release train.", tenured=True)
    for memory in (week, old, tenured):
        put(svc, memory)
    before = head(svc)
    hits = {h.memory.id: h for h in svc.recall("default", "release train", record=False)}
    assert set(hits) == {week.id, tenured.id}, "below 0.10 a memory is never recalled"
    assert hits[week.id].potency == pytest.approx(0.8 * 0.95**7, rel=1e-3)
    assert hits[tenured.id].potency == pytest.approx(concepts.ACTIVE_FLOOR)
    again = {h.memory.id: h.potency for h in svc.recall("default", "release train", record=False)}
    assert again[week.id] == pytest.approx(hits[week.id].potency, rel=1e-4)
    assert file_at(svc, week.path).potency == 0.8, "decay is never written back by a read"
    assert head(svc) == before
    everything = {h.memory.id: h.potency for h in svc.recall("default", "release train", include_archived=True,
                                                              record=False)}
    assert set(everything) == {week.id, old.id, tenured.id}
    assert everything[old.id] == pytest.approx(0.8 * 0.95**60, rel=1e-3)
    assert everything[old.id] < concepts.ARCHIVE_BELOW


def test_a_use_revives_a_fading_memory_by_a_share_of_what_it_lacks(svc: MemoryService) -> None:
    fading = aged(30, text="Fading note on cache invalidation.")
    put(svc, fading)
    faded = 0.8 * 0.95**30
    expected = faded + 0.3 * (1 - faded)
    svc.recall("default", "cache invalidation")
    svc.fold_usage("default")
    assert file_at(svc, fading.path).potency == pytest.approx(expected, abs=2e-3)
    assert file_at(svc, fading.path).last_used is not None


# --- recall ranking ---------------------------------------------------------------------------------------


def test_recall_ranks_memories_about_the_callers_file_first(svc: MemoryService) -> None:
    general = svc.remember("default", "Validate input at the API boundary.").memory
    specific = svc.remember("default", "Validate input with pydantic models in every handler module.",
                                paths=["api/*.py"]).memory
    folder = svc.remember("default", "Web handlers never touch the database.", paths=["web/"]).memory
    assert general and specific and folder
    plain = [h.memory.id for h in svc.recall("default", "validate input", record=False)]
    assert plain[0] == general.id
    ranked = svc.recall("default", "validate input", path="api/users.py", record=False)
    assert ranked[0].memory.id == specific.id and ranked[0].path_match
    by_file = svc.recall("default", path="web/views/home.py", record=False)
    assert [h.memory.id for h in by_file] == [folder.id]



def test_recall_scores_decay_with_the_days_since_the_last_use_or_update(svc: MemoryService) -> None:
    now = concepts.now()
    fresh = aged(0, text="Fresh note on release trains.")
    month = aged(30, text="Month-old note on release trains.")
    used = aged(60, text="Old note on release trains, used a fortnight ago.",
                last_used=now - timedelta(days=15))
    for memory in (fresh, month, used):
        put(svc, memory)
    hits = {h.memory.id: h for h in svc.recall("default", record=False)}
    # Without a query every candidate is equally relevant (1.0): score = potency / (1 + days / 30).
    assert hits[fresh.id].score == pytest.approx(hits[fresh.id].potency, rel=1e-3)
    assert hits[month.id].potency == pytest.approx(0.8 * 0.95**30, rel=1e-3)
    assert hits[month.id].score == pytest.approx(hits[month.id].potency / 2, rel=1e-3)
    assert hits[used.id].potency == pytest.approx(0.8 * 0.95**15, rel=1e-3)
    assert hits[used.id].score == pytest.approx(hits[used.id].potency / 1.5, rel=1e-3)


def test_a_fresher_memory_outranks_a_stronger_older_one(svc: MemoryService) -> None:
    weak_fresh = aged(0, text="Fresh note on release trains.", potency=0.3)
    strong_old = aged(20, text="Older note on release trains.", potency=1.0)
    put(svc, weak_fresh)
    put(svc, strong_old)
    hits = svc.recall("default", "release trains", record=False)
    # 0.3 now against 1.0 x 0.95^20 = 0.36 faded, over 1 + 20/30 for its age: 0.21.
    assert hits[1].potency > hits[0].potency
    assert [h.memory.id for h in hits] == [weak_fresh.id, strong_old.id]


@pytest.mark.parametrize("query", ["", "release train"])
def test_a_pending_memory_scores_half_an_equally_relevant_active_one(settings: Settings, query: str) -> None:
    # Words alone make the two equally relevant; their sentence vectors differ a little.
    svc = MemoryService(settings.with_(embeddings="none"))
    svc.init("default")
    active = aged(0, text="Active note about the release train.")
    pending = aged(0, text="Pending note about the release train.", state="pending")
    for memory in (active, pending):
        put(svc, memory)
    hits = {h.memory.id: h for h in svc.recall("default", query, record=False)}
    assert hits[pending.id].potency == pytest.approx(hits[active.id].potency)
    assert hits[pending.id].score == pytest.approx(hits[active.id].score * 0.5, rel=1e-3)


def test_a_pending_memory_ranks_below_a_weaker_active_one(svc: MemoryService) -> None:
    pending = aged(0, text="Pending note about the release train.", state="pending", potency=0.8)
    active = aged(0, text="Active note about the release train.", potency=0.6)
    for memory in (pending, active):
        put(svc, memory)
    assert [h.memory.id for h in svc.recall("default", "release train", record=False)] == [active.id, pending.id]


@pytest.mark.parametrize("pattern,file,matches", [
    ("web/", "web/views/home.py", True),
    ("./web", "web/app.py", True),
    ("api/*.py", "./api/users.py", True),
    ("package.json", "package.json", True),
    (".github/workflows/", ".github/workflows/ci.yml", True),
    (".github/", "github/readme.md", False),
    (".env", "env", False),
    ("web/", "webapp/x.py", False),
    ("", "x.py", False),
])
def test_path_matches(pattern: str, file: str, matches: bool) -> None:
    assert path_matches(pattern, file) is matches


def test_archived_memories_are_never_recalled(svc: MemoryService) -> None:
    memory = svc.remember("default", "Use the legacy billing API.").memory
    assert memory is not None
    svc.forget("default", memory.id)
    assert svc.recall("default", "Use the legacy billing API.") == []
    assert svc.recall("default", path="billing.py") == []
    assert svc.recall("default") == []


def test_recall_without_query_returns_the_strongest(svc: MemoryService) -> None:
    weak = aged(20, text="A weaker memory.")
    put(svc, weak)
    strong = svc.remember("default", "A fresh memory.").memory
    assert strong is not None
    assert [h.memory.id for h in svc.recall("default", record=False)] == [strong.id, weak.id]


def test_the_index_is_derived_delete_it_and_nothing_is_lost(svc: MemoryService, settings: Settings) -> None:
    for i in range(5):
        svc.remember("default", f"Statement {i}: the index rebuilds from git.", type=concepts.TYPES[i])
    memory = svc.list("default")[0]
    svc.amend("default", memory.id, type="idea")
    svc.forget("default", svc.list("default")[1].id)
    before = [(m.id, m.path, m.state, m.text) for m in svc.list("default")]
    svc.close()
    shutil.rmtree(settings.state_dir)
    fresh = MemoryService(settings)
    assert [(m.id, m.path, m.state, m.text) for m in fresh.list("default")] == before
    assert fresh.recall("default", "index rebuilds")
    fresh.close()


# --- feedback, export, context ---------------------------------------------------------------------------


def test_feedback_confirm_reject_discuss(svc: MemoryService, fsck: Fsck) -> None:
    memory = svc.remember("default", "Use UTC in every timestamp.", state="pending").memory
    assert memory is not None
    confirmed = svc.feedback("default", memory.id, "confirm", actor="gus")
    assert confirmed.memory.state == "active"
    assert confirmed.memory.verified == ("gus",)
    assert changed(svc, confirmed.commit) == [memory.path]
    assert trailers(svc, confirmed.commit) == [f"Memory-Id: {memory.id}", "Action: confirm", "Actor: gus"]
    assert file_at(svc, memory.path).access_count == 1

    discussed = svc.feedback("default", memory.id, "discuss", actor="hal", text="Even in logs?")
    thread = f".gitmem/discussions/{memory.id}.jsonl"
    assert changed(svc, discussed.commit) == [thread]
    svc.feedback("default", memory.id, "discuss", actor="gus", text="Yes, 也包括日志。")
    comments = svc.discussion("default", memory.id)
    assert [(c.actor, c.text) for c in comments] == [("hal", "Even in logs?"), ("gus", "Yes, 也包括日志。")]

    rejected = svc.feedback("default", memory.id, "reject", actor="ivy", text="superseded")
    assert rejected.memory.state == "archived"
    assert "Action: reject" in trailers(svc, rejected.commit)
    with pytest.raises(InvalidInput, match="unknown feedback action"):
        svc.feedback("default", memory.id, "like", actor="ivy")
    with pytest.raises(InvalidInput, match="actor is empty"):
        svc.feedback("default", memory.id, "confirm", actor="  ")
    with pytest.raises(InvalidInput, match="discussion text is empty"):
        svc.feedback("default", memory.id, "discuss", actor="ivy", text=" ")
    fsck("default")


def test_exports(svc: MemoryService, tmp_path: Path) -> None:
    a = svc.remember("default", "Use pnpm.", type="convention", paths=["web/"]).memory
    b = svc.remember("default", "数据库迁移需要两位同事审核", type="decision").memory
    c = svc.remember("default", "Old and archived.").memory
    assert a and b and c
    svc.forget("default", c.id)

    index = svc.export("default", "memory-md")
    assert index.startswith("# Team memory: default")
    assert "## Convention" in index and "**Use pnpm.** (files: web/)" in index
    assert "数据库迁移需要两位同事审核" in index
    assert "Old and archived." not in index

    data = json.loads(svc.export("default", "json"))
    assert {m["id"] for m in data} == {a.id, b.id, c.id}
    assert all("effective_potency" in m for m in data)

    dest = tmp_path / "okf"
    assert svc.export("default", "okf", dest) == str(dest)
    assert (dest / a.path).read_bytes() == git(repo(svc), "show", f"main:{a.path}").encode()
    assert (dest / b.path).exists() and (dest / c.path).exists()
    okf_index = (dest / "index.md").read_text(encoding="utf-8")
    assert okf_index.startswith("---\nokf_version: \"0.1\"")
    assert f"(/{c.path}) (archived)" in okf_index
    with pytest.raises(InvalidInput, match="not an empty folder"):
        svc.export("default", "okf", dest)
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(InvalidInput, match="not an empty folder"):
        svc.export("default", "okf", tmp_path / "a-file")
    with pytest.raises(InvalidInput, match="needs a destination"):
        svc.export("default", "okf")
    with pytest.raises(InvalidInput, match="unknown export format"):
        svc.export("default", "xml")


def test_context_puts_the_memories_about_the_files_first(svc: MemoryService) -> None:
    about = svc.remember("default", "Handlers in api/ return problem+json errors.", paths=["api/"]).memory
    other = svc.remember("default", "Commit messages use the imperative mood.").memory
    assert about and other
    block = svc.context("default", ["api/users.py"])
    assert block.startswith("## Team memory (default)\nFor: api/users.py")
    assert block.index(about.id) < block.index(other.id)
    assert "(about api/)" in block
    assert svc.status("default")["pending_uses"] == 2
    empty = MemoryService(svc.settings)
    empty.init("empty")
    assert "(no memories yet)" in empty.context("empty", ["x.py"])
    empty.close()


# --- files pushed by hand, slugs ---------------------------------------------------------------------------


def push_by_hand(svc: MemoryService, tmp_path: Path, files: dict[str, str]) -> None:
    work = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo(svc)), str(work)], check=True)
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text, encoding="utf-8")
    author = ["-c", "user.name=Hand", "-c", "user.email=hand@example.com"]
    subprocess.run(["git", "-C", str(work), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(work), *author, "commit", "-q", "-m", "edit by hand"], check=True)
    subprocess.run(["git", "-C", str(work), "push", "-q", "origin", "main"], check=True, capture_output=True)


def test_a_malformed_file_pushed_by_hand_breaks_nothing_else(svc: MemoryService, tmp_path: Path,
                                                             fsck: Fsck) -> None:
    good = svc.remember("default", "Good memory about queues.").memory
    victim = svc.remember("default", "This one gets broken by hand.").memory
    assert good and victim
    broken_text = git(repo(svc), "show", f"main:{victim.path}").replace("potency: 0.8", "potency: high")
    push_by_hand(svc, tmp_path, {
        victim.path: broken_text,
        "fact/no-frontmatter.md": "Someone forgot the frontmatter.\n",
        "lesson/hand-written.md": (f"---\ntype: lesson\nid: abcdef0123\ncreated: {concepts.iso(concepts.now())}\n"
                                   "---\nWrite tests for queues.\n"),
    })
    status = svc.status("default")
    assert set(status["malformed"]) == {victim.path, "fact/no-frontmatter.md"}
    assert "no YAML frontmatter" in status["malformed"]["fact/no-frontmatter.md"]
    assert status["total"] == 2

    with pytest.raises(MalformedConcept, match=f"^{victim.path}: .*potency"):
        svc.show("default", victim.id)
    with pytest.raises(MalformedConcept, match=victim.path):
        svc.forget("default", victim.id)
    assert svc.show("default", good.id).text == "Good memory about queues."
    assert {h.memory.id for h in svc.recall("default", "queues")} == {good.id, "abcdef0123"}
    added = svc.remember("default", "New memories still work.")
    assert added.outcome == "added" and added.memory is not None
    exported = json.loads(svc.export("default", "json"))
    assert {m["id"]: m["text"] for m in exported} == {good.id: "Good memory about queues.",
                                                      "abcdef0123": "Write tests for queues.",
                                                      added.memory.id: "New memories still work."}
    fsck("default")


def test_a_hand_written_memory_without_dates_is_recalled(svc: MemoryService, tmp_path: Path) -> None:
    push_by_hand(svc, tmp_path, {"lesson/no-dates.md": "---\ntype: lesson\nid: abcdef0123\n---\nPin queues.\n"})
    assert svc.show("default", "abcdef0123").text == "Pin queues."
    assert [h.memory.id for h in svc.recall("default", "pin queues")] == ["abcdef0123"]


def test_a_file_copied_by_hand_does_not_hide_the_original(svc: MemoryService, tmp_path: Path) -> None:
    original = svc.remember("default", "Pin queue versions in the lockfile.").memory
    assert original is not None
    copy = git(repo(svc), "show", f"main:{original.path}").replace("Pin queue", "Pin every queue")
    push_by_hand(svc, tmp_path, {"fact/copied-by-hand.md": copy})

    status = svc.status("default")
    assert status["total"] == 1
    assert status["malformed"] == {
        "fact/copied-by-hand.md": f"duplicate id {original.id}: {original.path} has it too; give this file a new id"
    }
    assert svc.show("default", original.id).text == "Pin queue versions in the lockfile."

    # Once the original goes, the copy is the memory with that id.
    svc.forget("default", original.id, purge=True)
    assert svc.show("default", original.id).text == "Pin every queue versions in the lockfile."
    assert svc.status("default")["malformed"] == {}


@pytest.mark.parametrize("title,path", [
    ("数据库迁移规范", "decision/数据库迁移规范.md"),
    ("Use PNPM, not NPM!", "decision/use-pnpm-not-npm.md"),
    (None, "decision/etc-passwd.md"),
])
def test_slugs(svc: MemoryService, title: str | None, path: str, fsck: Fsck) -> None:
    text = "../../etc/passwd" if title is None else f"About {title}"
    memory = svc.remember("default", text, type="decision", title=title).memory
    assert memory is not None and memory.path == path
    assert exists(svc, path)
    assert git(repo(svc), "ls-tree", "--name-only", "main").split() == ["README.md", "decision"]
    fsck("default")


def test_slug_collisions_are_never_silent(svc: MemoryService, fsck: Fsck) -> None:
    first = svc.remember("default", "First statement.", title="Code review").memory
    second = svc.remember("default", "Second statement.", title="code REVIEW!").memory
    third = svc.remember("default", "Third statement.", title="Code review").memory
    assert first and second and third
    assert first.path == "fact/code-review.md"
    assert second.path == f"fact/code-review-{second.id}.md"
    assert third.path == f"fact/code-review-{third.id}.md"
    for memory in (first, second, third):
        assert file_at(svc, memory.path).text == memory.text
    fsck("default")


# --- bad input ------------------------------------------------------------------------------------------

UNKNOWN = "0123456789"
BAD_INPUT: list[tuple[str, Callable[[MemoryService, str], object], type[GitmemError], str]] = [
    ("empty text", lambda s, i: s.remember("default", ""), InvalidInput, "text is empty"),
    ("whitespace text", lambda s, i: s.remember("default", " \n\t "), InvalidInput, "text is empty"),
    ("text over the limit", lambda s, i: s.remember("default", "x" * (s.settings.max_text_chars + 1)),
     InvalidInput, f"the limit is {Settings().max_text_chars}"),
    ("unknown type", lambda s, i: s.remember("default", "x", type="rumour"), InvalidInput, "unknown type"),
    ("unknown source", lambda s, i: s.remember("default", "x", source="gossip"), InvalidInput,
     "unknown source"),
    ("path-like title", lambda s, i: s.remember("default", "x", title="../../etc/passwd"), InvalidInput,
     "looks like a file path"),
    ("NUL in title", lambda s, i: s.remember("default", "x", title="a\x00b"), InvalidInput, "NUL"),
    ("NUL in text", lambda s, i: s.remember("default", "a\x00b"), InvalidInput, "NUL"),
    ("surrogate-escaped text", lambda s, i: s.remember("default", b"caf\xe9".decode("utf-8", "surrogateescape")),
     InvalidInput, "not valid UTF-8"),
    ("invalid UTF-8 bytes", lambda s, i: s.remember("default", b"caf\xe9"), InvalidInput,  # type: ignore[arg-type]
     "not valid UTF-8"),
    ("surrogate in a tag", lambda s, i: s.remember("default", "x", tags=["a\udcff"]), InvalidInput, "tag"),
    ("line break in a tag", lambda s, i: s.remember("default", "x", tags=["a\n---\nb"]), InvalidInput,
     "line breaks"),
    ("line break in an author", lambda s, i: s.remember("default", "x", author="a\nMemory-Id: 0123456789"),
     InvalidInput, "line breaks"),
    ("unknown id: show", lambda s, i: s.show("default", UNKNOWN), MemoryNotFound, f"no memory {UNKNOWN}"),
    ("unknown id: amend", lambda s, i: s.amend("default", UNKNOWN, text="x"), MemoryNotFound, UNKNOWN),
    ("unknown id: forget", lambda s, i: s.forget("default", UNKNOWN), MemoryNotFound, UNKNOWN),
    ("unknown id: confirm", lambda s, i: s.feedback("default", UNKNOWN, "confirm", actor="a"), MemoryNotFound,
     UNKNOWN),
    ("malformed id", lambda s, i: s.show("default", "../etc"), InvalidInput, "is not a memory id"),
    ("malformed id: forget", lambda s, i: s.forget("default", "xyz"), InvalidInput, "is not a memory id"),
    ("amend to unknown type", lambda s, i: s.amend("default", i, type="rumour"), InvalidInput, "unknown type"),
    ("amend to empty text", lambda s, i: s.amend("default", i, text="  "), InvalidInput, "text is empty"),
    ("amend to path-like title", lambda s, i: s.amend("default", i, title="../x"), InvalidInput, "file path"),
    ("revert: unknown commit", lambda s, i: s.revert("default", "deadbeefdeadbeef"), CommitNotFound,
     "no commit deadbeefdeadbeef"),
    ("revert: not a commit id", lambda s, i: s.revert("default", "main~1"), InvalidInput, "not a commit id"),
    ("restore: unknown commit", lambda s, i: s.restore("default", i, "abcdef12"), CommitNotFound, "abcdef12"),
    ("unknown namespace", lambda s, i: s.remember("nowhere", "x"), NamespaceNotFound, "does not exist"),
    ("unknown state", lambda s, i: s.list("default", state="lost"), InvalidInput, "unknown state"),
    ("bad limit", lambda s, i: s.recall("default", "x", limit=0), InvalidInput, "limit"),
    ("query over the limit", lambda s, i: s.recall("default", "q" * 5000), InvalidInput, "limit"),
]


@pytest.mark.parametrize("case", BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_bad_input_is_refused_with_a_clear_error_and_changes_nothing(
    svc: MemoryService, fsck: Fsck,
    case: tuple[str, Callable[[MemoryService, str], object], type[GitmemError], str],
) -> None:
    _, call, error, message = case
    memory = svc.remember("default", "An existing memory.").memory
    assert memory is not None
    before = head(svc)
    files = git(repo(svc), "ls-tree", "-r", "main")
    with pytest.raises(error) as caught:
        call(svc, memory.id)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value), "one line"
    assert head(svc) == before
    assert git(repo(svc), "ls-tree", "-r", "main") == files
    assert svc.remember("default", "Writes still work after the refusal.").outcome == "added"
    fsck("default")


def test_every_commit_is_linear_and_logged(svc: MemoryService, fsck: Fsck) -> None:
    memory = svc.remember("default", "Keep history linear.").memory
    assert memory is not None
    svc.amend("default", memory.id, tags=["git"])
    svc.recall("default", "history")
    svc.fold_usage("default")
    svc.forget("default", memory.id)
    commits = git(repo(svc), "rev-list", "--parents", "main").strip().splitlines()
    assert [len(c.split()) for c in commits] == [2, 2, 2, 2, 1]
    assert len(git(repo(svc), "reflog", "show", "main").strip().splitlines()) == len(commits)
    actions = [c.action for c in svc.log("default", limit=10)]
    assert actions == ["forget", "usage", "amend", "remember", "init"]
    fsck("default")


def test_a_tree_entry_git_refuses_is_listed_and_revert_says_why(svc: MemoryService) -> None:
    kept = svc.remember("default", "Revert needs a clean tree.").memory
    assert kept is not None
    push_refused_entry(repo(svc))
    later = svc.amend("default", kept.id, text="Revert needs a tree git accepts.")
    status = svc.status("default")
    assert list(status["malformed"]) == ["../escape.md"]
    assert "'..'" in status["malformed"]["../escape.md"]
    before = head(svc)
    with pytest.raises(MalformedConcept, match=r"^\.\./escape\.md: git refuses the name '\.\.'.*remove it"):
        svc.revert("default", str(later.commit))
    assert head(svc) == before

    # A rebuilt index lists it too; once it is removed from main by hand, the listing goes.
    shutil.rmtree(svc.settings.state_dir)
    fresh = MemoryService(svc.settings)
    assert list(fresh.status("default")["malformed"]) == ["../escape.md"]
    clean = git(repo(svc), "mktree", input="".join(
        line + "\n" for line in git(repo(svc), "ls-tree", "main").splitlines() if not line.endswith("\t..")))
    fixed = git(repo(svc), "commit-tree", clean.strip(), "-p", "main", "-m", "remove ..").strip()
    git(repo(svc), "update-ref", "refs/heads/main", fixed)
    assert fresh.status("default")["malformed"] == {}
    assert fresh.revert("default", str(later.commit)).outcome == "reverted"
    assert fresh.show("default", kept.id).text == "Revert needs a clean tree."
    fresh.close()


@pytest.mark.parametrize("name", ["x.git", "team.git", ".git"])
def test_a_namespace_name_may_not_end_in_dot_git(settings: Settings, name: str) -> None:
    # Its repository would be x.git.git, reachable over HTTP only as /git/x.git.git.
    svc = MemoryService(settings)
    with pytest.raises(InvalidInput, match="invalid namespace"):
        svc.init(name)
    assert svc.namespaces() == []
    assert not settings.repos_dir.exists() or not any(settings.repos_dir.iterdir())
    assert svc.init("x.gitx").endswith("x.gitx.git")
    svc.close()


def test_a_derived_title_keeps_to_max_title_chars(settings: Settings) -> None:
    svc = MemoryService(settings.with_(max_title_chars=20))
    svc.init("default")
    first = "Always run the whole test suite before a release, not only the fast part"
    memory = svc.remember("default", first).memory
    assert memory is not None and memory.title == "Always run the whol…"
    # An amended text re-derives the title, within the limit too.
    amended = svc.amend("default", memory.id, text="Run the slow tests nightly and the fast ones on every push").memory
    assert amended is not None and amended.title == "Run the slow tests…"
    svc.close()


# --- many memories in one commit ---------------------------------------------------------------


def test_remember_many_writes_one_commit_that_reverts_cleanly(svc: MemoryService, fsck: Fsck) -> None:
    kept = svc.remember("default", "Reports come from the SaaS MySQL, not local files.").memory
    assert kept is not None
    before = svc.head("default")
    result = svc.remember_many("default", [
        Candidate("We use pnpm, not npm.", type="convention", tags=["js"], label="m1"),
        Candidate("PPT body text is 18pt.", type="preference", label="m2"),
        Candidate("We use pnpm, not npm.", paths=["web/package.json"], label="m3"),
        Candidate("Reports come from the SaaS MySQL, not local files.", label="m4"),
        Candidate("", label="m5"),
    ], message="import: five statements", action="import", actor="ana")
    assert [(o.label, o.outcome) for o in result.outcomes] == [
        ("m1", "added"), ("m2", "added"), ("m3", "reinforced"), ("m4", "reinforced"), ("m5", "refused")]
    assert result.counts() == {"added": 2, "reinforced": 2, "merged": 0, "skipped": 0, "refused": 1}
    assert "text is empty" in result.outcomes[4].reason
    assert result.outcomes[2].memory_id == result.outcomes[0].memory_id
    assert result.outcomes[3].memory_id == kept.id
    log = svc.log("default", limit=2)
    assert [c.id for c in log][1] == before and log[0].summary == "import: five statements"
    pnpm = svc.show("default", result.outcomes[0].memory_id or "")
    assert pnpm.paths == ("web/package.json",) and pnpm.access_count == 1
    fsck()

    svc.revert("default", result.commit or "")
    assert sorted(m.text for m in svc.list("default")) == ["Reports come from the SaaS MySQL, not local files."]
    assert svc.show("default", kept.id).access_count == kept.access_count
    fsck()


def test_remember_many_pending_candidates_merge_into_what_says_the_same(svc: MemoryService) -> None:
    old = svc.remember("default", "Use pnpm for installing JavaScript packages in this repository").memory
    assert old is not None
    result = svc.remember_many("default", [
        Candidate("Always use pnpm for installing the JavaScript packages in this repository", source="slack",
                  state="pending", author="bo"),
        Candidate("Deploys happen on Tuesdays.", source="slack", state="pending", author="bo"),
    ], message="ingest: 2 candidates", action="ingest")
    assert [o.outcome for o in result.outcomes] == ["merged", "added"]
    assert result.outcomes[0].memory_id == old.id
    added = svc.show("default", result.outcomes[1].memory_id or "")
    assert (added.state, added.source, added.author) == ("pending", "slack", "bo")


def test_remember_many_keeps_imported_ids_and_figures_and_skips_them_the_second_time(svc: MemoryService) -> None:
    when = datetime(2025, 3, 1, tzinfo=UTC)
    items = [Candidate("Body text in slides is 18pt.", id="a1b2c3d4e5", potency=0.42, created=when,
                       last_used=when, access_count=7, label="slides.md"),
             Candidate("Unrelated: the office closes at 6pm.", label="office.md")]
    first = svc.remember_many("default", items, message="import: okf", repeat="skip")
    assert [o.outcome for o in first.outcomes] == ["added", "added"]
    memory = svc.show("default", "a1b2c3d4e5")
    assert (memory.potency, memory.created, memory.access_count) == (0.42, when, 7)
    head = svc.head("default")
    again = svc.remember_many("default", items, message="import: okf", repeat="skip")
    assert [o.outcome for o in again.outcomes] == ["skipped", "skipped"]
    assert again.commit is None and svc.head("default") == head


def test_remember_many_dry_run_reports_and_writes_nothing(svc: MemoryService) -> None:
    head = svc.head("default")
    result = svc.remember_many("default", [Candidate("We use pnpm, not npm."),
                                           Candidate("x", type="no-such-type")], message="import", dry_run=True)
    assert [o.outcome for o in result.outcomes] == ["added", "refused"]
    assert "unknown type" in result.outcomes[1].reason
    assert result.commit is None and svc.head("default") == head and svc.list("default") == []


def test_remember_many_gives_two_new_memories_with_one_title_two_files(svc: MemoryService, fsck: Fsck) -> None:
    result = svc.remember_many("default", [Candidate("Alpha rule one.", title="Same title"),
                                           Candidate("Beta rule two.", title="Same title")], message="import")
    paths = {svc.show("default", o.memory_id or "").path for o in result.outcomes}
    assert len(paths) == 2
    fsck()
