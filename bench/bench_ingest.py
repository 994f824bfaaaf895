"""Benchmark ingestion: the API's intake against its write path, and the double buffer's model calls.

In one run:

* **Intake.** Conversation messages are posted to ``POST /api/v1/namespaces/default/conversations/
  C/messages`` in batches (``--batch``) by 16 concurrent clients against gunicorn, and, as the
  baseline, the same statements are remembered one by one through ``POST .../memories`` (a commit
  each). Reported: messages per second into the buffer, statements per second into git, the ratio.
  Afterwards every acknowledged message must be in the buffer (the counters), none twice.
* **Model calls.** A conversation of about 10,000 tokens (the labelled conversations of
  ``tests/data/conversations.json`` and statements of the data set, as people's messages) is
  ingested twice against a local fake chat-completions server: with the double buffer sealed at
  2,000 tokens (the default) and with a buffer per message (one call per message, the baseline).
  Reported: calls and prompt tokens (estimated as ingestion counts them) per 10,000 conversation
  tokens, and the ratios.
* **The offline rules** on the labelled set: precision and recall.

Prints Markdown tables and writes JSON (default ``bench/results/ingest.json``)::

    .venv/bin/python bench/bench_ingest.py
    .venv/bin/python bench/bench_ingest.py --messages 2000 --batch 20
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_api import gunicorn, in_threads, percentile  # noqa: E402
from gitmem import extraction  # noqa: E402
from gitmem.extraction import Message  # noqa: E402
from gitmem.repo import KeyStore  # noqa: E402
from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402
from tests.fakes.openai_server import Request, answer, running  # noqa: E402

LABELLED = ROOT / "tests" / "data" / "conversations.json"
STATEMENTS = ROOT / "tests" / "data" / "semantic_pairs.json"


def sentences() -> list[str]:
    """People's statements to post: the labelled set's and the semantic set's, in file order."""
    data = json.loads(LABELLED.read_text(encoding="utf-8"))
    texts = [m["text"] for c in data["conversations"] for m in c["messages"] if m["role"] == "user"]
    pairs = json.loads(STATEMENTS.read_text(encoding="utf-8"))
    texts += [s["text"] for t in pairs["topics"] for s in t["statements"]]
    return texts


def post_all(url: str, key: str, path: str, bodies: list[dict[str, Any]], clients: int) -> dict[str, Any]:
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def client(mine: list[dict[str, Any]]) -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http:
            for body in mine:
                t = time.perf_counter()
                response = http.post(url + path.format(**body.pop("_path", {})), json=body)
                with lock:
                    latencies.append(time.perf_counter() - t)
                    if response.status_code not in (200, 201, 202):
                        failures.append(f"{response.status_code} {response.text[:200]}")

    elapsed = in_threads(client, [bodies[i::clients] for i in range(clients)])
    return {"requests": len(bodies), "seconds": elapsed, "p50_ms": 1000 * percentile(latencies, 0.5),
            "p95_ms": 1000 * percentile(latencies, 0.95), "failures": len(failures), "examples": failures[:3]}


def bench_intake(base: Path, texts: list[str], count: int, batch: int, clients: int) -> dict[str, Any]:
    home = base / "intake"
    service = MemoryService(Settings(home=home, embeddings="none"))
    service.init("default")
    service.close()
    key = KeyStore(home).create("default", "writer", name="bench")[0]
    conversations = [f"c{n}" for n in range(clients * 2)]
    messages = [{"id": f"m{i}", "author": "bench", "text": f"{texts[i % len(texts)]} [{i}]"} for i in range(count)]
    bodies = [{"_path": {"c": conversations[(i // batch) % len(conversations)]},
               "messages": messages[i:i + batch]} for i in range(0, count, batch)]
    remember = [{"text": m["text"], "source": "agent"} for m in messages]
    settings = {"GITMEM_EMBEDDINGS": "none", "GITMEM_INGEST_FLUSH_TOKENS": "1000000"}  # intake only
    with gunicorn(home, 2, 4, **settings) as url:
        ingest = post_all(url, key, "/api/v1/namespaces/default/conversations/{c}/messages", bodies, clients)
        base_home = base / "remember"
    service = MemoryService(Settings(home=home, embeddings="none"))
    stats = service.ingest_status("default")
    service.close()
    # The baseline: the same statements through the write path, one commit each, on a fresh home.
    service = MemoryService(Settings(home=base_home, embeddings="none"))
    service.init("default")
    service.close()
    key = KeyStore(base_home).create("default", "writer", name="bench")[0]
    with gunicorn(base_home, 2, 4, GITMEM_EMBEDDINGS="none") as url:
        baseline = post_all(url, key, "/api/v1/namespaces/default/memories", [dict(b) for b in remember], clients)
    return {"messages": count, "batch": batch, "clients": clients,
            "ingest": {**ingest, "messages_per_second": count / ingest["seconds"]},
            "remember": {**baseline, "statements_per_second": count / baseline["seconds"]},
            "buffered": stats.get("messages", 0), "repeated": stats.get("repeated", 0),
            "all_present": stats.get("messages", 0) == count and not ingest["failures"]}


def conversation(tokens: int) -> list[dict[str, Any]]:
    texts = sentences()
    out: list[dict[str, Any]] = []
    total = n = 0
    while total < tokens:
        text = texts[n % len(texts)]
        out.append({"id": f"m{n}", "author": "ana" if n % 3 else "bo", "text": text})
        total += extraction.estimate_tokens(text)
        n += 1
    return out


def bench_calls(base: Path, tokens: int) -> dict[str, Any]:
    messages = conversation(tokens)
    total = sum(extraction.estimate_tokens(m["text"]) for m in messages)
    prompts: list[int] = []

    def model(request: Request) -> str:
        prompts.append(extraction.estimate_tokens(request.system + request.prompt))
        return answer(memories=[])

    out: dict[str, Any] = {"conversation_tokens": total, "messages": len(messages)}
    with running(model) as fake:
        for name, flush in (("double_buffer", 2000), ("per_message", 1)):
            prompts.clear()
            settings = Settings(home=base / name, embeddings="none", llm_base_url=fake.url, ingest_flush_tokens=flush)
            service = MemoryService(settings)
            service.init("default")
            started = time.perf_counter()
            step = 50 if flush > 1 else 1  # a buffer per message: each message arrives on its own
            for i in range(0, len(messages), step):
                service.ingest("default", "c1", messages[i:i + step], flush=i + step >= len(messages))
            elapsed = time.perf_counter() - started
            service.close()
            scale = 10_000 / total
            out[name] = {"flush_tokens": flush, "calls": len(prompts), "prompt_tokens": sum(prompts),
                         "calls_per_10k": len(prompts) * scale, "prompt_tokens_per_10k": sum(prompts) * scale,
                         "seconds": elapsed}
    per, double = out["per_message"], out["double_buffer"]
    out["ratios"] = {"calls": per["calls"] / max(1, double["calls"]),
                     "prompt_tokens": per["prompt_tokens"] / max(1, double["prompt_tokens"])}
    return out


def bench_offline() -> dict[str, Any]:
    data = json.loads(LABELLED.read_text(encoding="utf-8"))
    found = expected = right = recalled = 0
    for conv in data["conversations"]:
        got = extraction.offline([Message(m["id"], m["text"], m["role"], m["author"]) for m in conv["messages"]])
        hit = [g for g in got if any(all(s.lower() in g.text.lower() for s in e["match"]) for e in conv["expect"])]
        seen = [e for e in conv["expect"] if any(all(s.lower() in g.text.lower() for s in e["match"]) for g in got)]
        found, expected, right, recalled = found + len(got), expected + len(conv["expect"]), right + len(hit), \
            recalled + len(seen)
    return {"conversations": len(data["conversations"]), "expected": expected, "extracted": found,
            "precision": right / found, "recall": recalled / expected}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=4000, help="messages posted by the intake contenders")
    parser.add_argument("--batch", type=int, default=20, help="messages per API request")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=10_000, help="size of the conversation for the call count")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "ingest.json")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-ingest-") as tmp:
        intake = bench_intake(Path(tmp), sentences(), args.messages, args.batch, args.clients)
        calls = bench_calls(Path(tmp), args.tokens)
    offline = bench_offline()
    result = {"when": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
              "cpus": os.cpu_count(), "python": platform.python_version(),
              "load_average": {"before": load_before, "after": os.getloadavg()},
              "intake": intake, "calls": calls, "offline": offline,
              "ratios": {"intake_vs_remember": intake["ingest"]["messages_per_second"]
                         / intake["remember"]["statements_per_second"],
                         "calls_per_message_vs_double_buffer": calls["ratios"]["calls"],
                         "prompt_tokens_per_message_vs_double_buffer": calls["ratios"]["prompt_tokens"]}}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")

    i, r = intake["ingest"], intake["remember"]
    print(f"\n## Intake: {args.messages} messages, {args.clients} clients, gunicorn 2x4\n")
    print("| contender | items/s | p50 ms | p95 ms | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| `POST .../memories`, a commit per statement (baseline) | {r['statements_per_second']:.0f} "
          f"| {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | 1.00 |")
    print(f"| `POST .../conversations/C/messages`, {args.batch} per request | {i['messages_per_second']:.0f} "
          f"| {i['p50_ms']:.1f} | {i['p95_ms']:.1f} | {result['ratios']['intake_vs_remember']:.1f} |")
    print(f"\nBuffered {intake['buffered']} of {args.messages}, {intake['repeated']} repeats, "
          f"{i['failures']} failed requests; all present: {intake['all_present']}")
    print(f"\n## Model calls per 10,000 conversation tokens ({calls['messages']} messages, "
          f"{calls['conversation_tokens']} tokens)\n")
    print("| buffering | calls | prompt tokens |")
    print("| --- | ---: | ---: |")
    for name in ("per_message", "double_buffer"):
        c = calls[name]
        print(f"| {name.replace('_', ' ')} (flush at {c['flush_tokens']}) | {c['calls_per_10k']:.1f} "
              f"| {c['prompt_tokens_per_10k']:.0f} |")
    print(f"\nOne call per message makes {calls['ratios']['calls']:.1f}x the calls and "
          f"{calls['ratios']['prompt_tokens']:.1f}x the prompt tokens of the double buffer.")
    print(f"\n## Offline rules on the labelled set ({offline['conversations']} conversations, "
          f"{offline['expected']} expected memories)\n")
    print(f"precision {offline['precision']:.2f}, recall {offline['recall']:.2f}")
    print(f"\nLoad average (1 min) before/after: {load_before[0]:.2f}/{result['load_average']['after'][0]:.2f} "
          f"on {os.cpu_count()} CPUs. JSON: {args.json}")
    if not intake["all_present"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
