"""Reading YAML and JSON someone else wrote: aliases, anchors and deep nesting refused before expansion."""

from __future__ import annotations

import json

import pytest
import yaml

from gitmem import safeparse
from gitmem.safeparse import MAX_DEPTH, Unsafe


def bomb(levels: int) -> str:
    """The alias bomb of issue 23: ``a: &a [x ×9]``, each next level nine aliases of the one before."""
    names = "abcdefghijklmnop"[:levels]
    lines = ["a: &a [" + ", ".join(["x"] * 9) + "]"]
    for before, name in zip(names, names[1:], strict=False):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{before}"] * 9) + "]")
    lines.append(f"tags: *{names[-1]}")
    return "\n".join(lines) + "\n"


def test_the_level_i_bomb_is_refused_naming_the_alias() -> None:
    text = bomb(9)
    assert len(text) < 400
    with pytest.raises(Unsafe, match=r"YAML anchor &a \(line 1\)"):
        safeparse.load_yaml(text)


@pytest.mark.parametrize("text", [
    "tags: [&t x, *t]\n",  # an anchor on a scalar, then its alias
    "base: &b {type: fact}\nother: *b\n",
    "a: &a\n  - x\n",
    "title: !!str &t x\n",
])
def test_any_anchor_or_alias_is_refused(text: str) -> None:
    with pytest.raises(Unsafe, match="no anchors or aliases"):
        safeparse.load_yaml(text)


@pytest.mark.parametrize("text", [
    "title: R&D budget * 2\npaths: ['src/**/*.py']\n",  # '&' and '*' inside values are plain text
    "title: '&a is not an anchor'\n",
])
def test_ampersands_and_stars_in_values_are_text(text: str) -> None:
    assert safeparse.load_yaml(text) == yaml.safe_load(text)


@pytest.mark.parametrize("text", [
    "tags: " + "[" * 3000 + "]" * 3000 + "\n",  # libyaml stops at 1,000 itself (a YAMLError)
    "tags: " + "[" * 900 + "]" * 900 + "\n",  # within libyaml's limit: walking it would recurse
    "tags:\n" + "".join("  " * i + "- \n" for i in range(1, 40)),  # block nesting, no brackets
    "x: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n",
    "x: &deep " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n",
])
def test_deep_nesting_is_refused(text: str) -> None:
    with pytest.raises((Unsafe, yaml.YAMLError)) as raised:
        safeparse.load_yaml(text)
    assert "nests" in str(raised.value) or "nesting depth" in str(raised.value) or "anchor" in str(raised.value)


def test_nesting_up_to_the_limit_is_read() -> None:
    inner = MAX_DEPTH - 1  # the frontmatter's own mapping is the first level
    text = "x: " + "[" * inner + "]" * inner + "\n"
    assert safeparse.load_yaml(text) == yaml.safe_load(text)
    with pytest.raises(Unsafe):
        safeparse.load_yaml("x: " + "[" * (inner + 1) + "]" * (inner + 1) + "\n")
    with pytest.raises(Unsafe):  # the events' count agrees with the walk's
        safeparse.load_yaml("x: &a " + "[" * (inner + 1) + "]" * (inner + 1) + "\n")


def test_json_nesting_is_refused_not_a_recursion_error() -> None:
    for depth in (3000, 900, MAX_DEPTH + 1):
        with pytest.raises(Unsafe, match=f"more than {MAX_DEPTH} deep"):
            safeparse.load_json("[" * depth + "]" * depth)
    shallow = {"entries": {"fact/x": {"weight": 1.5, "tags": [["a"]]}}}
    assert safeparse.load_json(json.dumps(shallow)) == shallow
    with pytest.raises(json.JSONDecodeError):
        safeparse.load_json("{")
