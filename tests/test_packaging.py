"""The wheel carries every template folder, every Python package and the data files the core reads,
and depends on nothing it does not use."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import packages_distributions
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


# Declared dependencies gitmem's own code never imports, each with the module that imports it and
# what that module imports (checked below, so the reason cannot go stale unnoticed).
NEEDED_BY = {
    # kombu's Redis transport imports it; kombu lists it only under its "redis" extra, with an exact pin.
    "packaging": ("kombu.transport.redis", "packaging"),
}


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0]).lower()


def _imported(folder: Path) -> set[str]:
    """The top-level modules the Python files under ``folder`` import."""
    found: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def test_every_dependency_is_used() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    imported = _imported(ROOT / "gitmem") | _imported(ROOT / "bots")
    provides: dict[str, set[str]] = {}
    for module, distributions in packages_distributions().items():
        for distribution in distributions:
            provides.setdefault(_name(distribution), set()).add(module)
    unused = []
    for requirement in config["project"]["dependencies"]:
        name = _name(requirement)
        if provides.get(name, set()) & imported:
            continue
        if name in NEEDED_BY:
            module, needs = NEEDED_BY[name]
            spec = importlib.util.find_spec(module)
            assert spec is not None and spec.origin is not None, f"{name}: {module} is gone"
            source = Path(spec.origin).read_text(encoding="utf-8")
            assert re.search(rf"^\s*(?:import|from) {re.escape(needs)}\b", source, re.MULTILINE), \
                f"{name}: {module} no longer imports {needs}; is {name} still needed?"
            continue
        unused.append(name)
    assert not unused, f"declared in pyproject.toml, imported by nothing: {unused}"
