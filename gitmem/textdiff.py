"""Word-level differences between two memory texts, and the words a merge loses; no I/O.

A text is cut into tokens: a Latin (or other alphabetic) word, a run of digits and letters, one
Chinese, Japanese or Korean character each (those scripts do not put spaces between words, so a
character is the smallest unit a reader can check), a run of whitespace, or one other character.
:func:`word_diff` aligns the tokens of two texts; :func:`lost_words` says which words of a text
appear nowhere in another, which is what a merge drops.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass

from .words import is_stop, stem

# CJK ideographs (with extensions A and the compatibility block), kana, hangul syllables, and
# the full-width forms (Chinese punctuation such as '，' and '。').
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3000-\u303f"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|\s+|.", re.DOTALL)


@dataclass(frozen=True)
class Piece:
    """A run of text in a diff: ``same``, ``del`` (only in the old text) or ``ins`` (only in the new)."""

    op: str
    text: str

    def to_dict(self) -> dict[str, str]:
        """A JSON-ready dict."""
        return {"op": self.op, "text": self.text}


def tokens(text: str) -> list[str]:
    """The text cut into words, single CJK characters, whitespace runs and other single characters."""
    return _TOKEN.findall(text)


def is_word(token: str) -> bool:
    """Whether a token carries meaning (a word or a CJK character), not space or punctuation."""
    return bool(token) and unicodedata.category(token[0])[0] in "LN"


def word_diff(old: str, new: str) -> list[Piece]:
    """The pieces that turn ``old`` into ``new``, word by word; adjacent pieces of one kind are joined."""
    a, b = tokens(old), tokens(new)
    out: list[Piece] = []

    def add(op: str, text: str) -> None:
        if not text:
            return
        if out and out[-1].op == op:
            out[-1] = Piece(op, out[-1].text + text)
        else:
            out.append(Piece(op, text))

    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            add("same", "".join(a[i1:i2]))
            continue
        add("del", "".join(a[i1:i2]))
        add("ins", "".join(b[j1:j2]))
    return out


def changed(pieces: list[Piece]) -> bool:
    """Whether a diff changes anything."""
    return any(p.op != "same" for p in pieces)


def lost_words(text: str, kept: str) -> list[str]:
    """The words of ``text`` that ``kept`` does not say, in order, each once.

    A word is said when ``kept`` has it in any form (case, and the endings the Snowball stemmer
    takes off: "Lint" is said by "linting"); stop words ("with", "the") are never lost.
    """
    present = {stem(t) for t in tokens(kept) if is_word(t)}
    out: list[str] = []
    for token in tokens(text):
        if is_word(token) and not is_stop(token) and stem(token) not in present and token not in out:
            out.append(token)
    return out


def marked(text: str, lost: list[str]) -> list[Piece]:
    """``text`` as pieces where each lost word is a ``del`` piece, so a page can highlight it."""
    gone = set(lost)
    out: list[Piece] = []
    for token in tokens(text):
        op = "del" if token in gone else "same"
        if out and out[-1].op == op:
            out[-1] = Piece(op, out[-1].text + token)
        else:
            out.append(Piece(op, token))
    return out
