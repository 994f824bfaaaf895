"""Importing in-process: one commit per import, what a second run skips, reverts, links, dry runs, new namespaces.

The service's own import (no CLI, no server), fast enough for the mutation target of
``gitmem.importers``; ``test_importers.py`` runs the same through the CLI and the API.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

import pytest

from gitmem import importers
from gitmem.importers import item_digest, read
from gitmem.service import MemoryService

from .test_import_reading import files_of

Fsck = Callable[[str], None]


def mem0_source(*entries: tuple[str, str]) -> dict[str, str]:
    """A mem0 export of (id, text) entries."""
    return {"memories.json": json.dumps([{"id": key, "memory": text} for key, text in entries])}


def outcomes(report: importers.ImportReport) -> list[tuple[str, str]]:
    return [(i.label, i.outcome) for i in report.items]


def test_an_import_is_one_commit_naming_each_item_it_brought(svc: MemoryService, fsck: Fsck) -> None:
    report = svc.import_memories("default", "mem0", files_of("mem0"), actor="ana", origin="export.json")
    assert outcomes(report) == [
        ("memories.json#3c90c3cc-0d44-4b50-8888-8dd25736052a", "added"),
        ("memories.json#8a7b6c5d-1e2f-4a3b-9c8d-7e6f5a4b3c2d", "added"),
        ("memories.json#5e4d3c2b-1a09-4f8e-b7d6-c5b4a3928170", "added"),
        ("memories.json#00000000-0000-4000-8000-000000000000", "refused")]  # the source's problems come last
    assert report.items[-1].reason == "not a memory with 'memory' text" and report.items[-1].memory_id is None
    assert report.items[1].note == "metadata type 'food' is none of gitmem's: imported as a fact"
    assert (report.namespace, report.format, report.dry_run, report.new_namespace) == ("default", "mem0", False, False)
    info = svc.log("default", limit=1)[0]
    assert (info.id, info.action, info.actor) == (report.commit, "import", "ana")
    assert info.summary == "import: 3 mem0 items from export.json"
    items, _ = read("mem0", files_of("mem0"))
    assert info.trailers["Import-Format"] == ["mem0"]
    assert info.trailers["Import-Item"] == [f"{item_digest('mem0', item)} {o.memory_id}"
                                            for item, o in zip(items, report.items, strict=False)]
    assert report.counts() == {"added": 3, "reinforced": 0, "merged": 0, "skipped": 0, "refused": 1}
    as_dict = report.to_dict()
    assert {k: as_dict[k] for k in ("namespace", "format", "commit", "dry_run", "new_namespace", "counts")} == {
        "namespace": "default", "format": "mem0", "commit": report.commit, "dry_run": False, "new_namespace": False,
        "counts": report.counts()}
    assert as_dict["items"][1] == {"label": "memories.json#8a7b6c5d-1e2f-4a3b-9c8d-7e6f5a4b3c2d", "outcome": "added",
                                   "memory_id": report.items[1].memory_id, "reason": "", "proposed": [],
                                   "note": "metadata type 'food' is none of gitmem's: imported as a fact"}
    fsck("default")


def test_a_second_import_skips_what_the_first_brought_and_names_that_commit(svc: MemoryService) -> None:
    first = svc.import_memories("default", "mem0", mem0_source(("a", "Uses pnpm"), ("b", "Deploys on Tuesdays")))
    one = svc.import_memories("default", "mem0", mem0_source(("a", "Uses pnpm")), origin="again")
    assert svc.log("default", limit=1)[0].id == first.commit and one.commit is None
    again = svc.import_memories("default", "mem0", mem0_source(("b", "Deploys on Tuesdays"), ("c", "CI runs on push")))
    assert outcomes(one) == [("memories.json#a", "skipped")]
    assert one.items[0].memory_id == first.items[0].memory_id
    assert one.items[0].reason == f"imported before, in {first.commit[:10]}"
    assert outcomes(again) == [("memories.json#b", "skipped"), ("memories.json#c", "added")]
    assert svc.log("default", limit=1)[0].summary == "import: 1 mem0 item"  # the fresh ones only
    # Another format's import of the same text is no earlier import of this one: the write gate says.
    pi = json.dumps([{"id": "a", "content": "Uses pnpm"}])
    assert [i.outcome for i in svc.import_memories("default", "pi-memory-spaced", {"memories.json": pi}).items] == [
        "reinforced"]
    # An item edited in the source since is new: it goes through the write gate again.
    edited = svc.import_memories("default", "mem0", mem0_source(("a", "Uses pnpm in every JavaScript project")))
    assert outcomes(edited) == [("memories.json#a", "added")]
    # Other commits since (a remember, that pi-memory-spaced import) hide no earlier import.
    svc.remember("default", "Releases are tagged on Mondays")
    assert outcomes(svc.import_memories("default", "mem0", mem0_source(("a", "Uses pnpm")))) == [
        ("memories.json#a", "skipped")]


def test_a_skipped_item_is_named_as_its_source_names_it(svc: MemoryService) -> None:
    first = svc.import_memories("default", "okf", files_of("okf"))
    again = svc.import_memories("default", "okf", files_of("okf"))
    assert again.commit is None
    assert [(i.label, i.outcome) for i in again.items] == [
        (i.label, "skipped" if i.outcome != "refused" else "refused") for i in first.items]
    assert "fact/门店布局.md" in {i.label for i in again.items}


def test_an_import_reverted_counts_as_never_made(svc: MemoryService) -> None:
    source = mem0_source(("a", "Uses pnpm"))
    first = svc.import_memories("default", "mem0", source)
    assert first.commit is not None
    svc.revert("default", first.commit)
    again = svc.import_memories("default", "mem0", source)
    assert outcomes(again) == [("memories.json#a", "added")] and again.commit is not None
    third = svc.import_memories("default", "mem0", source)
    assert third.items[0].reason == f"imported before, in {again.commit[:10]}"


def test_links_become_related_to_what_each_target_became(svc: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    # Ids in the order the items come, so which sorts first is known (they are random otherwise).
    ids = itertools.count(0xA000000000)
    monkeypatch.setattr(importers, "new_id", lambda: f"{next(ids):010x}")
    files = {
        "a.md": "---\ntitle: A\n---\nDeploys need a green build; see [[B]] and [[C]] and [[D]]",
        "b.md": "---\ntitle: B\n---\nThe build runs on every push",
        "c.md": "---\ntitle: C\n---\nThe password is Hunter2-prod!",  # refused: a secret
        "d.md": "---\ntitle: D\n---\nDeploys need a green build; see [[B]] and [[C]] and [[D]]",  # A's own text
    }
    report = svc.import_memories("default", "basic-memory", files)
    got = {i.label: i for i in report.items}
    assert [got[n].outcome for n in ("a.md", "b.md", "c.md", "d.md")] == ["added", "added", "refused", "reinforced"]
    assert got["a.md"].note == "links to c.md not imported"
    # The commit names what it brought: A, B, and D (A's memory); not the refused C.
    assert [v.split()[1] for v in svc.log("default", limit=1)[0].trailers["Import-Item"]] == [
        got["a.md"].memory_id, got["b.md"].memory_id, got["a.md"].memory_id]
    a = svc.show("default", got["a.md"].memory_id or "")
    # D became A itself: no memory is related to itself.
    assert a.related == (got["b.md"].memory_id,) and got["d.md"].memory_id == a.id
    # A link to an item an earlier import brought is to the memory it became then.
    files["e.md"] = "---\ntitle: E\n---\nReleases follow [[B]]"
    later = svc.import_memories("default", "basic-memory", files)
    e = next(i for i in later.items if i.label == "e.md")
    assert e.outcome == "added" and e.note == ""
    assert svc.show("default", e.memory_id or "").related == (got["b.md"].memory_id,)


def test_a_dry_run_reports_what_the_import_would_do_and_writes_nothing(svc: MemoryService) -> None:
    before = svc.head("default")
    dry = svc.import_memories("default", "okf", files_of("okf"), dry_run=True)
    assert dry.commit is None and dry.dry_run and svc.head("default") == before
    real = svc.import_memories("default", "okf", files_of("okf"))
    assert [(i.label, i.outcome, i.reason, i.note) for i in dry.items] == [
        (i.label, i.outcome, i.reason, i.note) for i in real.items]
    assert real.commit == svc.head("default") != before


def test_an_import_into_a_new_namespace_makes_it_only_when_asked_and_not_on_a_dry_run(svc: MemoryService) -> None:
    source = mem0_source(("a", "Uses pnpm"))
    dry = svc.import_memories("fresh", "mem0", source, dry_run=True, create=True)
    assert (dry.new_namespace, dry.dry_run, dry.commit, outcomes(dry)) == (
        True, True, None, [("memories.json#a", "added")])
    assert not svc.exists("fresh")
    made = svc.import_memories("fresh", "mem0", source, create=True, actor="ana")
    assert made.new_namespace and made.commit and svc.exists("fresh")
    assert svc.log("fresh", limit=1)[0].actor == "ana"
    again = svc.import_memories("fresh", "mem0", source, create=True)
    assert not again.new_namespace and outcomes(again) == [("memories.json#a", "skipped")]
    assert not svc.import_memories("default", "mem0", source, create=True, dry_run=True).new_namespace
