"""The memory concept: Markdown with YAML frontmatter, validation of input, slugs and potency."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from datetime import UTC, datetime, timedelta

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem import concepts
from gitmem.concepts import Memory
from gitmem.errors import InvalidInput, MalformedConcept

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def memory(**changes: object) -> Memory:
    base = Memory(id="0123456789", type="convention", text="Use pnpm for JavaScript packages.",
                  title="Use pnpm", created=T0, updated=T0, path="convention/use-pnpm.md")
    return base.replace(**changes)


def frontmatter(data: bytes) -> dict[str, object]:
    head = data.decode("utf-8").split("---\n")[1]
    loaded = yaml.safe_load(head)
    assert isinstance(loaded, dict)
    return loaded


# --- rendering and parsing ----------------------------------------------------------------------


@pytest.mark.parametrize("text,title", [
    ("Use pnpm for JavaScript packages.\n\nNot npm, not yarn.", "Use pnpm"),
    ("所有前端依赖都用 pnpm 安装，不要用 npm。", "前端依赖用 pnpm"),
    ("Ship on Fridays 🎉 only with a second reviewer", "Fridays 🎉"),
    ("key: value\n- not a list\n---\nnot frontmatter either", "yes"),
])
def test_render_then_parse_gives_the_same_memory(text: str, title: str) -> None:
    original = memory(text=text, title=title, tags=("js", "工具"), paths=("web/", "package.json"),
                      author="ann", last_used=T0 + timedelta(days=2), access_count=3, potency=0.6123,
                      tenured=True, verified=("bob",), related=("abcdefabcd",), supersedes=("0000000000",),
                      state="archived", archived_reason="superseded")
    data = concepts.render(original)
    again = concepts.parse(data, original.path)
    # An empty description is filled in from the text for OKF readers; everything else survives.
    assert again == original.replace(description=concepts.description_from(text))
    assert concepts.render(again) == data, "rendering is stable"


def test_rendered_file_is_okf_frontmatter_then_the_text() -> None:
    data = concepts.render(memory(tags=("js",)))
    text = data.decode()
    assert text.startswith("---\ntype: convention\ntitle: Use pnpm\n")
    assert text.endswith("---\n\nUse pnpm for JavaScript packages.\n")
    meta = frontmatter(data)
    # OKF v0.1 keys first, then gitmem's own.
    assert list(meta)[:5] == ["type", "title", "description", "tags", "timestamp"]
    assert meta["timestamp"] == "2026-01-01T12:00:00Z"
    assert meta["description"] == "Use pnpm for JavaScript packages."
    for key in ("id", "source", "author", "created", "updated", "paths", "potency", "last_used",
                "access_count", "state", "tenured", "verified", "related", "supersedes"):
        assert key in meta


def test_emoji_and_chinese_are_written_as_they_are() -> None:
    data = concepts.render(memory(title="发布 🎉"))
    assert "title: 发布 🎉\n" in data.decode()


def test_parse_accepts_a_bom_and_crlf_line_ends() -> None:
    data = concepts.render(memory()).replace(b"\n", b"\r\n")
    parsed = concepts.parse(b"\xef\xbb\xbf" + data, "convention/use-pnpm.md")
    assert parsed.id == "0123456789"
    assert parsed.text == "Use pnpm for JavaScript packages."


def test_a_hand_written_minimal_file_parses_with_defaults() -> None:
    data = b"---\ntype: lesson\nid: abcdef0123\n---\nAlways run the migrations twice.\n"
    parsed = concepts.parse(data, "lesson/migrations.md")
    assert parsed.title == "Always run the migrations twice."
    assert parsed.potency == concepts.NEW_POTENCY
    assert parsed.state == "active"
    assert parsed.source == "import"
    assert parsed.created >= concepts.now() - timedelta(minutes=1), "no date: new, not from 1970"
    assert concepts.tier(parsed.potency_at(concepts.now())) == "active"


@pytest.mark.parametrize("data,reason", [
    (b"Just some text without frontmatter\n", "no YAML frontmatter"),
    (b"---\ntype: fact\nid: 0123456789\ntitle: [unclosed\n---\ntext\n", "not valid YAML"),
    (b"---\n- a\n- list\n---\ntext\n", "must be a mapping"),
    (b"---\ntype: rumour\nid: 0123456789\n---\ntext\n", "'type' must be one of"),
    (b"---\ntype: fact\nid: 42\n---\ntext\n", "'id' must be 10 hex characters"),
    (b"---\ntype: fact\nid: 0123456789\n---\n\n", "no text below the frontmatter"),
    (b"---\ntype: fact\nid: 0123456789\nstate: lost\n---\ntext\n", "'state' must be one of"),
    (b"---\ntype: fact\nid: 0123456789\npotency: 7\n---\ntext\n", "'potency' must be between 0 and 1"),
    (b"---\ntype: fact\nid: 0123456789\npotency: high\n---\ntext\n", "high"),
    (b"---\ntype: fact\nid: 0123456789\ncreated: last tuesday\n---\ntext\n", "last tuesday"),
    (b"---\ntype: fact\nid: 0123456789\ntags: {a: 1}\n---\ntext\n", "'tags' must be a list"),
    (b"---\ntype: fact\nid: 0123456789\n---\nbad \xff byte\n", "not valid UTF-8"),
])
def test_a_malformed_file_raises_an_error_naming_the_file(data: bytes, reason: str) -> None:
    with pytest.raises(MalformedConcept) as caught:
        concepts.parse(data, "fact/broken-by-hand.md")
    assert caught.value.path == "fact/broken-by-hand.md"
    assert str(caught.value).startswith("fact/broken-by-hand.md: ")
    assert reason in str(caught.value)
    assert "\n" not in str(caught.value)


# --- validation of input ------------------------------------------------------------------------


@pytest.mark.parametrize("text,message", [
    ("", "empty"),
    ("   \n\t  ", "empty"),
    ("x" * 101, "101 characters; the limit is 100"),
    ("null \x00 byte", "NUL"),
    ("bad \udcff surrogate", "not valid UTF-8"),
    (b"bad \xff\xfe bytes", "not valid UTF-8"),
    (42, "must be a string"),
    (None, "must be a string"),
])
def test_clean_text_rejects_bad_text(text: object, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        concepts.clean_text(text, limit=100)


def test_clean_text_normalises() -> None:
    assert concepts.clean_text("  cafe\u0301\r\nnext line  ", limit=100) == "caf\u00e9\nnext line"
    assert concepts.clean_text("数据库 ok".encode(), limit=100) == "数据库 ok"
    assert concepts.clean_text("x" * 100, limit=100) == "x" * 100


@pytest.mark.parametrize("title", [
    "../../etc/passwd", "..", "/etc/passwd", "~/secrets", "a/../b", "a\\..\\b", "./x",
    "two\nlines", "bell\x07inside", "nul\x00byte", "bad \udcff", "",
])
def test_clean_title_rejects_paths_and_control_characters(title: str) -> None:
    with pytest.raises(InvalidInput):
        concepts.clean_title(title, limit=200)


def test_clean_title_keeps_ordinary_titles() -> None:
    assert concepts.clean_title("Use pnpm / not npm", limit=200) == "Use pnpm / not npm"
    assert concepts.clean_title("数据库迁移规范", limit=200) == "数据库迁移规范"
    with pytest.raises(InvalidInput, match="limit is 10"):
        concepts.clean_title("a title that is too long", limit=10)


@pytest.mark.parametrize(("text", "title"), [
    ("---\ntitle: Checklist\ntags: [ops]\n---\n\nFirst line below it", "First line below it"),
    ("---\ntitle: Checklist\n---\n# Deploy checklist\n\n1. Tag the release", "Deploy checklist"),
    ("# Deploy checklist\n\n1. Tag the release", "Deploy checklist"),
    ("## Deploy checklist ##", "Deploy checklist"),
    ("#hashtag is not a heading", "#hashtag is not a heading"),
    ("C# is fine #", "C# is fine #"),
    ("#", "#"),
    ("---\nA rule, then a heading\n---\nmore", "---"),  # no mapping: not frontmatter
])
def test_a_derived_title_skips_frontmatter_and_heading_marks(text: str, title: str) -> None:
    assert concepts.title_from(text) == title


def test_read_note_takes_title_type_tags_and_paths_from_frontmatter() -> None:
    note = "---\ntitle: Deploy\ntype: method\ntags: [release, 2024]\npaths: deploy.sh\nid: x\n---\n# Deploy\nTag it."
    assert concepts.read_note(note) == ("# Deploy\nTag it.", {"title": "Deploy", "type": "method",
                                                              "tags": ("release", "2024"), "paths": ("deploy.sh",)})
    assert concepts.read_note("# Deploy\nTag it.") == ("# Deploy\nTag it.", {})
    assert concepts.read_note("---\nA rule\n---\ntext") == ("---\nA rule\n---\ntext", {})
    with pytest.raises(InvalidInput, match="frontmatter is not valid YAML"):
        concepts.read_note("---\ntags: [unclosed\n---\ntext")
    with pytest.raises(InvalidInput, match="'tags' must be a list"):
        concepts.read_note("---\ntags: {a: 1}\n---\ntext")


def test_clean_type_knows_the_ten_types() -> None:
    assert len(concepts.TYPES) == 10
    assert concepts.clean_type(" Convention ") == "convention"
    with pytest.raises(InvalidInput, match="unknown type 'rumour'; use one of: fact, preference"):
        concepts.clean_type("rumour")


def test_clean_list_drops_blanks_and_repeats_and_rejects_control_characters() -> None:
    assert concepts.clean_list(["a", " a ", "", "b"], what="tag") == ("a", "b")
    assert concepts.clean_list("one", what="tag") == ("one",)
    with pytest.raises(InvalidInput, match="tag"):
        concepts.clean_list(["bad\x01"], what="tag")
    with pytest.raises(InvalidInput, match="over 5 characters"):
        concepts.clean_list(["toolong"], what="tag", limit=5)


def test_clean_list_takes_at_most_max_list_items() -> None:
    most = concepts.MAX_LIST_ITEMS
    assert len(concepts.clean_list([f"t{i}" for i in range(most)], what="tag")) == most
    # Repeats and blanks do not count.
    assert len(concepts.clean_list([f"t{i % most}" for i in range(10_000)] + [""], what="tag")) == most
    with pytest.raises(InvalidInput, match=f"^more than {most} tags; a memory takes at most {most}$"):
        concepts.clean_list([f"t{i}" for i in range(10_000)], what="tag")


# --- slugs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("title,slug", [
    ("Use pnpm for JavaScript!", "use-pnpm-for-javascript"),
    ("数据库迁移规范", "数据库迁移规范"),
    ("用 pnpm 管理依赖", "用-pnpm-管理依赖"),
    ("../../etc/passwd", "etc-passwd"),
    ("..", "memory"),
    ("🎉🎉", "memory"),
    ("Ｆｕｌｌ　Ｗｉｄｔｈ", "full-width"),
])
def test_slugify(title: str, slug: str) -> None:
    assert concepts.slugify(title) == slug


@pytest.mark.parametrize("title", ["../../etc/passwd", "..\\..\\windows", "/abs/path", "a" * 500, "x/./y"])
def test_file_paths_never_leave_the_type_folder(title: str) -> None:
    path = concepts.file_path("fact", concepts.slugify(title))
    folder, name = path.split("/")
    assert folder == "fact"
    assert name.endswith(".md") and not name.startswith(".")
    assert len(name) <= 63


# --- potency --------------------------------------------------------------------------------------


def test_new_memories_start_at_0_8_and_decay_5_percent_a_day() -> None:
    fresh = memory()
    assert fresh.potency == 0.8
    assert fresh.potency_at(T0) == 0.8
    assert fresh.potency_at(T0 + timedelta(days=10)) == pytest.approx(0.8 * 0.95**10)


def test_decay_is_lazy_and_computing_it_twice_changes_nothing() -> None:
    fresh = memory()
    later = T0 + timedelta(days=7)
    first = fresh.potency_at(later)
    assert fresh.potency_at(later) == first
    assert fresh.potency == 0.8, "reading potency never rewrites it"
    assert concepts.parse(concepts.render(fresh), fresh.path).potency_at(later) == first


def gained(potency: float, uses: int = 1) -> float:
    """Potency after ``uses`` uses at once: each closes 30% of the gap to 1."""
    for _ in range(uses):
        potency += 0.3 * (1 - potency)
    return potency


def test_each_use_closes_30_percent_of_the_gap_to_1() -> None:
    once = memory().with_use(T0)
    assert once.potency == pytest.approx(0.86)
    assert once.access_count == 1 and once.last_used == T0
    faded = memory(potency=0.2).with_use(T0 + timedelta(days=1))
    assert faded.potency == pytest.approx(gained(0.2 * 0.95), abs=1e-4)
    three = memory(potency=0.1).with_use(T0, count=3)
    assert three.potency == pytest.approx(gained(0.1, 3), abs=1e-4) and three.access_count == 3
    # Used every day, a memory settles below 1, where a day's decay and a use balance (0.895).
    daily = memory(potency=0.8)
    for day in range(1, 120):
        daily = daily.with_use(T0 + timedelta(days=day))
    assert daily.potency == pytest.approx(0.3 / (1 - 0.95 * 0.7), abs=1e-3)
    # Used every week it settles lower: potency says how much a memory is used.
    weekly = memory(potency=0.8)
    for week in range(1, 30):
        weekly = weekly.with_use(T0 + timedelta(days=7 * week))
    assert 0.5 < weekly.potency < 0.65


def test_tiers() -> None:
    assert concepts.tier(0.8) == "active"
    assert concepts.tier(0.15) == "active"
    assert concepts.tier(0.1499) == "low"
    assert concepts.tier(0.10) == "low"
    assert concepts.tier(0.0999) == "archived"


def test_an_unused_memory_falls_to_the_archived_tier_but_a_tenured_one_stays_active() -> None:
    later = T0 + timedelta(days=120)
    assert concepts.tier(memory().potency_at(later)) == "archived"
    tenured = memory(tenured=True)
    assert tenured.potency_at(later) == pytest.approx(concepts.ACTIVE_FLOOR)
    assert concepts.tier(tenured.potency_at(later)) == "active"
    # The floor holds a tenured memory where it was and never raises one that was below it.
    assert memory(tenured=True, potency=0.12).potency_at(later) == pytest.approx(0.12)


def test_to_dict_is_json_ready() -> None:
    out = memory(last_used=T0).to_dict()
    assert out["created"] == "2026-01-01T12:00:00Z"
    assert out["last_used"] == "2026-01-01T12:00:00Z"
    assert out["tags"] == []


@settings(max_examples=300, deadline=None)
@given(text=st.text(min_size=1, max_size=200).filter(lambda t: t.strip()),
       title=st.text(max_size=60), tags=st.lists(st.text(min_size=1, max_size=12), max_size=4),
       potency=st.floats(min_value=0, max_value=1), tenured=st.booleans(),
       author=st.one_of(st.none(), st.text(max_size=20)))
def test_rendered_gives_the_memory_parse_reads_back(text: str, title: str, tags: list[str], potency: float,
                                                    tenured: bool, author: str | None) -> None:
    try:
        memory = Memory(id=concepts.new_id(), type="fact", text=concepts.clean_text(text, limit=500),
                        title=title, tags=tuple(tags), potency=potency, tenured=tenured, author=author,
                        path="fact/x.md")
        data, parsed = concepts.rendered(memory)
    except InvalidInput:
        return
    try:
        reread = concepts.parse(data, "fact/x.md")
    except MalformedConcept:
        return  # text the file cannot hold is refused on the way in, not here
    assert reread == parsed
def test_potency_decays_from_the_last_use_not_from_creation() -> None:
    # Stored a hundred days ago, used yesterday: it has faded for one day, not a hundred.
    used_yesterday = memory(created=T0 - timedelta(days=100), last_used=T0 - timedelta(days=1))
    assert used_yesterday.potency_at(T0) == pytest.approx(0.8 * 0.95)
    assert concepts.tier(used_yesterday.potency_at(T0)) == "active"
    # Never used: the clock runs from creation.
    assert memory(created=T0 - timedelta(days=100)).potency_at(T0) == pytest.approx(0.8 * 0.95**100)


def test_a_use_decays_from_the_last_use_then_adds_0_3() -> None:
    old = memory(created=T0 - timedelta(days=100), last_used=T0 - timedelta(days=2), potency=0.5)
    again = old.with_use(T0)
    assert again.potency == pytest.approx(gained(0.5 * 0.95**2), abs=1e-4)
    assert (again.last_used, again.access_count) == (T0, 1)
    # Uses counted together decay only up to the first of them.
    twice = memory(potency=0.2).with_use(T0 + timedelta(days=3), count=2)
    assert twice.potency == pytest.approx(gained(0.2 * 0.95**3, 2), abs=1e-4)


def test_decay_before_the_start_or_without_a_start_changes_nothing() -> None:
    assert concepts.decayed(0.5, None, T0) == 0.5
    assert concepts.decayed(0.5, T0 + timedelta(days=1), T0) == 0.5
    assert concepts.decayed(0.5, T0, T0) == 0.5
    assert concepts.decayed(0.5, T0, T0 + timedelta(hours=12)) == pytest.approx(0.5 * 0.95**0.5)


# --- details the mutation run showed no test held (bench/mutation.py) -----------------------------


def test_a_memory_is_immutable() -> None:
    with pytest.raises(FrozenInstanceError):
        memory().text = "changed in place"  # type: ignore[misc]


def test_ids_and_times() -> None:
    assert all(concepts.is_id(concepts.new_id()) for _ in range(20))
    assert concepts.now().microsecond == 0 and concepts.now().tzinfo is UTC
    assert concepts.parse_time(None) is None and concepts.parse_time("") is None
    naive = datetime(2026, 1, 1, 12, 0)
    assert concepts.parse_time(naive) == T0 and concepts.parse_time("2026-01-01T12:00:00") == T0
    assert concepts.parse_time("2026-01-01T12:00:00Z") == T0
    two_hours_east = concepts.parse_time("2026-01-01T14:00:00+02:00")
    assert two_hours_east == T0 and two_hours_east is not None and two_hours_east.utcoffset() == timedelta(hours=2)
    assert concepts.parse_time(T0) is T0


def test_decay_does_not_assume_tenure() -> None:
    later = T0 + timedelta(days=100)
    assert concepts.decayed(0.5, T0, later) == pytest.approx(0.5 * 0.95**100)
    assert concepts.used(0.5, T0, later) == pytest.approx(gained(0.5 * 0.95**100))
    assert concepts.decayed(0.5, T0, later, tenured=True) == concepts.ACTIVE_FLOOR


def test_uses_add_to_the_count_and_potency_is_kept_to_four_places() -> None:
    used = memory(access_count=5, potency=0.123456).with_use(T0 + timedelta(days=1), count=3)
    assert used.access_count == 8
    assert used.potency == round(gained(0.123456 * 0.95, 3), 4)
    once = memory(potency=0.1).with_use(T0 + timedelta(hours=7))
    assert once.potency == round(gained(0.1 * 0.95 ** (7 / 24)), 4)
    assert frontmatter(concepts.render(memory(potency=0.123456)))["potency"] == 0.1235


def test_empty_input_says_what_is_empty() -> None:
    with pytest.raises(InvalidInput) as text:
        concepts.clean_text(" ", limit=10)
    assert str(text.value) == "text is empty: say what to remember"
    with pytest.raises(InvalidInput) as title:
        concepts.clean_title(" ", limit=10)
    assert str(title.value) == "title is empty"
    with pytest.raises(InvalidInput, match="^comment is empty$"):
        concepts.clean_text("", limit=10, what="comment")


def test_clean_source_knows_the_sources() -> None:
    assert [concepts.clean_source(s) for s in concepts.SOURCES] == list(concepts.SOURCES)
    for bad in ("robot", "User", 3, None):
        with pytest.raises(InvalidInput, match="unknown source .*; use one of: user, agent, slack"):
            concepts.clean_source(bad)


@pytest.mark.parametrize("bad", ["line\nbreak", "bell\x07", "bad \udcff surrogate"])
def test_clean_list_refuses_each_kind_of_bad_character(bad: str) -> None:
    with pytest.raises(InvalidInput, match="holds line breaks, control characters or invalid UTF-8"):
        concepts.clean_list(["fine", bad], what="path")


def test_clean_list_limits_each_value() -> None:
    assert concepts.clean_list(["x" * 200], what="tag") == ("x" * 200,)  # 200 by default, inclusive
    with pytest.raises(InvalidInput) as long:
        concepts.clean_list(["x" * 201], what="tag")
    assert str(long.value) == f"tag {'x' * 40!r}... is over 200 characters"
    assert concepts.clean_list(["abcde"], what="tag", limit=5) == ("abcde",)
    assert concepts.clean_list(None, what="tag") == ()
    with pytest.raises(InvalidInput, match="each tag must be a string"):
        concepts.clean_list([1], what="tag")


def test_titles_and_descriptions_made_from_the_text() -> None:
    assert concepts.title_from("  First line  \nsecond line") == "First line"
    assert concepts.title_from("x" * 80) == "x" * 80
    assert concepts.title_from("x" * 81) == "x" * 79 + "…"
    long = concepts.title_from("word " * 30)
    assert len(long) == 80 and long.endswith("word…") and long == ("word " * 16).strip()[:79].rstrip() + "…"
    assert concepts.title_from("bell\x07here") == "bell here"
    assert concepts.title_from("abcdefghij", limit=5) == "abcd…"
    assert concepts.description_from("Many\n\n  spaced   words") == "Many spaced words"
    assert concepts.description_from("x" * 160) == "x" * 160
    cut = concepts.description_from("y" * 200)
    assert cut == "y" * 159 + "…" and len(cut) == 160
    assert concepts.description_from("abcdefghij", limit=5) == "abcd…"


def test_slugs_are_cut_at_sixty_characters() -> None:
    assert concepts.slugify("a" * 100) == "a" * 60
    assert concepts.slugify("ab " * 30) == ("ab-" * 20)[:60].strip("-")


def test_emoji_fall_back_to_the_pure_python_dumper_in_the_same_order() -> None:
    data = concepts.render(memory(title="Ship 🎉", tags=("zeta", "alpha")))
    meta = frontmatter(data)
    assert list(meta) == ["type", "title", "description", "tags", "timestamp", "id", "source", "author",
                          "created", "updated", "paths", "potency", "last_used", "access_count", "state",
                          "tenured", "verified", "related", "supersedes"]
    assert meta["tags"] == ["zeta", "alpha"] and "\\" not in data.decode()


@pytest.mark.parametrize("potency", [0, 0.0, 1, 1.0])
def test_potency_at_the_ends_of_the_range_parses(potency: float) -> None:
    data = f"---\ntype: fact\nid: 0123456789\npotency: {potency}\n---\ntext\n".encode()
    assert concepts.parse(data, "fact/x.md").potency == potency


@pytest.mark.parametrize("potency", ["-0.01", "1.01"])
def test_potency_just_outside_the_range_is_refused(potency: str) -> None:
    with pytest.raises(MalformedConcept, match="'potency' must be between 0 and 1"):
        concepts.parse(f"---\ntype: fact\nid: 0123456789\npotency: {potency}\n---\ntext\n".encode(), "fact/x.md")


@pytest.mark.parametrize(("fields", "created", "updated"), [
    ("created: 2026-01-01T12:00:00Z", T0, T0),
    ("timestamp: 2026-01-02T12:00:00Z", T0 + timedelta(days=1), T0 + timedelta(days=1)),
    ("updated: 2026-01-03T12:00:00Z", T0 + timedelta(days=2), T0 + timedelta(days=2)),
    ("created: 2026-01-01T12:00:00Z\ntimestamp: 2026-01-02T12:00:00Z", T0, T0 + timedelta(days=1)),
    ("timestamp: 2026-01-02T12:00:00Z\nupdated: 2026-01-03T12:00:00Z", T0 + timedelta(days=1),
     T0 + timedelta(days=2)),
])
def test_hand_written_dates_fill_each_other_in(fields: str, created: datetime, updated: datetime) -> None:
    parsed = concepts.parse(f"---\ntype: fact\nid: 0123456789\n{fields}\n---\ntext\n".encode(), "fact/x.md")
    assert (parsed.created, parsed.updated) == (created, updated)


def test_hand_written_blanks_take_the_defaults() -> None:
    data = b"---\ntype: fact\nid: 0123456789\naccess_count: null\ntags: null\nauthor: 7\n---\ntext\n"
    parsed = concepts.parse(data, "fact/x.md")
    assert (parsed.access_count, parsed.tenured, parsed.tags, parsed.author) == (0, False, (), "7")
    assert concepts.parse(b"---\ntype: fact\nid: 0123456789\nsource: robot\n---\ntext\n", "f.md").source == "import"


# --- frontmatter someone else wrote (issue 23, item 1) --------------------------------------------


def _bomb_file(levels: int) -> bytes:
    from .test_safeparse import bomb

    return f"---\ntype: fact\nid: 3f2a9c1b7e\n{bomb(levels)}---\n\nA fact\n".encode()


@pytest.mark.parametrize("reader", ["parse", "parse_pushed"])
def test_an_alias_bomb_in_a_memory_file_is_refused_before_it_is_expanded(reader: str) -> None:
    # Level 3 (729 strings) parsed before the fix; level 9 is the 387-million-string bomb.
    for levels in (3, 9):
        with pytest.raises(MalformedConcept, match=r"fact/x\.md: frontmatter refused: it uses the YAML anchor &a"):
            getattr(concepts, reader)(_bomb_file(levels), "fact/x.md")


def test_nested_lists_are_not_tags() -> None:
    data = b"---\ntype: fact\nid: 3f2a9c1b7e\ntags: [[a, b], c]\n---\n\nA fact\n"
    with pytest.raises(MalformedConcept, match="'tags' must be a list of strings"):
        concepts.parse(data, "fact/x.md")
    deep = b"---\ntype: fact\ntags: " + b"[" * 3000 + b"]" * 3000 + b"\n---\n\nA fact\n"
    with pytest.raises(MalformedConcept, match="fact/x.md: frontmatter"):
        concepts.parse_pushed(deep, "fact/x.md")


def test_a_note_or_a_title_with_an_alias_bomb_is_not_expanded() -> None:
    from .test_safeparse import bomb

    note = f"---\n{bomb(9)}---\n\nThe body\n"
    with pytest.raises(InvalidInput, match="no anchors or aliases"):
        concepts.read_note(note)
    assert concepts.title_from(note) == "---"  # not frontmatter, so the first line of the text
