"""Purging a memory from a long history, against git's own rewrite of the same history, in the same run.

A namespace gets ``--commits`` commits through the service (statements of the data set, one
``remember`` each), with the memory to purge remembered a third of the way in, amended and
discussed later, and quoted by another memory. Then, on copies of the same repository:

* gitmem: ``gitmem purge --history`` asked and approved (:mod:`gitmem.redaction`): every commit
  from the memory's first on rewritten, refs moved, review records remapped, the redaction record
  committed, reflogs and old objects deleted (a full ``git repack -a -d``), the index rebuilt;
* the floor: ``git fast-export --all | git fast-import`` into an empty repository, then ``git
  repack -a -d``: git's own tools rewriting every commit of the history (what ``git filter-repo``
  runs), without deciding anything.

Each runs ``--rounds`` times on fresh copies, in turns; the ratio is gitmem's median over the floor's.

    .venv/bin/python bench/bench_purge.py                  # 1,000 commits, 3 rounds
    .venv/bin/python bench/bench_purge.py --commits 200 --rounds 1 --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_api import DATA, load_statements  # noqa: E402

from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402

SECRET = "The payroll box's staging password is written on the card in Ann's drawer"


def build(home: Path, texts: list[str], commits: int) -> str:
    """The namespace of ``commits`` commits; the id of the memory to purge."""
    service = MemoryService(Settings(home=home))
    try:
        service.init("default")
        secret = ""
        for n in range(commits - 4):
            service.remember("default", f"{texts[n % len(texts)]} [{n}]", type="fact")
            if n == commits // 3:
                made = service.remember("default", SECRET, type="fact").memory
                assert made is not None
                secret = made.id
        service.amend("default", secret, text=SECRET + ", and the spare key", actor="ann")
        service.feedback("default", secret, "discuss", actor="bob", text="Should this be here?")
        service.remember("default", f"Onboarding notes say: {SECRET}", type="fact")
        return secret
    finally:
        service.close()


def gitmem_purge(home: Path, memory_id: str) -> float:
    service = MemoryService(Settings(home=home))
    try:
        started = time.perf_counter()
        review = service.purge_history("default", memory_id, actor="ann", reason="a password in a memory")
        service.reviews.approve("default", review.number, actor="ada", admin=True)
        took = time.perf_counter() - started
    finally:
        service.close()
    repo = home / "repos" / "default.git"
    found = subprocess.run(["git", "--git-dir", str(repo), "log", "-p", "--all"], capture_output=True,
                           text=True, check=True).stdout
    if SECRET in found:
        raise RuntimeError("the purge left the text in the history")
    return took


def git_rewrite(repo: Path, into: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["git", "init", "-q", "--bare", str(into)], check=True)
    exported = subprocess.Popen(["git", "--git-dir", str(repo), "fast-export", "--all", "--signed-tags=strip"],
                                stdout=subprocess.PIPE)
    subprocess.run(["git", "--git-dir", str(into), "fast-import", "--quiet"], stdin=exported.stdout, check=True)
    assert exported.stdout is not None
    exported.stdout.close()
    if exported.wait() != 0:
        raise RuntimeError("git fast-export failed")
    subprocess.run(["git", "--git-dir", str(into), "repack", "-a", "-d", "-q"], check=True)
    return time.perf_counter() - started


def run(texts: list[str], commits: int, rounds: int, tmp: Path) -> dict[str, Any]:
    made = tmp / "made"
    started = time.perf_counter()
    memory_id = build(made, texts, commits)
    built = time.perf_counter() - started
    repo = made / "repos" / "default.git"
    count = int(subprocess.run(["git", "--git-dir", str(repo), "rev-list", "--count", "--all"], capture_output=True,
                               text=True, check=True).stdout)
    times: dict[str, list[float]] = {"gitmem": [], "floor": []}
    for r in range(rounds):
        home = tmp / f"home-{r}"
        shutil.copytree(made, home, symlinks=True)
        floor = tmp / f"floor-{r}.git"
        for name in ("gitmem", "floor") if r % 2 == 0 else ("floor", "gitmem"):
            took = gitmem_purge(home, memory_id) if name == "gitmem" else git_rewrite(
                home / "repos" / "default.git", floor)
            times[name].append(took)
        shutil.rmtree(home)
        shutil.rmtree(floor)
    ratios = [a / b for a, b in zip(times["gitmem"], times["floor"], strict=True)]
    return {"when": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
            "cpus": os.cpu_count(), "commits": count, "rounds": rounds, "build_seconds": round(built, 1),
            "median_seconds": {k: round(statistics.median(v), 3) for k, v in times.items()},
            "median_ratio_to_floor": round(statistics.median(ratios), 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "purge.json")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"error: {args.data} not found; pass --data PATH", file=sys.stderr)
        raise SystemExit(2)
    if args.commits < 20 or args.rounds < 1:
        print("error: --commits must be at least 20 and --rounds at least 1", file=sys.stderr)
        raise SystemExit(2)
    with tempfile.TemporaryDirectory() as folder:
        figures = run(load_statements(args.data), args.commits, args.rounds, Path(folder))
    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        print(f"purge from {figures['commits']} commits ({args.rounds} rounds, medians): gitmem "
              f"{figures['median_seconds']['gitmem']} s, git fast-export | fast-import "
              f"{figures['median_seconds']['floor']} s: x{figures['median_ratio_to_floor']}")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
