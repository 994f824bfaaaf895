"""Build gitmem/data/tech.json, the technology lexicon, from its maintained sources and overlay.yaml.

Usage (see README.md beside this file)::

    python tools/tech-lexicon/build.py --linguist PATH --stack-analyser PATH [--out gitmem/data/tech.json]

PATH is a clone (bare or not) of github-linguist/linguist and of specfy/stack-analyser; ``--rev``
options pick the revisions (HEAD by default), and the file records the commits it was built from.
The build is deterministic: the same inputs give the same bytes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sources import Repo, linguist_languages, stack_rules  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# stack-analyser's dependency types, as gitmem's ecosystems.
DEPENDENCY_ECOSYSTEMS = {
    "npm": "javascript", "deno": "javascript", "python": "python", "rust": "rust", "golang": "go",
    "php": "php", "ruby": "ruby", "java": "jvm", "elixir": "beam", "dotnet": "dotnet",
}
# Kinds whose technologies every language uses: naming one does not bind a memory to a file type.
GLOBAL_KINDS = {"db", "ci", "container", "iac", "hosting", "cloud", "monitoring", "format", "vcs", "web_server",
                "queue"}
# Kinds that are a language's own tooling: a memory naming one applies to files of its ecosystem.
TOOL_KINDS = {"package_manager", "linter", "formatter", "type_checker", "test", "builder", "runtime", "ide"}
# stack-analyser types that are not a kind of ours.
TYPE_KINDS = {"tool": "library", "app": "web_server", "cms": "framework", "automation": "test"}


def _expand(pattern: str) -> list[str]:
    """File names a simple stack-analyser file regex stands for (``jest.config.(js|ts)``), or none."""
    body = pattern.strip("^$").replace("\\.", ".").replace("\\/", "/")
    parts = re.split(r"\(([^()]*)\)", body)
    if any(ch in "".join(parts[::2]) for ch in "[]*+?{}\\|"):
        return []
    choices = [[p] if i % 2 == 0 else p.split("|") for i, p in enumerate(parts)]
    if any(any(ch in "".join(c) for ch in "[]*+?{}\\") for c in choices):
        return []
    return ["".join(combo) for combo in itertools.product(*choices)]


def _alias_text(alias: Any) -> str:
    return alias if isinstance(alias, str) else str(alias["text"])


def _norm_alias(alias: Any) -> Any:
    if isinstance(alias, str):
        return alias.lower()
    out = {k: alias[k] for k in ("text", "case", "before", "after", "not_after", "version") if k in alias}
    out["text"] = str(out["text"])
    if not out.get("case"):
        out["text"] = out["text"].lower()
    for key in ("before", "after", "not_after"):
        if key in out:
            out[key] = [str(w) for w in out[key]]
    return out


class Lexicon:
    """The lexicon under construction."""

    def __init__(self) -> None:
        self.techs: dict[str, dict[str, Any]] = {}
        self.files: dict[str, set[str]] = defaultdict(set)
        self.patterns: dict[str, set[str]] = defaultdict(set)
        self.extensions: dict[str, set[str]] = defaultdict(set)
        self.imports: dict[str, dict[str, str]] = defaultdict(dict)
        self.problems: list[str] = []

    def tech(self, key: str) -> dict[str, Any]:
        """The entry of a key, made empty on first use."""
        return self.techs.setdefault(key, {"name": key, "kinds": [], "ecosystems": None, "implies": set(),
                                           "aliases": [], "scope": None, "source": "overlay"})

    def add_files(self, key: str, names: list[str]) -> None:
        """Well-known files of a technology: exact names, or path patterns (with / or *)."""
        for name in names:
            (self.patterns if "/" in name or "*" in name else self.files)[name].add(key)

    def add_import(self, ecosystem: str, name: str, key: str) -> None:
        """A package name that shows a technology; the first technology to claim a name keeps it."""
        if ecosystem == "rust":
            name = name.replace("-", "_")
        held = self.imports[ecosystem].get(name)
        if held and held != key:
            self.problems.append(f"import {ecosystem}:{name} claimed by {held} and {key}; kept {held}")
            return
        self.imports[ecosystem][name] = key


def take_stack(lex: Lexicon, rules: list[tuple[str, dict[str, Any]]], config: dict[str, Any]) -> None:
    """The stack-analyser rules the overlay asks for, under gitmem's keys."""
    types, take, drop = set(config["types"]), set(config["take"]), set(config["drop"])
    rename: dict[str, str] = config["rename"]
    prefixes = tuple(config["drop_prefixes"])
    known = {rule["tech"] for _, rule in rules}
    for missing in sorted((take | drop | set(rename)) - known):
        lex.problems.append(f"stack-analyser has no rule {missing!r} (overlay names it)")
    for path, rule in rules:
        source_key = rule["tech"]
        wanted = rule["type"] in types or source_key in take
        if not wanted or source_key in drop:
            continue
        if source_key.startswith(prefixes) and source_key not in take and source_key not in rename:
            continue
        key = rename.get(source_key, source_key)
        entry = lex.tech(key)
        entry["name"] = rule["name"]
        entry["kinds"] = [TYPE_KINDS.get(rule["type"], rule["type"])]
        entry["source"] = f"stack-analyser {path}"
        ecosystems = set()
        for dep in rule.get("dependencies", []):
            ecosystem = DEPENDENCY_ECOSYSTEMS.get(dep["type"])
            if ecosystem is None:
                continue
            ecosystems.add(ecosystem)
            name = dep["name"]
            if isinstance(name, str):
                lex.add_import(ecosystem, name, key)
            elif re.fullmatch(r"\^@[\w-]+\\/", name["regex"]):
                lex.add_import(ecosystem, name["regex"][1:].replace("\\/", "/"), key)
        entry["ecosystems"] = sorted(ecosystems)
        files = rule.get("files")
        if isinstance(files, list):
            lex.add_files(key, files)
        elif isinstance(files, dict) and "regex" in files:
            lex.add_files(key, _expand(files["regex"]))
        entry["aliases"].append(rule["name"].lower())
        if re.fullmatch(r"[a-z][a-z0-9]{2,}", source_key) and source_key != key:
            entry["aliases"].append(source_key)


def merge_overlay(lex: Lexicon, techs: dict[str, dict[str, Any]]) -> None:
    """The overlay's technologies and corrections, over what the sources gave."""
    for key, spec in techs.items():
        entry = lex.tech(key)
        if entry["source"] == "overlay":
            entry["source"] = "overlay"
        elif spec.get("kinds") or spec.get("ecosystems") is not None:
            entry["source"] += " + overlay"
        for field in ("name", "scope"):
            if field in spec:
                entry[field] = spec[field]
        if "kinds" in spec:
            entry["kinds"] = list(spec["kinds"])
        if "ecosystems" in spec:
            entry["ecosystems"] = sorted(spec["ecosystems"])
        entry["implies"] |= set(spec.get("implies", []))
        lex.add_files(key, spec.get("files", []))
        lex.add_files(key, spec.get("patterns", []))
        for ext in spec.get("extensions", []):
            lex.extensions[ext].add(key)
        for ecosystem, names in spec.get("imports", {}).items():
            for name in names:
                lex.imports[ecosystem][name.replace("-", "_") if ecosystem == "rust" else name] = key
        drop = {a.lower() for a in spec.get("no_aliases", [])}
        added = [_norm_alias(a) for a in spec.get("aliases", [])]
        replaced = {_alias_text(a).lower() for a in added} | drop
        entry["aliases"] = [a for a in entry["aliases"] if _alias_text(a).lower() not in replaced] + added


def take_linguist(lex: Lexicon, languages: dict[str, Any], popular: list[str], mapping: dict[str, list[str]],
                  ecosystems_of: dict[str, list[str]]) -> None:
    """Extensions and file names of the languages gitmem knows; ambiguous ones settled or left out."""
    for name in mapping:
        if name not in languages:
            lex.problems.append(f"linguist has no language {name!r}")
    by_ext: dict[str, list[str]] = defaultdict(list)
    by_file: dict[str, list[str]] = defaultdict(list)
    for name in mapping:
        fields = languages.get(name, {})
        for ext in fields.get("extensions", []):
            by_ext[ext.lower()].append(name)
        for filename in fields.get("filenames", []):
            by_file[filename].append(name)

    def settle(key: str, names: list[str], primary: bool) -> list[str]:
        if len(names) > 1 and primary:
            first = [n for n in names if languages[n].get("extensions", [""])[0].lower() == key]
            names = first or names
        if len(names) > 1:
            names = [n for n in names if n in popular] or names
        if len(names) > 1:
            shared = set.intersection(*(
                set(itertools.chain.from_iterable(ecosystems_of.get(t, []) for t in mapping[n])) for n in names))
            if not shared:
                lex.problems.append(f"left out {key}: ambiguous between {', '.join(sorted(names))}")
                return []
        return names

    for ext, names in by_ext.items():
        for name in settle(ext, names, primary=True):
            lex.extensions[ext] |= set(mapping[name])
    for filename, names in by_file.items():
        for name in settle(filename, names, primary=False):
            lex.files[filename] |= set(mapping[name])


def finish(lex: Lexicon) -> None:
    """Each technology's scope, and checks that what the data names exists and aliases are unambiguous."""
    for key, entry in lex.techs.items():
        if not entry["kinds"]:
            lex.problems.append(f"{key} has no kind")
            entry["kinds"] = ["library"]
        kind = entry["kinds"][0]
        if entry["ecosystems"] is None or kind in GLOBAL_KINDS and entry["scope"] is None:
            entry["ecosystems"] = entry["ecosystems"] if kind not in GLOBAL_KINDS else []
            entry["ecosystems"] = entry["ecosystems"] or []
        if entry["scope"] is None and kind != "language" and len(entry["ecosystems"]) >= 3:
            # A client library in three ecosystems or more: a service every language talks to.
            entry["ecosystems"] = []
        if entry["scope"] is None:
            if kind == "language":
                entry["scope"] = "language"
            elif not entry["ecosystems"] or kind in GLOBAL_KINDS:
                entry["scope"] = "global"
            elif kind in TOOL_KINDS:
                entry["scope"] = "tool"
            else:
                entry["scope"] = "library"
        for implied in entry["implies"]:
            if implied not in lex.techs:
                lex.problems.append(f"{key} implies unknown {implied}")
    for table in (lex.files, lex.patterns, lex.extensions):
        for name, keys in table.items():
            for key in keys - set(lex.techs):
                lex.problems.append(f"{name} names unknown {key}")
    for ecosystem, names in lex.imports.items():
        for name, key in names.items():
            if key not in lex.techs:
                lex.problems.append(f"import {ecosystem}:{name} names unknown {key}")
    owners: dict[str, set[str]] = defaultdict(set)
    for key, entry in lex.techs.items():
        seen = set()
        unique = []
        for alias in entry["aliases"]:
            text = _alias_text(alias)
            folded = text if isinstance(alias, dict) and alias.get("case") else text.lower()
            if folded in seen:
                continue
            seen.add(folded)
            unique.append(alias)
            owners[text.lower()].add(key)
        entry["aliases"] = unique
    for text, keys in sorted(owners.items()):
        if len(keys) > 1:
            lex.problems.append(f"alias {text!r} is shared by {', '.join(sorted(keys))}")


def _by_file(ecosystem_files: dict[str, list[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for ecosystem, names in ecosystem_files.items():
        for name in names:
            out[name].add(ecosystem)
    return out


def render(lex: Lexicon, overlay: dict[str, Any], sources: list[dict[str, str]]) -> str:
    """The JSON text, one technology a line, sorted, so a rebuild's diff reads well."""
    techs = {}
    for key in sorted(lex.techs):
        entry = lex.techs[key]
        techs[key] = {
            "name": entry["name"], "kinds": entry["kinds"], "scope": entry["scope"],
            "ecosystems": sorted(entry["ecosystems"]), "implies": sorted(entry["implies"]),
            "aliases": entry["aliases"], "source": entry["source"],
        }
    data = {
        "format": 1,
        "about": "Technologies, their categories, ecosystems and the words for them; which files and imports "
                 "show each. Built by tools/tech-lexicon/build.py; do not edit by hand.",
        "sources": sources,
        "categories": overlay["categories"],
        "ecosystems": overlay["ecosystems"],
        "techs": techs,
        "extensions": {k: sorted(v) for k, v in sorted(lex.extensions.items())},
        "filenames": {k: sorted(v) for k, v in sorted(lex.files.items())},
        "patterns": {k: sorted(v) for k, v in sorted(lex.patterns.items())},
        "ecosystem_files": {name: sorted(ecos)
                            for name, ecos in sorted(_by_file(overlay.get("ecosystem_files") or {}).items())},
        "imports": {eco: dict(sorted(names.items())) for eco, names in sorted(lex.imports.items())},
    }
    lines = ["{"]
    items = list(data.items())
    for i, (field, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(value, dict) and field in {"techs", "extensions", "filenames", "patterns", "categories",
                                                  "ecosystem_files"}:
            lines.append(f"  {json.dumps(field)}: {{")
            inner = list(value.items())
            for j, (k, v) in enumerate(inner):
                sep = "," if j < len(inner) - 1 else ""
                lines.append(f"    {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}{sep}")
            lines.append(f"  }}{comma}")
        else:
            lines.append(f"  {json.dumps(field)}: {json.dumps(value, ensure_ascii=False)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def notice(linguist: Repo, stack: Repo) -> str:
    """The licences of the sources tech.json is drawn from, as their MIT licences ask to keep them."""
    parts = ["tech.json holds data drawn from the projects below, under their licences, with gitmem's own\n"
             "curated overlay (tools/tech-lexicon/overlay.yaml, MIT like gitmem).\n"]
    for title, repo in (("github-linguist/linguist", linguist), ("specfy/stack-analyser", stack)):
        parts.append(f"\n== {title} at {repo.commit()} ==\n\n{repo.show('LICENSE').strip()}\n")
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Build the lexicon; print what the build had to leave out; fail on problems in the overlay."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--linguist", type=Path, required=True, help="a clone of github-linguist/linguist")
    parser.add_argument("--linguist-rev", default="HEAD")
    parser.add_argument("--stack-analyser", type=Path, required=True, help="a clone of specfy/stack-analyser")
    parser.add_argument("--stack-analyser-rev", default="HEAD")
    parser.add_argument("--out", type=Path, default=ROOT / "gitmem" / "data" / "tech.json")
    parser.add_argument("--overlay", type=Path, default=HERE / "overlay.yaml")
    args = parser.parse_args(argv)

    overlay = yaml.safe_load(args.overlay.read_text(encoding="utf-8"))
    linguist = Repo(args.linguist, args.linguist_rev)
    stack = Repo(args.stack_analyser, args.stack_analyser_rev)
    languages, popular = linguist_languages(linguist)

    lex = Lexicon()
    take_stack(lex, stack_rules(stack), overlay["stack_analyser"])
    merge_overlay(lex, overlay["techs"])
    ecosystems_of = {k: (v["ecosystems"] or []) for k, v in lex.techs.items()}
    take_linguist(lex, languages, popular, overlay["linguist"], ecosystems_of)
    for ecosystem, names in (overlay.get("imports") or {}).items():
        for name, key in names.items():
            lex.imports[ecosystem][name] = key
    finish(lex)

    sources = [
        {"name": "github-linguist/linguist", "url": "https://github.com/github-linguist/linguist",
         "commit": linguist.commit(), "files": "lib/linguist/languages.yml, lib/linguist/popular.yml",
         "licence": "MIT", "copyright": "Copyright (c) 2017 GitHub, Inc."},
        {"name": "specfy/stack-analyser", "url": "https://github.com/specfy/stack-analyser",
         "commit": stack.commit(), "files": "src/rules/**/*.ts", "licence": "MIT",
         "copyright": "Copyright (c) 2023 Specfy"},
        {"name": "gitmem overlay", "files": "tools/tech-lexicon/overlay.yaml", "licence": "MIT",
         "copyright": "the gitmem authors"},
    ]
    fatal = [p for p in lex.problems if not p.startswith("left out") and "claimed by" not in p]
    for problem in lex.problems:
        print(("error: " if problem in fatal else "note: ") + problem, file=sys.stderr)
    if fatal:
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(lex, overlay, sources), encoding="utf-8")
    args.out.with_name(args.out.stem + "-LICENSES.txt").write_text(notice(linguist, stack), encoding="utf-8")
    kinds = defaultdict(int)
    for entry in lex.techs.values():
        kinds[entry["kinds"][0]] += 1
    print(f"wrote {args.out}: {len(lex.techs)} technologies, {len(lex.extensions)} extensions, "
          f"{len(lex.files)} file names, {len(lex.patterns)} path patterns, "
          f"{sum(len(v) for v in lex.imports.values())} import names", file=sys.stderr)
    print("by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda x: -x[1])),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
