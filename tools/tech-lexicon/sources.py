"""Read the maintained sources the lexicon is built from: linguist's languages and stack-analyser's rules.

Both are read from a git repository (bare or not) at a given revision with ``git show``, so the
build names the exact commit it took each file from. stack-analyser's rules are TypeScript
``register({...})`` calls; :func:`parse_register` reads the object literal with a small parser of
JavaScript literals (strings, regular expressions, arrays, objects, identifiers), enough for the
declarative rule files, which hold no code in the object but references to detector functions.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class Repo:
    """A git repository read at one revision."""

    path: Path
    rev: str = "HEAD"

    def _git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(self.path), *args], check=True, capture_output=True, text=True
        )
        return done.stdout

    def commit(self) -> str:
        """The full hash of the revision read."""
        return self._git("rev-parse", f"{self.rev}^{{commit}}").strip()

    def show(self, path: str) -> str:
        """One file's text at the revision."""
        return self._git("show", f"{self.rev}:{path}")

    def files(self, under: str) -> list[str]:
        """The paths of the files under a folder at the revision."""
        return self._git("ls-tree", "-r", "--name-only", self.rev, under).split()


def linguist_languages(repo: Repo) -> tuple[dict[str, Any], list[str]]:
    """Linguist's languages (name -> fields) and its list of popular language names."""
    languages = yaml.safe_load(repo.show("lib/linguist/languages.yml"))
    popular = yaml.safe_load(repo.show("lib/linguist/popular.yml"))
    return languages, popular


# -- stack-analyser -----------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
    | (?P<string>'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|`(?:\\.|[^`\\])*`)
    | (?P<number>-?\d+(?:\.\d+)?)
    | (?P<ident>[A-Za-z_$][\w$]*)
    | (?P<punct>[{}\[\]:,()])
    """,
    re.VERBOSE | re.DOTALL,
)
# A regular expression literal: it may only start where a value starts (after : [ , or ().
_REGEX = re.compile(r"/((?:\\.|\[(?:\\.|[^\]\\])*\]|[^/\\\n\[])+)/([a-z]*)")
_ESCAPES = {"n": "\n", "t": "\t", "'": "'", '"': '"', "\\": "\\", "`": "`"}


class ParseError(ValueError):
    """A rule file whose object literal this parser cannot read."""


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    # Lazily: the parser stops at the end of the object, before any code that follows it.
    last = ("punct", "(")
    pos = 0
    while pos < len(text):
        if text[pos] == "/" and last[1] in ":[,(" and not text.startswith(("//", "/*"), pos):
            regex = _REGEX.match(text, pos)
            if regex:
                last = ("regex", regex.group(1))
                yield last
                pos = regex.end()
                continue
        match = _TOKEN.match(text, pos)
        if not match:
            raise ParseError(f"cannot read {text[pos:pos + 30]!r}")
        kind = match.lastgroup or ""
        if kind != "space":
            last = (kind, match.group())
            yield last
        pos = match.end()


def _unquote(token: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), token[1:-1])


class _Parser:
    def __init__(self, tokens: Iterator[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.ahead: tuple[str, str] | None = None

    def _next(self) -> tuple[str, str]:
        if self.ahead is not None:
            token, self.ahead = self.ahead, None
            return token
        token = next(self.tokens, None)
        if token is None:
            raise ParseError("unexpected end of the rule")
        return token

    def _expect(self, text: str) -> None:
        kind, value = self._next()
        if value != text:
            raise ParseError(f"expected {text!r}, found {value!r}")

    def _peek(self) -> str:
        if self.ahead is None:
            self.ahead = self._next()
        return self.ahead[1]

    def value(self) -> Any:
        kind, text = self._next()
        if text == "{":
            obj: dict[str, Any] = {}
            while self._peek() != "}":
                key_kind, key = self._next()
                obj[_unquote(key) if key_kind == "string" else key] = (self._expect(":"), self.value())[1]
                if self._peek() == ",":
                    self._next()
            self._next()
            return obj
        if text == "[":
            items: list[Any] = []
            while self._peek() != "]":
                items.append(self.value())
                if self._peek() == ",":
                    self._next()
            self._next()
            return items
        if kind == "string":
            return _unquote(text)
        if kind == "regex":
            return {"regex": text}
        if kind == "number":
            return float(text)
        if kind == "ident":
            return {"true": True, "false": False, "null": None}.get(text, {"ident": text})
        raise ParseError(f"unexpected {text!r}")


def parse_register(source: str) -> dict[str, Any]:
    """The object literal passed to ``register(...)`` in one stack-analyser rule file."""
    start = source.find("register({")
    if start < 0:
        raise ParseError("no register({ ... }) call")
    parser = _Parser(_tokens(source[start + len("register("):]))
    rule = parser.value()
    if not isinstance(rule, dict) or "tech" not in rule:
        raise ParseError("register() was not given a rule object")
    return rule


def stack_rules(repo: Repo) -> list[tuple[str, dict[str, Any]]]:
    """Every rule stack-analyser registers, with the path of the file it came from."""
    rules = []
    for path in repo.files("src/rules"):
        if not path.endswith(".ts") or path.endswith((".test.ts", "/index.ts")) and "/spec/" not in path:
            continue
        text = repo.show(path)
        if "register({" not in text:
            continue
        rules.append((path, parse_register(text)))
    return rules
