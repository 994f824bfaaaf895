"""``git push`` to gitmem against ``git push`` to git's own receive-pack, in the same run.

Both servers take the same pushes from the real git client, round by round, in turns:

* gitmem: gunicorn serving ``create_app()`` (``gitmem/pushes.py``: the pack into a quarantine,
  every file checked, the ref moved by compare-and-swap, gitmem's completion commit, the search
  index and sentence vectors brought up to date, the event published), a reviewer key pushing
  to ``main``, and a writer key pushing to ``refs/for/main`` (which opens a review);
* the floor: ``git http-backend`` with ``http.receivepack`` on, behind a small threaded HTTP
  server (``tests/fakes/git_host.py``), which checks nothing.

Each round commits ``--files`` new memory files (plain OKF: ``type`` and a statement from the
data set) in a clone of each and times ``git push``. The ratio is gitmem's time over the floor's;
the median of the per-round ratios is steadier on a busy machine than the ratio of the totals.

    .venv/bin/python bench/bench_push.py                 # 20 rounds of 20 files
    .venv/bin/python bench/bench_push.py --rounds 5 --files 5 --json
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
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

from bench_api import DATA, gunicorn, load_statements  # noqa: E402

from gitmem.repo import KeyStore  # noqa: E402
from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402
from tests.fakes.git_host import GitHost  # noqa: E402

TOKEN = "bench-token"


def git(*args: str, cwd: Path | None = None) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": tempfile.gettempdir(), "GIT_TERMINAL_PROMPT": "0",
           "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:4])} failed: {done.stderr}")
    return done.stdout


def bearer(key: str) -> list[str]:
    return ["-c", f"http.extraHeader=Authorization: Bearer {key}"]


def write_files(work: Path, texts: list[str], salt: str) -> None:
    for i, text in enumerate(texts):
        folder = work / "fact"
        folder.mkdir(exist_ok=True)
        (folder / f"{salt}-{i}.md").write_text(f"---\ntype: fact\n---\n\n{text} [{salt} {i}]\n", encoding="utf-8")
    git("add", "-A", cwd=work)
    git("-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-qm", f"round {salt}", cwd=work)


def timed(args: list[str], work: Path) -> float:
    started = time.perf_counter()
    git(*args, cwd=work)
    return time.perf_counter() - started


def run(texts: list[str], rounds: int, files: int, tmp: Path) -> dict[str, Any]:
    home = tmp / "home"
    service = MemoryService(Settings(home=home))
    service.init("default")
    service.close()
    keys = KeyStore(home)
    reviewer = keys.create("default", "reviewer", name="reviewer")[0]
    writer = keys.create("default", "writer", name="writer")[0]
    (tmp / "host").mkdir()
    host = GitHost(tmp / "host", TOKEN)
    bare = host.create("memory")
    host.start()
    basic = base64.b64encode(f"gitmem:{TOKEN}".encode()).decode()
    floor_auth = ["-c", f"http.extraHeader=Authorization: Basic {basic}"]
    times: dict[str, list[float]] = {"gitmem_main": [], "gitmem_review": [], "floor": []}
    try:
        with gunicorn(home, 1, 4) as url:
            mine = tmp / "mine"
            git(*bearer(reviewer), "clone", "-q", f"{url}/git/default.git", str(mine))
            subprocess.run(["git", "push", "-q", str(bare), "main"], cwd=mine, check=True, capture_output=True)
            floor = tmp / "floor"
            git(*floor_auth, "clone", "-q", host.url("memory"), str(floor))
            for r in range(-1, rounds):  # round -1 warms up (the encoder loads on the first push): not counted
                chunk = [texts[((r + 1) * files + i) % len(texts)] for i in range(files)]
                write_files(mine, chunk, f"m{r}")
                write_files(floor, chunk, f"m{r}")
                pair = [("gitmem_main", [*bearer(reviewer), "push", "-q", "origin", "HEAD:main"], mine),
                        ("floor", [*floor_auth, "push", "-q", "origin", "HEAD:main"], floor)]
                for name, args, work in pair if r % 2 == 0 else reversed(pair):
                    took = timed(args, work)
                    if r >= 0:
                        times[name].append(took)
                git(*bearer(reviewer), "pull", "-q", "--ff-only", cwd=mine)  # gitmem's completion, not timed
                write_files(mine, chunk, f"r{r}")
                took = timed([*bearer(writer), "push", "-q", "origin", "HEAD:refs/for/main"], mine)
                if r >= 0:
                    times["gitmem_review"].append(took)
                git("reset", "-q", "--hard", "HEAD~1", cwd=mine)
    finally:
        host.stop()
    ratios = {name: statistics.median(a / b for a, b in zip(times[name], times["floor"], strict=True))
              for name in ("gitmem_main", "gitmem_review")}
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
        "cpus": os.cpu_count(), "rounds": rounds, "files_per_push": files,
        "median_seconds": {name: round(statistics.median(v), 4) for name, v in times.items()},
        "median_ratio_to_floor": {name: round(v, 2) for name, v in ratios.items()},
        "total_ratio_to_floor": {name: round(sum(times[name]) / sum(times["floor"]), 2)
                                 for name in ("gitmem_main", "gitmem_review")},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--files", type=int, default=20, help="new memory files per push")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "push.json")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"error: {args.data} not found; pass --data PATH", file=sys.stderr)
        raise SystemExit(2)
    if args.rounds < 1 or args.files < 1:
        print("error: --rounds and --files must be at least 1", file=sys.stderr)
        raise SystemExit(2)
    texts = load_statements(args.data)
    with tempfile.TemporaryDirectory() as folder:
        figures = run(texts, args.rounds, args.files, Path(folder))
    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        print(f"push of {args.files} files, {args.rounds} rounds (median seconds; ratio to git's receive-pack)")
        for name in ("gitmem_main", "gitmem_review"):
            print(f"  {name:14} {figures['median_seconds'][name]:.3f} s  x{figures['median_ratio_to_floor'][name]}"
                  f" (totals x{figures['total_ratio_to_floor'][name]})")
        print(f"  {'floor':14} {figures['median_seconds']['floor']:.3f} s")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
