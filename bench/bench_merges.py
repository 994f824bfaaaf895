"""Does consolidation merge only what is one rule, and lose nothing? Measured on real statements.

Two parts, on the statements of ``tests/data/cursorrules.jsonl`` and the pairs of
``tests/data/merge_pairs.json`` (480 pairs labelled by reading: ``same``, one contains the other,
or ``different``; see tests/data/README.md):

* **Pairs.** Each labelled pair is put to the offline decider as a cluster of two (``merge``), and
  to the write gate (the first statement remembered, then the second, both as an agent's). For
  each: how many pairs it merges and how they are labelled (merge precision: same or contained,
  goal 98%), how many it links, and how many of the true duplicates it merges or links (goal 60%).
* **A run to the end.** The seeded 1,000-statement sample the pairs were drawn from is written as
  an agent would write it, then consolidated offline, every review approved, again and again until
  a run proposes nothing. Counted: the merge commits, the words they lose (the review page's
  measure, :func:`gitmem.textdiff.lost_words`, of every memory merged away against the one kept),
  and the statements of the sample whose words are on main in no memory any more.

The baseline in the same run is the rule before issue 22 (``--baseline PATH``: a checkout of it,
run as a second process with the same arguments; its figures are printed beside).

    .venv/bin/python bench/bench_merges.py
    .venv/bin/python bench/bench_merges.py --baseline /work/wt/base   # and the old rule beside
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The code measured: this checkout's, or the one --baseline names (its data stays this checkout's).
sys.path.insert(0, os.environ.get("BENCH_MERGES_CODE", str(ROOT)))

from gitmem import textdiff  # noqa: E402
from gitmem.concepts import Memory, new_id, now  # noqa: E402
from gitmem.llm import Offline  # noqa: E402
from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402

PAIRS = ROOT / "tests" / "data" / "merge_pairs.json"
DATA = ROOT / "tests" / "data" / "cursorrules.jsonl"
TRUE = ("same", "a_contains_b", "b_contains_a")


def memory(text: str, n: int) -> Memory:
    at = now()
    return Memory(id=new_id(), type="convention", text=text, title=text[:60], source="import", created=at,
                  updated=at, path=f"convention/m{n}.md")


def pairs_part(pairs: list[dict[str, str]]) -> dict[str, Any]:
    """The offline decider and the write gate on each labelled pair."""
    decider = Offline()
    merged: Counter[str] = Counter()
    linked: Counter[str] = Counter()
    worst: list[dict[str, str]] = []
    for n, p in enumerate(pairs):
        decision = decider.merge([memory(p["a"], 2 * n), memory(p["b"], 2 * n + 1)], max_chars=2000)
        if decision.text is not None:
            merged[p["label"]] += 1
            if p["label"] not in TRUE:
                worst.append({"a": p["a"], "b": p["b"], "why": p["why"], "reason": decision.reason})
        elif decision.link:
            linked[p["label"]] += 1
    gate: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as home:
        service = MemoryService(Settings.from_env({"GITMEM_HOME": home}))
        for n, p in enumerate(pairs):
            namespace = f"p{n}"
            service.init(namespace)
            service.remember(namespace, p["a"], type="convention", source="agent", author="bench")
            outcome = service.remember(namespace, p["b"], type="convention", source="agent", author="bench").outcome
            if outcome in ("merged", "reinforced"):
                gate[p["label"]] += 1
        service.close()
    labels = Counter(p["label"] for p in pairs)
    true_total = sum(labels[x] for x in TRUE)
    merges = sum(merged.values())
    gate_merges = sum(gate.values())
    return {
        "pairs": len(pairs), "labels": dict(labels),
        "decider_merged": dict(merged), "decider_linked": dict(linked),
        "decider_precision": round(sum(merged[x] for x in TRUE) / merges, 3) if merges else None,
        "true_merged_or_linked": round(sum(merged[x] + linked[x] for x in TRUE) / true_total, 3),
        "true_merged": round(sum(merged[x] for x in TRUE) / true_total, 3),
        "gate_merged": dict(gate),
        "gate_precision": round(sum(gate[x] for x in TRUE) / gate_merges, 3) if gate_merges else None,
        "worst_merges": worst[:15],
    }


def run_part(seed: int, size: int, rounds: int) -> dict[str, Any]:
    """The sample consolidated offline to the end, every review approved; merges, words lost, statements gone."""
    records = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [r["text"] for r in random.Random(seed).sample(records, size)]
    out: dict[str, Any] = {"statements": size}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as home:
        service = MemoryService(Settings.from_env({"GITMEM_HOME": home}))
        service.init("run")
        for text in texts:
            service.remember("run", text, type="convention", source="agent", author="bench")
        merges = links = words_lost = 0
        lossy: list[dict[str, Any]] = []
        every: list[dict[str, Any]] = []  # each merge, to be read: the text kept and the texts merged away
        for _ in range(rounds):
            result = service.consolidate("run")
            review = getattr(result, "review", None)
            if review is None:
                break
            number = review if isinstance(review, int) else review.number
            for commit in service.reviews.diff("run", number):
                if not commit.merge:
                    links += any(m.change == "changed" for m in commit.memories) and commit.action == "link"
                    continue
                merges += 1
                kept = commit.kept.after if commit.kept is not None else ""
                every.append({"kept": kept, "away": [m.before for m in commit.members
                                                     if m is not commit.kept and m.before is not None]})
                for member in commit.members:
                    if member is commit.kept or member.before is None:
                        continue
                    gone = [w for w in textdiff.lost_words(member.before, kept or "") if w.strip()]
                    words_lost += len(gone)
                    if gone:
                        lossy.append({"kept": kept, "away": member.before, "lost": gone})
            service.reviews.approve("run", number, actor="bench")
        on_main = " \n ".join(m.text for m in service.list("run", limit=100_000))
        gone_statements = [t for t in texts if textdiff.lost_words(t, on_main)]
        out.update({"merge_commits": merges, "words_lost": words_lost, "lossy_merges": lossy[:10], "merges": every,
                    "memories_left": len(service.list("run", limit=100_000)),
                    "statements_gone": len(gone_statements), "statements_gone_examples": gone_statements[:10]})
        service.close()
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=20, help="consolidation runs at most")
    parser.add_argument("--no-run", action="store_true", help="the pairs only")
    parser.add_argument("--baseline", type=Path, help="a checkout of the rule before, run beside")
    parser.add_argument("--json", action="store_true", help="print JSON only (for --baseline)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "merges.json")
    args = parser.parse_args(argv)
    spec = json.loads(args.pairs.read_text(encoding="utf-8"))
    results: dict[str, Any] = {"pairs": pairs_part(spec["pairs"])}
    if not args.no_run:
        results["run"] = run_part(int(spec.get("seed", 22)), args.size, args.rounds)
    if args.baseline is not None:
        env = {**os.environ, "BENCH_MERGES_CODE": str(args.baseline.resolve())}
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--json", "--pairs", str(args.pairs),
                               "--size", str(args.size), "--rounds", str(args.rounds),
                               *(["--no-run"] if args.no_run else [])],
                              env=env, capture_output=True, text=True, cwd=args.baseline, check=True)
        results["baseline"] = json.loads(done.stdout)
    if args.json:
        print(json.dumps(results))
        return 0
    for name, row in (("gitmem", results), ("before", results.get("baseline"))):
        if row is None:
            continue
        p = row["pairs"]
        print(f"{name}: decider merges {sum(p['decider_merged'].values())} ({p['decider_merged']}), precision "
              f"{p['decider_precision']}; links {p['decider_linked']}; true duplicates merged or linked "
              f"{p['true_merged_or_linked']}; write gate merges {p['gate_merged']}, precision {p['gate_precision']}")
        if "run" in row:
            r = row["run"]
            print(f"  run to the end on {r['statements']}: {r['merge_commits']} merges, {r['words_lost']} words lost, "
                  f"{r['memories_left']} memories left, {r['statements_gone']} statements gone")
    args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
