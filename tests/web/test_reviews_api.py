"""Reviews through the API: list, show with diff, comment, approve (all or some), reject."""

from __future__ import annotations

from collections.abc import Callable

from gitmem.service import MemoryService

from .conftest import Client, Keys

API = "/api/v1/namespaces/default"


def propose(svc: MemoryService, mid: str, text: str, actor: str = "someone") -> int:
    result = svc.feedback("default", mid, "amend", actor=actor, text=text)
    assert result.review is not None
    return result.review


def test_list_and_show_a_review_with_its_diff(client: Client, keys: Keys, svc: MemoryService,
                                             remember: Callable[..., str]) -> None:
    mid = remember("Lint with flake8")
    number = propose(svc, mid, "Lint with ruff")
    listed = client.get(f"{API}/reviews?status=open", headers=keys.auth("reader")).json
    assert [r["number"] for r in listed["items"]] == [number]

    shown = client.get(f"{API}/reviews/{number}", headers=keys.auth("reader")).json
    assert shown["status"] == "open" and shown["author"] == "someone"
    [commit] = shown["commits"]
    [diff] = commit["files"]
    assert "-Lint with flake8" in diff["unified"] and "+Lint with ruff" in diff["unified"]


def test_comment_then_approve_merges_into_main(client: Client, keys: Keys, svc: MemoryService,
                                              remember: Callable[..., str],
                                              fsck: Callable[[str], None]) -> None:
    mid = remember("Lint with flake8")
    number = propose(svc, mid, "Lint with ruff")
    said = client.post(f"{API}/reviews/{number}/comments", headers=keys.auth("writer"),
                       json={"text": "ruff is what CI runs"})
    assert said.status_code == 200 and said.json["comments"][-1]["actor"] == "writer"

    assert client.post(f"{API}/reviews/{number}/approve", headers=keys.auth("writer")).status_code == 403
    merged = client.post(f"{API}/reviews/{number}/approve", headers=keys.auth("reviewer"), json={})
    assert merged.status_code == 200 and merged.json["status"] == "merged"
    assert merged.json["decided_by"] == "reviewer"
    assert svc.show("default", mid).text == "Lint with ruff"
    again = client.post(f"{API}/reviews/{number}/approve", headers=keys.auth("reviewer"))
    assert again.status_code == 409
    fsck("default")


def test_reject_leaves_main_alone(client: Client, keys: Keys, svc: MemoryService,
                                  remember: Callable[..., str]) -> None:
    mid = remember("Lint with flake8")
    number = propose(svc, mid, "Lint with pylint")
    before = svc.status("default")["head"]
    rejected = client.post(f"{API}/reviews/{number}/reject", headers=keys.auth("reviewer"),
                           json={"reason": "we moved to ruff"})
    assert rejected.json["status"] == "rejected"
    assert svc.show("default", mid).text == "Lint with flake8"
    assert svc.status("default")["head"] == before


def test_review_bad_input(client: Client, keys: Keys, svc: MemoryService,
                          remember: Callable[..., str]) -> None:
    auth = keys.auth("reviewer")
    assert client.get(f"{API}/reviews/999", headers=auth).status_code == 404
    assert client.get(f"{API}/reviews/abc", headers=auth).status_code == 400
    number = propose(svc, remember("Lint with flake8"), "Lint with ruff")
    bad = client.post(f"{API}/reviews/{number}/approve", headers=auth, json={"commits": "all"})
    assert bad.status_code == 400
    unknown = client.post(f"{API}/reviews/{number}/approve", headers=auth, json={"commits": ["deadbeef"]})
    assert unknown.status_code in (400, 404)
    assert client.get(f"{API}/reviews/{number}", headers=auth).json["status"] == "open"


def test_a_review_number_in_other_digits_is_not_a_number(client: Client, keys: Keys, svc: MemoryService,
                                                         remember: Callable[..., str]) -> None:
    for _ in range(3):
        number = propose(svc, remember(f"Release train {_}"), f"Release train {_}, weekly")
    assert number == 3
    auth = keys.auth("reviewer")
    assert client.get(f"{API}/reviews/3", headers=auth).status_code == 200
    # Arabic-Indic three, full-width three, superscript three: str.isdigit() says yes to each.
    for digits in ("\u0663", "\uff13", "\u00b3", "+3", "3_0"):
        for response in (client.get(f"{API}/reviews/{digits}", headers=auth),
                         client.post(f"{API}/reviews/{digits}/reject", headers=auth, json={"reason": "x"})):
            assert response.status_code == 400, digits
            assert "is not a review number" in response.json["error"]["message"]
    assert client.get(f"{API}/reviews/3", headers=auth).json["status"] == "open"



def test_the_api_shows_per_commit_state_and_refuses_to_merge_more_than_seen(
        client: Client, keys: Keys, svc: MemoryService, remember: Callable[..., str]) -> None:
    mid = remember("Lint with flake8")
    number = propose(svc, mid, "Lint with ruff")
    auth = keys.auth("reviewer")
    shown = client.get(f"{API}/reviews/{number}", headers=auth).json
    [commit] = shown["commits"]
    assert commit["state"] == "open" and commit["stale_reason"] is None
    [memory] = commit["memories"]
    assert memory["text_diff"] == [{"op": "same", "text": "Lint with "}, {"op": "del", "text": "flake8"},
                                   {"op": "ins", "text": "ruff"}]
    no_reason = client.post(f"{API}/reviews/{number}/reject", headers=auth, json={})
    blank = client.post(f"{API}/reviews/{number}/reject", headers=auth, json={"reason": "  "})
    assert no_reason.status_code == blank.status_code == 400
    assert "a reason is required" in blank.json["error"]["message"]
    for bad in (0, "1", True):
        assert client.post(f"{API}/reviews/{number}/approve", headers=auth, json={"expected": bad}).status_code == 400
    more = client.post(f"{API}/reviews/{number}/approve", headers=auth, json={"expected": 2})
    assert more.status_code == 409 and "not the 2 you saw" in more.json["error"]["message"]
    assert svc.show("default", mid).text == "Lint with flake8"
    done = client.post(f"{API}/reviews/{number}/approve", headers=auth, json={"expected": 1})
    assert done.status_code == 200 and done.json["commit_states"] == {commit["id"]: "merged"}
    assert svc.show("default", mid).text == "Lint with ruff"


def test_decisions_carry_the_version_seen_and_reject_may_name_commits(client: Client, keys: Keys,
                                                                     svc: MemoryService,
                                                                     remember: Callable[..., str]) -> None:
    first, second = remember("Lint with flake8"), remember("Format with black")
    numbers = [propose(svc, first, "Lint with ruff"), propose(svc, second, "Format with ruff format")]
    shown = client.get(f"{API}/reviews/{numbers[0]}", headers=keys.auth("reader")).json
    version = shown["version"]
    assert len(version) == 12 and shown["label"] == "open"
    [commit] = shown["commits"]
    assert commit["kind"] == "edit" and commit["lost_words"] == []
    stale = client.post(f"{API}/reviews/{numbers[0]}/reject", headers=keys.auth("reviewer"),
                        json={"commits": [commit["id"]], "version": "0" * 12})
    assert stale.status_code == 409 and "changed since you looked at it" in stale.json["error"]["message"]
    done = client.post(f"{API}/reviews/{numbers[0]}/reject", headers=keys.auth("reviewer"),
                       json={"commits": [commit["id"]], "version": version})  # one commit: no reason needed
    assert done.status_code == 200 and done.json["status"] == "rejected"
    assert svc.show("default", first).text == "Lint with flake8"
    many = client.post(f"{API}/reviews/{numbers[1]}/reject", headers=keys.auth("reviewer"), json={})
    assert many.status_code == 400 and "a reason is required" in many.json["error"]["message"]
    approved = client.post(f"{API}/reviews/{numbers[1]}/approve", headers=keys.auth("reviewer"),
                           json={"version": svc.reviews.get("default", numbers[1]).version, "expected": 1})
    assert approved.status_code == 200 and approved.json["label"] == "merged"
