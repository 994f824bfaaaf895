"""Draw the statement pairs of tests/data/merge_pairs.json, and score the current decider on their labels.

The pairs come from a seeded random sample of 1,000 statements of tests/data/cursorrules.jsonl
(``--data``), written into a fresh namespace one at a time as an agent would (``remember``,
``source="agent"``, offline embeddings, every other setting at its default):

* ``gate``: every statement the write gate merged, with the memory it was merged into;
* ``planner``: every pair inside a cluster that ``plan()`` then proposes on that namespace;
* ``nearest``: the closest other pairs of the sample, by sentence cosine and by word Dice in turn,
  at least ``--nearest`` of them and more until the draw holds ``--total`` pairs;
* ``duplicate``: ``--duplicates`` pairs of near-identical statements from different rule files of
  the whole data set (word Dice at least 0.8), chosen with the same seed.

Nothing here labels a pair: the labels in merge_pairs.json were written by reading. With
``--labels`` the script runs the draw again and prints how the planner's and the write gate's
pairs of this run are labelled (merge precision), and the pairs they join that are labelled
``different``; a pair the labels lack is counted as unlabelled.

Run: ``.venv/bin/python bench/merge_pairs_draw.py [--out PATH] [--labels tests/data/merge_pairs.json]``
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any

from gitmem import clustering
from gitmem.embeddings import Offline
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.similarity import dice, token_set

SEED = 22
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / "tests" / "data" / "cursorrules.jsonl"
DUPLICATE_DICE = 0.8


def load(path: Path) -> list[dict[str, str]]:
    """The records of ``path``: ``{"source", "text"}`` per line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def key(a: str, b: str) -> tuple[str, str]:
    """One key for a pair, whichever way round it is given."""
    return (a, b) if a <= b else (b, a)


def run_gitmem(texts: list[str]) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """Write ``texts`` as an agent would, then plan: the gate's merges and the planner's cluster pairs.

    Each pair is ``(a, b, detail)``; a gate pair is (the statement written, the memory it joined).
    """
    gate: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        svc = MemoryService(Settings(home=Path(tmp) / "home"))
        try:
            svc.init("pairs")
            for n, text in enumerate(texts):
                result = svc.remember("pairs", text, type="convention", source="agent", author="agent")
                if result.outcome in ("merged", "reinforced") and result.memory is not None:
                    gate.append((text, result.memory.text, result.outcome))
                if n % 100 == 99:
                    print(f"written {n + 1}", file=sys.stderr, flush=True)
            plan = svc.plan("pairs")
        finally:
            svc.close()
    # Members in the order they were written (their ids are random), so every run draws the same pairs.
    place = {text: n for n, text in enumerate(texts)}
    planner = [(a, b, f"cluster {number} of {len(c.members)}, min similarity {c.min_similarity:.2f}")
               for number, c in enumerate(plan.clusters, 1)
               for a, b in combinations(sorted((m.text for m in c.members), key=place.__getitem__), 2)]
    return gate, planner


def nearest(texts: list[str], taken: set[tuple[str, str]], count: int) -> list[tuple[str, str, str]]:
    """The ``count`` closest pairs of ``texts`` not in ``taken``, by cosine and by word Dice in turn."""
    if count <= 0:
        return []
    vectors = Offline().embed(texts)
    cosines = vectors @ vectors.T
    sets = [token_set(t) for t in texts]
    by_cosine = sorted(((float(cosines[i, j]), i, j) for i, j in combinations(range(len(texts)), 2)), reverse=True)
    by_words = sorted(((dice(sets[i], sets[j]), i, j) for i, j in combinations(range(len(texts)), 2)), reverse=True)
    out: list[tuple[str, str, str]] = []
    lists = [(by_cosine, "cosine"), (by_words, "word dice")]
    places = [0, 0]
    while len(out) < count:
        turn = len(out) % 2
        ranked, measure = lists[turn]
        while places[turn] < len(ranked):
            score, i, j = ranked[places[turn]]
            places[turn] += 1
            if key(texts[i], texts[j]) not in taken:
                taken.add(key(texts[i], texts[j]))
                out.append((texts[i], texts[j], f"{measure} {score:.2f}"))
                break
        else:
            break  # every pair is taken
    return out


def duplicates(records: list[dict[str, str]], taken: set[tuple[str, str]], count: int,
               rng: random.Random) -> list[tuple[str, str, str]]:
    """``count`` near-identical pairs from different rule files of the whole data set (records without a file: none)."""
    sets = [token_set(r["text"]) for r in records]
    found = [(score, i, j) for score, i, j in clustering.similar_pairs(sets, DUPLICATE_DICE)
             if records[i].get("source") is not None and records[j].get("source") is not None
             and records[i]["source"] != records[j]["source"]
             and key(records[i]["text"], records[j]["text"]) not in taken]
    found.sort(key=lambda p: (p[1], p[2]))
    chosen = rng.sample(found, min(count, len(found)))
    return [(records[i]["text"], records[j]["text"], f"word dice {score:.2f}, {records[i].get('source')} / "
             f"{records[j].get('source')}") for score, i, j in chosen]


def draw(records: list[dict[str, str]], seed: int, size: int, total: int, least: int,
         dups: int) -> list[dict[str, str]]:
    """Every pair of the draw, as ``{"a", "b", "from"}``, gate and planner pairs first."""
    rng = random.Random(seed)
    sample = [r["text"] for r in rng.sample(records, min(size, len(records)))]
    gate, planner = run_gitmem(sample)
    pairs: dict[tuple[str, str], dict[str, str]] = {}
    for kind, found in (("gate", gate), ("planner", planner)):
        for a, b, detail in found:
            entry = pairs.setdefault(key(a, b), {"a": a, "b": b, "from": ""})
            entry["from"] = f"{entry['from']}; {kind}: {detail}" if entry["from"] else f"{kind}: {detail}"
    taken = set(pairs)
    near = nearest(sample, taken, max(least, total - len(pairs)))
    out = list(pairs.values()) + [{"a": a, "b": b, "from": f"nearest: {d}"} for a, b, d in near]
    out += [{"a": a, "b": b, "from": f"duplicate: {d}"} for a, b, d in duplicates(records, taken, dups, rng)]
    return out


def label_of(pair: dict[str, str], known: dict[tuple[str, str], dict[str, str]]) -> str:
    """The label of ``pair`` as drawn in this run (a contains-label turned round when its a and b are)."""
    entry = known.get(key(pair["a"], pair["b"]))
    if entry is None:
        return "unlabelled"
    if entry["a"] != pair["a"] and entry["label"].endswith("_contains_a"):
        return "a_contains_b"
    if entry["a"] != pair["a"] and entry["label"].endswith("_contains_b"):
        return "b_contains_a"
    return entry["label"]


def score(pairs: list[dict[str, str]], labels: list[dict[str, str]]) -> dict[str, Any]:
    """How this run's gate and planner pairs are labelled, and the ``different`` ones they join.

    A gate pair is (the statement written, the memory that kept its text), so ``a_contains_b``
    there counts a merge that kept the smaller statement: the written one's extra words are lost.
    """
    known = {key(p["a"], p["b"]): p for p in labels}
    figures: dict[str, Any] = {}
    for kind in ("gate", "planner"):
        mine = [(p, label_of(p, known)) for p in pairs if f"{kind}: " in p["from"]]
        counts = Counter(label for _, label in mine)
        kept = sum(n for label, n in counts.items() if label in ("same", "a_contains_b", "b_contains_a"))
        figures[kind] = {"pairs": len(mine), "labels": dict(sorted(counts.items())),
                         "precision": round(kept / len(mine), 3) if mine else None,
                         "different": [{"a": p["a"], "b": p["b"], "why": known[key(p["a"], p["b"])]["why"]}
                                       for p, label in mine if label == "different"]}
    figures["gate"]["kept_the_smaller"] = figures["gate"]["labels"].get("a_contains_b", 0)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="cursorrules.jsonl")
    parser.add_argument("--seed", type=int, default=SEED, help="the sample's seed")
    parser.add_argument("--size", type=int, default=1000, help="statements in the sample")
    parser.add_argument("--total", type=int, default=320, help="pairs drawn from the sample, at least")
    parser.add_argument("--nearest", type=int, default=40, help="nearest other pairs of the sample, at least")
    parser.add_argument("--duplicates", type=int, default=40, help="near-identical pairs across rule files")
    parser.add_argument("--out", type=Path, help="write the drawn pairs (unlabelled) here as JSON")
    parser.add_argument("--labels", type=Path, help="labelled pairs: print how this run's merges are labelled")
    args = parser.parse_args(argv)
    if not args.data.exists():
        parser.error(f"{args.data} not found; pass --data PATH to cursorrules.jsonl")
    if args.size < 2:
        parser.error("--size must be at least 2")
    if args.labels is not None and not args.labels.exists():
        parser.error(f"{args.labels} not found; pass --labels PATH to merge_pairs.json")
    pairs = draw(load(args.data), args.seed, args.size, args.total, args.nearest, args.duplicates)
    print(f"drawn: {dict(Counter(p['from'].split(':')[0] for p in pairs))}", file=sys.stderr)
    if args.out is not None:
        args.out.write_text(json.dumps(pairs, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.labels is not None:
        labelled = json.loads(args.labels.read_text(encoding="utf-8"))["pairs"]
        print(json.dumps(score(pairs, labelled), indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
