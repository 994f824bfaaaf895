"""The README documents every command, and every command explains itself."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from gitmem.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands(group: click.Group, prefix: str = "gitmem") -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the group loads its commands on demand
        command = group.get_command(ctx, name)
        assert command is not None, f"{prefix} {name} is listed but does not load"
        out.append((f"{prefix} {name}", command))
        if isinstance(command, click.Group):
            out += _commands(command, f"{prefix} {name}")
    return out


@pytest.mark.parametrize(("name", "command"), _commands(main), ids=lambda v: v if isinstance(v, str) else "")
def test_every_command_has_help_and_is_in_the_readme(name: str, command: click.Command) -> None:
    assert command.help and command.help.strip(), f"{name} has no help text"
    assert name in README, f"{name} is not mentioned in README.md"


def section(title: str) -> str:
    """The README's text under ``## title``, up to the next section."""
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end != -1 else None]


def command_lines(text: str) -> list[str]:
    """The lines inside the ```sh blocks of ``text``, comments and blank lines left out."""
    lines: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        lines += [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return lines


def test_the_quick_start_is_two_command_lines_and_ci_runs_the_test_line() -> None:
    lines = command_lines(section("Quick start"))
    assert len(lines) == 2, lines
    serve, test = lines
    assert serve.startswith("python3 -m venv .venv && ") and serve.endswith(" && .venv/bin/gitmem serve"), serve
    assert test.startswith("python3 -m venv .venv && ") and test.endswith(" && .venv/bin/python -m pytest"), test
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    running = [line for line in ci.splitlines() if not line.lstrip().startswith("#")]
    assert any(test in line for line in running), f".ci/run does not run the README's test line {test!r}"


def setting_names() -> set[str]:
    """Every environment variable gitmem reads: the settings' fields and any name read literally."""
    from dataclasses import fields

    from gitmem.settings import Settings

    names = {f"GITMEM_{f.name.upper()}" for f in fields(Settings)}
    source = (ROOT / "gitmem" / "settings.py").read_text(encoding="utf-8")
    names |= set(re.findall(r"""(?:environ|env)(?:\.get\(|\[)["']([A-Z][A-Z0-9_]+)["']""", source))
    return names


def test_every_setting_is_in_the_readme_configuration() -> None:
    table = section("Configuration")
    # SLACK_* settings are read with or without the GITMEM_ prefix; either name documents them.
    missing = {name for name in setting_names()
               if f"`{name}`" not in table and f"`{name.removeprefix('GITMEM_')}`" not in table}
    assert not missing, f"settings read in gitmem/settings.py but not in README's Configuration: {sorted(missing)}"
    assert {"GITMEM_CONFIG", "XDG_DATA_HOME"} <= setting_names()  # the literal reads are found


def test_every_exit_code_and_http_status_is_in_the_readme() -> None:
    from gitmem import errors

    kinds = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.GitmemError)]
    rows = set(re.findall(r"^\| (\d+) \|", section("A tour of the CLI"), re.M))
    assert {str(c.exit_code) for c in kinds} | {"0"} == rows
    api = section("Serve: API, review pages, git over HTTP")
    statuses = re.search(r"Errors are JSON.*?\n\n", api, re.S)
    assert statuses
    for status in {c.http_status for c in kinds} - {500} | {401, 413}:
        assert f" {status} " in statuses.group(0), f"HTTP {status} is not among the API's errors in README.md"


def test_the_readme_names_the_commands_without_namespace() -> None:
    without = {name.removeprefix("gitmem ") for name, command in _commands(main)
               if not isinstance(command, click.Group)
               and not any(isinstance(p, click.Option) and "--namespace" in p.opts for p in command.params)}
    sentence = re.search(r"These work on the whole home and take none: (.*?)\.\n", README, re.S)
    assert sentence, "README.md no longer lists the commands that take no --namespace"
    listed = set(re.findall(r"`([a-z][a-z -]*)`", sentence.group(1)))
    assert listed == without


# Settings the compose layout fixes, or that name a place on the host (no use inside a container).
COMPOSE_FIXED = {"GITMEM_HOME", "GITMEM_STATE_HOME", "GITMEM_BROKER_URL", "GITMEM_RESULT_BACKEND",
                 "GITMEM_CONFIG", "XDG_DATA_HOME"}


def test_the_compose_file_passes_every_setting_and_names_real_commands() -> None:
    import yaml

    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    wanted = setting_names() - COMPOSE_FIXED
    for name in ("web", "worker", "beat", "slack"):
        env = services[name]["environment"]
        passed = {key if key.startswith("GITMEM_") else f"GITMEM_{key}" for key in env}
        assert passed - {"GITMEM_HOME", "GITMEM_BROKER_URL", "GITMEM_RESULT_BACKEND"} == wanted, \
            (sorted(wanted - passed), sorted(passed - wanted))
        assert env["GITMEM_HOME"] == "/data" and env["GITMEM_BROKER_URL"].startswith("redis://")
        # Passed on only when set: a value here would override the user's (or set it empty).
        assert all(value is None for key, value in env.items() if f"GITMEM_{key.removeprefix('GITMEM_')}" in wanted)
    assert services["web"]["deploy"]["replicas"] == 2 and services["worker"]["deploy"]["replicas"] == 2
    assert "deploy" not in services["beat"] and "deploy" not in services["slack"]  # one scheduler, one socket
    assert services["slack"]["profiles"] == ["slack"]
    for name, option, value in (("worker", "concurrency", 2), ("slack", None, None)):
        command = services[name]["command"]
        assert command[0] == "gitmem"
        loaded = main.get_command(click.Context(main), command[1])
        assert loaded is not None, command
        parsed = loaded.make_context(command[1], list(command[2:]))  # raises on a bad option
        assert option is None or parsed.params[option] == value
