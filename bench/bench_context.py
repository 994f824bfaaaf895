"""Does ``context`` hand an agent the rules that fit its files? gitmem's context against what it did before.

End to end through the service: a namespace holds the real statements of the rule files
``tests/data/lexicon_labels.json`` lists (six languages and their frameworks, and team-wide
files), and ``context_hits`` is asked for each of the files of ``bench_lexicon.py`` (``app/models.py``,
``contracts/Token.sol``, ``README.md``, ``src/app.ts`` + ``package.json``, ``src/main.rs``,
``main.go``, ``src/Main.java``), as the session hook and MCP ``context`` ask it. Two namespaces:

* **words**: each statement stored as its text alone;
* **tagged**: each stored with a tag naming the rule file it came from (``rust``,
  ``python-django-best-practices``), as an import of a team's rules folder keeps its provenance.

For each: **applicable**, the share of what ``context`` returns that fits the file (labelled by
reading: a statement that names nothing of its file's language is team-wide; see
``tests/data/lexicon_labels.json``), and **own**, the share of the file's own rules it returns,
at the 20 an agent loads and with no limit. The baseline in the same run is the rule before
issue 21: memories whose ``paths`` cover the file first, then the strongest of all.

    .venv/bin/python bench/bench_context.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_lexicon import DATA, FILES, LABELS, load  # noqa: E402

from gitmem.memories import Candidate  # noqa: E402
from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402

LIMIT = 20


def fits(label: str, own: list[str]) -> bool:
    """Whether a statement labelled ``label`` fits a file whose own labels are ``own``."""
    return label == "generic" or label in own


def measure(service: MemoryService, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    """Applicable and own shares per file, for gitmem's context and the old rule."""
    out: dict[str, Any] = {}
    everything = service.list(namespace, limit=10_000)
    for spec in FILES:
        own = spec.get("own_with_heads", spec["own"]) if spec.get("heads") else spec["own"]
        mine = [labels[h.memory.text] for h in service.context_hits(namespace, spec["paths"], limit=LIMIT,
                                                                       heads=spec.get("heads"))]
        every = [labels[h.memory.text] for h in service.context_hits(namespace, spec["paths"], limit=1000,
                                                                        heads=spec.get("heads"))]
        # The old rule: nothing here has paths, so the strongest of all, which are alike: list order.
        old = [labels[m.text] for m in everything[:LIMIT]]
        owned = sum(1 for label in labels.values() if label in own)
        out[spec["name"]] = {
            "returned": len(mine),
            "applicable": sum(fits(x, own) for x in mine) / max(len(mine), 1),
            "applicable_all": sum(fits(x, own) for x in every) / max(len(every), 1),
            "own_returned_all": sum(x in own for x in every) / owned if owned else None,
            "old_applicable": sum(fits(x, own) for x in old) / max(len(old), 1),
            "wrong": [t for t, x in zip([h.memory.text for h in service.context_hits(
                namespace, spec["paths"], limit=LIMIT, heads=spec.get("heads"))], mine, strict=True)
                if not fits(x, own)][:5],
        }
    return out


def main() -> None:
    rows = load(DATA, LABELS)
    labels = {r["text"]: r["by_reading"] for r in rows}
    results: dict[str, Any] = {"statements": len(rows), "limit": LIMIT}
    with tempfile.TemporaryDirectory() as home:
        service = MemoryService(Settings.from_env({"GITMEM_HOME": home, "GITMEM_EMBEDDINGS": "none"}))
        for namespace, tagged in (("words", False), ("tagged", True)):
            service.init(namespace)
            service.remember_many(namespace, [
                Candidate(r["text"], type="convention", source="import",
                          tags=[r["source"].removesuffix(".mdc")] if tagged else ())
                for r in rows], message="rules", actor="bench")
            results[namespace] = measure(service, namespace, labels)
        service.close()
    print(f"## context for a file: {results['statements']} real rule statements, the first {LIMIT}\n")
    print("Applicable share of what context returns: the first 20 (among equally strong team-wide rules the")
    print("order is by id, so this varies from run to run) / everything it returns.\n")
    print("| file | words: first 20 / all | tagged: first 20 / all | tagged: own rules returned | before (first 20) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for spec in FILES:
        w, t = results["words"][spec["name"]], results["tagged"][spec["name"]]
        own = "-" if t["own_returned_all"] is None else f"{t['own_returned_all']:.0%}"
        print(f"| {spec['name']} | {w['applicable']:.0%} / {w['applicable_all']:.0%} | "
              f"{t['applicable']:.0%} / {t['applicable_all']:.0%} | {own} | {w['old_applicable']:.0%} |")
    for namespace in ("words", "tagged"):
        rows = [v for k, v in results[namespace].items() if isinstance(v, dict)]
        first = sum(v["applicable"] for v in rows) / len(rows)
        every = sum(v["applicable_all"] for v in rows) / len(rows)
        results[f"{namespace}_mean_applicable"] = round(first, 3)
        results[f"{namespace}_mean_applicable_all"] = round(every, 3)
        print(f"\n{namespace}: mean applicable {first:.1%} of the first 20, {every:.1%} of all returned")
    Path(ROOT / "bench" / "results" / "context.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
