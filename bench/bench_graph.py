"""Benchmark the memory graph page in Chromium: 5,000 memories against a 500-memory baseline, in one run.

Two namespaces are built from the real statements of ``tests/data/cursorrules.jsonl``
(``--data``): one of ``--large`` memories (default 5,000) and one of ``--small`` (default 500),
each spread over the ten types with tags, potencies, archived and pending ones, ``related`` and
``supersedes`` links, consolidation commits that name memories merged together, and semantic
neighbours from the offline embeddings port.

Measured, per size, in turns over ``--rounds`` rounds so a change in machine load hits both:

* **Graph read**: ``MemoryService.graph`` (the one core operation behind the page and the export),
  the first time (embeds every active memory's text) and again (vectors and pairs cached).
* **First paint**: from navigation start (after a blank page, so unloading the previous graph
  does not count) to the painted frame sigma's constructor drew (two animation frames after it),
  for the web page (served by the app over real HTTP, with a reader
  key) and for the exported file opened from disk. The dashboard page's first contentful paint
  is given beside them as a page with no graph.
* **Frame time while panning and zooming**: the layout is stopped, then the mouse drags the view
  in ``--frames``/2 steps and the wheel zooms in and out ``--frames``/6 times, as a hand would
  (so sigma's own settings for moving views apply); the interval between animation frames and
  sigma's render time (``beforeRender`` to ``afterRender``) are recorded. Also the frame interval
  while ForceAtlas2 still runs in its worker, before it is stopped.

Chromium draws WebGL here with SwiftShader, on the CPU: a real GPU makes every absolute figure
smaller; the ratios of 5,000 to 500 memories are what this run compares. Prints a Markdown table
and writes JSON (default ``bench/results/graph.json``). Run from the repository root::

    .venv/bin/python bench/bench_graph.py                         # full run (a few minutes)
    .venv/bin/python bench/bench_graph.py --large 2000 --rounds 1 --frames 60
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from gitmem import concepts  # noqa: E402
from gitmem.repo import Change, KeyStore, Namespaces  # noqa: E402
from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402
from gitmem.web import create_app  # noqa: E402
from tests.web.conftest import serving  # noqa: E402

DATA = ROOT / "tests" / "data" / "cursorrules.jsonl"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TAGS = ("api", "web", "ci", "tests", "deploy", "docs", "security", "db", "cache", "ui", "auth", "perf", "infra",
        "python", "typescript", "react", "go", "rust", "docker", "k8s", "git", "review", "release", "logging",
        "metrics", "errors", "config", "style", "naming", "build")
WEBGL_ARGS = ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
              "--disable-background-networking", "--disable-quic", "--no-first-run",
              "--disable-component-update", "--disable-sync"]

# Records the interval between animation frames, and sigma's render time, until stopped.
RECORD = """() => {
  const s = gitmemGraph.sigma, rec = { intervals: [], renders: [], on: true };
  let started = 0, last = 0;
  rec.before = () => { started = performance.now(); };
  rec.after = () => { if (started) rec.renders.push(performance.now() - started); };
  s.on("beforeRender", rec.before); s.on("afterRender", rec.after);
  function step(now) { if (last) rec.intervals.push(now - last); last = now; if (rec.on) requestAnimationFrame(step); }
  requestAnimationFrame(step);
  window.__rec = rec;
}"""
STOP = """() => {
  const s = gitmemGraph.sigma, rec = window.__rec;
  rec.on = false; s.off("beforeRender", rec.before); s.off("afterRender", rec.after);
  return { intervals: rec.intervals, renders: rec.renders };
}"""

# Frame intervals while the layout worker still moves the nodes.
LAYOUT_FRAMES = """async (frames) => {
  const intervals = [];
  await new Promise((resolve) => {
    let i = 0, last = 0;
    function step(now) { if (last) intervals.push(now - last); last = now;
      if (++i <= frames) requestAnimationFrame(step); else resolve(); }
    requestAnimationFrame(step);
  });
  return intervals;
}"""


def load_statements(path: Path) -> list[str]:
    """The statements of the data set, in file order; exit 2 with a clear message when it is missing."""
    if not path.is_file():
        print(f"{path} not found; pass --data PATH (a JSON Lines file with a \"text\" per line)", file=sys.stderr)
        raise SystemExit(2)
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle if line.strip()]


def memories_for(texts: list[str], count: int, seed: int) -> list[concepts.Memory]:
    """``count`` memories as a team's would look: typed, tagged, of mixed potency, some archived, linked."""
    rng = random.Random(seed)
    at = concepts.now()
    out: list[concepts.Memory] = []
    for i in range(count):
        text = texts[i % len(texts)] if i < len(texts) else f"{texts[i % len(texts)]} (variant {i // len(texts)})"
        title = concepts.title_from(text)
        memory_type = concepts.TYPES[i % len(concepts.TYPES)]
        memory_id = f"{i:010x}"
        roll = rng.random()
        state = "archived" if roll < 0.08 else "pending" if roll < 0.11 else "active"
        related = tuple(sorted({f"{rng.randrange(max(0, i - 40), i):010x}" for _ in range(rng.choice((1, 1, 2)))}))\
            if i and rng.random() < 0.35 else ()
        supersedes = (f"{rng.randrange(max(0, i - 40), i):010x}",) if i and rng.random() < 0.03 else ()
        out.append(concepts.Memory(
            id=memory_id, type=memory_type, text=text, title=title, source="import", state=state,
            tags=tuple(sorted(rng.sample(TAGS, rng.choice((1, 2, 2, 3))))), potency=round(rng.uniform(0.15, 1.0), 3),
            created=at - timedelta(days=rng.uniform(0, 30)), updated=at, related=related, supersedes=supersedes,
            path=concepts.file_path(memory_type, f"{concepts.slugify(title)}-{memory_id}")))
    return out


def populate(svc: MemoryService, namespace: str, memories: list[concepts.Memory], seed: int) -> None:
    """One bulk commit of every memory, then a consolidation commit per ~50 memories naming 2-3 merged together."""
    svc.init(namespace)
    namespaces = Namespaces(svc.settings)  # bulk loading goes through the repository layer
    ns = namespaces.open(namespace)
    files: dict[str, bytes | None] = {m.path: concepts.render(m) for m in memories}
    ns.store.transact(lambda head: Change(files, f"import {len(files)} memories", "import", source="import",
                                          actor="bench"))
    rng = random.Random(seed + 1)
    for n in range(len(memories) // 50):
        start = rng.randrange(0, len(memories) - 30)
        ids = tuple(m.id for m in rng.sample(memories[start:start + 30], rng.choice((2, 3))))
        note = f"merge note {n}\n".encode()
        ns.store.transact(lambda head, ids=ids, note=note: Change(
            {"NOTES.md": note}, "consolidate: merge", "consolidate", ids, "consolidation", "gitmem"))
    namespaces.close()


def timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * pct / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def measure_page(page: Any, url: str, frames: int) -> dict[str, Any]:
    """First paint, frames while the layout runs, then frames while panning and zooming."""
    # Leave the previous graph first: unloading it would otherwise count in this page's timing.
    page.goto("about:blank")
    page.wait_for_timeout(1000)
    page.goto(url)
    page.wait_for_selector("#graph-app[data-ready='1']", timeout=120_000)
    first_paint = page.evaluate("gitmemGraph.firstPaint()")
    layout = page.evaluate(LAYOUT_FRAMES, min(frames, 30))
    page.evaluate("gitmemGraph.stopLayout()")
    page.wait_for_timeout(300)
    box = page.locator("#graph-canvas").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.evaluate(RECORD)
    # Pan: drag the view in small steps, as a hand would; then zoom in and out with the wheel.
    page.mouse.down()
    page.mouse.move(x - box["width"] / 4, y - box["height"] / 5, steps=frames // 2)
    page.mouse.up()
    for i in range(frames // 6):
        page.mouse.wheel(0, -120 if i < frames // 12 else 120)
        page.wait_for_timeout(40)
    moved = page.evaluate(STOP)
    return {"first_paint_ms": round(first_paint, 1),
            "layout_frame_p50_ms": round(percentile(layout, 50), 2),
            "frame_p50_ms": round(percentile(moved["intervals"], 50), 2),
            "frame_p95_ms": round(percentile(moved["intervals"], 95), 2),
            "render_p50_ms": round(percentile(moved["renders"], 50), 2),
            "render_p95_ms": round(percentile(moved["renders"], 95), 2),
            "frames": len(moved["intervals"])}


def fcp(page: Any, url: str) -> float:
    """First contentful paint of a page with no graph, from navigation start."""
    page.goto("about:blank")
    page.wait_for_timeout(1000)
    page.goto(url)
    page.wait_for_load_state("load")
    value = page.evaluate("""() => new Promise((resolve) => {
        const found = performance.getEntriesByName('first-contentful-paint');
        if (found.length) return resolve(found[0].startTime);
        new PerformanceObserver((list) => resolve(list.getEntries()[0].startTime))
            .observe({ type: 'paint', buffered: true });
    })""")
    return float(value)


def median_of(rows: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(r[key] for r in rows), 2)


def markdown(results: dict[str, Any]) -> str:
    large, small = results["sizes"]["large"], results["sizes"]["small"]
    n_large, n_small = large["memories"], small["memories"]
    lines = [f"| measure | {n_large:,} memories | {n_small:,} memories | ratio |", "| --- | ---: | ---: | ---: |"]

    def row(label: str, a: float, b: float, unit: str) -> None:
        ratio = a / b if b else float("nan")
        lines.append(f"| {label} | {a:,.1f} {unit} | {b:,.1f} {unit} | {ratio:.2f}x |")

    lines.append(f"| nodes / links drawn | {large['nodes']:,} / {large['edges']:,} | {small['nodes']:,} / "
                 f"{small['edges']:,} | {large['nodes'] / small['nodes']:.1f}x / "
                 f"{large['edges'] / small['edges']:.1f}x |")
    row("page size (HTML with inline data)", large["page_kb"], small["page_kb"], "KiB")
    row("graph read, first (embeds every text)", large["read_first_s"] * 1000, small["read_first_s"] * 1000, "ms")
    row("graph read, again (cached vectors)", large["read_again_ms"], small["read_again_ms"], "ms")
    for where in ("web", "file"):
        label = "web page" if where == "web" else "exported file"
        row(f"{label}: first paint", large[where]["first_paint_ms"], small[where]["first_paint_ms"], "ms")
    web_l, web_s = large["web"], small["web"]
    row("frame interval while the layout runs, p50", web_l["layout_frame_p50_ms"], web_s["layout_frame_p50_ms"], "ms")
    row("frame interval panning/zooming, p50", web_l["frame_p50_ms"], web_s["frame_p50_ms"], "ms")
    row("frame interval panning/zooming, p95", web_l["frame_p95_ms"], web_s["frame_p95_ms"], "ms")
    row("sigma render time per frame, p50", web_l["render_p50_ms"], web_s["render_p50_ms"], "ms")
    row("sigma render time per frame, p95", web_l["render_p95_ms"], web_s["render_p95_ms"], "ms")
    lines.append(f"| dashboard (no graph): first contentful paint | {results['dashboard_fcp_ms']:,.1f} ms | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--large", type=int, default=5000)
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "graph.json")
    args = parser.parse_args(argv)
    texts = load_statements(args.data)
    if not 1 <= args.small <= args.large:
        parser.error("--small must be at least 1 and at most --large")
    if not Path(CHROMIUM).exists():
        parser.error(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")

    from playwright.sync_api import sync_playwright  # a dev dependency, loaded only to run

    sizes = {"large": args.large, "small": args.small}
    with tempfile.TemporaryDirectory(prefix="bench-graph-") as tmp:
        home = Path(tmp) / "home"
        svc = MemoryService(Settings(home=home))
        reader = KeyStore(home).create("*", "reader", name="bench")[0]
        results: dict[str, Any] = {"sizes": {}, "rounds": args.rounds, "frames": args.frames,
                                   "load_average_before": [round(x, 2) for x in os.getloadavg()]}
        for key, count in sizes.items():
            populate(svc, key, memories_for(texts, count, args.seed), args.seed)
            first, graph = timed(lambda key=key: svc.graph(key))
            again = [timed(lambda key=key: svc.graph(key))[0] for _ in range(3)]
            export = Path(tmp) / f"{key}.html"
            export.write_text(svc.export(key, "graph"), encoding="utf-8")
            results["sizes"][key] = {
                "memories": count, "nodes": len(graph.nodes), "edges": len(graph.edges),
                "edge_kinds": {k: sum(1 for e in graph.edges if e.kinds[0] == k) for k in
                               ("supersedes", "merged", "related", "similar")},
                "read_first_s": round(first, 3), "read_again_ms": round(statistics.median(again) * 1000, 1),
                "page_kb": round(export.stat().st_size / 1024, 1), "web_rounds": [], "file_rounds": []}
            print(f"{key}: {count} memories, {len(graph.edges)} links, first read {first:.2f} s", file=sys.stderr)
        with serving(create_app(service=svc)) as base, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=WEBGL_ARGS)
            context = browser.new_context(viewport={"width": 1400, "height": 900}, base_url=base)
            page = context.new_page()
            page.goto("/login")
            page.fill("input[name=key]", reader)
            page.click("button[type=submit]")
            page.wait_for_load_state("load")
            dashboards = []
            for r in range(args.rounds):
                for key in (("large", "small") if r % 2 == 0 else ("small", "large")):
                    row = results["sizes"][key]
                    row["web_rounds"].append(measure_page(page, f"{base}/ns/{key}/graph", args.frames))
                    row["file_rounds"].append(measure_page(page, (Path(tmp) / f"{key}.html").as_uri(), args.frames))
                    print(f"round {r + 1} {key}: {row['web_rounds'][-1]}", file=sys.stderr)
                dashboards.append(fcp(page, f"{base}/ns/small/"))
            browser.close()
        svc.close()
    for row in results["sizes"].values():
        for where in ("web", "file"):
            rounds = row[f"{where}_rounds"]
            row[where] = {k: median_of(rounds, k) for k in rounds[0]}
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    results["dashboard_fcp_ms"] = round(statistics.median(dashboards), 1)
    results["chromium"] = "Debian chromium, headless, WebGL by SwiftShader (CPU)"
    results["machine"] = {"python": platform.python_version(), "platform": platform.platform()}
    table = markdown(results)
    results["table"] = table
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
