"""Time what people and agents wait for, each as a whole process, against ``python -c pass`` in the same run.

The rows are those of issue 24's table, each started as a new process the way a person or an
agent starts it, ``--runs`` times (after one run that is not counted), the rows taking turns
round by round so that a change in machine load hits them all alike:

* the yardsticks: ``python -c pass`` (the same interpreter; every ratio is to it) and ``git --version``;
* ``gitmem --version`` and ``gitmem --help``;
* a person's ``gitmem remember TEXT`` (a new text each run: a commit each), ``gitmem show ID``
  and ``gitmem recall --path FILE``;
* a cold ``gitmem recall QUERY``: a new process that loads the prepared encoder from ``state/models/``
  (a new query each run), and the first recall of a home, which finds no prepared encoder
  and no vectors (both deleted before each run, untimed) and prepares them from the wheel;
* ``gitmem mcp`` over stdio: from the start of the process to the answer to ``initialize``, and
  to the answer to the first ``tools/call recall`` (sent right after ``initialize``, as a
  client that wastes no time would);
* the Claude Code session-start hook (``gitmem agent hook claude-code``, the project's JSON on
  standard input, a changed file in play);
* ``gitmem serve`` (as a new user starts it: gunicorn and the background worker) until
  ``/healthz`` answers ``ok``, polled every 0.1 s (``--serve-runs``, default 3).

The home holds ``--memories`` statements of ``tests/data/cursorrules.jsonl`` (``--data``), every
one embedded. gitmem's bytecode is compiled first, as ``pip install`` does. For each row: the
median wall time, the median CPU time (user + system of the process and what it waited for),
and the median over rounds of its wall time divided by ``python -c pass``'s in the same round;
the goals of the issue are checked as those ratios against ``--python-ms`` (16 ms: ``python -c
pass`` on a quiet moment of this machine). Prints a Markdown table and writes JSON (default
``bench/results/cli.json``)::

    .venv/bin/python bench/bench_cli.py                      # 7 runs a row, 3 of serve (about 3 minutes)
    .venv/bin/python bench/bench_cli.py --runs 3 --only version,remember,recall
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import random
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitmem.memories import Candidate  # noqa: E402
from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402

DATA = ROOT / "tests" / "data" / "cursorrules.jsonl"
#: The issue's goals, in milliseconds on a quiet machine.
GOALS = {"version": 150, "help": 150, "remember": 300, "recall": 800, "mcp_recall": 1000, "hook": 300,
         "serve": 5000}
ROWS = ("python", "git", "version", "help", "remember", "show", "path", "recall", "first_recall", "mcp_recall",
        "hook", "serve")


@dataclass
class Sample:
    """One run of one row: wall seconds, CPU seconds, and any other moments it reports."""

    wall: float
    cpu: float | None
    moments: dict[str, float] = field(default_factory=dict)


@dataclass
class Row:
    """One thing timed: its name in the table and how to run it once."""

    key: str
    label: str
    run: Callable[[int], Sample]
    samples: list[Sample] = field(default_factory=list)


def load_statements(path: Path) -> list[str]:
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str], *, stdin: str = "", cwd: Path | None = None) -> Sample:
    """Run ``argv`` to its end; the wall and CPU seconds it took (it must succeed)."""
    cpu = children_cpu()
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return Sample(wall, children_cpu() - cpu)


def gitmem_command() -> list[str]:
    """``gitmem`` as it is installed beside this interpreter (the console script), else ``python -m gitmem``."""
    script = Path(sys.executable).parent / "gitmem"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "gitmem"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare(home: Path, texts: list[str], count: int, project: Path) -> str:
    """A home of ``count`` statements, all embedded (so the prepared encoder exists); a memory's id."""
    service = MemoryService(Settings(home=home))
    service.init("default")
    chosen = texts[:count]
    paths = ["src/app.ts", "package.json", "docs/", "ci/deploy.yml"]
    service.remember_many("default", [Candidate(text, source="user", paths=[paths[i % 4]] if i % 3 == 0 else [])
                                      for i, text in enumerate(chosen)], message="bench: import")
    service.vectors("default")
    memory = service.recall("default", chosen[0], record=False)[0].memory
    service.close()
    (project / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "src" / "app.ts").write_text("export {}\n", encoding="utf-8")
    return memory.id


def mcp_session(gitmem: list[str], env: dict[str, str], query: str) -> Sample:
    """``gitmem mcp`` from its start to the answer to ``initialize`` and to the first recall's."""
    cpu = children_cpu()
    started = time.perf_counter()
    proc = subprocess.Popen([*gitmem, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env, bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        proc.stdin.flush()

    def answer(number: int) -> dict[str, Any]:
        assert proc.stdout is not None
        for line in proc.stdout:
            message = json.loads(line)
            if message.get("id") == number:
                return dict(message)
        raise RuntimeError("gitmem mcp closed its output")

    try:
        send({"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        answer(1)
        initialized = time.perf_counter() - started
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": query}}})
        reply = answer(2)
        recalled = time.perf_counter() - started
        if reply.get("result", {}).get("isError") or "error" in reply:
            raise RuntimeError(f"the recall failed: {reply}")
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()
    return Sample(recalled, children_cpu() - cpu, {"initialize": initialized})


def serve_until_ok(gitmem: list[str], env: dict[str, str]) -> Sample:
    """``gitmem serve`` from its start until ``/healthz`` says ``ok``; the statuses it said on the way."""
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen([*gitmem, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    moments: dict[str, float] = {}
    try:
        while True:
            if proc.poll() is not None or time.perf_counter() - started > 120:
                raise RuntimeError("gitmem serve did not become ready")
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()["status"]
            except httpx.TransportError:
                time.sleep(0.1)
                continue
            moments.setdefault(f"first_{status}", time.perf_counter() - started)
            if status == "ok":
                break
            time.sleep(0.1)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # gunicorn's workers and the background worker too
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
    return Sample(moments["first_ok"], None, moments)


def rows(gitmem: list[str], env: dict[str, str], home: Path, project: Path, memory_id: str,
         texts: list[str], seed: int) -> list[Row]:
    rng = random.Random(seed)
    python = [sys.executable]
    models, vectors = home / "state" / "models", home / "state" / "default" / "vectors.sqlite"
    hook_input = json.dumps({"cwd": str(project), "source": "startup", "hook_event_name": "SessionStart"})

    def query(_: int) -> str:
        words = rng.choice(texts).split()
        start = rng.randrange(max(1, len(words) - 5))
        return " ".join(words[start : start + 5])

    def first_recall(i: int) -> Sample:
        # Untimed: the prepared encoder goes, and the vectors go aside, to come back after the run
        # (the first recall embeds only some; the other rows' recalls would embed the rest).
        shutil.rmtree(models, ignore_errors=True)
        aside = home / "vectors-aside"
        aside.mkdir(exist_ok=True)
        for path in vectors.parent.glob(vectors.name + "*"):
            path.rename(aside / path.name)
        try:
            return timed([*gitmem, "recall", query(i)], env)
        finally:
            for path in vectors.parent.glob(vectors.name + "*"):
                path.unlink()
            for path in aside.iterdir():
                path.rename(vectors.parent / path.name)

    return [
        Row("python", "`python -c pass` (the yardstick)", lambda i: timed([*python, "-c", "pass"], env)),
        Row("git", "`git --version`", lambda i: timed(["git", "--version"], env)),
        Row("version", "`gitmem --version`", lambda i: timed([*gitmem, "--version"], env)),
        Row("help", "`gitmem --help`", lambda i: timed([*gitmem, "--help"], env)),
        Row("remember", "a person's `gitmem remember`",
            lambda i: timed([*gitmem, "remember", f"Bench rule {seed}-{i}: {rng.choice(texts)}"], env)),
        Row("show", "`gitmem show ID`", lambda i: timed([*gitmem, "show", memory_id], env)),
        Row("path", "`gitmem recall --path FILE`", lambda i: timed([*gitmem, "recall", "--path", "src/app.ts"], env)),
        Row("recall", "cold `gitmem recall QUERY` (prepared encoder)",
            lambda i: timed([*gitmem, "recall", query(i)], env)),
        Row("first_recall", "first `gitmem recall` of a home (prepares the encoder, embeds)", first_recall),
        Row("mcp_recall", "`gitmem mcp` over stdio: start to first recall answer",
            lambda i: mcp_session(gitmem, env, query(i))),
        Row("hook", "Claude Code session-start hook", lambda i: timed(
            [*gitmem, "agent", "hook", "claude-code"], env, stdin=hook_input, cwd=project)),
        Row("serve", "`gitmem serve` to `/healthz` ok", lambda i: serve_until_ok(gitmem, env)),
    ]


def summarise(row: Row, baseline: Row, python_ms: float) -> dict[str, Any]:
    walls = [s.wall for s in row.samples]
    cpus = [s.cpu for s in row.samples if s.cpu is not None]
    # Each run against the yardstick's run of the same round.
    ratios = [s.wall / b.wall for s, b in zip(row.samples, baseline.samples, strict=False)]
    out: dict[str, Any] = {
        "label": row.label, "runs": len(walls), "wall_ms": 1000 * statistics.median(walls),
        "wall_ms_min": 1000 * min(walls), "wall_ms_max": 1000 * max(walls),
        "cpu_ms": 1000 * statistics.median(cpus) if cpus else None,
        "ratio": statistics.median(ratios) if ratios else None,
    }
    for name in sorted({k for s in row.samples for k in s.moments}):
        values = [s.moments[name] for s in row.samples if name in s.moments]
        out[f"{name}_ms"] = 1000 * statistics.median(values)
        if baseline.samples:
            out[f"{name}_ratio"] = statistics.median(
                [s.moments[name] / b.wall for s, b in zip(row.samples, baseline.samples, strict=False)
                 if name in s.moments])
    goal = GOALS.get(row.key)
    if goal is not None:
        out["goal_ms"] = goal
        out["goal_ratio"] = goal / python_ms
        out["goal_met"] = out["ratio"] is not None and out["ratio"] <= out["goal_ratio"]
    return out


def table(figures: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["| step | median wall (ms) | CPU (ms) | / `python -c pass` | goal | met (as a ratio) |",
             "| --- | ---: | ---: | ---: | ---: | :---: |"]
    for key, f in figures.items():
        cpu = "" if f["cpu_ms"] is None else f"{f['cpu_ms']:.0f}"
        goal = f"≤ {f['goal_ms']} ms ({f['goal_ratio']:.0f}x)" if "goal_ms" in f else ""
        met = {True: "yes", False: "no"}.get(f.get("goal_met"), "")  # type: ignore[arg-type]
        lines.append(f"| {f['label']} | {f['wall_ms']:.0f} | {cpu} | {f['ratio']:.1f}x | {goal} | {met} |")
        if key == "mcp_recall" and "initialize_ms" in f:
            lines.append(f"| `gitmem mcp` over stdio: start to `initialize` answer | {f['initialize_ms']:.0f} | "
                         f"| {f['initialize_ratio']:.1f}x | | |")
        if key == "serve" and "first_starting_ms" in f:
            lines.append(f"| `gitmem serve` to a first `/healthz` answer (`starting`) | {f['first_starting_ms']:.0f}"
                         f" | | {f['first_starting_ratio']:.1f}x | | |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="counted runs of each row")
    parser.add_argument("--serve-runs", type=int, default=3, help="counted runs of gitmem serve")
    parser.add_argument("--memories", type=int, default=500, help="statements in the home")
    parser.add_argument("--only", default="", help="comma-separated rows to run (the yardsticks always run): "
                        + ", ".join(ROWS[2:]))
    parser.add_argument("--python-ms", type=float, default=16.0,
                        help="python -c pass on a quiet moment of this machine: the goals' ratios are to it")
    parser.add_argument("--gitmem", default="", metavar="COMMAND",
                        help="how to start gitmem (default: the console script beside this Python), e.g. "
                             "'python -m gitmem' with PYTHONPATH set to another checkout, to compare it")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--data", type=Path, default=DATA, help="the cursorrules.jsonl data set")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "cli.json")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"{args.data} not found; pass --data PATH to cursorrules.jsonl")
    texts = load_statements(args.data)
    if not texts:
        parser.error(f"{args.data} holds no statements")
    if args.runs < 1 or args.serve_runs < 0 or args.memories < 1:
        parser.error("--runs and --memories must be at least 1, --serve-runs at least 0")
    chosen = set(filter(None, args.only.split(",")))
    if chosen - set(ROWS):
        parser.error(f"unknown rows: {', '.join(sorted(chosen - set(ROWS)))}; choose among {', '.join(ROWS[2:])}")
    for folder in ("gitmem", "bots"):
        compileall.compile_dir(ROOT / folder, quiet=1)  # as pip does at install; this run may not write .pyc
    gitmem = shlex.split(args.gitmem) if args.gitmem else gitmem_command()

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-cli-") as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        memory_id = prepare(home, texts, args.memories, project)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITMEM_", "SLACK_"))}
        env["GITMEM_HOME"] = str(home)
        every = rows(gitmem, env, home, project, memory_id, texts[: args.memories], args.seed)
        assert [r.key for r in every] == list(ROWS)
        table_rows = [r for r in every if (r.key in ("python", "git") or not chosen or r.key in chosen)
                      and (r.key != "serve" or args.serve_runs)]
        for row in table_rows:  # one run each that is not counted: caches warm, the prepared encoder made
            row.run(-1)
        for round_ in range(args.runs):
            for row in table_rows:
                if row.key != "serve" or round_ < args.serve_runs:
                    row.samples.append(row.run(round_))
    load_after = os.getloadavg()

    baseline = table_rows[0]
    figures = {row.key: summarise(row, baseline, args.python_ms) for row in table_rows if row.samples}
    result = {"when": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
              "cpus": os.cpu_count(), "python": platform.python_version(), "memories": args.memories,
              "runs": args.runs, "serve_runs": args.serve_runs, "python_ms_quiet": args.python_ms,
              "load_average": {"before": load_before, "after": load_after}, "rows": figures,
              "samples": {row.key: [{"wall": s.wall, "cpu": s.cpu, **s.moments} for s in row.samples]
                          for row in table_rows}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"\n{args.memories} memories; {args.runs} runs a row ({args.serve_runs} of serve); load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after; goals as ratios to python -c pass at "
          f"{args.python_ms:g} ms\n")
    print("\n".join(table(figures)))


if __name__ == "__main__":
    main()
