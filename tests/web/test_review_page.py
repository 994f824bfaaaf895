"""The review page a person can finish, over HTTP: kinds, pages, filters, one decision at a time, counts, versions."""

from __future__ import annotations

import re
from collections.abc import Callable

from gitmem import concepts
from gitmem.repo import Change
from gitmem.service import MemoryService
from tests.fakes.openai_server import running
from tests.test_consolidate import longest

from .conftest import Client, Keys
from .test_pages import RUNTIMES, amend_review, signed_in

LOSSLESS = [("Use descriptive variable and method names.",
             "Use descriptive variable and method names (e.g., IsUserSignedIn)."),
            ("Deploy the web app with docker compose.",
             "Deploy the web app with docker compose to staging and production.")]
# A model (below, the fake's "longest") merges these into the longer, losing "lint": offline rules
# would only link them.
LOSSY = ["Use ruff for linting Python code", "Use ruff to format Python code before every commit"]


def mixed_review(svc: MemoryService, remember: Callable[..., str], edits: int = 22) -> int:
    """A review of ``edits`` amendments, one new memory and two archives: 25 commits, two pages."""
    changes = []
    for k in range(edits):
        old = svc.show("default", remember(f"Service {k} answers within 200 ms"))
        text = f"Service {k} answers within 150 ms"
        new = old.replace(text=text, title=concepts.title_from(text), description=concepts.description_from(text))
        changes.append(Change({old.path: concepts.render(new)}, f"amend: {old.title}", "amend", (old.id,), None,
                              "sam"))
    for k in range(2):
        old = svc.show("default", remember(f"Old runbook step {k}"))
        gone = old.replace(state="archived", archived_reason="retired")
        changes.append(Change({old.path: concepts.render(gone)}, f"archive: {old.title}", "archive", (old.id,),
                              None, "sam"))
    made = concepts.Memory(id=concepts.new_id(), type="convention", text="Rotate the on-call weekly",
                           title="Rotate the on-call weekly", source="user")
    made = made.replace(path=concepts.file_path("convention", f"rotate-{made.id}"))
    changes.append(Change({made.path: concepts.render(made)}, "add: Rotate the on-call weekly", "remember",
                          (made.id,), None, "sam"))
    return svc.reviews.propose("default", changes, title="Tidy services", author="sam", kind="amend").number


def plant_merges(svc: MemoryService, remember: Callable[..., str]) -> int:
    """A consolidation review of two merges that lose nothing and one that loses words (made by a model)."""
    for older, newer in LOSSLESS:
        remember(older, source="agent")
        remember(newer, source="agent")
    for text in LOSSY:
        remember(text, source="agent")
    with running(longest) as fake:
        model = MemoryService(svc.settings.with_(llm_base_url=fake.url, llm_model="fake"))
        result = model.consolidate("default")
        model.close()
    assert result.review is not None
    return result.review


def html(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return response.get_data(as_text=True)


def version_of(page_html: str) -> str:
    found = re.search(r'data-version="([0-9a-f]{12})"', page_html)
    assert found is not None
    return found.group(1)


def sections(page_html: str) -> list[str]:
    """The full ids of the commits the page shows in detail, in order."""
    return re.findall(r'<section class="commit [^"]*" id="commit-[0-9a-f]{10}" data-id="([0-9a-f]{40})"', page_html)


# --- without a browser ---------------------------------------------------------------------------------


def test_the_page_groups_by_kind_pages_and_filters(client: Client, keys: Keys, svc: MemoryService,
                                                   remember: Callable[..., str]) -> None:
    number = mixed_review(svc, remember)
    signed_in(client, keys.reader)
    url = f"/ns/default/reviews/{number}"
    first = html(client, url)
    kinds = re.findall(r'data-kind="(\w+)">\w+ (\d+)</a>', first)
    assert kinds == [("edit", "22"), ("add", "1"), ("archive", "2")]  # the page's order of kinds
    assert re.findall(r'<h3 class="toc-kind">(\w+) <span class="muted">(\d+)</span>', first) == kinds
    assert len(sections(first)) == 20 and "Page 1 of 2" in first
    second = html(client, url + "?page=2")
    assert len(sections(second)) == 5 and "Page 2 of 2" in second
    assert not set(sections(first)) & set(sections(second))
    archives = html(client, url + "?kind=archive")
    assert len(sections(archives)) == 2 and "Page 1 of" not in archives
    assert all("archive: Old runbook step" in s for s in re.findall(r"<h2>.*?</h2>", archives, re.S)[:2])
    # The table of contents links a commit on another page to that page.
    later = sections(second)[0]
    assert f'href="/ns/default/reviews/{number}?page=2#commit-{later[:10]}"' in first
    assert html(client, url + "?page=9").count("Page 2 of 2") == 2  # past the end: the last page
    for bad in ("?kind=nonsense", "?state=done", "?page=0", "?page=x"):
        assert client.get(url + bad).status_code == 400


def test_next_undecided_and_a_decision_land_where_the_reviewer_was(client: Client, keys: Keys, svc: MemoryService,
                                                                   remember: Callable[..., str]) -> None:
    number = mixed_review(svc, remember)
    token = signed_in(client, keys.reviewer)
    url = f"/ns/default/reviews/{number}"
    page1 = html(client, url)
    ids = sections(page1) + sections(html(client, url + "?page=2"))
    assert 'id="next-undecided" class="button primary-link" accesskey="n"' in page1
    assert f'href="#commit-{ids[0][:10]}" id="next-undecided"' in page1
    # Decided elsewhere meanwhile, the second is not next any more: the third is.
    svc.reviews.approve("default", number, actor="bob", commits=[ids[1]])
    page1 = html(client, url)
    assert f'href="#commit-{ids[0][:10]}" id="next-undecided"' in page1
    done = client.post(url, data={"action": "approve-one", "commit": ids[0], "version": version_of(page1),
                                  "csrf_token": token})
    assert done.status_code == 303 and done.headers["Location"] == f"{url}#commit-{ids[2][:10]}"
    assert svc.reviews.get("default", number).commit_states == {ids[0]: "merged", ids[1]: "merged"}
    assert f'href="#commit-{ids[2][:10]}" id="next-undecided"' in html(client, url)
    # The last commit of page 1, skipped: the next undecided is on page 2, under the same filter.
    now = html(client, url)
    skip = client.post(url, data={"action": "skip-one", "commit": ids[19], "version": version_of(now),
                                  "csrf_token": token})
    assert skip.headers["Location"] == f"{url}?page=2#commit-{ids[20][:10]}"
    assert svc.reviews.get("default", number).state_of(ids[19]) == "skipped"
    # Filtered: the landing keeps the filter.
    edits = html(client, url + "?kind=edit&state=open")
    following = sections(edits)[1]
    moved = client.post(url, data={"action": "approve-one", "commit": sections(edits)[0], "kind": "edit",
                                   "state": "open", "version": version_of(edits), "csrf_token": token})
    assert moved.headers["Location"] == f"{url}?kind=edit&state=open#commit-{following[:10]}"
    merged = html(client, url + "?state=merged")
    assert len(sections(merged)) == 3 and 'id="review-status">open (3 of 25 merged)<' in merged


def test_a_selection_made_on_an_outdated_page_decides_nothing(client: Client, keys: Keys, svc: MemoryService,
                                                             remember: Callable[..., str]) -> None:
    number, ids = amend_review(svc, remember, RUNTIMES)
    token = signed_in(client, keys.reviewer)
    url = f"/ns/default/reviews/{number}"
    # Never kept by the browser: Back shows the review as it is, not a copy with boxes ticked.
    assert client.get(url).headers["Cache-Control"] == "no-store"
    seen = html(client, url)
    commits = sections(seen)
    svc.reviews.approve("default", number, actor="bob", commits=[commits[0]])  # someone else, meanwhile
    head = svc.head("default")
    for action in ("approve-selected", "reject-selected"):
        stale = client.post(url, data={"action": action, "commit": commits[1], "version": version_of(seen),
                                       "reason": "no", "confirmed": "1", "csrf_token": token})
        assert stale.status_code == 303
        assert "changed since you looked at it" in html(client, url)
    one = client.post(url, data={"action": "approve-one", "commit": commits[2], "version": version_of(seen),
                                 "csrf_token": token})
    assert one.status_code == 303 and one.headers["Location"].endswith(f"#commit-{commits[2][:10]}")
    assert svc.head("default") == head
    assert svc.reviews.get("default", number).commit_states == {commits[0]: "merged"}
    # A form without the version it was made on decides nothing either.
    missing = client.post(url, data={"action": "approve-selected", "commit": commits[1], "confirmed": "1",
                                     "csrf_token": token})
    assert missing.status_code == 400 and svc.head("default") == head


def test_bulk_actions_name_their_count_and_confirm_first(client: Client, keys: Keys, svc: MemoryService,
                                                         remember: Callable[..., str]) -> None:
    number, ids = amend_review(svc, remember, RUNTIMES)
    token = signed_in(client, keys.reviewer)
    url = f"/ns/default/reviews/{number}"
    seen = html(client, url)
    commits = sections(seen)
    assert 'id="approve" class="primary" data-base="3"' in seen
    assert "Approve all (<span class=\"count\">3</span>)" in seen
    assert "Reject the rest (<span class=\"count\">3</span>)" in seen
    assert 'id="bulk-form" autocomplete="off"' in seen
    assert all(f'name="commit" value="{c}" form="bulk-form" autocomplete="off"' in seen for c in commits)
    head = svc.head("default")
    data = {"action": "approve-all", "lossless": commits, "version": version_of(seen), "csrf_token": token}
    ask = client.post(url, data=data)
    asked = ask.get_data(as_text=True)
    assert ask.status_code == 200 and f"Merge 3 commits of review #{number}?" in asked
    assert 'value="approve-all" id="confirm" class="primary">Merge 3</button>' in asked
    assert svc.head("default") == head  # asking changed nothing
    done = client.post(url, data={**data, "confirmed": "1"})
    assert done.status_code == 303
    assert [svc.show("default", i).text for i in ids] == [new for _, new in RUNTIMES]
    assert svc.reviews.get("default", number).label == "merged"


def test_reject_selected_needs_a_reason_and_turns_down_only_those(client: Client, keys: Keys, svc: MemoryService,
                                                                  remember: Callable[..., str]) -> None:
    number, ids = amend_review(svc, remember, RUNTIMES)
    token = signed_in(client, keys.reviewer)
    url = f"/ns/default/reviews/{number}"
    seen = html(client, url)
    commits = sections(seen)
    data = {"action": "reject-selected", "commit": commits[:2], "version": version_of(seen), "confirmed": "1",
            "csrf_token": token}
    assert client.post(url, data={**data, "reason": "  "}).status_code == 303
    assert "a reason is required" in html(client, url)
    assert svc.reviews.get("default", number).commit_states == {}
    ask = client.post(url, data={**data, "confirmed": "0", "reason": "ops have not signed off"})
    assert f"Reject 2 commits of review #{number}?" in ask.get_data(as_text=True)
    client.post(url, data={**data, "reason": "ops have not signed off"})
    review = svc.reviews.get("default", number)
    assert review.status == "open" and review.commit_states == {commits[0]: "skipped", commits[1]: "skipped"}
    assert review.comments[-1]["text"] == "Turned down 2 commits: ops have not signed off"
    assert svc.show("default", ids[2]).text == RUNTIMES[2][0]


def test_changes_that_lose_words_are_flagged_and_left_out_of_approve_all(client: Client, keys: Keys,
                                                                          svc: MemoryService,
                                                                          remember: Callable[..., str]) -> None:
    number = plant_merges(svc, remember)
    token = signed_in(client, keys.reviewer)
    url = f"/ns/default/reviews/{number}"
    seen = html(client, url)
    commits = svc.reviews.diff("default", number)
    lossy = [c for c in commits if c.lost]
    lossless = [c for c in commits if not c.lost]
    assert len(lossy) == 1 and len(lossless) == 2
    assert seen.count('<li class="lossy">') == 1 and re.search(r"loses \d+ words?</span></li>", seen)
    assert re.findall(r'name="lossless" value="([0-9a-f]{40})"', seen) == [c.id for c in lossless]
    assert "Approve all (<span class=\"count\">2</span>)" in seen and "Open commits that lose words: 1" in seen
    assert len(sections(html(client, url + "?lossy=1"))) == 1
    # Approve all as the page posts it: the lossless ones; the one that loses words stays open.
    data = {"action": "approve-all", "lossless": [c.id for c in lossless], "version": version_of(seen),
            "confirmed": "1", "csrf_token": token}
    client.post(url, data=data)
    assert svc.reviews.get("default", number).commit_states == {c.id: "merged" for c in lossless}
    # Ticked, it goes too.
    again = html(client, url)
    client.post(url, data={**data, "lossless": [], "commit": lossy[0].id, "version": version_of(again)})
    assert svc.reviews.get("default", number).label == "merged"


def test_the_list_says_how_much_of_a_review_merged(client: Client, keys: Keys, svc: MemoryService,
                                                   remember: Callable[..., str]) -> None:
    number, _ = amend_review(svc, remember, RUNTIMES)
    first = svc.reviews.diff("default", number)[0].id
    svc.reviews.approve("default", number, actor="bob", commits=[first])
    signed_in(client, keys.reader)
    assert "open (1 of 3 merged)" in html(client, "/ns/default/reviews")
    svc.reviews.reject("default", number, actor="bob", reason="the rest can wait")
    listed = html(client, "/ns/default/reviews")
    assert '<span class="badge merged">partly merged (1 of 3)</span>' in listed
    assert 'id="review-status">partly merged (1 of 3)<' in html(client, f"/ns/default/reviews/{number}")


def test_rejecting_a_memory_from_its_page_needs_a_reason(client: Client, keys: Keys, svc: MemoryService,
                                                         remember: Callable[..., str]) -> None:
    mid = remember("Deploys happen on Tuesdays")
    token = signed_in(client, keys.writer)
    url = f"/ns/default/memories/{mid}"
    head = svc.head("default")
    for text in ("", "   "):
        done = client.post(url + "/feedback", data={"action": "reject", "text": text, "csrf_token": token})
        assert done.status_code == 303
        assert svc.head("default") == head and svc.show("default", mid).state == "active"
        assert "a reason is required" in html(client, url)
    assert '<textarea name="text" rows="1" required placeholder="why it is wrong (required)"' in html(client, url)
    client.post(url + "/feedback", data={"action": "reject", "text": "we deploy daily now", "csrf_token": token})
    assert svc.show("default", mid).state == "archived"


def test_a_push_review_says_how_to_get_back_in_step(client: Client, keys: Keys, svc: MemoryService,
                                                    remember: Callable[..., str]) -> None:
    old = svc.show("default", remember("Python 3.11 is the floor"))
    new = old.replace(text="Python 3.12 is the floor", title="Python 3.12 is the floor")
    change = Change({old.path: concepts.render(new)}, "bump python", "edit", (old.id,), None, "sam")
    number = svc.reviews.propose("default", [change], title="bump python", author="sam", kind="push").number
    signed_in(client, keys.reader)
    url = f"/ns/default/reviews/{number}"
    assert "`git pull` in the pusher&#39;s clone fast-forwards" in html(client, url)
    remember("Deploys happen on Tuesdays")  # main moves
    assert "`git pull --rebase` afterwards" in html(client, url)


def test_file_diffs_come_when_asked_for(client: Client, keys: Keys, svc: MemoryService,
                                       remember: Callable[..., str]) -> None:
    number, _ = amend_review(svc, remember, RUNTIMES[:2])
    signed_in(client, keys.reader)
    url = f"/ns/default/reviews/{number}"
    first, second = sections(html(client, url))
    plain = html(client, url)
    assert '<pre class="diff' not in plain  # the word diffs say what changes; the files wait
    assert f'href="{url}?files={first[:10]}#commit-{first[:10]}">Files (1)</a>' in plain
    asked = html(client, f"{url}?files={first[:10]}")
    assert asked.count('<pre class="diff') == 1 and "+Python 3.12 is the floor" in asked
    assert html(client, f"{url}?files=all").count('<pre class="diff') == 2


def test_a_review_page_in_other_digits_is_refused(client: Client, keys: Keys, svc: MemoryService,
                                                  remember: Callable[..., str]) -> None:
    for n in range(3):
        mid = remember(f"Release train {n}")
        svc.feedback("default", mid, "amend", actor="sam", text=f"Release train {n}, weekly")
    signed_in(client, keys.reader)
    assert client.get("/ns/default/reviews/3").status_code == 200
    refused = client.get("/ns/default/reviews/\u0663")  # Arabic-Indic three
    assert refused.status_code == 400 and "is not a review number" in refused.get_data(as_text=True)


def test_side_by_side_diff_escapes_what_it_shows(client: Client, keys: Keys, svc: MemoryService,
                                                 remember: Callable[..., str]) -> None:
    mid = remember("Escape output in templates")
    number = svc.feedback("default", mid, "amend", actor="sam",
                          text="Escape output: never emit <script>alert(1)</script> raw").review
    signed_in(client, keys.reader)
    shown = client.get(f"/ns/default/reviews/{number}?view=split").get_data(as_text=True).replace("&nbsp;", " ")
    assert 'class="diff"' in shown and "before" in shown and "after" in shown
    assert "Escape output in templates" in shown
    assert "<script>alert(1)</script>" not in shown and "&lt;script&gt;" in shown


def test_a_stale_consolidation_review_offers_a_rerun_and_can_still_be_rejected(
        client: Client, keys: Keys, svc: MemoryService, remember: Callable[..., str]) -> None:
    ids = [remember(t, source="agent") for t in ("the deploy script needs the staging token set",
                                                 "the deploy script needs the staging token and the region set")]
    result = svc.consolidate("default")
    assert result.review is not None
    svc.amend("default", ids[0], text="the deploy script reads the token from the vault", actor="sam")
    token = signed_in(client, keys.reviewer)
    url = f"/ns/default/reviews/{result.review}"
    shown = html(client, url)
    # Main overtook its one commit: nothing to approve, a re-run offered, the record still open.
    assert 'id="review-status">open<' in shown and 'id="rerun"' in shown and 'id="approve"' not in shown
    [commit] = svc.reviews.diff("default", result.review)
    stale = client.post(url, data={"action": "approve-one", "commit": commit.id, "version": version_of(shown),
                                   "csrf_token": token})
    assert stale.status_code == 303
    shown = html(client, url)
    assert 'id="review-status">stale<' in shown and 'id="rerun"' in shown
    assert shown.count("is stale: main changed the text of") == 1 and "StaleReview" not in shown
    rest = {"action": "reject-rest", "count": "1", "version": version_of(shown), "confirmed": "1",
            "csrf_token": token}
    assert client.post(url, data={**rest, "reason": ""}).status_code == 303
    assert "a reason is required" in html(client, url)
    assert svc.reviews.get("default", result.review).status == "stale"
    done = client.post(url, data={**rest, "reason": "superseded by the vault"})
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
    assert "Consolidation queued (task " in html(client, url)
