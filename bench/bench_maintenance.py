"""Benchmark `gitmem maintain`: a repository as real use leaves it, against the same one packed, in one run.

For each ``--size`` N, a namespace of N memories is written one commit each through the
repository layer (real statements from ``tests/data/cursorrules.jsonl``, spread over the ten
type folders), as libgit2 leaves it: every object loose. Then, before and after ``gitmem
maintain`` (run as the command, the real path), it measures

* the repository's size on disk (allocated blocks, as ``du`` counts them) and the objects' size
  (``git count-objects -v``), the loose objects and the packs,
* ``git clone`` from the local path (hardlinks the objects; checks out the files) and ``git clone
  --no-local`` (git's own transfer: what a clone over HTTP costs the server), the median of
  ``--rounds`` each, in wall time and in CPU time (git and the processes it runs: steadier on a
  shared machine); a copy of the unpacked repository is kept so the two are cloned in turns
  within each round, and a change in the machine's load hits both alike,

and checks that the packed repository passes ``git fsck --strict`` and holds every memory.
Then it adds 1% more memories (at least 100: a busy day) and times the next ``gitmem maintain``,
the cost of the daily run once the first one has packed the history.
Prints a Markdown table with after/before ratios and writes JSON (default
``bench/results/maintenance.json``). Run from the repository root::

    .venv/bin/python bench/bench_maintenance.py                        # 10,000 memories, ~10 minutes
    .venv/bin/python bench/bench_maintenance.py --size 1000 --rounds 1   # a quick look
    .venv/bin/python bench/bench_maintenance.py --size 30000 --rounds 1  # ~25 minutes, 6 GB on disk

The unpacked repository grows with the square of N (2.8 GB at 30,000; about 28 GB at 100,000),
and the run keeps a copy of it: mind the disk.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
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

from gitmem import concepts  # noqa: E402
from gitmem.repo import MAIN, Change, Namespaces, packing  # noqa: E402
from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402

DATA = ROOT / "tests" / "data" / "cursorrules.jsonl"


def statements(count: int) -> list[str]:
    """``count`` distinct statements: the shared data set, numbered past its end."""
    base = []
    if DATA.is_file():
        with DATA.open(encoding="utf-8") as handle:
            base = [json.loads(line)["text"] for line in handle if line.strip()]
    if not base:
        base = ["Prefer small functions with descriptive names."]
    return [base[i % len(base)] + ("" if i < len(base) else f" (variant {i // len(base)})") for i in range(count)]


def build(home: Path, count: int, start: int = 0) -> float:
    """Add ``count`` memories to the namespace (made if need be), one commit each, through the repository layer."""
    settings = Settings(home=home)
    MemoryService(settings).init("default")
    ns = Namespaces(settings).open("default")
    started = time.perf_counter()
    at = concepts.now()
    head = ns.store.head()
    tip = head
    for i, text in enumerate(statements(start + count)[start:], start):
        title = concepts.title_from(text)
        memory_type = concepts.TYPES[i % len(concepts.TYPES)]
        memory_id = f"{i:010x}"
        path = concepts.file_path(memory_type, f"{concepts.slugify(title)}-{memory_id}")
        memory = concepts.Memory(id=memory_id, type=memory_type, text=text, title=title, source="import",
                                 created=at, updated=at, path=path)
        change = Change({path: concepts.render(memory)}, f"remember: {title}", "remember", (memory_id,),
                        "import", "bench")
        tip = ns.store.commit(str(ns.store.write_commit(tip, change)))
        if (i + 1 - start) % 5000 == 0:
            print(f"  built {i + 1 - start:,} of {count:,} in {time.perf_counter() - started:.0f} s", flush=True)
    ns.store.move_ref(MAIN, tip.id, str(head.id), "bench: populate")
    ns.close()
    return time.perf_counter() - started


def disk_usage(path: Path) -> tuple[int, int, int]:
    """Bytes allocated on disk (blocks), apparent bytes, and files, under ``path``."""
    blocks = size = files = 0
    for folder, _, names in os.walk(path):
        for name in names:
            info = os.lstat(os.path.join(folder, name))
            blocks += info.st_blocks * 512
            size += info.st_size
            files += 1
    return blocks, size, files


def children_cpu() -> float:
    """CPU seconds (user + system) of the child processes waited for so far, theirs included."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_clone(args: list[str], source: Path, dest: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one ``git clone`` (CPU: git and the processes it ran; steadier under load)."""
    if dest.exists():
        shutil.rmtree(dest)
    env = {"PATH": os.environ["PATH"], "HOME": str(dest.parent), "GIT_TERMINAL_PROMPT": "0"}
    cpu, started = children_cpu(), time.perf_counter()
    subprocess.run(["git", "clone", "--quiet", *args, str(source), str(dest)], check=True, env=env,
                   capture_output=True)
    took, cpu = time.perf_counter() - started, children_cpu() - cpu
    shutil.rmtree(dest)
    return took, cpu


def measure(repo: Path) -> dict[str, Any]:
    """Size on disk and object counts of ``repo``."""
    blocks, size, files = disk_usage(repo)
    return {"disk_bytes": blocks, "apparent_bytes": size, "files": files, **packing.count_objects(repo).to_dict()}


def clones(repos: dict[str, Path], rounds: int, scratch: Path) -> dict[str, dict[str, Any]]:
    """Clone times of each repository by each method, taking turns in every round (load hits all alike)."""
    times: dict[str, dict[str, list[tuple[float, float]]]] = {state: {"local": [], "no_local": []}
                                                               for state in repos}
    for _ in range(rounds):
        for method, args in (("local", []), ("no_local", ["--no-local"])):
            for state, repo in repos.items():
                times[state][method].append(timed_clone(args, repo, scratch / "clone"))
    out: dict[str, dict[str, Any]] = {}
    for state, by_method in times.items():
        out[state] = {}
        for method, runs in by_method.items():
            out[state][f"clone_{method}_s"] = statistics.median(wall for wall, _ in runs)
            out[state][f"clone_{method}_cpu_s"] = statistics.median(cpu for _, cpu in runs)
            out[state][f"clone_{method}_all"] = runs
    return out


def maintain(home: Path) -> tuple[float, float, dict[str, Any]]:
    """Run `gitmem maintain` on ``home`` as the command; its wall and CPU seconds, and what it reported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")} | {"GITMEM_HOME": str(home)}
    cpu, started = children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gitmem", "maintain", "--json"], env=env, check=True,
                          capture_output=True, text=True, cwd=ROOT)
    return time.perf_counter() - started, children_cpu() - cpu, json.loads(done.stdout)[0]


def bench(size: int, rounds: int, base: Path) -> dict[str, Any]:
    home = base / f"home-{size}"
    print(f"building {size:,} memories, one commit each", flush=True)
    built = build(home, size)
    repo = home / "repos" / "default.git"
    loose = base / f"loose-{size}.git"  # the repository as it was, kept to clone beside the packed one
    shutil.copytree(repo, loose, symlinks=True)
    before = measure(repo)
    maintain_s, maintain_cpu_s, reported = maintain(home)
    after = measure(repo)
    print(f"maintain took {maintain_s:.1f} s; cloning, {rounds} rounds", flush=True)
    timed = clones({"before": loose, "after": repo}, rounds, base)
    fsck = subprocess.run(["git", "--git-dir", str(repo), "fsck", "--strict", "--no-progress"],
                          capture_output=True, text=True)
    files = subprocess.run(["git", "--git-dir", str(repo), "ls-tree", "-r", "-z", "--name-only", MAIN],
                           capture_output=True, text=True, check=True).stdout.split("\0")
    shutil.rmtree(loose)
    # The daily run after that: a day's new memories (1%) on top of the packed repository.
    added = max(100, size // 100)
    build(home, added, start=size)
    daily_s, daily_cpu_s, daily = maintain(home)
    shutil.rmtree(home)
    return {"memories": size, "build_s": built, "maintain_s": maintain_s, "maintain_cpu_s": maintain_cpu_s,
            "maintain_reported": reported,
            "daily": {"added": added, "maintain_s": daily_s, "maintain_cpu_s": daily_cpu_s, "reported": daily},
            "before": before | timed["before"], "after": after | timed["after"], "fsck_clean": fsck.returncode == 0,
            "all_memories_present": len([f for f in files if f.endswith(".md") and "/" in f]) == size}


def human(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} GB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, nargs="+", default=[10_000], help="memories (one or more sizes)")
    parser.add_argument("--rounds", type=int, default=3, help="clones per method and state (median reported)")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "maintenance.json")
    args = parser.parse_args()

    load_before = os.getloadavg()
    git = subprocess.run(["git", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    runs = []
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-maintenance-") as tmp:
        for size in args.size:
            runs.append(bench(size, args.rounds, Path(tmp)))
    result = {"when": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
              "cpus": os.cpu_count(), "python": platform.python_version(), "git": git,
              "load_average": {"before": load_before, "after": os.getloadavg()}, "runs": runs}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")

    rows = (("size on disk (du)", "disk_bytes", human), ("objects (count-objects)", "size_bytes", human),
            ("files in the repository", "files", lambda v: f"{v:,}"), ("loose objects", "loose", lambda v: f"{v:,}"),
            ("packs", "packs", str),
            ("`git clone` from the path, wall (s)", "clone_local_s", lambda v: f"{v:.2f}"),
            ("`git clone` from the path, CPU (s)", "clone_local_cpu_s", lambda v: f"{v:.2f}"),
            ("`git clone --no-local`, wall (s)", "clone_no_local_s", lambda v: f"{v:.2f}"),
            ("`git clone --no-local`, CPU (s)", "clone_no_local_cpu_s", lambda v: f"{v:.2f}"))
    for run in runs:
        print(f"\n## {run['memories']:,} memories, one commit each (built in {run['build_s']:.0f} s); "
              f"`gitmem maintain` took {run['maintain_s']:.1f} s ({run['maintain_cpu_s']:.1f} s CPU)\n")
        print("| | before | after `gitmem maintain` | after / before |")
        print("| --- | ---: | ---: | ---: |")
        for label, key, show in rows:
            old, new = run["before"][key], run["after"][key]
            ratio = f"{new / old:.3f}x" if old else "-"
            print(f"| {label} | {show(old)} | {show(new)} | {ratio} |")
        print(f"\nAfter: git fsck --strict clean: {run['fsck_clean']}; every memory in main: "
              f"{run['all_memories_present']}. The next run, after {run['daily']['added']:,} more memories "
              f"({run['daily']['reported']['before']['loose']:,} loose objects): {run['daily']['maintain_s']:.1f} s "
              f"({run['daily']['maintain_cpu_s']:.1f} s CPU).")
    print(f"\nLoad average (1 min) before/after: {load_before[0]:.2f}/{result['load_average']['after'][0]:.2f} "
          f"on {os.cpu_count()} CPUs; {git}. JSON: {args.json}")
    if not all(run["fsck_clean"] and run["all_memories_present"] for run in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
