"""The search index: a search past its posting budget scores only the rarer tokens, and finds the same."""

from __future__ import annotations

import pytest

from gitmem.repo import index
from gitmem.service import MemoryService
from tests.conftest import namespace_of


def test_a_common_word_is_left_out_of_the_search_but_not_of_the_ranking(
        svc: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(30):
        svc.remember("default", f"Install service number {i} for the internal module {i * 7919}.")
    target = svc.remember("default", "Install pnpm for every package in this repository.")
    assert target.memory is not None
    monkeypatch.setattr(index, "SEARCH_POSTINGS", 10)
    ns = namespace_of(svc)
    terms = ["instal", "pnpm", "packag"]  # the index holds stemmed terms (gitmem.words)
    kept = ns.index._selective(terms)
    assert "instal" not in kept and set(kept) == {"pnpm", "packag"}  # "install" is in all 31 memories
    hits = svc.recall("default", "install pnpm", limit=3, record=False)
    assert hits[0].memory.id == target.memory.id


def test_small_indexes_search_every_token(svc: MemoryService) -> None:
    for i in range(5):
        svc.remember("default", f"Use tool {i} for task {i}.")
    ns = namespace_of(svc)
    assert ns.index._selective(["use", "tool", "for"]) == ["use", "tool", "for"]


def test_document_frequencies_follow_the_index_as_it_grows(
        svc: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index, "SEARCH_POSTINGS", 2)
    for i in range(4):
        svc.remember("default", f"Deploy service {i} with helm.")
    ns = namespace_of(svc)
    assert ns.index._doc_freqs(["helm"], 4) == {"helm": 4}
    for i in range(4, 12):
        svc.remember("default", f"Deploy service {i} with helm.")
    assert ns.index._doc_freqs(["helm"], 12) == {"helm": 12}  # refreshed: it grew by more than 10%
