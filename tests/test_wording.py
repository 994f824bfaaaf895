"""Counted nouns and articles: one place for "1 comment" and "an admin key", and none made by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gitmem.wording import article, inflected, plural

from .conftest import Run

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("count", "noun", "said"), [
    (0, "comment", "0 comments"), (1, "comment", "1 comment"), (2, "comment", "2 comments"),
    (1, "memory", "1 memory"), (3, "memory", "3 memories"), (2, "memory file", "2 memory files"),
    (2, "match", "2 matches"), (2, "day", "2 days"), (2, "open review", "2 open reviews"),
    (1, "okf item", "1 okf item"), (4, "okf item", "4 okf items"),
])
def test_plural(count: int, noun: str, said: str) -> None:
    assert plural(count, noun) == said
    assert inflected(count, noun) == said.split(" ", 1)[1]


@pytest.mark.parametrize(("word", "said"), [
    ("admin", "an admin"), ("writer", "a writer"), ("reader", "a reader"), ("reviewer", "a reviewer"),
    ("insight", "an insight"), ("idea", "an idea"), ("decision", "a decision"),
    ("AWS Access Key", "an AWS Access Key"), ("JSON Web Token", "a JSON Web Token"),
    ("OpenAI key", "an OpenAI key"), ("SSH key", "an SSH key"), ("user", "a user"), ("hour", "an hour"),
])
def test_article(word: str, said: str) -> None:
    assert article(word) == said


# Counts and articles made by hand: "commit(s)", "'s' if n != 1", "a {role}". Each belongs to
# gitmem.wording (``plural``, ``inflected``, ``article``; the same-named filters in templates).
HAND_MADE = re.compile(r"(?<![\w.])(?!(?:len|str|http)\()[a-z]+\(s\)|['\"]s['\"] if |else ['\"]s['\"]"
                       r"|[\"' ]an? (?:\*\*)?\{(?!\{)")


def test_no_count_or_article_is_made_by_hand() -> None:
    found = []
    for top in ("gitmem", "bots", "templates"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in (".py", ".html", ".j2") or "vendor" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if HAND_MADE.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "use gitmem.wording:\n" + "\n".join(found)


def test_one_comment_is_one_comment(gitmem: Run) -> None:
    memory_id = json.loads(gitmem("remember", "Deploys happen on Tuesdays only", "--json").stdout)["memory"]["id"]
    proposed = json.loads(gitmem("feedback", memory_id, "amend", "Deploys happen on Tuesdays and Wednesdays",
                                 "--json").stdout)
    number = str(proposed["review"])
    assert gitmem("review", "comment", number, "Wednesdays since March").stdout.strip() == \
        f"review #{number}: 1 comment"
    assert gitmem("review", "comment", number, "and Thursdays?").stdout.strip() == f"review #{number}: 2 comments"
