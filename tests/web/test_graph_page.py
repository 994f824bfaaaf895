"""The memory graph page and the exported graph file in a real headless Chromium (Debian's).

The graph is drawn with WebGL; headless Chromium offers it through SwiftShader, its software
renderer, which these tests ask for explicitly.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from gitmem.service import MemoryService

from .conftest import Client, Keys

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
needs_browser = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                   reason="Debian's chromium is not installed (apt-get install chromium)")
WEBGL_ARGS = ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
              "--disable-background-networking", "--disable-quic", "--no-first-run",
              "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=WEBGL_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def problems() -> list[str]:
    """Console errors and uncaught exceptions of the page under test (CSP violations land here)."""
    return []


@pytest.fixture
def page(browser: Browser, live_server: str, keys: Keys, problems: list[str]) -> Iterator[Page]:
    """A browser page signed in with the reader key."""
    context = browser.new_context(base_url=live_server, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    # A failed load is reported by its response (the console's message does not name it); the
    # browser's own request for /favicon.ico is none of the page's business.
    page.on("console", lambda m: problems.append(m.text)
            if m.type == "error" and not m.text.startswith("Failed to load resource") else None)
    page.on("response", lambda r: problems.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto("/login")
    page.fill("input[name=key]", keys.reader)
    page.click("button[type=submit]")
    yield page
    context.close()


@pytest.fixture
def seeded(svc: MemoryService) -> dict[str, str]:
    """Six memories: linked ones about deploys, a hostile text, an archived one."""
    ids: dict[str, str] = {}

    def add(key: str, text: str, **kw: Any) -> None:
        result = svc.remember("default", text, **kw)
        assert result.memory is not None
        ids[key] = result.memory.id

    add("ansible", "We deploy with Ansible from the ops repository", type="decision", tags=["ops", "deploy"])
    add("playbooks", "Playbooks live under ops/playbooks", type="fact", tags=["ops"], related=[ids["ansible"]])
    add("days", "Releases go out on Tuesdays and Thursdays", type="convention", tags=["release"],
        related=[ids["playbooks"]])
    add("hostile", "Lint first <script>window.pwned = 1</script> <img src=x onerror=\"window.pwned = 2\">",
        type="convention", tags=["ci"])
    add("pytest", "Use pytest fixtures, not setUp methods", type="convention", tags=["tests"])
    add("rsync", "Deploys were done by hand with rsync", type="lesson", tags=["deploy"])
    svc.forget("default", ids["rsync"], actor="sam", reason="replaced by Ansible")
    return ids


def open_graph(page: Page) -> None:
    page.goto("/ns/default/graph")
    expect(page.locator("#graph-app")).to_have_attribute("data-ready", "1", timeout=20_000)
    page.evaluate("gitmemGraph.stopLayout()")


def shown(page: Page) -> int:
    return int(page.get_attribute("#graph-app", "data-shown") or -1)


def test_the_page_needs_a_key_that_may_read_the_namespace(client: Client, keys: Keys, seeded: dict[str, str]) -> None:
    assert "/login" in client.get("/ns/default/graph").headers["Location"]
    assert client.get("/ns/default/graph", headers=keys.auth("other")).status_code == 403
    response = client.get("/ns/default/graph", headers=keys.auth("reader"))
    assert response.status_code == 200
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    body = response.get_data(as_text=True)
    assert "<script>window.pwned" not in body and "\\u003cscript\\u003ewindow.pwned" in body


@needs_browser
def test_the_graph_renders_every_memory_and_filters_by_type_state_and_tag(
        page: Page, seeded: dict[str, str], problems: list[str]) -> None:
    open_graph(page)
    assert shown(page) == 6
    assert page.evaluate("gitmemGraph.graph.size") == 2  # the two related links
    expect(page.locator("#graph-count")).to_contain_text("6 of 6 memories, 2 links shown")
    # An archived memory is drawn with the dashed program.
    assert page.evaluate(f"gitmemGraph.graph.getNodeAttribute('{seeded['rsync']}', 'type')") == "dashed"

    page.locator("#graph-types input[value=convention]").uncheck()
    assert shown(page) == 3
    page.locator("#graph-states input[value=archived]").uncheck()
    assert shown(page) == 2
    expect(page.locator("#graph-count")).to_contain_text("2 of 6 memories, 1 links shown")
    page.locator("#graph-types input[value=convention]").check()
    page.locator("#graph-states input[value=archived]").check()

    page.fill("#graph-tag", "ops")
    page.press("#graph-tag", "Enter")
    assert shown(page) == 2
    assert sorted(page.evaluate("gitmemGraph.visible()")) == sorted([seeded["ansible"], seeded["playbooks"]])
    page.click("#graph-tag-chips [data-tag=ops]")
    assert shown(page) == 6
    assert problems == []


@needs_browser
def test_a_search_lights_its_hits_and_the_light_spreads_along_the_links(
        page: Page, seeded: dict[str, str], problems: list[str]) -> None:
    open_graph(page)
    page.fill("#graph-q", "ansible")
    page.click("#graph-search button")
    expect(page.locator("#graph-hits li")).to_have_count(1)
    expect(page.locator("#graph-hit-count")).to_contain_text("1 memory matches")
    expect(page.locator("#graph-app")).to_have_attribute("data-spread", "3")
    lit = page.evaluate("gitmemGraph.lit()")
    assert lit == {seeded["ansible"]: 0, seeded["playbooks"]: 1, seeded["days"]: 2}

    # A filter that hides the middle of the chain stops the spread there.
    page.locator("#graph-types input[value=fact]").uncheck()
    expect(page.locator("#graph-app")).to_have_attribute("data-spread", "3")
    assert page.evaluate("gitmemGraph.lit()") == {seeded["ansible"]: 0}

    page.fill("#graph-q", "nothing like this")
    page.click("#graph-search button")
    expect(page.locator("#graph-hit-count")).to_have_text("Nothing matches.")
    assert problems == []


@needs_browser
def test_hovering_shows_the_text_as_text_and_a_click_opens_the_memory(
        page: Page, seeded: dict[str, str], problems: list[str]) -> None:
    open_graph(page)
    node = seeded["hostile"]
    # Zoom onto the node so that no other lies under the pointer, and wait until sigma drew that
    # view (hover is found in what it drew last; a layout step may have moved the node since the
    # last frame, so sigma reads the positions first), then hover it.
    at = page.evaluate(f"""async () => {{
        const s = gitmemGraph.sigma;
        const drawn = () => new Promise((resolve) => s.once("afterRender", () => requestAnimationFrame(resolve)));
        s.refresh();
        const d = s.getNodeDisplayData('{node}');
        const done = drawn();
        s.getCamera().setState({{x: d.x, y: d.y, ratio: 0.05}});
        await done;
        return s.framedGraphToViewport(s.getNodeDisplayData('{node}'));
    }}""")
    box = page.locator("#graph-canvas").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + at["x"] - 40, box["y"] + at["y"] - 40)
    page.mouse.move(box["x"] + at["x"], box["y"] + at["y"], steps=5)
    tip = page.locator("#graph-tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("<script>window.pwned = 1</script>")
    expect(tip).to_contain_text("convention · active")
    assert tip.locator("script, img").count() == 0
    assert page.evaluate("typeof window.pwned") == "undefined"

    page.mouse.click(box["x"] + at["x"], box["y"] + at["y"])
    detail = page.locator("#graph-detail")
    expect(detail).to_be_visible()
    detail.locator("a.graph-open").click()
    expect(page).to_have_url(f"{page.url.split('/ns/')[0]}/ns/default/memories/{node}")
    assert problems == []


@needs_browser
def test_the_exported_file_works_offline_and_asks_for_nothing(
        browser: Browser, svc: MemoryService, seeded: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "graph.html"
    path.write_text(svc.export("default", "graph"), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    requests: list[str] = []
    problems: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        page.goto(path.as_uri())
        expect(page.locator("#graph-app")).to_have_attribute("data-ready", "1", timeout=20_000)
        # The layout's worker ran (a blob: script the policy allows) and moved the nodes.
        expect(page.locator("#graph-app")).to_have_attribute("data-layout", "done", timeout=30_000)
        assert shown(page) == 6
        page.fill("#graph-q", "deploy")
        page.press("#graph-q", "Enter")
        expect(page.locator("#graph-hits li")).to_have_count(2)
        assert page.locator("#graph-detail a").count() == 0  # no server to link to
        assert [u for u in requests if not u.startswith(("file:", "blob:", "data:"))] == []
        assert problems == []
    finally:
        context.close()



@needs_browser
def test_an_empty_namespace_says_so(browser: Browser, svc: MemoryService, tmp_path: Path) -> None:
    path = tmp_path / "graph.html"
    path.write_text(svc.export("default", "graph"), encoding="utf-8")
    page = browser.new_page()
    try:
        page.goto(path.as_uri())
        expect(page.locator("#graph-app")).to_have_attribute("data-ready", "1", timeout=20_000)
        expect(page.locator(".graph-empty")).to_have_text(
            "No memories in default yet. What gitmem remembers shows up here.")
        expect(page.locator("#graph-layout")).to_be_hidden()
    finally:
        page.close()
