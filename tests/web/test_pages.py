"""The pages in a real headless Chromium (Debian's), plus what they render and decide through the test client.

Signing in and out, and CSRF: ``test_sign_in.py``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from gitmem import concepts
from gitmem.repo import Change
from gitmem.service import MemoryService

from .conftest import Client, Keys
from .test_sign_in import signed_in

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
needs_browser = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                   reason="Debian's chromium is not installed (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:

    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
                  "--no-first-run", "--disable-component-update", "--disable-sync"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser, live_server: str, keys: Keys) -> Iterator[Page]:
    """A browser page signed in with the reviewer key."""
    context = browser.new_context(base_url=live_server)
    page = context.new_page()
    page.goto("/ns/default/")
    assert "/login" in page.url
    page.fill("input[name=key]", keys.reviewer)
    page.click("button[type=submit]")
    yield page
    context.close()


@needs_browser
def test_dashboard_shows_counts_strongest_and_open_reviews(page: Page, svc: MemoryService,
                                                           remember: Callable[..., str]) -> None:
    mid = remember("Prefer small pull requests", type="preference")
    remember("We deploy with Ansible", type="decision")
    number = svc.feedback("default", mid, "amend", actor="sam", text="Prefer small, focused pull requests").review
    page.goto("/ns/default/")
    expect(page.locator("#by-state")).to_contain_text("active")
    expect(page.locator("#by-type")).to_contain_text("decision")
    expect(page.locator("#strongest")).to_contain_text("Prefer small pull requests")
    expect(page.locator("#open-reviews")).to_contain_text(f"#{number}")


@needs_browser
def test_script_in_a_memory_renders_as_text(page: Page, remember: Callable[..., str]) -> None:
    text = ('Beware <script>window.pwned = 1</script> and <img src=x onerror="window.pwned = 2"> '
            'and [a link](javascript:window.pwned=3) in **bold**')
    mid = remember(text, title="Hostile memory")
    page.goto(f"/ns/default/memories/{mid}")
    body = page.locator("#memory-text")
    expect(body).to_contain_text("<script>window.pwned = 1</script>")
    expect(body).to_contain_text('<img src=x onerror="window.pwned = 2">')
    assert body.locator("script").count() == 0 and body.locator("img").count() == 0
    assert body.locator("strong").inner_text() == "bold"
    for link in body.locator("a").all():
        assert not (link.get_attribute("href") or "").startswith("javascript:")
    assert page.evaluate("typeof window.pwned") == "undefined"



@needs_browser
def test_revert_from_a_memory_page(page: Page, svc: MemoryService, remember: Callable[..., str]) -> None:
    mid = remember("The API listens on port 8080")
    svc.amend("default", mid, text="The API listens on port 9090", actor="sam")
    svc.feedback("default", mid, "confirm", actor="zoe")
    page.goto(f"/ns/default/memories/{mid}")
    expect(page.locator("#memory-text")).to_contain_text("9090")
    rows = page.locator("#history tbody tr")
    expect(rows.first).to_have_attribute("data-action", "confirm")
    expect(rows.first.locator("text=Revert…")).to_have_count(0)  # a confirmation has nothing to revert
    amend = page.locator("#history tbody tr[data-action=amend]")
    expect(amend.locator("del")).to_have_text(["8080"])
    expect(amend.locator("ins")).to_have_text(["9090"])
    amend.locator("text=Revert…").click()
    # A preview first: nothing changes until it is confirmed.
    expect(page.locator("#revert-preview del")).to_have_text(["9090"])
    expect(page.locator("#revert-preview ins")).to_have_text(["8080"])
    assert svc.show("default", mid).text == "The API listens on port 9090"
    page.click("#confirm-revert")
    expect(page.locator("#memory-text")).to_contain_text("8080")
    assert svc.show("default", mid).text == "The API listens on port 8080"


@needs_browser
def test_restore_a_version_from_the_history(page: Page, svc: MemoryService, remember: Callable[..., str]) -> None:
    mid = remember("Deploys need two approvals")
    svc.amend("default", mid, text="Deploys need one approval", actor="sam")
    svc.amend("default", mid, text="Deploys need no approval", actor="sam")
    page.goto(f"/ns/default/memories/{mid}")
    first = page.locator("#history tbody tr").last
    first.locator("a code").click()  # the commit's own page
    expect(page.locator("#commit-changes")).to_contain_text("Deploys need two approvals")
    page.go_back()
    page.locator("#history tbody tr").last.locator("button", has_text="Restore").click()
    expect(page.locator("#memory-text")).to_contain_text("Deploys need two approvals")
    assert svc.show("default", mid).text == "Deploys need two approvals"


@needs_browser
def test_discuss_a_memory_from_its_page(page: Page, svc: MemoryService, remember: Callable[..., str]) -> None:
    mid = remember("Releases go out on Tuesdays")
    page.goto(f"/ns/default/memories/{mid}")
    expect(page.locator("#discussion")).to_contain_text("No discussion yet.")
    page.fill("#discussion ~ form textarea[name=text]", "Not in December, though")
    page.click("button[value=discuss]")
    expect(page.locator("#discussion")).to_contain_text("Not in December, though")
    assert [c.text for c in svc.discussion("default", mid)] == ["Not in December, though"]
    assert svc.show("default", mid).text == "Releases go out on Tuesdays"


# --- without a browser: review decisions and what pages render -----------------------------------------




def test_images_in_memories_are_links_and_never_load(client: Client, keys: Keys, svc: MemoryService,
                                                     remember: Callable[..., str]) -> None:
    mid = remember("Our dashboard ![tracking pixel](https://evil.example/p.gif) and "
                   "[![build badge](https://ci.example/badge.svg)](https://ci.example/) and ![](//evil.example/x.png)",
                   title="Dashboard")
    svc.feedback("default", mid, "discuss", actor="sam", text="Also ![pixel](http://evil.example/c.gif)")
    signed_in(client, keys.reader)
    page = client.get(f"/ns/default/memories/{mid}").get_data(as_text=True)
    assert "<img" not in page
    assert '<a href="https://evil.example/p.gif" class="image">tracking pixel</a>' in page
    assert '<a href="https://ci.example/">build badge</a>' in page
    assert '<a href="//evil.example/x.png" class="image">//evil.example/x.png</a>' in page
    assert '<a href="http://evil.example/c.gif" class="image">pixel</a>' in page


def test_a_review_page_in_other_digits_is_refused(client: Client, keys: Keys, svc: MemoryService,
                                                  remember: Callable[..., str]) -> None:
    for n in range(3):
        mid = remember(f"Release train {n}")
        svc.feedback("default", mid, "amend", actor="sam", text=f"Release train {n}, weekly")
    signed_in(client, keys.reader)
    assert client.get("/ns/default/reviews/3").status_code == 200
    page = client.get("/ns/default/reviews/\u0663")  # Arabic-Indic three
    assert page.status_code == 400 and "is not a review number" in page.get_data(as_text=True)


# --- reviews: helpers for tests/web/test_review_page.py ------------------------------------------------


def amend_review(svc: MemoryService, remember: Callable[..., str], pairs: list[tuple[str, str]],
                 title: str = "Bump runtimes") -> tuple[int, list[str]]:
    """A review with one amendment commit per (old text, new text); its number and the memory ids."""
    ids, changes = [], []
    for old_text, new_text in pairs:
        mid = remember(old_text)
        old = svc.show("default", mid)
        new = old.replace(text=new_text, title=concepts.title_from(new_text),
                          description=concepts.description_from(new_text))
        changes.append(Change({old.path: concepts.render(new)}, f"amend: {old.title}", "amend", (mid,), None, "sam",
                              body="bump"))
        ids.append(mid)
    return svc.reviews.propose("default", changes, title=title, author="sam", kind="amend").number, ids


RUNTIMES = [("Python 3.11 is the floor", "Python 3.12 is the floor"),
            ("Node 20 for the frontend", "Node 22 for the frontend"),
            ("Postgres 15 in production", "Postgres 16 in production")]




def test_a_merged_away_memory_redirects_and_the_api_points(client: Client, keys: Keys, svc: MemoryService,
                                                           remember: Callable[..., str]) -> None:
    ids = [remember(t, source="agent") for t in ("the deploy script needs the staging token set",
                                                 "the deploy script needs the staging token and the region set")]
    result = svc.consolidate("default")
    assert result.review is not None
    svc.reviews.approve("default", result.review, actor="alice")
    [commit] = svc.reviews.diff("default", result.review)
    assert commit.result is not None
    signed_in(client, keys.reader)
    page = client.get(f"/ns/default/memories/{ids[0]}")
    assert page.status_code == 302 and page.headers["Location"].endswith(f"/memories/{commit.result}")
    api = client.get(f"/api/v1/namespaces/default/memories/{ids[0]}", headers=keys.auth("reader"))
    assert api.status_code == 404 and f"was merged into {commit.result}" in api.json["error"]["message"]




def test_search_shows_a_snippet_and_the_tags(client: Client, keys: Keys, remember: Callable[..., str]) -> None:
    remember("Releases go out on Tuesdays after the change advisory board meets", tags=["release", "process"])
    signed_in(client, keys.reader)
    page = client.get("/ns/default/search?q=releases").get_data(as_text=True)
    assert 'class="snippet">Releases go out on Tuesdays after the change advisory board meets<' in page
    assert '<span class="tag">release</span><span class="tag">process</span>' in page


def test_times_read_as_a_person_says_them() -> None:
    from datetime import UTC, datetime, timedelta

    from gitmem.web.pages import human_time

    at = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    assert human_time(at - timedelta(seconds=20), at) == "just now"
    assert human_time(at - timedelta(minutes=1), at) == "1 minute ago"
    assert human_time(at - timedelta(hours=5), at) == "5 hours ago"
    assert human_time(at - timedelta(days=1, hours=2), at) == "yesterday"
    assert human_time(at - timedelta(days=3), at) == "3 days ago"
    assert human_time(datetime(2025, 3, 3, 9, 0), at) == "3 Mar 2025"
    assert human_time((at - timedelta(minutes=5)).timestamp(), at) == "5 minutes ago"


@needs_browser
def test_a_techchoice_page_shows_its_options_and_choices(page: Page, svc: MemoryService, tmp_path: Path) -> None:
    options = [{"name": "pnpm", "pros": ["fast installs"], "cons": ["<b>fewer</b> users"]},
               {"name": "npm", "pros": ["ships with node"], "cons": ["slow"]}]
    made = svc.remember("default", "Package manager for the web app", type="techchoice", options=options,
                        active="pnpm", reason="disk space", author="alice").memory
    assert made is not None
    svc.choose("default", made.id, "npm", reason="the CI image only has npm", actor="bob")
    page.goto(f"/ns/default/memories/{made.id}")
    rows = page.locator("#options tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(1)).to_contain_text("<b>fewer</b> users")  # escaped, shown as text
    expect(page.locator("#options tr.active")).to_contain_text("npm (active)")
    expect(page.locator("#choices li")).to_have_count(2)
    expect(page.locator("#choices li").nth(1)).to_contain_text("by bob: the CI image only has npm")
    expect(page.locator("body")).to_contain_text("active pnpm → npm; choices +npm (the CI image only has npm)")
    page.screenshot(path=str(tmp_path / "techchoice.png"), full_page=True)


def test_a_techchoice_page_shows_the_columns_its_options_fill(client: Client, keys: Keys, svc: MemoryService) -> None:
    options = [{"name": "React 18 + Vite", "description": "the team knows it", "config": "vite.config.ts"},
               {"name": "Vue 3", "description": "quick to learn", "status": "candidate"}]
    made = svc.remember("default", "Frontend framework", type="techchoice", options=options,
                        active="React 18 + Vite").memory
    assert made is not None
    signed_in(client, keys.reader)
    html = client.get(f"/ns/default/memories/{made.id}").get_data(as_text=True)
    header = html.split('<table class="meta options" id="options">')[1].split("</tr>")[0]
    assert header.split() == ["<tr><th>Option</th><th>Description</th><th>Configuration</th><th>Status</th>"]
    assert "<td>the team knows it</td><td>vite.config.ts</td><td>—</td>" in html
    assert "<td>quick to learn</td><td>—</td><td>candidate</td>" in html
