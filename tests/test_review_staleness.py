"""When main has overtaken a review's commit (gitmem.reviews.staleness), and where merged-away links go (links).

Memories are written as files into a real repository (a Store), main moved by hand: each rule of
what makes a commit stale, and of what does not, is pinned on its own.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitmem import concepts
from gitmem.repo import MAIN, Change, Commit, Store
from gitmem.reviews import Review
from gitmem.reviews.diffs import placeholder_id
from gitmem.reviews.links import relinked, successor
from gitmem.reviews.staleness import (
    advice,
    changed_on_main,
    stale_message,
    stale_note,
    stale_note_about,
    stale_reason,
    status_of,
)

AT = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.create(tmp_path / "ns.git", b"# memories\n")


def memory(text: str, type: str = "fact", name: str | None = None, **fields: object) -> concepts.Memory:
    path = f"{type}/{name or text.split()[0].lower()}.md"
    made, _ = concepts.parse_pushed(f"---\ntype: {type}\n---\n\n{text}\n".encode(), path)
    return made.replace(**fields) if fields else made


def write(store: Store, files: dict[str, concepts.Memory | bytes | None], summary: str = "edit",
          ids: tuple[str, ...] = ()) -> Commit:
    """Commit ``files`` (a memory, raw bytes, or None to delete) on main and move main there."""
    head = store.head()
    data = {path: concepts.render(m) if isinstance(m, concepts.Memory) else m for path, m in files.items()}
    oid = store.write_commit(head, Change(data, summary, "edit", ids))
    store.move_ref(MAIN, oid, str(head.id), "test")
    return store.commit(str(oid))


def review(base: str, kind: str = "amend", number: int = 3) -> Review:
    """A review record as read back from its JSON (strings of their own, not the literals of a test)."""
    made = Review(number, "default", "a review", "open", kind, "refs/heads/review/x", base, base, "sam", AT, AT)
    return Review.from_dict(json.loads(json.dumps(made.to_dict())))


# --- what main changed ----------------------------------------------------------------------------------


def test_nothing_is_stale_while_main_is_the_base(store: Store) -> None:
    db = memory("The database is PostgreSQL")
    base = write(store, {db.path: db})
    assert changed_on_main(store, review(str(base.id))) == {}


def test_a_base_gone_from_the_repository_makes_everything_stale(store: Store) -> None:
    write(store, {"fact/a.md": memory("Anything")})
    gone = "0123456789" * 4
    assert changed_on_main(store, review(gone)) == {"*": "its base commit 0123456789 is gone from the repository"}


def test_text_type_path_and_state_changes_on_main_count(store: Store) -> None:
    db, cache, queue, log, web, idle = (memory("The database is PostgreSQL"), memory("Cache with Redis"),
                                        memory("Queue with RabbitMQ"), memory("Logs go to Loki"),
                                        memory("Web on nginx"), memory("Idle words here"))
    base = write(store, {m.path: m for m in (db, cache, queue, log, web, idle)})
    moved = replace(queue, path="fact/queues.md")
    write(store, {db.path: db.replace(text="The database is MySQL"),
                  cache.path: None,
                  queue.path: None, moved.path: moved,
                  log.path: log.replace(type="decision"),
                  web.path: web.replace(state="archived")})
    assert changed_on_main(store, review(str(base.id))) == {
        db.id: "changed the text of fact/the.md",
        cache.id: "removed fact/cache.md",
        queue.id: "moved fact/queue.md to fact/queues.md",
        log.id: "changed the type of fact/logs.md to decision",
        web.id: "made fact/web.md archived",
    }


def test_changes_count_whichever_way_they_go(store: Store) -> None:
    # Each the other way round from the test above: a text that sorts after, an earlier path...
    db, queue = memory("The database is MySQL"), memory("Queue with RabbitMQ", name="queues")
    kind, web = memory("Logs go to Loki", type="decision"), memory("Web on nginx", state="archived")
    base = write(store, {m.path: m for m in (db, queue, kind, web)})
    earlier = replace(queue, path="fact/a-queue.md")
    write(store, {db.path: db.replace(text="The database is PostgreSQL"), queue.path: None, earlier.path: earlier,
                  kind.path: kind.replace(type="fact"), web.path: web.replace(state="active")})
    assert changed_on_main(store, review(str(base.id))) == {
        db.id: "changed the text of fact/the.md",
        queue.id: "moved fact/queues.md to fact/a-queue.md",
        kind.id: "changed the type of decision/logs.md to fact",
        web.id: "made fact/web.md active",
    }


def test_uses_potency_confirmations_and_new_memories_do_not_count(store: Store) -> None:
    db = memory("The database is PostgreSQL")
    base = write(store, {db.path: db})
    write(store, {db.path: db.replace(potency=0.9, verified=("ann",), updated=AT),
                  "fact/new.md": memory("A new fact", name="new")})
    assert changed_on_main(store, review(str(base.id))) == {}


def test_a_pushed_file_main_completed_since_is_the_same_memory(store: Store) -> None:
    plain = b"---\ntype: fact\n---\n\nThe database is PostgreSQL\n"
    base = write(store, {"fact/db.md": plain})
    completed = memory("The database is PostgreSQL", name="db")
    assert completed.id != placeholder_id("fact/db.md")
    write(store, {"fact/db.md": completed})
    assert changed_on_main(store, review(str(base.id))) == {}
    write(store, {"fact/db.md": completed.replace(text="The database is MySQL")})
    assert changed_on_main(store, review(str(base.id))) == {
        placeholder_id("fact/db.md"): "changed the text of fact/db.md"}


def test_a_file_with_an_id_of_its_own_is_not_matched_by_its_path(store: Store) -> None:
    for own in ("0000000000", "ffffffffff"):  # sorting before and after any stand-in
        first = memory("The database is PostgreSQL", name="db").replace(id=own)
        base = write(store, {"fact/db.md": first})
        write(store, {"fact/db.md": memory("The database is PostgreSQL", name="db")})  # another memory, same path
        assert changed_on_main(store, review(str(base.id))) == {first.id: "removed fact/db.md"}


def test_main_moved_is_seen_whichever_way_the_commit_ids_sort(store: Store) -> None:
    db = memory("The database is PostgreSQL")
    base = str(write(store, {db.path: db}).id)
    write(store, {db.path: db.replace(text="The database is MySQL")})
    seen = set()
    for n in range(64):  # each commit's id is another draw: both orders come within a few
        head = str(write(store, {"README.md": f"# memories {n}\n".encode()}).id)
        seen.add(head < base)
        assert changed_on_main(store, review(base)) == {db.id: "changed the text of fact/the.md"}
        if seen == {True, False}:
            break
    assert seen == {True, False}


# --- what that makes of a commit -------------------------------------------------------------------------


def test_a_commit_is_stale_when_main_changed_a_memory_it_names_or_touches(store: Store) -> None:
    db, cache = memory("The database is PostgreSQL"), memory("Cache with Redis")
    write(store, {db.path: db, cache.path: cache})
    changed = {db.id: "changed the text of fact/the.md", cache.id: "removed fact/cache.md"}
    by_trailer = write(store, {"README.md": b"# memories, edited\n"}, "names the cache", ids=(cache.id,))
    assert stale_note(review("b"), by_trailer, [], changed) == (
        "main removed fact/cache.md after the review was opened; propose the change again on the memory as it is "
        "now (the memory's page, or `gitmem feedback ID amend`)")
    edit = write(store, {db.path: db.replace(text="The database is PostgreSQL 16")}, "edits the database")
    changes = store.file_changes(edit)
    assert stale_note(review("b", kind="consolidation"), edit, changes, changed) == (
        "main changed the text of fact/the.md after the review was opened; run consolidation again to review the "
        "current state")
    both = write(store, {db.path: db.replace(text="The database is PostgreSQL 17")}, "both", ids=(cache.id,))
    in_order = "; ".join(changed[i] for i in sorted(changed))  # in the order of the memories' ids
    assert stale_note(review("b"), both, store.file_changes(both), changed) == (
        f"main {in_order} after the review was opened; {advice(review('b'))}")
    added = write(store, {"fact/new.md": memory("A new fact", name="new")}, "adds")
    assert stale_note(review("b"), added, store.file_changes(added), changed) is None
    assert stale_note(review("b"), edit, changes, {}) is None


def test_the_advice_fits_the_kind_of_review() -> None:
    rerun = "run consolidation again to review the current state"
    again = "propose the change again on the memory as it is now (the memory's page, or `gitmem feedback ID amend`)"
    assert advice(review("b", kind="consolidation")) == rerun
    for kind in ("amend", "push", "supersede", "purge"):
        assert advice(review("b", kind=kind)) == again


def test_a_gone_base_makes_every_commit_stale_with_its_reason() -> None:
    changed = {"*": "its base commit 0123456789 is gone from the repository", "abc": "removed x"}
    assert stale_note_about(review("b"), [], changed) == "its base commit 0123456789 is gone from the repository"
    assert stale_note_about(review("b"), ["abc"], {}) is None
    assert stale_note_about(review("b"), ["zzz"], {"abc": "removed x"}) is None
    assert stale_note_about(review("b"), ["b", "a", "b"], {"a": "removed a", "b": "removed b"}) == (
        f"main removed a; removed b after the review was opened; {advice(review('b'))}")


def test_a_review_is_open_while_any_commit_is_then_merged_stale_or_rejected(store: Store) -> None:
    commits = [write(store, {"README.md": f"r{n}\n".encode()}) for n in range(3)]
    ids = [str(c.id) for c in commits]
    assert status_of(commits, {}) == "open"
    assert status_of(commits, {ids[0]: "merged", ids[1]: "stale"}) == "open"
    assert status_of(commits, {ids[0]: "merged", ids[1]: "stale", ids[2]: "skipped"}) == "merged"
    assert status_of(commits, {ids[0]: "skipped", ids[1]: "stale", ids[2]: "skipped"}) == "stale"
    assert status_of(commits, dict.fromkeys(ids, "skipped")) == "rejected"
    assert status_of([], {}) == "rejected"
    notes = {ids[1]: "main removed x"}
    assert stale_reason(commits, {ids[1]: "stale", ids[2]: "stale"}, notes) == (
        f"{ids[1][:10]}: main removed x; {ids[2][:10]}: stale")
    assert stale_reason(commits, {ids[0]: "merged"}, notes) is None


def test_the_stale_message_names_each_stale_commit_and_says_nothing_merged(store: Store) -> None:
    one = write(store, {"README.md": b"1\n"}, "first change")
    two = write(store, {"README.md": b"2\n"}, "second change")
    three = write(store, {"README.md": b"3\n"}, "third change")
    stale = {str(three.id): "main removed x", str(one.id): "main moved y"}
    assert stale_message(7, [one, two, three], stale) == (
        f"review #7: commit {str(one.id)[:10]} (\"first change\") is stale: main moved y; commit "
        f"{str(three.id)[:10]} (\"third change\") is stale: main removed x; nothing was merged")


# --- links that follow a merge ---------------------------------------------------------------------------


def test_a_merged_away_memory_is_followed_to_what_it_became() -> None:
    gone = {"a": "b", "b": "c", "x": "y"}
    assert successor(gone, "a") == "c"
    assert successor(gone, "x") == "y"
    assert successor(gone, "q") == "q"
    assert successor({"a": "b", "b": "a"}, "a") == "a"  # a cycle cannot come from merges: it stops
    assert successor({"a": "b", "b": "c", "c": "b"}, "a") == "b"


def test_links_to_merged_away_memories_are_pointed_at_what_they_became(store: Store) -> None:
    gone_one, gone_two = memory("Gone rule one", name="g1", id="5000000001"), memory("Gone rule two", name="g2",
                                                                                     id="5000000002")
    other = memory("Other rule", id="7000000000")
    # It links to a memory merged into itself; its id sorts before the gone ones (the links get "smaller").
    kept = memory("Kept rule", related=(gone_one.id, other.id), id="0000000001")
    linking = memory("Links to all", name="linking", related=(gone_one.id, other.id, gone_two.id, kept.id))
    untouched = memory("No links here", name="untouched", related=(other.id,))
    tip = write(store, {m.path: m for m in (kept, other, linking, untouched)})
    gone = {gone_one.id: kept.id, gone_two.id: kept.id}
    after = relinked(store, tip, [linking, untouched, kept], gone, "rita")
    assert after.id != tip.id and [str(p.id) for p in after.parents] == [str(tip.id)]
    assert after.message.startswith("relink 2 memory files to what merged memories became\n\n"
                                    "Their related links named memories an approved merge took away.")
    info = store.info(after)
    assert info.action == "relink" and info.memory_ids == (linking.id, kept.id)
    read = concepts.parse(store.read(linking.path, after) or b"", linking.path)
    assert read.related == (kept.id, other.id)  # gone ones point at kept, once; its own order kept
    read_kept = concepts.parse(store.read(kept.path, after) or b"", kept.path)
    assert read_kept.related == (other.id,)  # no link to itself
    assert store.read(untouched.path, after) == store.read(untouched.path, tip)


def test_relinking_writes_nothing_when_no_link_moves(store: Store) -> None:
    kept, gone_one = memory("Kept rule"), memory("Gone rule one", name="g1")
    plain = memory("No links", name="plain")
    own = memory("Links to itself after", name="own", related=(gone_one.id,))
    broken = memory("Broken file", name="broken", related=(gone_one.id,))
    done = memory("Relinked already", name="done", related=(gone_one.id,))  # as the index still has it
    tip = write(store, {kept.path: kept, plain.path: plain, broken.path: b"not a memory\n",
                        done.path: done.replace(related=(kept.id,))})
    pathless = replace(memory("Nowhere", name="nowhere", related=(gone_one.id,)), path="")
    # own is not at tip (the merge took it away too); broken no longer parses; done links to kept already.
    assert relinked(store, tip, [plain, own, broken, pathless, done], {gone_one.id: kept.id}, "rita") == tip
    # A memory that links to no merged-away one is not read again, whatever its links look like.
    odd = memory("Odd links", name="odd", related=(plain.id, plain.id))
    tip = write(store, {odd.path: odd})
    assert relinked(store, tip, [odd], {gone_one.id: kept.id}, "rita") == tip


def test_a_file_gone_or_broken_does_not_stop_the_others_being_relinked(store: Store) -> None:
    # The successor's id sorts after the gone one's here (the links get "larger").
    kept, gone_one = memory("Kept rule", id="9999999999"), memory("Gone rule one", name="g1", id="5000000001")
    own = memory("Taken away too", name="own", related=(gone_one.id,))
    broken = memory("Broken file", name="broken", related=(gone_one.id,))
    later = memory("Links later", name="later", related=(gone_one.id,))
    tip = write(store, {kept.path: kept, broken.path: b"not a memory\n", later.path: later})
    for first in (own, broken):
        after = relinked(store, tip, [first, later], {gone_one.id: kept.id}, "rita")
        assert concepts.parse(store.read(later.path, after) or b"", later.path).related == (kept.id,)
