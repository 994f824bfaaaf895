"""The pages in a real headless Chromium (Debian's), plus what they render and decide through the test client.

Signing in and out, and CSRF: ``test_sign_in.py``.
"""

from __future__ import annotations

import re
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
def test_approve_a_review_in_the_browser(page: Page, svc: MemoryService,
                                         remember: Callable[..., str]) -> None:
    mid = remember("Format with black")
    number = svc.feedback("default", mid, "amend", actor="sam", text="Format with ruff format").review
    page.goto("/ns/default/reviews")
    page.click("text=Amend")
    expect(page).to_have_url(re.compile(rf"/ns/default/reviews/{number}$"))
    words = page.locator(".memory-change .words")
    expect(words.locator("del")).to_have_text(["black"])
    expect(words.locator("ins")).to_have_text(["ruff format"])
    expect(page.locator(".fields")).to_have_count(0)  # the title follows the text: nothing else changed
    page.fill("textarea[name=text]", "Looks right to me")
    page.click("button[value=comment]")
    expect(page.locator("#comments")).to_contain_text("Looks right to me")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#approve")
    expect(page.locator("#review-status")).to_have_text("merged")
    assert svc.show("default", mid).text == "Format with ruff format"


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
                       data={"action": "approve-selected", "commit": pick, "csrf_token": token})
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
# --- reviews a person can decide from (issue 11) -----------------------------------------------------


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


@needs_browser
def test_enter_in_the_reject_box_does_not_approve(page: Page, svc: MemoryService,
                                                  remember: Callable[..., str]) -> None:
    number, ids = amend_review(svc, remember, RUNTIMES[:2])
    head = svc.head("default")
    page.goto(f"/ns/default/reviews/{number}")
    reason = page.locator("#reject-form input[name=reason]")
    reason.focus()
    page.keyboard.press("Enter")  # empty: the browser asks for a reason, nothing is sent
    page.reload()
    expect(page.locator("#review-status")).to_have_text("open")
    reason = page.locator("#reject-form input[name=reason]")
    reason.fill("Node 22 is not approved by ops yet")
    reason.press("Enter")
    expect(page.locator("#review-status")).to_have_text("rejected")
    expect(page.locator("#comments")).to_contain_text("Node 22 is not approved by ops yet")
    assert svc.head("default") == head
    assert svc.show("default", ids[0]).text == RUNTIMES[0][0]


@needs_browser
def test_partial_approval_leaves_the_rest_decidable(page: Page, svc: MemoryService,
                                                    remember: Callable[..., str]) -> None:
    number, ids = amend_review(svc, remember, RUNTIMES)
    page.goto(f"/ns/default/reviews/{number}")
    expect(page.locator("#approve")).to_have_text("Approve all (3)")
    page.locator("input[name=commit]").first.check()
    expect(page.locator("#selected-count")).to_have_text("1")
    page.click("#approve-selected")
    expect(page.locator("#review-status")).to_have_text("open")
    expect(page.locator("#progress")).to_contain_text("merged 1 of 3 · 2 open")
    expect(page.locator(".commit .badge[data-state]")).to_have_text(["merged", "open", "open"])
    expect(page.locator("input[name=commit]")).to_have_count(2)
    assert svc.show("default", ids[0]).text == RUNTIMES[0][1]
    assert svc.show("default", ids[1]).text == RUNTIMES[1][0]
    messages: list[str] = []
    page.once("dialog", lambda dialog: (messages.append(dialog.message), dialog.accept()))
    page.click("#approve")
    expect(page.locator("#review-status")).to_have_text("merged")
    assert messages == [f"Merge all 2 open commits of review #{number} into main?"]
    expect(page.locator("#progress")).to_contain_text("merged 3 of 3")
    assert [svc.show("default", i).text for i in ids] == [new for _, new in RUNTIMES]


@needs_browser
def test_dismissing_the_confirmation_merges_nothing(page: Page, svc: MemoryService,
                                                    remember: Callable[..., str]) -> None:
    number, _ = amend_review(svc, remember, RUNTIMES[:2])
    head = svc.head("default")
    page.goto(f"/ns/default/reviews/{number}")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("#approve")
    expect(page.locator("#review-status")).to_have_text("open")
    assert svc.head("default") == head


@needs_browser
def test_a_confirm_does_not_make_a_review_stale_but_an_amend_does_for_that_commit(
        page: Page, svc: MemoryService, remember: Callable[..., str]) -> None:
    number, ids = amend_review(svc, remember, RUNTIMES[:2])
    page.goto(f"/ns/default/memories/{ids[0]}")
    expect(page.locator("#in-review")).to_contain_text(f"#{number}")
    page.click("button[value=confirm]")
    expect(page.locator(".flash.ok")).to_contain_text("Confirmed")
    page.goto(f"/ns/default/reviews/{number}")
    expect(page.locator(".commit .badge[data-state]")).to_have_text(["open", "open"])
    svc.amend("default", ids[0], text="Python 3.13 is the floor", actor="sam")
    page.reload()
    expect(page.locator(".commit .badge[data-state]")).to_have_text(["stale", "open"])
    expect(page.locator(".stale-reason")).to_contain_text("main changed the text of")
    expect(page.locator("#approve")).to_have_text("Approve all (1)")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#approve")
    expect(page.locator("#progress")).to_contain_text("merged 1 of 2")
    expect(page.locator(".flash.error")).to_have_count(0)
    expect(page.locator(".flash.ok")).to_have_text("Merged 1 of 2 commits. 1 no longer applies: see below.")
    assert svc.show("default", ids[0]).text == "Python 3.13 is the floor"
    assert svc.show("default", ids[1]).text == RUNTIMES[1][1]
    assert svc.show("default", ids[0]).verified == ("reviewer",)


@needs_browser
def test_a_stale_commit_picked_explains_once_without_a_class_name(
        page: Page, svc: MemoryService, remember: Callable[..., str]) -> None:
    number, ids = amend_review(svc, remember, RUNTIMES[:2])
    page.goto(f"/ns/default/reviews/{number}")
    svc.amend("default", ids[0], text="Python 3.13 is the floor", actor="sam")
    page.locator("input[name=commit]").first.check()
    page.click("#approve-selected")
    flash = page.locator(".flash.error")
    expect(flash).to_have_count(1)  # once; the page's note on what is stale is not an error message
    expect(page.locator("#stale-note")).to_contain_text("1 commit no longer applies")
    assert "StaleReview" not in flash.inner_text() and "is stale: main changed the text of" in flash.inner_text()
    assert svc.show("default", ids[1]).text == RUNTIMES[1][0]


@needs_browser
def test_the_review_list_and_page_fit_a_phone(browser: Browser, live_server: str, keys: Keys, svc: MemoryService,
                                             remember: Callable[..., str], tmp_path: Path) -> None:
    for k in range(3):
        amend_review(svc, remember, [(f"Service {k} answers within two hundred milliseconds at p99 under load",
                                      f"Service {k} answers within 150 ms at p99 under peak load")],
                     title=f"Tighten the latency budget of service number {k} in every region we deploy to")
    context = browser.new_context(base_url=live_server, viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto("/login")
    page.fill("input[name=key]", keys.reviewer)
    page.click("button[type=submit]")
    for url in ("/ns/default/reviews", "/ns/default/reviews/1"):
        page.goto(url)
        sideways = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert sideways <= 0, f"{url} scrolls sideways by {sideways} px at 390 px"
        page.screenshot(path=str(tmp_path / f"{url.strip('/').replace('/', '-')}.png"), full_page=True)
    expect(page.locator("#nav-reviews .count")).to_have_text("3")
    context.close()


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


def test_a_stale_consolidation_review_offers_a_rerun_and_can_still_be_rejected(
        client: Client, keys: Keys, svc: MemoryService, remember: Callable[..., str]) -> None:
    ids = [remember(t, source="agent") for t in ("the deploy script needs the staging token set",
                                                 "the deploy script needs the staging token and the region set")]
    result = svc.consolidate("default")
    assert result.review is not None
    svc.amend("default", ids[0], text="the deploy script reads the token from the vault", actor="sam")
    token = signed_in(client, keys.reviewer)
    url = f"/ns/default/reviews/{result.review}"
    page = client.get(url).get_data(as_text=True)
    # Main overtook its one commit: nothing to approve, a re-run offered, the record still open.
    assert 'id="review-status">open<' in page and 'id="rerun"' in page and 'id="approve"' not in page
    stale = client.post(url, data={"action": "approve", "expected": "1", "csrf_token": token})
    assert stale.status_code == 303
    page = client.get(url).get_data(as_text=True)
    assert 'id="review-status">stale<' in page and 'id="rerun"' in page
    assert page.count("is stale: main changed the text of") == 1 and "StaleReview" not in page
    missing = client.post(url, data={"action": "reject", "reason": "", "csrf_token": token})
    assert missing.status_code == 303
    assert "a reason is required" in client.get(url).get_data(as_text=True)
    assert svc.reviews.get("default", result.review).status == "stale"
    done = client.post(url, data={"action": "reject", "reason": "superseded by the vault", "csrf_token": token})
    assert done.status_code == 303 and svc.reviews.get("default", result.review).status == "rejected"


def test_rerun_marks_an_overtaken_review_stale_and_queues_a_run(
        client: Client, keys: Keys, svc: MemoryService, remember: Callable[..., str]) -> None:
    ids = [remember(t, source="agent") for t in ("the deploy script needs the staging token set",
                                                 "the deploy script needs the staging token and the region set")]
    result = svc.consolidate("default")
    assert result.review is not None
    svc.amend("default", ids[0], text="the deploy script reads the token from the vault", actor="sam")
    token = signed_in(client, keys.reviewer)
    url = f"/ns/default/reviews/{result.review}"
    done = client.post(url, data={"action": "rerun", "csrf_token": token})
    assert done.status_code == 303
    assert svc.reviews.get("default", result.review).status == "stale"
    assert "Consolidation queued (task " in client.get(url).get_data(as_text=True)


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
