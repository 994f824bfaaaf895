"""What a conversation says worth remembering: messages in, candidate memories out (no I/O).

Ingestion (:mod:`gitmem.ingest`) buffers a conversation's messages and hands a sealed buffer to
the LLM port's ``extract``; this module holds what every extractor shares:

- :class:`Message` and :class:`Extracted`, the data either side of the port;
- :func:`offline`, the rules the offline default extracts by (see its docstring for what they miss);
- :data:`SCHEMA` and :func:`parse`, the JSON a model must answer with, checked strictly: a
  malformed answer is an error (the buffer is tried again later), never a guess;
- :func:`estimate_tokens`, how a buffer's size is counted, and :func:`boundaries`, where a long
  conversation changes topic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .concepts import TYPES

__all__ = ["SCHEMA", "BadExtraction", "Extracted", "Message", "boundaries", "estimate_tokens", "offline", "parse"]

ROLES = ("user", "assistant", "system", "tool")


class BadExtraction(ValueError):
    """A model's extraction answer that does not match :data:`SCHEMA`; nothing is written."""


@dataclass(frozen=True)
class Message:
    """One message of a conversation: its id there, who said it, what, and when."""

    id: str
    text: str
    role: str = "user"
    author: str | None = None
    time: datetime | None = None


@dataclass(frozen=True)
class Extracted:
    """A candidate memory drawn from messages.

    ``explicit``: the speaker asked for it to be remembered ("remember: ..."), so it is stored as
    an active memory; everything else is stored pending, for consolidation to promote or discard.
    """

    type: str
    text: str
    messages: tuple[str, ...]
    title: str | None = None
    paths: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    confidence: float = 0.5
    explicit: bool = False
    author: str | None = None
    rule: str = field(default="model", compare=False)  # which offline rule (or "model") found it


# --- counting ---------------------------------------------------------------------------------

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def estimate_tokens(text: str) -> int:
    """About how many tokens a model's tokenizer makes of ``text``.

    One per CJK character, one per four other characters (OpenAI's own rule of thumb). The count
    only decides when a buffer is sealed, so an estimate within a fifth of the truth moves the
    seal by a message or two, and no tokenizer's vocabulary has to be shipped or downloaded.
    """
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def boundaries(cosines: Sequence[float], *, least: int = 3) -> list[int]:
    """Where a conversation changes topic: indexes of the turns that start a new segment.

    ``cosines[i]`` is the similarity of turn ``i`` and turn ``i + 1``. A boundary falls before
    turn ``i + 1`` where that similarity is a local low at least half a standard deviation under
    the mean (chat turns are short, so their similarities are noisy); segments keep at least
    ``least`` turns.
    """
    if len(cosines) < 2 * least:
        return []
    mean = sum(cosines) / len(cosines)
    spread = math.sqrt(sum((c - mean) ** 2 for c in cosines) / len(cosines))
    cut = mean - spread / 2
    found: list[int] = []
    last = 0
    for i, value in enumerate(cosines):
        start = i + 1
        low = value <= min(cosines[max(0, i - 1) : i + 2])
        if value < cut and low and start - last >= least and len(cosines) + 1 - start >= least:
            found.append(start)
            last = start
    return found


# --- the offline rules --------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])\s*|\n+")
_MARKER = re.compile(r"^\s*(?:please\s+)?(?:remember|note to self|for the record)\s*(?:that\b|[:：,，-])\s*"
                     r"|^\s*(?:请记住|请记下|记住|记下)\s*[:：,，]?\s*", re.IGNORECASE)
_CORRECTION = re.compile(
    r"^\s*(?:no|nope|actually|correction|wrong|not quite|that's (?:wrong|not right)|that is wrong)\b[,:!.]*\s*"
    r"|^\s*(?:不对|不是的|错了|更正|纠正一下)\s*[,，:：!！。]?\s*", re.IGNORECASE)
_WE_USE = re.compile(
    r"\b(?:we|our team|the team|this (?:repo|project))\s+(?:use|uses|run|runs|deploy with|prefer|prefers)\b"
    r".{1,80}?(?:,\s*|\s+)(?:not|instead of|rather than)\s+\S"
    r"|\buse\s+\S.{0,60}?\s+(?:instead of|rather than|not)\s+\S",
    re.IGNORECASE)
_ZH_USE = re.compile(r"(?:我们|团队|项目)?(?:用|使用|采用).{1,30}?[，,、\s]*(?:不要?用|不用|而不是|别用)")
_LEAD = re.compile(r"^\s*(?:also|and|so|plus|oh|ok|okay|thanks|then)\b[,.!]?\s*", re.IGNORECASE)
_ALWAYS = re.compile(
    r"^\s*(?:(?:we|you)\s+(?:should\s+)?)?(?:always|never|do not ever|don't ever)\b|^\s*must(?:\s+not)?\b"
    r"|\b(?:we|you|agents?)\s+(?:must|should)\s+(?:always|never)\b"
    # "migrations must run in batches": a rule about a thing, not "you must be tired"
    r"|(?<!\byou )(?<!\bwe )(?<!\bI )(?<!\bthey )\b(?:must|must not|mustn't)\s+(?!be\b)"
    r"\w+\b.*\S\s+\S",
    re.IGNORECASE)
_ZH_ALWAYS = re.compile(r"^(?:一律|总是|始终|永远不要|永远别|绝不|禁止|必须|不许|不准|务必)"
                        r"|.{2,}(?:一律|必须|务必|禁止|统一)")
_LESSON = re.compile(r"^\s*(?:lesson(?:s)? learned|lesson|takeaway)\s*[:：-]\s*|^\s*(?:经验教训|教训)\s*[:：]\s*",
                     re.IGNORECASE)
_QUESTION = re.compile(r"[?？]\s*$")
_ONE_OFF = re.compile(
    r"\b(?:today|tonight|tomorrow|right now|this (?:morning|afternoon|evening|week))\b|今天|明天|今晚", re.IGNORECASE)
_PATH = re.compile(r"(?<![\w/.-])(?:[\w-]+/)*[\w-]+\."
                   r"(?:py|ts|tsx|js|jsx|json|ya?ml|toml|md|go|rs|java|sql|sh|css|html)\b")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _tidy(sentence: str) -> str:
    sentence = sentence.strip().strip("\"'“”‘’").strip()
    if sentence and sentence[0].isalpha() and sentence[0].islower():
        sentence = sentence[0].upper() + sentence[1:]
    return sentence


def offline(messages: Sequence[Message]) -> list[Extracted]:
    """What the rules find in people's messages (assistant, system and tool turns are skipped).

    - An explicit marker ("remember: ...", "remember that ...", "记住：...", "请记住：...") makes
      the rest of its sentence an explicit memory (stored active, as ``remember`` would).
    - "we use X, not Y" / "use X instead of Y" / "用 X，不要用 Y" make a pending ``convention``.
    - "always ..." / "never ..." / "... must ..." / "必须 ..." / "禁止 ..." / "... 一律 ..." make a pending
      ``convention``; "lesson learned: ..." / "教训：..." a pending ``lesson``.
    - A correction ("no, ...", "actually, ...", "不对，...") makes what follows a pending ``fact``
      when it says something on its own (four words or more).

    What they miss: rules stated without these words ("reports come from the SaaS MySQL"),
    anything spread over several messages ("which package manager?" / "pnpm"), what an
    assistant says, and preferences put as questions or feelings. A model finds those.
    """
    found: list[Extracted] = []
    seen: set[str] = set()
    for message in messages:
        if message.role != "user":
            continue
        for sentence in _sentences(message.text):
            hit = _rule(sentence)
            if hit is None:
                continue
            rule, kind, text, confidence = hit
            text = _tidy(text)
            key = " ".join(text.lower().split())
            if (len(text) < 8 and len(_CJK.findall(text)) < 4) or key in seen:
                continue
            seen.add(key)
            found.append(Extracted(kind, text, (message.id,), paths=tuple(dict.fromkeys(_PATH.findall(text))),
                                   confidence=confidence, explicit=rule == "marker", author=message.author,
                                   rule=rule))
    return found


def _rule(sentence: str) -> tuple[str, str, str, float] | None:
    """(rule, type, text, confidence) for a sentence one of the rules takes, else None."""
    marker = _MARKER.match(sentence)
    if marker and sentence[marker.end() :].strip():
        return "marker", "fact", sentence[marker.end() :], 1.0
    if _QUESTION.search(sentence) or _ONE_OFF.search(sentence):
        return None  # a question, or a plan for today: not a lasting rule
    lesson = _LESSON.match(sentence)
    if lesson and sentence[lesson.end() :].strip():
        return "lesson", "lesson", sentence[lesson.end() :], 0.7
    corrected = _CORRECTION.match(sentence)
    rest = sentence[corrected.end() :] if corrected else sentence
    lead = _LEAD.match(rest)
    while lead is not None and lead.end():
        rest = rest[lead.end() :]
        lead = _LEAD.match(rest)
    if _WE_USE.search(rest) or _ZH_USE.search(rest):
        return "we-use", "convention", rest, 0.7
    if _ALWAYS.search(rest) or _ZH_ALWAYS.match(rest):
        return "always-never", "convention", rest, 0.6
    if corrected and (len(rest.split()) >= 4 or len(_CJK.findall(rest)) >= 6):
        return "correction", "fact", rest, 0.5
    return None


# --- what a model answers ---------------------------------------------------------------------

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["memories"],
    "properties": {
        "memories": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "title", "text", "messages", "confidence"],
                "properties": {
                    "type": {"type": "string", "enum": list(TYPES)},
                    "title": {"type": "string"},
                    "text": {"type": "string"},
                    "paths": {"type": "array", "items": {"type": "string"}},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "messages": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "explicit": {"type": "boolean"},
                },
            },
        },
    },
}


def parse(data: Any, messages: Sequence[Message]) -> list[Extracted]:
    """A model's answer as candidates; raises :class:`BadExtraction` for anything off the schema.

    Every candidate must cite messages of the buffer; its author is the author of the first one.
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("memories"), list):
        raise BadExtraction('the answer must be an object with a "memories" list')
    by_id = {m.id: m for m in messages}
    out: list[Extracted] = []
    for number, item in enumerate(data["memories"]):
        where = f"memories[{number}]"
        if not isinstance(item, Mapping):
            raise BadExtraction(f"{where} must be an object")
        for key in ("type", "title", "text"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise BadExtraction(f"{where}.{key} must be a non-empty string")
        if item["type"] not in TYPES:
            raise BadExtraction(f"{where}.type {item['type']!r} is not one of {', '.join(TYPES)}")
        confidence = item.get("confidence")
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
            raise BadExtraction(f"{where}.confidence must be a number from 0 to 1")
        cited = item.get("messages")
        if not isinstance(cited, list) or not cited or not all(isinstance(c, str) for c in cited):
            raise BadExtraction(f"{where}.messages must list the ids of the messages it comes from")
        unknown = [c for c in cited if c not in by_id]
        if unknown:
            raise BadExtraction(f"{where}.messages names {unknown[0]!r}, which is not in the conversation")
        lists: dict[str, tuple[str, ...]] = {}
        for key in ("paths", "tags"):
            value = item.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise BadExtraction(f"{where}.{key} must be a list of strings")
            lists[key] = tuple(v for v in value if v.strip())
        explicit = item.get("explicit", False)
        if not isinstance(explicit, bool):
            raise BadExtraction(f"{where}.explicit must be true or false")
        out.append(Extracted(item["type"], item["text"].strip(), tuple(dict.fromkeys(cited)),
                             title=item["title"].strip(), paths=lists["paths"], tags=lists["tags"],
                             confidence=float(confidence), explicit=explicit, author=by_id[cited[0]].author))
    return out
