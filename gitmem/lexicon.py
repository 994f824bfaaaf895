"""The technologies a text names, and the categories of tools it asks about.

gitmem's lexicon (``gitmem/data/tech.json``, built by ``tools/tech-lexicon/build.py`` from GitHub
linguist, specfy/stack-analyser and a curated overlay) lists a few hundred technologies: each with
a key (``pnpm``, ``django``, ``go``), its kinds (``package_manager``, ``framework``, ``language``...),
its ecosystems (``javascript``, ``python``...), its scope (``language``; ``tool``, bound to its
ecosystems; ``library``, bound to a sign of it in the file; ``global``, used from any language),
what it implies (Next.js implies React) and the names people write for it. Categories carry the
words people use for them, in English and Chinese ("package manager", "包管理器").

Names are matched at word boundaries, without regard to case, except the everyday words that are
also names: "Go", "Swift", "Express", "R", "C" and the like count only in their exact case and
next to a word that shows the technology is meant ("in Go", "Go modules", "C/C++"), so "Go to the
settings page" and "express your intent" name nothing.

Pure: the data file is read once, lazily, with importlib.resources; nothing else touches I/O.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

SCOPES = ("language", "tool", "library", "global")
_VERSION = re.compile(r"\s*v?\d")


@dataclass(frozen=True)
class Tech:
    """One technology of the lexicon."""

    key: str
    name: str
    kinds: tuple[str, ...]
    scope: str
    ecosystems: frozenset[str]
    implies: frozenset[str]


@dataclass(frozen=True)
class Mention:
    """Where a text names a technology: the span, the text found and the technology's key."""

    start: int
    end: int
    text: str
    key: str


@dataclass(frozen=True)
class _Alias:
    key: str
    text: str
    case: bool
    before: tuple[str, ...]
    after: tuple[str, ...]
    not_after: tuple[str, ...]
    version: bool

    def accepts(self, text: str, start: int, end: int) -> bool:
        if self.case and text[start:end] != self.text:
            return False
        rest = text[end:]
        if self.not_after and _starts_with_word(rest, self.not_after):
            return False
        if not (self.before or self.after or self.version):
            return True
        return bool(
            (self.version and _VERSION.match(rest))
            or (self.after and _starts_with_word(rest, self.after))
            or (self.before and _ends_with_word(text[:start], self.before))
        )


def _starts_with_word(rest: str, words: tuple[str, ...]) -> bool:
    # "Go code", "C/C++", "Go语言": the next word, or the next sign when the listed word is one.
    rest = rest.lstrip()
    low = rest.lower()
    for word in words:
        if low.startswith(word.lower()):
            following = rest[len(word):len(word) + 1]
            if not (word[-1].isascii() and word[-1].isalnum()) or not following or not _is_word(following):
                return True
    return False


def _ends_with_word(before: str, words: tuple[str, ...]) -> bool:
    before = before.rstrip()
    low = before.lower()
    for word in words:
        if low.endswith(word.lower()):
            preceding = before[len(before) - len(word) - 1:len(before) - len(word)]
            if not (word[0].isascii() and word[0].isalnum()) or not preceding or not _is_word(preceding):
                return True
    return False


def _is_word(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


class Lexicon:
    """The lexicon's data, read from the JSON the build writes, with lookups built once."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.sources: list[dict[str, str]] = list(data["sources"])
        self.techs: dict[str, Tech] = {
            key: Tech(key, t["name"], tuple(t["kinds"]), t["scope"], frozenset(t["ecosystems"]),
                      frozenset(t["implies"]))
            for key, t in data["techs"].items()
        }
        self.category_labels: dict[str, str] = {k: v["label"] for k, v in data["categories"].items()}
        self.category_words: dict[str, tuple[str, ...]] = {
            k: tuple(v["words"]) for k, v in data["categories"].items()}
        self.ecosystem_names: dict[str, str] = dict(data["ecosystems"])
        self.extensions: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in data["extensions"].items()}
        self.filenames: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in data["filenames"].items()}
        self.patterns: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in data["patterns"].items()}
        self.ecosystem_files: dict[str, tuple[str, ...]] = {
            k: tuple(v) for k, v in data["ecosystem_files"].items()}
        self.imports: dict[str, dict[str, str]] = {k: dict(v) for k, v in data["imports"].items()}
        self.aliases: dict[str, list[_Alias]] = {}
        for key, t in data["techs"].items():
            for raw in t["aliases"]:
                spec = {"text": raw} if isinstance(raw, str) else raw
                alias = _Alias(key, spec["text"], bool(spec.get("case")), tuple(spec.get("before", ())),
                               tuple(spec.get("after", ())), tuple(spec.get("not_after", ())),
                               bool(spec.get("version")))
                self.aliases.setdefault(alias.text.lower(), []).append(alias)
        self.members: dict[str, frozenset[str]] = {
            category: frozenset(k for k, t in self.techs.items() if category in t.kinds)
            for category in {kind for t in self.techs.values() for kind in t.kinds} | set(self.category_labels)
        }


@functools.cache
def data() -> Lexicon:
    """The lexicon, read from the package's data file on first use."""
    text = resources.files("gitmem.data").joinpath("tech.json").read_text(encoding="utf-8")
    return Lexicon(json.loads(text))


_TOKEN = re.compile(r"[a-z0-9_]+|[^a-z0-9_\s]")
# A file name in prose: a stem of path characters, a dot and an extension ("src/lib.rs", "404.astro").
_FILE_NAME = re.compile(r"(?<![\w.@])[\w./-]*\w(\.[A-Za-z0-9+]{1,10})(?![\w.])")


def _head(word: str) -> str:
    match = _TOKEN.match(word)
    return match.group() if match else word


class _Scanner:
    """Finds known phrases in a text: at each word's start, the phrases that begin with that word.

    An index by first word, with the longest phrase tried first, costs a dictionary look-up a word
    and nothing to build, where one regular expression of two thousand names took 100 ms to compile.
    """

    def __init__(self, phrases: Iterable[str]) -> None:
        index: dict[str, list[str]] = {}
        for phrase in {p.lower() for p in phrases}:
            index.setdefault(_head(phrase), []).append(phrase)
        self.index = {head: sorted(group, key=len, reverse=True) for head, group in index.items()}

    def scan(self, text: str) -> Iterator[tuple[int, int, str]]:
        """Yield (start, end, phrase) for each place a phrase is found, longest first, left to right."""
        lower = text.lower()
        if len(lower) != len(text):
            # A few letters grow when lowered (İ); keep offsets aligned with the text.
            lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
        end = 0
        for token in _TOKEN.finditer(lower):
            start = token.start()
            # A word token starts after a non-word character by construction; a sign ("." of
            # ".await", "$" of "$state") begins its own name even right after a word ("df.loc").
            if start < end:
                continue
            for phrase in self.index.get(token.group(), ()):
                stop = start + len(phrase)
                if lower.startswith(phrase, start) and not (
                        _is_word(phrase[-1]) and stop < len(lower) and _is_word(lower[stop])):
                    yield start, stop, phrase
                    end = stop
                    break


@functools.cache
def _alias_scanner() -> _Scanner:
    return _Scanner(data().aliases)


@functools.cache
def _category_scanner() -> _Scanner:
    return _Scanner(_category_of_word())


@functools.cache
def _category_of_word() -> dict[str, str]:
    return {w.lower(): c for c, ws in data().category_words.items() for w in ws}


def find(text: str) -> list[Mention]:
    """Every place the text names a technology, left to right (for reading and debugging).

    Names come from the aliases; a file name ("lib.rs", "user_routes.py") names its language.
    """
    lex = data()
    found: list[Mention] = []
    for start, end, phrase in _alias_scanner().scan(text):
        accepted = next((a for a in lex.aliases[phrase] if a.accepts(text, start, end)), None)
        if accepted is not None:
            found.append(Mention(start, end, text[start:end], accepted.key))
    if "." in text:
        taken = [(m.start, m.end) for m in found]
        for match in _FILE_NAME.finditer(text):
            start, end = match.span()
            if any(s < end and start < e for s, e in taken):
                continue
            for key in lex.extensions.get(match.group(1).lower(), ()):
                found.append(Mention(start, end, match.group(), key))
        found.sort(key=lambda m: m.start)
    return found


@functools.lru_cache(maxsize=65536)
def mentions(text: str) -> frozenset[str]:
    """The keys of the technologies a text names ("We use pnpm, not npm" -> {"pnpm", "npm"})."""
    return frozenset(m.key for m in find(text))


_NAME_WORDS = re.compile(r"[^\W_]+(?:[+#]+|\.js\b)?", re.UNICODE)


@functools.lru_cache(maxsize=16384)
def mentions_in_name(name: str) -> frozenset[str]:
    """The technologies a name stands for: a tag ("go"), a file name ("go.mdc", "python-django-best-practices").

    Names carry no sentence around them, so their words are matched whole and without regard to
    case; a name that needs its case or a neighbouring word in prose ("Go", "R", "Express") counts
    here only as the name's first word, where a file or tag names its subject.
    """
    aliases = data().aliases
    words = [w.lower() for w in _NAME_WORDS.findall(name)]
    found = set()
    i = 0
    while i < len(words):
        for size in (3, 2, 1):
            phrase_words = words[i:i + size]
            if len(phrase_words) < size:
                continue
            candidates = [aliases.get(" ".join(phrase_words)), aliases.get("-".join(phrase_words))]
            match = next((c for c in candidates if c), None)
            if match and (i == 0 or any(not (a.before or a.after or a.version) for a in match)):
                found.add(match[0].key)
                i += size
                break
        else:
            i += 1
    return frozenset(found)


def category_spans(text: str) -> list[tuple[int, int, str]]:
    """Where a text names a category of tools: (start, end, category) for each place, left to right."""
    words = _category_of_word()
    return [(start, end, words[phrase]) for start, end, phrase in _category_scanner().scan(text)]


@functools.lru_cache(maxsize=4096)
def categories(text: str) -> frozenset[str]:
    """The categories of tools a text asks about by their words ("which package manager?", "用什么包管理器")."""
    words = _category_of_word()
    return frozenset(words[phrase] for _, _, phrase in _category_scanner().scan(text))


def tech(key: str) -> Tech:
    """The technology of a key; KeyError for a key the lexicon does not know."""
    return data().techs[key]


def known(key: str) -> bool:
    """Whether the lexicon knows a key."""
    return key in data().techs


def name(key: str) -> str:
    """How a technology is written ("nextjs" -> "Next.js")."""
    return tech(key).name


def kind(key: str) -> str:
    """A technology's main kind ("pnpm" -> "package_manager", "django" -> "framework")."""
    return tech(key).kinds[0]


def kinds(key: str) -> frozenset[str]:
    """All the kinds of a technology (Ruff lints and formats: {"linter", "formatter"})."""
    return frozenset(tech(key).kinds)


def scope(key: str) -> str:
    """Where a memory naming the technology applies: language, tool, library or global (see the module)."""
    return tech(key).scope


def ecosystems(key: str) -> frozenset[str]:
    """The ecosystems a technology belongs to ("django" -> {"python"}; empty for cross-language ones)."""
    return tech(key).ecosystems


def members(category: str) -> frozenset[str]:
    """The technologies of a category ("package_manager" -> {"npm", "pnpm", "yarn", "uv", ...})."""
    return data().members.get(category, frozenset())


def category_label(category: str) -> str:
    """A category's name for people ("package_manager" -> "package manager")."""
    return data().category_labels.get(category, category.replace("_", " "))


def implied(keys: Iterable[str]) -> frozenset[str]:
    """The keys with all they imply, transitively (Next.js brings React; SvelteKit, Svelte)."""
    techs = data().techs
    out = set()
    todo = [k for k in keys if k in techs]
    while todo:
        key = todo.pop()
        if key not in out:
            out.add(key)
            todo.extend(techs[key].implies)
    return frozenset(out)
