"""The wheel carries every template folder, every Python package and the data files the core reads."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
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


def test_the_technology_lexicon_is_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "*.json" in config["tool"]["setuptools"]["package-data"]["gitmem.data"]
    assert (ROOT / "gitmem" / "data" / "tech.json").is_file()


def test_the_built_wheel_carries_the_lexicon_and_the_templates(tmp_path: Path) -> None:
    """Build the wheel for real (pip, in a copy of the tree) and read what it holds."""
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "dist", "*.egg-info", "node_modules", "__pycache__", ".*_cache"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"),
                           str(source)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("gitmem-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"gitmem/data/tech.json", "gitmem/data/tech-LICENSES.txt", "gitmem/data/__init__.py", "gitmem/lexicon.py",
            "gitmem/pathprofile.py", "gitmem/py.typed", "gitmem/templates/web/base.html"} <= names
    data = json.loads(zipfile.ZipFile(wheel).read("gitmem/data/tech.json"))
    assert len(data["techs"]) >= 250
