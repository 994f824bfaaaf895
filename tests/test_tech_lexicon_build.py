"""tools/tech-lexicon/: reading stack-analyser's rules, building the data file, the data in step with the overlay."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from gitmem import lexicon

TOOL = Path(__file__).resolve().parent.parent / "tools" / "tech-lexicon"


def tool(name: str) -> ModuleType:
    """Import ``tools/tech-lexicon/<name>.py`` (the tool is a folder of scripts, not a package)."""
    sys.path.insert(0, str(TOOL))
    try:
        spec = importlib.util.spec_from_file_location(name, TOOL / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(TOOL))


RULE = """import { register } from '../../register.js';
import type { ComponentMatcher } from '../../types/rule.js';

// a comment with a / slash
register({
  tech: 'angular',
  name: 'Angular',
  type: 'ui_framework',
  files: ['angular.json'],
  example: "it's \\"quoted\\"",
  dependencies: [
    { type: 'npm', name: 'angular' },
    { type: 'npm', name: /^@angular\\//, example: '@angular/forms' },
  ],
  detect: [detectAngular],
  extensions: ['.ng', /\\.ngx?$/],
});

const later = a / b;
"""


def test_parse_register_reads_a_rule_object() -> None:
    rule = tool("sources").parse_register(RULE)
    assert rule["tech"] == "angular" and rule["type"] == "ui_framework"
    assert rule["files"] == ["angular.json"]
    assert rule["example"] == 'it\'s "quoted"'
    assert rule["dependencies"] == [{"type": "npm", "name": "angular"},
                                    {"type": "npm", "name": {"regex": "^@angular\\/"}, "example": "@angular/forms"}]
    assert rule["detect"] == [{"ident": "detectAngular"}]
    assert rule["extensions"] == [".ng", {"regex": "\\.ngx?$"}]


def test_parse_register_refuses_what_it_cannot_read() -> None:
    sources = tool("sources")
    with pytest.raises(sources.ParseError, match="no register"):
        sources.parse_register("export const x = 1;")
    with pytest.raises(sources.ParseError):
        sources.parse_register("register({ tech: 'x', name: ")


def test_simple_file_regexes_expand_to_names() -> None:
    expand = tool("build")._expand
    assert expand("jest.config.(js|ts)") == ["jest.config.js", "jest.config.ts"]
    assert expand("tsconfig(.[a-zA-Z0-9_-]+)?.json") == []


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def commit_tree(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    git(root, "init", "-q")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "data")
    return root


LANGUAGES = """---
Python:
  type: programming
  extensions: [".py", ".spec"]
  filenames: [SConstruct]
Ruby:
  type: programming
  extensions: [".rb", ".spec"]
Go:
  type: programming
  extensions: [".go"]
"""
DJANGO = ("register({ tech: 'django', name: 'Django', type: 'framework', "
          "dependencies: [{ type: 'python', name: 'django' }] });")
PNPM = "register({ tech: 'pnpm', name: 'pnpm', type: 'package_manager', files: ['pnpm-lock.yaml'] });"
OVERLAY = {
    "categories": {"package_manager": {"label": "package manager", "words": ["package manager", "包管理器"]}},
    "ecosystems": {"python": "Python", "javascript": "JavaScript", "go": "Go", "ruby": "Ruby"},
    "stack_analyser": {"types": ["framework", "package_manager"], "take": [], "drop": [], "rename": {},
                       "drop_prefixes": []},
    "linguist": {"Python": ["python"], "Ruby": ["ruby"], "Go": ["go"]},
    "techs": {
        "python": {"name": "Python", "kinds": ["language"], "ecosystems": ["python"], "aliases": ["python"]},
        "ruby": {"name": "Ruby", "kinds": ["language"], "ecosystems": ["ruby"], "aliases": ["ruby"]},
        "go": {"name": "Go", "kinds": ["language"], "ecosystems": ["go"],
               "aliases": ["golang", {"text": "Go", "case": True, "before": ["in"]}]},
        "pnpm": {"ecosystems": ["javascript"], "aliases": ["pnpm"]},
    },
    "ecosystem_files": {"python": ["pyproject.toml"]},
}


def build(tmp_path: Path, overlay: dict[str, object]) -> tuple[int, Path]:
    linguist = commit_tree(tmp_path / "linguist", {"lib/linguist/languages.yml": LANGUAGES, "LICENSE": "MIT (linguist)",
                                                   "lib/linguist/popular.yml": "- Python\n- Go\n"})
    stack = commit_tree(tmp_path / "stack", {"src/rules/framework/django.ts": DJANGO, "LICENSE": "MIT (specfy)",
                                             "src/rules/package_manager/pnpm.ts": PNPM})
    (tmp_path / "overlay.yaml").write_text(yaml.safe_dump(overlay, allow_unicode=True), encoding="utf-8")
    out = tmp_path / "tech.json"
    code = tool("build").main(["--linguist", str(linguist), "--stack-analyser", str(stack), "--out", str(out),
                               "--overlay", str(tmp_path / "overlay.yaml")])
    return code, out


def test_build_merges_the_sources_and_the_overlay(tmp_path: Path) -> None:
    code, out = build(tmp_path, OVERLAY)
    assert code == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["techs"]["django"]["ecosystems"] == ["python"] and data["techs"]["django"]["scope"] == "library"
    assert data["techs"]["pnpm"]["scope"] == "tool"
    assert data["imports"]["python"] == {"django": "django"}
    assert data["filenames"]["pnpm-lock.yaml"] == ["pnpm"] and data["filenames"]["SConstruct"] == ["python"]
    # .spec is Python's and Ruby's; popular.yml settles it for Python.
    assert data["extensions"][".spec"] == ["python"] and data["extensions"][".rb"] == ["ruby"]
    assert [s["name"] for s in data["sources"]][:2] == ["github-linguist/linguist", "specfy/stack-analyser"]
    assert all(len(s["commit"]) == 40 for s in data["sources"][:2])
    assert data["ecosystem_files"] == {"pyproject.toml": ["python"]}
    licences = (tmp_path / "tech-LICENSES.txt").read_text(encoding="utf-8")
    assert "MIT (linguist)" in licences and "MIT (specfy)" in licences
    # The same inputs give the same bytes.
    again = tmp_path / "again.json"
    assert tool("build").main(["--linguist", str(tmp_path / "linguist"), "--stack-analyser", str(tmp_path / "stack"),
                               "--out", str(again), "--overlay", str(tmp_path / "overlay.yaml")]) == 0
    assert again.read_bytes() == out.read_bytes()


def test_build_refuses_an_overlay_naming_what_is_not_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = json.loads(json.dumps(OVERLAY))
    broken["stack_analyser"]["take"] = ["no-such-rule"]
    broken["techs"]["pnpm"]["implies"] = ["nothing-known"]
    broken["techs"]["ruby"]["aliases"] = ["python"]
    code, out = build(tmp_path, broken)
    err = capsys.readouterr().err
    assert code == 1 and not out.exists()
    assert "stack-analyser has no rule 'no-such-rule'" in err
    assert "pnpm implies unknown nothing-known" in err
    assert "alias 'python' is shared by python, ruby" in err


def test_the_data_file_is_in_step_with_the_overlay() -> None:
    """Every technology and name the overlay gives is in tech.json: rebuild after editing the overlay."""
    overlay = yaml.safe_load((TOOL / "overlay.yaml").read_text(encoding="utf-8"))
    data = lexicon.data()
    for key, spec in overlay["techs"].items():
        assert key in data.techs, f"{key} is in overlay.yaml, not in tech.json: rebuild (tools/tech-lexicon/README.md)"
        for alias in spec.get("aliases", []):
            text = alias if isinstance(alias, str) else str(alias["text"])
            assert text.lower() in data.aliases, f"{text!r} of {key}: rebuild tech.json"
    for category, spec in overlay["categories"].items():
        assert data.category_words[category] == tuple(spec["words"])
