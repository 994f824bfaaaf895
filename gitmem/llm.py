"""The LLM port: the three questions consolidation asks, and who answers them.

::

    LLM (protocol)
     ├── OpenAICompatible   any chat-completions endpoint (gitmem.endpoints): OpenAI, vLLM, Ollama...
     └── Offline            rules only; the default when no endpoint is configured

This module holds the port, its answers and schemas, and the offline rules; the HTTP client
lives with the other endpoint clients in :mod:`gitmem.endpoints`, so the core never loads httpx.

The questions: merge a cluster into one memory (or veto it), decide a highly similar pair
(update, delete or ignore), and judge whether a never-used or pending memory is worth keeping.
Every answer is validated; an answer that does not parse is a veto (nothing is written), never
a guess. Memory text goes into the prompt as JSON data, and the prompt says it is data.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from . import details, extraction
from .concepts import Memory, clean_text
from .errors import InvalidInput
from .extraction import Extracted, Message
from .similarity import similarity

log = logging.getLogger(__name__)

PAIR_ACTIONS = ("update", "delete", "ignore")
VERDICTS = {"never_used": ("keep", "archive"), "pending": ("promote", "discard", "keep")}
# A merged memory may run this much over the configured length before it counts as a bad answer.
LENGTH_SLACK = 1.25
#: Two statements neither of which says the other whole are linked when the shorter loses at most
#: this share of its words in the other: one topic. On the 480 labelled pairs of
#: tests/data/merge_pairs.json a third links 27 true duplicates and 42 different rules; a half
#: linked 125 different ones.
ONE_TOPIC = 0.34


@dataclass(frozen=True)
class MergeDecision:
    """A cluster merged into ``text``, or vetoed (``text`` is None).

    ``keep``: the member whose words (and type) the merged text keeps, when it keeps one.
    ``link``: vetoed, but the members say one rule and should point at each other (``related``).
    ``apart``: members the merge leaves as they are, linked to the merged memory.
    """

    text: str | None
    reason: str
    keep: str | None = None
    link: bool = False
    #: Members left out of the merge (another language's wording): kept, and linked to the result.
    apart: tuple[str, ...] = ()


@dataclass(frozen=True)
class PairDecision:
    """What to do with a highly similar pair: ``update`` the target with ``text``, ``delete`` it, or ``ignore``."""

    action: str
    text: str | None
    reason: str


@dataclass(frozen=True)
class Judgement:
    """A verdict on one memory: keep/archive (never used) or promote/discard/keep (pending)."""

    verdict: str
    reason: str


class LLM(Protocol):
    """What consolidation needs from a language model."""

    name: str

    def merge(self, members: Sequence[Memory], *, max_chars: int, alike: bool = True) -> MergeDecision:
        """Merge related memories into one, or veto the cluster.

        ``alike``: every pair of members is close in words or in meaning, not only in a chain of
        loose word overlaps (a model judges either way; the offline rules need it).
        """
        ...

    def pair(self, target: Memory, candidate: Memory, *, max_chars: int) -> PairDecision:
        """Decide a highly similar pair; ``candidate`` is the newer memory."""
        ...

    def judge(self, memory: Memory, *, question: str, score: float | None = None) -> Judgement:
        """Judge a never-used (``never_used``) or ``pending`` memory."""
        ...

    def extract(self, messages: Sequence[Message], *, segments: Sequence[int] = ()) -> list[Extracted]:
        """The memories a conversation's messages hold, each citing the messages it comes from.

        ``segments``: indexes of the messages that start a new topic. Raises
        :class:`~gitmem.extraction.BadExtraction` for an answer off the schema and
        :class:`~gitmem.errors.Unavailable` when the model does not answer: the caller keeps the
        messages and tries again later.
        """
        ...


def _preferred(members: Sequence[Memory]) -> Memory:
    """The statement that wins a conflict: the user's own, else the newest."""
    users = [m for m in members if m.source == "user"]
    pool = users or list(members)
    return max(pool, key=lambda m: (m.created, m.id))


# A sentence ends at . ! ? ; followed by a space (never inside "pnpm-lock.yaml" or a URL), or at
# Chinese punctuation.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*")


def _sentences(text: str) -> list[str]:
    return [p.strip() for p in _SENTENCE_END.split(text.strip()) if p.strip()]


def _quote(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return f"\"{flat if len(flat) <= limit else flat[: limit - 1] + '…'}\""


class Offline:
    """Conservative decisions by rule, so consolidation works with no model at all.

    It merges only what loses nothing: a statement is merged into another only when every word it
    says (stemmed, stop words aside, a kind of tool counting as said by a tool of that kind) and
    every detail it names is in the other (:func:`gitmem.details.lost`), and the other is kept as
    it is, never rewritten. Members whose details conflict are vetoed; statements of one topic
    that each say something the other does not are linked (``related``), not merged; the same
    rule in two languages is linked too; anything loosely joined is left for a model to judge.
    """

    name = "offline"

    def __init__(self, min_similarity: float = 0.5) -> None:
        self.min_similarity = min_similarity

    def merge(self, members: Sequence[Memory], *, max_chars: int, alike: bool = True) -> MergeDecision:
        """Merge the statements another one says whole; link or leave the rest, saying why in words."""
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                conflict = details.conflict(a.text, b.text)
                if conflict is not None:
                    return MergeDecision(None, f"offline rules: {a.id} and {b.id} are different rules: they "
                                               f"differ in {conflict}; both kept")
                if not alike:
                    score = similarity(a.text, b.text)
                    if score < self.min_similarity:
                        return MergeDecision(None, f"offline rules: {a.id} and {b.id} are only {score:.2f} "
                                                   "alike in words and not close in meaning; a model should "
                                                   "judge whether they are one rule")
        languages = sorted({details.language(m.text) for m in members})
        if len(languages) > 1:
            groups = {lang: [m for m in members if details.language(m.text) == lang] for lang in languages}
            main = max(languages, key=lambda lang: (len(groups[lang]), any(m.source == "user" for m in groups[lang])))
            if len(groups[main]) >= 2:
                merged = self.merge(groups[main], max_chars=max_chars)
                if merged.text is not None:
                    others = tuple(dict.fromkeys((*merged.apart,
                                                  *(m.id for m in members if m not in groups[main]))))
                    return MergeDecision(merged.text, f"{merged.reason}; {', '.join(others)} say it in another "
                                                      "language or say more: kept and linked as related",
                                         merged.keep, apart=others)
            return MergeDecision(None, "offline rules: the same rule in " + " and ".join(languages) +
                                 "; linked as related, not merged, so neither wording is lost", link=True)
        # The statement to keep whole: one that says all the others say (a user's, if there is one,
        # since a user's statement is never rewritten), else one that says most of them.
        users = [m for m in members if m.source == "user"]
        pool = users or list(members)

        def covers(base: Memory) -> list[Memory]:
            # A member is said whole by ``base`` when base holds every word and detail of it and
            # names nothing that would narrow it (another tool, a product, a scope).
            return [m for m in members if m is not base and not details.lost(base.text, m.text)
                    and not details.narrows(base.text, m.text)]

        base = max(pool, key=lambda m: (len(covers(m)), len(details.details(m.text).all()), len(m.text),
                                        m.created, m.id))
        text = base.text.strip()
        said = covers(base)
        rest = [m for m in members if m is not base and m not in said]
        if len(text) > max_chars * LENGTH_SLACK:
            return MergeDecision(None, f"offline rules: {base.id} has {len(text)} characters, over the limit "
                                       f"of {max_chars}; a model should shorten it")
        more = "; ".join(self._more(base, m) for m in rest)
        if not said:
            if all(self._one_topic(base, m) for m in rest):
                return MergeDecision(None, f"offline rules: each says something the other does not ({more}); "
                                           "linked as related, not merged, so nothing is lost", link=True)
            return MergeDecision(None, f"offline rules: different rules ({more}); both kept, not linked")
        kept = "the user's statement" if base.source == "user" else "the statement that says the most"
        reason = (f"offline rules: one rule said {len(said) + 1} ways; kept {kept}, {base.id} "
                  f"{_quote(base.text)}, as it is: every word and detail of {', '.join(m.id for m in said)} "
                  "is in it, so nothing is lost")
        if rest:
            reason += f"; {more}: kept apart and linked as related"
        return MergeDecision(text, reason, keep=base.id, apart=tuple(m.id for m in rest))

    @staticmethod
    def _more(base: Memory, other: Memory) -> str:
        """What keeping ``base`` instead of ``other`` would lose: the words it lacks, or the scope it adds."""
        gone = sorted(details.lost(base.text, other.text))
        if gone:
            return f"{other.id} also says {', '.join(gone[:8])}{' …' if len(gone) > 8 else ''}"
        narrower = sorted(details.narrows(base.text, other.text))
        return f"{base.id} names {', '.join(narrower[:8])}, which would narrow {other.id}"

    @staticmethod
    def _one_topic(a: Memory, b: Memory) -> bool:
        """Whether one of two statements says most of the other (:data:`ONE_TOPIC`): a link helps; else it is noise."""
        lose_a, lose_b = details.lost(b.text, a.text), details.lost(a.text, b.text)
        size_a = len(details.lost("", a.text)) or 1
        size_b = len(details.lost("", b.text)) or 1
        return min(len(lose_a) / size_a, len(lose_b) / size_b) <= ONE_TOPIC

    def pair(self, target: Memory, candidate: Memory, *, max_chars: int) -> PairDecision:
        """Fold one into the other when it says nothing the other does not (:func:`details.lost`); else leave both."""
        newer_adds = details.lost(target.text, candidate.text)
        older_adds = details.lost(candidate.text, target.text)
        if not newer_adds and len(target.text) <= max_chars * LENGTH_SLACK:
            return PairDecision("update", target.text, "offline rules: the newer memory says nothing "
                                                       "the older one does not")
        if not older_adds and len(candidate.text) <= max_chars * LENGTH_SLACK:
            return PairDecision("update", candidate.text, "offline rules: the newer memory says everything "
                                                          "the older one does, and more")
        if not newer_adds or not older_adds:
            return PairDecision("ignore", None, f"offline rules: one says all the other does, but in over "
                                                f"{max_chars} characters; a model should shorten it")
        adds = f"{', '.join(sorted(newer_adds)[:6])} / {', '.join(sorted(older_adds)[:6])}"
        return PairDecision("ignore", None, f"offline rules: each says something the other does not ({adds}); "
                                            "a model should judge")

    def judge(self, memory: Memory, *, question: str, score: float | None = None) -> Judgement:
        """Keep: without a model there is no ground to drop anything in the grey zone."""
        return Judgement("keep", "offline rules: undecided cases are kept")

    def extract(self, messages: Sequence[Message], *, segments: Sequence[int] = ()) -> list[Extracted]:
        """What the offline rules find (:func:`gitmem.extraction.offline`); never raises."""
        return extraction.offline(messages)


# --- OpenAI-compatible chat completions -----------------------------------------------------------

SCHEMAS: dict[str, dict[str, Any]] = {
    "merge": {
        "type": "object",
        "properties": {"merged": {"type": ["string", "null"]}, "reason": {"type": "string"}},
        "required": ["merged", "reason"],
    },
    "pair": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(PAIR_ACTIONS)},
            "memory": {"type": ["string", "null"]},
            "reason": {"type": "string"},
        },
        "required": ["action", "memory", "reason"],
    },
    "judge": {
        "type": "object",
        "properties": {"verdict": {"type": "string"}, "reason": {"type": "string"}},
        "required": ["verdict", "reason"],
    },
}


class BadAnswer(ValueError):
    """The model's answer does not match the schema."""


def _check(value: Any, schema: dict[str, Any], where: str = "answer") -> None:
    """Validate ``value`` against the small JSON-schema subset used in :data:`SCHEMAS`."""
    kinds = schema.get("type")
    allowed = kinds if isinstance(kinds, list) else [kinds] if kinds else []
    names: dict[str, type] = {"object": dict, "string": str, "null": type(None), "boolean": bool}
    if allowed and not any(isinstance(value, names[k]) for k in allowed):
        raise BadAnswer(f"{where} must be {' or '.join(allowed)}, not {type(value).__name__}")
    if "enum" in schema and value not in schema["enum"]:
        raise BadAnswer(f"{where} must be one of {', '.join(schema['enum'])}, not {value!r}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                raise BadAnswer(f"{where} lacks {key!r}")
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                _check(value[key], sub, f"{where}.{key}")


def unfence(content: str) -> str:
    """A model's reply without the ```json fence some models put around JSON."""
    text = content.strip()
    fenced = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.DOTALL)
    return fenced.group(1) if fenced else text


def parse_answer(content: str, kind: str) -> dict[str, Any]:
    """Read the JSON object in a model's reply (a ```json fence is tolerated) and validate it."""
    text = unfence(content)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadAnswer(f"not JSON ({exc.msg} at {exc.pos})") from exc
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise BadAnswer(f"not JSON that can be read ({exc})") from exc
    except RecursionError as exc:
        # A runaway model that repeats "[" up to its token limit nests deeper than the decoder goes.
        raise BadAnswer("not JSON (nested too deeply)") from exc
    _check(data, SCHEMAS[kind])
    assert isinstance(data, dict)
    # The reason goes into commit messages and frontmatter as it is: a NUL byte cuts a commit
    # message short (its trailers with it) and an unpaired surrogate cannot be written at all.
    if data["reason"].strip() and clean_answer(data["reason"]) is None:
        raise BadAnswer("the reason is not valid text (a NUL byte or invalid UTF-8)")
    return data


def clean_answer(text: str) -> str | None:
    """Model output as memory text (the same rules as a user's), or None when it breaks them."""
    try:
        return clean_text(text, limit=100_000)
    except InvalidInput:
        return None
