"""Does recall tell the truth? gitmem against a plain keyword store, in one run, per category.

Two parts, both scored on the memories each store returns for a question (``recall``, limit 5):

* **The labelled set** (``tests/data/truth.json``, 75 questions in English and Chinese, in the
  shape of LongMemEval's abstention and knowledge-update items): each scenario gets a namespace
  of its own holding a haystack of 41 statements, then its steps (statements said one after the
  other, by a person or an agent; statements asked to be forgotten), then its questions.
  - ``answerable`` / ``similar``: the expected memory ranks first (two similar entities: the right one);
  - ``abstention``: nothing is returned for a question nobody answered (``abstention-near``: one
    that names something the haystack holds, reported apart);
  - ``update``: the newest statement ranks first and the one it corrects is not returned at all;
  - ``additive``: a statement that adds ("also") keeps both;
  - ``forgotten``: a forgotten statement is never returned.
* **Real statements** (``tests/data/cursorrules.jsonl``, a seeded sample): questions nobody's
  rules answer must get nothing; a fragment of a statement must find it first; a person's
  correction of a real statement (its number changed) must rank first and retire the original.

The baseline is the kind of store a developer writes in thirty lines: statements in a list,
a query's words minus a stop list, hits sharing at least one word, most shared words first,
newest first among equals, forgetting deletes.

    .venv/bin/python bench/bench_truth.py                    # both parts (about a minute)
    .venv/bin/python bench/bench_truth.py --embeddings none  # words only
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitmem.memories import Candidate  # noqa: E402
from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402

LABELLED = ROOT / "tests" / "data" / "truth.json"
REAL = ROOT / "tests" / "data" / "cursorrules.jsonl"
LIMIT = 5

# Questions a team's coding rules do not answer (checked by reading what the sample holds).
UNANSWERED = [
    "Who is on call this week?", "Which CRM does the sales team use?", "When is the team offsite?",
    "What is the budget for next quarter?", "How do I request vacation days?", "Where is the office?",
    "What is our company's fiscal year end?", "Who approves expense reports?", "What is the guest Wi-Fi called?",
    "When is payday?", "Which airline do we book for business trips?", "What is my manager's name?",
    "How many people work in the Berlin office?", "What did the customer say in yesterday's call?",
    "Which coffee machine is on the second floor?", "When does the office close on Fridays?",
    "我们的年会在哪里办？", "报销流程是怎样的？", "谁负责这周的值班？", "公司的财年什么时候结束？",
    "下周团建去哪里？", "会议室怎么预订？", "销售团队用什么 CRM？", "新员工入职第一天做什么？",
]


class KeywordStore:
    """The thirty-line baseline: a list, a stop list, shared words, newest first among equals."""

    STOP = frozenset("a an the is are was were be do does did what which who whom when where why how i my me "
                     "we our us you your it its of in on at to for with by from and or not this that "
                     "there can should would will use used".split())

    def __init__(self) -> None:
        self.items: list[tuple[int, str]] = []
        self.clock = 0

    def words(self, text: str) -> set[str]:
        found = re.findall(r"[\w']+", text.lower())
        cjk = [w for w in found if re.search(r"[\u4e00-\u9fff]", w)]
        latin = {w for w in found if w not in cjk and w not in self.STOP}
        return latin | {w[i:i + 2] for w in cjk for i in range(len(w) - 1)}

    def remember(self, text: str) -> None:
        self.clock += 1
        self.items.append((self.clock, text))

    def forget(self, needle: str) -> None:
        self.items = [(t, x) for t, x in self.items if needle not in x]

    def recall(self, query: str, limit: int = LIMIT) -> list[str]:
        q = self.words(query)
        scored = [(len(q & self.words(x)), t, x) for t, x in self.items]
        return [x for n, t, x in sorted(scored, key=lambda s: (-s[0], -s[1])) if n > 0][:limit]


class Gitmem:
    """gitmem through its service, one namespace per scenario."""

    def __init__(self, service: MemoryService, namespace: str) -> None:
        self.service, self.ns = service, namespace
        service.init(namespace)

    def load(self, items: list[dict[str, Any]], source: str = "user") -> None:
        self.service.remember_many(self.ns, [Candidate(i["text"], type=i.get("type", "fact"), source=source,
                                                        tags=i.get("tags", ()), paths=i.get("paths", ()))
                                             for i in items], message="haystack", actor="bench")

    def remember(self, text: str, *, type: str = "fact", source: str = "user") -> None:
        self.service.remember(self.ns, text, type=type, source=source, author="bench")

    def forget(self, needle: str) -> None:
        for memory in self.service.list(self.ns, state="active", limit=1000):
            if needle in memory.text:
                self.service.forget(self.ns, memory.id, actor="bench")

    def recall(self, query: str, limit: int = LIMIT) -> list[str]:
        return [h.memory.text for h in self.service.recall(self.ns, query, limit=limit, record=False)]


def judge(question: dict[str, Any], got: list[str]) -> bool:
    """Whether the returned texts answer the labelled question as its label says."""
    if any(any(n in t for n in question.get("not", ())) for t in got):
        return False
    if question.get("abstain"):
        return not got
    if "expect" in question and not (got and question["expect"] in got[0]):
        return False
    return all(any(a in t for t in got) for a in question.get("also", ()))


def labelled(settings: Settings, data: dict[str, Any], out: dict[str, Any]) -> None:
    """Part one: the labelled set, both stores, per category."""
    service = MemoryService(settings)
    scores: dict[str, dict[str, list[int]]] = defaultdict(lambda: {"gitmem": [], "keywords": []})
    failures: list[dict[str, Any]] = []
    for n, scenario in enumerate(data["scenarios"]):
        mine, base = Gitmem(service, f"s{n}"), KeywordStore()
        mine.load(data["haystack"])
        for item in data["haystack"]:
            base.remember(item["text"])
        for step in scenario["steps"]:
            if "remember" in step:
                mine.remember(step["remember"], type=step.get("type", "fact"), source=step.get("source", "user"))
                base.remember(step["remember"])
            else:
                mine.forget(step["forget"])
                base.forget(step["forget"])
        for question in scenario["questions"]:
            category = scenario["category"]
            got = mine.recall(question["q"])
            ok = judge(question, got)
            scores[category]["gitmem"].append(int(ok))
            scores[category]["keywords"].append(int(judge(question, base.recall(question["q"]))))
            if not ok:
                failures.append({"category": category, "q": question["q"], "got": got[:3]})
    service.close()
    out["labelled"] = {c: {k: f"{sum(v)}/{len(v)}" for k, v in s.items()} for c, s in sorted(scores.items())}
    out["labelled_failures"] = failures


def real(settings: Settings, size: int, seed: int, out: dict[str, Any]) -> None:
    """Part two: real statements, both stores: abstention, fragments, a person's corrections."""
    rng = random.Random(seed)
    texts = sorted({json.loads(line)["text"] for line in REAL.read_text().splitlines()})
    sample = rng.sample(texts, size)
    service = MemoryService(settings)
    mine, base = Gitmem(service, "real"), KeywordStore()
    started = time.perf_counter()
    mine.load([{"text": t, "type": "convention"} for t in sample], source="import")
    for t in sample:
        base.remember(t)
    service.vectors("real")  # what the workers do right after a write (gitmem.embed)
    out["real_load_seconds"] = round(time.perf_counter() - started, 1)
    result: dict[str, dict[str, str]] = {}
    silent = {"gitmem": 0, "keywords": 0}
    noise: list[dict[str, Any]] = []
    for q in UNANSWERED:
        got = mine.recall(q)
        silent["gitmem"] += not got
        silent["keywords"] += not base.recall(q)
        if got:
            noise.append({"q": q, "got": got[:2]})
    result["abstention"] = {k: f"{v}/{len(UNANSWERED)}" for k, v in silent.items()}
    first = {"gitmem": 0, "keywords": 0}
    picks = rng.sample(sample, 100)
    for text in picks:
        words = text.split()
        start = rng.randrange(max(1, len(words) - 5))
        q = " ".join(words[start:start + rng.randint(4, 6)])
        first["gitmem"] += (mine.recall(q)[:1] == [text])
        first["keywords"] += (base.recall(q)[:1] == [text])
    result["fragment_first"] = {k: f"{v}/{len(picks)}" for k, v in first.items()}
    corrections = []
    for text in sample:
        digits = re.search(r"(?<![\d.])\d+(?![\d.])", text)
        if digits and len(text) < 150 and len(corrections) < 30:
            new_value = str(int(digits.group(0)) + 7)
            corrections.append((text, f"Correction: {text[:digits.start()]}{new_value}{text[digits.end():]}"))
    newest = {"gitmem": 0, "keywords": 0}
    for text, corrected in corrections:
        mine.remember(corrected, type="convention")
        base.remember(corrected)
        q = " ".join(w for w in text.split() if not re.search(r"\d", w))[:80]
        for name, store in (("gitmem", mine), ("keywords", base)):
            got = store.recall(q)
            newest[name] += bool(got) and got[0] == corrected and text not in got
            if name == "gitmem" and not (got and got[0] == corrected and text not in got):
                out.setdefault("real_correction_failures", []).append({"old": text, "new": corrected, "got": got[:3]})
    result["correction_first_and_alone"] = {k: f"{v}/{len(corrections)}" for k, v in newest.items()}
    out["real"] = result
    out["real_noise"] = noise
    service.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embeddings", default="offline", choices=["offline", "none"])
    parser.add_argument("--real-size", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "truth.json"))
    args = parser.parse_args()
    data = json.loads(LABELLED.read_text())
    out: dict[str, Any] = {"python": platform.python_version(), "embeddings": args.embeddings,
                           "questions": sum(len(s["questions"]) for s in data["scenarios"])}
    with tempfile.TemporaryDirectory() as home:
        settings = Settings.from_env({"GITMEM_HOME": home, "GITMEM_EMBEDDINGS": args.embeddings})
        started = time.perf_counter()
        labelled(settings, data, out)
        real(settings, args.real_size, args.seed, out)
        out["seconds"] = round(time.perf_counter() - started, 1)
    print(f"## Truth ({args.embeddings} embeddings), gitmem against a keyword store\n")
    print("| labelled category | gitmem | keyword store |\n| --- | ---: | ---: |")
    for category, row in out["labelled"].items():
        print(f"| {category} | {row['gitmem']} | {row['keywords']} |")
    print("\n| real statements | gitmem | keyword store |\n| --- | ---: | ---: |")
    for category, row in out["real"].items():
        print(f"| {category} | {row['gitmem']} | {row['keywords']} |")
    print("\nFailures (labelled):")
    for f in out["labelled_failures"]:
        print(f"- [{f['category']}] {f['q']} -> {f['got']}")
    print("\nNoise on unanswered real questions:")
    for f in out["real_noise"]:
        print(f"- {f['q']} -> {f['got']}")
    Path(args.out).write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
