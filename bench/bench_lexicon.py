"""Benchmark the lexicon and path profiles: do the rules `applies()` accepts for a file fit it?

On the real statements of ``tests/data/cursorrules.jsonl``, the rule files of several languages and
frameworks and some team-wide ones (``tests/data/lexicon_labels.json`` lists them), for each file
(``app/models.py``, ``contracts/Token.sol``, ``README.md``, ``src/app.ts`` + ``package.json``,
``src/main.rs``, ``main.go``, ``src/Main.java``):

* **applicable**: the share of the statements ``applies()`` accepts that were written for the file's
  language or framework or are team-wide; **own**: the share of the file's own rules (its language's
  and framework's, not the team-wide ones) it accepts; **team-wide**: the share of team-wide rules.
* Two labellings: **by source**, a statement takes its rule file's label; **by reading**, a statement
  that read on its own is generic (or another framework's: the Solana half of rust.mdc) takes that.
* Baseline in the same run: accepting everything, what ``context`` does before this module.
* Runs without file heads (path only) and with heads (a Django model's imports, a contract's
  OpenZeppelin import, an Anchor program's ``use``): imports are a framework's signs. A third run
  adds to each statement's names those of its rule file's name (``rust.mdc``), as a memory that
  keeps where it was ingested from could.
* Speed: ``mentions()`` over all statements, cold and cached; ``profile()`` per path; the data
  file's load time (median of fresh loads).

Prints Markdown and writes JSON (default ``bench/results/lexicon.json``)::

    .venv/bin/python bench/bench_lexicon.py
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitmem import lexicon, pathprofile  # noqa: E402

DATA = ROOT / "tests" / "data" / "cursorrules.jsonl"
LABELS = ROOT / "tests" / "data" / "lexicon_labels.json"

# Each file: the paths `context` is given, heads for the run with heads, and the labels it owns.
FILES: list[dict[str, Any]] = [
    {"name": "app/models.py", "paths": ["app/models.py"], "own": ["python"],
     "heads": {"app/models.py": "from django.db import models\n\n\nclass Order(models.Model):\n"},
     "own_with_heads": ["python", "django"]},
    {"name": "contracts/Token.sol", "paths": ["contracts/Token.sol"], "own": ["solidity"],
     "heads": {"contracts/Token.sol": 'pragma solidity ^0.8.24;\n\nimport "@openzeppelin/contracts/token/ERC20/'
                                      'ERC20.sol";\n'}},
    {"name": "README.md", "paths": ["README.md"], "own": []},
    {"name": "src/app.ts + package.json", "paths": ["src/app.ts", "package.json"], "own": ["typescript", "javascript"],
     "heads": {"package.json": '{"name": "api", "dependencies": {"zod": "^3"}, "devDependencies": {"vitest": "^2", '
                               '"typescript": "^5"}}'}},
    {"name": "src/main.rs", "paths": ["src/main.rs"], "own": ["rust"],
     "heads": {"src/main.rs": "use anchor_lang::prelude::*;\n\ndeclare_id!(\"Fg6P\");\n"},
     "own_with_heads": ["rust", "solana"]},
    {"name": "main.go", "paths": ["main.go"], "own": ["go"]},
    {"name": "src/Main.java", "paths": ["src/Main.java"], "own": ["java"]},
]


def load(data: Path, labels: Path) -> list[dict[str, str]]:
    """The labelled statements: text, source file, label by source and label by reading."""
    spec = json.loads(labels.read_text(encoding="utf-8"))
    by_source, by_reading = spec["by_source"], spec["by_reading"]
    rows = []
    for line in data.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        label = by_source.get(row.get("source", ""))
        if label:
            rows.append({"text": row["text"], "source": row["source"], "by_source": label,
                         "by_reading": by_reading.get(row["text"], label)})
    return rows


def score(rows: list[dict[str, str]], accepted: list[bool], own: set[str], labelling: str) -> dict[str, Any]:
    """Applicable share of what was accepted, and the shares of own and team-wide rules accepted."""
    fits = own | {"generic"}
    taken = [r for r, ok in zip(rows, accepted, strict=True) if ok]
    own_rows = [ok for r, ok in zip(rows, accepted, strict=True) if r[labelling] in own]
    generic_rows = [ok for r, ok in zip(rows, accepted, strict=True) if r[labelling] == "generic"]
    return {
        "accepted": len(taken),
        "applicable": round(sum(r[labelling] in fits for r in taken) / len(taken), 4) if taken else None,
        "own_rules": len(own_rows),
        "own_accepted": round(sum(own_rows) / len(own_rows), 4) if own_rows else None,
        "team_wide_accepted": round(sum(generic_rows) / len(generic_rows), 4) if generic_rows else None,
        "baseline_applicable": round(sum(r[labelling] in fits for r in rows) / len(rows), 4),
    }


def run_file(spec: dict[str, Any], rows: list[dict[str, str]], named: list[frozenset[str]],
             heads: bool) -> dict[str, Any]:
    """One file's figures for both labellings, and the statements it got wrong."""
    head_of = spec.get("heads", {}) if heads else {}
    profiles = [pathprofile.profile(p, head_of.get(p)) for p in spec["paths"]]
    accepted = [pathprofile.applies_to_any(n, profiles) for n in named]
    own = set(spec.get("own_with_heads", spec["own"]) if heads else spec["own"])
    out: dict[str, Any] = {"file": spec["name"], "heads": heads,
                           "profile": {p.path: {"languages": sorted(p.languages), "ecosystems": sorted(p.ecosystems),
                                                "techs": sorted(p.techs)} for p in profiles}}
    for labelling in ("by_source", "by_reading"):
        out[labelling] = score(rows, accepted, own, labelling)
    fits = own | {"generic"}
    out["wrongly_accepted"] = [
        {"text": r["text"], "source": r["source"], "label": r["by_reading"], "names": sorted(n)}
        for r, n, ok in zip(rows, named, accepted, strict=True) if ok and r["by_reading"] not in fits]
    out["wrongly_refused"] = [
        {"text": r["text"], "source": r["source"], "label": r["by_reading"], "names": sorted(n),
         "why": next(filter(None, (pathprofile.why_not(n, p) for p in profiles)), "")}
        for r, n, ok in zip(rows, named, accepted, strict=True) if not ok and r["by_reading"] in fits]
    return out


def speed(texts: list[str]) -> dict[str, float]:
    """Load time of the data file, mentions() over every statement cold and cached, profile() per path."""
    loads = []
    for _ in range(15):
        lexicon.data.cache_clear()
        started = time.perf_counter()
        lexicon.data()
        loads.append(time.perf_counter() - started)
    lexicon._alias_scanner.cache_clear()
    lexicon.mentions.cache_clear()
    started = time.perf_counter()
    for text in texts:
        lexicon.mentions(text)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    for text in texts:
        lexicon.mentions(text)
    cached = time.perf_counter() - started
    paths = [f"pkg{i}/module{i}.{ext}" for i in range(400) for ext in ("py", "ts", "rs", "go", "java")]
    pathprofile.profile.cache_clear()
    started = time.perf_counter()
    for path in paths:
        pathprofile.profile(path)
    per_path = (time.perf_counter() - started) / len(paths)
    return {"load_average": round(os.getloadavg()[0], 2),
            "data_load_ms_median": round(statistics.median(loads) * 1000, 2),
            "data_load_ms_max": round(max(loads) * 1000, 2),
            "statements": len(texts),
            "mentions_all_cold_ms": round(cold * 1000, 1), "mentions_all_cached_ms": round(cached * 1000, 2),
            "profile_per_path_us": round(per_path * 1e6, 1)}


def table(results: list[dict[str, Any]], labelling: str) -> list[str]:
    """Markdown rows of one labelling's figures."""
    lines = [f"| file | heads | accepted | applicable ({labelling.replace('_', ' ')}) | baseline | own accepted | "
             "team-wide accepted |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        s = r[labelling]
        lines.append(f"| {r['file']} | {'yes' if r['heads'] else 'no'} | {s['accepted']} | "
                     f"{_pct(s['applicable'])} | {_pct(s['baseline_applicable'])} | "
                     f"{_pct(s['own_accepted'])} of {s['own_rules']} | {_pct(s['team_wide_accepted'])} |")
    return lines


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def overall(results: list[dict[str, Any]], labelling: str) -> dict[str, Any]:
    """Micro-averages over the files of one run."""
    accepted = sum(r[labelling]["accepted"] for r in results)
    fitting = sum(r[labelling]["accepted"] * (r[labelling]["applicable"] or 0) for r in results)
    own = sum(r[labelling]["own_rules"] for r in results)
    own_taken = sum(r[labelling]["own_rules"] * (r[labelling]["own_accepted"] or 0) for r in results)
    return {"applicable": round(fitting / accepted, 4) if accepted else None,
            "own_accepted": round(own_taken / own, 4) if own else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "lexicon.json")
    parser.add_argument("--show", type=int, default=8, help="misjudged statements to print per file")
    parser.add_argument("--keep", type=int, default=12, help="misjudged statements kept per file in the JSON")
    args = parser.parse_args(argv)
    for path, flag in ((args.data, "--data PATH to cursorrules.jsonl"), (args.labels, "--labels PATH")):
        if not path.exists():
            parser.error(f"{path} not found; pass {flag}")

    rows = load(args.data, args.labels)
    if not rows:
        parser.error(f"{args.data} holds none of the rule files {args.labels} labels")
    all_texts = [json.loads(line)["text"] for line in args.data.read_text(encoding="utf-8").splitlines()]
    figures = speed(all_texts)
    named = [lexicon.mentions(r["text"]) for r in rows]
    # What a memory's text names, and that with its source's name (a memory ingested from rust.mdc).
    with_source = [n | lexicon.mentions_in_name(r["source"]) for n, r in zip(named, rows, strict=True)]
    runs = {"paths_only": [run_file(spec, rows, named, False) for spec in FILES],
            "with_heads": [run_file(spec, rows, named, True) for spec in FILES],
            "paths_only_text_and_source_name": [run_file(spec, rows, with_source, False) for spec in FILES]}

    print(f"# Lexicon: {len(rows)} labelled statements of {len({r['source'] for r in rows})} rule files\n")
    titles = {"paths_only": "Paths only, the statement's words", "with_heads": "With file heads",
              "paths_only_text_and_source_name": "Paths only, the statement's words and its rule file's name"}
    for run, results in runs.items():
        print(f"## {titles[run]}\n")
        for labelling in ("by_source", "by_reading"):
            print("\n".join(table(results, labelling)))
            total = overall(results, labelling)
            print(f"\nall files, {labelling.replace('_', ' ')}: applicable {_pct(total['applicable'])}, "
                  f"own rules accepted {_pct(total['own_accepted'])}\n")
    print("## Speed\n")
    print("| measure | value |\n| --- | --- |")
    for key, value in figures.items():
        print(f"| {key} | {value} |")
    print("\n## Misjudged (by reading, paths only)\n")
    for result in runs["paths_only"]:
        wrong = result["wrongly_accepted"][:args.show]
        refused = result["wrongly_refused"][:args.show]
        if wrong or refused:
            print(f"### {result['file']}\n")
        for item in wrong:
            print(f"- accepted, but {item['label']}: {item['text'][:110]!r} (names {', '.join(item['names']) or '-'})")
        for item in refused:
            print(f"- refused, but {item['label']}: {item['text'][:110]!r} ({item['why']})")
        if wrong or refused:
            print()

    for results in runs.values():
        # Keep the results file small: the counts, and the first misjudged statements of each file.
        for row in results:
            for key in ("wrongly_accepted", "wrongly_refused"):
                row[f"{key}_count"] = len(row[key])
                row[key] = row[key][:args.keep]
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"), "python": platform.python_version(),
        "statements": len(rows), "sources": sorted({r["source"] for r in rows}),
        "technologies": len(lexicon.data().techs), "speed": figures,
        **runs,
        "overall": {run: {lab: overall(res, lab) for lab in ("by_source", "by_reading")} for run, res in runs.items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
