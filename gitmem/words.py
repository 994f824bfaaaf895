"""The words a search weighs: stop words left out, English stemmed, Chinese cut at its function words.

Recall counts a memory as a hit only on evidence, and "the" is no evidence: "What car does the
user drive?" shares nothing with "The food in Tokyo was incredible" once the stop words are gone.
Pure functions, no I/O. English words are stemmed with the Snowball (Porter 2) stemmer, so
"deploys", "deployed" and "deployment" are one term; Chinese text has no spaces, so a run of CJK
characters is cut at its function words and phrases (的, 什么, 我们...) and each piece becomes
character bigrams ("周报什么时候发" -> 周报, 发).

Two sets of terms come out of a text: a memory's (:func:`document_terms`: its words, the bigrams
of neighbouring words, and its single CJK characters, so that a one-character piece of a
question finds it) and a query's (:func:`query_terms`: the words, which weigh as evidence, and
their bigrams, which only order the hits).
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from dataclasses import dataclass

import snowballstemmer

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_PIECE = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+(?:['’][^\W_{_CJK}]+)*)")
_BREAK = re.compile(r"[.!?;:。！？；\n]")

#: English words that say nothing about what a memory is about: articles, pronouns, auxiliaries,
#: prepositions, question words, and the verbs every rule uses ("use", "make").
STOP_WORDS = frozenset("""
    a about above after again against all also am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't
    down during each either else etc ever every few for from further get gets getting got had hadn't has
    hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his how how's i
    i'd i'll i'm i've ie eg if in into is isn't it it's its itself just let let's like may me might more
    most much must mustn't my myself need needs no nor not now of off often on once one only or other
    ought our ours ourselves out over own per please same shall shan't she she'd she'll she's should
    shouldn't so some such than that that's the their theirs them themselves then there there's these
    they they'd they'll they're they've this those though through to too under until up upon us use used
    uses using usually very via was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's whether which while who who's whom whose why why's will with within without won't would
    wouldn't yes yet you you'd you'll you're you've your yours yourself yourselves
    tell know want see say said make makes made thing things something anything way really always
    """.split())
# Chinese function words and question phrases, longest first when cutting.
_CJK_STOP_PHRASES = tuple(sorted("""
    什么时候 为什么 怎么样 怎么办 是不是 有没有 可不可以 哪一个 什么样
    什么 怎么 怎样 如何 哪个 哪些 哪里 哪儿 多少 多大 多久 几点 我们 你们 他们 她们 它们 咱们 大家 自己
    这个 那个 这些 那些 这里 那里 一个 一下 一些 可以 应该 需要 是否 还是 或者 以及 而且 并且 但是 因为 所以
    如果 就是 已经 现在 时候 一直 总是 还有 没有 请问 告诉 知道 记得 用来 用于
    """.split(), key=len, reverse=True))
# Question phrases whose nouns name the kind of answer, not its subject: "What time is standup?"
# asks about standup.
_QUESTION = re.compile(
    r"\b(?:what|which)\s+(?:time|day|date|year|kind\s+of|type\s+of|sort\s+of)\b"
    r"|\bhow\s+(?:many|much|long|often|big|old|large|soon)\b", re.IGNORECASE)
_CJK_STOP_CHARS = frozenset("的了在是和与及或都也就要会能把被让给对从到以为而并请吗呢吧啊呀哦嘛么"
                            "我你他她它这那哪个几有用做去来说得地着过再又很最更等之其啥谁")
_CJK_STOP_RE = re.compile("|".join(map(re.escape, _CJK_STOP_PHRASES)) + f"|[{''.join(sorted(_CJK_STOP_CHARS))}]")

_stemmer = snowballstemmer.stemmer("english")
# A Snowball stemmer keeps its state in the object between calls: one thread at a time.
_stemmer_lock = threading.Lock()


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball (Porter 2) stem of an English word, in lower case ("deployments" -> "deploy")."""
    word = word.lower().replace("’", "'")
    word = word.removesuffix("'s")
    if not word.isascii() or not word.isalpha():
        return word  # numbers, versions, other scripts: as written
    with _stemmer_lock:
        return str(_stemmer.stemWord(word))


def is_stop(word: str) -> bool:
    """Whether an English word is a stop word (any case, with or without a trailing "'s")."""
    low = word.lower().replace("’", "'")
    return low in STOP_WORDS or low.removesuffix("'s") in STOP_WORDS


@dataclass(frozen=True)
class Terms:
    """The terms of a text: ``words`` weigh as evidence, ``pairs`` (neighbouring words) order hits."""

    words: tuple[str, ...]
    pairs: tuple[str, ...] = ()
    chars: tuple[str, ...] = ()

    def all(self) -> tuple[str, ...]:
        """Every term, words first, each once."""
        return tuple(dict.fromkeys(self.words + self.pairs + self.chars))


def _cjk_pieces(run: str) -> list[str]:
    """A CJK run cut at its function words: "我们家的兔子叫什么" -> ["家", "兔子叫"]."""
    return [p for p in _CJK_STOP_RE.split(run) if p]


def _latin(word: str) -> str | None:
    """A Latin word's term: its stem, or None for a stop word or a lone letter."""
    if is_stop(word):
        return None
    term = stem(word)
    if len(term) < 2 and not term.isdigit():
        return None
    return term


def _scan(text: str, *, document: bool) -> Terms:
    folded = unicodedata.normalize("NFKC", text)
    if not document:
        folded = _QUESTION.sub(" ", folded)
    words: list[str] = []
    pairs: list[str] = []
    chars: list[str] = []
    run: list[str] = []  # the Latin terms of the current clause, for pairs

    def end_run() -> None:
        pairs.extend(f"{a}_{b}" for a, b in zip(run, run[1:], strict=False))
        run.clear()

    last = 0
    for match in _PIECE.finditer(folded):
        if run and _BREAK.search(folded, last, match.start()):
            end_run()
        last = match.end()
        cjk, latin = match.group(1), match.group(2)
        if latin:
            term = _latin(latin)
            if term is not None:
                words.append(term)
                run.append(term)
            continue
        end_run()
        for piece in _cjk_pieces(cjk):
            if len(piece) == 1:
                words.append(piece)
            else:
                words.extend(piece[i : i + 2] for i in range(len(piece) - 1))
                if document:
                    chars.extend(piece)
    end_run()
    return Terms(tuple(dict.fromkeys(words)), tuple(dict.fromkeys(pairs)),
                 tuple(c for c in dict.fromkeys(chars) if c not in set(words)))


@functools.lru_cache(maxsize=16384)
def document_terms(text: str) -> Terms:
    """A memory's terms: its words and word pairs, and its CJK characters one by one."""
    return _scan(text, document=True)


@functools.lru_cache(maxsize=4096)
def query_terms(text: str) -> Terms:
    """A query's terms: its words (the evidence) and its word pairs."""
    return _scan(text, document=False)


def written(text: str) -> frozenset[str]:
    """The words of a text as written, lower case, stop words left out ("user's" is "user")."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    return frozenset(w.removesuffix("'s") for w in re.findall(r"[^\W_]+(?:'[^\W_]+)*", folded)
                     if not is_stop(w) and not re.search(f"[{_CJK}]", w))


def is_cjk(term: str) -> bool:
    """Whether a term is Chinese, Japanese or Korean (a character or a bigram of them)."""
    return bool(term) and bool(re.fullmatch(f"[{_CJK}]+", term))
