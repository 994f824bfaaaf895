"""Benchmark the semantic layer against words alone, in one run.

* **Quality** on the labelled set (``tests/data/semantic_pairs.json``): the share of same-topic
  pairs that land in one consolidation cluster and the number of cross-topic pairs that do, for
  words only, meaning only (sentence vectors, no word pairs) and both; cross-lingual recall@1/@3.
* **Embedding throughput** of the offline encoder, against tokenising the same statements.
* **Consolidation planning** on N memories (real statements from ``cursorrules.jsonl``, numbered
  variants past the 5,064th): the words-only planner, then the semantic planner's first run
  (embedding everything), a warm run in a new process's service, and a warm run after 20 writes.
* **Recall** p50/p95 and top-1 over the same N memories: hybrid (BM25 + vectors) against FTS only.

Prints Markdown and writes JSON (default ``bench/results/semantic.json``)::

    .venv/bin/python bench/bench_semantic.py                       # 5,064 memories (a few minutes)
    .venv/bin/python bench/bench_semantic.py --recall-sizes 100000  # also recall over 100,000 memories
"""

from __future__ import annotations

import argparse
import itertools
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_core import load_statements, memory_for, percentile, populate, queries_for  # noqa: E402

from gitmem import concepts  # noqa: E402
from gitmem.consolidate import make_plan  # noqa: E402
from gitmem.embeddings import Offline  # noqa: E402
from gitmem.repo import Row, match_tokens, text_hash  # noqa: E402
from gitmem.semantic import Neighbours  # noqa: E402
from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402
from gitmem.similarity import token_set  # noqa: E402
from gitmem.vectorspace import Space, neighbour_pairs  # noqa: E402

DATA = ROOT / "tests" / "data" / "cursorrules.jsonl"
LABELLED = ROOT / "tests" / "data" / "semantic_pairs.json"


def timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


# --- quality ------------------------------------------------------------------------------------


def quality(encoder: Offline, tmp: Path) -> dict[str, Any]:
    """Clusters over the labelled set by each measure, and cross-lingual recall through the service."""
    data = json.loads(LABELLED.read_text(encoding="utf-8"))
    statements = {s["id"]: s for t in data["topics"] for s in t["statements"]}
    topic = {s["id"]: t["id"] for t in data["topics"] for s in t["statements"]}
    sids = list(statements)
    at = datetime.now(UTC)
    memories = [concepts.Memory(id=f"{n:010x}", type="convention", text=statements[s]["text"],
                                title=concepts.title_from(statements[s]["text"]), source="agent", created=at,
                                updated=at, path=f"convention/m{n}.md") for n, s in enumerate(sids)]
    rows = [Row(m, frozenset(match_tokens(m.title, m.text, m.tags))) for m in memories]
    vectors = encoder.embed([m.text for m in memories])
    keys = [text_hash(m.text) for m in memories]
    same = [frozenset(p) for t in data["topics"] for p in itertools.combinations([s["id"] for s in t["statements"]], 2)]
    twins = [frozenset((s["id"], s["twin_of"])) for s in statements.values() if s.get("twin_of")]
    by_id = {m.id: s for m, s in zip(memories, sids, strict=True)}
    out: dict[str, Any] = {"topics": len(data["topics"]), "statements": len(sids), "same_topic_pairs": len(same),
                           "twins": len(twins), "near_misses": len(data["near_misses"]), "measures": {}}
    for name in ("words", "meaning", "both"):
        settings = Settings(cluster_threshold=1.0) if name == "meaning" else Settings()
        neighbours = None
        if name != "words":
            found = neighbour_pairs(vectors, range(len(keys)), settings.semantic_threshold,
                                    settings.semantic_neighbours)
            neighbours = Neighbours([(keys[i], keys[j], c) for i, j, c in found], Space(keys, vectors))
        plan = make_plan("set", "head", at, rows, {}, settings, neighbours)
        together = {frozenset((by_id[a.id], by_id[b.id]))
                    for c in plan.clusters for a, b in itertools.combinations(c.members, 2)}
        out["measures"][name] = {
            "same_topic_together": sum(p in together for p in same),
            "same_topic_share": round(sum(p in together for p in same) / len(same), 3),
            "cross_topic_together": sum(1 for p in together if len({topic[s] for s in p}) > 1),
            "twins_together": sum(p in together for p in twins),
            "clusters": len(plan.clusters),
        }
    for label, embeddings in (("hybrid", "offline"), ("fts_only", "none")):
        svc = MemoryService(Settings(home=tmp / f"quality-{label}", embeddings=embeddings))
        svc.init("q")
        ids = {}
        for sid in sids:
            result = svc.remember("q", statements[sid]["text"], source="import", type="convention")
            assert result.memory is not None
            ids[result.memory.id] = sid
        first = top3 = 0
        for query in data["queries"]:
            hits = [ids.get(h.memory.id) for h in svc.recall("q", query["query"], limit=3, record=False)]
            first += bool(hits) and hits[0] == query["expect"]
            top3 += query["expect"] in hits
        out[f"cross_lingual_recall_at_1_{label}"] = round(first / len(data["queries"]), 3)
        out[f"cross_lingual_recall_at_3_{label}"] = round(top3 / len(data["queries"]), 3)
        svc.close()
    return out


# --- throughput ----------------------------------------------------------------------------------


def throughput(texts: list[str], count: int, tmp: Path) -> dict[str, Any]:
    """Offline embedding of ``count`` statements against tokenising them; model load from wheel and cache."""
    from gitmem import embeddings

    sample = texts[:count]
    embeddings._models.clear()
    cold = Offline(tmp / "models")
    load_wheel, _ = timed(lambda: cold.embed(["warm up"]))
    embeddings._models.clear()
    load_cache, _ = timed(lambda: Offline(tmp / "models").embed(["warm up"]))
    seconds, _ = timed(lambda: cold.embed(sample))
    words, _ = timed(lambda: [token_set(t) for t in sample])
    return {"statements": len(sample), "embed_per_s": round(len(sample) / seconds, 1),
            "tokenise_per_s": round(len(sample) / words, 1), "embed_vs_tokenise": round(words / seconds, 5),
            "model_load_from_wheel_s": round(load_wheel, 2), "model_load_from_cache_s": round(load_cache, 2)}


# --- planning and recall ---------------------------------------------------------------------------


def recall_each(services: dict[str, MemoryService], memories: list[concepts.Memory],
                asked: list[tuple[int, str]]) -> dict[str, Any]:
    """Each service's first recall, then p50/p95 and top-1 over ``asked``; closes the services."""
    out: dict[str, Any] = {}
    by_id = {m.id: i for i, m in enumerate(memories)}
    for label, svc in services.items():
        seconds, _ = timed(lambda s=svc: s.recall("bench", "warm up", record=False))
        out[f"first_recall_{label}_s"] = round(seconds, 2)
        times, top1 = [], 0
        for source, query in asked:
            seconds, hits = timed(lambda q=query, s=svc: s.recall("bench", q, limit=10))
            times.append(seconds * 1000)
            top1 += bool(hits) and by_id.get(hits[0].memory.id) == source
        out[f"recall_{label}_p50_ms"] = round(percentile(times, 50), 2)
        out[f"recall_{label}_p95_ms"] = round(percentile(times, 95), 2)
        out[f"recall_{label}_top1"] = round(top1 / len(asked), 3)
        svc.close()
    out["recall_p95_semantic_vs_words"] = round(out["recall_semantic_p95_ms"] / out["recall_words_p95_ms"], 2)
    return out


def at_size(texts: list[str], size: int, queries: int, seed: int, tmp: Path) -> dict[str, Any]:
    at = datetime.now(UTC).replace(microsecond=0)
    memories = [memory_for(texts, i, at) for i in range(size)]
    homes = {"words": tmp / f"words-{size}", "semantic": tmp / f"semantic-{size}"}
    out: dict[str, Any] = {"memories": size}
    services = {}
    for label, home in homes.items():
        svc = MemoryService(Settings(home=home, embeddings="none" if label == "words" else "offline"))
        out[f"populate_{label}_s"] = round(populate(svc, "bench", memories), 1)
        services[label] = svc
    print(f"  planning {size:,}: words...", file=sys.stderr)
    seconds, plan = timed(lambda: services["words"].plan("bench"))
    out["plan_words_s"] = round(seconds, 2)
    out["plan_words_clusters"] = len(plan.clusters)
    print(f"  planning {size:,}: semantic, first run (embeds everything)...", file=sys.stderr)
    seconds, plan = timed(lambda: services["semantic"].plan("bench"))
    out["plan_semantic_first_s"] = round(seconds, 2)
    out["plan_semantic_clusters"] = len(plan.clusters)
    services["semantic"].close()
    fresh = MemoryService(Settings(home=homes["semantic"]))
    seconds, plan = timed(lambda: fresh.plan("bench"))
    out["plan_semantic_warm_s"] = round(seconds, 2)
    for i in range(20):
        fresh.remember("bench", f"Warm-run statement {i}: keep module {i} under {100 + i} lines.", source="user")
    seconds, plan = timed(lambda: fresh.plan("bench"))
    out["plan_semantic_warm_after_20_writes_s"] = round(seconds, 2)
    out["plan_semantic_warm_vs_words"] = round(out["plan_semantic_warm_s"] / max(out["plan_words_s"], 1e-9), 2)
    services["semantic"] = fresh
    print(f"  recall {size:,}...", file=sys.stderr)
    asked = queries_for(texts[: min(size, len(texts))], queries, random.Random(seed))
    out.update(recall_each(services, memories, asked))
    return out


def recall_at_scale(texts: list[str], size: int, queries: int, seed: int, tmp: Path) -> dict[str, Any]:
    """Hybrid recall against FTS only over ``size`` memories, with vectors made rather than embedded.

    Embedding 100,000 texts takes the offline encoder over ten minutes here (see the throughput),
    and the numbered variants past the 5,064th would only repeat their statement's vector. So the
    real statements are embedded, and each variant's vector is its statement's plus a little noise,
    written into the vector store as ``gitmem vectors`` would; recall then runs as in production
    (query embedded, the space built from the store, the fusion, the ranking).
    """
    import numpy as np

    from gitmem.repo import Namespaces, VectorStore

    at = datetime.now(UTC).replace(microsecond=0)
    memories = [memory_for(texts, i, at) for i in range(size)]
    base = min(size, len(texts))
    out: dict[str, Any] = {"memories": size, "vectors": f"embedded for the first {base:,}, made for the rest"}
    services = {label: MemoryService(Settings(home=tmp / f"scale-{label}-{size}",
                                              embeddings="none" if label == "words" else "offline"))
                for label in ("words", "semantic")}
    for svc in services.values():
        populate(svc, "bench", memories)
    model = Offline()
    real = model.embed([m.text for m in memories[:base]])
    rng = np.random.default_rng(seed)
    noisy = real[np.arange(size) % base] + 0.03 * rng.standard_normal((size, real.shape[1])).astype(np.float32)
    noisy[:base] = real
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
    namespaces = Namespaces(services["semantic"].settings)
    ns = namespaces.open("bench")
    store = VectorStore(ns.state / "vectors.sqlite", model.name)
    store.put([text_hash(m.text) for m in memories], noisy)
    store.close()
    namespaces.close()
    asked = queries_for(texts[:base], queries, random.Random(seed))
    out.update(recall_each(services, memories, asked))
    return out


def markdown(results: dict[str, Any]) -> str:
    q = results["quality"]
    lines = [f"Labelled set: {q['topics']} topics, {q['statements']} statements, {q['same_topic_pairs']} same-topic "
             f"pairs, {q['twins']} cross-lingual twins, {q['near_misses']} near-miss pairs.", "",
             "| measure | same-topic pairs together | cross-topic pairs together | twins together | clusters |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for name, row in q["measures"].items():
        lines.append(f"| {name} | {row['same_topic_together']} ({row['same_topic_share']:.0%}) | "
                     f"{row['cross_topic_together']} | {row['twins_together']} | {row['clusters']} |")
    lines += ["", f"Cross-lingual queries, recall@1 / @3: hybrid {q['cross_lingual_recall_at_1_hybrid']:.0%} / "
                  f"{q['cross_lingual_recall_at_3_hybrid']:.0%}, FTS only {q['cross_lingual_recall_at_1_fts_only']:.0%}"
                  f" / {q['cross_lingual_recall_at_3_fts_only']:.0%}", ""]
    t = results["throughput"]
    lines += [f"Offline encoder: {t['embed_per_s']} statements/s ({t['statements']} statements), tokenising "
              f"{t['tokenise_per_s']}/s ({t['embed_vs_tokenise']}x); model load {t['model_load_from_wheel_s']} s "
              f"from the wheel, {t['model_load_from_cache_s']} s from state/models.", "",
              "| memories | plan, words (s) | plan, semantic first run (s) | warm (s) | warm after 20 writes (s) "
              "| warm / words | recall p50/p95 hybrid (ms) | FTS only (ms) | top-1 hybrid / FTS |",
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in results["sizes"]:
        lines.append(
            f"| {row['memories']:,} | {row['plan_words_s']} | {row['plan_semantic_first_s']} | "
            f"{row['plan_semantic_warm_s']} | {row['plan_semantic_warm_after_20_writes_s']} | "
            f"{row['plan_semantic_warm_vs_words']}x | "
            f"{row['recall_semantic_p50_ms']} / {row['recall_semantic_p95_ms']} | "
            f"{row['recall_words_p50_ms']} / {row['recall_words_p95_ms']} | "
            f"{row['recall_semantic_top1']:.1%} / {row['recall_words_top1']:.1%} |")
    for row in results.get("recall_at_scale", []):
        lines += ["", f"Recall over {row['memories']:,} memories (vectors {row['vectors']}): hybrid p50/p95 "
                      f"{row['recall_semantic_p50_ms']} / {row['recall_semantic_p95_ms']} ms, FTS only "
                      f"{row['recall_words_p50_ms']} / {row['recall_words_p95_ms']} ms "
                      f"({row['recall_p95_semantic_vs_words']}x at p95); top-1 {row['recall_semantic_top1']:.1%} / "
                      f"{row['recall_words_top1']:.1%}; the first recall of a process "
                      f"{row['first_recall_semantic_s']} s / {row['first_recall_words_s']} s."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[5064], help="memories (default: 5064)")
    parser.add_argument("--recall-sizes", type=int, nargs="*", default=[],
                        help="also recall over this many memories, their vectors made, not embedded (e.g. 100000)")
    parser.add_argument("--queries", type=int, default=200, help="recall queries per size (default: 200)")
    parser.add_argument("--embed", type=int, default=1000, help="statements embedded for throughput (default 1000)")
    parser.add_argument("--data", type=Path, default=DATA, help="the cursorrules.jsonl data set")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "semantic.json")
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"{args.data} not found; pass --data PATH to cursorrules.jsonl")
    texts = load_statements(args.data)
    results: dict[str, Any] = {
        "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "python": platform.python_version(),
        "command": " ".join(["bench/bench_semantic.py", *(argv if argv is not None else sys.argv[1:])]),
        "cpus": os.cpu_count(), "load_average_before": [round(x, 2) for x in os.getloadavg()], "sizes": [],
    }
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-semantic-") as folder:
        tmp = Path(folder)
        print("throughput...", file=sys.stderr)
        results["throughput"] = throughput(texts, args.embed, tmp)
        print("quality...", file=sys.stderr)
        results["quality"] = quality(Offline(), tmp)
        for size in args.sizes:
            print(f"{size:,} memories...", file=sys.stderr)
            results["sizes"].append(at_size(texts, size, args.queries, args.seed, tmp))
        results["recall_at_scale"] = []
        for size in args.recall_sizes:
            print(f"recall over {size:,} memories...", file=sys.stderr)
            results["recall_at_scale"].append(recall_at_scale(texts, size, args.queries, args.seed, tmp))
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(markdown(results))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
