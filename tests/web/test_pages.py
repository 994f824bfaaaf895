"""The pages in a real headless Chromium (Debian's), plus CSRF checks through the test client."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from gitmem import concepts
from gitmem.repo import Change
from gitmem.service import MemoryService

from .conftest import Client, Keys

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
def test_approve_a_review_in_the_browser(page: Page, svc: MemoryService,
                                         remember: Callable[..., str]) -> None:
    mid = remember("Format with black")
    number = svc.feedback("default", mid, "amend", actor="sam", text="Format with ruff format").review
    page.goto("/ns/default/reviews")
    page.click("text=Amend")
    expect(page).to_have_url(re.compile(rf"/ns/default/reviews/{number}$"))
    diff = page.locator("pre.diff")
    expect(diff.locator("del", has_text=re.compile(r"^-Format with black$"))).to_have_count(1)
    expect(diff.locator("ins", has_text=re.compile(r"^\+Format with ruff format$"))).to_have_count(1)
    page.fill("textarea[name=text]", "Looks right to me")
    page.click("button[value=comment]")
    expect(page.locator("#comments")).to_contain_text("Looks right to me")
    page.click("#approve")
    expect(page.locator("#review-status")).to_have_text("merged")
    assert svc.show("default", mid).text == "Format with ruff format"


@needs_browser
def test_revert_from_a_memory_page(page: Page, svc: MemoryService, remember: Callable[..., str]) -> None:
    mid = remember("The API listens on port 8080")
    svc.amend("default", mid, text="The API listens on port 9090", actor="sam")
    page.goto(f"/ns/default/memories/{mid}")
    expect(page.locator("#memory-text")).to_contain_text("9090")
    page.locator("#history tbody tr").first.locator("button").click()
    expect(page.locator("#memory-text")).to_contain_text("8080")
    assert svc.show("default", mid).text == "The API listens on port 8080"


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


# --- without a browser: sign-in and cross-site protection -------------------------------------------


def signed_in(client: Client, key: str) -> str:
    """Sign in through the form; returns the session's CSRF token."""
    form = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token is not None
    response = client.post("/login", data={"key": key, "csrf_token": token.group(1), "next": "/"})
    assert response.status_code == 303
    page = client.get("/ns/default/").get_data(as_text=True)
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


def test_pages_need_sign_in(client: Client) -> None:
    response = client.get("/ns/default/")
    assert response.status_code == 302 and "/login" in response.headers["Location"]


def test_wrong_key_does_not_sign_in(client: Client) -> None:
    form = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token is not None
    response = client.post("/login", data={"key": "gmk_000000000000_xxxxxxxxxxxxxxxxxxxxxxxx",
                                           "csrf_token": token.group(1)})
    assert response.status_code == 401 and "not valid" in response.get_data(as_text=True)
    assert client.get("/ns/default/").status_code == 302


def test_form_posts_without_the_csrf_token_change_nothing(client: Client, keys: Keys, svc: MemoryService,
                                                         remember: Callable[..., str]) -> None:
    mid = remember("Keep secrets in the vault")
    token = signed_in(client, keys.reviewer)
    before = svc.status("default")["head"]
    url = f"/ns/default/memories/{mid}/feedback"
    missing = client.post(url, data={"action": "reject"})
    forged = client.post(url, data={"action": "reject", "csrf_token": "guess"})
    cross = client.post(url, data={"action": "reject", "csrf_token": token},
                        headers={"Origin": "https://evil.example"})
    assert missing.status_code == forged.status_code == cross.status_code == 403
    assert svc.status("default")["head"] == before
    ok = client.post(url, data={"action": "reject", "csrf_token": token, "text": "moved to env vars"})
    assert ok.status_code == 303
    assert svc.show("default", mid).state == "archived"


def test_a_reader_sees_no_write_buttons_and_cannot_post(client: Client, keys: Keys, svc: MemoryService,
                                                        remember: Callable[..., str]) -> None:
    mid = remember("CI runs on every push")
    token = signed_in(client, keys.reader)
    page = client.get(f"/ns/default/memories/{mid}").get_data(as_text=True)
    assert "Confirm" not in page and "Revert" not in page
    before = svc.status("default")["head"]
    refused = client.post(f"/ns/default/memories/{mid}/feedback", data={"action": "confirm", "csrf_token": token})
    assert refused.status_code == 403
    assert svc.status("default")["head"] == before


def test_revoked_key_signs_the_session_out(client: Client, keys: Keys, svc: MemoryService) -> None:
    from gitmem.repo import KeyStore

    signed_in(client, keys.reader)
    store = KeyStore(svc.settings.home)
    [reader] = [k for k in store.list() if k.name == "reader"]
    store.revoke(reader.id)
    response = client.get("/ns/default/")
    assert response.status_code == 302 and "/login" in response.headers["Location"]


def test_approve_selected_commits_only(client: Client, keys: Keys, svc: MemoryService,
                                      remember: Callable[..., str]) -> None:
    first, second = remember("Python 3.11 is the floor"), remember("Node 20 for the frontend")
    changes = []
    for mid, text in ((first, "Python 3.12 is the floor"), (second, "Node 22 for the frontend")):
        old = svc.show("default", mid)
        new = old.replace(text=text, title=concepts.title_from(text), description=concepts.description_from(text))
        changes.append(Change({old.path: concepts.render(new)}, f"amend: {old.title}", "amend", (mid,), None, "sam",
                              body="bump"))
    review = svc.reviews.propose("default", changes, title="Bump runtimes", author="sam", kind="amend")
    commits = svc.reviews.diff("default", review.number)
    pick = next(c.id for c in commits if first in c.memory_ids)
    token = signed_in(client, keys.reviewer)
    page = client.get(f"/ns/default/reviews/{review.number}").get_data(as_text=True)
    assert "Bump runtimes" in page and page.count('name="commit"') == 2
    done = client.post(f"/ns/default/reviews/{review.number}",
                       data={"action": "approve", "commit": pick, "csrf_token": token})
    assert done.status_code == 303
    assert svc.show("default", first).text == "Python 3.12 is the floor"
    assert svc.show("default", second).text == "Node 20 for the frontend"


def test_side_by_side_diff_escapes_what_it_shows(client: Client, keys: Keys, svc: MemoryService,
                                                 remember: Callable[..., str]) -> None:
    mid = remember("Escape output in templates")
    number = svc.feedback("default", mid, "amend", actor="sam",
                          text="Escape output: never emit <script>alert(1)</script> raw").review
    signed_in(client, keys.reader)
    page = client.get(f"/ns/default/reviews/{number}?view=split").get_data(as_text=True)
    page = page.replace("&nbsp;", " ")
    assert 'class="diff"' in page and "before" in page and "after" in page
    assert "Escape output in templates" in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


# Targets a browser would take to another site: it drops tabs and line breaks, trims spaces and
# reads a backslash as a slash.
OFFSITE = ["/\t/evil.example/x", "/\n/evil.example", "/\r\n/evil.example", "/\\evil.example",
           "/\\/evil.example", "\\\\evil.example", "//evil.example", " //evil.example",
           "/ /evil.example", "https://evil.example/", "javascript:alert(1)", "/\x00/evil.example",
           "/\u2028/evil.example", "/\u200b/evil.example", "evil.example"]


@pytest.mark.parametrize("target", OFFSITE)
def test_sign_in_never_redirects_to_another_site(client: Client, keys: Keys, target: str) -> None:
    form = client.get("/login", query_string={"next": target}).get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token is not None
    assert 'name="next" value="/"' in form
    response = client.post("/login", data={"key": keys.reader, "csrf_token": token.group(1), "next": target})
    assert response.status_code == 303
    assert response.headers["Location"] == "/"


def test_sign_in_with_a_tab_in_next_over_http(live_server: str, keys: Keys) -> None:
    # The report: /login?next=/%09/evil.example/x answered "Location: //evil.example/x".
    with httpx.Client(base_url=live_server) as http:
        form = http.get("/login?next=/%09/evil.example/x").text
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert token is not None
        response = http.post("/login?next=/%09/evil.example/x",
                             data={"key": keys.reader, "csrf_token": token.group(1)})
    assert response.status_code == 303
    assert response.headers["Location"] == "/"


def test_sign_in_returns_to_a_page_of_this_site(client: Client, keys: Keys) -> None:
    form = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token is not None
    target = "/ns/default/search?q=deploy&path=src/app.py"
    response = client.post("/login", data={"key": keys.reader, "csrf_token": token.group(1), "next": target})
    assert response.headers["Location"] == target


@pytest.mark.parametrize("target", OFFSITE[:6])
def test_revert_form_never_redirects_to_another_site(client: Client, keys: Keys, svc: MemoryService,
                                                     remember: Callable[..., str], target: str) -> None:
    remember("Tabs, not spaces")
    commit = svc.log("default", limit=1)[0].id
    token = signed_in(client, keys.reviewer)
    response = client.post(f"/ns/default/commits/{commit}/revert", data={"csrf_token": token, "back": target})
    assert response.status_code == 303
    assert response.headers["Location"] == "/ns/default/"
    assert svc.log("default", limit=1)[0].action == "revert"


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
def test_logout_ends_the_session(client: Client, keys: Keys, svc: MemoryService,
                                 remember: Callable[..., str]) -> None:
    mid = remember("Sessions end on sign-out")
    token = signed_in(client, keys.writer)
    forged = client.post("/logout", data={"csrf_token": "guess"})
    assert forged.status_code == 403
    assert client.get("/ns/default/").status_code == 200, "a forged sign-out changes nothing"

    out = client.post("/logout", data={"csrf_token": token})
    assert out.status_code == 303 and out.headers["Location"] == "/login"
    again = client.get("/ns/default/")
    assert again.status_code == 302 and "/login" in again.headers["Location"]
    before = svc.status("default")["head"]
    stale = client.post(f"/ns/default/memories/{mid}/feedback", data={"action": "confirm", "csrf_token": token})
    assert stale.status_code == 403, "the old form token went with the session"
    assert svc.status("default")["head"] == before
