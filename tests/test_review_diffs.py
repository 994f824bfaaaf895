"""What a review's commits change (gitmem.reviews.diffs): memory diffs, kinds, merges, what a merge loses.

Pure functions of file changes: the changes here are what the repository layer reports for real
memory files (rendered by gitmem.concepts), so each rule is pinned without a repository.
"""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError
from datetime import UTC, datetime

import pytest

from gitmem import concepts, textdiff
from gitmem.repo import FileChange
from gitmem.reviews.diffs import (
    FileDiff,
    MemoryDiff,
    ReviewCommit,
    after_text,
    body,
    digest,
    memory_diffs,
    parsed,
    placeholder_id,
    summarise,
    with_result,
)

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def memory(text: str, type: str = "fact", memory_id: str = "0000000001", **fields: object) -> concepts.Memory:
    made = concepts.Memory(id=memory_id, type=type, text=text, title=concepts.title_from(text), created=AT,
                           updated=AT, source="agent")
    made = made.replace(path=f"{type}/{memory_id}.md")
    return made.replace(**fields) if fields else made


def text(m: concepts.Memory) -> str:
    return concepts.render(m).decode()


def added(m: concepts.Memory) -> FileChange:
    return FileChange(m.path, "added", None, m.path, None, text(m))


def removed(m: concepts.Memory) -> FileChange:
    return FileChange(m.path, "deleted", m.path, None, text(m), None)


def changed(old: concepts.Memory, new: concepts.Memory) -> FileChange:
    return FileChange(new.path, "modified", old.path, new.path, text(old), text(new))


def diff(id: str, change: str, before: str | None = None, after: str | None = None, *,
         fields: list[tuple[str, object, object]] | None = None, lost: list[str] | None = None,
         type: str = "fact") -> MemoryDiff:
    return MemoryDiff(id, "t", type, change, before, after, [], fields or [], lost or [])


def fresh(text: str) -> str:
    """The same text in a string object of its own, as parsed from a commit message (not a literal)."""
    return "".join(list(text))


def commit(action: str, memories: list[MemoryDiff], result: str | None = None,
           ids: tuple[str, ...] = ()) -> ReviewCommit:
    return ReviewCommit("c" * 40, "s", "", fresh(action), tuple(fresh(i) for i in ids), [], "open", None, memories,
                        None if result is None else fresh(result))


# --- reading files ------------------------------------------------------------------------------------


def test_a_file_is_a_memory_only_at_a_memory_path_and_when_it_parses() -> None:
    db = memory("The database is PostgreSQL")
    assert parsed(text(db), db.path) == concepts.parse(text(db).encode(), db.path)
    assert (parsed(text(db), db.path) or db).id == db.id == "0000000001"
    assert parsed(None, db.path) is None and parsed(text(db), None) is None
    assert parsed(text(db), "README.md") is None and parsed(text(db), "fact/deep/x.md") is None
    assert parsed("not a memory\n", db.path) is None
    plain = parsed("---\ntype: fact\n---\n\nA plain file\n", "fact/plain.md")
    assert plain is not None and plain.id == placeholder_id("fact/plain.md") and plain.text == "A plain file"
    assert placeholder_id("fact/plain.md") == placeholder_id("fact/plain.md") != placeholder_id("fact/other.md")
    assert len(placeholder_id("x")) == 10 and int(placeholder_id("x"), 16) >= 0


def test_digest_ignores_how_whitespace_runs() -> None:
    assert digest("a  b\nc ") == digest("a b c") != digest("a b d")
    assert len(digest("x")) == 16


def test_body_is_the_message_between_summary_and_trailers() -> None:
    assert body("Summary\n\nFirst paragraph.\n\nSecond.\n\nAction: edit\nActor: sam\n") == "First paragraph.\n\nSecond."
    assert body("Summary\n\nJust a body.\n") == "Just a body."
    assert body("Summary\n\nAction: edit\n") == ""
    assert body("Summary only") == ""


def test_after_text_is_what_a_consolidation_keeps_untouched() -> None:
    message = "merge 2\n\nAfter:\n- Lint with ruff\n- another\n\nAction: consolidate\n"
    assert after_text(message) == "Lint with ruff"
    assert after_text("merge\n\nAfter:\n- Only one\n\nAction: x") == "Only one"
    assert after_text("merge\n\nAfter:\n-  \n\nAction: x") is None
    assert after_text("no after here") is None


# --- one memory at a time -------------------------------------------------------------------------------


def test_memories_added_removed_and_changed_in_the_order_met() -> None:
    new, gone = memory("A new fact", memory_id="0000000002"), memory("An old fact", memory_id="0000000003")
    old = memory("The database is PostgreSQL 15", tags=("db",), potency=0.5)
    edited = old.replace(text="The database is PostgreSQL 16",
                         title=concepts.title_from("The database is PostgreSQL 16"), tags=("db", "sql"),
                         potency=0.75, updated=datetime(2026, 2, 1, tzinfo=UTC))
    out = memory_diffs([added(new), removed(gone), changed(old, edited),
                        FileChange("README.md", "modified", "README.md", "README.md", "a", "b")])
    assert [(m.id, m.change, m.before, m.after) for m in out] == [
        ("0000000002", "added", None, "A new fact"),
        ("0000000003", "removed", "An old fact", None),
        ("0000000001", "changed", "The database is PostgreSQL 15", "The database is PostgreSQL 16")]
    assert [m.title for m in out] == ["A new fact", "An old fact", edited.title]
    change = out[2]
    assert change.text == textdiff.word_diff(old.text, edited.text) and change.text_changed
    assert change.fields == [("tags", ("db",), ("db", "sql")), ("potency", 0.5, 0.75)]  # text, title, updated quiet
    assert change.fields_line() == "tags +sql; potency 0.5 → 0.75"
    assert out[0].text == [] and out[0].fields == [] and out[0].assigned
    assert memory_diffs([changed(old, edited)], words=False)[0].text == []
    late = memory("A fact whose id sorts late", memory_id="ffffffffff")
    assert memory_diffs([added(late)])[0].assigned
    assert memory_diffs([]) == []


def test_a_title_set_by_hand_shows_as_a_field() -> None:
    old = memory("The database is PostgreSQL 15")
    titled = old.replace(title="Our database")
    (shown,) = memory_diffs([changed(old, titled)])
    assert shown.fields == [("title", old.title, "Our database")] and not shown.text_changed
    retitled = titled.replace(text="The database is PostgreSQL 16")
    (again,) = memory_diffs([changed(titled, retitled)])
    assert [f[0] for f in again.fields] == []  # the title stayed as set by hand; the text diff shows the rest
    for by_hand in ("Our database", "Zebra database"):  # before and after the text's own title
        derived = retitled.replace(title=retitled.title)
        (back,) = memory_diffs([changed(retitled.replace(title=by_hand), derived.replace(
            title=concepts.title_from(derived.text)))])
        assert back.fields == [("title", by_hand, concepts.title_from(derived.text))]


def test_a_memory_moved_or_given_its_id_is_one_change() -> None:
    plain = "---\ntype: fact\n---\n\nA plain file\n"
    pushed = FileChange("fact/p.md", "added", None, "fact/p.md", None, plain)
    (shown,) = memory_diffs([pushed])
    assert shown.id == placeholder_id("fact/p.md") and not shown.assigned
    old = memory("Moving fact")
    moved = old.replace(path="fact/elsewhere.md")
    (move,) = memory_diffs([FileChange(moved.path, "renamed", old.path, moved.path, text(old), text(moved))])
    assert move.change == "changed" and move.fields == [] and not move.text_changed


def test_diffs_are_values() -> None:
    for made in (FileDiff("p", "added", None, "x", "u"), diff("a", "added", None, "x"), commit("edit", [])):
        with pytest.raises(FrozenInstanceError):
            made.state = "x"  # type: ignore[misc,union-attr]


def test_a_memory_diff_as_json_and_as_a_line() -> None:
    option = concepts.Option("PostgreSQL")
    choice = concepts.Choice("PostgreSQL", AT, "ann", "it scales")
    shown = MemoryDiff("0000000001", "t", "techchoice", "changed", "a", "b", textdiff.word_diff("a", "b"),
                       [("options", (), (option,)), ("choices", (), (choice,)), ("last_used", None, AT),
                        ("state", "active", "archived"), ("description", "", "x"), ("potency", None, 0.333),
                        ("tags", ("a", "b"), ("b", "c"))],
                       lost=["gone"], author="ann")
    data = json.loads(json.dumps(shown.to_dict()))
    assert data["fields"][0] == {"name": "options", "before": [], "after": [option.to_dict()]}
    assert data["fields"][1]["after"] == [choice.to_dict()]
    assert data["fields"][2] == {"name": "last_used", "before": None, "after": "2026-01-02T03:04:05Z"}
    assert (data["lost_words"], data["author"], data["assigned"], data["change"]) == (["gone"], "ann", True, "changed")
    assert data["text_diff"] == [p.to_dict() for p in textdiff.word_diff("a", "b")]
    assert shown.fields_line() == ("options +PostgreSQL; choices +PostgreSQL (it scales); last_used — → "
                                   "2026-01-02T03:04:05Z; state active → archived; description — → x; potency None → "
                                   "0.33; tags +c -a")
    assert MemoryDiff("i", "t", "f", "changed", "", "", [], [("choices", (concepts.Choice("X", AT),), ())]
                      ).fields_line() == "choices -X"
    assert MemoryDiff("i", "t", "f", "changed", "", "", [], [("potency", 0.456, 0.333)]).fields_line() == \
        "potency 0.46 → 0.33"
    assert shown.marked == textdiff.marked("a", ["gone"])
    assert not MemoryDiff("i", "t", "f", "changed", "same", "same", [], []).text_changed
    assert not MemoryDiff("i", "t", "f", "added", None, "x", [], []).text_changed
    assert FileDiff("p", "added", None, "x", "u").to_dict() == {"path": "p", "status": "added", "old_text": None,
                                                              "new_text": "x", "unified": "u"}


# --- a commit --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("action", "memories", "result", "kind"), [
    ("archive", [diff("a", "changed", "x", "x")], None, "archive"),
    ("discard", [], None, "archive"),
    ("supersede", [diff("a", "removed", "x")], None, "supersede"),
    ("promote", [diff("a", "changed", "x", "x")], None, "promote"),
    ("consolidate", [diff("k", "added", None, "new"), diff("a", "removed", "x")], "k", "merge"),
    ("consolidate", [diff("k", "changed", "old", "new"), diff("a", "removed", "x")], "k", "merge"),
    ("consolidate", [diff("k", "changed", "same", "same"), diff("a", "removed", "x")], "k", "supersede"),
    ("consolidate", [diff("a", "removed", "x")], "k", "supersede"),  # the result is not in the commit's files
    ("consolidate", [diff("a", "changed", "x", "x", fields=[("related", (), ("b",))])], None, "link"),
    ("consolidate", [diff("a", "changed", "x", "x", fields=[("related", (), ("b",)), ("tags", (), ("t",))])], None,
     "edit"),
    ("consolidate", [diff("a", "changed", "x", "y")], None, "edit"),
    ("amend", [diff("a", "changed", "x", "x", fields=[("related", (), ("b",))])], None, "edit"),
    ("remember", [diff("a", "added", None, "x"), diff("b", "added", None, "y")], None, "add"),
    ("forget", [diff("a", "removed", "x")], None, "remove"),
    ("edit", [diff("a", "added", None, "x"), diff("b", "removed", "y")], None, "edit"),
    ("edit", [], None, "edit"),
    ("consolidate", [diff("a", "removed", "x")], None, "remove"),  # no result: not a merge
    ("consolidate", [], None, "edit"),
    ("use", [diff("a", "changed", "x", "y")], None, "edit"),
    ("consolidate", [diff("a", "changed", "x", "x", fields=[("related", (), ("b",))]), diff("b", "changed", "y", "y")],
     None, "link"),
    ("consolidate", [diff("a", "changed", "x", "x", fields=[("related", (), ("b",))]), diff("n", "added", None, "y")],
     None, "edit"),
    ("edit", [diff("a", "changed", "x", "x", fields=[("related", (), ("b",))])], None, "edit"),
    ("remember", [diff("a", "changed", "x", "x", fields=[("related", (), ("b",))])], None, "edit"),
])
def test_what_kind_of_change_a_commit_is(action: str, memories: list[MemoryDiff], result: str | None,
                                         kind: str) -> None:
    assert commit(action, memories, result).kind == kind


def test_a_merge_names_its_members_what_it_keeps_and_what_it_loses() -> None:
    merge = commit("consolidate", [diff("k", "added", None, "Lint with ruff"),
                                   diff("a", "removed", "Use ruff for linting Python", lost=["python"]),
                                   diff("b", "removed", "Lint all code", lost=["all", "python"]),
                                   diff("c", "changed", "x", "x")], "k")
    assert merge.merge and [m.id for m in merge.members] == ["a", "b"]
    assert merge.kept is not None and merge.kept.id == "k"
    assert merge.lost == ["all", "python"]
    assert commit("consolidate", [diff("a", "removed", "x")], "gone").kept is None
    later = commit("consolidate", [diff("z", "removed", "x"), diff("k", "added", None, "y")], "k")
    assert later.kept is not None and later.kept.id == "k" and [m.id for m in later.members] == ["z"]
    assert not diff("a", "removed", "x").text_changed
    assert not commit("consolidate", [diff("k", "added", None, "x")], "k").merge
    assert not commit("consolidate", [diff("a", "removed", "x")]).merge
    data = json.loads(json.dumps(merge.to_dict()))
    assert (data["kind"], data["result"], data["lost_words"], data["stale_reason"], data["memory_ids"]) == (
        "merge", "k", ["all", "python"], None, [])
    assert [m["id"] for m in data["memories"]] == ["k", "a", "b", "c"] and data["files"] == []


def test_with_result_names_what_a_merge_keeps_and_each_members_lost_words() -> None:
    members = [diff("a", "removed", "Use ruff for linting Python code"), diff("b", "removed", "Lint with ruff")]
    made = with_result(commit("consolidate", [diff("k", "added", None, "Lint Python with ruff"), *members]), None)
    assert made.result == "k"
    assert [m.lost for m in made.memories] == [[], ["code"], []]
    superseding = diff("k", "changed", "x", "Ruff lints", fields=[("supersedes", (), ("a",))])
    assert with_result(commit("consolidate", [superseding, members[0]]), None).result == "k"
    # The user's statement kept as it is: named by the commit, in no file, its text from the message.
    kept = with_result(commit("consolidate", [members[0]], ids=("a", "u", "v")), "Use ruff")
    assert kept.result == "u" and kept.memories[0].lost == ["linting", "Python", "code"]
    linked = with_result(commit("consolidate", [diff("o", "changed", "Other words", "Other words"), members[1]]), None)
    assert linked.result == "o" and linked.memories[1].lost == ["Lint", "ruff"]
    other = diff("o", "changed", "Other words", "Other words")
    assert with_result(commit("consolidate", [other, diff("k", "added", None, "Lint with ruff"), members[1]]),
                       None).result == "k"  # the memory the merge wrote, wherever it comes
    assert with_result(commit("consolidate", [other, superseding, members[1]]), None).result == "k"
    two = diff("p", "changed", "More words", "More words")
    assert with_result(commit("consolidate", [other, two, members[1]]), None).result == "o"
    plain = commit("consolidate", [members[0]])
    assert with_result(plain, None) is plain  # nothing to name
    assert with_result(plain, "text but no id") is plain
    for action in ("amend", "supersede", "edit"):
        other_action = commit(action, [diff("k", "added", None, "x"), members[0]])
        assert with_result(other_action, None) is other_action
    nothing_removed = commit("consolidate", [diff("k", "added", None, "x")])
    assert with_result(nothing_removed, None) is nothing_removed


# --- a review -------------------------------------------------------------------------------------------


def test_summarise_counts_as_a_consolidation_run_does() -> None:
    merge_new = commit("consolidate", [diff("k", "added", None, "x"), diff("a", "removed", "y", type="convention"),
                                       diff("b", "removed", "z", type="convention")], "k")
    merge_kept = commit("consolidate", [diff("m", "changed", "x", "xx"), diff("c", "removed", "y", type="decision"),
                                        diff("c2", "removed", "y2", type="decision")], "m")
    others = [commit("archive", [diff("d", "changed", "x", "x")]), commit("discard", []), commit("discard", []),
              commit("consolidate", [diff("e", "changed", "x", "x", fields=[("related", (), ("f",))])]),
              commit("promote", [diff("g", "changed", "x", "x")]),
              commit("edit", [diff("h", "added", None, "x"), diff("i", "changed", "a", "b"),
                              diff("j", "removed", "c")]),
              commit("remember", [diff("l", "added", None, "x")])]
    assert summarise([merge_new, merge_kept, *others]) == (
        "5 memories into 2 (convention 2, decision 2); linked 1; edited 1; added 2; removed 1; archived 1; "
        "promoted 1; discarded 2")
    assert summarise([]) == "no changes"
    assert summarise([commit("supersede", [diff("a", "removed", "x")])]) == "supersede 1"
    assert summarise([commit("edit", [])]) == "edited 1"
