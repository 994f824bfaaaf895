/* The memory graph page: draws the graph data in #graph-data with sigma.js (WebGL), lays it out
 * with graphology's ForceAtlas2 worker, and wires the filters, the search and the hover card.
 * The same script runs on the web page and inlined in `gitmem export --format graph`.
 * Memory text only ever reaches the page as textContent, never as HTML.
 */
(function () {
  "use strict";

  var L = window.GitmemGraphLibs;
  var app = document.getElementById("graph-app");
  var data = JSON.parse(document.getElementById("graph-data").textContent);
  var memoryUrl = app.getAttribute("data-memory-url") || "";

  // One colour per type (Tableau 10, told apart by most people, also in print).
  var TYPE_COLORS = {
    fact: "#4e79a7", preference: "#f28e2b", decision: "#e15759", convention: "#76b7b2", pattern: "#59a14f",
    method: "#edc948", insight: "#b07aa1", idea: "#ff9da7", lesson: "#9c755f", techchoice: "#17becf",
  };
  var KIND_COLORS = { supersedes: "#d1242f", merged: "#8250df", related: "#6e7781", similar: "#b6c2cf" };
  var KIND_LABELS = {
    supersedes: "supersedes", merged: "merged together", related: "related", similar: "similar meaning",
  };
  var DIM_NODE = "#e3e6ea";
  var DIM_EDGE = "#f0f2f4";
  var LIT_EDGE = "#0969da";
  var SPREAD_DEPTH = 3;
  var SPREAD_STEP_MS = 260;
  var TIP_CHARS = 600;
  var STRONGEST_LABELLED = 12;
  var SPREAD_AT_LEAST = 40;
  var SPREAD_SHARE = 0.2;
  var HIDE_EDGES_ON_MOVE_PAST = 4000;

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function $(id) { return document.getElementById(id); }
  function typeColor(type) { return TYPE_COLORS[type] || "#8c959f"; }
  function mix(hex, toward, share) {
    // `hex` moved `share` of the way to `toward`, both #rrggbb.
    var a = parseInt(hex.slice(1), 16), b = parseInt(toward.slice(1), 16), out = 0;
    for (var shift = 16; shift >= 0; shift -= 8) {
      var x = (a >> shift) & 255, y = (b >> shift) & 255;
      out |= Math.round(x + (y - x) * share) << shift;
    }
    return "#" + (out | 0x1000000).toString(16).slice(1);
  }

  // --- the graph -------------------------------------------------------------------------------

  var graph = new L.Graph({ type: "mixed", multi: false, allowSelfLoops: false });
  // Sizes are in pixels at the first view: smaller when there are many memories, so they do not overlap.
  var scale = Math.max(0.38, Math.min(1, Math.sqrt(400 / Math.max(1, data.nodes.length))));
  var memories = new Map();
  var haystacks = new Map();
  data.nodes.forEach(function (n) {
    memories.set(n.id, n);
    haystacks.set(n.id, (n.title + "\n" + n.text + "\n" + n.tags.join(" ") + "\n" + n.id).toLowerCase());
    graph.addNode(n.id, {
      label: n.title,
      size: scale * (3 + 11 * Math.sqrt(Math.max(0, Math.min(1, n.potency)))),
      color: typeColor(n.type),
      type: n.state === "archived" ? "dashed" : "circle",
      memoryType: n.type,
      topic: n.topic,
      x: 0, y: 0,
    });
  });
  // History has a direction: a supersede points from the newer memory, a merge from what it made.
  var DIRECTED = { supersedes: true, merged: true };
  data.edges.forEach(function (e) {
    var kind = e.kinds[0];
    var attrs = { kinds: e.kinds, color: KIND_COLORS[kind], size: (kind === "similar" ? 0.6 : 1.1) * Math.max(0.7, scale),
                  type: DIRECTED[kind] ? "arrow" : "line" };
    if (DIRECTED[kind]) graph.addDirectedEdge(e.source, e.target, attrs);
    else graph.addUndirectedEdge(e.source, e.target, attrs);
  });

  // Start from circles packed by topic (memories tied by meaning and links), not by type, then
  // let ForceAtlas2 pull linked memories together.
  L.circlepack.assign(graph, { hierarchyAttributes: ["topic"], scale: 100 });

  // --- state: filters, hover, search ---------------------------------------------------------------

  var state = {
    types: new Set(data.types),
    states: new Set(["active", "pending", "archived"]),
    kinds: new Set(data.kinds),
    tags: new Set(),
    hovered: null,
    selected: null,
    lit: null, // Map id -> depth (0: a search hit) while a search is shown
    hits: [],
    strongest: new Set(), // the hits with a label box
  };

  function shown(id) {
    var m = memories.get(id);
    if (!state.types.has(m.type) || !state.states.has(m.state)) return false;
    if (state.tags.size === 0) return true;
    for (var i = 0; i < m.tags.length; i++) if (state.tags.has(m.tags[i])) return true;
    return false;
  }
  function edgeShown(edge) {
    var kinds = graph.getEdgeAttribute(edge, "kinds");
    var on = false;
    for (var i = 0; i < kinds.length; i++) if (state.kinds.has(kinds[i])) on = true;
    return on && shown(graph.source(edge)) && shown(graph.target(edge));
  }

  var hoverNeighbours = null;

  function nodeReducer(id, attrs) {
    if (!shown(id)) return Object.assign({}, attrs, { hidden: true });
    var out = Object.assign({}, attrs);
    if (state.lit) {
      var depth = state.lit.get(id);
      if (depth === undefined) {
        out.color = DIM_NODE; out.label = null; out.zIndex = 0;
      } else {
        out.zIndex = 3 - Math.min(depth, 2);
        out.color = mix(attrs.color, "#ffffff", Math.min(0.55, depth * 0.2));
        if (depth === 0) {
          out.size = attrs.size * 1.35 + 2;
          // A highlighted node gets a label box with a shadow, costly to draw: only the strongest hits.
          if (state.strongest.has(id)) { out.highlighted = true; out.forceLabel = true; }
        }
      }
    }
    if (hoverNeighbours && id !== state.hovered && !hoverNeighbours.has(id)) {
      out.color = DIM_NODE; out.label = null; out.zIndex = 0;
    } else if (hoverNeighbours) {
      out.zIndex = 4; out.forceLabel = true;
    }
    if (id === state.selected || id === state.hovered) { out.highlighted = true; out.forceLabel = true; out.zIndex = 5; }
    return out;
  }

  function edgeReducer(edge, attrs) {
    if (!edgeShown(edge)) return Object.assign({}, attrs, { hidden: true });
    var s = graph.source(edge), t = graph.target(edge);
    if (hoverNeighbours) {
      if (s !== state.hovered && t !== state.hovered) return Object.assign({}, attrs, { hidden: true });
      return Object.assign({}, attrs, { size: attrs.size + 1, zIndex: 2 });
    }
    if (state.lit) {
      var ds = state.lit.get(s), dt = state.lit.get(t);
      // Lit: the links the light spread along (one step apart) and those between two hits.
      if (ds !== undefined && dt !== undefined && (Math.abs(ds - dt) === 1 || ds + dt === 0)) {
        var far = Math.max(ds, dt);
        return Object.assign({}, attrs, { color: mix(LIT_EDGE, "#ffffff", Math.min(0.6, far * 0.22)),
                                          size: attrs.size + 0.8, zIndex: 1 });
      }
      return Object.assign({}, attrs, { color: DIM_EDGE });
    }
    return attrs;
  }

  // --- the renderer ----------------------------------------------------------------------------

  // Archived memories: a dashed ring around a pale disc (the circle program's fragment shader, dashed).
  var DASHED_FRAGMENT = [
    "precision highp float;",
    "varying vec4 v_color;",
    "varying vec2 v_diffVector;",
    "varying float v_radius;",
    "uniform float u_correctionRatio;",
    "const vec4 transparent = vec4(0.0, 0.0, 0.0, 0.0);",
    "void main(void) {",
    "  float border = u_correctionRatio * 2.0;",
    "  float r = length(v_diffVector);",
    "  float dist = r - v_radius + border;",
    "  #ifdef PICKING_MODE",
    "  gl_FragColor = dist > border ? transparent : v_color;",
    "  #else",
    "  float ring = max(v_radius * 0.28, u_correctionRatio * 3.0);",
    "  float dash = step(0.5, fract(atan(v_diffVector.y, v_diffVector.x) / 6.28318530718 * 10.0));",
    "  vec4 fill = vec4(mix(vec3(1.0), v_color.rgb, 0.18), 1.0);",
    "  vec4 color = (r > v_radius - ring) ? mix(fill, v_color, dash) : fill;",
    "  float t = dist > border ? 1.0 : (dist > 0.0 ? dist / border : 0.0);",
    "  gl_FragColor = mix(color, transparent, t);",
    "  #endif",
    "}",
  ].join("\n");

  class NodeDashedProgram extends L.NodeCircleProgram {
    getDefinition() {
      return Object.assign({}, super.getDefinition(), { FRAGMENT_SHADER_SOURCE: DASHED_FRAGMENT });
    }
  }

  var container = $("graph-canvas");
  var renderer;
  try {
    renderer = new L.Sigma(graph, container, {
      nodeProgramClasses: { circle: L.NodeCircleProgram, dashed: NodeDashedProgram },
      edgeProgramClasses: { line: L.EdgeRectangleProgram, arrow: L.EdgeArrowProgram },
      defaultEdgeType: "line",
      nodeReducer: nodeReducer,
      edgeReducer: edgeReducer,
      zIndex: true,
      labelFont: "system-ui, -apple-system, 'Segoe UI', sans-serif",
      labelSize: 12,
      labelWeight: "500",
      labelColor: { color: "#1f2328" },
      labelDensity: 0.12,
      labelGridCellSize: 110,
      labelRenderedSizeThreshold: 5,
      minCameraRatio: 0.02,
      maxCameraRatio: 8,
      stagePadding: graph.order < 100 ? 90 : 40, // room for the labels of a few memories
      // Past a few thousand links, drawing them while the view moves costs more than it shows.
      hideEdgesOnMove: graph.size > HIDE_EDGES_ON_MOVE_PAST,
    });
  } catch (err) {
    app.classList.add("graph-failed");
    container.appendChild(el("p", { class: "graph-error", role: "alert" },
      "This page draws the graph with WebGL, which this browser has turned off or does not offer (" +
      err.message + "). The search on the left still lists matching memories."));
    app.setAttribute("data-ready", "error");
  }

  // Sigma draws its first frame inside its constructor; the browser shows it at the next frame.
  // Two animation frames later that frame has been painted: that moment is the first paint.
  var firstPaint = null;
  if (renderer) {
    if (graph.order === 0) {
      container.appendChild(el("p", { class: "graph-empty" },
        "No memories in " + data.namespace + " yet. What gitmem remembers shows up here."));
    }
    requestAnimationFrame(function () {
      requestAnimationFrame(function () {
        firstPaint = performance.now();
        performance.mark("graph-first-paint");
        app.setAttribute("data-ready", "1");
      });
    });
  }

  function refresh() { if (renderer) renderer.refresh({ skipIndexation: true }); updateCount(); }

  // --- layout: ForceAtlas2 in a worker, for a while ----------------------------------------------

  var layout = null;
  var layoutTimer = null;
  var layoutButton = $("graph-layout");
  function stopLayout() {
    if (layout && layout.isRunning()) layout.stop();
    clearTimeout(layoutTimer);
    app.setAttribute("data-layout", "done");
    if (layoutButton) layoutButton.textContent = "Run layout";
  }
  function startLayout(ms) {
    if (!layout) return;
    layout.start();
    app.setAttribute("data-layout", "running");
    if (layoutButton) layoutButton.textContent = "Pause layout";
    clearTimeout(layoutTimer);
    layoutTimer = setTimeout(stopLayout, ms);
  }
  if (renderer && graph.order > 1) {
    var settings = L.forceAtlas2.inferSettings(graph);
    settings.outboundAttractionDistribution = true;
    settings.linLogMode = true;
    layout = new L.FA2Layout(graph, { settings: settings, getEdgeWeight: function (_, attrs) {
      return attrs.kinds[0] === "similar" ? 0.5 : 1;
    } });
    startLayout(Math.min(15000, 3000 + graph.order * 2));
  } else {
    app.setAttribute("data-layout", "done");
    if (layoutButton) layoutButton.hidden = true; // nothing to lay out
  }
  if (layoutButton) {
    layoutButton.addEventListener("click", function () {
      if (layout && layout.isRunning()) stopLayout(); else startLayout(8000);
    });
  }

  // --- hover card and selection ------------------------------------------------------------------

  var tip = $("graph-tip");
  function describe(box, m, full) {
    box.textContent = "";
    var head = el("div", { class: "graph-card-head" });
    head.appendChild(el("span", { class: "graph-swatch" }));
    head.lastChild.style.background = typeColor(m.type);
    head.appendChild(el("strong", null, m.title));
    box.appendChild(head);
    var meta = m.type + " · " + m.state + " · potency " + m.potency.toFixed(2);
    if (m.absorbed) meta += " · took in " + m.absorbed + " merged";
    box.appendChild(el("div", { class: "graph-card-meta" }, meta));
    if (m.tags.length) {
      var tags = el("div", { class: "graph-card-tags" });
      m.tags.forEach(function (t) { tags.appendChild(el("span", { class: "tag" }, t)); });
      box.appendChild(tags);
    }
    var text = m.text;
    if (!full && text.length > TIP_CHARS) text = text.slice(0, TIP_CHARS - 1) + "…";
    box.appendChild(el("p", { class: "graph-card-text" }, text));
  }
  function placeTip(id) {
    var pos = renderer.framedGraphToViewport(renderer.getNodeDisplayData(id));
    var box = container.getBoundingClientRect();
    var left = pos.x + 18, top = pos.y + 12;
    tip.style.left = Math.max(8, Math.min(left, box.width - tip.offsetWidth - 8)) + "px";
    tip.style.top = Math.max(8, Math.min(top, box.height - tip.offsetHeight - 8)) + "px";
  }
  var detail = $("graph-detail");
  function select(id) {
    state.selected = id;
    if (!id) { detail.hidden = true; refresh(); return; }
    var m = memories.get(id);
    describe(detail, m, true);
    if (memoryUrl) {
      var link = el("a", { href: memoryUrl + encodeURIComponent(m.id), class: "graph-open" }, "Open memory →");
      detail.appendChild(link);
    }
    var close = el("button", { type: "button", class: "graph-close", "aria-label": "Close" }, "×");
    close.addEventListener("click", function () { select(null); });
    detail.insertBefore(close, detail.firstChild);
    detail.hidden = false;
    refresh();
  }
  function focusNode(id) {
    if (!renderer) return;
    var pos = renderer.getNodeDisplayData(id);
    if (pos) renderer.getCamera().animate({ x: pos.x, y: pos.y, ratio: 0.3 }, { duration: 450 });
  }

  if (renderer) {
    renderer.on("enterNode", function (event) {
      state.hovered = event.node;
      hoverNeighbours = new Set();
      graph.forEachEdge(event.node, function (edge, attrs, s, t) {
        if (edgeShown(edge)) hoverNeighbours.add(s === event.node ? t : s);
      });
      describe(tip, memories.get(event.node), false);
      tip.hidden = false;
      placeTip(event.node);
      container.style.cursor = "pointer";
      refresh();
    });
    renderer.on("leaveNode", function () {
      state.hovered = null;
      hoverNeighbours = null;
      tip.hidden = true;
      container.style.cursor = "";
      refresh();
    });
    renderer.on("clickNode", function (event) { select(event.node); });
    renderer.on("clickStage", function () { select(null); });
  }

  // --- search: hits light up, then the light spreads along the links ----------------------------------

  var spreadTimers = [];
  var hitList = $("graph-hits");
  var hitCount = $("graph-hit-count");
  function clearSearch() {
    spreadTimers.forEach(clearTimeout);
    spreadTimers = [];
    state.lit = null;
    state.hits = [];
    hitList.textContent = "";
    hitCount.textContent = "";
    app.removeAttribute("data-spread");
    refresh();
  }
  function search(query) {
    spreadTimers.forEach(clearTimeout);
    spreadTimers = [];
    var words = query.toLowerCase().split(/\s+/).filter(Boolean);
    if (!words.length) { clearSearch(); return []; }
    var hits = [];
    graph.forEachNode(function (id) {
      if (!shown(id)) return;
      var hay = haystacks.get(id);
      if (words.every(function (w) { return hay.indexOf(w) >= 0; })) hits.push(id);
    });
    hits.sort(function (a, b) { return memories.get(b).potency - memories.get(a).potency; });
    state.hits = hits;
    state.strongest = new Set(hits.slice(0, STRONGEST_LABELLED));
    state.lit = new Map(hits.map(function (id) { return [id, 0]; }));
    app.setAttribute("data-spread", "0");
    hitList.textContent = "";
    hits.slice(0, 100).forEach(function (id) {
      var m = memories.get(id);
      var item = el("li");
      var button = el("button", { type: "button", "data-id": id });
      var dot = el("span", { class: "graph-swatch" });
      dot.style.background = typeColor(m.type);
      button.appendChild(dot);
      button.appendChild(document.createTextNode(m.title));
      button.addEventListener("click", function () { select(id); focusNode(id); });
      item.appendChild(button);
      hitList.appendChild(item);
    });
    hitCount.textContent = hits.length === 0 ? "Nothing matches." :
      hits.length + (hits.length === 1 ? " memory matches" : " memories match") +
      (hits.length > 100 ? " (the strongest 100 listed)" : "") + "; the light spreads along their links.";
    refresh();
    var frontier = hits;
    for (var depth = 1; depth <= SPREAD_DEPTH; depth++) {
      spreadTimers.push(setTimeout(spreadTo.bind(null, depth), depth * SPREAD_STEP_MS));
    }
    // The light stops spreading once it reached this many memories, so a search still picks
    // out a part of a dense graph instead of lighting all of it.
    var visible = 0;
    graph.forEachNode(function (id) { if (shown(id)) visible++; });
    var budget = Math.max(SPREAD_AT_LEAST, Math.min(hits.length * 3, Math.ceil(visible * SPREAD_SHARE)));
    function spreadTo(depth) {
      var next = [];
      frontier.forEach(function (id) {
        graph.forEachEdge(id, function (edge, attrs, s, t) {
          var other = s === id ? t : s;
          if (state.lit.size < budget && !state.lit.has(other) && edgeShown(edge)) {
            state.lit.set(other, depth); next.push(other);
          }
        });
      });
      frontier = next;
      app.setAttribute("data-spread", String(depth));
      refresh();
    }
    return hits;
  }
  var searchBox = $("graph-q");
  $("graph-search").addEventListener("submit", function (event) {
    event.preventDefault();
    search(searchBox.value);
  });
  searchBox.addEventListener("search", function () { if (!searchBox.value) clearSearch(); });

  // --- filters -------------------------------------------------------------------------------------

  function counted(list) {
    var counts = new Map();
    list.forEach(function (k) { counts.set(k, (counts.get(k) || 0) + 1); });
    return counts;
  }
  function checkboxes(box, values, counts, colors, labels, chosen) {
    values.forEach(function (value) {
      if (!counts.get(value)) return;
      var label = el("label", { class: "graph-check" });
      var input = el("input", { type: "checkbox", value: value, name: box.id });
      input.checked = chosen.has(value);
      input.addEventListener("change", function () {
        if (input.checked) chosen.add(value); else chosen.delete(value);
        if (state.lit) search(searchBox.value); else refresh();
      });
      label.appendChild(input);
      if (colors) {
        var swatch = el("span", { class: box.id === "graph-kinds" ? "graph-line" : "graph-swatch" });
        swatch.style.background = colors[value] || typeColor(value);
        label.appendChild(swatch);
      }
      label.appendChild(el("span", { class: "graph-check-name" }, labels ? labels[value] : value));
      label.appendChild(el("span", { class: "graph-check-count" }, String(counts.get(value))));
      box.appendChild(label);
    });
  }
  checkboxes($("graph-types"), data.types, counted(data.nodes.map(function (n) { return n.type; })),
             TYPE_COLORS, null, state.types);
  checkboxes($("graph-states"), ["active", "pending", "archived"],
             counted(data.nodes.map(function (n) { return n.state; })), null, null, state.states);
  var kindCounts = counted(data.edges.map(function (e) { return e.kinds[0]; }));
  checkboxes($("graph-kinds"), data.kinds, kindCounts, KIND_COLORS, KIND_LABELS, state.kinds);
  if (!data.edges.length) $("graph-kinds").appendChild(el("p", { class: "muted" }, "No links yet."));
  if (data.unembedded) {
    $("graph-kinds").appendChild(el("p", { class: "muted graph-note" },
      "Similar-meaning links are left out until " + data.unembedded + " memories are embedded (gitmem vectors)."));
  } else if (!data.similar) {
    $("graph-kinds").appendChild(el("p", { class: "muted graph-note" },
      "Similar-meaning links need the embeddings port (GITMEM_EMBEDDINGS)."));
  }

  var tagCounts = counted([].concat.apply([], data.nodes.map(function (n) { return n.tags; })));
  var tagInput = $("graph-tag");
  var tagList = $("graph-tag-list");
  var chips = $("graph-tag-chips");
  Array.from(tagCounts.keys()).sort().forEach(function (tag) {
    tagList.appendChild(el("option", { value: tag }, tag + " (" + tagCounts.get(tag) + ")"));
  });
  if (!tagCounts.size) tagInput.disabled = true;
  function drawChips() {
    chips.textContent = "";
    state.tags.forEach(function (tag) {
      var chip = el("button", { type: "button", class: "tag graph-chip", "data-tag": tag, title: "Remove" }, tag + " ×");
      chip.addEventListener("click", function () { state.tags.delete(tag); drawChips(); afterFilter(); });
      chips.appendChild(chip);
    });
  }
  function afterFilter() { if (state.lit) search(searchBox.value); else refresh(); }
  function addTag() {
    var tag = tagInput.value.trim();
    if (!tagCounts.has(tag)) return;
    state.tags.add(tag);
    tagInput.value = "";
    drawChips();
    afterFilter();
  }
  tagInput.addEventListener("change", addTag);
  tagInput.addEventListener("keydown", function (event) {
    if (event.key === "Enter") { event.preventDefault(); addTag(); }
  });

  var countBox = $("graph-count");
  function updateCount() {
    var nodes = 0, edges = 0;
    graph.forEachNode(function (id) { if (shown(id)) nodes++; });
    graph.forEachEdge(function (edge) { if (edgeShown(edge)) edges++; });
    countBox.textContent = nodes + " of " + graph.order + " memories, " + edges + " links shown" +
      (data.dangling ? "; " + data.dangling + " links point at memories no longer here" : "");
    app.setAttribute("data-shown", String(nodes));
  }
  updateCount();

  // --- zoom buttons --------------------------------------------------------------------------------

  function camera() { return renderer && renderer.getCamera(); }
  $("graph-zoom-in").addEventListener("click", function () { if (camera()) camera().animatedZoom({ duration: 250 }); });
  $("graph-zoom-out").addEventListener("click", function () { if (camera()) camera().animatedUnzoom({ duration: 250 }); });
  $("graph-zoom-fit").addEventListener("click", function () { if (camera()) camera().animatedReset({ duration: 300 }); });

  // For tests, benchmarks and the curious console user.
  window.gitmemGraph = {
    sigma: renderer, graph: graph, state: state, search: search, clearSearch: clearSearch, select: select,
    stopLayout: stopLayout,
    firstPaint: function () { return firstPaint; },
    lit: function () { return state.lit ? Object.fromEntries(state.lit) : {}; },
    visible: function () { return graph.filterNodes(function (id) { return shown(id); }); },
  };
})();
