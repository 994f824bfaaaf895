"""The benchmark scripts on small inputs: they run, and refuse bad input clearly (no speed measured)."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def script(name: str) -> ModuleType:
    """Import ``bench/<name>.py`` (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """200 statements in the data set's form, with near-duplicates as real piles have."""
    tools, places = ("pnpm", "ruff", "pytest", "docker", "redis"), ("the api", "the web app", "ci", "scripts")
    lines = [json.dumps({"text": f"Use {tool} for {place}, rule {i % 10}"})
             for i, (tool, place) in enumerate((t, p) for t in tools for p in places for _ in range(10))]
    path = tmp_path / "statements.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_bench_consolidate_runs_on_fewer_than_5000_statements(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = script("bench_consolidate")
    bench.main(["--data", str(data), "--size", "600", "--json"])
    figures = json.loads(capsys.readouterr().out)
    assert figures["real_statements"] == 200
    assert figures["sample_5000"]["statements"] == 600 and figures["sample_5000"]["same_as_all_pairs"]
    assert figures["large"]["statements"] == 600 and figures["real"]["same_as_all_pairs"]


def test_bench_semantic_runs_on_a_small_set(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "semantic.json"
    script("bench_semantic").main(["--data", str(data), "--sizes", "120", "--queries", "10", "--embed", "40",
                                   "--out", str(out)])
    figures = json.loads(out.read_text(encoding="utf-8"))
    both = figures["quality"]["measures"]["both"]
    assert both["cross_topic_together"] == 0 and both["same_topic_share"] > figures["quality"]["measures"]["words"][
        "same_topic_share"]
    row = figures["sizes"][0]
    assert row["memories"] == 120 and row["recall_semantic_top1"] > 0.5
    assert "| measure |" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["bench_api", "bench_core", "bench_consolidate", "bench_semantic",
                                  "bench_mcp", "bench_push", "bench_graph", "bench_lexicon", "bench_cli",
                                  "bench_purge", "merge_pairs_draw"])
def test_a_missing_data_file_is_a_clear_error(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere.jsonl"
    with pytest.raises(SystemExit) as exited:
        script(name).main(["--data", str(missing)])
    assert exited.value.code == 2
    assert f"{missing} not found; pass --data PATH" in capsys.readouterr().err


def test_bench_api_writes_statements_of_the_data_set(data: Path) -> None:
    bench = script("bench_api")
    texts = bench.load_statements(data)
    made = bench.statements(texts, 250, "api")
    assert len(set(made)) == 250
    assert made[0] == f"{texts[0]} [api 0]" and made[200] == f"{texts[0]} [api 200]"


def test_bench_mcp_recalls_the_same_memories_both_ways(data: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mcp.json"
    script("bench_mcp").main(["--data", str(data), "--memories", "60", "--queries", "12", "--warmup", "2",
                              "--cold", "2", "--workers", "1", "--json", str(out)])
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert (figures["memories"], figures["queries"]) == (60, 12)
    assert figures["same_results"] is True
    assert figures["rest"]["calls"] == figures["mcp"]["calls"] == 12 and figures["mcp_fresh_client"]["calls"] == 2
    assert "| MCP `recall`, one client kept open |" in capsys.readouterr().out


def test_bench_graph_builds_a_namespace_with_every_kind_of_link(data: Path, tmp_path: Path) -> None:
    from gitmem.service import MemoryService
    from gitmem.settings import Settings

    bench = script("bench_graph")
    memories = bench.memories_for(bench.load_statements(data), 300, seed=1)
    assert len({m.id for m in memories}) == 300 and {m.state for m in memories} == {"active", "pending", "archived"}
    svc = MemoryService(Settings(home=tmp_path / "home", embeddings="none"))
    try:
        bench.populate(svc, "g", memories, seed=1)
        graph = svc.graph("g")
        kinds = {kind for edge in graph.edges for kind in edge.kinds}
        assert len(graph.nodes) == 300 and kinds == {"related", "supersedes", "merged"}
    finally:
        svc.close()


def test_bench_ingest_counts_the_calls_of_both_bufferings(tmp_path: Path) -> None:
    bench = script("bench_ingest")
    calls = bench.bench_calls(tmp_path, 1500)
    assert calls["per_message"]["calls"] == calls["messages"]
    assert 1 <= calls["double_buffer"]["calls"] < calls["per_message"]["calls"]
    offline = bench.bench_offline()
    assert offline["conversations"] >= 10 and 0 < offline["recall"] <= 1


def test_bench_push_times_both_servers(data: Path, tmp_path: Path) -> None:
    bench = script("bench_push")
    texts = [json.loads(line)["text"] for line in data.read_text(encoding="utf-8").splitlines()]
    figures = bench.run(texts, 2, 3, tmp_path)
    assert set(figures["median_ratio_to_floor"]) == {"gitmem_main", "gitmem_review"}
    assert all(v > 0 for v in figures["median_seconds"].values())


def test_bench_lexicon_scores_the_labelled_rule_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "lexicon.json"
    assert script("bench_lexicon").main(["--out", str(out), "--show", "2"]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["statements"] == 600 and len(result["paths_only"]) == 7
    for run in ("paths_only", "with_heads", "paths_only_text_and_source_name"):
        for row in result[run]:
            # Filtering never makes a file's share of fitting rules worse than taking everything.
            assert row["by_reading"]["applicable"] >= row["by_reading"]["baseline_applicable"], (run, row["file"])
    assert result["speed"]["statements"] == 5064
    assert "| file | heads |" in capsys.readouterr().out


def test_bench_lexicon_refuses_data_without_its_rule_files(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        script("bench_lexicon").main(["--data", str(data)])
    assert exited.value.code == 2
    assert "holds none of the rule files" in capsys.readouterr().err


def test_bench_secretscan_counts_the_formats_and_the_false_alarms(data: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    figures = script("bench_secretscan").main(["--data", str(data), "--rounds", "1", "--json"])
    assert json.loads(capsys.readouterr().out)["caught"] == figures["caught"] == figures["formats"] == 49
    assert figures["statements"] == 200 and figures["false_alarms"] == 0 and figures["missed"] == []
    with pytest.raises(SystemExit):
        script("bench_secretscan").main(["--data", str(data), "--rounds", "0"])


def test_bench_cli_times_each_row_against_python(data: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli.json"
    script("bench_cli").main(["--data", str(data), "--memories", "30", "--runs", "1", "--serve-runs", "0",
                              "--only", "version,remember,path,recall,first_recall,mcp_recall,hook",
                              "--out", str(out)])
    figures = json.loads(out.read_text(encoding="utf-8"))
    rows = figures["rows"]
    assert set(rows) == {"python", "git", "version", "remember", "path", "recall", "first_recall", "mcp_recall",
                         "hook"}
    assert rows["python"]["ratio"] == 1.0 and all(row["runs"] == 1 and row["wall_ms"] > 0 for row in rows.values())
    assert 0 < rows["mcp_recall"]["initialize_ms"] <= rows["mcp_recall"]["wall_ms"]
    assert rows["recall"]["goal_ms"] == 800 and isinstance(rows["recall"]["goal_met"], bool)
    assert "| cold `gitmem recall QUERY` (prepared encoder) |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        script("bench_cli").main(["--data", str(data), "--only", "nothing", "--out", str(out)])
def test_bench_push_refusals_times_both_servers_and_reads_the_workers_memory(tmp_path: Path) -> None:
    bench = script("bench_push_refusals")
    figures = bench.run(1, tmp_path)
    assert figures["bomb"]["gitmem_refused_s"] > 0 and figures["bomb"]["ratio"] > 0
    large = figures["large_files"]
    assert large["mib_each"] == 1 and large["worker_peak_rss_mb_after"] >= large["worker_peak_rss_mb_before"] > 10


def test_bench_push_refusals_refuses_a_size_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        script("bench_push_refusals").main(["--mb", "0"])
    assert exited.value.code == 2 and "--mb must be at least 1" in capsys.readouterr().err


def test_bench_purge_times_gitmem_and_git_on_the_same_history(data: Path, tmp_path: Path) -> None:
    bench = script("bench_purge")
    texts = [json.loads(line)["text"] for line in data.read_text(encoding="utf-8").splitlines()]
    figures = bench.run(texts, 30, 1, tmp_path)
    assert figures["commits"] >= 30 and figures["median_ratio_to_floor"] > 0
    assert all(v > 0 for v in figures["median_seconds"].values())


def test_merge_pairs_draw_draws_the_same_pairs_again_and_scores_labels(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    # Paraphrases from two rule files: the gate merges some, the planner clusters others, and
    # near-identical statements of different files are there to be drawn as duplicates.
    tools, places = ("pnpm", "ruff", "pytest", "docker", "redis"), ("the api", "the web app", "ci", "scripts")
    forms = ("Use {} for {}", "Always use {} for {}", "We use {} for {} in every project", "Prefer {} for {}")
    sourced = tmp_path / "sourced.jsonl"
    sourced.write_text("".join(json.dumps({"source": f"f{n % 2}.mdc", "text": form.format(tool, place)}) + "\n"
                               for n, (tool, place, form) in enumerate((t, p, f) for t in tools for p in places
                                                                       for f in forms)), encoding="utf-8")
    draw = script("merge_pairs_draw")
    args = ["--data", str(sourced), "--size", "40", "--total", "12", "--nearest", "4", "--duplicates", "3"]
    first, again = tmp_path / "first.json", tmp_path / "again.json"
    draw.main([*args, "--out", str(first)])
    draw.main([*args, "--out", str(again)])
    pairs = json.loads(first.read_text(encoding="utf-8"))
    assert pairs == json.loads(again.read_text(encoding="utf-8"))
    kinds = [p["from"].split(":")[0] for p in pairs]
    assert len(pairs) >= 12 + 3 and kinds.count("nearest") >= 4 and kinds.count("duplicate") == 3
    assert len({draw.key(p["a"], p["b"]) for p in pairs}) == len(pairs)
    assert {"gate", "planner"} <= set(kinds)
    for pair in pairs:
        if pair["from"].startswith("duplicate"):
            assert pair["from"].endswith(("f0.mdc / f1.mdc", "f1.mdc / f0.mdc")), pair
    merged = [p for p in pairs if p["from"].startswith(("gate", "planner"))]
    assert merged, "the planner finds nothing to score on this data"
    # Label the first merge pair "different" and the next "a_contains_b" the other way round.
    labels = [{**merged[0], "label": "different", "why": "test"}]
    if len(merged) > 1:
        labels.append({**merged[1], "a": merged[1]["b"], "b": merged[1]["a"], "label": "b_contains_a", "why": "t"})
    labelled = tmp_path / "labels.json"
    labelled.write_text(json.dumps({"pairs": labels}), encoding="utf-8")
    capsys.readouterr()
    draw.main([*args, "--labels", str(labelled)])
    figures = json.loads(capsys.readouterr().out)
    counted = Counter[str]()
    for kind in ("gate", "planner"):
        counted.update(figures[kind]["labels"])
        assert figures[kind]["pairs"] == sum(figures[kind]["labels"].values())
    assert counted["different"] == 1 and counted["a_contains_b"] == min(1, len(merged) - 1)
    assert counted["unlabelled"] == len(merged) - len(labels)
    kind = merged[0]["from"].split(":")[0]
    assert figures[kind]["different"][0]["a"] == merged[0]["a"]


def test_the_labelled_merge_pairs_are_real_statements_labelled_once() -> None:
    data = Path(__file__).resolve().parent / "data"
    statements = {json.loads(line)["text"] for line in (data / "cursorrules.jsonl").read_text(
        encoding="utf-8").splitlines() if line.strip()}
    pairs = json.loads((data / "merge_pairs.json").read_text(encoding="utf-8"))["pairs"]
    assert len(pairs) >= 300
    seen: set[frozenset[str]] = set()
    for pair in pairs:
        assert set(pair) == {"a", "b", "label", "why", "from"}, pair
        assert pair["a"] in statements and pair["b"] in statements and pair["a"] != pair["b"], pair
        assert pair["label"] in ("same", "a_contains_b", "b_contains_a", "different"), pair
        assert pair["why"].strip() and pair["from"].split(":")[0] in ("gate", "planner", "nearest", "duplicate")
        assert frozenset((pair["a"], pair["b"])) not in seen, pair
        seen.add(frozenset((pair["a"], pair["b"])))
