"""The docs (README.md and the pages in docs/) document every command, and every command explains itself.

The README is the overview (quick start, tour, links); the reference lives in docs/, a MkDocs site
built with ``mkdocs build --strict``. The checks below read both as one set of pages.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import click
import pytest

from gitmem.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
# Every page a reader may land on, by its path from the root: the README first, then docs/.
PAGES = {"README.md": README} | {
    f"docs/{page.name}": page.read_text(encoding="utf-8") for page in sorted((ROOT / "docs").glob("*.md"))}
DOCS = "\n".join(PAGES.values())


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
def test_every_command_has_help_and_is_documented(name: str, command: click.Command) -> None:
    assert command.help and command.help.strip(), f"{name} has no help text"
    assert name in DOCS, f"{name} is not mentioned in README.md or docs/"


def headings(text: str) -> list[tuple[int, int, str]]:
    """The Markdown headings of ``text`` as (offset, level, title), those inside fenced code left out."""
    out: list[tuple[int, int, str]] = []
    offset, fence = 0, ""
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif heading := re.match(r"(#+) (.*)$", line):
            out.append((offset, len(heading.group(1)), heading.group(2).strip()))
        offset += len(line)
    return out


def section(title: str, page: str | None = None) -> str:
    """The text under the heading ``title`` (any level), up to the next heading of its level or above.

    The heading is looked for in ``page`` (a key of PAGES), else in every page; it must be there once.
    """
    found = []
    for name, text in PAGES.items():
        if page is not None and name != page:
            continue
        marks = headings(text)
        for i, (start, level, heading) in enumerate(marks):
            if heading == title:
                end = next((at for at, deeper, _ in marks[i + 1:] if deeper <= level), len(text))
                found.append(text[start:end])
    assert len(found) == 1, f"{len(found)} headings {title!r} in {page or 'README.md and docs/'}"
    return found[0]


def command_lines(text: str) -> list[str]:
    """The lines inside the ```sh blocks of ``text``, comments and blank lines left out."""
    lines: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        lines += [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return lines


def test_the_quick_start_is_two_command_lines_and_ci_runs_the_test_line() -> None:
    lines = command_lines(section("Quick start", "README.md"))
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


def test_every_setting_is_in_the_configuration_page() -> None:
    table = section("Configuration", "docs/configuration.md")
    # SLACK_* settings are read with or without the GITMEM_ prefix; either name documents them.
    missing = {name for name in setting_names()
               if f"`{name}`" not in table and f"`{name.removeprefix('GITMEM_')}`" not in table}
    assert not missing, f"settings read in gitmem/settings.py but not in docs/configuration.md: {sorted(missing)}"
    assert {"GITMEM_CONFIG", "XDG_DATA_HOME"} <= setting_names()  # the literal reads are found


def test_every_exit_code_and_http_status_is_documented() -> None:
    from gitmem import errors

    kinds = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.GitmemError)]
    rows = set(re.findall(r"^\| (\d+) \|", section("A tour of the CLI"), re.M))
    assert {str(c.exit_code) for c in kinds} | {"0"} == rows
    api = section("Errors", "docs/api.md")
    statuses = re.search(r"Errors are JSON.*?\n\n", api, re.S)
    assert statuses
    for status in {c.http_status for c in kinds} - {500} | {401, 413}:
        assert f" {status} " in statuses.group(0), f"HTTP {status} is not among the API's errors in docs/api.md"


def test_the_docs_name_the_commands_without_namespace() -> None:
    without = {name.removeprefix("gitmem ") for name, command in _commands(main)
               if not isinstance(command, click.Group)
               and not any(isinstance(p, click.Option) and "--namespace" in p.opts for p in command.params)}
    sentence = re.search(r"These work on the whole home and take none: (.*?)\.\n", DOCS, re.S)
    assert sentence, "README.md and docs/ no longer list the commands that take no --namespace"
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


def test_the_readme_is_an_overview_that_links_the_reference() -> None:
    lines = README.count("\n")
    assert lines <= 250, f"README.md has {lines} lines: the reference belongs in docs/ (about 200 at most here)"
    # The README's links and the site's home page (which takes the README's overview) name the same
    # pages: README from the root (docs/x.md), docs/index.md from docs/ (x.md).
    definitions = re.compile(r"^\[([a-z-]+)\]: (\S+)$", re.M)
    readme = dict(definitions.findall(README))
    site = dict(definitions.findall(PAGES["docs/index.md"]))
    assert readme and readme == {name: f"docs/{target}" for name, target in site.items()}
    for target in readme.values():
        assert (ROOT / target.split("#")[0]).is_file(), target
    used = set(re.findall(r"\]\[([a-z-]+)\]", README))
    assert used == set(readme), (sorted(used - set(readme)), sorted(set(readme) - used))
    assert '--8<-- "README.md:overview"' in PAGES["docs/index.md"]


class _Assets(HTMLParser):
    """Every address a page loads by itself: scripts, stylesheets, images, fonts (not links to follow)."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in ("script", "img", "iframe", "source") and values.get("src"):
            self.loaded.append(str(values["src"]))
        if tag == "link" and values.get("href") and values.get("rel") in ("stylesheet", "preload", "preconnect"):
            self.loaded.append(str(values["href"]))


def test_the_docs_site_builds_strict_and_loads_nothing_from_elsewhere(tmp_path: Path) -> None:
    site = tmp_path / "site"
    # Strict: a broken link or anchor, a page left out of the nav, a README section the home page
    # takes that is gone, each fails the build.
    # NO_MKDOCS_2_WARNING: Material's notice of its end of life, which would bury a failure's reason.
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                           cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stdout + built.stderr
    pages = sorted(site.glob("**/index.html"))
    assert {p.parent.name for p in pages} >= {p.removeprefix("docs/").removesuffix(".md")
                                              for p in PAGES if p.startswith("docs/") and p != "docs/index.md"}
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "A tour of the CLI" in home and "gitmem serve" in home  # the README's overview, taken in
    for page in pages:
        assets = _Assets()
        assets.feed(page.read_text(encoding="utf-8"))
        remote = [a for a in assets.loaded if re.match(r"(https?:)?//", a)]
        assert assets.loaded and not remote, f"{page.relative_to(site)} loads {remote}"
