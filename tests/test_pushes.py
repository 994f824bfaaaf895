"""What a push becomes (gitmem.pushes): who may push where, the review it opens, main moving forward.

Real packs from ``git pack-objects`` go into a real namespace through :class:`Pushes`, without the
HTTP layer (tests/web/test_push.py pushes with the git client; this is the fast, exact part).
Every refusal is checked to leave the repository as it was.
"""

from __future__ import annotations

import io
import re
import subprocess
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from pathlib import Path

import pygit2
import pytest

from gitmem import concepts
from gitmem.errors import InvalidInput, RefRaceLost
from gitmem.pushes import Outcome, Pushes, ReviewPlan, _slug
from gitmem.repo import MAIN, Store
from gitmem.repo import receive as wire
from gitmem.service import MemoryService
from gitmem.settings import Settings

from .conftest import namespace_of
from .gitbuild import Entry, bare, commit

OKF = "---\ntype: {type}\n---\n\n{text}\n"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"


def okf(text: str, type: str = "fact") -> bytes:
    return OKF.format(type=type, text=text).encode()


class Clone:
    """A client's repository: it sees the namespace's objects (as a clone would hold them) and adds its own."""

    def __init__(self, store: Store, path: Path) -> None:
        self.store = store
        bare(path)
        (path / "objects" / "info" / "alternates").write_text(str(Path(store.repo.path) / "objects") + "\n")
        self.repo = pygit2.Repository(str(path))

    def files(self, commit_id: str) -> dict[str, Entry]:
        out: dict[str, Entry] = {}

        def walk(tree: pygit2.Tree, prefix: str) -> None:
            for entry in tree:
                obj = self.repo[entry.id]
                if isinstance(obj, pygit2.Tree):
                    walk(obj, f"{prefix}{entry.name}/")
                elif isinstance(obj, pygit2.Blob):
                    out[f"{prefix}{entry.name}"] = obj.data

        parent = self.repo[pygit2.Oid(hex=commit_id)]
        assert isinstance(parent, pygit2.Commit)
        walk(parent.tree, "")
        return out

    def commit(self, parent: str, changes: dict[str, Entry | None], message: str = "edit\n") -> str:
        """A commit on ``parent`` with ``changes`` made (None deletes a file)."""
        files = self.files(parent)
        for path, data in changes.items():
            if data is None:
                files.pop(path, None)
            else:
                files[path] = data
        return commit(self.repo, files, [parent], message)

    def pack(self, tips: str | list[str], *known: str) -> bytes:
        wanted = [tips] if isinstance(tips, str) else tips
        revs = "".join(f"{t}\n" for t in wanted) + "".join(f"^{k}\n" for k in known)
        return subprocess.run(["git", "--git-dir", self.repo.path, "pack-objects", "--revs", "--stdout", "--thin",
                               "-q"], input=revs.encode(), capture_output=True, check=True).stdout


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """No embeddings: filling vectors after a push to main takes a second a time, and is not what is tested here."""
    return Settings(home=tmp_path / "home", embeddings="none")


@pytest.fixture
def main_moves() -> list[str]:
    return []


@pytest.fixture
def pushes(svc: MemoryService, settings: Settings, main_moves: list[str]) -> Pushes:
    return Pushes(svc._namespaces, svc.reviews, settings, svc._semantics, on_main=main_moves.append)


@pytest.fixture
def clone(store: Store, tmp_path: Path) -> Clone:
    return Clone(store, tmp_path / "clone.git")


def state(store: Store) -> tuple[list[tuple[str, str]], list[str]]:
    """Every ref with its commit, and every file under objects/: what a refused push must leave alone."""
    root = Path(store.repo.path)
    refs = sorted((name, str(store.repo.references[name].target)) for name in store.repo.references)
    return refs, sorted(str(p.relative_to(root)) for p in (root / "objects").rglob("*") if p.is_file())


def main_of(store: Store) -> str:
    head = store.head_id(MAIN)
    assert head is not None
    return head


Push = Callable[..., Outcome]


@pytest.fixture
def push(pushes: Pushes, clone: Clone, store: Store) -> Push:
    def run(new: str, ref: str = "refs/for/main", *, role: str = "writer", actor: str = "writer",
            old: str | None = None, base_url: str | None = None, more: list[wire.RefUpdate] = ()) -> Outcome:
        current = store.head_id(ref) if wire.valid_branch_name(ref) and ref.startswith("refs/heads/") else None
        # As read from a request: strings of their own, never the very objects of gitmem's constants.
        command = wire.RefUpdate("".join(old or current or wire.ZERO), new, "".join(list(ref)))
        tips = [c.new for c in [command, *more] if c.new != wire.ZERO]
        pack = clone.pack(tips, *wire.branch_tips(store)) if tips else b""
        return pushes.apply("default", [command, *more], io.BytesIO(pack), actor=actor, role=role,
                            base_url=base_url)

    return run


# --- to a review ---------------------------------------------------------------------------------------


def test_a_push_to_refs_for_main_opens_a_review_and_leaves_main(push: Push, clone: Clone, store: Store,
                                                                svc: MemoryService, main_moves: list[str],
                                                                events: list[dict[str, object]]) -> None:
    main = main_of(store)
    new = clone.commit(main, {"fact/db.md": okf("The database is PostgreSQL 16")}, "Database\n\nwhy\n")
    outcome = push(new, actor="Ann Smith", base_url="https://mem.example.com/")
    assert outcome.accepted and outcome.results == [("refs/for/main", None)] and outcome.reviews == [1]
    assert outcome.main is None and main_of(store) == main and main_moves == []
    assert outcome.messages[:2] == [
        "review #1 opened with 1 commit: https://mem.example.com/ns/default/reviews/1",
        "nothing reaches main until a reviewer approves it"]
    assert outcome.messages[2].startswith("main has not moved since your commits' base")
    review = svc.reviews.get("default", 1)
    assert (review.title, review.kind, review.author, review.base, review.head, review.commit_count) == (
        "Database", "push", "Ann Smith", main, new, 1)
    assert review.description == "Pushed over git by Ann Smith:\n\n- Database"
    assert re.fullmatch(r"refs/heads/review/push-ann-smith-\d{8}T\d{6}", review.branch), review.branch
    assert store.head_id(review.branch) == new
    assert [e["event"] for e in events] == ["review.opened"]


def test_without_an_address_the_review_is_named_by_its_command(push: Push, clone: Clone, store: Store) -> None:
    new = clone.commit(main_of(store), {"fact/db.md": okf("The database is PostgreSQL 16")}, "Database\n")
    two = clone.commit(new, {"fact/cache.md": okf("The cache is Redis 7")}, "Cache\n")
    outcome = push(two)
    assert outcome.messages[0] == "review #1 opened with 2 commits: `gitmem review show 1 --namespace default`"


def test_a_push_to_a_review_branch_opens_a_review_of_that_branch(push: Push, clone: Clone, store: Store,
                                                                  svc: MemoryService) -> None:
    main = main_of(store)
    new = clone.commit(main, {"fact/db.md": okf("The database is PostgreSQL 16")}, "Database\n")
    assert push(new, "refs/heads/review/db").accepted
    review = svc.reviews.get("default", 1)
    assert (review.branch, review.head, review.base) == ("refs/heads/review/db", new, main)
    newer = clone.commit(new, {"fact/db.md": okf("The database is PostgreSQL 17")}, "Upgrade\n")
    updated = push(newer, "refs/heads/review/db")
    assert updated.messages[0] == "review #1 updated with 2 commits: `gitmem review show 1 --namespace default`"
    assert updated.reviews == [1] and svc.reviews.get("default", 1).head == newer
    assert store.head_id("refs/heads/review/db") == newer and len(svc.reviews.list("default")) == 1


def test_a_push_of_what_an_open_review_holds_opens_nothing_and_keeps_nothing(push: Push, clone: Clone,
                                                                             store: Store, svc: MemoryService) -> None:
    new = clone.commit(main_of(store), {"fact/db.md": okf("The database is PostgreSQL 16")}, "Database\n")
    assert push(new).accepted
    before = state(store)
    again = push(new)
    assert again.accepted and again.reviews == []
    assert again.messages == ["review #1 holds these commits already; it waits for a reviewer"]
    assert state(store) == before and len(svc.reviews.list("default")) == 1


def test_commits_an_open_review_holds_pushed_to_a_new_branch_open_a_review_of_it(
        push: Push, clone: Clone, store: Store, svc: MemoryService) -> None:
    new = clone.commit(main_of(store), {"fact/db.md": okf("The database is PostgreSQL 16")}, "Database\n")
    assert push(new).accepted
    outcome = push(new, "refs/heads/review/mine")
    assert outcome.reviews == [2] and outcome.messages[0].startswith("review #2 opened with 1 commit")
    assert svc.reviews.get("default", 2).branch == "refs/heads/review/mine"


def test_a_push_on_top_of_an_open_review_stacks_on_it(push: Push, clone: Clone, store: Store,
                                                      svc: MemoryService) -> None:
    main = main_of(store)
    first = clone.commit(main, {"fact/db.md": okf("The database is PostgreSQL 16")}, "Database\n")
    assert push(first).accepted
    second = clone.commit(first, {"fact/cache.md": okf("The cache is Redis 7")}, "Cache\n")
    third = clone.commit(second, {"fact/queue.md": okf("The queue is RabbitMQ")}, "Queue\n")
    outcome = push(third, base_url="http://x")
    assert outcome.messages[:3] == [
        "review #2 opened with 2 commits: http://x/ns/default/reviews/2",
        "it holds only the commits after review #1 (still open, 1 commit); approve #1 first",
        "nothing reaches main until a reviewer approves it"]
    review = svc.reviews.get("default", 2)
    assert (review.base, review.head, review.commit_count, review.title) == (first, third, 2, "2 commits: Cache")
    assert review.description == ("Pushed over git by writer:\n\n- Cache\n- Queue\n\nThese commits come after those "
                                  "of review #1, which is open: approve that one first.")
    # A third push stacks on the nearest open review: #2, not #1.
    fourth = clone.commit(third, {"fact/log.md": okf("Logs go to Loki")}, "Logs\n")
    assert push(fourth).messages[1] == "it holds only the commits after review #2 (still open, 2 commits); " \
                                       "approve #2 first"
    assert svc.reviews.get("default", 3).base == third


def test_a_push_beside_an_open_review_does_not_stack_on_it(push: Push, clone: Clone, store: Store,
                                                           svc: MemoryService) -> None:
    main = main_of(store)
    first = clone.commit(main, {"fact/db.md": okf("The database is PostgreSQL 16")}, "Database\n")
    assert push(first).accepted
    other = clone.commit(main, {"fact/cache.md": okf("The cache is Redis 7")}, "Cache\n")
    outcome = push(other)
    assert outcome.accepted and "after review #1" not in " ".join(outcome.messages)
    assert svc.reviews.get("default", 2).base == main


def test_a_push_of_what_main_holds_opens_nothing(push: Push, store: Store, svc: MemoryService) -> None:
    before = state(store)
    outcome = push(main_of(store))
    assert not outcome.accepted
    assert outcome.results == [("refs/for/main", "refs/for/main: nothing to review: main has those commits already")]
    assert outcome.messages == ["refused: refs/for/main: nothing to review: main has those commits already",
                                "nothing was changed; fix what is named above and push again"]
    assert state(store) == before and svc.reviews.list("default") == []


def test_a_review_that_cannot_be_opened_refuses_its_ref_once_and_publishes_no_branch(push: Push, clone: Clone,
                                                                                  store: Store) -> None:
    # The web takes key names of up to 64 characters; a longer name from another front end is no author.
    new = clone.commit(main_of(store), {"fact/db.md": okf("The database is PostgreSQL 16")})
    outcome = push(new, actor="x" * 250)
    assert outcome.results == [("refs/for/main", "author is 250 characters; the limit is 200")]
    assert outcome.messages == ["refused refs/for/main: author is 250 characters; the limit is 200"]
    assert not outcome.accepted and outcome.reviews == []
    assert [ref for ref, _ in state(store)[0]] == ["refs/heads/main"]


def test_a_push_from_before_a_purge_is_told_the_way_out(push: Push, pushes: Pushes, clone: Clone, store: Store,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    old = clone.commit(main_of(store), {"fact/db.md": okf("The secret-laden fact")}, "Before the purge\n")
    new = clone.commit(old, {"fact/cache.md": okf("The cache is Redis 7")}, "After\n")
    way_out = "clone the namespace again"
    monkeypatch.setattr(pushes, "_rewritten", lambda ns: {old: way_out})  # what the purge's records on main say
    before = state(store)
    outcome = push(new)
    said = f"your history is from before a purge (commit {old[:10]}): {way_out}"
    assert outcome.results == [("refs/for/main", said)] and outcome.messages == [f"refused refs/for/main: {said}"]
    assert state(store) == before


def test_a_topic_after_refs_for_main_is_taken(push: Push, clone: Clone, store: Store) -> None:
    new = clone.commit(main_of(store), {"fact/db.md": okf("The database is PostgreSQL 16")})
    assert push(new, "refs/for/main%topic=db").accepted


# --- who may push where -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("ref", "role", "said"), [
    ("refs/heads/main", "writer", "a writer may not push to main; push to refs/for/main to open a review: git push "
                                  "origin HEAD:refs/for/main (or run `gitmem sync`)"),
    ("refs/heads/main", "reader", "a reader may not push to main; push to refs/for/main to open a review: git push "
                                  "origin HEAD:refs/for/main (or run `gitmem sync`)"),
    ("refs/for/dev", "admin", "only refs/for/main takes reviews here (there is no other branch to review against), "
                              "not refs/for/dev"),
    ("refs/for/mainline", "admin", "only refs/for/main takes reviews here (there is no other branch to review "
                                   "against), not refs/for/mainline"),
    ("refs/heads/feature", "admin", "gitmem takes pushes to refs/for/main, refs/heads/review/<name> and "
                                    "(reviewers) main, not to refs/heads/feature"),
    ("refs/tags/v1", "admin", "gitmem takes pushes to refs/for/main, refs/heads/review/<name> and (reviewers) "
                              "main, not to refs/tags/v1"),
    ("refs/heads/review/-db", "writer", "refs/heads/review/-db is not a review branch name gitmem takes "
                                        "(letters, digits, '.', '_', '-', '/')"),
    ("refs/heads/review/a..b", "writer", "refs/heads/review/a..b is not a review branch name gitmem takes "
                                         "(letters, digits, '.', '_', '-', '/')"),
    ("refs/heads/review/" + "x" * 101, "writer", f"refs/heads/review/{'x' * 101} is not a review branch name "
                                                 "gitmem takes (letters, digits, '.', '_', '-', '/')"),
    ("refs/heads/review/a b", "writer", "refs/heads/review/a b is not a review branch name gitmem takes "
                                        "(letters, digits, '.', '_', '-', '/')"),
])
def test_a_push_where_the_role_may_not_push_is_refused(push: Push, clone: Clone, store: Store, ref: str,
                                                       role: str, said: str) -> None:
    new = clone.commit(main_of(store), {"fact/db.md": okf("The database is PostgreSQL 16")})
    before = state(store)
    outcome = push(new, ref, role=role)
    assert not outcome.accepted
    assert outcome.results == [(ref, said)] and outcome.messages == [f"refused {ref}: {said}"]
    assert state(store) == before


@pytest.mark.parametrize("name", ["a", "db/v2", "A_b.c-d", "x" * 100])
def test_review_branch_names_of_letters_digits_and_marks_are_taken(push: Push, clone: Clone, store: Store,
                                                                   name: str) -> None:
    new = clone.commit(main_of(store), {"fact/db.md": okf("The database is PostgreSQL 16")})
    assert push(new, f"refs/heads/review/{name}").accepted


def test_deleting_a_branch_is_refused(push: Push, clone: Clone, store: Store) -> None:
    new = clone.commit(main_of(store), {"fact/db.md": okf("The database is PostgreSQL 16")})
    assert push(new, "refs/heads/review/db").accepted
    before = state(store)
    outcome = push(wire.ZERO, "refs/heads/review/db", role="admin")
    assert outcome.results == [("refs/heads/review/db", "deleting a branch over git is not allowed; reject the "
                                                        "review instead (its page, or `gitmem review reject`)")]
    assert state(store) == before


def test_only_its_author_or_a_reviewer_moves_a_review_branch(push: Push, clone: Clone, store: Store,
                                                             svc: MemoryService) -> None:
    new = clone.commit(main_of(store), {"fact/db.md": okf("The database is PostgreSQL 16")})
    assert push(new, "refs/heads/review/db", actor="ann").accepted
    newer = clone.commit(new, {"fact/db.md": okf("The database is MySQL")})
    before = state(store)
    refused = push(newer, "refs/heads/review/db", actor="mallory")
    assert refused.results == [("refs/heads/review/db", "refs/heads/review/db is review #1 by ann; push your own "
                                                        "changes to refs/for/main or a review branch of your own")]
    assert state(store) == before
    assert push(newer, "refs/heads/review/db", actor="aaron").results[0][1] == (
        "refs/heads/review/db is review #1 by ann; push your own changes to refs/for/main or a review branch of your "
        "own")  # a name that sorts before the author's is not the author either
    assert push(newer, "refs/heads/review/db", actor="rita", role="reviewer").accepted
    newest = clone.commit(newer, {"fact/db.md": okf("The database is MariaDB")})
    assert push(newest, "refs/heads/review/db", actor="root", role="admin").accepted
    assert svc.reviews.get("default", 1).head == newest


def test_each_pusher_moves_only_the_review_of_their_own_branch(push: Push, clone: Clone, store: Store,
                                                             svc: MemoryService) -> None:
    main = main_of(store)
    heads = {}
    for name, actor in (("b", "bob"), ("a", "ann"), ("c", "cy")):  # reviews #1, #2, #3
        heads[name] = clone.commit(main, {f"fact/{name}.md": okf(f"Fact {name}")}, f"{name}\n")
        assert push(heads[name], f"refs/heads/review/{name}", actor=actor).accepted
    for number, (name, actor) in ((2, ("a", "ann")), (3, ("c", "cy"))):
        newer = clone.commit(heads[name], {f"fact/{name}.md": okf(f"Fact {name}, again")}, f"{name} again\n")
        outcome = push(newer, f"refs/heads/review/{name}", actor=actor)
        assert outcome.accepted and outcome.reviews == [number], outcome.messages
        assert svc.reviews.get("default", number).head == newer
    assert svc.reviews.get("default", 1).head == heads["b"]


def test_a_review_branch_of_no_open_review_takes_no_commits(push: Push, clone: Clone, store: Store) -> None:
    main = main_of(store)
    store.move_ref("refs/heads/review/db", main, None, "left behind")  # a branch whose review is gone
    newer = clone.commit(main, {"fact/db.md": okf("The database is MySQL")})
    before = state(store)
    outcome = push(newer, "refs/heads/review/db")
    assert outcome.results == [("refs/heads/review/db", "refs/heads/review/db belongs to no open review; push to a "
                                                        "new review branch name")]
    assert state(store) == before


# --- to main ---------------------------------------------------------------------------------------------


def test_a_reviewers_fast_forward_moves_main_and_completes_the_files(push: Push, clone: Clone, store: Store,
                                                                     svc: MemoryService, main_moves: list[str],
                                                                     events: list[dict[str, object]]) -> None:
    main = main_of(store)
    new = clone.commit(main, {"fact/db.md": okf("The database is PostgreSQL 16")}, "Database\n")
    outcome = push(new, MAIN, role="reviewer", actor="rita")
    assert outcome.accepted and outcome.results == [(MAIN, None)]
    tip = main_of(store)
    assert outcome.main == tip != new and store.is_ancestor(store.commit(new), store.commit(tip))
    assert outcome.messages == [
        f"main is at {tip[:10]}: 1 commit from rita",
        "gitmem completed the memory files in one more commit (the fields it keeps: id, created, potency...; "
        "titles that follow an edited text): git pull to get it"]
    assert main_moves == ["default"]
    (merged,) = [e for e in events if e["event"] == "push.merged"]
    assert (merged["actor"], merged["before"], merged["after"], merged["commits"], merged["summary"]) == (
        "rita", main, tip, 1, "rita pushed 1 commit to main")
    assert [m.text for m in svc.list("default")] == ["The database is PostgreSQL 16"]
    # Files complete already land as they are: main is the pushed commit, with no more to say.
    pulled = clone.commit(tip, {"fact/db.md": store.read("fact/db.md", store.commit(tip)).replace(b"16", b"17")})
    again = push(pulled, MAIN, role="admin", actor="root")
    assert again.main == pulled == main_of(store)
    assert again.messages == [f"main is at {pulled[:10]}: 1 commit from root"]
    assert svc.list("default")[0].text == "The database is PostgreSQL 17"


def test_the_completion_is_told_whatever_its_commit_id(push: Push, clone: Clone, store: Store) -> None:
    seen = set()
    for n in range(64):  # each completion commit's id is another draw: both orders come within a few
        new = clone.commit(main_of(store), {f"fact/f{n}.md": okf(f"Fact number {n}")})
        outcome = push(new, MAIN, role="reviewer", actor="rita")
        assert outcome.main is not None and outcome.main != new
        assert outcome.messages[-1].startswith("gitmem completed the memory files in one more commit")
        seen.add(outcome.main < new)
        if seen == {True, False}:
            break
    assert seen == {True, False}


def test_main_moves_only_by_compare_and_swap_and_only_forward(pushes: Pushes, svc: MemoryService, clone: Clone,
                                                               store: Store) -> None:
    # What the checks found true may not be by the time main moves: the move itself checks again.
    ns = namespace_of(svc)
    seen = main_of(store)
    new = clone.commit(seen, {"fact/db.md": okf("The database is PostgreSQL 16")})
    quarantine = wire.Quarantine(store)
    quarantine.receive(io.BytesIO(clone.pack(new, seen)))
    quarantine.migrate()
    svc.remember("default", "Deploys happen on Tuesdays", type="convention")
    now = main_of(store)
    with pytest.raises(RefRaceLost, match=f"^main moved since you fetched it \\(it is at {now[:10]} now\\)"):
        pushes._to_main(ns, wire.RefUpdate("".join(list(seen)), new, MAIN), "rita", Outcome())
    with pytest.raises(InvalidInput, match="^main only moves forward"):
        pushes._to_main(ns, wire.RefUpdate("".join(list(now)), new, MAIN), "rita", Outcome())
    assert main_of(store) == now


def test_main_moved_since_the_clone_fetched_is_refused_as_moved(push: Push, clone: Clone, store: Store,
                                                                svc: MemoryService) -> None:
    seen = main_of(store)
    new = clone.commit(seen, {"fact/db.md": okf("The database is PostgreSQL 16")})
    svc.remember("default", "Deploys happen on Tuesdays", type="convention")
    now = main_of(store)
    before = state(store)
    outcome = push(new, MAIN, role="admin", old=seen)
    assert outcome.results == [(MAIN, f"main moved since you fetched it (it is at {now[:10]} now); fetch, rebase "
                                      "and push again (`gitmem sync` does all three)")]
    assert state(store) == before
    forced = push(new, MAIN, role="admin", old=now)  # what a forced push says: main as it is now
    assert forced.results == [(MAIN, f"main is at {now[:10]}, which your commit does not build on (it moved since "
                                     "you fetched, or your history was rewritten); fetch, rebase and push again "
                                     "(`gitmem sync` does all three)")]
    assert state(store) == before


@pytest.mark.parametrize("back", [1, 2])
def test_taking_main_back_is_refused_naming_what_it_would_drop(push: Push, store: Store, svc: MemoryService,
                                                               back: int) -> None:
    start = main_of(store)
    svc.remember("default", "Deploys happen on Tuesdays", type="convention")
    middle = main_of(store)
    svc.remember("default", "Releases are tagged vX.Y.Z", type="convention")
    target = [middle, start][back - 1]
    before = state(store)
    outcome = push(target, MAIN, role="admin")
    dropped = "1 commit" if back == 1 else "2 commits"
    assert outcome.results == [(MAIN, f"main only moves forward: your push would take it back to {target[:10]}, "
                                      f"dropping {dropped}; to undo a change, revert it (`gitmem revert COMMIT`)")]
    assert state(store) == before


# --- problems, several refs, the pack --------------------------------------------------------------------


def test_a_bad_file_refuses_the_whole_push_and_every_ref(push: Push, clone: Clone, store: Store) -> None:
    main = main_of(store)
    bad = clone.commit(main, {"notes/x.md": okf("stray")}, "Stray\n")
    good = clone.commit(main, {"fact/ok.md": okf("fine")})
    before = state(store)
    outcome = push(bad, more=[wire.RefUpdate(wire.ZERO, good, "refs/heads/review/ok")])
    problem = (f"notes/x.md: not in a memory folder; a memory is <type>/<name>.md, with <type> one of "
               f"{', '.join(concepts.TYPES)} (commit {bad[:10]} \"Stray\")")
    assert not outcome.accepted
    assert outcome.messages == [f"refused: {problem}",
                                "nothing was changed; fix what is named above and push again"]
    assert outcome.results == [("refs/for/main", problem), ("refs/heads/review/ok", problem)]
    assert state(store) == before


def test_every_ref_is_answered_with_the_first_problem(push: Push, clone: Clone, store: Store) -> None:
    two = clone.commit(main_of(store), {"notes/x.md": okf("stray"), "fact/y.txt": b"y\n"}, "Two\n")
    outcome = push(two)
    assert outcome.results == [("refs/for/main", outcome.messages[0].removeprefix("refused: "))]
    assert outcome.messages[0].startswith("refused: fact/y.txt: only Markdown memory files")
    assert outcome.messages[1].startswith("refused: notes/x.md: not in a memory folder")


def test_a_push_to_main_and_to_a_review_at_once_does_both(push: Push, clone: Clone, store: Store,
                                                          svc: MemoryService) -> None:
    main = main_of(store)
    landed = clone.commit(main, {"fact/db.md": okf("The database is PostgreSQL 16")}, "Database\n")
    proposed = clone.commit(landed, {"fact/cache.md": okf("The cache is Redis 7")}, "Cache\n")
    outcome = push(landed, MAIN, role="reviewer", actor="rita", old=main,
                   more=[wire.RefUpdate(wire.ZERO, proposed, "refs/for/main")])
    assert outcome.accepted and outcome.reviews == [1] and outcome.main == main_of(store)
    assert svc.reviews.get("default", 1).head == proposed


def test_a_review_plan_is_a_value() -> None:
    with pytest.raises(FrozenInstanceError):
        ReviewPlan("open", "b" * 40, ["x"]).how = "same"  # type: ignore[misc]


def test_one_ref_refused_leaves_the_others_unapplied(push: Push, clone: Clone, store: Store) -> None:
    main = main_of(store)
    new = clone.commit(main, {"fact/ok.md": okf("fine")})
    before = state(store)
    outcome = push(new, more=[wire.RefUpdate(wire.ZERO, new, "refs/heads/feature")])
    assert outcome.results == [
        ("refs/for/main", "not applied: another ref of this push was refused"),
        ("refs/heads/feature", "gitmem takes pushes to refs/for/main, refs/heads/review/<name> and (reviewers) main, "
                               "not to refs/heads/feature")]
    assert outcome.messages == ["refused refs/heads/feature: gitmem takes pushes to refs/for/main, "
                                "refs/heads/review/<name> and (reviewers) main, not to refs/heads/feature"]
    assert state(store) == before


def test_a_refused_ref_is_all_a_push_is_told_though_its_files_are_bad_too(push: Push, clone: Clone,
                                                                         store: Store) -> None:
    bad = clone.commit(main_of(store), {"notes/x.md": okf("stray")}, "Stray\n")
    outcome = push(bad, more=[wire.RefUpdate(wire.ZERO, bad, "refs/heads/feature")])
    assert outcome.messages == ["refused refs/heads/feature: gitmem takes pushes to refs/for/main, "
                                "refs/heads/review/<name> and (reviewers) main, not to refs/heads/feature"]
    assert outcome.results[0] == ("refs/for/main", "not applied: another ref of this push was refused")


def test_a_failing_after_push_hook_does_not_fail_the_push(svc: MemoryService, settings: Settings, clone: Clone,
                                                          store: Store, caplog: pytest.LogCaptureFixture) -> None:
    def broken(namespace: str) -> None:
        raise RuntimeError("the trigger broke")

    pushes = Pushes(svc._namespaces, svc.reviews, settings, svc._semantics, on_main=broken)
    new = clone.commit(main_of(store), {"fact/db.md": okf("The database is PostgreSQL 16")})
    command = wire.RefUpdate(main_of(store), new, MAIN)
    outcome = pushes.apply("default", [command], io.BytesIO(clone.pack(new, main_of(store))), actor="rita",
                           role="reviewer")
    assert outcome.accepted and outcome.main == main_of(store)
    assert "after-push hook failed in default" in caplog.text


def test_a_broken_pack_is_refused_before_anything_else(pushes: Pushes, store: Store) -> None:
    before = state(store)
    command = wire.RefUpdate(wire.ZERO, "ab" * 20, "refs/for/main")
    outcome = pushes.apply("default", [command], io.BytesIO(b"PACK\0\0\0\2 broken"), actor="w", role="writer")
    assert outcome.unpack.startswith("the pushed pack was refused: ") and "\n" not in outcome.unpack
    assert len(outcome.unpack) <= 300
    assert outcome.results == [("refs/for/main", "the pack was refused")]
    (said,) = outcome.messages
    assert said.startswith("refused: the pushed pack was refused: ")
    assert not outcome.accepted and state(store) == before


def test_an_outcome_is_accepted_only_when_the_pack_and_every_ref_were() -> None:
    assert Outcome().accepted
    assert Outcome(results=[("a", None), ("b", None)]).accepted
    assert not Outcome(results=[("a", None), ("b", "no")]).accepted
    assert not Outcome(unpack="broken", results=[("a", None)]).accepted
    assert not Outcome(unpack="the pushed pack was refused: fatal", results=[("a", None)]).accepted


# --- over the wire -----------------------------------------------------------------------------------------


def request(command: wire.RefUpdate, caps: str, pack: bytes) -> io.BytesIO:
    line = f"{command.old} {command.new} {command.ref}".encode() + b"\0" + caps.encode() + b"\n"
    return io.BytesIO(wire.pkt(line) + wire.FLUSH + pack)


def test_a_push_request_is_answered_on_the_side_band_when_asked(pushes: Pushes, clone: Clone, store: Store) -> None:
    new = clone.commit(main_of(store), {"fact/db.md": okf("The database is PostgreSQL 16")}, "Database\n")
    pack = clone.pack(new, main_of(store))
    command = wire.RefUpdate(wire.ZERO, new, "refs/for/main")
    answer = pushes.receive("default", request(command, "report-status side-band-64k", pack), actor="writer",
                            role="writer", base_url="http://x")
    assert answer.startswith(wire.pkt(b"\x02review #1 opened with 1 commit: http://x/ns/default/reviews/1\n"
                                      b"nothing reaches main until a reviewer approves it\n"
                                      + answer[answer.index(b"main has not moved"):answer.index(b"\x01") - 4]))
    assert answer.endswith(wire.sideband(1, wire.pkt(b"unpack ok\n") + wire.pkt(b"ok refs/for/main\n") + b"0000")
                           + b"0000")
    newer = clone.commit(new, {"fact/db.md": okf("The database is PostgreSQL 17")}, "Upgrade\n")
    plain = pushes.receive("default", request(wire.RefUpdate(wire.ZERO, newer, "refs/for/main"), "report-status",
                                              clone.pack(newer, new)), actor="writer", role="writer")
    assert plain == wire.pkt(b"unpack ok\n") + wire.pkt(b"ok refs/for/main\n") + b"0000"


def test_gits_probe_before_a_large_push_is_answered_with_nothing(pushes: Pushes, store: Store) -> None:
    before = state(store)
    assert pushes.receive("default", io.BytesIO(b"0000"), actor="writer", role="writer") == b""
    assert state(store) == before


def test_the_advertisement_lists_the_namespaces_branches(pushes: Pushes, store: Store) -> None:
    assert pushes.advertise("default") == wire.advertisement(store)
    assert f"{main_of(store)} refs/heads/main".encode() in pushes.advertise("default")


@pytest.mark.parametrize(("actor", "slug"), [("Ann Smith", "ann-smith"), ("--Bob--", "bob"), ("!!!", "someone"),
                                             ("", "someone"), ("x" * 50, "x" * 40), ("René_2", "ren-2")])
def test_a_review_branch_is_named_after_its_pusher(actor: str, slug: str) -> None:
    assert _slug(actor) == slug
