"""How recall ranks, number by number: the pure functions of gitmem.ranking against values worked out by hand.

Each expected value is written out from the design (the module docstring and its constants'
comments), so a changed constant or a flipped comparison shows as a wrong number here, in a
few milliseconds, rather than as a slightly different order in a slow end-to-end recall.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from gitmem import ranking
from gitmem.concepts import Memory

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def close(value: float | None) -> object:
    return pytest.approx(value, rel=1e-9, abs=1e-12)


def memory(**fields: object) -> Memory:
    base = Memory(id="0123456789", type="fact", text="t", title="t", created=AT - 40 * DAY, updated=AT - 40 * DAY,
                  path="fact/t.md")
    return base.replace(**fields)


# --- paths -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("pattern", "file", "matches"), [
    ("web/", "web/views/home.py", True),
    ("web", "web/app.py", True),
    ("./web", "web/app.py", True),
    ("/web/", "./web/app.py", True),
    ("././web", "//web/app.py", True),  # every leading ./ and / goes, however many
    ("./.github/", ".github/workflows/ci.yml", True),  # a leading dot of a name stays
    (".github/", "github/readme.md", False),
    (".env", "env", False),
    ("web/", "webapp/x.py", False),
    ("web/app.py", "web/app.pyc", False),
    ("api/*.py", "./api/users.py", True),
    ("api/*.py", "api/users.ts", False),
    ("package.json", " package.json ", True),
    ("", "x.py", False),
    ("./", "x.py", False),
    ("*", "", False),  # no file, no match, whatever the glob
    ("*", "./", False),
    ("web/app.py", "api/x.py", False),  # a file that sorts before the pattern is not under it
    ("web/app.py", "web/", False),
    ("notes/a[1].md", " notes/a[1].md", True),  # the file itself, though as a glob it would not match
])
def test_a_memorys_path_covers_the_file_itself_what_is_under_a_folder_and_a_glob(pattern: str, file: str,
                                                                                 matches: bool) -> None:
    assert ranking.path_matches(pattern, file) is matches


# --- candidates and word weights -------------------------------------------------------------------


@pytest.mark.parametrize(("limit", "count"), [(1, 100), (10, 100), (11, 110), (50, 500)])
def test_ten_text_matches_are_ranked_per_hit_asked_for_and_never_fewer_than_a_hundred(limit: int, count: int) -> None:
    assert ranking.candidates(limit) == count


def test_a_word_weighs_by_how_rare_it_is_in_the_namespace() -> None:
    got = ranking.weights(["rare", "half", "most", "absent"], {"rare": 1, "half": 10, "most": 11}, 20)
    assert got == {
        "rare": close(math.log(1 + 19.5 / 1.5)),
        "half": close(math.log(2)),  # in exactly half of them: still evidence
        "most": 0.0,  # in more than half of twenty: none
        "absent": close(math.log(1 + 20.5 / 0.5)),  # nobody wrote it: weighs most
    }


def test_in_a_small_namespace_even_a_common_word_is_evidence() -> None:
    # Under twenty memories a word in most of them still weighs something (a namespace just started).
    got = ranking.weights(["most"], {"most": 18}, 19)
    assert got == {"most": close(math.log(1 + 1.5 / 18.5))}
    assert ranking.weights(["most"], {"most": 19}, 20) == {"most": 0.0}
    assert ranking.weights(["most", "half"], {"most": 30, "half": 20}, 40) == {"most": 0.0,
                                                                              "half": close(math.log(2))}


# --- relevance by words ----------------------------------------------------------------------------


def test_coverage_is_the_share_of_the_querys_weight_a_memory_holds() -> None:
    assert ranking.coverage({"a": 0.4, "b": 0.6}, {"a", "z"}) == close(0.4)
    assert ranking.coverage({"a": 1.0, "b": 3.0}, {"b"}) == close(0.75)
    assert ranking.coverage({"a": 0.0}, {"a"}) == 0.0  # a query of stop words holds no information
    assert ranking.coverage({}, set()) == 0.0


def test_word_pairs_in_order() -> None:
    assert ranking.in_order([], {"x"}) == 1.0
    assert ranking.in_order(["a_b", "b_c"], {"a_b"}) == 0.5
    assert ranking.in_order(["a_b", "b_c"], {"a_b", "b_c"}) == 1.0


def test_a_quoted_memory_holds_every_informative_word_and_every_pair() -> None:
    weighted = {"deploy": 1.0, "the": 0.0, "fridays": 2.0}
    assert ranking.quoted(weighted, ["deploy_fridays"], {"deploy", "fridays", "deploy_fridays"})  # "the" weighs 0
    assert not ranking.quoted(weighted, ["deploy_fridays"], {"deploy", "fridays"})  # not in that order
    assert not ranking.quoted(weighted, [], {"deploy", "the"})
    assert ranking.quoted(weighted, [], {"deploy", "fridays"})
    assert not ranking.quoted({"deploy": 0.5, "fridays": 2.0}, [], {"fridays"})  # a light word is a word


def test_a_memory_holding_less_than_half_the_information_is_no_hit_by_words() -> None:
    weighted = {"a": 1.0, "b": 1.0, "c": 2.0}
    assert ranking.lexical(weighted, [], {"a"}) is None  # a quarter
    assert ranking.lexical({"a": 0.45, "b": 0.55}, [], {"a"}) is None  # nearly half is not half
    assert ranking.lexical(weighted, [], {"a", "b", "x"}) is not None  # exactly half: a hit
    assert ranking.lexical(weighted, [], {"a", "b", "x"}) == close(0.75 * 0.5 + 0.15 * 0.5 + 0.10 * 2 / 3)


def test_relevance_by_words_is_mostly_information_then_order_then_focus() -> None:
    weighted = {"pnpm": 2.0, "npm": 2.0}
    terms = {"pnpm", "npm", "pnpm_npm", "we", "use"}
    # All the information, the one pair in order, and two of its four words (pairs are not words).
    assert ranking.lexical(weighted, ["pnpm_npm"], terms) == close(0.75 + 0.15 + 0.10 * 2 / 4)
    assert ranking.lexical(weighted, ["npm_pnpm"], terms) == close(0.75 + 0.0 + 0.10 * 2 / 4)
    # A word of no weight is no focus.
    assert ranking.lexical({"pnpm": 1.0, "the": 0.0}, [], {"pnpm", "the"}) == close(0.75 + 0.15 + 0.10 / 2)
    # A one-word memory that is the one-word query: all focus.
    assert ranking.lexical({"pnpm": 1.0}, [], {"pnpm"}) == close(1.0)


def test_single_chinese_characters_are_not_counted_as_a_memorys_own_words() -> None:
    # Chinese text is indexed as characters and bigrams; only the bigrams count as its words.
    weighted = {"发": 1.0, "版": 1.0, "发版": 2.0}
    assert ranking.lexical(weighted, [], {"发", "版", "发版", "周五"}) == close(0.75 + 0.15 + 0.10)  # focus 3/2, capped
    assert ranking.lexical(weighted, [], {"发", "版", "发版", "周五", "不要", "合并"}) == close(
        0.75 + 0.15 + 0.10 * 3 / 4)
    # Nothing but single characters: no own words, focus capped at all.
    assert ranking.lexical({"发": 1.0, "版": 1.0}, [], {"发", "版"}) == close(1.0)


# --- languages and meaning -------------------------------------------------------------------------


def test_mostly_chinese_means_more_chinese_terms_than_others() -> None:
    assert ranking.chinese({"发版", "周五", "main"})
    assert not ranking.chinese({"发版", "main"})  # a tie is not mostly
    assert not ranking.chinese(set())
    assert not ranking.chinese({"发版", "周五", "main", "dev"})
    assert ranking.chinese({"发版", "周五", "合并", "main", "dev"})


def test_the_cosine_floor_is_lower_across_languages_only() -> None:
    assert ranking.floor_for(0.5, {"发版", "周五"}, {"release", "friday"}) == close(0.43)
    assert ranking.floor_for(0.5, {"release"}, {"发版", "周五"}) == close(0.43)
    assert ranking.floor_for(0.5, {"release"}, {"deploy", "friday"}) == 0.5
    assert ranking.floor_for(0.5, {"发版"}, {"周五"}) == 0.5
    assert ranking.floor_for(0.5, set(), {"周五"}) == 0.5
    assert ranking.floor_for(0.5, {"发版"}, set()) == 0.5


@pytest.mark.parametrize(("cosine", "scaled"), [(-0.3, 0.0), (0.1, 0.0), (0.15, 0.0), (0.45, 0.5), (0.75, 1.0),
                                                (0.9, 1.0)])
def test_meaning_scales_a_cosine_from_point_15_to_point_75(cosine: float, scaled: float) -> None:
    assert ranking.meaning(cosine) == close(scaled)


def test_a_hit_by_words_gains_fifteen_percent_from_its_meaning() -> None:
    assert ranking.relevance(0.8, None, 0.5) == 0.8  # no vector: words alone
    assert ranking.relevance(0.8, 0.75, 0.5) == close(0.85 * 0.8 + 0.15)
    assert ranking.relevance(0.8, 0.45, 0.5) == close(0.85 * 0.8 + 0.15 * 0.5)
    assert ranking.relevance(0.8, 0.2, 0.5) == close(0.85 * 0.8 + 0.15 * 0.05 / 0.6)  # just related enough


def test_words_about_something_else_are_no_hit_unless_the_query_is_quoted() -> None:
    assert ranking.relevance(0.8, 0.19, 0.5) is None
    assert ranking.relevance(0.8, 0.19, 0.5, quoted=True) == close(0.85 * 0.8 + 0.15 * 0.04 / 0.6)
    assert ranking.relevance(0.8, 0.1, 0.5, quoted=True) == close(0.85 * 0.8)


def test_a_hit_by_meaning_alone_needs_the_floor_and_counts_at_most_three_quarters() -> None:
    assert ranking.relevance(None, 0.6, 0.5) == close(0.85 * 0.75)
    assert ranking.relevance(None, 0.5, 0.5) == close(0.85 * 0.35 / 0.6)  # at the floor
    assert ranking.relevance(None, 0.49, 0.5) is None
    assert ranking.relevance(None, 0.95, 0.5) == close(0.85)
    assert ranking.relevance(None, None, 0.5) is None


# --- potency and the score -------------------------------------------------------------------------


def test_potency_fades_five_percent_a_day_since_the_last_use() -> None:
    assert ranking.potency_from(0.8, AT - 10 * DAY, False, None, AT) == close(0.8 * 0.95**10)
    assert ranking.potency_from(0.8, AT + DAY, False, None, AT) == 0.8


def test_uses_not_yet_folded_count_as_if_they_were() -> None:
    # One use four days ago: faded for six days, then 30% of the gap to 1 closed, then four days more.
    at_use = 0.8 * 0.95**6
    boosted = round(at_use + 0.3 * (1 - at_use), 4)
    assert ranking.potency_from(0.8, AT - 10 * DAY, False, (1, AT - 4 * DAY), AT) == close(boosted * 0.95**4)
    twice = round(boosted + 0.3 * (1 - boosted), 4)
    assert ranking.potency_from(0.8, AT - 10 * DAY, False, (2, AT - 4 * DAY), AT) == close(twice * 0.95**4)


def test_a_tenured_memory_never_fades_below_the_active_tier() -> None:
    assert ranking.potency_from(0.9, AT - 200 * DAY, True, None, AT) == close(0.15)
    assert ranking.potency_from(0.9, AT - 200 * DAY, False, None, AT) == close(0.9 * 0.95**200)
    assert ranking.potency_from(0.9, AT - 200 * DAY, True, (1, AT - 100 * DAY), AT) == close(0.15)


def test_effective_potency_counts_from_the_last_use_else_the_creation() -> None:
    never = memory(potency=0.8, created=AT - 10 * DAY, last_used=None)
    used = memory(potency=0.8, created=AT - 30 * DAY, last_used=AT - 2 * DAY)
    assert ranking.effective_potency(never, AT, {}) == close(0.8 * 0.95**10)
    assert ranking.effective_potency(used, AT, {}) == close(0.8 * 0.95**2)
    pending_use = {used.id: (1, AT)}
    assert ranking.effective_potency(used, AT, pending_use) == close(round(0.8 * 0.95**2 + 0.3 * (1 - 0.8 * 0.95**2),
                                                                           4))
    assert ranking.effective_potency(used, AT, {"ffffffffff": (1, AT)}) == close(0.8 * 0.95**2)


def test_the_score_is_relevance_times_potency_over_one_plus_the_age_in_months() -> None:
    assert ranking.score_from("active", AT, 0.5, 0.8, AT, path_match=False) == close(0.4)
    assert ranking.score_from("active", AT - 30 * DAY, 0.5, 0.8, AT, path_match=False) == close(0.2)
    assert ranking.score_from("active", AT - 15 * DAY, 1.0, 0.6, AT, path_match=False) == close(0.4)
    assert ranking.score_from("active", AT + 15 * DAY, 1.0, 0.6, AT, path_match=False) == close(0.6)  # no bonus
    assert ranking.score_from("active", AT - 1.5 * DAY, 1.0, 0.6, AT, path_match=False) == close(0.6 / 1.05)


def test_a_path_match_doubles_the_score_and_pending_halves_it() -> None:
    assert ranking.score_from("active", AT, 0.5, 0.8, AT, path_match=True) == close(0.8)
    assert ranking.score_from("pending", AT, 0.5, 0.8, AT, path_match=False) == close(0.2)
    assert ranking.score_from("pending", AT, 0.5, 0.8, AT, path_match=True) == close(0.4)
    assert ranking.score_from("archived", AT, 0.5, 0.8, AT, path_match=False) == close(0.4)


def test_a_memorys_age_runs_from_its_last_use_else_its_last_update() -> None:
    updated = memory(updated=AT - 30 * DAY, last_used=None)
    used = memory(updated=AT - 60 * DAY, last_used=AT - 15 * DAY, state="pending")
    assert ranking.score(updated, 1.0, 0.8, AT, path_match=False) == close(0.4)
    assert ranking.score(used, 1.0, 0.6, AT, path_match=True) == close(0.6 / 1.5 * 2 * 0.5)
