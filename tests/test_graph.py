"""The memory graph (gitmem/graph.py) over real repositories, and its self-contained HTML export."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html import unescape
from pathlib import Path

import pytest

from gitmem import concepts
from gitmem.concepts import Memory, new_id
from gitmem.errors import NamespaceNotFound
from gitmem.repo import Change
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.conftest import Run, namespace_of


def plant(svc: MemoryService, text: str, **fields: object) -> Memory:
    """Write a memory straight to main (as an import or a hand push would)."""
    memory_id = new_id()
    title = concepts.title_from(text)
    memory = Memory(id=memory_id, type=str(fields.pop("type", "fact")), text=text, title=title,
                    **fields)  # type: ignore[arg-type]
    memory = memory.replace(path=concepts.file_path(memory.type, f"{concepts.slugify(title)}-{memory_id}"))
    namespace_of(svc).store.transact(lambda head: Change({memory.path: concepts.render(memory)},
                                                         f"remember: {title}", "remember", (memory_id,)))
    return memory


def consolidation_commit(svc: MemoryService, ids: tuple[str, ...], gone: tuple[Memory, ...] = (),
                         action: str = "consolidate") -> None:
    """A commit as consolidation writes one: its trailers name every memory it touched; ``gone`` are deleted."""
    files: dict[str, bytes | None] = {m.path: None for m in gone}
    files.setdefault("README.md", b"memories\n")
    namespace_of(svc).store.transact(lambda head: Change(files, "consolidate: merge", action, ids,
                                                         "consolidation", "gitmem"))


def edges_of(graph: dict[str, object]) -> dict[frozenset[str], dict[str, object]]:
    return {frozenset((e["source"], e["target"])): e for e in graph["edges"]}  # type: ignore[attr-defined, index]


def test_nodes_are_every_memory_with_type_state_and_potency(svc: MemoryService) -> None:
    a = svc.remember("default", "We deploy with Ansible", type="decision", tags=["ops"]).memory
    b = svc.remember("default", "Prefer small pull requests", type="preference").memory
    assert a is not None and b is not None
    svc.forget("default", b.id, actor="sam", reason="no longer true")
    graph = svc.graph("default", similar=False)
    nodes = {n.id: n for n in graph.nodes}
    assert set(nodes) == {a.id, b.id}
    assert (nodes[a.id].type, nodes[a.id].state, nodes[a.id].tags) == ("decision", "active", ("ops",))
    assert nodes[b.id].state == "archived"
    assert 0 < nodes[a.id].potency <= 1 and nodes[a.id].text == "We deploy with Ansible"
    assert graph.head == svc.head("default") and graph.namespace == "default" and not graph.similar


def test_related_and_supersedes_are_edges_and_links_to_missing_memories_are_counted(svc: MemoryService) -> None:
    old = plant(svc, "Deploys were done by hand with rsync", state="archived")
    new = plant(svc, "We deploy with Ansible", supersedes=(old.id,), related=("0000000000",))
    note = plant(svc, "Ansible playbooks live under ops/", related=(new.id,))
    graph = svc.graph("default", similar=False).to_dict()
    edges = edges_of(graph)
    assert edges[frozenset((new.id, old.id))] == {"source": new.id, "target": old.id, "kinds": ["supersedes"]}
    assert edges[frozenset((note.id, new.id))]["kinds"] == ["related"]
    assert len(edges) == 2 and graph["dangling"] == 1


def test_an_edge_that_is_several_kinds_is_one_edge_listing_them_strongest_first(svc: MemoryService) -> None:
    a = plant(svc, "Use pnpm for installs")
    b = plant(svc, "pnpm, not npm", related=(a.id,), supersedes=(a.id,))
    consolidation_commit(svc, (b.id, a.id))
    [edge] = svc.graph("default", similar=False).edges
    assert (edge.source, edge.target, edge.kinds) == (b.id, a.id, ("supersedes", "merged", "related"))


def test_merges_in_history_link_what_survives_and_count_what_was_taken_in(svc: MemoryService) -> None:
    kept = plant(svc, "Run the unit tests before every commit")
    apart = plant(svc, "Lancez les tests unitaires avant chaque commit")
    gone1 = plant(svc, "Run unit tests with pytest before you commit")
    gone2 = plant(svc, "Before a commit, run the unit tests")
    other = plant(svc, "Deploy with docker compose")
    consolidation_commit(svc, (kept.id, gone1.id, gone2.id, apart.id), gone=(gone1, gone2))
    # A later commit naming a gone memory again (a revert, say) neither links nor counts it twice.
    consolidation_commit(svc, (other.id, gone1.id), action="revert")
    graph = svc.graph("default", similar=False)
    nodes = {n.id: n for n in graph.nodes}
    assert set(nodes) == {kept.id, apart.id, other.id}
    assert nodes[kept.id].absorbed == 2 and nodes[apart.id].absorbed == 0
    # An arrow from the memory the merge kept to the one it left apart.
    assert [(e.source, e.target, e.kinds) for e in graph.edges] == [(kept.id, apart.id, ("merged",))]


def test_a_real_consolidation_run_shows_as_the_merged_memory_taking_in_the_others(svc: MemoryService) -> None:
    for text in ("Use descriptive variable and method names.",
                 "Use descriptive variable and method names (e.g., IsUserSignedIn)."):
        plant(svc, text, source="agent", type="convention")
    result = svc.consolidate("default")
    assert result.review is not None
    svc.reviews.approve("default", result.review, actor="alice")
    graph = svc.graph("default", similar=False)
    [merged] = graph.nodes
    assert merged.absorbed == 2
    # Its `supersedes` names the two memories it replaced, gone by design: history, not broken links.
    assert graph.dangling == 0


def test_semantic_neighbours_are_edges_when_the_embeddings_port_is_on(svc: MemoryService) -> None:
    a = plant(svc, "Run the unit tests before every commit.")
    b = plant(svc, "Before every commit, run the unit tests.")
    c = plant(svc, "The office coffee machine is on the third floor.")
    graph = svc.graph("default")
    assert graph.similar
    edges = {frozenset((e.source, e.target)): e for e in graph.edges}
    near = edges[frozenset((a.id, b.id))]
    assert near.kinds == ("similar",) and near.cosine is not None and near.cosine > 0.45
    assert all(c.id not in pair for pair in edges)
    assert not svc.graph("default", similar=False).edges


def test_a_graph_may_leave_neighbours_out_rather_than_embed_many_texts(svc: MemoryService) -> None:
    a = plant(svc, "Run the unit tests before every commit.")
    b = plant(svc, "Before every commit, run the unit tests.")
    plant(svc, "The office coffee machine is on the third floor.")
    graph = svc.graph("default", embed_at_most=2)
    assert (graph.similar, graph.unembedded, graph.edges) == (False, 3, ())
    assert svc.vectors("default")["embedded"] == 3
    graph = svc.graph("default", embed_at_most=2)
    assert graph.similar and graph.unembedded == 0
    assert [frozenset((e.source, e.target)) for e in graph.edges] == [frozenset((a.id, b.id))]


def test_without_the_embeddings_port_there_are_no_similar_edges(tmp_path: Path) -> None:
    svc = MemoryService(Settings(home=tmp_path / "home", embeddings="none"))
    try:
        svc.init("default")
        plant(svc, "Run the unit tests before every commit.")
        plant(svc, "Before every commit, run the unit tests.")
        graph = svc.graph("default")
        assert not graph.similar and not graph.edges
    finally:
        svc.close()


def test_reading_the_graph_writes_nothing(svc: MemoryService, fsck: Callable[[str], None]) -> None:
    plant(svc, "Run the unit tests before every commit.")
    head = svc.head("default")
    svc.graph("default")
    svc.export("default", "graph")
    assert svc.head("default") == head
    fsck("default")


def test_an_unknown_namespace_is_not_found(svc: MemoryService) -> None:
    with pytest.raises(NamespaceNotFound):
        svc.graph("nope")
    with pytest.raises(NamespaceNotFound):
        svc.export("nope", "graph")


def test_the_json_for_the_page_cannot_close_its_script_element(svc: MemoryService) -> None:
    hostile = "</script><script>window.pwned=1</script><!-- & \u2028 end"
    plant(svc, hostile, tags=("</script>",))
    text = svc.graph("default", similar=False).script_json()
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text)["nodes"][0]["text"] == hostile


def test_the_export_is_one_file_that_loads_nothing(svc: MemoryService) -> None:
    plant(svc, "We deploy with Ansible </script> <img src=x>")
    html = svc.export("default", "graph")
    assert html.startswith("<!doctype html>")
    # Everything is inline: no element refers to anything outside the file.
    assert not re.search(r"<(script|img|link|iframe)[^>]*\s(src|href)=", html)
    assert "http://" not in re.sub(r"<script[^>]*>.*?</script>", "", html, flags=re.S)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    policy = unescape(csp.group(1))
    assert policy.startswith("default-src 'none'; script-src 'sha256-") and "connect-src" not in policy
    assert html.count("<script") == 3 and "window.GitmemGraphLibs" in html
    assert "sigma 3.0.3 (MIT)" in html  # the libraries' licences travel with them
    data = re.search(r'<script type="application/json" id="graph-data">(.*?)</script>', html, re.S)
    assert data is not None and json.loads(data.group(1))["nodes"][0]["text"].startswith("We deploy")


def test_the_vendored_libraries_ship_with_their_licences() -> None:
    vendor = Path(__file__).resolve().parent.parent / "templates" / "web" / "static" / "vendor"
    notices = (vendor / "graph-libs.LICENSES.txt").read_text(encoding="utf-8")
    banner = (vendor / "graph-libs.min.js").read_text(encoding="utf-8").splitlines()[0]
    bundled = re.findall(r"([@\w./-]+) (\d+\.\d+\.\d+)", banner)
    assert ("sigma", "3.0.3") in bundled and ("graphology-layout-forceatlas2", "0.10.1") in bundled
    for name, version in bundled:
        assert f"{name} {version} (MIT)" in notices
    lock = json.loads((vendor.parents[3] / "tools" / "graph-bundle" / "package-lock.json").read_text())
    for name, version in bundled:
        assert lock["packages"][f"node_modules/{name}"]["version"] == version


def test_cli_exports_the_graph_to_a_file(gitmem: Run, tmp_path: Path) -> None:
    gitmem("remember", "We deploy with Ansible", "--type", "decision")
    out = tmp_path / "graph.html"
    done = gitmem("export", "--format", "graph", "-o", str(out))
    assert done.stdout.strip() == f"wrote {out}"
    html = out.read_text(encoding="utf-8")
    assert "We deploy with Ansible" in html and "Memory graph of default" in html
    bad = gitmem("export", "--format", "graph", "-o", str(tmp_path / "missing" / "graph.html"), ok=False)
    assert bad.returncode == 2 and "cannot write" in bad.stderr



def test_supersede_and_merge_edges_point_from_the_newer_memory(svc: MemoryService) -> None:
    old = plant(svc, "Deploys happen on Tuesdays")
    new = plant(svc, "Deploys happen on Tuesdays and Thursdays", supersedes=(old.id,))
    first, second = plant(svc, "Lint with ruff"), plant(svc, "Lintez avec ruff")
    made, beside = max(first, second, key=lambda m: m.id), min(first, second, key=lambda m: m.id)
    consolidation_commit(svc, (made.id, beside.id))  # the commit names what it made first
    edges = edges_of(svc.graph("default", similar=False).to_dict())
    assert (edges[frozenset((new.id, old.id))]["source"], edges[frozenset((new.id, old.id))]["target"]) == (
        new.id, old.id)
    # From what the merge made, though its id sorts after the other's.
    assert (edges[frozenset((made.id, beside.id))]["source"], edges[frozenset((made.id, beside.id))]["target"]) == (
        made.id, beside.id)


def test_topics_follow_meaning_and_links_not_types() -> None:
    from gitmem.graph import Edge, topics

    ids = ["a1", "a2", "a3", "b1", "b2", "c1"]
    edges = [Edge("a1", "a2", ("similar",), 0.8), Edge("a2", "a3", ("similar",), 0.7),
             Edge("b1", "b2", ("related",)), Edge("a3", "b1", ("similar",), 0.46)]
    topic = topics(ids, edges)
    assert topic["a1"] == topic["a2"] == topic["a3"] == 0  # the largest group is topic 0
    assert topic["b1"] == topic["b2"] != topic["a1"]  # one weak neighbour does not pull a group over
    assert topic["c1"] not in {topic["a1"], topic["b1"]}
    assert topics(ids, edges) == topic  # the same every time


def test_the_graph_groups_memories_by_meaning_whatever_their_type(svc: MemoryService) -> None:
    tests = [plant(svc, "Run the unit tests before every commit.", type="convention"),
             plant(svc, "Before every commit, run the unit tests.", type="fact"),
             plant(svc, "Unit tests must pass before you commit anything.", type="decision")]
    coffee = [plant(svc, "The office coffee machine is on the third floor.", type="convention"),
              plant(svc, "Coffee is on the third floor of the office.", type="fact")]
    nodes = {n.id: n for n in svc.graph("default").nodes}
    assert len({nodes[m.id].topic for m in tests}) == 1 and len({nodes[m.id].topic for m in coffee}) == 1
    assert nodes[tests[0].id].topic != nodes[coffee[0].id].topic
    page = svc.graph("default").script_json()
    assert '"topic":' in page


def test_after_an_approved_merge_no_link_points_at_a_memory_it_took_away(svc: MemoryService,
                                                                          fsck: Callable[[str], None]) -> None:
    texts = ("Use descriptive variable and method names.",
             "Use descriptive variable and method names (e.g., IsUserSignedIn).")
    merged_away = [plant(svc, text, source="agent", type="convention") for text in texts]
    linking = plant(svc, "Name booleans as questions: isReady, hasItems", type="convention",
                    related=(merged_away[0].id, merged_away[1].id))
    result = svc.consolidate("default")
    assert result.review is not None
    svc.reviews.approve("default", result.review, actor="alice")
    graph = svc.graph("default", similar=False)
    present = {n.id for n in graph.nodes}
    [made] = [n.id for n in graph.nodes if n.id != linking.id]
    assert svc.show("default", linking.id).related == (made,)  # both links now name what they became
    assert all(link in present for m in svc.list("default") for link in m.related)
    assert edges_of(graph.to_dict())[frozenset((linking.id, made))]["kinds"] == ["related"]
    log = svc.log("default", limit=3)
    assert log[0].action == "relink" and log[0].memory_ids == (linking.id,)
    fsck("default")


def test_a_link_to_what_became_the_linking_memory_itself_is_dropped(svc: MemoryService) -> None:
    agents = [plant(svc, "Run unit tests before you commit", source="agent", type="convention"),
              plant(svc, "Always run the unit tests before a commit, and lint too", source="agent",
                    type="convention")]
    user = plant(svc, "Run the unit tests before every commit", source="user", type="convention",
                 related=(agents[0].id,))
    result = svc.consolidate("default")
    assert result.review is not None
    assert "covered by the user's" in svc.reviews.diff("default", result.review)[0].summary
    svc.reviews.approve("default", result.review, actor="alice")
    assert svc.show("default", user.id).related == ()  # it became the user's statement: no link to itself
