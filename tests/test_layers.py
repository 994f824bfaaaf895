"""The layering rule holds: import-linter's contracts (pyproject.toml) and the facade's size."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_are_kept() -> None:
    command = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    done = subprocess.run([sys.executable, "-c", command, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "BROKEN" not in done.stdout and "KEPT" in done.stdout


def test_nothing_outside_the_repository_layer_imports_pygit2() -> None:
    offenders = [str(path.relative_to(ROOT)) for folder in ("gitmem", "bots") for path in (ROOT / folder).rglob("*.py")
                 if "repo" not in path.relative_to(ROOT).parts
                 and any(line.lstrip().startswith(("import pygit2", "from pygit2"))
                         for line in path.read_text(encoding="utf-8").splitlines())]
    assert offenders == []
