"""The memory graph: memories as nodes, and the links between them as edges.

One operation, :meth:`Graphs.graph`, reads a namespace into a :class:`Graph`; the web page
(``/ns/<ns>/graph``) and ``gitmem export --format graph`` both show it, through
:meth:`Graphs.page` (one self-contained HTML file) or the web app's own template around the
same data.

Edges come from four places, each its own kind:

* ``related``: a memory's ``related`` field (consolidation links statements of one rule);
* ``supersedes``: a memory's ``supersedes`` field, pointing from the newer to the older;
* ``merged``: memories that one consolidation commit (``Action: consolidate`` or ``merge``) named
  together and that still exist, pointing from the one the merge made or kept to the others;
  memories a merge took away are counted on the one they went into (``absorbed``);
* ``similar``: semantic neighbours from the embeddings port (:meth:`gitmem.semantic.Semantics.neighbours`,
  with consolidation's threshold, so both share one cache), when the port is on: each active
  memory's :data:`SIMILAR_SHOWN` nearest.

A ``related`` link to a memory that no longer exists is left out and counted (``dangling``;
approving a merge points such links at what it made, so it is rare). A ``supersedes`` link to
a memory a merge took away is history, not a broken link: it is left out, and not counted.

Each memory also gets a ``topic``: memories that the links tie together, by meaning first (the
semantic neighbours), share one (:func:`topics`, label propagation), so the page lays them out
side by side, whatever their type.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from . import concepts, ranking
from .concepts import Memory
from .repo import Namespace, Namespaces, parse_trailers, text_hash
from .semantic import Semantics
from .settings import Settings
from .templating import render_template, templates_dir

#: Edge kinds, strongest first: an edge that is several kinds is drawn as the first of them.
EDGE_KINDS = ("supersedes", "merged", "related", "similar")
#: Commit actions whose ``Memory-Id`` trailers name memories merged together.
MERGE_ACTIONS = frozenset({"consolidate", "merge"})
#: How many semantic neighbours of each memory the graph shows (nearest first).
SIMILAR_SHOWN = 3
#: The vendored graph libraries and the page's own script and style, under templates/web/static/.
ASSETS = ("vendor/graph-libs.min.js", "graph.js", "graph.css")
LICENCES = "vendor/graph-libs.LICENSES.txt"


@dataclass(frozen=True)
class Node:
    """A memory as the graph shows it."""

    id: str
    title: str
    text: str
    type: str
    state: str
    potency: float
    tags: tuple[str, ...] = ()
    updated: str = ""
    absorbed: int = 0  # memories merged away into this one
    topic: int = 0  # memories tied together by meaning and links share one (see topics())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"id": self.id, "title": self.title, "text": self.text, "type": self.type, "state": self.state,
                "potency": self.potency, "tags": list(self.tags), "updated": self.updated,
                "absorbed": self.absorbed, "topic": self.topic}


@dataclass(frozen=True)
class Edge:
    """A link between two memories; ``source`` supersedes ``target`` when ``supersedes`` is a kind."""

    source: str
    target: str
    kinds: tuple[str, ...]  # an edge drawn as its first kind points from ``source`` to ``target``
    cosine: float | None = None  # for ``similar``

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out: dict[str, Any] = {"source": self.source, "target": self.target, "kinds": list(self.kinds)}
        if self.cosine is not None:
            out["cosine"] = self.cosine
        return out


@dataclass(frozen=True)
class Graph:
    """A namespace's memories and their links at one commit."""

    namespace: str
    head: str
    generated: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    similar: bool  # whether semantic neighbours were looked for
    dangling: int = 0  # links to memories that no longer exist, left out
    unembedded: int = 0  # active memories without a sentence vector, when that left neighbours out
    types: tuple[str, ...] = field(default=concepts.TYPES)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``nodes``, ``edges`` and what they were read from."""
        return {"namespace": self.namespace, "head": self.head, "generated": self.generated,
                "types": list(self.types), "kinds": list(EDGE_KINDS), "similar": self.similar,
                "dangling": self.dangling, "unembedded": self.unembedded, "nodes": [n.to_dict() for n in self.nodes],
                "edges": [e.to_dict() for e in self.edges]}

    def script_json(self) -> str:
        """The graph as JSON that is safe inside an HTML ``<script type="application/json">``.

        ``<``, ``>`` and ``&`` are written as escapes, so no memory text can close the element
        or open a comment; JSON.parse reads them back as the characters they were.
        """
        text = json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))
        return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
                .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


class _Links:
    """Edges keyed by their unordered pair of ends, each with the kinds it is."""

    def __init__(self, present: set[str]) -> None:
        self.present = present
        self.kinds: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.direction: dict[tuple[str, str], tuple[str, str]] = {}
        self.cosines: dict[tuple[str, str], float] = {}
        self.dangling = 0

    def add(self, a: str, b: str, kind: str, cosine: float | None = None) -> None:
        if a == b:
            return
        if a not in self.present or b not in self.present:
            if kind != "supersedes":  # what a memory replaced is gone by design
                self.dangling += 1
            return
        key = (a, b) if a < b else (b, a)
        self.kinds[key].add(kind)
        # A supersede points from the newer memory, a merge from the one it made or kept.
        if kind == "supersedes" or kind == "merged" and self.direction.get(key) is None:
            self.direction[key] = (a, b)
        if cosine is not None:
            self.cosines[key] = max(cosine, self.cosines.get(key, -1.0))

    def edges(self) -> tuple[Edge, ...]:
        out = []
        for key in sorted(self.kinds):
            source, target = self.direction.get(key, key)
            kinds = tuple(k for k in EDGE_KINDS if k in self.kinds[key])
            cosine = self.cosines.get(key)
            out.append(Edge(source, target, kinds, None if cosine is None else round(cosine, 4)))
        return tuple(out)


class Graphs:
    """Reads namespaces as graphs."""

    def __init__(self, namespaces: Namespaces, settings: Settings, semantics: Semantics | None = None) -> None:
        """Read from ``namespaces``; ``semantics``: add semantic neighbours when its port is on."""
        self.namespaces = namespaces
        self.settings = settings
        self.semantics = semantics

    def graph(self, namespace: str, *, similar: bool | None = None, embed_at_most: int | None = None) -> Graph:
        """Every memory of ``namespace`` (archived ones too) with its links.

        ``similar``: look for semantic neighbours (default: when the embeddings port is on). The
        first time, every active memory's text is embedded, which takes a while; with
        ``embed_at_most``, neighbours are left out instead when more texts than that lack a
        vector (``Graph.unembedded`` says how many; ``gitmem vectors`` embeds them).
        """
        at = concepts.now()
        use_similar = self.semantics is not None and self.semantics.enabled if similar is None else similar
        with self.namespaces.using(namespace) as ns:
            head = ns.synced()
            memories = ns.index.all(states=["active", "pending", "archived"])
            pending = ns.usage.pending()
            links = _Links({m.id for m in memories})
            for m in memories:
                for other in m.related:
                    links.add(m.id, other, "related")
                for older in m.supersedes:
                    links.add(m.id, older, "supersedes")
            absorbed = self._merges(ns, links)
            found_similar, unembedded = self._similar(ns, memories, links, embed_at_most) if use_similar else (False, 0)
        edges = links.edges()
        topic = topics([m.id for m in memories], edges)
        nodes = tuple(
            Node(m.id, m.title, m.text, m.type, m.state, round(ranking.effective_potency(m, at, pending), 4),
                 m.tags, concepts.iso(m.updated), absorbed.get(m.id, 0), topic[m.id])
            for m in memories)
        return Graph(namespace, str(head.id), concepts.iso(at), nodes, edges, found_similar, links.dangling,
                     unembedded)

    def page(self, namespace: str, *, similar: bool | None = None) -> str:
        """The graph as one self-contained HTML file: data, libraries, script and style inlined.

        It loads nothing: its Content-Security-Policy allows only its own inline script and
        style (by hash) and the layout's worker, and no network request of any kind.
        """
        graph = self.graph(namespace, similar=similar)
        assets = inline_assets()
        libs_block = f"/*! {assets['licences']} */\n{assets['libs']}"
        csp = "; ".join([
            "default-src 'none'",
            f"script-src {_hash(libs_block)} {_hash(assets['script'])}",
            f"style-src {_hash(assets['style'])}",
            "worker-src blob:", "img-src data:", "base-uri 'none'", "form-action 'none'",
        ])
        return render_template("export/graph.html", graph=graph, data=graph.script_json(), libs_block=libs_block,
                               script=assets["script"], style=assets["style"], csp=csp, memory_url="")

    @staticmethod
    def _merges(ns: Namespace, links: _Links) -> dict[str, int]:
        """``merged`` edges from consolidation commits on main; how many gone memories each survivor took in."""
        absorbed: dict[str, int] = defaultdict(int)
        seen_gone: set[str] = set()
        for commit in ns.store.log():
            trailers = parse_trailers(commit.message)
            if (trailers.get("Action") or [""])[0] not in MERGE_ACTIONS:
                continue
            ids = list(dict.fromkeys(trailers.get("Memory-Id", [])))
            alive = [i for i in ids if i in links.present]
            if not alive:
                continue
            for other in alive[1:]:
                links.add(alive[0], other, "merged")
            # The newest commit naming a gone memory is the one that took it away (as
            # Reviews.successor reads it); older commits that name it again do not count twice.
            for gone in ids:
                if gone not in links.present and gone not in seen_gone:
                    seen_gone.add(gone)
                    absorbed[alive[0]] += 1
        return absorbed

    def _similar(self, ns: Namespace, memories: list[Memory], links: _Links,
                 embed_at_most: int | None) -> tuple[bool, int]:
        """``similar`` edges: each active memory's nearest neighbours; whether found, and texts left unembedded."""
        store = None if self.semantics is None else self.semantics.store(ns)
        if self.semantics is None or store is None:
            return False, 0
        by_hash: dict[str, list[str]] = defaultdict(list)
        for m in memories:
            if m.state == "active":
                by_hash[text_hash(m.text)].append(m.id)
        hashes = sorted(by_hash)
        if embed_at_most is not None:
            missing = len(hashes) - len(store.known(hashes))
            if missing > embed_at_most:
                return False, missing
        # The same memories and settings as consolidation's plan, so both keep one set of pairs.
        found = self.semantics.neighbours(ns, hashes, self.settings.semantic_threshold,
                                          self.settings.semantic_neighbours)
        if found is None:
            return False, 0
        nearest: dict[str, list[tuple[float, str]]] = defaultdict(list)
        for a, b, cosine in found.pairs:
            nearest[a].append((cosine, b))
            nearest[b].append((cosine, a))
        for a, near in nearest.items():
            near.sort(key=lambda item: (-item[0], item[1]))
            for cosine, b in near[:SIMILAR_SHOWN]:
                for x in by_hash.get(a, ()):
                    for y in by_hash.get(b, ()):
                        links.add(x, y, "similar", cosine)
        return True, 0


#: How strongly each kind of link ties two memories into one topic: meaning first.
TOPIC_WEIGHTS = {"similar": 3.0, "merged": 2.0, "supersedes": 2.0, "related": 2.0}


def topics(ids: Sequence[str], edges: Sequence[Edge], rounds: int = 20) -> dict[str, int]:
    """A topic number per memory: weighted label propagation over the links, no I/O, deterministic.

    Every memory starts as its own topic and, round after round, takes the topic its links weigh
    most for (a semantic neighbour three times its cosine, a link of history or of one rule 2),
    ties to the lowest; topics are then numbered by size, largest first. Memories with no link
    stay alone.
    """
    neighbours: dict[str, dict[str, float]] = defaultdict(dict)
    for edge in edges:
        weight = max(TOPIC_WEIGHTS.get(k, 1.0) * (edge.cosine if k == "similar" and edge.cosine else 1.0)
                     for k in edge.kinds)
        neighbours[edge.source][edge.target] = neighbours[edge.target][edge.source] = weight
    label = {i: i for i in ids}
    for _ in range(rounds):
        moved = False
        for memory_id in sorted(neighbours):
            if memory_id not in label:
                continue
            votes: dict[str, float] = defaultdict(float)
            for other, weight in neighbours[memory_id].items():
                if other in label:
                    votes[label[other]] += weight
            votes[label[memory_id]] += 0.0  # its own topic stands unless a link outweighs it
            best = min(votes.items(), key=lambda item: (-item[1], item[0]))[0]  # the heaviest, then the lowest
            if best != label[memory_id]:
                label[memory_id], moved = best, True
        if not moved:
            break
    sizes = Counter(label.values())
    order = {name: n for n, (name, _) in enumerate(sorted(sizes.items(), key=lambda item: (-item[1], item[0])))}
    return {i: order[label[i]] for i in ids}


def _hash(text: str) -> str:
    """A CSP source that allows the inline script or style whose content is exactly ``text``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def inline_assets() -> dict[str, str]:
    """The graph page's libraries, script, style and licence notices as text to inline."""
    static = templates_dir() / "web" / "static"
    scripts = {name: (static / name).read_text(encoding="utf-8") for name in ASSETS}
    # An inlined script ends at the first "</script" whatever JavaScript thinks: never let one through.
    licences = (static / LICENCES).read_text(encoding="utf-8")
    for name, text in [*scripts.items(), (LICENCES, licences)]:
        if "</script" in text.lower() or "</style" in text.lower() or "<!--" in text or \
                (name == LICENCES and "*/" in text):
            raise ValueError(f"{name} cannot be inlined into the graph page as it is")
    return {"libs": scripts["vendor/graph-libs.min.js"], "script": scripts["graph.js"], "style": scripts["graph.css"],
            "licences": licences}
