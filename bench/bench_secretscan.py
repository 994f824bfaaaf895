"""What the secret scanner catches, what it flags wrongly, and what it costs, against a baseline in the same run.

* Formats: each of the 49 formats of ``tests/secret_formats.py`` counts as caught when ``mask``
  leaves none of its marked secrets. ``--before REV`` scans them with the scanner of a git
  revision as well (its ``gitmem/`` checked out into a temporary folder), for a before/after table.
* False alarms: the statements of ``tests/data/cursorrules.jsonl`` (5,064) that ``find`` flags.
* Cost: the time to scan those statements, as a ratio to detect-secrets' own line scan over the
  same statements with the same plugins (the floor gitmem adds its formats to).

Prints a Markdown table, or JSON with ``--json``. Run from the repository root::

    .venv/bin/python bench/bench_secretscan.py --before main
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.secret_formats import FORMATS, unmark  # noqa: E402

DATA = ROOT / "tests" / "data" / "cursorrules.jsonl"


def caught(scanner: ModuleType) -> dict[str, bool]:
    """For each format, whether ``scanner.mask`` hides every secret of it."""
    out = {}
    for name, marked in FORMATS.items():
        text, secrets = unmark(marked)
        masked, _ = scanner.mask(text)
        out[name] = not any(secret in masked for secret in secrets)
    return out


def scanner_at(revision: str, folder: Path) -> ModuleType:
    """The ``gitmem.secretscan`` of a git revision, imported from a copy of its ``gitmem/`` in ``folder``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "gitmem"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    saved = {name: module for name, module in sys.modules.items() if name == "gitmem" or name.startswith("gitmem.")}
    for name in saved:
        del sys.modules[name]
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module("gitmem.secretscan")
    finally:
        sys.path.remove(str(folder))
        for name in [n for n in sys.modules if n == "gitmem" or n.startswith("gitmem.")]:
            sys.modules[f"before.{name}"] = sys.modules.pop(name)
        sys.modules.update(saved)


def timed(scan: Any, texts: list[str], rounds: int, fresh: Any = None) -> float:
    """The best of ``rounds`` times to scan every text; ``fresh()`` before each round empties a cache."""
    best = float("inf")
    for _ in range(rounds):
        if fresh is not None:
            fresh()
        started = time.perf_counter()
        for text in texts:
            list(scan(text))
        best = min(best, time.perf_counter() - started)
    return best


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; returns the figures it printed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a git revision whose scanner to compare with (e.g. main)")
    parser.add_argument("--data", type=Path, default=DATA, help="statements, one JSON object a line")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    if not args.data.is_file():
        parser.error(f"no data file {args.data}")
    texts = [json.loads(line)["text"] for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]

    from gitmem import secretscan

    after = caught(secretscan)
    before: dict[str, bool] | None = None
    if args.before:
        with tempfile.TemporaryDirectory() as folder:
            before = caught(scanner_at(args.before, Path(folder)))
    false_alarms = [text for text in texts if secretscan.find(text)]
    floor = secretscan._scanner()
    floor_seconds = timed(floor, texts, args.rounds)
    # gitmem scans a line once per process: time the first scan, not the cache's answer.
    seconds = timed(secretscan.find, texts, args.rounds, fresh=secretscan._scanned.cache_clear)
    figures: dict[str, Any] = {
        "formats": len(FORMATS), "caught": sum(after.values()),
        "caught_before": sum(before.values()) if before is not None else None,
        "missed": [name for name, ok in after.items() if not ok],
        "statements": len(texts), "false_alarms": len(false_alarms),
        "scan_ms_per_statement": round(seconds / len(texts) * 1000, 4),
        "ratio_to_detect_secrets": round(seconds / floor_seconds, 2),
        "table": {name: {"before": before[name] if before is not None else None, "after": ok}
                  for name, ok in after.items()},
    }
    if args.json:
        print(json.dumps(figures, indent=1, ensure_ascii=False))
        return figures
    print("| format | before | after |\n| --- | --- | --- |" if before is not None
          else "| format | caught |\n| --- | --- |")
    for name, ok in after.items():
        mark = "yes" if ok else "**no**"
        print(f"| {name} | {'yes' if before[name] else '**no**'} | {mark} |" if before is not None
              else f"| {name} | {mark} |")
    total = f"{figures['caught_before']} → " if before is not None else ""
    print(f"\ncaught: {total}{figures['caught']} of {figures['formats']}; false alarms: {figures['false_alarms']} "
          f"of {figures['statements']} statements; scanning costs {figures['ratio_to_detect_secrets']}x "
          f"detect-secrets' own scan ({figures['scan_ms_per_statement']} ms a statement)")
    return figures


if __name__ == "__main__":
    main()
