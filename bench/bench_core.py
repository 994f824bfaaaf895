"""Benchmark gitmem's core against the floor and the naive tool, in one run.

Writes: on repositories pre-populated with 1,000 and 10,000 memories, N new distinct memories
(real statements from ``tests/data/cursorrules.jsonl``) are written by

* ``MemoryService.remember`` (gitmem: write gate, commit with trailers, search index update),
* a bare pygit2 loop doing the minimal equivalent (blob, nested tree, commit, ref update): the floor,
* ``git add && git commit`` subprocesses in a working-tree repository: what a naive tool does.

Recall: the 5,064 statements are indexed in a namespace of their own, then a few hundred of them
(whole, or a fragment of a few words) are recalled; the latency is compared with a naive linear
Dice scan over the same statements in the same run.

Prints a Markdown table and writes JSON (default ``bench/results/core.json``). Run from the
repository root::

    .venv/bin/python bench/bench_core.py                      # the full run (a few minutes)
    .venv/bin/python bench/bench_core.py --sizes 200 --writes 50 --git-writes 20 --queries 50
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import pygit2
from pygit2.enums import FileMode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitmem import concepts  # noqa: E402
from gitmem.repo import MAIN, Change, Namespaces  # noqa: E402
from gitmem.service import Hit, MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402
from gitmem.similarity import dice, token_set  # noqa: E402

DATA = ROOT / "tests" / "data" / "cursorrules.jsonl"


def load_statements(path: Path) -> list[str]:
    """The statements of the data set, in file order."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle if line.strip()]


#: The types a plain statement can have (a techchoice needs options).
PLAIN_TYPES = tuple(t for t in concepts.TYPES if t != "techchoice")


def statement(texts: list[str], i: int) -> str:
    """The i-th distinct statement: the data set's lines, then numbered variants of them."""
    text = texts[i % len(texts)]
    return text if i < len(texts) else f"{text} (variant {i // len(texts) + 1})"


def memory_for(texts: list[str], i: int, at: datetime) -> concepts.Memory:
    """A valid memory file for statement i, spread over the types a plain statement can have."""
    text = statement(texts, i)
    title = concepts.title_from(text)
    memory_type = PLAIN_TYPES[i % len(PLAIN_TYPES)]
    memory_id = f"{i:010x}"
    path = concepts.file_path(memory_type, f"{concepts.slugify(title)}-{memory_id}")
    return concepts.Memory(id=memory_id, type=memory_type, text=text, title=title, source="import",
                           created=at, updated=at, path=path)


def populate(service: MemoryService, namespace: str, memories: list[concepts.Memory]) -> float:
    """Write every memory in one bulk commit through the store, then build the index; seconds."""
    started = time.perf_counter()
    service.init(namespace)
    namespaces = Namespaces(service.settings)  # bulk loading goes through the repository layer
    ns = namespaces.open(namespace)
    files: dict[str, bytes | None] = {m.path: concepts.render(m) for m in memories}
    ns.store.transact(lambda head: Change(files, f"import {len(files)} memories", "import",
                                          source="import", actor="bench"))
    namespaces.close()
    service.status(namespace)  # builds the search index from the repository
    return time.perf_counter() - started


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


class Writer(Protocol):
    """One of the write loops: write ``count`` new memories, return the seconds it took."""

    def write(self, count: int) -> float: ...


class GitmemWriter:
    """MemoryService.remember writing new distinct memories, one commit each."""

    def __init__(self, service: MemoryService, namespace: str, texts: list[str], start: int) -> None:
        self.service, self.namespace, self.texts, self.next = service, namespace, texts, start

    def write(self, count: int) -> float:
        items = [statement(self.texts, self.next + i) for i in range(count)]
        started = time.perf_counter()
        for i, text in enumerate(items):
            result = self.service.remember(self.namespace, text, source="user", author="bench",
                                           type=PLAIN_TYPES[(self.next + i) % len(PLAIN_TYPES)])
            if result.outcome != "added":
                raise SystemExit(f"bench: expected a new memory, got {result.outcome} for {text!r}")
        self.next += count
        return time.perf_counter() - started


class Pygit2Writer:
    """The floor: blob, nested tree, commit and a compare-and-swap ref update, nothing else."""

    def __init__(self, repo_path: Path, payloads: list[tuple[str, bytes]]) -> None:
        self.repo = pygit2.Repository(str(repo_path))
        self.sig = pygit2.Signature("bench", "bench@localhost")
        self.payloads, self.next = payloads, 0

    def write(self, count: int) -> float:
        repo = self.repo
        items = self.payloads[self.next : self.next + count]
        started = time.perf_counter()
        for path, data in items:
            folder, name = path.split("/", 1)
            ref = repo.references[MAIN]
            head = repo[ref.target]
            assert isinstance(head, pygit2.Commit)
            root = head.tree
            sub = repo.TreeBuilder(repo[root[folder].id]) if folder in root else repo.TreeBuilder()
            sub.insert(name, repo.create_blob(data), FileMode.BLOB)
            top = repo.TreeBuilder(root)
            top.insert(folder, sub.write(), FileMode.TREE)
            oid = repo.create_commit(None, self.sig, self.sig, f"remember: {name}\n", top.write(), [head.id])
            ref.set_target(oid, "bench")
        self.next += count
        return time.perf_counter() - started


class GitSubprocessWriter:
    """The naive tool: write the file, then ``git add <file> && git commit`` in a working tree."""

    def __init__(self, repo_path: Path, work: Path, payloads: list[tuple[str, bytes]]) -> None:
        subprocess.run(["git", "clone", "-q", str(repo_path), str(work)], check=True)
        self.work, self.payloads, self.next = work, payloads, 0
        self.ident = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]

    def write(self, count: int) -> float:
        items = self.payloads[self.next : self.next + count]
        started = time.perf_counter()
        for path, data in items:
            target = self.work / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            subprocess.run(f"git add -- '{path}' && git {' '.join(self.ident)} commit -q -m 'remember: {path}'",
                           shell=True, cwd=self.work, check=True)
        self.next += count
        return time.perf_counter() - started


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1))))
    return ordered[k]


def queries_for(texts: list[str], count: int, rng: random.Random) -> list[tuple[int, str]]:
    """Half whole statements, half fragments of four to six words, with the statement they came from."""
    out: list[tuple[int, str]] = []
    for n, i in enumerate(rng.sample(range(len(texts)), count)):
        words = texts[i].split()
        if n % 2 and len(words) > 6:
            size = rng.randint(4, 6)
            begin = rng.randint(0, len(words) - size)
            out.append((i, " ".join(words[begin : begin + size])))
        else:
            out.append((i, texts[i]))
    return out


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return (time.perf_counter() - started) * 1000, value


def bench_recall(service: MemoryService, texts: list[str], count: int, seed: int,
                 size: int | None = None) -> dict[str, Any]:
    """Recall latency over ``size`` statements (default: the data set) against a naive linear Dice scan.

    Past 20,000 statements the scan, which takes a second a query there, runs for 30 of the queries.
    """
    at = datetime.now(UTC).replace(microsecond=0)
    size = size or len(texts)
    memories = [memory_for(texts, i, at) for i in range(size)]
    index_seconds = populate(service, "recall", memories)
    # Vectors are made when memories are written (by the workers after a bulk write), not by recall.
    embed_seconds, _ = timed(lambda: service.vectors("recall"))
    by_id = {m.id: i for i, m in enumerate(memories)}
    sets = [token_set(f"{m.title}\n{m.text}") for m in memories]
    queries = queries_for(texts, count, random.Random(seed))
    service.recall("recall", "warm up", limit=10, record=False)

    gitmem_ms, naive_ms = [], []
    gitmem_top1 = naive_top1 = 0
    scanned = queries if size <= 20_000 else queries[:30]
    for n, (source, query) in enumerate(queries):
        def ask(q: str = query) -> list[Hit]:
            return service.recall("recall", q, limit=10)

        ms, hits = timed(ask)
        gitmem_ms.append(ms)
        gitmem_top1 += bool(hits) and by_id[hits[0].memory.id] == source
        if n >= len(scanned):
            continue

        def scan(q: str = query) -> int:
            mine = token_set(q)
            scores = [dice(mine, s) for s in sets]
            return max(range(len(scores)), key=scores.__getitem__)

        ms, best = timed(scan)
        naive_ms.append(ms)
        naive_top1 += best == source
    return {
        "statements": size,
        "queries": len(queries),
        "scanned_queries": len(scanned),
        "index_build_s": round(index_seconds, 2),
        "embeddings": service.settings.embeddings,
        "embed_s": round(embed_seconds / 1000, 2),
        "gitmem_p50_ms": round(percentile(gitmem_ms, 50), 2),
        "gitmem_p95_ms": round(percentile(gitmem_ms, 95), 2),
        "naive_p50_ms": round(percentile(naive_ms, 50), 2),
        "naive_p95_ms": round(percentile(naive_ms, 95), 2),
        "gitmem_top1": round(gitmem_top1 / len(queries), 3),
        "naive_top1": round(naive_top1 / len(scanned), 3),
    }


def bench_size(texts: list[str], size: int, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """All three write loops on a repository pre-populated with ``size`` memories.

    The loops take turns in rounds so that a change in machine load hits all three alike.
    """
    service = MemoryService(Settings(home=tmp / f"home-{size}"))
    at = datetime.now(UTC).replace(microsecond=0)
    memories = [memory_for(texts, i, at) for i in range(size)]
    populate_s = populate(service, "bench", memories)
    repo = service.settings.repos_dir / "bench.git"
    floor_repo, naive_repo = tmp / f"floor-{size}.git", tmp / f"naive-{size}.git"
    shutil.copytree(repo, floor_repo)
    shutil.copytree(repo, naive_repo)

    # The floor and the naive tool write the files gitmem would write (rendered up front).
    fresh = [memory_for(texts, size + i, at) for i in range(max(args.writes, args.git_writes))]
    payloads = [(m.path, concepts.render(m)) for m in fresh]
    writers: dict[str, tuple[Writer, int]] = {
        "gitmem": (GitmemWriter(service, "bench", texts, size), args.writes),
        "pygit2": (Pygit2Writer(floor_repo, payloads), args.writes),
        "git": (GitSubprocessWriter(naive_repo, tmp / f"work-{size}", payloads), args.git_writes),
    }
    seconds = dict.fromkeys(writers, 0.0)
    round_ratios: list[float] = []
    profiler = cProfile.Profile() if args.profile else None
    for r in range(args.rounds):
        spent = dict.fromkeys(writers, 0.0)
        for name, (writer, total) in writers.items():
            count = total // args.rounds + (1 if r < total % args.rounds else 0)
            if profiler and name == "gitmem":
                profiler.enable()
            spent[name] = writer.write(count)
            seconds[name] += spent[name]
            if profiler and name == "gitmem":
                profiler.disable()
        if spent["gitmem"] > 0 and spent["pygit2"] > 0:
            round_ratios.append(spent["pygit2"] / spent["gitmem"])  # equal counts: a rate ratio
    service.close()
    if profiler:
        profiler.dump_stats(str(args.profile.with_suffix(f".{size}.prof")))
    gitmem_rate = rate(args.writes, seconds["gitmem"])
    pygit2_rate = rate(args.writes, seconds["pygit2"])
    git_rate = rate(args.git_writes, seconds["git"])
    return {
        "memories": size,
        "populate_and_index_s": round(populate_s, 2),
        "gitmem_commits_per_s": round(gitmem_rate, 1),
        "pygit2_commits_per_s": round(pygit2_rate, 1),
        "git_subprocess_commits_per_s": round(git_rate, 1),
        "gitmem_vs_subprocess": round(gitmem_rate / git_rate, 2),
        "gitmem_vs_pygit2": round(gitmem_rate / pygit2_rate, 2),
        "gitmem_vs_pygit2_median_round": round(statistics.median(round_ratios), 2) if round_ratios else None,
        "writes": args.writes,
        "git_writes": args.git_writes,
    }


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "| memories | gitmem remember (commits/s) | bare pygit2 (commits/s) | git add+commit (commits/s) "
        "| gitmem / subprocess (goal >= 10x) | gitmem / pygit2 (goal >= 0.7x) | median of rounds |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in results["writes"]:
        lines.append(
            f"| {row['memories']:,} | {row['gitmem_commits_per_s']} | {row['pygit2_commits_per_s']} | "
            f"{row['git_subprocess_commits_per_s']} | {row['gitmem_vs_subprocess']}x | "
            f"{row['gitmem_vs_pygit2']}x | {row['gitmem_vs_pygit2_median_round']}x |"
        )
    for recall in results.get("recall") or []:
        lines += [
            "",
            f"Recall over {recall['statements']:,} statements, {recall['queries']} queries, embeddings "
            f"{recall['embeddings']} (the scan: {recall['scanned_queries']}; index built in "
            f"{recall['index_build_s']} s, vectors in {recall['embed_s']} s):",
            "",
            "| | p50 (ms) | p95 (ms) | top-1 is the source statement |",
            "| --- | ---: | ---: | ---: |",
            f"| gitmem recall (evidence, ranking, usage record) | {recall['gitmem_p50_ms']} | "
            f"{recall['gitmem_p95_ms']} | {recall['gitmem_top1']:.1%} |",
            f"| naive linear Dice scan (token sets precomputed) | {recall['naive_p50_ms']} | "
            f"{recall['naive_p95_ms']} | {recall['naive_top1']:.1%} |",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000],
                        help="pre-populated repository sizes (default: 1000 10000)")
    parser.add_argument("--writes", type=int, default=300,
                        help="new memories written by gitmem and by the pygit2 loop (default: 300)")
    parser.add_argument("--git-writes", type=int, default=60,
                        help="new memories written by the git subprocess loop (default: 60)")
    parser.add_argument("--rounds", type=int, default=30,
                        help="the write loops take turns in this many rounds (default: 30)")
    parser.add_argument("--queries", type=int, default=300, help="recall queries (default: 300)")
    parser.add_argument("--no-recall", action="store_true", help="skip the recall benchmark")
    parser.add_argument("--recall-sizes", type=int, nargs="+", default=None,
                        help="statements recalled over (default: the data set's 5,064)")
    parser.add_argument("--data", type=Path, default=DATA, help="the cursorrules.jsonl data set")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "core.json",
                        help="where to write the JSON results")
    parser.add_argument("--profile", type=Path, default=None,
                        help="write cProfile stats of gitmem's writes to PROFILE.<size>.prof")
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"{args.data} not found; pass --data PATH to cursorrules.jsonl")

    texts = load_statements(args.data)
    results: dict[str, Any] = {
        "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "python": platform.python_version(),
        "pygit2": getattr(pygit2, "__version__", "?"),
        "libgit2": pygit2.LIBGIT2_VERSION,
        "git": subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip(),
        "command": " ".join(["bench/bench_core.py", *(argv if argv is not None else sys.argv[1:])]),
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "writes": [],
    }
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-") as folder:
        tmp = Path(folder)
        for size in args.sizes:
            print(f"writes on {size:,} memories...", file=sys.stderr)
            results["writes"].append(bench_size(texts, size, args, tmp))
        if not args.no_recall:
            results["recall"] = []
            for size in args.recall_sizes or [len(texts)]:
                for embeddings in ("offline", "none"):  # with the sentence encoder, and words alone
                    print(f"recall over {size:,} statements ({embeddings} embeddings)...", file=sys.stderr)
                    service = MemoryService(Settings(home=tmp / f"home-recall-{size}-{embeddings}",
                                                     embeddings=embeddings))
                    results["recall"].append(bench_recall(service, texts, args.queries, args.seed, size))
                    service.close()
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(markdown(results))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if args.profile:
        for size in args.sizes:
            stats = pstats.Stats(str(args.profile.with_suffix(f".{size}.prof")), stream=sys.stderr)
            stats.sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
