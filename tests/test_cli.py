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

from .conftest import Run, git


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
        (["recall", "x", "--namespace", "Bad/Name"], None, 2, "invalid namespace"),
        (["status", "--namespace", "nope"], None, 3, "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    gitmem: Run, settings: Settings, args: list[str], stdin: bytes | None, code: int, message: str
) -> None:
    gitmem("init")
    before = head(settings)
    result = gitmem(*args, input=stdin, ok=False)
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
