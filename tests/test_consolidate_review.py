"""What a consolidation run puts in its review: at most N changes, lossless and most used first; honest counts."""

from __future__ import annotations

from typing import Any

from gitmem.reviews import summarise
from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.fakes.openai_server import answer

from .test_consolidate import llm_server, longest, plant  # noqa: F401 (a fixture)
from .test_reviews import TOPICS

RUFF = ["Use ruff for linting Python code", "Use ruff to format Python code before every commit"]


def counts(text: str) -> tuple[str, str]:
    """The two numbers of ``... N memories into M ...``."""
    words = text.split()
    at = words.index("memories")
    return words[at - 1], words[at + 2].rstrip(",;")


def test_a_run_opens_a_review_of_at_most_n_changes_lossless_and_most_used_first(settings: Settings,
                                                                                 llm_server: Any) -> None:  # noqa: F811
    # A model merges every cluster into its longest member: RUFF loses "lint" that way.
    fake, _ = llm_server(longest)
    svc = MemoryService(settings.with_(review_max_changes=2, llm_base_url=fake.url, llm_model="fake"))
    svc.init("default")
    try:
        for uses, (older, newer) in zip((3, 9, 1), TOPICS, strict=True):
            plant(svc, older, days=2, access_count=uses)
            plant(svc, newer, days=1)
        for text in RUFF:  # used most, but merging them loses words
            plant(svc, text, days=1, access_count=50)
        result = svc.consolidate("default")
        assert result.review is not None
        assert result.summary == f"consolidated 4 memories into 2, review #{result.review} (2 more for a later run)"
        assert result.to_dict()["counts"]["later"] == 2
        commits = svc.reviews.diff("default", result.review)
        assert len(commits) == 2 and not any(c.lost for c in commits)
        # Of the lossless ones the most used: TOPICS[1] (9 uses), then TOPICS[0] (3 uses).
        assert [c.summary.split('"')[1][:20] for c in commits] == ["提交代码前必须运行单元测试和格式检查。",
                                                                   "Use descriptive vari"]
        title = svc.reviews.get("default", result.review).title
        assert title == "Consolidated 4 memories into 2"
        # Decided, the rest comes in the next run: the lossless one left first, then the lossy one.
        svc.reviews.approve("default", result.review, actor="alice")
        again = svc.consolidate("default")
        assert again.review is not None and again.to_dict()["counts"]["later"] == 0
        later = svc.reviews.diff("default", again.review)
        assert [bool(c.lost) for c in later] == [False, True]
        assert "ruff" in later[1].summary.lower()
    finally:
        svc.close()


def test_the_setting_is_read_from_the_environment() -> None:
    assert Settings.from_env({"GITMEM_REVIEW_MAX_CHANGES": "7"}).review_max_changes == 7
    assert Settings().review_max_changes == 50


def test_the_title_and_the_summary_count_alike_when_a_user_statement_stays(svc: MemoryService,
                                                                          llm_server: Any) -> None:  # noqa: F811
    plant(svc, "Run the unit tests before every commit", source="user", days=3)
    plant(svc, "Run unit tests before you commit", days=2)
    plant(svc, "Always run the unit tests before a commit", days=1)
    # The merged text is far from the user's statement: a merge of the two agents', the user's linked.
    _, llm = llm_server(lambda r: answer(merged="Unit tests pass locally before anything is committed",
                                         reason="one rule"))
    result = svc.consolidate("default", llm=llm)
    assert result.review is not None
    title = svc.reviews.get("default", result.review).title
    summary = summarise(svc.reviews.diff("default", result.review))
    assert counts(title) == counts(summary) == ("2", "1"), (title, summary)
