"""Recall that tells the truth: nothing rather than noise, the newest statement wins, uses that mean something."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem.errors import InvalidInput
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.conftest import Run, git, namespace_of

Fsck = Callable[[str], None]

TOUR = [
    ("We use pnpm, not npm", "convention", ["package.json"]),
    ("PPT body text is 18pt", "preference", []),
    ("Reports go through the SaaS MySQL", "decision", ["reports/"]),
    ("Deploys happen on Tuesdays only", "convention", []),
    ("The food in Tokyo was incredible", "fact", []),
    ("She loved the unicorn cake at the party", "fact", []),
]


@pytest.fixture
def tour(svc: MemoryService) -> dict[str, str]:
    ids = {}
    for text, kind, paths in TOUR:
        memory = svc.remember("default", text, type=kind, paths=paths).memory
        assert memory is not None
        ids[text] = memory.id
    return ids


def texts(svc: MemoryService, query: str, **kw: object) -> list[str]:
    return [h.memory.text for h in svc.recall("default", query, record=False, **kw)]  # type: ignore[arg-type]


# --- nothing rather than noise --------------------------------------------------------------------


@pytest.mark.parametrize("question", [
    "What car does the user drive?",        # shares only "the" with the Tokyo and cake memories
    "What is the user's son's name?",
    "the", "What is it?", "的", "我们的是什么？",   # stop words only
])
def test_a_question_nobody_answered_gets_nothing(svc: MemoryService, tour: dict[str, str], question: str) -> None:
    assert texts(svc, question) == []


def test_the_tour_finds_what_it_asks_for_and_nothing_else(svc: MemoryService, tour: dict[str, str]) -> None:
    assert texts(svc, "pnpm") == ["We use pnpm, not npm"]
    assert texts(svc, "when do we deploy") == ["Deploys happen on Tuesdays only"]
    assert texts(svc, "What did I eat in Tokyo?") == ["The food in Tokyo was incredible"]


def test_scores_mean_the_same_for_every_query(svc: MemoryService, tour: dict[str, str]) -> None:
    """A perfect match scores alike whatever else is in the namespace; a weaker one lower, never rescaled to 1."""
    whole = svc.recall("default", "PPT body text is 18pt", record=False)[0].score
    svc.remember("default", "PPT speaker notes stay under 100 words", type="preference")
    assert svc.recall("default", "PPT body text is 18pt", record=False)[0].score == pytest.approx(whole, rel=0.1)
    partial = svc.recall("default", "PPT body font", record=False)
    assert partial and partial[0].score < whole


def test_a_query_over_the_limit_is_refused_in_one_line(tmp_path: Path) -> None:
    svc = MemoryService(Settings(home=tmp_path / "home", max_text_chars=100, embeddings="none"))
    svc.init("default")
    with pytest.raises(InvalidInput, match=r"^query is 101 characters; the limit is 100$"):
        svc.recall("default", "x" * 101)


def test_a_memory_that_shares_words_but_not_meaning_is_no_hit(svc: MemoryService) -> None:
    svc.remember("default", "Use efficient state management", type="convention")
    svc.remember("default", "controllers/: State management (<feature_name>_controller.dart).", type="convention")
    # Both words match, but the memories are about state management (cosine 0.15): no hit.
    assert texts(svc, "What is my manager's name?") == []
    # A quoted fragment is a hit whatever its meaning says.
    assert texts(svc, "efficient state management") == ["Use efficient state management"]


# --- the newest statement wins ------------------------------------------------------------------------


def test_a_persons_correction_archives_what_it_corrects_in_one_commit(svc: MemoryService, fsck: Fsck) -> None:
    old = svc.remember("default", "My phone number is 555-0101").memory
    assert old is not None
    new = svc.remember("default", "Correction: my phone number is now 555-0202")
    assert new.memory is not None and new.retired == (old.id,) and new.proposed == ()
    assert new.memory.supersedes == (old.id,)
    retired = svc.show("default", old.id)
    assert retired.state == "archived" and retired.archived_reason == f"superseded by {new.memory.id}"
    repo = svc.settings.repos_dir / "default.git"
    changed = git(repo, "show", "--name-only", "--format=", "main").split()
    assert sorted(changed) == sorted([old.path, new.memory.path])
    assert f"Supersedes {old.id}, archived: My phone number is 555-0101" in git(repo, "log", "-1", "--format=%b")
    assert texts(svc, "What is my phone number?") == ["Correction: my phone number is now 555-0202"]
    # Reverting the commit restores both: the old statement live again, the new one gone.
    assert new.commit is not None
    svc.revert("default", new.commit)
    assert svc.show("default", old.id).state == "active"
    assert texts(svc, "What is my phone number?") == ["My phone number is 555-0101"]
    fsck("default")


@pytest.mark.parametrize("older,newer", [
    ("The API rate limit is 100 requests per minute", "The API rate limit is now 250 requests per minute"),
    ("I mostly write Java at work", "I switched to Rust at work, no longer Java"),
    ("Deploys happen on Tuesdays only", "We now deploy on Wednesdays, not Tuesdays"),
    ("周会在周二下午开", "周会改为周四下午开"),
    ("我们用 Jenkins 做持续集成", "我们不再用 Jenkins，现在用 GitHub Actions 做持续集成"),
    ("Use 2 spaces for indentation", "Use 4 spaces for indentation"),
    ("Database migrations are tested against staging", "Database migrations are tested against production"),
])
def test_corrections_supersede(svc: MemoryService, older: str, newer: str) -> None:
    old = svc.remember("default", older).memory
    new = svc.remember("default", newer)
    assert old is not None and new.retired == (old.id,)


@pytest.mark.parametrize("first,second", [
    ("I speak Portuguese", "I also speak French"),                                   # adds, does not correct
    ("我们用 Redis 做缓存", "我们也用 Redis 做消息队列"),
    ("PPT body text is 18pt", "PPT titles are 28pt"),                                # two things differ: two rules
    ("Code review needs one approval for docs changes", "Code review needs two approvals for database migrations"),
    ("The iOS app is released every two weeks", "The Android app is released every week"),
    ("Use proper Tailwind configuration", "Use proper session configuration"),       # a thing, not a value
    ("Use async/await instead of callbacks", "Use Promise.all instead of sequential awaits"),
    ("Sprint 12 demo is on Friday", "Sprint 13 demo is on Friday"),                    # a number naming a thing
    ("Shared rule about folding number 0.", "Shared rule about folding number 1."),
])
def test_what_adds_or_differs_supersedes_nothing(svc: MemoryService, first: str, second: str) -> None:
    svc.remember("default", first)
    result = svc.remember("default", second)
    assert result.retired == () and result.proposed == ()
    assert {m.state for m in svc.list("default")} == {"active"}


def test_an_agents_correction_opens_a_review_and_recall_shows_the_new_one_meanwhile(svc: MemoryService) -> None:
    old = svc.remember("default", "The build uses Node 18", source="agent", author="claude").memory
    new = svc.remember("default", "The build now uses Node 20", source="agent", author="claude")
    assert old is not None and new.memory is not None
    assert new.proposed == (old.id,) and new.retired == ()
    assert svc.show("default", old.id).state == "active"
    # Never the superseded one beside the one that supersedes it, and never the old one alone.
    assert texts(svc, "Which Node version does the build use?") == ["The build now uses Node 20"]
    assert texts(svc, "Node 18") == ["The build now uses Node 20"]
    [review] = svc.reviews.list("default", status="open")
    assert review.kind == "supersede" and review.author == "claude"
    svc.reviews.approve("default", review.number, actor="lead")
    archived = svc.show("default", old.id)
    assert archived.state == "archived" and archived.archived_reason == f"superseded by {new.memory.id}"


def test_equal_scores_go_to_the_newer_statement_then_the_id(svc: MemoryService) -> None:
    a = svc.remember("default", "The office Wi-Fi network is called Harbor").memory
    time.sleep(1.1)  # one second later: ties break by time to the second
    b = svc.remember("default", "The office Wi-Fi network is called Lighthouse").memory
    assert a is not None and b is not None
    first = [h.memory.id for h in svc.recall("default", "office Wi-Fi network", record=False)]
    assert first == [b.id, a.id]
    assert all([h.memory.id for h in svc.recall("default", "office Wi-Fi network", record=False)] == first
               for _ in range(5))


# --- a use is a use ---------------------------------------------------------------------------------------


def test_only_deliveries_and_openings_are_uses(svc: MemoryService, tour: dict[str, str]) -> None:
    log = namespace_of(svc).usage
    svc.recall("default", "")                               # a listing
    svc.recall("default", "pnpm", record=False)              # a search page
    svc.recall("default", "What car does the user drive?")   # nothing under the floor
    svc.show("default", tour["PPT body text is 18pt"])       # read by code, not opened
    assert log.pending() == {}
    svc.recall("default", "pnpm")                            # delivered to an agent
    svc.context("default", ["reports/monthly.sql"])          # the session hook
    svc.show("default", tour["PPT body text is 18pt"], record=True)  # opened by a person
    used = log.pending()
    assert set(used) >= {tour["We use pnpm, not npm"], tour["Reports go through the SaaS MySQL"],
                         tour["PPT body text is 18pt"]}
    svc.recall("default", "pnpm")
    assert log.pending()[tour["We use pnpm, not npm"]][0] == 1, "twice in one day is one use"


# --- context fits the file ----------------------------------------------------------------------------------


def test_context_leaves_out_memories_scoped_to_other_paths(svc: MemoryService, tour: dict[str, str]) -> None:
    hits = svc.context_hits("default", ["src/app.ts", "package.json"])
    ids = [h.memory.id for h in hits]
    assert ids[0] == tour["We use pnpm, not npm"] and hits[0].path_match
    assert tour["Reports go through the SaaS MySQL"] not in ids
    about_reports = [h.memory.id for h in svc.context_hits("default", ["reports/x.sql"])]
    assert tour["Reports go through the SaaS MySQL"] in about_reports


def test_context_with_a_query_never_pads(svc: MemoryService, tour: dict[str, str]) -> None:
    assert svc.context_hits("default", ["src/app.ts"], "What car does the user drive?") == []
    block = svc.context("default", ["src/app.ts"], "What car does the user drive?", record=False)
    assert "(no memories" in block and "Tokyo" not in block


def test_cli_recall_says_so_when_nothing_matches(gitmem: Run) -> None:
    gitmem("remember", "We use pnpm, not npm", "--type", "convention", "--path", "package.json")
    done = gitmem("recall", "What car does the user drive?")
    assert isinstance(done, subprocess.CompletedProcess)
    assert "no memories found" in done.stdout.lower() + done.stderr.lower()


# --- context for what the files are ------------------------------------------------------------------

RULES = [
    ("Use the ownership system to avoid data races in Rust", "rust"),
    ("Prefer slices over arrays in Go code", "go"),
    ("Use Django's ORM rather than raw SQL", "django"),
    ("Type-hint every Python function", "python"),
    ("Use React hooks, never class components", "react"),
    ("Write commit messages in the imperative mood", "team"),
    ("We use pnpm, not npm", "javascript"),
]


@pytest.fixture
def rules(svc: MemoryService) -> dict[str, str]:
    out = {}
    for text, label in RULES:
        memory = svc.remember("default", text, type="convention").memory
        assert memory is not None
        out[text] = label
    return out


def labels_of(svc: MemoryService, rules: dict[str, str], files: list[str], **kw: object) -> set[str]:
    return {rules[h.memory.text] for h in svc.context_hits("default", files, **kw)}  # type: ignore[arg-type]


def test_context_gives_a_file_its_languages_rules_and_the_teams_never_another_languages(
        svc: MemoryService, rules: dict[str, str]) -> None:
    assert labels_of(svc, rules, ["src/lib.rs"]) == {"rust", "team"}
    assert labels_of(svc, rules, ["cmd/main.go"]) == {"go", "team"}
    assert labels_of(svc, rules, ["README.md"]) == {"team"}
    assert labels_of(svc, rules, ["src/app.ts", "package.json"]) == {"javascript", "team"}
    # A framework's rule needs a sign of the framework: an import, or the project's manifest.
    assert labels_of(svc, rules, ["app/models.py"]) == {"python", "team"}
    assert labels_of(svc, rules, ["app/models.py"], heads={"app/models.py": "from django.db import models\n"}) \
        == {"python", "django", "team"}
    manifest = {"pyproject.toml": '[project]\ndependencies = ["django>=5"]\n'}
    assert labels_of(svc, rules, ["app/models.py"], heads=manifest) == {"python", "django", "team"}
    # A React dependency beside it does not make a Python file React's.
    assert labels_of(svc, rules, ["app/models.py"], heads={"package.json": '{"dependencies": {"react": "^19"}}'}) \
        == {"python", "team"}
    # The rules for what the file is come before the team-wide ones.
    first = svc.context_hits("default", ["src/lib.rs"])[0]
    assert rules[first.memory.text] == "rust"


def test_cli_context_reads_the_files_imports_and_the_projects_manifest(gitmem: Run, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    (project / "app").mkdir(parents=True)
    (project / "app" / "models.py").write_text("from django.db import models\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    for text, _ in RULES:
        gitmem("remember", text, "--type", "convention")
    block = gitmem("context", "app/models.py", cwd=project).stdout
    assert "Django's ORM" in block and "Type-hint every Python function" in block
    assert "Rust" not in block and "React" not in block and "Go code" not in block


def test_rejecting_an_agents_correction_keeps_both_and_unlinks_them(svc: MemoryService, fsck: Fsck) -> None:
    old = svc.remember("default", "The build uses Node 18", source="agent", author="claude").memory
    new = svc.remember("default", "The build now uses Node 20", source="agent", author="claude").memory
    assert old is not None and new is not None
    [review] = svc.reviews.list("default", status="open")
    svc.reviews.reject("default", review.number, actor="lead", reason="we run both versions")
    assert svc.show("default", new.id).supersedes == ()
    assert svc.show("default", old.id).state == "active"
    # Both are recalled again, newest first.
    assert texts(svc, "Which Node version does the build use?") == ["The build now uses Node 20",
                                                                     "The build uses Node 18"]
    assert "keep both" in git(svc.settings.repos_dir / "default.git", "log", "-1", "--format=%s")
    fsck("default")
