"""The `gitmem` command, run as a real subprocess against a real repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem.settings import Settings

from .conftest import Run, git, push_refused_entry


def head(settings: Settings, namespace: str = "default") -> str:
    return git(settings.repos_dir / f"{namespace}.git", "rev-parse", "main").strip()


def test_remember_recall_show_round_trip(gitmem: Run, settings: Settings, fsck: Callable[[str], None]) -> None:
    out = json.loads(gitmem("remember", "We use pnpm, not npm", "--type", "convention", "--tag", "tooling",
                            "--path", "package.json", "--json").stdout)
    assert out["outcome"] == "added"
    memory_id = out["memory"]["id"]
    assert out["memory"]["path"] == "convention/we-use-pnpm-not-npm.md"

    hits = json.loads(gitmem("recall", "pnpm", "--json").stdout)
    assert [h["memory"]["id"] for h in hits] == [memory_id]
    by_path = json.loads(gitmem("recall", "--path", "package.json", "--json").stdout)
    assert by_path[0]["path_match"] is True

    shown = gitmem("show", memory_id).stdout
    assert shown.startswith("---\ntype: convention\n")
    assert "We use pnpm, not npm" in shown
    # The file in the repository is exactly what `show` printed.
    assert git(settings.repos_dir / "default.git", "show", "main:convention/we-use-pnpm-not-npm.md") == shown
    fsck("default")


def test_remember_reads_standard_input_and_chinese(gitmem: Run) -> None:
    out = json.loads(gitmem("remember", "-", "--type", "preference", "--json",
                            input="PPT 正文字号用 18pt".encode()).stdout)
    assert out["memory"]["path"] == "preference/ppt-正文字号用-18pt.md"
    hits = json.loads(gitmem("recall", "正文字号", "--json").stdout)
    assert hits[0]["memory"]["text"] == "PPT 正文字号用 18pt"


NOTE = """---
title: Deploy checklist
type: method
tags: [release, ops]
paths: [deploy.sh]
---
# Deploy checklist

1. Tag the release.
2. Run deploy.sh.
"""


def test_remember_a_note_with_frontmatter(gitmem: Run, settings: Settings, fsck: Callable[[str], None]) -> None:
    out = json.loads(gitmem("remember", "-", "--json", input=NOTE.encode()).stdout)["memory"]
    assert out["path"] == "method/deploy-checklist.md"
    assert (out["title"], out["type"], out["tags"], out["paths"]) == (
        "Deploy checklist", "method", ["release", "ops"], ["deploy.sh"])
    assert out["text"] == "# Deploy checklist\n\n1. Tag the release.\n2. Run deploy.sh."
    # Options on the command line win over the note's frontmatter.
    other = NOTE.replace("Deploy checklist", "Rollback checklist")
    out = json.loads(gitmem("remember", "-", "--json", "--type", "decision", "--tag", "urgent",
                            input=other.encode()).stdout)["memory"]
    assert (out["path"], out["tags"]) == ("decision/rollback-checklist.md", ["urgent"])
    fsck("default")


def test_remember_a_note_with_a_heading(gitmem: Run) -> None:
    out = json.loads(gitmem("remember", "-", "--json", input=b"# Release train\n\nEvery Tuesday.\n").stdout)
    assert out["memory"]["title"] == "Release train"
    assert out["memory"]["path"] == "fact/release-train.md"


def test_amend_log_revert_restore(gitmem: Run, settings: Settings, fsck: Callable[[str], None]) -> None:
    memory_id = json.loads(gitmem("remember", "Reports use MySQL", "--json").stdout)["memory"]["id"]
    gitmem("amend", memory_id, "Reports use the SaaS MySQL, not local files")
    history = json.loads(gitmem("log", memory_id, "--json").stdout)
    assert [h["action"] for h in history] == ["amend", "remember"]
    amend_commit = history[0]["id"]

    gitmem("revert", amend_commit)
    assert json.loads(gitmem("show", memory_id, "--json").stdout)["text"] == "Reports use MySQL"

    gitmem("restore", memory_id, amend_commit)
    shown = json.loads(gitmem("show", memory_id, "--json").stdout)
    assert shown["text"] == "Reports use the SaaS MySQL, not local files"
    actions = [c["action"] for c in json.loads(gitmem("log", "--json").stdout)]
    assert actions[:4] == ["restore", "revert", "amend", "remember"]
    fsck("default")


def test_forget_archives_and_purge_deletes(gitmem: Run, settings: Settings) -> None:
    memory_id = json.loads(gitmem("remember", "Old build uses make", "--json").stdout)["memory"]["id"]
    gitmem("forget", memory_id, "--reason", "we moved to just")
    assert json.loads(gitmem("recall", "build", "--json").stdout) == []
    assert json.loads(gitmem("show", memory_id, "--json").stdout)["state"] == "archived"
    gitmem("forget", memory_id, "--purge")
    missing = gitmem("show", memory_id, ok=False)
    assert missing.returncode == 3
    assert "no memory" in missing.stderr


def test_status_and_exports(gitmem: Run, tmp_path: Path) -> None:
    gitmem("remember", "We use pnpm", "--type", "convention")
    gitmem("remember", "Body text is 18pt", "--type", "preference")
    status = json.loads(gitmem("status", "--json").stdout)
    assert status["total"] == 2
    assert status["by_type"]["convention"] == 1 and status["by_type"]["preference"] == 1

    memory_md = gitmem("export").stdout
    assert "## Convention" in memory_md and "We use pnpm" in memory_md
    exported = json.loads(gitmem("export", "--format", "json").stdout)
    assert {m["text"] for m in exported} == {"We use pnpm", "Body text is 18pt"}
    folder = tmp_path / "okf"
    gitmem("export", "--format", "okf", "--output", str(folder))
    assert (folder / "index.md").read_text().startswith("---\nokf_version: \"0.1\"")
    assert len(list(folder.glob("*/*.md"))) == 2


@pytest.mark.parametrize(
    ("args", "stdin", "code", "message"),
    [
        (["remember", ""], None, 2, "text is empty"),
        (["remember", "   "], None, 2, "text is empty"),
        (["remember", "x" * 4001], None, 2, "the limit is 4000"),
        (["remember", "x", "--type", "opinion"], None, 2, "unknown type 'opinion'"),
        (["remember", "x", "--title", "../../etc/passwd"], None, 2, "looks like a file path"),
        (["remember", "x", "--title", "a\x01b"], None, 2, "control characters"),
        (["remember", "-"], b"bad \xff bytes", 2, "not valid UTF-8"),
        (["show", "0123456789"], None, 3, "no memory 0123456789"),
        (["show", "../../etc"], None, 2, "is not a memory id"),
        (["revert", "deadbeef"], None, 3, "no commit deadbeef"),
        (["revert", "not-a-sha"], None, 2, "is not a commit id"),
        (["revert", "FIRST"], None, 2, "is the first commit"),
        (["recall", "x", "--namespace", "Bad/Name"], None, 2, "invalid namespace"),
        (["init", "--namespace", "x.git"], None, 2, "must not end in '.git'"),
        (["remember", "x", "--namespace", ""], None, 2, "--namespace is empty"),
        (["status", "-n", " "], None, 2, "--namespace is empty"),
        (["key", "list", "--namespace", ""], None, 2, "--namespace is empty"),
        (["key", "create", "--role", "reader", "--namespace", ""], None, 2, "--namespace is empty"),
        (["remember", "x", "--namespace", "notes.git"], None, 2, "must not end in '.git'"),
        (["key", "create", "--role", "reader", "--namespace", "x.git"], None, 2, "must not end in '.git'"),
        (["status", "--namespace", "nope"], None, 3, "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    gitmem: Run, settings: Settings, args: list[str], stdin: bytes | None, code: int, message: str
) -> None:
    gitmem("init")
    before = head(settings)
    first = git(settings.repos_dir / "default.git", "rev-list", "--max-parents=0", "main").strip()
    result = gitmem(*[first if arg == "FIRST" else arg for arg in args], input=stdin, ok=False)
    assert result.returncode == code
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert head(settings) == before


def test_invalid_utf8_argument_is_refused(settings: Settings) -> None:
    # An argument with invalid UTF-8 reaches Python as surrogate escapes.
    env = {**os.environ, "GITMEM_HOME": str(settings.home)}
    done = subprocess.run([sys.executable, "-m", "gitmem", "remember", b"caf\xe9"], env=env, capture_output=True)
    assert done.returncode == 2
    assert b"not valid UTF-8" in done.stderr
    assert not (settings.repos_dir / "default.git").exists()


def test_every_command_has_help(gitmem: Run) -> None:
    top = gitmem("--help").stdout
    listing = top.split("Commands:\n")[1].splitlines()
    commands = [line.split()[0] for line in listing if line.startswith("  ") and not line.startswith("    ")]
    assert {"init", "remember", "recall", "show", "amend", "forget", "log", "revert", "restore", "status",
            "export"} <= set(commands)
    for command in commands:
        text = gitmem(command, "--help").stdout
        assert "Usage: " in text and len(text.splitlines()) > 3, command


def test_context_for_an_agents_clone(gitmem: Run, settings: Settings, tmp_path: Path) -> None:
    gitmem("remember", "API handlers return JSON errors", "--type", "convention", "--path", "src/api/**")
    gitmem("remember", "We use pnpm, not npm", "--type", "convention", "--path", "package.json")
    clone = tmp_path / "team-memory"
    subprocess.run(["git", "clone", "-q", str(settings.repos_dir / "default.git"), str(clone)], check=True)
    block = gitmem("context", "--repo", str(clone), "src/api/users.ts").stdout
    lines = [line for line in block.splitlines() if line.startswith("- ")]
    # The memory about the file comes first, then the rest of the team's memories.
    assert "API handlers return JSON errors (about src/api/**)" in lines[0]
    assert "We use pnpm" in lines[1]
    assert block.startswith("## Team memory (team-memory)")
    # Reading a clone records nothing in the namespace.
    assert json.loads(gitmem("status", "--json").stdout)["pending_uses"] == 0


def test_a_tree_entry_git_refuses_is_a_clear_error(gitmem: Run, settings: Settings) -> None:
    gitmem("remember", "Entries named .. are refused by git")
    push_refused_entry(settings.repos_dir / "default.git")
    gitmem("remember", "A later memory")
    target = head(settings)
    result = gitmem("revert", target, ok=False)
    assert result.returncode == 5
    assert result.stderr.startswith("error: ../escape.md: git refuses the name '..'")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert head(settings) == target
    status = gitmem("status").stdout
    assert "malformed: ../escape.md: git refuses the name '..'" in status


@pytest.mark.parametrize(("fmt", "where", "reason"), [
    ("json", "file/x", "Not a directory"),
    ("memory-md", "file/x", "Not a directory"),
    ("json", "folder", "Is a directory"),
    ("okf", "file/sub", "Not a directory"),
    ("okf", "file", "not an empty folder"),
])
def test_an_export_that_cannot_be_written_is_one_line(gitmem: Run, tmp_path: Path, fmt: str, where: str,
                                                     reason: str) -> None:
    gitmem("remember", "Exports go where they are told")
    (tmp_path / "file").write_text("a plain file\n")
    (tmp_path / "folder").mkdir()
    result = gitmem("export", "--format", fmt, "-o", str(tmp_path / where), ok=False)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and reason in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert (tmp_path / "file").read_text() == "a plain file\n"


def test_a_lock_file_in_the_way_is_named(gitmem: Run, settings: Settings) -> None:
    gitmem("init")
    before = head(settings)
    lock = settings.repos_dir / "default.git" / "refs" / "heads" / "main.lock"
    lock.write_text("0" * 40 + "\n")
    result = gitmem("remember", "Blocked by a lock", ok=False)
    assert result.returncode == 4
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert f"error: {lock} is in the way" in result.stderr and f"rm '{lock}'" in result.stderr
    assert "kept moving" not in result.stderr
    assert head(settings) == before
    lock.unlink()
    gitmem("remember", "Not blocked any more")


def test_a_threshold_outside_0_to_1_is_one_line(settings: Settings) -> None:
    env = {**os.environ, "GITMEM_HOME": str(settings.home), "GITMEM_HIGH_SIMILARITY": "2"}
    done = subprocess.run([sys.executable, "-m", "gitmem", "status"], env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr == "error: GITMEM_HIGH_SIMILARITY must be a number from 0 to 1, not 2.0\n"


def test_a_review_number_in_other_digits_is_refused(gitmem: Run) -> None:
    gitmem("init")
    result = gitmem("review", "show", "\u0663", ok=False)
    assert result.returncode == 2 and "is not a review number" in result.stderr
    assert gitmem("review", "show", "3", ok=False).returncode == 3  # ASCII digits: a number, not found
def test_fold_writes_the_recorded_uses_in_one_commit(gitmem: Run, settings: Settings,
                                                     fsck: Callable[[str], None]) -> None:
    memory_id = json.loads(gitmem("remember", "We use pnpm, not npm", "--json").stdout)["memory"]["id"]
    assert gitmem("fold").stdout == "no uses to fold\n"
    before = head(settings)
    gitmem("recall", "pnpm")
    gitmem("recall", "npm")
    assert head(settings) == before, "a recall costs no commit"
    folded = json.loads(gitmem("fold", "--json").stdout)
    assert folded["commit"] == head(settings) != before
    assert json.loads(gitmem("log", "--json").stdout)[0]["action"] == "usage"
    shown = json.loads(gitmem("show", memory_id, "--json").stdout)
    assert (shown["access_count"], shown["potency"]) == (1, 0.86), "two recalls in one day are one use"
    assert json.loads(gitmem("fold", "--json").stdout)["commit"] is not None, "a person opening it is a use"
    assert json.loads(gitmem("fold", "--json").stdout) == {"commit": None}
    gitmem("recall", "pnpm")
    assert gitmem("fold").stdout == f"folded: {head(settings)}\n"
    fsck("default")


def test_a_malformed_memory_file_exits_5_naming_the_file(gitmem: Run, settings: Settings, tmp_path: Path) -> None:
    memory = json.loads(gitmem("remember", "Queues are pinned", "--json").stdout)["memory"]
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(settings.repos_dir / "default.git"), str(clone)], check=True)
    file = clone / memory["path"]
    file.write_text(file.read_text(encoding="utf-8").replace("potency: 0.8", "potency: high"), encoding="utf-8")
    hand = ["-c", "user.name=Hand", "-c", "user.email=hand@example.com"]
    subprocess.run(["git", "-C", str(clone), *hand, "commit", "-qam", "edit by hand"], check=True)
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "main"], check=True, capture_output=True)
    before = head(settings)
    for args in (["show", memory["id"]], ["forget", memory["id"]], ["amend", memory["id"], "Queues float"]):
        result = gitmem(*args, ok=False)
        assert result.returncode == 5, (args, result.stderr)
        assert result.stderr == (f"error: {memory['path']}: 'potency' must be a number between 0 and 1, "
                                 "not 'high'\n")
    assert head(settings) == before
    status = json.loads(gitmem("status", "--json").stdout)
    assert list(status["malformed"]) == [memory["path"]]
    assert gitmem("remember", "Other memories still work").returncode == 0


def test_feedback_reject_needs_a_reason(gitmem: Run, settings: Settings) -> None:
    memory_id = json.loads(gitmem("remember", "Deploys happen on Tuesdays only", "--json").stdout)["memory"]["id"]
    before = head(settings)
    done = gitmem("feedback", memory_id, "reject", ok=False)
    assert done.returncode == 2 and "reason is required" in done.stderr and len(done.stderr.splitlines()) == 1
    assert head(settings) == before
    assert json.loads(gitmem("show", memory_id, "--json").stdout)["state"] == "active"
    gitmem("feedback", memory_id, "reject", "we deploy on Wednesdays too")
    shown = json.loads(gitmem("show", memory_id, "--json").stdout)
    assert (shown["state"], shown["archived_reason"]) == ("archived", "we deploy on Wednesdays too")
