"""Tokens and similarity for Chinese, English and mixed text."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from gitmem.similarity import dice, normalise, similarity, token_set, tokens

DATA = Path(__file__).resolve().parent / "data" / "cursorrules.jsonl"  # tests/data/README.md


def test_cjk_becomes_character_bigrams() -> None:
    assert tokens("数据库迁移") == ["数据", "据库", "库迁", "迁移"]
    assert tokens("库") == ["库"]


def test_latin_text_becomes_words_and_word_bigrams() -> None:
    assert tokens("Use pnpm, always!") == ["use", "pnpm", "always", "use_pnpm", "pnpm_always"]
    assert tokens("Don't panic") == ["don't", "panic", "don't_panic"]


def test_mixed_text_keeps_each_script_apart() -> None:
    assert tokens("我们用pnpm管理依赖") == ["我们", "们用", "pnpm", "管理", "理依", "依赖"]


def test_word_bigrams_do_not_cross_sentences() -> None:
    assert "tests_deploy" not in tokens("Run the tests. Deploy on Monday.")
    assert "the_tests" in tokens("Run the tests. Deploy on Monday.")


def test_normalise_folds_case_width_and_punctuation() -> None:
    assert normalise("Use PNPM, not npm!") == normalise("use pnpm not npm")
    assert normalise("ＰＮＰＭ") == "pnpm"
    assert normalise("所有依赖，都用 pnpm。") == "所有依赖都用pnpm"


def test_similarity_is_one_for_normalised_identical_text() -> None:
    assert similarity("Use pnpm.", "use PNPM") == 1.0
    assert similarity("Use pnpm", "Use yarn") < 1.0
    # Identical once folded, though split into different words: still the same statement.
    assert token_set("Don't commit pnpm-lock.yaml") != token_set("dont commit pnpmlock yaml")
    assert similarity("Don't commit pnpm-lock.yaml", "dont commit pnpmlock yaml") == 1.0


def test_dice() -> None:
    assert dice(["a", "b"], ["b", "c"]) == 0.5
    assert dice([], ["a"]) == 0.0
    assert dice(frozenset({"a"}), {"a"}) == 1.0


@pytest.mark.parametrize("a,b", [
    ("Always use pnpm to install JavaScript dependencies in this repo",
     "always use pnpm to install javascript dependencies in this repo too"),
    ("所有前端依赖都用 pnpm 安装，不要用 npm", "所有前端依赖都用 pnpm 安装，不要用 npm 或 yarn"),
    ("数据库迁移必须在发布前由两位同事审核", "数据库迁移必须在发布之前由两位同事审核"),
])
def test_near_duplicates_score_at_least_0_8(a: str, b: str) -> None:
    assert similarity(a, b) >= 0.8


@pytest.mark.parametrize("a,b", [
    ("数据库迁移必须在发布前由两位同事审核", "前端组件一律使用函数式写法"),
    ("Use descriptive variable names", "Write tests for every public function"),
    ("Prefer composition over inheritance in services", "Prefer tabs over spaces in Makefiles"),
])
def test_unrelated_statements_score_low(a: str, b: str) -> None:
    assert similarity(a, b) < 0.3


def test_english_statements_sharing_words_are_not_linked() -> None:
    """The data set's point: character bigrams link ~18% of pairs at 0.3, words must not."""
    with DATA.open(encoding="utf-8") as handle:
        texts = [json.loads(line)["text"] for _, line in zip(range(400), handle, strict=False)]
    sets = [token_set(t) for t in texts]
    pairs = list(itertools.combinations(range(len(sets)), 2))
    linked = sum(dice(sets[i], sets[j]) >= 0.3 for i, j in pairs)
    assert linked / len(pairs) < 0.01
