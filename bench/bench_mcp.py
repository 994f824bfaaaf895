"""Benchmark recall through MCP over HTTP against the REST API, in one run, on one server.

A namespace of ``--memories`` statements of ``tests/data/cursorrules.jsonl`` (``--data``) is
written through the core, then one gunicorn started the production way (``gunicorn -k gthread
'gitmem.web:create_app()'``, which answers both ``/api/v1`` and ``/mcp``) serves ``--queries``
recalls (half whole statements, half fragments of four to six words, ``limit=10``) to one client
at a time, two ways, taking turns query by query so machine load hits both alike:

* REST (the baseline): ``GET /api/v1/namespaces/default/recall?q=...&limit=10`` with a reader key,
  on one kept-alive ``httpx`` connection;
* MCP: ``tools/call recall`` through the SDK's own client over streamable HTTP, one client kept
  open (as an agent keeps its server), with the same key as a bearer token.

Both record the use, as an agent's recall does. Every query must return the same memories both
ways (the run fails otherwise): the same set, since the first call's recorded use raises the
potency of exactly those memories, which may reorder them for the second but keeps them the top
ten. Also measured, on fewer calls: an MCP client made afresh for each call (connect, discover,
call), what a one-shot script pays. Each gunicorn worker is reached by new connections before
anything is timed, since each loads the MCP SDK at its first ``/mcp`` request. Prints a Markdown
table with p50, p95 and the ratio to REST, and writes JSON (default ``bench/results/mcp.json``)::

    .venv/bin/python bench/bench_mcp.py                            # full run (about two minutes)
    .venv/bin/python bench/bench_mcp.py --memories 200 --queries 40 --cold 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_api import gunicorn, load_statements, percentile  # noqa: E402

from gitmem.repo import KeyStore  # noqa: E402
from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402

DATA = ROOT / "tests" / "data" / "cursorrules.jsonl"
LIMIT = 10


def queries(texts: list[str], count: int, seed: int) -> list[str]:
    """Half whole statements, half fragments of four to six consecutive words, as bench_core makes them."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        text = rng.choice(texts)
        words = text.split()
        if i % 2 and len(words) > 6:
            size = rng.randint(4, 6)
            start = rng.randrange(len(words) - size)
            text = " ".join(words[start:start + size])
        out.append(text)
    return out


def populate(home: Path, texts: list[str]) -> float:
    """Write ``texts`` as memories through the core (the write gate, one commit each)."""
    service = MemoryService(Settings(home=home))
    service.init("default")
    started = time.perf_counter()
    for text in texts:
        service.remember("default", text, source="user")
    service.close()
    return time.perf_counter() - started


def summary(latencies: list[float]) -> dict[str, float]:
    return {"calls": len(latencies), "p50_ms": 1000 * percentile(latencies, 0.5),
            "p95_ms": 1000 * percentile(latencies, 0.95), "mean_ms": 1000 * sum(latencies) / len(latencies)}


async def fresh_recall(url: str, headers: dict[str, str], query: str) -> float:
    """One MCP recall with a client (and connection) of its own; its time."""
    t = time.perf_counter()
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as mcp:
            result = await mcp.call_tool("recall", {"query": query, "limit": LIMIT})
    if result.is_error:
        raise RuntimeError(f"MCP recall failed: {result.content}")
    return time.perf_counter() - t


async def measure(url: str, key: str, asked: list[str], warmup: int, cold: int, workers: int) -> dict[str, Any]:
    """REST and MCP recalls of ``asked``, taking turns; then ``cold`` calls with a fresh MCP client each."""
    headers = {"Authorization": f"Bearer {key}"}
    # Each gunicorn worker loads the MCP SDK at its first /mcp request (a second or two): new
    # connections reach every worker before anything is timed.
    for query in asked[:4 * workers]:
        await fresh_recall(url, headers, query)
    rest_times: list[float] = []
    mcp_times: list[float] = []
    mismatches: list[str] = []
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as rest, \
            httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as mcp:

            async def by_rest(query: str) -> list[str]:
                reply = await rest.get("/api/v1/namespaces/default/recall", params={"q": query, "limit": LIMIT})
                reply.raise_for_status()
                return [item["memory"]["id"] for item in reply.json()["items"]]

            async def by_mcp(query: str) -> list[str]:
                result = await mcp.call_tool("recall", {"query": query, "limit": LIMIT})
                if result.is_error or result.structured_content is None:
                    raise RuntimeError(f"MCP recall failed: {result.content}")
                return [item["memory"]["id"] for item in result.structured_content["items"]]

            for query in asked[:warmup]:
                await by_rest(query)
                await by_mcp(query)
            for i, query in enumerate(asked):
                # Take turns, and alternate who goes first: neither always meets a warm cache.
                order = (("rest", by_rest), ("mcp", by_mcp)) if i % 2 == 0 else (("mcp", by_mcp), ("rest", by_rest))
                found: dict[str, list[str]] = {}
                for name, call in order:
                    t = time.perf_counter()
                    found[name] = await call(query)
                    (rest_times if name == "rest" else mcp_times).append(time.perf_counter() - t)
                if set(found["rest"]) != set(found["mcp"]) or len(found["rest"]) != len(found["mcp"]):
                    mismatches.append(query)

    cold_times = [await fresh_recall(url, headers, query) for query in asked[:cold]]
    return {"rest": summary(rest_times), "mcp": summary(mcp_times),
            "mcp_fresh_client": summary(cold_times) if cold_times else None,
            "same_results": not mismatches, "mismatches": mismatches[:5]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=2000, help="memories in the namespace")
    parser.add_argument("--queries", type=int, default=300, help="recalls per contender")
    parser.add_argument("--warmup", type=int, default=20, help="recalls per contender before measuring")
    parser.add_argument("--cold", type=int, default=30, help="MCP recalls with a fresh client each (0: none)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--data", type=Path, default=DATA, help="the cursorrules.jsonl data set")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "mcp.json",
                        help="where to write the JSON results")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"{args.data} not found; pass --data PATH to cursorrules.jsonl")
    texts = load_statements(args.data)
    if not texts:
        parser.error(f"{args.data} holds no statements")
    if args.memories < 1 or args.queries < 1:
        parser.error("--memories and --queries must be at least 1")
    texts = texts[:args.memories]
    asked = queries(texts, args.queries, args.seed)

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-mcp-") as tmp:
        home = Path(tmp) / "home"
        written = populate(home, texts)
        key = KeyStore(home).create("default", "reader", name="bench")[0]
        with gunicorn(home, args.workers, args.threads) as url:
            figures = anyio.run(measure, url, key, asked, min(args.warmup, len(asked)), args.cold, args.workers)

    ratio = {"p50": figures["mcp"]["p50_ms"] / figures["rest"]["p50_ms"],
             "p95": figures["mcp"]["p95_ms"] / figures["rest"]["p95_ms"]}
    result: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
        "cpus": os.cpu_count(), "python": platform.python_version(),
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "memories": len(texts), "populate_seconds": written, "queries": len(asked), "limit": LIMIT,
        "workers": args.workers, "threads": args.threads, **figures, "mcp_vs_rest": ratio,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")

    print(f"\n## Recall: {len(asked)} queries over {len(texts)} memories, limit {LIMIT}, "
          f"gunicorn {args.workers}x{args.threads}\n")
    print("| contender | p50 ms | p95 ms | p50 / REST | p95 / REST |")
    print("| --- | ---: | ---: | ---: | ---: |")
    rest, mcp = figures["rest"], figures["mcp"]
    print(f"| REST `GET .../recall` (baseline) | {rest['p50_ms']:.1f} | {rest['p95_ms']:.1f} | 1.00 | 1.00 |")
    print(f"| MCP `recall`, one client kept open | {mcp['p50_ms']:.1f} | {mcp['p95_ms']:.1f} | {ratio['p50']:.2f} "
          f"| {ratio['p95']:.2f} |")
    cold = figures["mcp_fresh_client"]
    if cold:
        print(f"| MCP `recall`, a new client per call ({cold['calls']}) | {cold['p50_ms']:.1f} | "
              f"{cold['p95_ms']:.1f} | {cold['p50_ms'] / rest['p50_ms']:.2f} | {cold['p95_ms'] / rest['p95_ms']:.2f} |")
    print(f"\nSame memories both ways for every query: {figures['same_results']}. Load average (1 min) "
          f"before/after: {load_before[0]:.2f}/{result['load_average']['after'][0]:.2f} on {os.cpu_count()} CPUs. "
          f"JSON: {args.json}")
    if not figures["same_results"]:
        print(f"queries answered differently: {figures['mismatches']}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
