"""Tokens and similarity scores that work for Chinese, English and mixed text.

CJK runs become character bigrams; other scripts become lower-cased word unigrams plus word
bigrams. Character bigrams alone link almost every English sentence to every other at the 0.3
threshold used for clustering (see shared/data/README.md), which is why Latin text is split by
words instead.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

# CJK Unified Ideographs (+ extension A, compatibility), kana and hangul.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_PIECE = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+(?:['’][^\W_{_CJK}]+)*)")
_NON_WORD = re.compile(r"[\W_]+")


def normalise(text: str) -> str:
    """Fold text for exact-duplicate checks: NFKC, case-folded, punctuation and spaces removed."""
    return _NON_WORD.sub("", unicodedata.normalize("NFKC", text).casefold())


def tokens(text: str) -> list[str]:
    """Return the tokens of ``text`` in order: CJK bigrams, Latin words and word bigrams."""
    out: list[str] = []
    words: list[str] = []

    def flush_words() -> None:
        out.extend(words)
        out.extend(f"{a}_{b}" for a, b in zip(words, words[1:], strict=False))
        words.clear()

    folded = unicodedata.normalize("NFKC", text).casefold()
    last_end = 0
    for match in _PIECE.finditer(folded):
        # A sentence break between words ends a run, so bigrams do not span sentences.
        if words and re.search(r"[.!?;:。！？；\n]", folded[last_end : match.start()]):
            flush_words()
        last_end = match.end()
        cjk, word = match.group(1), match.group(2)
        if cjk:
            flush_words()
            if len(cjk) == 1:
                out.append(cjk)
            else:
                out.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
        else:
            words.append(word.replace("’", "'"))
    flush_words()
    return out


def token_set(text: str) -> frozenset[str]:
    """Return the distinct tokens of ``text``."""
    return frozenset(tokens(text))


def dice(a: Iterable[str], b: Iterable[str]) -> float:
    """Dice coefficient of two token collections (as sets): 2|A∩B| / (|A|+|B|)."""
    sa = a if isinstance(a, frozenset | set) else set(a)
    sb = b if isinstance(b, frozenset | set) else set(b)
    if not sa or not sb:
        return 0.0
    return 2 * len(sa & sb) / (len(sa) + len(sb))


def similarity(a: str, b: str) -> float:
    """Similarity of two texts in 0..1; 1.0 when they are identical after normalisation."""
    if normalise(a) == normalise(b):
        return 1.0
    return dice(token_set(a), token_set(b))
