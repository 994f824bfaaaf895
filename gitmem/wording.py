"""Counted nouns and indefinite articles in the messages gitmem writes: "1 comment", "an admin key".

Pure: no I/O. Every message that counts something or puts "a" before a word it was given
(a role, a memory type, a kind of secret) goes through here, so "1 comments" and "a admin key"
are fixed in one place. The CLI, the web app, templates (the ``plural`` and ``article``
filters), MCP and the Slack bot (through the facade) use the same two functions.
"""

from __future__ import annotations

# Plurals English does not make by adding "s" to the words gitmem counts.
_IRREGULAR = {
    "memory": "memories", "entry": "entries", "reply": "replies", "query": "queries", "copy": "copies",
    "person": "people", "child": "children",
}
# Letters whose names start with a vowel sound, for an initialism read letter by letter ("an SSH key").
_VOWEL_NAMED = frozenset("AEFHILMNORSX")
# Words whose spelling and first sound disagree.
_AN_ANYWAY = ("hour", "honest", "honour", "heir")
_A_ANYWAY = ("one", "once", "uni", "use", "usu", "user", "euro", "ubiq", "uti")


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun``, the noun in its plural unless the count is one: ``1 comment``, ``2 comments``.

    Args:
        count: How many.
        noun: The singular ("comment", "memory", "memory file": the last word is inflected).
        many: The plural, when it is not the noun's last word plus "s" nor a known irregular one.

    Returns:
        The count and the noun, e.g. ``"3 memory files"``.
    """
    return f"{count} {inflected(count, noun, many)}"


def inflected(count: int, noun: str, many: str | None = None) -> str:
    """``noun`` as it goes with ``count``, without the count: ``unknown fields: a, b``."""
    return noun if count == 1 else many or plural_of(noun)


def plural_of(noun: str) -> str:
    """The plural of ``noun`` (its last word inflected): ``memory file`` -> ``memory files``."""
    head, _, last = noun.rpartition(" ")
    lower = last.lower()
    if lower in _IRREGULAR:
        word = _IRREGULAR[lower]
    elif lower.endswith(("s", "x", "z", "ch", "sh")):
        word = last + "es"
    elif lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u", ""):
        word = last[:-1] + "ies"
    else:
        word = last + "s"
    return f"{head} {word}" if head else word


def article(word: str) -> str:
    """``word`` with "a" or "an" before it, by how it sounds: ``an admin``, ``a writer``, ``an AWS key``."""
    text = word.strip()
    return f"{a_or_an(text)} {text}" if text else text


def a_or_an(word: str) -> str:
    """"a" or "an" for ``word``; an initialism ("AWS", "SSH", "JWT") by the name of its first letter."""
    text = word.strip()
    if not text:
        return "a"
    first = text.split()[0]
    letters = "".join(c for c in first if c.isalpha())
    if len(letters) >= 2 and letters[:2].isupper():
        return "an" if letters[0] in _VOWEL_NAMED else "a"
    lower = first.lower()
    if lower.startswith(_AN_ANYWAY):
        return "an"
    if lower.startswith(_A_ANYWAY):
        return "a"
    return "an" if lower[:1] in ("a", "e", "i", "o", "u") else "a"
