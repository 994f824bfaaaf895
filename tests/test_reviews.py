"""Reviews: approve, approve some commits, stale after main moved, reject, comment, CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gitmem import notify
from gitmem.errors import Conflict, InvalidInput, ReviewNotFound, StaleReview
from gitmem.repo import MAIN
from gitmem.reviews import review_number as _number
from gitmem.reviews import summarise
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.conftest import namespace_of

from .conftest import git
from .test_consolidate import plant

TOPICS = [
    ("Use descriptive variable and method names.",
     "Use descriptive variable and method names (e.g., IsUserSignedIn)."),
    ("提交代码前必须运行单元测试。", "提交代码前必须运行单元测试和格式检查。"),
    ("Deploy the web app with docker compose.",
     "Deploy the web app with docker compose to staging and production."),
]


def three_merges(svc: MemoryService) -> int:
    """Plant three pairs of near-duplicates and run consolidation (offline rules) on them."""
    for older, newer in TOPICS:
        plant(svc, older, days=2)
        plant(svc, newer, days=1)
    result = svc.consolidate("default")
    assert result.review is not None
    assert len(svc.reviews.diff("default", result.review)) == 3
    return result.review


def active(svc: MemoryService) -> list[str]:
    return sorted(m.text for m in svc.list("default", state="active", limit=100))


def main_head(svc: MemoryService) -> str | None:
    return namespace_of(svc, "default").store.head_id(MAIN)


def test_show_lists_each_decision_with_its_reason_and_a_diff_per_memory(svc: MemoryService) -> None:
    number = three_merges(svc)
    review = svc.reviews.get("default", number)
    assert review.to_dict()["status"] == "open"
    assert json.loads(json.dumps(review.to_dict()))["number"] == number
    commits = svc.reviews.diff("default", number)
    first = commits[0]
    assert first.action == "consolidate"
    assert first.reason.startswith("Reason: offline rules")
    deleted = [f for f in first.files if f.status == "deleted"]
    added = [f for f in first.files if f.status == "added"]
    assert len(deleted) == 2 and len(added) == 1
    assert added[0].unified.startswith("--- /dev/null\n+++ b/convention/")
    assert deleted[0].old_text is not None and deleted[0].new_text is None
    assert len(first.memory_ids) == 3
    assert first.to_dict()["files"][0]["unified"]


def test_approving_all_merges_every_commit_in_order(svc: MemoryService, fsck: Callable[[str], None]) -> None:
    number = three_merges(svc)
    ids = [c.id for c in svc.reviews.diff("default", number)]
    review = svc.reviews.approve("default", number, actor="alice")
    assert review.status == "merged" and review.decided_by == "alice"
    assert review.approved_commits == ids
    assert active(svc) == sorted(newer for _, newer in TOPICS)
    log = svc.log("default", limit=3)
    assert [info.summary for info in reversed(log)] == [c.summary for c in svc.reviews.diff("default", number)]
    assert review.merged_commit == main_head(svc)
    fsck("default")


def test_partial_approval_merges_only_the_chosen_commits_and_keeps_the_rest_open(svc: MemoryService) -> None:
    number = three_merges(svc)
    commits = svc.reviews.diff("default", number)
    chosen = next(c for c in commits if any("提交代码" in (f.new_text or "") for f in c.files))
    review = svc.reviews.approve("default", number, actor="alice", commits=[chosen.id[:8]])
    assert review.approved_commits == [chosen.id]
    assert review.status == "open"  # two commits are left to decide
    assert [c.state for c in svc.reviews.diff("default", number)] == [
        "merged" if c.id == chosen.id else "open" for c in commits]
    assert "提交代码前必须运行单元测试和格式检查。" in active(svc)
    assert "提交代码前必须运行单元测试。" not in active(svc)
    for older, newer in (TOPICS[0], TOPICS[2]):
        assert older in active(svc) and newer in active(svc)
    info = namespace_of(svc, "default").store.info(namespace_of(svc, "default").store.head())
    assert info.summary == chosen.summary and info.action == "consolidate"
    with pytest.raises(Conflict, match="merged already"):
        svc.reviews.approve("default", number, actor="alice", commits=[chosen.id])
    second = next(c for c in commits if c.id != chosen.id)
    with pytest.raises(Conflict, match="1 commit to merge now, not the 2 you saw"):
        svc.reviews.approve("default", number, actor="alice", commits=[second.id], expected=2)
    # The rest stays decidable: another one merges, the last is turned down.
    assert svc.reviews.approve("default", number, actor="bob", commits=[second.id]).status == "open"
    closed = svc.reviews.reject("default", number, actor="carol", reason="keep the deploy notes apart")
    assert closed.status == "merged"  # in part: 2 of 3
    assert [c.state for c in svc.reviews.diff("default", number)].count("skipped") == 1
    assert closed.rejected and len(closed.rejected[0]["ids"]) == 2
    # A merge turned down is not proposed again while its members stay as they were...
    assert svc.consolidate("default").summary == "nothing to consolidate"
    # ...but once one of them changes, it is.
    rejected_ids = closed.rejected[0]["ids"]
    svc.amend("default", rejected_ids[0], text=svc.show("default", rejected_ids[0]).text + " Always.")
    again = svc.consolidate("default")
    assert again.review is not None and "consolidated 2 memories into 1" in again.summary


def test_approval_after_main_changed_the_same_memory_marks_only_that_commit_stale(svc: MemoryService) -> None:
    number = three_merges(svc)
    seen: list[dict[str, Any]] = []

    def listen(settings: Settings, event: dict[str, Any]) -> None:
        seen.append(event)

    notify.subscribe(listen)
    try:
        target = next(m for m in svc.list("default") if m.text == TOPICS[0][0])
        svc.amend("default", target.id, text="Use descriptive variable and method names (e.g., CalculateTotal, "
                                              "IsUserSignedIn).")
        states = {c.id: c.state for c in svc.reviews.diff("default", number)}
        assert sorted(states.values()) == ["open", "open", "stale"]
        stale_id = next(k for k, v in states.items() if v == "stale")
        moved = main_head(svc)
        with pytest.raises(StaleReview, match=f"commit {stale_id[:10]} .* is stale: main changed the text of "
                                              "convention/.*run consolidation again.*nothing was merged"):
            svc.reviews.approve("default", number, actor="alice", commits=[stale_id])
        assert main_head(svc) == moved  # nothing merged
        review = svc.reviews.approve("default", number, actor="alice")  # all: the two that still apply
    finally:
        notify.unsubscribe(listen)
    assert review.status == "merged" and review.commit_states[stale_id] == "stale"
    assert review.stale_reason and "run consolidation again" in review.stale_reason
    assert len(review.approved_commits) == 2
    assert seen[-1]["event"] == "review.closed" and seen[-1]["review"]["status"] == "merged"
    with pytest.raises(Conflict, match="already merged"):
        svc.reviews.approve("default", number, actor="alice")
    # The review is decided, so consolidation may run again on the current state.
    rerun = svc.consolidate("default")
    assert rerun.review is not None and rerun.summary.startswith("consolidated 2 memories into 1")
    svc.reviews.approve("default", rerun.review, actor="alice")
    # The amended statement names the most details, so the merge keeps its words.
    assert "Use descriptive variable and method names (e.g., CalculateTotal, IsUserSignedIn)." in active(svc)


def test_uses_potency_and_confirmations_never_make_a_commit_stale(svc: MemoryService) -> None:
    number = three_merges(svc)
    for m in svc.list("default", limit=100)[:3]:
        svc.feedback("default", m.id, "confirm", actor="zoe")
    svc.recall("default", "docker compose")
    svc.fold_usage("default")
    assert {c.state for c in svc.reviews.diff("default", number)} == {"open"}
    review = svc.reviews.approve("default", number, actor="alice")
    assert review.status == "merged" and not review.commit_notes
    assert active(svc) == sorted(newer for _, newer in TOPICS)


def test_an_amendment_stays_approvable_after_a_fold_and_keeps_the_uses(svc: MemoryService) -> None:
    memory = svc.remember("default", "We run MySQL 5.7 in production.").memory
    assert memory is not None
    number = svc.feedback("default", memory.id, "amend", actor="eve", text="We run MySQL 8.0 in production.").review
    assert number is not None
    svc.recall("default", "MySQL")
    svc.fold_usage("default")
    svc.feedback("default", memory.id, "confirm", actor="zoe")
    used = svc.show("default", memory.id)
    assert used.access_count >= 1 and used.verified == ("zoe",)
    svc.reviews.approve("default", number, actor="maintainer")
    after = svc.show("default", memory.id)
    assert after.text == "We run MySQL 8.0 in production."
    assert after.access_count == used.access_count and after.verified == ("zoe",)


def test_a_stale_amendment_gives_advice_that_fits_an_amendment(svc: MemoryService) -> None:
    memory = svc.remember("default", "We run MySQL 5.7 in production.").memory
    assert memory is not None
    number = svc.feedback("default", memory.id, "amend", actor="eve", text="We run MySQL 8.0 in production.").review
    assert number is not None
    svc.amend("default", memory.id, text="We run PostgreSQL 16 in production.")
    with pytest.raises(StaleReview) as stale:
        svc.reviews.approve("default", number, actor="maintainer")
    assert "propose the change again" in str(stale.value) and "consolidation" not in str(stale.value)
    assert svc.reviews.get("default", number).status == "stale"


def test_a_memory_knows_its_open_review(svc: MemoryService) -> None:
    memory = svc.remember("default", "Use pnpm.").memory
    other = svc.remember("default", "Use tabs.").memory
    assert memory is not None and other is not None
    number = svc.feedback("default", memory.id, "amend", actor="eve", text="Use pnpm 9.").review
    assert svc.reviews.open_for("default", memory.id) == [number]
    assert svc.reviews.open_for("default", other.id) == []


def test_the_review_shows_words_and_fields_not_frontmatter(svc: MemoryService) -> None:
    number = three_merges(svc)
    commits = svc.reviews.diff("default", number)
    chinese = next(c for c in commits if any("提交代码" in (m.before or "") for m in c.memories))
    assert chinese.merge and chinese.result is not None
    lost = {m.before: m.lost for m in chinese.members}
    # Offline, a merge keeps a statement that says the others whole: no word is lost (per
    # character, as Chinese has no spaces between words).
    assert lost == {"提交代码前必须运行单元测试。": [], "提交代码前必须运行单元测试和格式检查。": []}
    assert chinese.kept is not None and chinese.kept.change == "added"
    data = chinese.to_dict()
    assert data["lost_words"] == [] and data["state"] == "open"
    assert summarise(commits).startswith("6 memories into 3")


def test_word_diff_of_an_amendment(svc: MemoryService) -> None:
    memory = svc.remember("default", "Format with black", tags=["python"]).memory
    assert memory is not None
    number = svc.feedback("default", memory.id, "amend", actor="eve", text="Format with ruff format").review
    assert number is not None
    [commit] = svc.reviews.diff("default", number)
    [changed] = commit.memories
    assert [(p.op, p.text) for p in changed.text] == [("same", "Format with "), ("del", "black"),
                                                      ("ins", "ruff format")]
    # The title follows the text, so it is not repeated as a changed field; nothing else changed.
    assert changed.fields == [] and changed.fields_line() == ""
    svc.amend("default", memory.id, tags=["python", "lint"], title="Formatter")
    number = svc.feedback("default", memory.id, "amend", actor="eve", text="Format with ruff").review
    assert number is not None
    [commit] = svc.reviews.diff("default", number)
    assert commit.memories[0].fields == []  # a title of its own stays: the amendment keeps it


def test_approval_after_main_changed_a_memory_the_review_names_but_does_not_touch_is_stale(
        svc: MemoryService) -> None:
    agent = svc.remember("default", "Use descriptive variable and method names, always.", source="agent").memory
    user = svc.remember("default", "Use descriptive variable and method names.", source="user").memory
    assert agent is not None and user is not None
    result = svc.consolidate("default")
    assert result.review is not None and [d.kind for d in result.decisions] == ["cover"]
    [commit] = svc.reviews.diff("default", result.review)
    # The agent's statement goes because the user's covers it: the user's file is not touched,
    # but the commit names the user's memory in its Memory-Id trailers.
    assert [(f.path, f.status) for f in commit.files] == [(agent.path, "deleted")]
    assert set(commit.memory_ids) == {agent.id, user.id}
    svc.amend("default", user.id, text="Use short names for loop variables.")
    moved = main_head(svc)
    with pytest.raises(StaleReview) as stale:
        svc.reviews.approve("default", result.review, actor="alice")
    assert str(stale.value) == (f"review #{result.review}: commit {commit.id[:10]} (\"{commit.summary}\") is "
                                f"stale: main changed the text of {user.path} after the review was opened; "
                                "run consolidation again to review the current state; nothing was merged")
    assert main_head(svc) == moved
    assert svc.show("default", agent.id).text == "Use descriptive variable and method names, always."
    assert svc.reviews.get("default", result.review).status == "stale"


def test_approval_after_main_changed_other_memories_rebases(svc: MemoryService) -> None:
    number = three_merges(svc)
    svc.remember("default", "Keep CI under ten minutes.")
    review = svc.reviews.approve("default", number, actor="alice")
    assert review.status == "merged"
    assert "Keep CI under ten minutes." in active(svc)
    assert len(active(svc)) == 4


def test_reject_closes_the_review_and_leaves_main_untouched(svc: MemoryService) -> None:
    number = three_merges(svc)
    before = main_head(svc)
    review = svc.reviews.get("default", number)
    rejected = svc.reviews.reject("default", number, actor="bob", reason="keep them apart")
    assert rejected.status == "rejected" and rejected.decided_by == "bob"
    assert rejected.comments[-1]["text"] == "keep them apart"
    assert main_head(svc) == before
    repo = namespace_of(svc, "default").store.repo
    assert review.branch not in repo.references  # gone from refs/heads
    assert str(repo.references[f"refs/gitmem/closed/{number}"].target) == review.head
    assert len(svc.reviews.diff("default", number)) == 3  # still readable
    with pytest.raises(Conflict, match="already rejected"):
        svc.reviews.approve("default", number, actor="bob")



def test_consolidation_branches_without_a_review_are_pruned(svc: MemoryService, settings: Settings) -> None:
    number = three_merges(svc)
    branch = svc.reviews.get("default", number).branch
    repo = settings.repos_dir / "default.git"
    main = main_head(svc)
    assert main is not None
    orphans = ["refs/heads/consolidate/default/20200101T000000Z", "refs/heads/consolidate/default/20200101T000000Z-2"]
    kept = ["refs/heads/consolidate/team/20200101T000000Z", "refs/heads/review/amend-20200101T000000-abcdef0"]
    for ref in orphans + kept:
        git(repo, "update-ref", ref, main)  # as a run killed between its branch and its review leaves it

    assert sorted(svc.reviews.prune_orphans("default")) == orphans

    left = git(repo, "for-each-ref", "--format=%(refname)").split()
    assert not set(orphans) & set(left)
    assert {branch, *kept} <= set(left)
    assert svc.reviews.prune_orphans("default") == []


def test_a_run_prunes_orphaned_branches_first(svc: MemoryService, settings: Settings) -> None:
    repo = settings.repos_dir / "default.git"
    orphan = "refs/heads/consolidate/default/20200101T000000Z"
    git(repo, "update-ref", orphan, "main")
    assert svc.consolidate("default").summary == "nothing to consolidate"
    assert orphan not in git(repo, "for-each-ref", "--format=%(refname)").split()


def test_comments_and_listing(svc: MemoryService) -> None:
    number = three_merges(svc)
    svc.reviews.comment("default", number, actor="carol", text="Looks right to me.")
    review = svc.reviews.comment("default", number, actor="dan", text="同意。")
    assert [(c["actor"], c["text"]) for c in review.comments] == [("carol", "Looks right to me."), ("dan", "同意。")]
    assert [r.number for r in svc.reviews.list("default", status="open")] == [number]
    assert svc.reviews.list("default", status="merged") == []


def test_bad_input_is_refused_and_changes_nothing(svc: MemoryService) -> None:
    number = three_merges(svc)
    before = main_head(svc)
    with pytest.raises(InvalidInput, match="not part of review"):
        svc.reviews.approve("default", number, actor="alice", commits=["deadbeef"])
    with pytest.raises(InvalidInput, match="not a commit id"):
        svc.reviews.approve("default", number, actor="alice", commits=["../main"])
    with pytest.raises(InvalidInput, match="actor"):
        svc.reviews.approve("default", number, actor=" ")
    with pytest.raises(InvalidInput, match="comment is empty"):
        svc.reviews.comment("default", number, actor="x", text="   ")
    with pytest.raises(InvalidInput, match="unknown review status"):
        svc.reviews.list("default", status="closed")
    with pytest.raises(InvalidInput, match="review number"):
        svc.reviews.get("default", 0)
    with pytest.raises(ReviewNotFound, match="no review #99"):
        svc.reviews.get("default", 99)
    for reason in ("", "   "):
        with pytest.raises(InvalidInput, match="a reason is required"):
            svc.reviews.reject("default", number, actor="bob", reason=reason)
    assert main_head(svc) == before
    assert svc.reviews.get("default", number).status == "open"


def test_an_amendment_by_a_non_maintainer_is_reviewed_then_merged(svc: MemoryService) -> None:
    memory = svc.remember("default", "Use pnpm.").memory
    assert memory is not None
    seen: list[dict[str, Any]] = []

    def listen(settings: Settings, event: dict[str, Any]) -> None:
        seen.append(event)

    notify.subscribe(listen)
    try:
        result = svc.feedback("default", memory.id, "amend", actor="eve", text="Use pnpm 9, not npm.")
    finally:
        notify.unsubscribe(listen)
    assert result.review is not None
    assert seen[0]["event"] == "review.opened" and seen[0]["summary"].startswith("eve proposes: Amend")
    review = svc.reviews.get("default", result.review)
    assert review.kind == "amend" and review.author == "eve"
    assert svc.show("default", memory.id).text == "Use pnpm."
    svc.reviews.approve("default", review.number, actor="maintainer")
    assert svc.show("default", memory.id).text == "Use pnpm 9, not npm."


def test_reviews_travel_with_the_repository_but_not_in_a_clone_of_main(
        svc: MemoryService, settings: Settings, tmp_path: Path, fsck: Callable[[str], None]) -> None:
    number = three_merges(svc)
    svc.reviews.approve("default", number, actor="alice")
    repo = settings.repos_dir / "default.git"
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, capture_output=True)
    refs = subprocess.run(["git", "-C", str(clone), "for-each-ref", "--format=%(refname)"],
                          check=True, capture_output=True, text=True).stdout
    assert "refs/gitmem" not in refs and "consolidate" not in refs
    assert "reviews/1.json" in git(repo, "ls-tree", "-r", "--name-only", "refs/gitmem/reviews")
    fsck("default")


# --- the CLI ---------------------------------------------------------------------------------------


def cli(settings: Settings, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")}
    env["GITMEM_HOME"] = str(settings.home)
    done = subprocess.run([sys.executable, "-m", "gitmem", *args], env=env, capture_output=True, text=True)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def test_cli_consolidate_and_review_commands(svc: MemoryService, settings: Settings) -> None:
    for older, newer in TOPICS:
        plant(svc, older, days=2)
        plant(svc, newer, days=1)
    dry = json.loads(cli(settings, "consolidate", "--dry-run", "--json").stdout)
    assert dry["review"] is None and len(dry["plan"]["clusters"]) == 3
    run = cli(settings, "consolidate")
    assert "consolidated 6 memories into 3, review #1" in run.stdout
    listed = json.loads(cli(settings, "review", "list", "--json").stdout)
    assert [(r["number"], r["status"]) for r in listed] == [(1, "open")]
    shown = json.loads(cli(settings, "review", "show", "1", "--json").stdout)
    assert len(shown["commits"]) == 3
    text = cli(settings, "review", "show", "1").stdout
    assert "--- /dev/null" in text and "Reason: offline rules" in text
    assert "what changes: 6 memories into 3" in text and "[open]" in text
    assert "words lost" not in text  # offline merges lose nothing
    assert shown["commits"][0]["state"] == "open" and "lost_words" in shown["commits"][0]
    cli(settings, "review", "comment", "1", "ship it", "--actor", "carol")
    sha = shown["commits"][0]["id"]
    approved = json.loads(cli(settings, "review", "approve", "1", "--commit", sha, "--actor", "alice",
                              "--json").stdout)
    assert approved["status"] == "open" and approved["approved_commits"] == [sha]
    assert approved["commit_states"] == {sha: "merged"}
    assert approved["comments"][0]["text"] == "ship it"
    again = cli(settings, "review", "approve", "1", "--commit", sha, ok=False)
    assert again.returncode == 4 and again.stderr.startswith(f"error: commit {sha[:10]} of review #1 is merged")
    rest = cli(settings, "review", "approve", "1", "--actor", "alice")
    assert rest.stdout.startswith("review #1: merged 3 of 3")
    missing = cli(settings, "review", "reject", "7", "--reason", "no", ok=False)
    assert missing.returncode == 3 and "no review #7" in missing.stderr



def test_cli_review_reject(svc: MemoryService, settings: Settings) -> None:
    number = three_merges(svc)
    before = main_head(svc)
    done = cli(settings, "review", "reject", str(number), "--reason", "keep them apart", "--actor", "bob")
    assert done.stdout == f"review #{number} rejected\n"
    [listed] = json.loads(cli(settings, "review", "list", "--json").stdout)
    assert (listed["number"], listed["status"], listed["decided_by"]) == (number, "rejected", "bob")
    assert [(c["actor"], c["text"]) for c in listed["comments"]] == [("bob", "keep them apart")]
    assert main_head(svc) == before
    assert active(svc) == sorted(text for pair in TOPICS for text in pair)
    assert listed["branch"] not in git(settings.repos_dir / "default.git", "for-each-ref", "--format=%(refname)")
    again = cli(settings, "review", "reject", str(number), "--reason", "again", "--json", ok=False)
    assert again.returncode == 4 and again.stderr == f"error: review #{number} is already rejected\n"
    no_reason = cli(settings, "review", "reject", str(number), ok=False)
    assert no_reason.returncode == 2 and "--reason" in no_reason.stderr


def test_reading_reviews_writes_nothing(svc: MemoryService) -> None:
    repo = namespace_of(svc, "default").store.repo
    before = {name: str(repo.references[name].target) for name in repo.references}
    assert svc.reviews.list("default") == []
    with pytest.raises(ReviewNotFound):
        svc.reviews.get("default", 1)
    with pytest.raises(ReviewNotFound):
        svc.reviews.diff("default", 1)
    assert {name: str(repo.references[name].target) for name in repo.references} == before


@pytest.mark.parametrize("number", ["\u0663", "\uff13", "+3", "3_0", "-3", ""])
def test_a_review_number_is_ascii_digits(number: str) -> None:
    with pytest.raises(InvalidInput, match="is not a review number"):
        _number(number)


def test_a_review_number_may_have_a_hash() -> None:
    assert _number("#3") == _number(" 3 ") == _number(3) == 3


def test_a_memory_merged_away_points_to_the_one_that_replaced_it(svc: MemoryService, settings: Settings) -> None:
    number = three_merges(svc)
    [commit] = [c for c in svc.reviews.diff("default", number)
                if any("提交代码" in (m.before or "") for m in c.memories)]
    gone = commit.members[0].id
    svc.reviews.approve("default", number, actor="alice")
    assert svc.reviews.successor("default", gone) == commit.result
    shown = cli(settings, "show", gone, ok=False)
    assert shown.returncode == 3 and f"was merged into {commit.result}" in shown.stderr
    assert svc.reviews.successor("default", "0000000000") is None


def test_cli_feedback_confirms_discusses_and_proposes(svc: MemoryService, settings: Settings) -> None:
    memory = svc.remember("default", "Use pnpm.").memory
    assert memory is not None
    confirmed = json.loads(cli(settings, "feedback", memory.id, "confirm", "--actor", "zoe", "--json").stdout)
    assert confirmed["action"] == "confirm" and confirmed["memory"]["verified"] == ["zoe"]
    cli(settings, "feedback", memory.id, "discuss", "which version?", "--actor", "zoe")
    assert [c.text for c in svc.discussion("default", memory.id)] == ["which version?"]
    proposed = cli(settings, "feedback", memory.id, "amend", "Use pnpm 9.", "--actor", "eve")
    assert "opened review #1" in proposed.stdout and svc.show("default", memory.id).text == "Use pnpm."
    bad = cli(settings, "feedback", memory.id, "like", ok=False)
    assert bad.returncode == 2 and "like" in bad.stderr


def test_the_cli_records_the_local_user_for_every_write(svc: MemoryService, settings: Settings) -> None:
    import getpass

    me = getpass.getuser()
    added = json.loads(cli(settings, "remember", "Use tabs.", "--json").stdout)
    memory_id = added["memory"]["id"]
    cli(settings, "amend", memory_id, "Use spaces.")
    cli(settings, "forget", memory_id, "--reason", "style guide moved")
    cli(settings, "feedback", memory_id, "discuss", "why?")
    actors = [c.actor for c in svc.log("default", limit=4)]
    assert actors == [me, me, me, me]
    cli(settings, "amend", memory_id, "Use tabs again.", "--actor", "ci")
    assert svc.log("default", limit=1)[0].actor == "ci"
