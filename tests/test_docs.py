"""The README documents every command, and every command explains itself."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from gitmem.cli import main

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def _commands(group: click.Group, prefix: str = "gitmem") -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    for name, command in sorted(group.commands.items()):
        out.append((f"{prefix} {name}", command))
        if isinstance(command, click.Group):
            out += _commands(command, f"{prefix} {name}")
    return out


@pytest.mark.parametrize(("name", "command"), _commands(main), ids=lambda v: v if isinstance(v, str) else "")
def test_every_command_has_help_and_is_in_the_readme(name: str, command: click.Command) -> None:
    assert command.help and command.help.strip(), f"{name} has no help text"
    assert name in README, f"{name} is not mentioned in README.md"


def test_readme_names_the_test_command_that_ci_runs() -> None:
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "python -m pytest" in README
    assert ".venv/bin/python -m pytest" in ci


def test_the_compose_file_names_real_commands_and_settings() -> None:
    from dataclasses import fields

    import yaml

    from gitmem.settings import Settings

    root = Path(__file__).resolve().parent.parent
    compose = yaml.safe_load((root / "docker" / "compose.yaml").read_text(encoding="utf-8"))
    known = {f"GITMEM_{f.name.upper()}" for f in fields(Settings)} | {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"}
    services = compose["services"]
    for name in ("web", "worker", "beat"):
        env = services[name]["environment"]
        assert set(env) <= known, set(env) - known
        assert env["GITMEM_BROKER_URL"].startswith("redis://")
    assert services["web"]["deploy"]["replicas"] == 2 and services["worker"]["deploy"]["replicas"] == 2
    assert "deploy" not in services["beat"]  # one scheduler
    command = services["worker"]["command"]
    assert command[:2] == ["gitmem", "worker"]
    parsed = main.commands["worker"].make_context("worker", list(command[2:]))  # raises on a bad option
    assert parsed.params["concurrency"] == 2
