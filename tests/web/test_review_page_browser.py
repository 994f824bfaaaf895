"""The review page a person can finish, in a real Chromium: keys, confirmations, Back, stale commits, a phone."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from gitmem.service import MemoryService

from .conftest import Keys
from .test_pages import RUNTIMES, amend_review, browser, needs_browser, page  # noqa: F401 (fixtures)
from .test_review_page import mixed_review


@needs_browser
def test_approve_a_review_in_the_browser(page: Page, svc: MemoryService,  # noqa: F811
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
    page.fill("#comments ~ form textarea[name=text]", "Looks right to me")
    page.click("button[value=comment]")
    expect(page.locator("#comments")).to_contain_text("Looks right to me")
    messages: list[str] = []
    page.once("dialog", lambda dialog: (messages.append(dialog.message), dialog.accept()))
    page.click("#approve")
    expect(page.locator("#review-status")).to_have_text("merged")
    assert messages == [f"Merge 1 commit of review #{number} into main?"]
    assert svc.show("default", mid).text == "Format with ruff format"


@needs_browser
def test_from_the_top_two_keys_decide_the_next_commit(page: Page, svc: MemoryService,  # noqa: F811
                                                      remember: Callable[..., str]) -> None:
    number, ids = amend_review(svc, remember, RUNTIMES)
    page.goto(f"/ns/default/reviews/{number}")
    page.keyboard.press("n")  # next undecided: its Approve button has the focus
    expect(page.locator(".commit.open .approve-one").first).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(".flash.ok")).to_contain_text("Merged")
    assert svc.show("default", ids[0]).text == RUNTIMES[0][1]
    # It lands at the next undecided commit, its Approve focused: Enter again decides it, s skips.
    expect(page.locator(f"#commit-{svc.reviews.diff('default', number)[1].id[:10]} .approve-one")).to_be_focused()
    page.keyboard.press("s")
    expect(page.locator(".flash.ok")).to_contain_text("Skipped")
    assert svc.reviews.get("default", number).state_of(svc.reviews.diff("default", number)[1].id) == "skipped"
    assert svc.show("default", ids[1]).text == RUNTIMES[1][0]


@needs_browser
def test_boxes_ticked_on_an_older_page_never_decide(page: Page, svc: MemoryService,  # noqa: F811
                                                   remember: Callable[..., str]) -> None:
    number, ids = amend_review(svc, remember, RUNTIMES)
    url = f"/ns/default/reviews/{number}"
    older = page.context.new_page()  # the same review in another tab, opened first
    older.goto(url)
    page.goto(url)
    page.locator("input[type=checkbox][name=commit]").first.check()
    expect(page.locator("#approve-selected .count")).to_have_text("1")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#approve-selected")
    expect(page.locator("#review-status")).to_have_text("open (1 of 3 merged)")
    # Back shows the review as it is now: nothing ticked, nothing counted.
    page.go_back()
    expect(page.locator("#review-status")).to_have_text("open (1 of 3 merged)")
    expect(page.locator("input[type=checkbox][name=commit]:checked")).to_have_count(0)
    expect(page.locator("#approve-selected .count")).to_have_text("0")
    # The other tab still shows the review before that decision: what it ticks decides nothing.
    older.locator("input[type=checkbox][name=commit]").nth(1).check()
    older.once("dialog", lambda dialog: dialog.accept())
    older.click("#approve-selected")
    expect(older.locator(".flash.error")).to_contain_text("changed since you looked at it")
    assert [svc.show("default", i).text for i in ids] == [RUNTIMES[0][1], RUNTIMES[1][0], RUNTIMES[2][0]]


@needs_browser
def test_enter_in_a_reason_box_decides_nothing(page: Page, svc: MemoryService,  # noqa: F811
                                               remember: Callable[..., str]) -> None:
    number, ids = amend_review(svc, remember, RUNTIMES[:2])
    head = svc.head("default")
    page.goto(f"/ns/default/reviews/{number}")
    reason = page.locator("#reason")
    reason.fill("Node 22 is not approved by ops yet")
    reason.press("Enter")  # a new line, not a submission
    expect(page.locator("#review-status")).to_have_text("open")
    assert svc.reviews.get("default", number).commit_states == {} and svc.head("default") == head
    messages: list[str] = []
    page.once("dialog", lambda dialog: (messages.append(dialog.message), dialog.accept()))
    page.click("#reject")
    expect(page.locator("#review-status")).to_have_text("rejected")
    assert messages == [f"Reject the other 2 commits of review #{number}?"]
    expect(page.locator("#comments")).to_contain_text("Node 22 is not approved by ops yet")
    assert svc.head("default") == head
    mid = remember("Deploys happen on Tuesdays")
    page.goto(f"/ns/default/memories/{mid}")
    page.locator("#reject-memory textarea").press("Enter")
    page.locator("#reject-memory textarea").press("Enter")
    page.wait_for_timeout(200)  # a form would have navigated by now
    assert svc.show("default", mid).state == "active"


@needs_browser
def test_a_confirm_does_not_make_a_review_stale_but_an_amend_does_for_that_commit(
        page: Page, svc: MemoryService, remember: Callable[..., str]) -> None:  # noqa: F811
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
    expect(page.locator(".flash.ok")).to_have_text(f"Merged 1 commit; review #{number} is partly merged (1 of 2). "
                                                   "1 no longer applies: see below.")
    assert svc.show("default", ids[0]).text == "Python 3.13 is the floor"
    assert svc.show("default", ids[1]).text == RUNTIMES[1][1]
    assert svc.show("default", ids[0]).verified == ("reviewer",)


@needs_browser
def test_dismissing_the_confirmation_decides_nothing(page: Page, svc: MemoryService,  # noqa: F811
                                                     remember: Callable[..., str]) -> None:
    number, _ = amend_review(svc, remember, RUNTIMES[:2])
    head = svc.head("default")
    page.goto(f"/ns/default/reviews/{number}")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("#approve")
    expect(page.locator("#review-status")).to_have_text("open")
    assert svc.head("default") == head


@needs_browser
def test_a_stale_commit_picked_explains_once_without_a_class_name(page: Page, svc: MemoryService,  # noqa: F811
                                                                  remember: Callable[..., str]) -> None:
    number, ids = amend_review(svc, remember, RUNTIMES[:2])
    page.goto(f"/ns/default/reviews/{number}")
    svc.amend("default", ids[0], text="Python 3.13 is the floor", actor="sam")
    page.locator(".approve-one").first.click()
    flash = page.locator(".flash.error")
    expect(flash).to_have_count(1)  # once; the page's note on what is stale is not an error message
    assert "changed since you looked at it" not in flash.inner_text()  # the amend is on main, not the review
    expect(page.locator("#stale-note")).to_contain_text("1 commit no longer applies")
    assert "StaleReview" not in flash.inner_text() and "is stale: main changed the text of" in flash.inner_text()
    assert svc.show("default", ids[1]).text == RUNTIMES[1][0]


@needs_browser
def test_the_review_list_and_page_fit_a_phone(browser: Browser, live_server: str, keys: Keys,  # noqa: F811
                                             svc: MemoryService, remember: Callable[..., str],
                                             tmp_path: Path) -> None:
    for k in range(3):
        amend_review(svc, remember, [(f"Service {k} answers within two hundred milliseconds at p99 under load",
                                      f"Service {k} answers within 150 ms at p99 under peak load")],
                     title=f"Tighten the latency budget of service number {k} in every region we deploy to")
    mixed_review(svc, remember)
    context = browser.new_context(base_url=live_server, viewport={"width": 390, "height": 844})
    phone = context.new_page()
    phone.goto("/login")
    phone.fill("input[name=key]", keys.reviewer)
    phone.click("button[type=submit]")
    for url in ("/ns/default/reviews", "/ns/default/reviews/1", "/ns/default/reviews/4"):
        phone.goto(url)
        sideways = phone.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert sideways <= 0, f"{url} scrolls sideways by {sideways} px at 390 px"
        phone.screenshot(path=str(tmp_path / f"{url.strip('/').replace('/', '-')}.png"), full_page=True)
    expect(phone.locator("#nav-reviews .count")).to_have_text("4")
    context.close()

