"""Deciding a review commit by commit: versions, turning some down, staleness on state, fast-forwards, sets."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

import pytest

from gitmem import concepts
from gitmem.errors import Conflict, InvalidInput, StaleReview
from gitmem.repo import MAIN, Change
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.conftest import git, namespace_of

from .test_consolidate import plant

RUNTIMES = [("Python 3.11 is the floor", "Python 3.12 is the floor"),
            ("Node 20 for the frontend", "Node 22 for the frontend"),
            ("Postgres 15 in production", "Postgres 16 in production")]
RUFF = ["Use ruff for linting Python code", "Lint Python code with ruff", "Run ruff to lint all Python code"]


def amendments(svc: MemoryService, pairs: list[tuple[str, str]] = RUNTIMES) -> tuple[int, list[str]]:
    """A review with one amendment commit per (old text, new text), as a push or `feedback amend` makes."""
    ids, changes = [], []
    for old_text, new_text in pairs:
        old = plant(svc, old_text, source="user")
        new = old.replace(text=new_text, title=concepts.title_from(new_text),
                          description=concepts.description_from(new_text))
        changes.append(Change({old.path: concepts.render(new)}, f"amend: {old.title}", "amend", (old.id,), None,
                              "sam", body="bump"))
        ids.append(old.id)
    return svc.reviews.propose("default", changes, title="Bump runtimes", author="sam", kind="amend").number, ids


def by_sam(svc: MemoryService, settings: Settings, number: int) -> list[str]:
    """Commit the review's branch again as sam's git would (another committer, another day); its ids.

    gitmem's own commits made in the same second as a replay of them would be the same objects:
    these cannot be, so a test sees whether approving kept them or made new ones.
    """
    review = svc.reviews.get("default", number)
    repo = settings.repos_dir / "default.git"
    env = {**os.environ, "GIT_COMMITTER_NAME": "sam", "GIT_COMMITTER_EMAIL": "sam@example.com",
           "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z"}
    parent, ids = review.base, []
    for commit in svc.reviews.commits("default", review):
        done = subprocess.run(["git", "--git-dir", str(repo), "commit-tree", str(commit.tree_id), "-p", parent,
                               "-m", commit.message], env=env, capture_output=True, text=True, check=True)
        parent = done.stdout.strip()
        ids.append(parent)
    git(repo, "update-ref", review.branch, parent)
    svc.reviews.repoint("default", number, head=parent, base=review.base, actor="sam")
    return ids


def main_id(svc: MemoryService) -> str:
    head = namespace_of(svc).store.head_id(MAIN)
    assert head is not None
    return head


def test_approving_before_main_moved_lands_the_commits_as_they_are(svc: MemoryService, settings: Settings,
                                                                 fsck: Callable[[str], None]) -> None:
    number, ids = amendments(svc)
    branch = by_sam(svc, settings, number)
    review = svc.reviews.get("default", number)
    svc.reviews.approve("default", number, actor="alice", commits=[branch[0]])
    assert main_id(svc) == branch[0]  # the same commit: a clone that has it pulls by fast-forward
    done = svc.reviews.approve("default", number, actor="alice")
    assert main_id(svc) == branch[-1] == review.head
    assert done.status == "merged" and done.merged_commit == review.head
    assert [svc.show("default", i).text for i in ids] == [new for _, new in RUNTIMES]
    fsck("default")


def test_approving_after_main_moved_replays_the_commits_onto_it(svc: MemoryService, settings: Settings) -> None:
    number, ids = amendments(svc)
    by_sam(svc, settings, number)
    review = svc.reviews.get("default", number)
    plant(svc, "Deploys happen on Tuesdays")  # main moves, on another memory
    moved = main_id(svc)
    done = svc.reviews.approve("default", number, actor="alice")
    assert done.status == "merged" and main_id(svc) != review.head
    store = namespace_of(svc).store
    assert store.is_ancestor(store.commit(moved), store.head(MAIN))
    assert not store.is_ancestor(store.commit(review.head), store.head(MAIN))  # new ids: pull --rebase
    assert [svc.show("default", i).text for i in ids] == [new for _, new in RUNTIMES]


def test_an_archive_on_main_makes_the_commit_stale_and_approving_leaves_it_archived(svc: MemoryService) -> None:
    number, ids = amendments(svc, RUNTIMES[:2])
    head = main_id(svc)
    svc.forget("default", ids[0], reason="Python is not ours to pin", actor="sam")  # a state change only
    assert main_id(svc) != head
    archived = svc.show("default", ids[0])
    assert archived.state == "archived" and archived.text == RUNTIMES[0][0]
    states = {c.memory_ids[0]: c for c in svc.reviews.diff("default", number)}
    assert states[ids[0]].state == "stale" and "made " in (states[ids[0]].note or "")
    assert "archived" in (states[ids[0]].note or "")
    with pytest.raises(StaleReview, match="archived"):
        svc.reviews.approve("default", number, actor="alice", commits=[states[ids[0]].id])
    after = svc.show("default", ids[0])
    assert (after.state, after.text) == ("archived", RUNTIMES[0][0])
    # Approving all merges the commit main did not overtake, and leaves the archived memory as it is.
    done = svc.reviews.approve("default", number, actor="alice")
    assert done.commit_states[states[ids[0]].id] == "stale"
    assert svc.show("default", ids[1]).text == RUNTIMES[1][1]
    after = svc.show("default", ids[0])
    assert (after.state, after.text) == ("archived", RUNTIMES[0][0])


def test_a_decision_made_on_an_older_version_of_the_review_decides_nothing(svc: MemoryService) -> None:
    number, ids = amendments(svc)
    seen = svc.reviews.get("default", number)
    first, second, third = (c.id for c in svc.reviews.diff("default", number))
    svc.reviews.approve("default", number, actor="bob", commits=[first], version=seen.version)
    now = svc.reviews.get("default", number)
    assert now.version != seen.version
    head = main_id(svc)
    with pytest.raises(Conflict, match="changed since you looked at it"):
        svc.reviews.approve("default", number, actor="alice", commits=[second], version=seen.version)
    with pytest.raises(Conflict, match="changed since you looked at it"):
        svc.reviews.reject("default", number, actor="alice", commits=[third], reason="no", version=seen.version)
    assert main_id(svc) == head
    assert svc.reviews.get("default", number).commit_states == {first: "merged"}
    done = svc.reviews.approve("default", number, actor="alice", commits=[second], version=now.version)
    assert done.state_of(second) == "merged"


def test_turning_down_some_commits_keeps_the_rest_decidable(svc: MemoryService) -> None:
    number, ids = amendments(svc)
    head = main_id(svc)
    first, second, third = (c.id for c in svc.reviews.diff("default", number))
    with pytest.raises(InvalidInput, match="a reason is required"):
        svc.reviews.reject("default", number, actor="alice", commits=[first, second], reason=" ")
    one = svc.reviews.reject("default", number, actor="alice", commits=[second], reason=None)  # one: no reason
    assert one.status == "open" and one.commit_states == {second: "skipped"}
    assert [c.state for c in svc.reviews.diff("default", number)] == ["open", "skipped", "open"]
    with pytest.raises(Conflict, match="skipped already"):
        svc.reviews.reject("default", number, actor="alice", commits=[second], reason=None)
    with pytest.raises(Conflict, match="1 commit\\(s\\) to turn down now, not the 2 you saw"):
        svc.reviews.reject("default", number, actor="alice", commits=[third], reason="no", expected=2)
    assert main_id(svc) == head and svc.show("default", ids[1]).text == RUNTIMES[1][0]
    svc.reviews.approve("default", number, actor="alice", commits=[first])
    last = svc.reviews.reject("default", number, actor="alice", commits=[third], reason="Postgres stays on 15")
    assert last.status == "merged" and last.label == "partly merged (1 of 3)"
    assert last.comments[-1]["text"] == "Postgres stays on 15"  # the last decision: about what was left
    assert svc.reviews.get("default", number).to_dict()["label"] == "partly merged (1 of 3)"


def test_a_review_all_turned_down_commit_by_commit_is_rejected(svc: MemoryService) -> None:
    number, _ = amendments(svc, RUNTIMES[:2])
    first, second = (c.id for c in svc.reviews.diff("default", number))
    svc.reviews.reject("default", number, actor="alice", commits=[first], reason=None)
    done = svc.reviews.reject("default", number, actor="alice", commits=[second], reason=None)
    assert done.status == "rejected" and done.label == "rejected"


def ruff_review(svc: MemoryService, texts: list[str] = RUFF) -> int:
    for days, text in enumerate(reversed(texts)):
        plant(svc, text, days=days + 1)
    result = svc.consolidate("default")
    assert result.review is not None
    return result.review


def test_three_paraphrases_rejected_are_not_proposed_again(svc: MemoryService) -> None:
    number = ruff_review(svc)
    svc.reviews.reject("default", number, actor="alice", reason="keep them")
    dry = svc.consolidate("default", dry_run=True)
    assert dry.plan.clusters == () and dry.summary.startswith("dry run: 0 clusters")


def test_a_cluster_that_holds_a_rejected_merge_is_not_proposed_again(svc: MemoryService) -> None:
    number = ruff_review(svc, RUFF[:2])
    svc.reviews.reject("default", number, actor="alice", reason="keep them")
    plant(svc, RUFF[2])  # a third paraphrase joins the two a reviewer kept apart
    assert svc.consolidate("default", dry_run=True).plan.clusters == ()


def test_a_cluster_inside_a_rejected_merge_is_not_proposed_again_until_one_changes(svc: MemoryService) -> None:
    number = ruff_review(svc)
    closed = svc.reviews.reject("default", number, actor="alice", reason="keep them")
    gone = closed.rejected[0]["ids"][0]
    svc.forget("default", gone, reason="not ours", actor="sam")
    assert svc.consolidate("default", dry_run=True).plan.clusters == ()  # the two left lie inside the set
    kept = [i for i in closed.rejected[0]["ids"] if i != gone]
    svc.amend("default", kept[0], text=svc.show("default", kept[0]).text + " before every commit")
    again = svc.consolidate("default", dry_run=True)
    assert [sorted(m.id for m in c.members) for c in again.plan.clusters] == [sorted(kept)]


def test_a_turned_down_merge_of_a_partly_decided_review_is_remembered(svc: MemoryService) -> None:
    number = ruff_review(svc)
    [merge] = svc.reviews.diff("default", number)
    done = svc.reviews.reject("default", number, actor="alice", commits=[merge.id], reason=None)
    assert done.status == "rejected" and len(done.rejected[0]["ids"]) == 3
    assert svc.consolidate("default", dry_run=True).plan.clusters == ()
