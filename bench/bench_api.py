"""Benchmark the web front door against the core it wraps, in one run.

The statements written are the real ones of ``tests/data/cursorrules.jsonl`` (``--data``),
each marked to make it distinct; the run stops at once if the file is missing.

Writes: N distinct memories are remembered

* by ``MemoryService.remember`` called directly in one process (the baseline: the core's rate),
* through ``POST /api/v1/namespaces/default/memories`` by 16 concurrent clients against gunicorn
  started the production way (``gunicorn -k gthread 'gitmem.web:create_app()'``), measuring
  requests per second and latency percentiles; afterwards every write must be in the repository
  (each returned id readable, the count right, ``git fsck`` clean).

Clones: a repository of 10,000 memories (one commit each, as real use makes them) is cloned

* from its local path (``git clone /path/repo.git``, the baseline),
* from its local path without hardlinks (``git clone --no-local``, git's own pack transfer),
* over HTTP from the same gunicorn (``git clone http://.../git/default.git`` with a reader key).

Prints a Markdown table with ratios and writes JSON (default ``bench/results/api.json``). Run
from the repository root::

    .venv/bin/python bench/bench_api.py                           # full run (a few minutes)
    .venv/bin/python bench/bench_api.py --writes 400 --clone-memories 2000 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitmem import concepts  # noqa: E402
from gitmem.repo import MAIN, Change, KeyStore, Namespaces  # noqa: E402
from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402

DATA = ROOT / "tests" / "data" / "cursorrules.jsonl"


def load_statements(path: Path) -> list[str]:
    """The statements of the data set, in file order."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle if line.strip()]


def statements(texts: list[str], count: int, salt: str) -> list[str]:
    """``count`` distinct statements made from the data set's, each marked with ``salt``."""
    return [f"{texts[i % len(texts)]} [{salt} {i}]" for i in range(count)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def gunicorn(home: Path, workers: int, threads: int, **settings: str) -> Iterator[str]:
    """gunicorn serving ``create_app()`` for ``home``, the way the README documents it (``GITMEM_*`` settings)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")}
    env["GITMEM_HOME"] = str(home)
    env.update(settings)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-k", "gthread", "-w", str(workers), "--threads", str(threads),
         "-b", f"127.0.0.1:{port}", "--log-level", "warning", "gitmem.web:create_app()"],
        env=env, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/api/v1/openapi.json", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("gunicorn did not start")
            time.sleep(0.2)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def in_threads(work: Callable[[Any], None], shares: list[Any]) -> float:
    """Run ``work(share)`` for every share at once, a thread each; the seconds until all are done."""
    pool = [threading.Thread(target=work, args=(share,)) for share in shares]
    started = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def bench_direct(home: Path, texts: list[str]) -> dict[str, Any]:
    service = MemoryService(Settings(home=home))
    service.init("default")
    latencies = []
    started = time.perf_counter()
    for text in texts:
        t = time.perf_counter()
        service.remember("default", text, source="user")
        latencies.append(time.perf_counter() - t)
    elapsed = time.perf_counter() - started
    service.close()
    return {"writes": len(texts), "seconds": elapsed, "per_second": len(texts) / elapsed,
            "p50_ms": 1000 * percentile(latencies, 0.5), "p95_ms": 1000 * percentile(latencies, 0.95)}


def bench_api(home: Path, texts: list[str], clients: int, workers: int, threads: int) -> dict[str, Any]:
    service = MemoryService(Settings(home=home))
    service.init("default")
    service.close()
    key = KeyStore(home).create("default", "writer", name="bench")[0]
    latencies: list[float] = []
    ids: list[str] = []
    failures: list[str] = []
    outcomes: dict[str, int] = {}
    lock = threading.Lock()
    batches = [texts[i::clients] for i in range(clients)]

    def client(batch: list[str]) -> None:
        with httpx.Client(headers={"X-API-Key": key}, timeout=120) as http:
            for text in batch:
                t = time.perf_counter()
                response = http.post(f"{url}/api/v1/namespaces/default/memories",
                                     json={"text": text, "source": "user"})
                took = time.perf_counter() - t
                with lock:
                    latencies.append(took)
                    if response.status_code in (200, 201):
                        ids.append(response.json()["memory"]["id"])
                        outcomes[response.json()["outcome"]] = outcomes.get(response.json()["outcome"], 0) + 1
                    else:
                        failures.append(f"{response.status_code} {response.text[:200]}")

    with gunicorn(home, workers, threads) as url:
        elapsed = in_threads(client, batches)

    check = MemoryService(Settings(home=home))
    stored = {m.id for m in check.list("default", limit=len(texts) + 10)}
    missing = [i for i in ids if i not in stored]
    check.close()
    fsck = subprocess.run(["git", "--git-dir", str(home / "repos" / "default.git"), "fsck", "--strict",
                           "--no-progress"], capture_output=True, text=True)
    return {"writes": len(texts), "clients": clients, "workers": workers, "threads": threads,
            "seconds": elapsed, "per_second": len(texts) / elapsed,
            "p50_ms": 1000 * percentile(latencies, 0.5), "p95_ms": 1000 * percentile(latencies, 0.95),
            "failures": len(failures), "failure_examples": failures[:3], "outcomes": outcomes,
            "stored": len(stored), "missing": len(missing),
            "all_present": not failures and not missing and len(stored) == len(texts) == len(set(ids)),
            "fsck_clean": fsck.returncode == 0}


def build_repository(home: Path, texts: list[str], count: int) -> float:
    """A namespace of ``count`` memories, one commit each (written through the store)."""
    settings = Settings(home=home)
    MemoryService(settings).init("default")
    ns = Namespaces(settings).open("default")  # bulk loading goes through the repository layer
    started = time.perf_counter()
    at = concepts.now()
    head = ns.store.head()
    old = str(head.id)
    tip = head
    for i, text in enumerate(statements(texts, count, "clone")):
        title = concepts.title_from(text)
        memory_type = concepts.TYPES[i % len(concepts.TYPES)]
        memory_id = f"{i:010x}"
        path = concepts.file_path(memory_type, f"{concepts.slugify(title)}-{memory_id}")
        memory = concepts.Memory(id=memory_id, type=memory_type, text=text, title=title, source="import",
                                 created=at, updated=at, path=path)
        change = Change({path: concepts.render(memory)}, f"remember: {title}", "remember", (memory_id,),
                        "import", "bench")
        tip = ns.store.commit(str(ns.store.write_commit(tip, change)))
    ns.store.move_ref(MAIN, tip.id, old, "bench: populate")
    subprocess.run(["git", "--git-dir", str(ns.store.path), "gc", "--quiet"], check=True)
    ns.close()
    return time.perf_counter() - started


def timed_clone(args: list[str], dest: Path) -> float:
    if dest.exists():
        shutil.rmtree(dest)
    env = {"PATH": os.environ["PATH"], "GIT_TERMINAL_PROMPT": "0", "HOME": str(dest.parent)}
    started = time.perf_counter()
    subprocess.run(["git", *args, str(dest)], check=True, capture_output=True, env=env)
    took = time.perf_counter() - started
    shutil.rmtree(dest)
    return took


def bench_clone(home: Path, texts: list[str], count: int, rounds: int, workers: int,
                threads: int) -> dict[str, Any]:
    built = build_repository(home, texts, count)
    repo = home / "repos" / "default.git"
    key = KeyStore(home).create("default", "reader", name="cloner")[0]
    dest = home.parent / "clone"
    auth = ["-c", f"http.extraHeader=Authorization: Bearer {key}"]
    local = [timed_clone(["clone", "--quiet", str(repo)], dest) for _ in range(rounds)]
    no_local = [timed_clone(["clone", "--quiet", "--no-local", str(repo)], dest) for _ in range(rounds)]
    local_bare = [timed_clone(["clone", "--quiet", "--bare", "--no-local", str(repo)], dest)
                  for _ in range(rounds)]
    with gunicorn(home, workers, threads) as url:
        http = [timed_clone([*auth, "clone", "--quiet", f"{url}/git/default.git"], dest)
                for _ in range(rounds)]
        http_bare = [timed_clone([*auth, "clone", "--quiet", "--bare", f"{url}/git/default.git"], dest)
                     for _ in range(rounds)]
    size = sum(p.stat().st_size for p in repo.rglob("*") if p.is_file())
    return {"memories": count, "build_seconds": built, "repo_bytes": size, "rounds": rounds,
            "local_path_s": statistics.median(local), "no_local_s": statistics.median(no_local),
            "http_s": statistics.median(http), "no_local_bare_s": statistics.median(local_bare),
            "http_bare_s": statistics.median(http_bare)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=1600, help="memories written by each contender")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--clone-memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3, help="clones per method (median reported)")
    parser.add_argument("--data", type=Path, default=DATA, help="the cursorrules.jsonl data set")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "api.json",
                        help="where to write the JSON results")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"{args.data} not found; pass --data PATH to cursorrules.jsonl")
    texts = load_statements(args.data)
    if not texts:
        parser.error(f"{args.data} holds no statements")

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-api-") as tmp:
        base = Path(tmp)
        direct = bench_direct(base / "direct", statements(texts, args.writes, "direct"))
        api = bench_api(base / "api", statements(texts, args.writes, "api"), args.clients, args.workers,
                        args.threads)
        clone = bench_clone(base / "clone-home", texts, args.clone_memories, args.rounds, args.workers,
                            args.threads)

    result: dict[str, Any] = {"when": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
              "cpus": os.cpu_count(), "python": platform.python_version(),
              "load_average": {"before": load_before, "after": os.getloadavg()},
              "direct": direct, "api": api, "clone": clone,
              "ratios": {"api_vs_direct_rate": api["per_second"] / direct["per_second"],
                         "http_vs_local_clone": clone["http_s"] / clone["local_path_s"],
                         "http_vs_no_local_clone": clone["http_s"] / clone["no_local_s"],
                         "http_vs_local_transfer_only": clone["http_bare_s"] / clone["no_local_bare_s"]}}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")

    print(f"\n## Writes: {args.writes} memories\n")
    print("| contender | writes/s | p50 ms | p95 ms | ratio to direct |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| core `remember`, 1 thread (baseline) | {direct['per_second']:.0f} | {direct['p50_ms']:.1f} "
          f"| {direct['p95_ms']:.1f} | 1.00 |")
    print(f"| API, {args.clients} clients, gunicorn {args.workers}x{args.threads} | {api['per_second']:.0f} "
          f"| {api['p50_ms']:.1f} | {api['p95_ms']:.1f} | {result['ratios']['api_vs_direct_rate']:.2f} |")
    print(f"\nAPI writes: {api['failures']} failed, outcomes {api['outcomes']}, {api['stored']} stored, "
          f"{api['missing']} returned ids missing; all present: "
          f"{api['all_present']}, git fsck clean: {api['fsck_clean']}")
    print(f"\n## Clone: {clone['memories']} memories, {clone['repo_bytes'] / 1e6:.1f} MB on disk, "
          f"median of {clone['rounds']}\n")
    print("| method | seconds | ratio to local path |")
    print("| --- | ---: | ---: |")
    for name, key in (("local path (baseline)", "local_path_s"), ("local path, --no-local", "no_local_s"),
                      ("HTTP, reader key", "http_s")):
        print(f"| {name} | {clone[key]:.3f} | {clone[key] / clone['local_path_s']:.2f} |")
    print("\nTransfer only (`--bare`, no checkout of the files):\n")
    print("| method | seconds | ratio to local |")
    print("| --- | ---: | ---: |")
    print(f"| local path, --no-local --bare (baseline) | {clone['no_local_bare_s']:.3f} | 1.00 |")
    print(f"| HTTP --bare, reader key | {clone['http_bare_s']:.3f} | "
          f"{result['ratios']['http_vs_local_transfer_only']:.2f} |")
    print(f"\nLoad average (1 min) before/after: {load_before[0]:.2f}/{result['load_average']['after'][0]:.2f} "
          f"on {os.cpu_count()} CPUs. JSON: {args.json}")
    if not (api["all_present"] and api["fsck_clean"]):
        sys.exit(1)


if __name__ == "__main__":
    main()
