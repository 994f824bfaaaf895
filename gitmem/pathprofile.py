"""What a file path is, and whether a memory that names some technologies applies to it.

``profile(path, head)`` reads a path as gitmem's lexicon sees it: the languages of its extension
or name (linguist's, a ``.ts`` file also taking JavaScript's rules, ``.tsx`` React's), the
technologies of well-known files (``package.json``, ``Cargo.toml``, ``Dockerfile``,
``.github/workflows/*.yml``...), of strong folder signs (``app/Http/Controllers/*.php`` is
Laravel's) and, when the caller hands in the file's first kilobytes, of what it imports.

``applies(named, profile)`` answers for a memory naming the technologies ``named``:

- naming no language, tool or framework bound to an ecosystem, it is team-wide: it applies
  (databases, Docker, git and CI are used from every language); naming those of three ecosystems
  or more, it speaks of languages in general, and applies too;
- naming languages, it applies where the file takes one of them;
- naming tools of an ecosystem (pytest, eslint, cargo), where the file is in one of theirs;
- naming frameworks or libraries (Django, React, Tailwind), where the file shows a sign of one:
  without one, a framework's rule is another framework's.

A technology implied by another named one is the other's (a rule naming Next.js and React is a
Next.js rule). ``why_not`` says which of these failed, for tests and debugging.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from gitmem import fileheads, lexicon


@dataclass(frozen=True)
class Profile:
    """What a path is: its languages, its ecosystems and the technologies it shows signs of."""

    path: str
    languages: frozenset[str] = frozenset()
    ecosystems: frozenset[str] = frozenset()
    techs: frozenset[str] = frozenset()
    evidence: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def __or__(self, other: Profile) -> Profile:
        """One profile for several paths (a file and its project's manifest)."""
        return Profile(
            f"{self.path} + {other.path}", self.languages | other.languages, self.ecosystems | other.ecosystems,
            self.techs | other.techs, self.evidence + other.evidence,
        )

    def describe(self) -> str:
        """The profile in a few words, for messages ("src/app.ts (TypeScript, JavaScript)")."""
        shown = sorted(self.languages) or sorted(self.techs) or sorted(self.ecosystems)
        names = ", ".join(lexicon.name(k) if lexicon.known(k) else k for k in shown)
        return f"{self.path} ({names or 'nothing known'})"


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    # A pattern without a folder matches the name; with one, the path's end at a folder boundary.
    return re.compile("(?:^|/)" + "".join(out) + "$")


@functools.cache
def _patterns() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    return tuple((_glob_regex(p), keys) for p, keys in lexicon.data().patterns.items())


@functools.cache
def _ecosystem_patterns() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    return tuple((_glob_regex(p), ecos) for p, ecos in lexicon.data().ecosystem_files.items())


def _extension_techs(name: str) -> tuple[str, ...]:
    # The longest extension known wins: "view.blade.php" is Blade's before it is PHP's.
    extensions = lexicon.data().extensions
    low = name.lower()
    dot = low.find(".", 1)
    while dot != -1:
        if low[dot:] in extensions:
            return extensions[low[dot:]]
        dot = low.find(".", dot + 1)
    return ()


def _lookup(table: dict[str, str], name: str) -> str | None:
    # A package or its longest known prefix: "org.springframework.boot.web", "github.com/gin-gonic/gin/render".
    while name:
        if name in table:
            return table[name]
        cut = max(name.rfind("."), name.rfind("/"), name.rfind("\\"))
        if cut <= 0:
            return None
        name = name[:cut]
        if name + "/" in table:
            return table[name + "/"]
    return None


def _from_head(basename: str, ecosystems: frozenset[str], head: str) -> list[tuple[str, str]]:
    lex = lexicon.data()
    found: list[tuple[str, str]] = []
    for ecosystem in sorted(ecosystems):
        reader = fileheads.SOURCE_READERS.get(ecosystem)
        table = lex.imports.get(ecosystem, {})
        if reader is None:
            continue
        for package in reader(head):
            key = _lookup(table, package) or _lookup(table, package.replace("_", "-"))
            if key:
                found.append((key, f"imports {package}"))
    for ecosystem, package in fileheads.manifest_packages(basename, head):
        if ecosystem == "tool":
            key = package if lexicon.known(package) else None
        else:
            key = _lookup(lex.imports.get(ecosystem, {}), package)
        if key:
            found.append((key, f"depends on {package}"))
    if "web" in ecosystems and fileheads.uses_tailwind(head):
        found.append(("tailwind", "imports tailwindcss"))
    if re.search(r"<script[^>]*\blang=[\"']ts[\"']", head):
        found.append(("typescript", 'script lang="ts"'))
    return found


@functools.lru_cache(maxsize=8192)
def profile(path: str, head: str | None = None) -> Profile:
    """What a path is; ``head``, the file's first few kilobytes when the caller can read them, adds its imports."""
    lex = lexicon.data()
    clean = posixpath.normpath(path.replace("\\", "/")) if path else ""
    clean = "" if clean == "." else clean.removeprefix("/")
    parts = clean.split("/") if clean else []
    basename = parts[-1] if parts else ""
    evidence: list[tuple[str, str]] = []
    # As in linguist, a known file name wins over its extension (go.mod is not XML), but keeps
    # the language its extension gives (Package.swift is Swift, hardhat.config.ts TypeScript).
    of_type = list(lex.filenames.get(basename, ()))
    by_extension = _extension_techs(basename)
    of_type += [k for k in by_extension if not of_type or lexicon.scope(k) == "language"]
    evidence += [(k, "file type") for k in of_type]
    for part in parts[:-1]:
        evidence += [(k, f"folder {part}") for k in lex.filenames.get(part, ())]
    for regex, keys in _patterns():
        if regex.search(clean):
            evidence += [(k, "path") for k in keys]
    ecosystems = {e for regex, ecos in _ecosystem_patterns() if regex.search(clean) for e in ecos}
    type_closure = lexicon.implied(of_type)
    languages = frozenset(k for k in type_closure if lexicon.scope(k) == "language")
    if head:
        evidence += _from_head(basename, frozenset(ecosystems | _ecosystems_of(languages | set(of_type))), head)
        languages |= frozenset(k for k, why in evidence if why == 'script lang="ts"')
        languages = frozenset(k for k in lexicon.implied(languages) if lexicon.scope(k) == "language")
    # The file's ecosystems are its languages'; a manifest or a tool's file (no language) gives its techs'.
    ecosystems |= _ecosystems_of(languages) or _ecosystems_of(set(of_type))
    techs = frozenset(k for k in lexicon.implied(k for k, _ in evidence) if lexicon.scope(k) != "language")
    return Profile(path, languages, frozenset(ecosystems), techs, tuple(dict.fromkeys(evidence)))


def _ecosystems_of(keys: Iterable[str]) -> set[str]:
    return {e for k in keys for e in lexicon.ecosystems(k)}


def profiles(paths: Iterable[str]) -> list[Profile]:
    """The profiles of several paths (a ``context`` call names many)."""
    return [profile(p) for p in paths]


def _names(keys: Iterable[str]) -> str:
    return ", ".join(sorted(lexicon.name(k) for k in keys))


def why_not(named: Iterable[str], where: Profile) -> str | None:
    """Why a memory naming these technologies does not apply to the profile; None when it does."""
    keys = {k for k in named if lexicon.known(k)}
    # A rule naming Next.js and React is a Next.js rule: what another named key implies is its.
    keys -= {i for k in keys for i in lexicon.implied([k]) if i != k}
    bound = {e for k in keys if lexicon.scope(k) != "global" for e in lexicon.ecosystems(k)}
    if len(bound) >= 3:
        # "Server-side languages (Go, Rust, Java, Python)": a statement about languages in general.
        return None
    by_scope: dict[str, set[str]] = {}
    for key in keys:
        by_scope.setdefault(lexicon.scope(key), set()).add(key)
    languages = by_scope.get("language", set())
    if languages and not languages & where.languages:
        return f"it names {_names(languages)}, and {where.describe()} is not written in it"
    tools = by_scope.get("tool", set())
    if tools and not any(k in where.techs or lexicon.ecosystems(k) & where.ecosystems for k in tools):
        ecosystems = sorted({e for k in tools for e in lexicon.ecosystems(k)})
        return f"it names {_names(tools)}, tools of {', '.join(ecosystems)}, and {where.describe()} is not"
    libraries = by_scope.get("library", set())
    if libraries and not libraries & where.techs:
        return f"it names {_names(libraries)}, and {where.describe()} shows no sign of it"
    return None


def applies(named: Iterable[str], where: Profile) -> bool:
    """Whether a memory naming these technologies applies to the profile (see the module)."""
    return why_not(named, where) is None


def applies_to_any(named: Iterable[str], where: Iterable[Profile]) -> bool:
    """Whether it applies to one of several files' profiles (``context`` for many paths)."""
    keys = frozenset(named)
    return any(applies(keys, p) for p in where)
