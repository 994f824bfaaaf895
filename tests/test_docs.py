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
