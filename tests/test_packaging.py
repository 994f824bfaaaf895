"""The wheel carries every template folder and every Python package."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _packages() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(config["tool"]["setuptools"]["packages"])


def test_every_template_folder_ships_in_the_wheel() -> None:
    folders = {p for p in (ROOT / "templates").rglob("*") if p.is_dir()} | {ROOT / "templates"}
    expected = {"gitmem." + ".".join(p.relative_to(ROOT).parts) for p in folders}
    assert expected <= _packages(), f"add to pyproject's packages: {sorted(expected - _packages())}"


def test_every_python_package_ships_in_the_wheel() -> None:
    found = {".".join(p.parent.relative_to(ROOT).parts) for top in ("gitmem", "bots")
             for p in (ROOT / top).rglob("__init__.py")}
    assert found <= _packages(), f"add to pyproject's packages: {sorted(found - _packages())}"
