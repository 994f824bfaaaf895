"""A simulated month of use: does potency come to say how much each memory is used?

A namespace of real statements (``tests/data/cursorrules.jsonl``) is used for ``--days`` days
on a simulated clock, as a team would use it:

* each day, ``--sessions`` agent sessions ask ``context`` with a question drawn from a Zipf
  distribution over topics (a few asked every day, most seldom, many never), and ``recall``
  twice the same way; a person opens two memories (``show``) and browses the list and the
  dashboard's strongest (neither counts as a use);
* each night the worker folds the day's uses into the files (``gitmem fold``).

At the end the real consolidation planner says what it would archive. The baseline, computed on
the same deliveries in the same run, is the rule before issue 21: every memory a listing or a
search returned counted as a use, each adding 0.3 capped at 1.0. Reported: the distribution of
potency over the memories (percentiles and a histogram), how many sit at 0.95 or more, how many
would be archived, and how potency follows use (the mean potency of memories by how many days they
were used).

    .venv/bin/python bench/bench_potency.py              # 400 memories, 40 days
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import gitmem  # noqa: E402
from gitmem import concepts  # noqa: E402
from gitmem.memories import Candidate  # noqa: E402
from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402

DATA = ROOT / "tests" / "data" / "cursorrules.jsonl"
START = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


class Clock:
    """A simulated clock, installed wherever gitmem reads the time through ``concepts.now``."""

    def __init__(self) -> None:
        self.at = START

    def __call__(self) -> datetime:
        return self.at

    def install(self) -> None:
        real = concepts.now
        for name, module in list(sys.modules.items()):
            if (name == "gitmem" or name.startswith("gitmem.")) and getattr(module, "now", None) is real:
                module.now = self  # type: ignore[attr-defined]


def old_potency(created: datetime, uses: list[datetime], at: datetime) -> float:
    """The rule before issue 21: decay x0.95 a day, +0.3 per use capped at 1, every delivery a use."""
    potency, since = concepts.NEW_POTENCY, created
    for moment in sorted(uses):
        potency = min(1.0, potency * 0.95 ** ((moment - since).total_seconds() / 86400) + 0.3)
        since = moment
    return potency * 0.95 ** ((at - since).total_seconds() / 86400)


def histogram(values: list[float]) -> dict[str, int]:
    """Counts of values in tenths: "0.0-0.1" ... "0.9-1.0" (1.0 in the last)."""
    out = {f"{i / 10:.1f}-{(i + 1) / 10:.1f}": 0 for i in range(10)}
    for v in values:
        i = min(9, int(v * 10))
        out[f"{i / 10:.1f}-{(i + 1) / 10:.1f}"] += 1
    return out


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {f"p{p}": round(ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))], 3) for p in (5, 25, 50, 75, 95)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=400)
    parser.add_argument("--days", type=int, default=40)
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "potency.json"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    texts = sorted({json.loads(line)["text"] for line in DATA.read_text().splitlines()})
    sample = rng.sample(texts, args.memories)
    clock = Clock()
    clock.install()
    with tempfile.TemporaryDirectory() as home:
        service = MemoryService(Settings.from_env({"GITMEM_HOME": home, "GITMEM_EMBEDDINGS": "none"}))
        service.init("team")
        service.remember_many("team", [Candidate(t, type="convention", source="user") for t in sample],
                              message="the team's rules", actor="bench")
        ids = {m.text: m.id for m in service.list("team", limit=10_000)}
        # Topics are statements; a query is four words of one. Zipf: topic k is asked 1/k as often.
        topics = rng.sample(sample, len(sample) // 2)
        weights = [1 / (k + 1) for k in range(len(topics))]
        delivered: dict[str, list[datetime]] = defaultdict(list)  # the old rule's uses
        days_used: dict[str, set[int]] = defaultdict(set)
        for day in range(args.days):
            for session in range(args.sessions):
                clock.at = START + timedelta(days=day, minutes=37 * session)
                for _ in range(3):
                    topic = rng.choices(topics, weights)[0]
                    words = topic.split()
                    start = rng.randrange(max(1, len(words) - 4))
                    query = " ".join(words[start:start + 4])
                    hits = service.recall("team", query, limit=5)
                    for hit in hits:
                        delivered[hit.memory.id].append(clock.at)
                        days_used[hit.memory.id].add(day)
                listing = service.recall("team", "", limit=10, record=False)  # the dashboard's strongest
                for hit in listing:
                    delivered[hit.memory.id].append(clock.at)  # the old rule counted a listing as a use
            clock.at = START + timedelta(days=day, hours=8)
            for text in rng.sample(topics[:40], 2):  # a person opens two memories
                service.show("team", ids[text], record=True)
                delivered[ids[text]].append(clock.at)
                days_used[ids[text]].add(day)
            clock.at = START + timedelta(days=day, hours=23)
            service.fold_usage("team", actor="worker")
        end = START + timedelta(days=args.days)
        clock.at = end
        plan = service.plan("team")
        memories = service.list("team", limit=10_000)
        new = {m.id: m.potency_at(end) for m in memories}
        old = {m.id: old_potency(START, delivered.get(m.id, []), end) for m in memories}
        archived_new = sum(1 for a in plan.lifecycle if a.action == "archive")
        # The old lifecycle archived what fell below 0.10 and what was never used in 30 days.
        archived_old = sum(1 for k, v in old.items() if v < concepts.ARCHIVE_BELOW or not delivered.get(k))
        by_days: dict[str, list[float]] = defaultdict(list)
        for memory_id, potency in new.items():
            n = len(days_used.get(memory_id, ()))
            bucket = "0" if n == 0 else "1-2" if n <= 2 else "3-9" if n <= 9 else "10+"
            by_days[bucket].append(potency)
        out: dict[str, Any] = {
            "memories": len(memories), "days": args.days, "sessions_a_day": args.sessions,
            "gitmem": {"percentiles": percentiles(list(new.values())), "histogram": histogram(list(new.values())),
                       "at_0.95_or_more": sum(1 for v in new.values() if v >= 0.95),
                       "archived_by_consolidation": archived_new,
                       "mean_by_days_used": {k: round(sum(v) / len(v), 3) for k, v in sorted(by_days.items())},
                       "memories_by_days_used": {k: len(v) for k, v in sorted(by_days.items())}},
            "old_rule": {"percentiles": percentiles(list(old.values())), "histogram": histogram(list(old.values())),
                         "at_0.95_or_more": sum(1 for v in old.values() if v >= 0.95), "archived": archived_old},
            "archive_reasons": Counter(a.reason.split(",")[0].split(" in the")[0] for a in plan.lifecycle
                                       if a.action == "archive").most_common(3),
            "gitmem_version": getattr(gitmem, "__version__", "?"),
        }
        service.close()
    print(f"## Potency after {args.days} simulated days ({len(memories)} memories, {args.sessions} sessions a day)\n")
    print("| | p5 | p25 | p50 | p75 | p95 | 0.95 or more | archived |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, row in (("gitmem", out["gitmem"]), ("old rule", out["old_rule"])):
        p = row["percentiles"]
        gone = row.get("archived_by_consolidation", row.get("archived"))
        print(f"| {name} | {p['p5']} | {p['p25']} | {p['p50']} | {p['p75']} | {p['p95']} | "
              f"{row['at_0.95_or_more']} | {gone} |")
    print("\nMean potency by days a memory was used:", out["gitmem"]["mean_by_days_used"],
          "(memories:", out["gitmem"]["memories_by_days_used"], ")")
    print("Histogram (gitmem):", out["gitmem"]["histogram"])
    print("Histogram (old rule):", out["old_rule"]["histogram"])
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
