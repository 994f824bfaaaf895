"""Reading other stores' files into items: each format's reader, the shared helpers, the source on disk.

Fast and in-process (no CLI, no server), so the mutation targets of ``gitmem.importers`` can run
them for every mutant; ``test_importers.py`` imports the same sources end to end through the CLI
and the API.
"""

from __future__ import annotations

import datetime as dt
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gitmem import importers
from gitmem.errors import InvalidInput
from gitmem.importers import Item, Problem, check_files, check_format, item_digest, read, read_source
from gitmem.importers.items import frontmatter, memory_type_of, moment, strings, title_of
from gitmem.importers.okf import weight_to_potency
from gitmem.memories import Candidate

DATA = Path(__file__).parent / "data" / "import"


def files_of(fmt: str) -> dict[str, str]:
    """The fixture source of ``fmt`` as the API carries it: relative path -> text."""
    root = DATA / fmt
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def items_by_key(fmt: str, files: dict[str, str]) -> tuple[dict[str, Item], dict[str, str]]:
    items, problems = read(fmt, files)
    assert len({i.key for i in items}) == len(items)
    return {i.key: i for i in items}, {p.label: p.reason for p in problems}


# --- the helpers every format shares ---------------------------------------------------------------


@pytest.mark.parametrize(("text", "meta", "body"), [
    ("---\ntitle: A\n---\nbody\n", {"title": "A"}, "body\n"),
    ("\ufeff---\r\ntitle: A\r\n---\r\nbody", {"title": "A"}, "body"),  # a BOM and Windows line ends
    ("---  \ntitle: A\n--- \t\nbody", {"title": "A"}, "body"),  # spaces after the dashes
    ("---\ntitle: A\n---", {"title": "A"}, ""),  # nothing below it
    ("---\n# only a comment\n---\nbody", {}, "body"),
    ("no frontmatter\n---\nx: 1\n---\n", None, "no frontmatter\n---\nx: 1\n---\n"),
    ("---\ntitle: A\n---body", None, "---\ntitle: A\n---body"),  # the closing line is only dashes
])
def test_frontmatter_is_a_leading_yaml_mapping(text: str, meta: dict[str, Any] | None, body: str) -> None:
    assert frontmatter(text) == (meta, body)


def test_frontmatter_that_is_broken_or_no_mapping_says_so() -> None:
    with pytest.raises(InvalidInput) as broken:
        frontmatter("---\ntitle: [unclosed\n---\nbody")
    message = str(broken.value)
    assert message.startswith("its frontmatter is not valid YAML: ") and "\n" not in message and "  " not in message
    with pytest.raises(InvalidInput, match="^its frontmatter is not a mapping of fields$"):
        frontmatter("---\n- a\n- b\n---\nbody")


@pytest.mark.parametrize(("value", "expected"), [
    (None, ()),
    ("", ()),
    ("a, b,, c ,", ("a", "b", "c")),
    (["a", " b ", None, "", "  ", 3], ("a", "b", "3")),
    (("x", "y"), ("x", "y")),
    (7, ("7",)),
    (False, ("False",)),
])
def test_strings_from_a_list_or_a_comma_separated_string(value: Any, expected: tuple[str, ...]) -> None:
    assert strings(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (None, None),
    ("", None),
    (0, None),
    (1777000000000, datetime(2026, 4, 24, 3, 6, 40, tzinfo=UTC)),  # JavaScript's milliseconds
    (1777000000123.9, datetime(2026, 4, 24, 3, 6, 40, tzinfo=UTC)),  # no microseconds
    (dt.date(2026, 3, 1), datetime(2026, 3, 1, tzinfo=UTC)),  # a YAML date
    (datetime(2026, 3, 1, 10, 0, 0, 500), datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)),  # a YAML time, no zone
    ("2026-03-01T10:00:00.000000-08:00", datetime(2026, 3, 1, 18, 0, 0, tzinfo=UTC)),
    ("2026-06-10T08:00:00.250Z", datetime(2026, 6, 10, 8, 0, 0, tzinfo=UTC)),
    ("last Tuesday", None),
    (10**20, None),  # beyond any date
    (True, None),  # a boolean is no number of milliseconds
    ([2026], None),
])
def test_moment_reads_iso_text_dates_and_milliseconds(value: Any, expected: datetime | None) -> None:
    assert moment(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ("TechChoice", "techchoice"), ("tech-choice", "techchoice"), ("Tech_Choice", "techchoice"),
    (" tech choice ", "techchoice"), ("Decision", "decision"), (None, "fact"), ("", "fact"), ("food", None),
])
def test_memory_type_of_a_source_type_name(value: Any, expected: str | None) -> None:
    assert memory_type_of(value) == expected


def test_memory_type_of_nothing_is_the_default_given() -> None:
    assert memory_type_of(None, "lesson") == "lesson"
    assert memory_type_of("", "") == ""
    assert memory_type_of("nonsense", "lesson") is None


def test_title_of_the_frontmatter_on_one_line() -> None:
    assert title_of({"title": "  Deploys\n  on\tFridays "}, "x") == "Deploys on Fridays"
    assert title_of({"title": 2024}, "x") == "2024"
    assert title_of({"title": ""}, "fallback") == title_of({}, "fallback") == "fallback"


# --- OKF -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("weight", "potency"), [
    (-1, 0.0), (0, 0.0), (0.15, 0.05), (0.3, 0.1), (0.65, 0.45), (1.0, 0.8), (1.9, 0.82), (2.5, 0.8333), (5.5, 0.9),
    (10, 1.0), (25, 1.0),
])
def test_weight_to_potency_keeps_each_scales_landmarks(weight: float, potency: float) -> None:
    assert weight_to_potency(weight) == potency


def test_okf_fixture_reads_into_items_with_weights_links_and_problems() -> None:
    items, problems = items_by_key("okf", files_of("okf"))
    assert set(items) == {"fact/门店布局", "decision/经营数据来源", "lesson/周五不上线", "method/部署",
                          "preference/包管理器", "techchoice/前端框架", "techchoice/后端语言"}
    assert set(problems) == {"idea/坏的头.md"} and "not valid YAML" in problems["idea/坏的头.md"]
    shop = items["fact/门店布局"]
    assert shop.candidate == Candidate(
        "我的三家门店是韶山、湘乡、塘厦,共用局域网共享文件夹。经营数据见 [经营数据来源](/decision/经营数据来源.md)。",
        type="fact", title="门店布局", tags=("门店", "网络"), label="fact/门店布局.md", potency=0.8333, access_count=4)
    assert shop.links == ("decision/经营数据来源",) and shop.note == ""
    assert items["decision/经营数据来源"].links == ("fact/门店布局",)
    assert items["decision/经营数据来源"].candidate.text.startswith("# 数据\n")  # the body, stripped
    lesson = items["lesson/周五不上线"]
    assert (lesson.candidate.potency, lesson.candidate.access_count) == (0.0667, 1)
    assert lesson.note == "inactive in the source (weight 0.2): potency 0.0667, never recalled"
    assert items["preference/包管理器"].candidate.potency == 0.8
    assert items["method/部署"].candidate.potency is None  # no weight entry: gitmem's default
    backend = items["techchoice/后端语言"].candidate
    assert (backend.type, backend.active, backend.choice_reason) == ("techchoice", "Go", "imported from OKF")
    assert [(o.name, o.pros, o.cons, o.description) for o in backend.options] == [
        ("Go", ("部署简单", "并发好"), ("泛型晚",), ""), ("Python", ("库多",), ("慢", "部署麻烦"), "")]


def okf(files: dict[str, str]) -> tuple[dict[str, Item], dict[str, str]]:
    return items_by_key("okf", files)


def test_okf_type_comes_from_the_frontmatter_or_else_the_folder() -> None:
    items, problems = okf({
        "lesson/a.md": "---\ntitle: A\n---\nRetries need jitter",
        "fact/b.md": "---\ntype: Decision\n---\nWe ship on Tuesdays",
        "lesson/2024/q1.md": "---\ntitle: Q1\n---\nFreeze the week before a release",  # a folder in the folder
        "misc/c.md": "---\ntitle: C\n---\nNo type anywhere",
        "misc/d.md": "---\ntype: Rumour\n---\nSaid in the hallway",
        "fact/e.md": "Just text, no frontmatter",
        "fact/f.txt": "---\ntype: fact\n---\nnot Markdown",
        "README.md": "---\ntype: fact\n---\nat the root: the bundle's own",
    })
    assert {k: (i.candidate.type, i.candidate.title) for k, i in items.items()} == {
        "lesson/a": ("lesson", "A"), "fact/b": ("decision", "b"), "lesson/2024/q1": ("lesson", "Q1")}
    assert problems == {
        "misc/c.md": "type None is none of gitmem's: " + ", ".join(importers.items.TYPES),
        "misc/d.md": "type 'Rumour' is none of gitmem's: " + ", ".join(importers.items.TYPES),
        "fact/e.md": "no OKF frontmatter (a 'type' between '---' lines)",
    }


def test_okf_links_are_deduplicated_and_never_to_itself() -> None:
    body = ("See [x](/fact/x.md), [again](/fact/x.md), [me](/fact/self.md), [y](/decision/y.md), "
            "[web](https://example.com/z.md) and [rel](fact/z.md)")
    items, _ = okf({"fact/self.md": f"---\ntype: fact\n---\n{body}"})
    assert items["fact/self"].links == ("fact/x", "decision/y")


@pytest.mark.parametrize(("weights", "reason"), [
    ("{not json", "not pi-okf-memory's weights (Expecting property name enclosed in double quotes: line 1 column 2 "
                  "(char 1)); weights left out"),
    ('{"version": 1}', "not pi-okf-memory's weights (no 'entries' object); weights left out"),
    ('{"entries": []}', "not pi-okf-memory's weights (no 'entries' object); weights left out"),
    ('[{"entries": {}}]', "not pi-okf-memory's weights (no 'entries' object); weights left out"),
])
def test_okf_weights_that_are_not_pi_okf_memorys_are_left_out(weights: str, reason: str) -> None:
    items, problems = okf({".meta/weights.json": weights, "fact/a.md": "---\ntype: fact\n---\nA fact"})
    assert problems == {".meta/weights.json": reason}
    assert items["fact/a"].candidate.potency is None


def test_okf_weight_entries_that_are_not_numbers_leave_gitmems_defaults() -> None:
    entries = {"fact/a": {"weight": "high", "accessCount": 3}, "fact/b": {"weight": True},
               "fact/c": {"weight": 3, "accessCount": -1}, "fact/d": {"weight": 3, "accessCount": True},
               "fact/e": {"weight": 3, "accessCount": 2.5}, "fact/f": 3, "fact/g": {"weight": 0, "accessCount": 0,
                                                                                 "state": "active"}}
    files = {f"fact/{k}.md": f"---\ntype: fact\n---\nFact {k}" for k in "abcdefg"}
    items, problems = okf({".meta/weights.json": json.dumps({"entries": entries}), **files})
    assert problems == {}
    got = {k[-1]: (i.candidate.potency, i.candidate.access_count, i.note) for k, i in items.items()}
    no_number = "its weight is not a number; potency left at gitmem's default"
    assert got == {"a": (None, None, no_number), "b": (None, None, no_number), "c": (0.8444, None, ""),
                   "d": (0.8444, None, ""), "e": (0.8444, None, ""), "f": (None, None, ""), "g": (0.0, 0, "")}


def techchoice(body: str) -> tuple[Candidate, str]:
    items, problems = okf({"techchoice/t.md": f"---\ntype: TechChoice\ntitle: T\n---\n{body}"})
    assert problems == {}
    return items["techchoice/t"].candidate, items["techchoice/t"].note


def test_okf_techchoice_from_pi_okf_memorys_own_table() -> None:
    candidate, note = techchoice(
        "intro text\n\n| 候选 | 说明 | 配置要点 | 状态 |\n|:---|---:|:-:|-|\n"
        '| **pnpm** | "快: 省磁盘" | .npmrc | 使用中 |\n| npm | 自带 | — | candidate |\n| yarn | n/a | – | - |\n\n'
        "| second | table |\n|---|---|\n| ignored | row |\n")
    assert note == "a TechChoice with options without a description or pros and cons (yarn): imported as a decision " \
                   "with its text"
    assert candidate.type == "decision" and candidate.options == () and candidate.active is None
    candidate, note = techchoice(
        "| 候选 | 说明 | 配置要点 | 状态 |\n|---|---|---|---|\n"
        '| **pnpm** | "快: 省磁盘" | .npmrc | 使用中 |\n| npm | 自带 | — | candidate |\n|  | 无名 | | |\n\n'
        "Only the first table counts:\n\n| 候选 | 说明 |\n|---|---|\n| yarn | 也行 |\n")
    assert note == "" and candidate.type == "techchoice"
    assert [(o.name, o.description, o.config, o.status) for o in candidate.options] == [
        ("pnpm", "快: 省磁盘", ".npmrc", ""), ("npm", "自带", "", "candidate")]
    assert (candidate.active, candidate.choice_reason) == ("pnpm", "imported from OKF")


def test_okf_techchoice_active_line_pros_cons_and_escaped_pipes() -> None:
    candidate, note = techchoice(
        "## Options\n\n| Option | Pros | Cons | Notes |\n|---|---|---|---|\n"
        "| Go | fast; simple<br>typed | generics late | x |\n| Py \\| thon | libs、people | slow；GIL<br/>packaging |"
        " y |\n\n## Active\n\n* Current: py | thon\n- 当前使用:Go\n")
    assert note == ""
    # A pipe escaped in a cell is a pipe in the name, as Markdown shows it.
    assert [(o.name, o.pros, o.cons, o.description) for o in candidate.options] == [
        ("Go", ("fast", "simple", "typed"), ("generics late",), ""),
        ("Py | thon", ("libs", "people"), ("slow", "GIL", "packaging"), "")]
    # The first Active line counts; it names its option however it spaces and cases it.
    assert candidate.active == "Py | thon"


@pytest.mark.parametrize(("line", "active"), [
    ("- 当前使用:Vue", "Vue"), ("当前：React", "React"), ("* active: Vue ", "Vue"), ("CURRENT : react", "React"),
    ("chosen:vue", "Vue"),
])
def test_okf_techchoice_active_line_forms(line: str, active: str) -> None:
    candidate, note = techchoice(f"| 候选 | 说明 |\n|---|---|\n| React | 熟 |\n| Vue | 快 |\n\n## Active\n\n{line}\n")
    assert (candidate.type, candidate.active, note) == ("techchoice", active, "")


def test_okf_techchoice_without_a_name_column_names_options_by_the_first() -> None:
    candidate, _ = techchoice("| Tool | About |\n|---|---|\n| make | old |\n| just | new |\n\nactive: just\n")
    assert [(o.name, o.description) for o in candidate.options] == [("make", "old"), ("just", "new")]
    assert (candidate.type, candidate.active) == ("techchoice", "just")
    candidate, note = techchoice("| Tool | Description | Status |\n|---|---|---|\n| make | old | |\n"
                                 "| just | new | current |\n")
    assert [(o.name, o.description, o.status) for o in candidate.options] == [("make", "old", ""), ("just", "new", "")]
    assert (candidate.active, note) == ("just", "")


@pytest.mark.parametrize(("body", "problem"), [
    ("no table at all", "fewer than 2 options in its table (no table)"),
    ("| 候选 | 说明 |\n|---|---|\n| MySQL | SaaS |\n\n- 当前使用:MySQL",
     "fewer than 2 options in its table (候选, 说明)"),
    ("| 候选 | 说明 |\n|---|---|\n| A | a |\n| B | |\n\n- 当前使用:A",
     "options without a description or pros and cons (B)"),
    ("| 候选 | 优点 | 缺点 |\n|---|---|---|\n| A | x | y |\n| B | x | |\n\n- 当前使用:A",
     "options without a description or pros and cons (B)"),
    ("| 候选 | 说明 | 状态 |\n|---|---|---|\n| A | a | candidate |\n| B | b | |", "no active option (an '## Active' "
     "section with '- 当前使用:X', or a status 'active')"),
    ("| 候选 | 说明 |\n|---|---|\n| A | a |\n| B | b |\n\n- 当前使用:C", "its active option 'C' is not in its table"),
])
def test_okf_techchoice_that_cannot_be_one_is_a_decision_keeping_its_text(body: str, problem: str) -> None:
    candidate, note = techchoice(body)
    assert note == f"a TechChoice with {problem}: imported as a decision with its text"
    assert candidate.type == "decision" and candidate.text == body.strip() and candidate.options == ()


def test_okf_techchoice_cells_quoted_or_empty() -> None:
    candidate, _ = techchoice('| 候选 | 说明 | 配置要点 |\n|---|---|---|\n| A | "say \\"hi\\"" | "not json |\n'
                              '| B | "" | -- |\n| C | plain | "" |\n| F |\n\n- 当前使用:A')
    assert candidate.type == "decision"  # B says nothing: "" is an empty description; F has no cells past its name
    candidate, _ = techchoice('| 候选 | 说明 | 配置要点 |\n|---|---|---|\n| A | "say \\"hi\\"" | "not json |\n'
                              '| C | plain | -- |\n| D | "x" |\n| E | "say "hi"" |\n| G | g | "" |\n\n- 当前使用:A')
    assert [(o.name, o.description, o.config) for o in candidate.options] == [
        ("A", 'say "hi"', '"not json'), ("C", "plain", "--"), ("D", "x", ""), ("E", '"say "hi""', ""), ("G", "g", "")]


def test_okf_techchoice_name_column_anywhere_rows_without_a_name_skipped() -> None:
    candidate, note = techchoice("| 说明 | 候选 |\n|---|---|\n| 熟 | React |\n| 无名 |  |\n| 快 | Vue |\n\n"
                                 "当前使用: Vue")
    assert note == ""
    assert [(o.name, o.description) for o in candidate.options] == [("React", "熟"), ("Vue", "快")]


def test_okf_techchoice_table_ends_at_a_line_that_is_no_row() -> None:
    # A row must open and close with a pipe: "| B | b" ends the table, leaving one option.
    candidate, note = techchoice("| 候选 | 说明 |\n|---|---|\n| A | a |\n| B | b\n| C | c |\n\n- 当前使用:A")
    assert note == ("a TechChoice with fewer than 2 options in its table (候选, 说明): imported as a decision with "
                    "its text")
    candidate, note = techchoice("| 候选 | 说明 |\n|---|---|\n| A | a |\nB | b |\n| C | c |\n\n- 当前使用:A")
    assert candidate.type == "decision" and "fewer than 2 options" in note


def test_okf_techchoice_table_written_without_spaces() -> None:
    candidate, note = techchoice("|候选|说明|状态|\n|-|-|-|\n|Go|ok|active|\n|Rust|new|candidate|\n")
    assert note == ""
    assert [(o.name, o.description, o.status) for o in candidate.options] == [("Go", "ok", ""),
                                                                            ("Rust", "new", "candidate")]


# --- basic-memory, pi-memory-spaced, mem0 -----------------------------------------------------------


def test_basic_memory_fixture_reads_notes_and_wiki_links() -> None:
    items, problems = items_by_key("basic-memory", files_of("basic-memory"))
    assert problems == {}
    assert set(items) == {".basic-memory/config.md", "notes/authentication-design.md", "specs/api-security.md",
                          "User Database Schema.md"}
    auth = items["notes/authentication-design.md"]
    assert (auth.candidate.type, auth.candidate.title, auth.candidate.tags) == (
        "decision", "Authentication Design", ("auth", "security", "backend"))
    assert set(auth.links) == {"specs/api-security.md", "User Database Schema.md"}
    assert auth.note == "[[Session Management]] names no note of the project"
    assert items["specs/api-security.md"].links == ("notes/authentication-design.md",)


def test_basic_memory_links_by_title_permalink_file_name_or_path() -> None:
    files = {
        "a.md": "---\ntitle: Alpha Note\npermalink: alpha-link\ntype: note\n---\nfirst",
        "dir/b.md": "---\ntitle: B\ntype: Decision\n---\n[[alpha note]] [[ALPHA-LINK|alias]] [[a#part]] [[dir/b]] "
                    "[[c]] [[Gone]] [[Gone]]",
        "c.md": "no frontmatter: [[b]] and [[Dir/B]]",
        "d.md": "---\ntype: gadget\n---\nodd type, [[x]]",
        "b-broken.md": "---\n[broken\n---\n",
        "0-readme.txt": "not a note",
        "f.json": "{}",
        "r.md": "---\ntype: recipe\n---\nodd type too",
    }
    items, problems = items_by_key("basic-memory", files)
    assert set(problems) == {"b-broken.md"}
    assert set(items) == {"a.md", "c.md", "d.md", "dir/b.md", "r.md"}
    assert items["r.md"].note == "type 'recipe' is none of gitmem's: imported as a fact"
    assert items["dir/b.md"].links == ("a.md", "c.md")  # once each; never itself
    assert items["dir/b.md"].note == "[[Gone]] names no note of the project; [[Gone]] names no note of the project"
    assert items["c.md"].links == ("dir/b.md",) and items["c.md"].note == ""
    assert (items["c.md"].candidate.type, items["c.md"].candidate.title) == ("fact", "c")
    assert items["a.md"].note == "" and items["a.md"].candidate.type == "fact"  # basic-memory's own "note"
    assert items["d.md"].note == ("type 'gadget' is none of gitmem's: imported as a fact; "
                                  "[[x]] names no note of the project")
    assert items["d.md"].candidate.text == "odd type, [[x]]" and items["d.md"].candidate.label == "d.md"


def test_basic_memory_first_note_claiming_a_name_keeps_it() -> None:
    files = {"a.md": "---\ntitle: Same\n---\none", "b.md": "---\ntitle: Same\n---\ntwo", "c.md": "[[same]]"}
    items, _ = items_by_key("basic-memory", files)
    assert items["c.md"].links == ("a.md",)


def test_pi_memory_spaced_fixture_reads_every_field() -> None:
    items, problems = items_by_key("pi-memory-spaced", files_of("pi-memory-spaced"))
    assert problems == {"memory-store.json#m6": "not a memory with 'content' text"}
    first = items["memory-store.json#m1"]
    assert first.candidate == Candidate(
        "This project uses pnpm as its package manager", type="convention", tags=("tooling",),
        paths=("package.json", "pnpm-lock.yaml"), source="user", potency=0.92,
        created=datetime(2026, 4, 24, 3, 6, 40, tzinfo=UTC), last_used=datetime(2026, 5, 28, 20, 26, 40, tzinfo=UTC),
        access_count=57, tenured=True, label="memory-store.json#m1")
    second = items["memory-store.json#m2"].candidate
    assert (second.source, second.last_used, second.access_count, second.tenured) == ("import", None, 0, False)
    assert items["memory-store.json#m3"].candidate.source == "user"  # "manual" is the user's too


def test_pi_memory_spaced_odd_entries() -> None:
    store = {"memories": [
        {"content": "no id here", "type": "gadget", "potency": True, "accessCount": -1, "tenured": "yes",
         "source": "agent"},
        "not an object",
        {"id": "z", "content": 5},
        {"id": "", "content": "empty id", "accessCount": True, "potency": 1, "tenured": 1},
    ]}
    items, problems = items_by_key("pi-memory-spaced", {"memory-store.json": json.dumps(store)})
    assert problems == {"memory-store.json#2": "not a memory with 'content' text",
                        "memory-store.json#z": "not a memory with 'content' text"}
    odd = items["memory-store.json#1"]
    assert odd.note == "type 'gadget' is none of gitmem's: imported as a fact"
    assert (odd.candidate.type, odd.candidate.potency, odd.candidate.access_count, odd.candidate.tenured,
            odd.candidate.source) == ("fact", None, None, False, "import")
    last = items["memory-store.json#4"].candidate
    assert (last.potency, last.access_count, last.type, last.tenured) == (1, None, "fact", False)
    assert items["memory-store.json#4"].note == ""
    # A bare list is a store too.
    items, _ = items_by_key("pi-memory-spaced", {"s.json": json.dumps([{"id": "a", "content": "x"}])})
    assert list(items) == ["s.json#a"]


@pytest.mark.parametrize(("fmt", "text", "message"), [
    ("pi-memory-spaced", '{"memories": {}}', "m.json has no 'memories' list; is it pi-memory-spaced's "
                                              "memory-store.json?"),
    ("pi-memory-spaced", "3", "m.json has no 'memories' list"),
    ("mem0", '{"items": []}', "m.json is not a mem0 export: a list of memories, or an object with 'results'"),
    ("mem0", '"text"', "m.json is not a mem0 export"),
    ("mem0", '{"results": [', "m.json is not valid JSON (Expecting value, line 1); is it a mem0 export?"),
    ("pi-memory-spaced", "{\n\n,", "m.json is not valid JSON (Expecting property name enclosed in double quotes, "
                                   "line 3); is it pi-memory-spaced's memory-store.json?"),
    ("mem0", "[" * 100_000 + "]" * 100_000, "m.json nests too deeply or holds a number too long to read; is it a "
                                            "mem0 export?"),
    ("mem0", "[" + "1" * 5000 + "]", "m.json nests too deeply or holds a number too long to read"),
])
def test_a_json_store_that_is_not_of_its_format_is_refused_whole(fmt: str, text: str, message: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        read(fmt, {"m.json": text})
    assert str(refused.value).startswith(message)


def test_mem0_fixture_reads_text_tags_and_authors() -> None:
    items, problems = items_by_key("mem0", files_of("mem0"))
    assert problems == {"memories.json#00000000-0000-4000-8000-000000000000": "not a memory with 'memory' text"}
    pnpm = items["memories.json#3c90c3cc-0d44-4b50-8888-8dd25736052a"]
    assert pnpm.candidate == Candidate(
        "Uses pnpm instead of npm for JavaScript projects", type="preference", tags=("technology", "tooling"),
        paths=("package.json",), author="alex", label="memories.json#3c90c3cc-0d44-4b50-8888-8dd25736052a")
    food = items["memories.json#8a7b6c5d-1e2f-4a3b-9c8d-7e6f5a4b3c2d"]
    assert food.note == "metadata type 'food' is none of gitmem's: imported as a fact"
    assert (food.candidate.type, food.candidate.tags) == ("fact", ("health", "food"))
    agent = items["memories.json#5e4d3c2b-1a09-4f8e-b7d6-c5b4a3928170"]
    assert (agent.candidate.author, agent.candidate.type, agent.note) == ("coding-agent", "fact", "")


@pytest.mark.parametrize("key", ["results", "memories", "data"])
def test_mem0_exports_in_every_shape(key: str) -> None:
    entries = [{"memory": "one", "user_id": 42, "categories": "a, b", "metadata": {"tags": ["b", "c"]}},
               {"id": "x", "memory": "two", "metadata": "odd", "agent_id": "bot"}, {"memory": None}, "junk"]
    for text in (json.dumps({"other": [], key: entries}), json.dumps(entries)):
        items, problems = items_by_key("mem0", {"e.json": text})
        unreadable = "not a memory with 'memory' text"
        assert problems == {"e.json#3": unreadable, "e.json#4": unreadable}
        assert (items["e.json#1"].candidate.author, items["e.json#1"].candidate.tags) == ("42", ("a", "b", "c"))
        assert (items["e.json#x"].candidate.author, items["e.json#x"].candidate.type) == ("bot", "fact")
        assert items["e.json#1"].candidate.author != items["e.json#x"].candidate.author
    items, _ = items_by_key("mem0", {"e.json": json.dumps([{"memory": "anonymous", "user_id": ""}])})
    assert items["e.json#1"].candidate.author is None


def test_read_reports_unreadable_files_and_reads_the_rest() -> None:
    files = {"fact/big.md": "\x00too large", "fact/bin.md": "\x00not UTF-8", "fact/link.md": "\x00outside",
             "fact/ok.md": "---\ntype: fact\n---\nFine"}
    items, problems = read("OKF ", files)
    assert [i.key for i in items] == ["fact/ok"]
    assert problems == [Problem("fact/big.md", "too large (over 1 MiB)"), Problem("fact/bin.md", "not UTF-8 text"),
                        Problem("fact/link.md", "a symbolic link to outside the folder: not followed")]
    for fmt in importers.FORMATS:
        assert read(fmt, {"x.json": "\x00outside"}) == ([], [Problem("x.json", importers._UNREADABLE["\x00outside"])])


# --- formats, files and digests ---------------------------------------------------------------------


def test_check_format_names_the_formats() -> None:
    assert [check_format(f" {f.upper()} ") for f in importers.FORMATS] == list(importers.FORMATS)
    for bad in ("csv", None, 3, ""):
        with pytest.raises(InvalidInput, match="^unknown import format .*; use one of: okf, pi-memory-spaced, "
                                               "basic-memory, mem0$"):
            check_format(bad)


def test_check_files_takes_relative_paths_inside_the_source() -> None:
    assert check_files({"a\\b.md": "x", "./c/d.md": "y"}) == {"a/b.md": "x", "c/d.md": "y"}
    assert len(check_files({f"{n}.md": "" for n in range(20_000)})) == 20_000
    with pytest.raises(InvalidInput, match="more than 20000 files; import them in parts"):
        check_files({f"{n}.md": "" for n in range(20_001)})
    for bad in ({}, [], None, "a.md"):
        with pytest.raises(InvalidInput, match="'files' must be an object of relative path -> file text"):
            check_files(bad)
    with pytest.raises(InvalidInput, match="^file 'a.md': its text must be a string$"):
        check_files({"a.md": 3})
    for name in ("/etc/x.md", "../x.md", "a/../../x.md", "", ".", "a\x00.md", "a\nb.md", "a\x1f.md", "a\ud800.md"):
        with pytest.raises(InvalidInput, match="must be a relative path inside the source"):
            check_files({name: "x"})


def test_item_digest_is_the_format_the_key_and_the_text_up_to_spacing() -> None:
    def item(key: str, text: str) -> Item:
        return Item(key, Candidate(text))

    digest = item_digest("mem0", item("a", "Deploys happen on Tuesdays"))
    assert len(digest) == 16 and int(digest, 16) >= 0
    assert item_digest("mem0", item("a", "  Deploys  happen\non Tuesdays ")) == digest
    assert item_digest("mem0", Item("a", Candidate("Deploys happen on Tuesdays", title="other"), ("b",))) == digest
    assert len({digest, item_digest("okf", item("a", "Deploys happen on Tuesdays")),
                item_digest("mem0", item("b", "Deploys happen on Tuesdays")),
                item_digest("mem0", item("a", "Deploys happen on Thursdays")),
                item_digest("mem0", item("a\0Deploys", "happen on Tuesdays"))}) == 5
    assert item_digest("mem0", item("a", "lone \ud800 surrogate"))  # stored as it came, never an error


# --- the source on disk -----------------------------------------------------------------------------


def test_read_source_folders_of_each_format(tmp_path: Path) -> None:
    okf_files = read_source(DATA / "okf", "okf")
    assert set(okf_files) == set(files_of("okf"))
    basic = read_source(DATA / "basic-memory", "basic-memory")
    assert set(basic) == {"notes/authentication-design.md", "specs/api-security.md", "User Database Schema.md"}
    assert basic["specs/api-security.md"] == (DATA / "basic-memory" / "specs" / "api-security.md").read_text()
    assert read_source(DATA / "mem0", "mem0") == {"memories.json": (DATA / "mem0" / "memories.json").read_text()}
    assert list(read_source(DATA / "pi-memory-spaced", "pi-memory-spaced")) == ["memory-store.json"]

    folder = tmp_path / "many"
    folder.mkdir()
    for name in ("b.json", "a.json", "memory-store.json", "notes.txt"):
        (folder / name).write_text("[]")
    assert list(read_source(folder, "mem0")) == ["a.json", "b.json", "memory-store.json"]
    assert list(read_source(folder, "pi-memory-spaced")) == ["memory-store.json"]
    assert read_source(folder / "b.json", "mem0") == {"b.json": "[]"}
    assert read_source(folder / "a.json", " Pi-Memory-Spaced") == {"a.json": "[]"}


def test_read_source_takes_markdown_and_weights_and_skips_hidden_folders(tmp_path: Path) -> None:
    root = tmp_path / "src"
    for name in ("a.md", "sub/b.md", "sub/c.txt", ".git/d.md", "sub/.hidden/e.md", ".trash/t.md", ".meta/weights.json",
                 ".meta/other.json", ".meta/f.md", ".g.md", "sub/weights.json"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    (root / "dir.md").mkdir()
    assert read_source(root, "okf") == {n: n for n in (".g.md", ".meta/f.md", ".meta/weights.json", "a.md",
                                                       "sub/b.md")}


@pytest.mark.parametrize(("fmt", "make", "message"), [
    ("okf", None, "does not exist; give the folder or file to import"),
    ("okf", "file", "okf imports a folder; "),
    ("basic-memory", "file", "basic-memory imports a folder; "),
    ("okf", "folder", "holds no Markdown files; is it an OKF folder?"),
    ("basic-memory", "folder", "holds no Markdown files; is it a basic-memory folder?"),
    ("mem0", "folder", "holds no .json file; give the JSON file itself"),
    ("pi-memory-spaced", "folder", "holds no memory-store.json; give the JSON file itself"),
    ("csv", "folder", "unknown import format 'csv'"),
])
def test_read_source_refuses_what_is_not_a_source(tmp_path: Path, fmt: str, make: str | None, message: str) -> None:
    path = tmp_path / "source"
    if make == "file":
        path.write_text("x")
    elif make == "folder":
        (path / "sub").mkdir(parents=True)
        (path / "sub" / "notes.txt").write_text("x")
        (path / ".meta").mkdir()
        (path / ".meta" / "weights.json").write_text("{}")
        (path / "memory-store.json.bak").write_text("{}")
    with pytest.raises(InvalidInput, match=message.replace("?", r"\?").replace(".", r"\.")):
        read_source(path, fmt)


def test_read_source_marks_files_it_cannot_read(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    mib = 1 << 20  # "over 1 MiB", the refusal says
    (root / "exact.md").write_bytes(b"x" * mib)
    (root / "over.md").write_bytes(b"x" * (mib + 1))
    (root / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (root / "utf8.md").write_text("café")
    (tmp_path / "secret.md").write_text("outside")
    (root / "out.md").symlink_to(tmp_path / "secret.md")
    (root / "in.md").symlink_to(root / "utf8.md")
    files = read_source(root, "basic-memory")
    assert files == {"exact.md": "x" * mib, "in.md": "café", "latin1.md": "\x00not UTF-8",
                     "out.md": "\x00outside", "over.md": "\x00too large", "utf8.md": "café"}
    (root / "dangling.md").symlink_to(root / "nowhere.md")
    assert "dangling.md" not in read_source(root, "basic-memory")  # no file behind it
    (root / "locked.md").write_text("x")
    (root / "locked.md").chmod(0)
    try:
        if not (root / "locked.md").stat().st_uid == 0:  # root reads any file
            with pytest.raises(InvalidInput, match="cannot read .*locked.md: Permission denied"):
                read_source(root, "basic-memory")
    finally:
        (root / "locked.md").chmod(0o644)
    (root / "loop.md").symlink_to(root / "loop.md")
    with pytest.raises(InvalidInput, match="cannot read"):
        importers._read_text(root / "loop.md")


def test_read_source_stops_at_the_file_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A lower limit than the real 20000, for speed; still a number Python does not share between uses.
    monkeypatch.setattr(importers, "MAX_FILES", 300)
    for n in range(300):
        (tmp_path / f"{n}.md").write_text("x")
    assert len(read_source(tmp_path, "okf")) == 300
    (tmp_path / "one-more.md").write_text("x")
    with pytest.raises(InvalidInput, match="holds more than 300 files; import it in parts"):
        read_source(tmp_path, "okf")
