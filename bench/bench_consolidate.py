"""Benchmark: finding consolidation clusters, indexed search vs. the all-pairs baseline, in one run.

Data: the 5,064 real statements of tests/data/cursorrules.jsonl (``--data``), and 100,000
statements built from them by small random edits (dropping, repeating, swapping or replacing a
word, appending a word), so every statement has near-duplicates as real memory piles do.

Reported, all measured in this run on one core:

* clusters on the real corpus, and that they equal the all-pairs clusters;
* the all-pairs baseline at 2,000 and 5,000 statements (and its quadratic extrapolation);
* the indexed search at 5,000 (checked equal to all-pairs on that sample) and at 100,000 (wall
  and CPU time: on a shared machine the CPU time is the steadier figure; the goal is 60 s);
* ``plan()`` end to end on a repository holding the real corpus.

Run: ``.venv/bin/python bench/bench_consolidate.py [--data PATH] [--size 100000] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitmem import clustering, concepts
from gitmem.concepts import Memory
from gitmem.repo import Change, Namespaces
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.similarity import token_set

THRESHOLD = 0.3
DEFAULT_DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "cursorrules.jsonl"


def load(path: Path) -> list[str]:
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def edited(texts: list[str], size: int, seed: int = 1) -> list[str]:
    """``size`` statements: the originals, then copies with one to three small random edits."""
    rng = random.Random(seed)
    vocabulary = [w for t in rng.sample(texts, min(500, len(texts))) for w in t.split()]
    out = list(texts[:size])
    while len(out) < size:
        words = rng.choice(texts).split()
        for _ in range(rng.randint(1, 3)):
            op = rng.randrange(5)
            i = rng.randrange(len(words))
            if op == 0 and len(words) > 3:
                del words[i]
            elif op == 1:
                words.insert(i, words[i])
            elif op == 2 and len(words) > 1:
                j = min(i + 1, len(words) - 1)
                words[i], words[j] = words[j], words[i]
            elif op == 3:
                words[i] = rng.choice(vocabulary)
            else:
                words.append(rng.choice(vocabulary))
        out.append(" ".join(words))
    return out


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def cpu_timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """Value, wall seconds and CPU seconds of this process (steadier on a shared machine)."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def plan_on_repository(texts: list[str]) -> tuple[float, int, int]:
    """Load the corpus into a real repository (one commit) and time ``consolidate.plan``."""
    with tempfile.TemporaryDirectory() as tmp:
        svc = MemoryService(Settings(home=Path(tmp) / "home"))
        svc.init("bench")
        ns = Namespaces(svc.settings).open("bench")  # bulk loading goes through the repository layer
        at = concepts.now()
        files: dict[str, bytes | None] = {}
        for i, text in enumerate(texts):
            memory_id = f"{i:010x}"
            memory = Memory(id=memory_id, type="convention", text=text, title=concepts.title_from(text),
                            source="import", created=at, updated=at)
            path = concepts.file_path("convention", f"m{memory_id}")
            files[path] = concepts.render(memory.replace(path=path))
        ns.store.transact(lambda head: Change(files, f"import {len(files)} statements", "import"))
        ns.synced()
        plan, seconds = timed(lambda: svc.plan("bench"))
        svc.close()
        return seconds, len(plan.clusters), sum(len(c.members) for c in plan.clusters)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="cursorrules.jsonl")
    parser.add_argument("--size", type=int, default=100_000, help="statements in the large run")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if not args.data.exists():
        parser.error(f"{args.data} not found; pass --data PATH to cursorrules.jsonl")
    if args.size < 2:
        parser.error("--size must be at least 2")
    texts = load(args.data)

    def log(*parts: object) -> None:
        if not args.json:
            print(*parts, file=sys.stderr, flush=True)

    figures: dict[str, Any] = {"threshold": THRESHOLD, "real_statements": len(texts)}

    real = [token_set(t) for t in texts]
    clusters, t_real = timed(lambda: clustering.find_clusters(real, THRESHOLD))
    log(f"real corpus: {len(clusters)} clusters in {t_real:.2f} s (indexed)")
    baseline, t_real_base = timed(lambda: clustering.find_clusters(real, THRESHOLD, baseline=True))
    log(f"real corpus: all-pairs baseline {t_real_base:.2f} s")
    sizes: dict[int, int] = {}
    for c in clusters:
        sizes[len(c)] = sizes.get(len(c), 0) + 1
    figures["real"] = {
        "clusters": len(clusters), "memories_in_clusters": sum(len(c) for c in clusters),
        "cluster_sizes": dict(sorted(sizes.items())), "same_as_all_pairs": clusters == baseline,
        "indexed_s": round(t_real, 3), "all_pairs_s": round(t_real_base, 3),
        "speedup": round(t_real_base / t_real, 1),
    }

    big = [token_set(t) for t in edited(texts, args.size)]
    # 5,000 statements, or all of them in a smaller run (--size 2000).
    sample = random.Random(5).sample(big, min(5000, len(big)))
    _, t_2k = timed(lambda: clustering.all_pairs(sample[:2000], THRESHOLD))
    log(f"all-pairs at {len(sample[:2000]):,}: {t_2k:.2f} s")
    base_5k, t_5k_base = timed(lambda: clustering.find_clusters(sample, THRESHOLD, baseline=True))
    fast_5k, t_5k = timed(lambda: clustering.find_clusters(sample, THRESHOLD))
    log(f"{len(sample):,} edited sample: all-pairs {t_5k_base:.2f} s, indexed {t_5k:.2f} s, "
        f"same: {base_5k == fast_5k}")
    big_clusters, t_big, cpu_big = cpu_timed(lambda: clustering.find_clusters(big, THRESHOLD))
    extrapolated = t_5k_base * (len(big) / len(sample)) ** 2
    log(f"{len(big):,} statements: indexed {t_big:.1f} s ({cpu_big:.1f} s CPU), {len(big_clusters):,} "
        f"clusters; all-pairs extrapolated {extrapolated / 3600:.1f} h")
    figures["sample_5000"] = {"statements": len(sample), "all_pairs_s": round(t_5k_base, 3),
                              "indexed_s": round(t_5k, 3), "same_as_all_pairs": base_5k == fast_5k,
                              "clusters": len(fast_5k),
                              "speedup": round(t_5k_base / t_5k, 1)}
    figures["all_pairs_2000_s"] = round(t_2k, 3)
    figures["large"] = {"statements": len(big), "indexed_s": round(t_big, 2), "indexed_cpu_s": round(cpu_big, 2),
                        "clusters": len(big_clusters), "all_pairs_extrapolated_s": round(extrapolated),
                        "speedup_vs_extrapolated": round(extrapolated / t_big), "under_60_s": cpu_big < 60}
    figures["load_average"] = os.getloadavg()[0]

    t_plan, n_plan, m_plan = plan_on_repository(texts)
    log(f"plan() on a repository of the real corpus: {t_plan:.2f} s, {n_plan} clusters of {m_plan} memories")
    figures["plan_real_repository"] = {"seconds": round(t_plan, 2), "clusters": n_plan, "memories": m_plan}

    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        r, s, g = figures["real"], figures["sample_5000"], figures["large"]
        print(f"| run | statements | indexed | all-pairs | ratio | same clusters |\n|---|---|---|---|---|---|\n"
              f"| real corpus | {len(texts):,} | {r['indexed_s']:.2f} s | {r['all_pairs_s']:.2f} s | "
              f"{r['speedup']}x | {r['same_as_all_pairs']} |\n"
              f"| edited sample | {s['statements']:,} | {s['indexed_s']:.2f} s | {s['all_pairs_s']:.2f} s | "
              f"{s['speedup']}x | {s['same_as_all_pairs']} |\n"
              f"| edited | {g['statements']:,} | {g['indexed_s']:.1f} s ({g['indexed_cpu_s']:.1f} s CPU) | "
              f"~{g['all_pairs_extrapolated_s'] / 3600:.1f} h (extrapolated) | "
              f"{g['speedup_vs_extrapolated']}x | - |")
        print(f"\nreal corpus: {r['clusters']} clusters holding {r['memories_in_clusters']} statements, "
              f"sizes {r['cluster_sizes']}; all-pairs at 2,000: {figures['all_pairs_2000_s']:.2f} s; "
              f"plan() on a repository of the real corpus: {t_plan:.2f} s; load average "
              f"{figures['load_average']:.1f}")
    same = figures["real"]["same_as_all_pairs"] and figures["sample_5000"]["same_as_all_pairs"]
    return 0 if same and figures["large"]["under_60_s"] else 1


if __name__ == "__main__":
    sys.exit(main())
