"""The details a rule turns on, and whether two statements are different rules.

Similar wording, and a similar sentence vector, does not make two statements one rule:
"PPT 正文字号统一用 18pt" and "PPT 标题字号统一用 28pt" score cosine 0.86, "Deploy to staging on
Mondays" and "Deploy to production on Thursdays" 0.68, while true paraphrases start at about
0.45. What tells them apart is a detail: a number and its unit, a code identifier or file name,
a tool, product, language or environment, a weekday, or one noun swapped for another in an
otherwise identical sentence. This module finds those details (pure functions, no I/O) so that
clustering never joins statements whose details conflict, and the offline merge can say what
it kept and what differed.

Two statements *conflict* when both name details of one kind and share none of them ({18pt} and
{28pt}; {staging} and {production}), or when they are the same sentence with one content word
(a CJK noun, an English noun) swapped. A correction that names the old value beside the new
("moved from Wednesday to Monday") shares a detail, so it stays with the rule it corrects.
"""

from __future__ import annotations

import difflib
import functools
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

from . import lexicon, words

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"

_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "twelve": "12", "twenty": "20", "thirty": "30",
    "hundred": "100", "一": "1", "二": "2", "两": "2", "三": "3", "四": "4", "五": "5", "六": "6",
    "七": "7", "八": "8", "九": "9", "十": "10",
}
_UNITS = {
    "ms": "ms", "millisecond": "ms", "milliseconds": "ms", "毫秒": "ms",
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s", "秒": "s",
    "min": "min", "mins": "min", "minute": "min", "minutes": "min", "分钟": "min",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "小时": "h",
    "day": "d", "days": "d", "天": "d", "日": "d",
    "week": "w", "weeks": "w", "周": "w", "month": "mo", "months": "mo", "个月": "mo", "月": "mo",
    "year": "y", "years": "y", "年": "y",
    "%": "%", "percent": "%", "pt": "pt", "px": "px", "em": "em", "rem": "rem",
    "kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb",
    "line": "lines", "lines": "lines", "行": "lines",
    "character": "chars", "characters": "chars", "chars": "chars", "字符": "chars", "字": "chars",
    "space": "spaces", "spaces": "spaces", "空格": "spaces",
}
_UNIT_PATTERN = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_NUMBER = re.compile(
    rf"(?<![\w./:-])(\d+(?:[.,]\d+)?|{'|'.join(_NUMBER_WORDS)})\s*-?\s*(?:个\s*)?({_UNIT_PATTERN})?(?![a-z])",
    re.IGNORECASE,
)
_WEEKDAYS = {
    "monday": "mon", "tuesday": "tue", "wednesday": "wed", "thursday": "thu", "friday": "fri",
    "saturday": "sat", "sunday": "sun",
    "周一": "mon", "周二": "tue", "周三": "wed", "周四": "thu", "周五": "fri", "周六": "sat", "周日": "sun",
    "星期一": "mon", "星期二": "tue", "星期三": "wed", "星期四": "thu", "星期五": "fri", "星期六": "sat",
    "星期日": "sun", "星期天": "sun", "周天": "sun",
}
_WEEKDAY = re.compile(
    r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b|((?:周|星期)[一二三四五六日天])",
    re.IGNORECASE,
)
_ENVIRONMENTS = {
    "staging": "staging", "stage": "staging", "预发": "staging", "预发布": "staging",
    "production": "production", "prod": "production", "生产": "production", "线上": "production",
    "development": "development", "dev": "development", "开发": "development",
    "local": "local", "本地": "local", "qa": "qa", "sandbox": "sandbox", "测试环境": "test",
}
# Tools and products written in lower case, which capitalisation does not reveal.
_ENVIRONMENT_WORD = re.compile(r"\b(?:" + "|".join(w for w in _ENVIRONMENTS if w.isascii()) + r")\b")
_ONE_CJK = re.compile(f"[{_CJK}]")
_NUMBER_AND_UNIT = re.compile(r"([\d.,]+)(.*)")
_TOOLS = frozenset("""
    npm pnpm yarn bun pip uv poetry conda pipenv ruff black isort flake8 pylint mypy pyright pytest
    unittest tox nox eslint prettier tsc jest vitest mocha cypress playwright webpack vite rollup esbuild
    docker podman kubectl helm terraform ansible git gofmt cargo rustfmt clippy maven gradle celery redis
    postgres postgresql mysql sqlite mongodb kafka rabbitmq nginx gunicorn uvicorn django flask fastapi
    react vue svelte angular nextjs nuxt tailwind zustand redux alembic prisma sqlalchemy vault
    python golang typescript javascript rust java kotlin swift ruby php yaml json toml markdown
    """.split())
_ALIASES = {"golang": "go", "postgresql": "postgres", "js": "javascript", "ts": "typescript"}
# An identifier, path or file name: word characters joined by _ . / : - with at least one of them
# inside (not a sentence's final dot), or a word mixing letters and digits, or a leading-dot name.
_IDENTIFIER = re.compile(
    r"(?<![\w.])(?:\.[a-z0-9]+(?:[._-][a-z0-9]+)*|_[a-z0-9_]+|[a-z0-9]+(?:[_./:@-][a-z0-9]+)+|[a-z]+\d+[a-z0-9]*)"
    r"(?![\w])", re.IGNORECASE)
# A command-line option: "-x", "--frozen-lockfile".
_FLAG = re.compile(r"(?<![\w-])--?[a-z][a-z0-9-]*", re.IGNORECASE)
# Hyphenated words ("third-party", "10-second"), numbers with units and contractions are words.
_NOT_IDENTIFIER = re.compile(r"e\.g|i\.e|etc|[a-z]+(?:-[a-z]+)+|\d+(?:[.,]\d+)?(?:-?[a-z%]+)*|[a-z]+'[a-z]+")
# What follows these in a clause is an example, not the rule.
_EXAMPLE = re.compile(r"\be\.g\.|\bfor example\b|\bfor instance\b|\bsuch as\b|例如|比如|譬如|如：")
_WORD = re.compile(rf"[^\W_{_CJK}]+(?:['’][^\W_{_CJK}]+)*|[{_CJK}]")
_CAPITALISED = re.compile(r"(?<![.!?。！？:：]\s)(?<!^)\b([A-Z][a-z]+[A-Z][A-Za-z]*|[A-Z]{2,}[a-z]?s?|[A-Z][a-z]+)\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?;:。！？；：]\s*)([A-Z][a-z]+)")

# Words that change how a rule is said, not what it says: swapping one of these for another is
# paraphrase, not a different rule.
_FUNCTION_WORDS = frozenset("""
    a an the and or but nor every each all any some most more less only also
    just still now then than so too very to of in on at by for from with without into onto over under
    up down out off about as is are was were be been being am do does did done doing
    have has had having will would shall should can could may might must need needs it its this that
    these those there here we us our you your they them their he she his her i me my one ones who which
    what when where why how use used using uses make makes made keep keeps kept go goes going get gets
    instead via per e g eg ie etc such like same other others own new old
    """.split())
# Words whose swap for one another turns a rule around (always / never, before / after), as stems.
_POLARITY = frozenset({"alway", "nev", "not", "no", "befor", "aft", "dont", "don't", "不", "别", "禁", "勿", "没"})
# Words that turn a rule into its opposite when one statement adds them.
_NEGATIONS = frozenset({"not", "no", "never", "don't", "dont", "nev", "不", "别", "禁", "勿", "没"})
_CJK_FUNCTION = frozenset("的了在是和与及或都也就要用把被让给对从到以为而且并请必须一律统一"
                          "所有每个每次时候里中上下前后再先之这那个")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """A crude English stem: enough to see "tests" and "test", "committing" and "commit" as one word."""
    word = word.lower().replace("’", "'").removesuffix("'s")
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2]:
        word = word[:-1]  # committ -> commit
    return word.rstrip("e") or word


@dataclass(frozen=True)
class Details:
    """The details of one statement, normalised for comparison (see :func:`details`).

    ``examples`` are the names given as examples ("e.g. order_items"): two statements of one rule
    often give different ones, so they never make a conflict, but a merge must not lose them.
    """

    numbers: frozenset[str]
    names: frozenset[str]
    weekdays: frozenset[str]
    environments: frozenset[str]
    examples: frozenset[str] = frozenset()

    def kinds(self) -> dict[str, frozenset[str]]:
        """The details by kind, as a reader would name them."""
        return {"number": self.numbers, "name": self.names, "weekday": self.weekdays,
                "environment": self.environments}

    def all(self) -> frozenset[str]:
        """Every detail of every kind, examples included."""
        return self.numbers | self.names | self.weekdays | self.environments | self.examples


@functools.lru_cache(maxsize=16384)
def details(text: str) -> Details:
    """The numbers (with units), names, weekdays and environments a statement mentions."""
    folded = _fold(text)
    lower = folded.lower()
    numbers = set()
    for match in _NUMBER.finditer(folded):
        raw, unit_word = match.group(1).lower(), (match.group(2) or "").lower()
        value = _NUMBER_WORDS.get(raw, raw.replace(",", ""))
        if unit_word == "" and raw in _NUMBER_WORDS and not raw.isdigit():
            if raw.isascii():
                continue  # "one" alone is a pronoun far more often than a count
            if not re.search(rf"{re.escape(raw)}\s*(?:个)?\s*[{_CJK}]", folded):
                continue
        numbers.add(value + _UNITS.get(unit_word, unit_word))
    weekdays = {_WEEKDAYS[(m.group(1) or m.group(2)).lower()] for m in _WEEKDAY.finditer(folded)}
    environments = {_ENVIRONMENTS[m.group(0)] for m in _ENVIRONMENT_WORD.finditer(lower)}
    environments |= {env for word, env in _ENVIRONMENTS.items() if not word.isascii() and word in folded}
    names: set[str] = set()
    examples: set[str] = set()
    example_from = min((m.start() for m in _EXAMPLE.finditer(folded)), default=len(folded))
    for match in _IDENTIFIER.finditer(folded):
        token = match.group(0).lower().rstrip(".:")
        if not token or _NOT_IDENTIFIER.fullmatch(token):
            continue
        (examples if match.start() > example_from else names).add(token)
    names.update(m.group(0).lower() for m in _FLAG.finditer(folded))
    starts = {m.group(1) for m in _SENTENCE_START.finditer(folded)}
    for match in re.finditer(r"[A-Za-z][A-Za-z0-9+#]*", folded):
        word = match.group(0)
        low = word.lower()
        if low in _TOOLS:
            names.add(_ALIASES.get(low, low))
        elif (word[0].isupper() and word not in starts and len(word) > 1
              and (low not in _FUNCTION_WORDS or word == "Go")) or \
                (word.isupper() and len(word) >= 2):
            names.add(_ALIASES.get(low, low.rstrip("s") if word.isupper() else low))
    names -= set(_WEEKDAYS) | {w + "s" for w in _WEEKDAYS} | set(_ENVIRONMENTS) | set(_UNITS) | examples
    if example_from < len(folded):  # numbers inside examples ("feat/GM-142") are examples too
        numbers = {n for n in numbers if not any(n.rstrip("abcdefghijklmnopqrstuvwxyz%") in e for e in examples)}
    return Details(frozenset(numbers), frozenset(names), frozenset(weekdays), frozenset(environments),
                   frozenset(examples))


@functools.lru_cache(maxsize=65536)
def _content(text: str) -> tuple[str, ...]:
    """The content words of a statement in order: stemmed English words, single CJK characters."""
    return tuple(stem for stem, _ in _content_words(text))


@functools.lru_cache(maxsize=65536)
def _content_words(text: str) -> tuple[tuple[str, str], ...]:
    """Each content word as ``(stem, the word as written)``."""
    out = []
    for match in _WORD.finditer(_fold(text)):
        word = match.group(0)
        if _ONE_CJK.fullmatch(word):
            if word not in _CJK_FUNCTION:
                out.append((word, word))
        elif word.lower() not in _FUNCTION_WORDS:
            out.append((_stem(word), word))
    return tuple(out)


def swapped(a: str, b: str) -> tuple[str, str] | None:
    """The words swapped between two otherwise matching statements, or None.

    Only for statements that share most of their content words in order (a sentence written
    twice with one noun changed): "用户手机号必须加密存储" and "用户身份证号必须加密存储" swap
    手机 for 身份证. Paraphrases, which reword the whole sentence, do not qualify.
    """
    wa, wb = _content(a), _content(b)
    if not wa or not wb:
        return None
    # The ratio below is at most what the shared words allow: most pairs stop here, cheaply.
    shared = sum((Counter(wa) & Counter(wb)).values())
    if 2 * shared / (len(wa) + len(wb)) < 0.6:
        return None
    matcher = difflib.SequenceMatcher(None, wa, wb, autojunk=False)
    changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if len(changes) == 1 and changes[0][0] in ("insert", "delete") and matcher.ratio() >= 0.6:
        # One side adds only a negation ("Never deploy on Fridays" / "Deploy on Fridays"): the opposite rule.
        _, i1, i2, j1, j2 = changes[0]
        added = set(wa[i1:i2] or wb[j1:j2])
        if added and added <= _NEGATIONS:
            return (_written(a, i1, i2) or "(nothing)", _written(b, j1, j2) or "(nothing)")
    if len(changes) != 1 or changes[0][0] != "replace" or matcher.ratio() < 0.6:
        return None
    _, i1, i2, j1, j2 = changes[0]
    left, right = wa[i1:i2], wb[j1:j2]
    if max(len(left), len(right)) > 4 or set(left) & set(right):
        return None
    if (set(left) <= _POLARITY) != (set(right) <= _POLARITY):
        return None  # "always" against "to staging": an added word, not one swapped for another
    return _written(a, i1, i2), _written(b, j1, j2)


def _written(text: str, start: int, end: int) -> str:
    """Content words ``start`` to ``end`` of ``text`` as written (CJK characters joined up)."""
    words = [w for _, w in _content_words(text)[start:end]]
    return ("" if all(len(w) == 1 for w in words) else " ").join(words)


def conflict(a: str, b: str) -> str | None:
    """Why ``a`` and ``b`` are different rules (``"number 18pt / 28pt"``), or None if nothing says so."""
    da, db = details(a), details(b)
    for kind, left in da.kinds().items():
        right = db.kinds()[kind]
        match = _MATCH.get(kind, str.__eq__)
        if left and right and not any(match(x, y) for x in left for y in right):
            return f"{kind} {', '.join(sorted(left))} / {', '.join(sorted(right))}"
    pair = swapped(a, b)
    if pair is not None:
        return f"wording {pair[0]} / {pair[1]}"
    return None


def _same_number(a: str, b: str) -> bool:
    """``120chars`` and ``120`` are one number: a unit said on one side only is no difference."""
    value_a, unit_a = _NUMBER_AND_UNIT.fullmatch(a).groups()  # type: ignore[union-attr]
    value_b, unit_b = _NUMBER_AND_UNIT.fullmatch(b).groups()  # type: ignore[union-attr]
    return value_a == value_b and (unit_a == unit_b or not unit_a or not unit_b)


def _same_name(a: str, b: str) -> bool:
    """One name, or a word and a path that holds it as a part (``v1`` and ``api/v1/orders``)."""
    if a == b:
        return True
    if ("/" in a) == ("/" in b):
        return False
    path, word = (a, b) if "/" in a else (b, a)
    return word in re.split(r"[/:]", path)


def differ(a: str, b: str) -> bool:
    """Whether each statement names a detail the other does not (``{ruff}`` / ``{100chars}``).

    Not a conflict (nothing contradicts), but a sign of two rules about one thing ("Lint Python
    with ruff" / "Python lines stay under 100 characters"): such a pair must be closer than
    others to count as one rule.
    """
    da, db = details(a), details(b)

    def lacks(mine: Details, theirs: Details) -> bool:
        for kind, values in mine.kinds().items():
            other = theirs.kinds()[kind]
            match = _MATCH.get(kind, str.__eq__)
            if any(not any(match(x, y) for y in other) for x in values):
                return True
        return False

    return lacks(da, db) and lacks(db, da)


#: How two details of a kind are the same one (anything else: when they are equal).
_MATCH = {"number": _same_number, "name": _same_name}


def missing(base: str, other: str) -> frozenset[str]:
    """The details of ``other`` that ``base`` does not mention."""
    return details(other).all() - details(base).all()


def language(text: str) -> str:
    """``zh`` when CJK characters outnumber Latin letters' words, else ``en``."""
    cjk = len(re.findall(f"[{_CJK}]", text))
    latin = len(re.findall(r"[A-Za-z]+", text))
    return "zh" if cjk > latin else "en"


# --- corrections: a statement that replaces an earlier one --------------------------------------

# Words that mark a statement as replacing what was said before. "Instead of" alone does not: in
# rules it states a preference ("Use async/await instead of callbacks"); of the 5,064 real
# statements in tests/data, pairs it marked were preferences, never changes.
_CORRECTION = re.compile(
    r"\b(?:now|no longer|not any ?more|moved|switched|changed|migrated|replaced|correction|"
    r"actually|from now on|going forward|updated? to)\b"
    r"|改为|改成|改到|改用|不再|现在|换成|换到|换用|更正|调整为|变成|变为|以后",
    re.IGNORECASE)
# Words that add to what was said: "I also speak French" does not correct "I speak Portuguese".
_ADDITION = re.compile(r"\b(?:also|too|as well|in addition|additionally|besides)\b|也|还有|还|另外|此外",
                       re.IGNORECASE)
# What follows these is the value replaced: "no longer Java", "instead of the release branch",
# "not Tuesdays", "moved from yarn to pnpm", "不再用 Jenkins".
_REPLACED = re.compile(
    r"\b(?:no longer(?: use| using)?|not|instead of|rather than|(?:moved|switched|changed|migrated|went) "
    r"(?:away )?from|replacing|replaced)\s+([^,.;:!?]{1,60})"
    r"|(?:不再(?:用|使用|是)?|而不是|不是|取代|从)\s*([^，。；,.;]{1,20})",
    re.IGNORECASE)
# An update changes one value of a statement and keeps the rest: the rest must match this well.
_SAME_REST = 0.8
# A marked correction must still be about what the old statement was about: this share of its words.
_SAME_TOPIC = 0.75


_VALUE = re.compile(r"(?=.*\d)[\w.:+@-]+|[a-z0-9-]+(?:\.[a-z0-9-]+){2,}|[^@\s]+@[^@\s]+")


def _value_like(name: str) -> bool:
    """Whether a name is a value (a version, time, port, phone number, host or address), not a thing."""
    return "/" not in name and bool(_VALUE.fullmatch(name))


_ENVIRONMENT_ANY = re.compile(
    "|".join(rf"(?<![\w-]){re.escape(w)}s?(?![\w-])" if w.isascii() else re.escape(w)
             for w in sorted(_ENVIRONMENTS, key=len, reverse=True)), re.IGNORECASE)


# What comes before a number said as a value, a word or two ahead: "is 100", "to 5", "use 2", "every 3".
_VALUE_CUE = re.compile(
    r"(?:\b(?:is|are|was|were|be|to|at|of|by|every|under|over|below|above|max|maximum|min|minimum|limit|"
    r"uses?|using|with|within|than|about|around|only|least|most)|[=:<>≤≥~]|[是为到改用设])\s*(?:[^\s\d]+\s+)?$",
    re.IGNORECASE)


def _said_as_value(text: str, values: frozenset[str]) -> bool:
    """Whether each number of ``values`` stands in ``text`` as a value: with its unit, or after a cue."""
    folded = _fold(text)
    for value in values:
        digits = re.match(r"[\d.,]+", value)
        if digits is None:
            return False
        unit = value[digits.end():]
        found = False
        for match in re.finditer(rf"(?<![\d.]){re.escape(digits.group(0))}(?![\d])", folded):
            if unit or _VALUE_CUE.search(folded[max(0, match.start() - 30): match.start()]):
                found = True
                break
        if not found:
            return False
    return True


def _masked(text: str) -> str:
    """``text`` with its details (numbers, names, identifiers, weekdays, environments) blanked out."""
    folded = _fold(text)
    found = details(text)
    every = found.all()
    out = _IDENTIFIER.sub(lambda m: " " if m.group(0).lower().rstrip(".:") in every else m.group(0), folded)
    out = _NUMBER.sub(" ", out)
    out = _WEEKDAY.sub(" ", out)
    out = _ENVIRONMENT_ANY.sub(" ", out)
    words = sorted(found.names | found.examples, key=len, reverse=True)
    ascii_words = [w for w in words if w.isascii()]
    if ascii_words:
        pattern = "|".join(re.escape(w) for w in ascii_words)
        out = re.sub(rf"(?<![\w-])(?:{pattern})s?(?![\w-])", " ", out, flags=re.IGNORECASE)
    for word in words:
        if not word.isascii():
            out = out.replace(word, " ")
    return out


@functools.lru_cache(maxsize=16384)
def _rest(text: str) -> tuple[str, ...]:
    """The content words of a statement once its details and correction words are taken out."""
    return tuple(w for w in _content(_CORRECTION.sub(" ", _masked(text))) if w not in _NEGATIONS)


def _replaced(text: str) -> frozenset[str]:
    """What a statement says it replaces, as detail values and content words ("no longer Java": java)."""
    out: set[str] = set()
    for match in _REPLACED.finditer(_fold(text)):
        said = match.group(1) or match.group(2) or ""
        out |= details(said).all() | set(_content(said))
    return frozenset(out)


def _slots(found: Details) -> dict[str, frozenset[str]]:
    """The details by kind, a number that is part of a name ("10" of "10:00", "555" of "555-0202") left to the name."""
    kinds = found.kinds()
    kinds["number"] = frozenset(n for n in found.numbers if not any(
        re.search(rf"(?<![\d.]){re.escape(n)}(?![\d])", name) for name in found.names))
    return kinds


def _changed(new: Details, old: Details, *, extra: bool) -> tuple[str, frozenset[str], frozenset[str]] | None:
    """The one value that changed between two statements' details: (kind, new values, old values), or None.

    One value of one kind is gone from ``old`` and another stands in its place in ``new`` (a number
    that is part of a name counts with the name); nothing else differs, unless ``extra`` lets the
    new statement add details of its own (a marked correction often says more).
    """
    found: list[tuple[str, frozenset[str], frozenset[str]]] = []
    mine_all, theirs_all = _slots(new), _slots(old)
    for kind, mine in mine_all.items():
        theirs = theirs_all[kind]
        match = _MATCH.get(kind, str.__eq__)
        new_only = frozenset(x for x in mine if not any(match(x, y) for y in theirs))
        old_only = frozenset(y for y in theirs if not any(match(x, y) for x in mine))
        if old_only or (new_only and not extra):
            found.append((kind, new_only, old_only))
    if len(found) != 1:
        return None
    kind, new_only, old_only = found[0]
    if len(old_only) != 1 or not new_only or (len(new_only) != 1 and not extra):
        return None
    return kind, new_only, old_only


def update_of(new: str, old: str) -> str | None:
    """Why ``new`` replaces ``old`` (a correction, or the same statement with one value changed), or None.

    - "The API rate limit is 250 requests per minute" replaces "... 100 requests per minute": the
      same statement with one value (a number, name, weekday, environment, or one swapped word)
      changed, and nothing else.
    - A statement marked as a correction ("now", "no longer", "instead of", "moved to",
      "correction:", 改为, 不再, 现在...) replaces one about the same thing whose value it changes
      ("Standup moved to 10:00" / "Our standup is at 9:30") or names as replaced ("I switched to
      Rust, no longer Java" / "I mostly write Java at work").
    - A statement that adds ("also", "too", "as well", 也, 还) replaces nothing, and two rules
      that differ in two things ("PPT body text is 18pt" / "PPT titles are 28pt") are two rules.
    """
    if normalised_same(new, old):
        return None
    marked = bool(_CORRECTION.search(_fold(new)))
    if _ADDITION.search(_fold(new)) and not marked:
        return None
    dn, do = details(new), details(old)
    changed = _changed(dn, do, extra=marked)
    swap = None if changed is not None else swapped(new, old)
    if changed is not None or swap is not None:
        rest_new, rest_old = _rest(new), _rest(old)
        if changed is not None:
            kind, new_values, old_values = changed
            what = f"{kind} {', '.join(sorted(old_values))} -> {', '.join(sorted(new_values))}"
            # Unmarked, only a value changes a statement: a number said as a value ("is 100", "use
            # 2 spaces", not "note 5" or "sprint 12", which name things), a weekday, an environment,
            # or a name that holds a digit or a dot (a version, host, time or phone number). "Use
            # proper Tailwind configuration" and "Use proper session configuration" are two rules.
            valued = kind in ("weekday", "environment") or (
                kind == "number" and _said_as_value(new, new_values) and _said_as_value(old, old_values)) or (
                kind == "name" and all(map(_value_like, new_values | old_values)))
        else:
            assert swap is not None
            what, valued = f"wording {swap[1]} -> {swap[0]}", False
        same_rest = difflib.SequenceMatcher(None, rest_new, rest_old, autojunk=False).ratio() >= _SAME_REST
        if same_rest and (marked or valued):
            return f"the same statement with its {what}"
        if marked and rest_old and sum(1 for w in set(rest_old) if w in rest_new) / len(set(rest_old)) >= _SAME_TOPIC:
            return f"a correction: {what}"
    if not marked:
        return None
    replaced = _replaced(new)
    named = replaced & (do.all() | set(_content(old)))
    if not named:
        return None
    rest_new, rest_old = _rest(new), _rest(old)
    if not rest_old or set(rest_old) & set(rest_new):
        return f"a correction: it replaces {', '.join(sorted(named))}"
    return None


def may_update(text: str) -> bool:
    """Whether ``text`` could replace an earlier statement at all (:func:`update_of`), cheaply.

    It must be marked as a correction, or name a value (a number, weekday, environment, or a
    name holding a digit or a dot) that could have changed: most statements do neither, and the
    write gate then looks for nothing to supersede.
    """
    if _CORRECTION.search(_fold(text)):
        return True
    found = _slots(details(text))
    return bool(found["number"] or found["weekday"] or found["environment"]
                or any(map(_value_like, found["name"])))


def normalised_same(a: str, b: str) -> bool:
    """Whether two statements are the same once case, punctuation and spacing are set aside."""
    return re.sub(r"[\W_]+", "", _fold(a).casefold()) == re.sub(r"[\W_]+", "", _fold(b).casefold())


def one_value_apart(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one statement with one value or word changed, whatever it is.

    Broader than :func:`update_of` (which retires a memory): recall uses it only to rank the
    newer of two such live memories first ("... called Lighthouse" above "... called Harbor").
    """
    if _changed(details(a), details(b), extra=False) is None and swapped(a, b) is None:
        return False
    return difflib.SequenceMatcher(None, _rest(a), _rest(b), autojunk=False).ratio() >= _SAME_REST


# --- what a merge would lose --------------------------------------------------------------------


@functools.lru_cache(maxsize=16384)
def _said(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """A statement's content terms (stemmed words, Chinese pieces) and the kinds of tool it names or says."""
    kinds = {k for key in lexicon.mentions(text) for k in lexicon.kinds(key)} | set(lexicon.categories(text))
    return frozenset(words.document_terms(text).words), frozenset(kinds)


def narrows(kept: str, away: str) -> frozenset[str]:
    """The names ``kept`` adds to ``away`` (examples aside): what makes it say less than ``away`` does.

    "Implement proper authorization scopes for Google Services" says all "Implement proper
    authorization" says, but only for Google: merged into it, the general rule would be lost.
    """
    folded = _fold(kept)
    example = _EXAMPLE.search(folded)
    mine, theirs = details(folded[: example.start()] if example else folded), details(away)
    known = theirs.all()
    return frozenset(n for n in mine.names
                     if n not in known and not any(n in x or x in n for x in known))


def lost(kept: str, away: str) -> frozenset[str]:
    """The words of ``away`` that ``kept`` does not say: what merging ``away`` into ``kept`` would lose.

    Words are compared as :mod:`gitmem.words` reads them (stemmed, stop words aside), so "Run the
    tests before pushing" loses nothing in "Always run all tests before you push". Words naming a
    kind of tool count as said when ``kept`` names a tool of that kind ("the package manager" in
    "We use pnpm"); the details (numbers, names, weekdays, environments) must be there too.
    """
    mine, my_kinds = _said(kept)
    theirs, _ = _said(away)
    # Chinese is compared character by character: its bigrams straddle words ("码前" of 代码前).
    theirs = frozenset(c for w in theirs for c in (w if words.is_cjk(w) else (w,)))
    covered = {c for w in mine for c in (w if words.is_cjk(w) else (w,))} | set(words.document_terms(kept).chars)
    for start, end, kind in lexicon.category_spans(away):
        if kind in my_kinds:
            covered.update(words.document_terms(away[start:end]).words)
    named = lexicon.mentions(kept)
    for mention in lexicon.find(away):  # "JS" is said by "JavaScript"
        if mention.key in named:
            covered.update(words.document_terms(mention.text).words)
    gone = {w for w in theirs if w not in covered}
    gone |= {d for d in missing(kept, away) if not any(d in w or w in d for w in mine)}
    return frozenset(gone)
