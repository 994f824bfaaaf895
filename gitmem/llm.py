"""The LLM port: the three questions consolidation asks, and who answers them.

::

    LLM (protocol)
     ├── OpenAICompatible   any chat-completions endpoint: OpenAI, vLLM, Ollama, llama.cpp, LM Studio
     └── Offline            rules only; the default when no endpoint is configured

The questions: merge a cluster into one memory (or veto it), decide a highly similar pair
(update, delete or ignore), and judge whether a never-used or pending memory is worth keeping.
Every answer is validated; an answer that does not parse is a veto (nothing is written), never
a guess. Memory text goes into the prompt as JSON data, and the prompt says it is data.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from .concepts import Memory, clean_text, iso
from .errors import InvalidInput, Unavailable
from .settings import Settings
from .similarity import similarity, token_set
from .templating import render_template

log = logging.getLogger(__name__)

PAIR_ACTIONS = ("update", "delete", "ignore")
VERDICTS = {"never_used": ("keep", "archive"), "pending": ("promote", "discard", "keep")}
# A merged memory may run this much over the configured length before it counts as a bad answer.
LENGTH_SLACK = 1.25


@dataclass(frozen=True)
class MergeDecision:
    """A cluster merged into ``text``, or vetoed (``text`` is None)."""

    text: str | None
    reason: str


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

    def merge(self, members: Sequence[Memory], *, max_chars: int) -> MergeDecision:
        """Merge related memories into one, or veto the cluster."""
        ...

    def pair(self, target: Memory, candidate: Memory, *, max_chars: int) -> PairDecision:
        """Decide a highly similar pair; ``candidate`` is the newer memory."""
        ...

    def judge(self, memory: Memory, *, question: str, score: float | None = None) -> Judgement:
        """Judge a never-used (``never_used``) or ``pending`` memory."""
        ...


def _preferred(members: Sequence[Memory]) -> Memory:
    """The statement that wins a conflict: the user's own, else the newest."""
    users = [m for m in members if m.source == "user"]
    pool = users or list(members)
    return max(pool, key=lambda m: (m.created, m.id))


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?。！？；;])\s*", text.strip())
    return [p.strip() for p in parts if p.strip()]


class Offline:
    """Conservative decisions by rule, so consolidation works with no model at all.

    It merges only clusters whose members all say much the same thing (every pair at least
    ``min_similarity`` alike): the user's or newest statement, plus any sentence of the others
    that adds words, within the length limit. Everything it is unsure of is vetoed or kept.
    """

    name = "offline"

    def __init__(self, min_similarity: float = 0.5) -> None:
        self.min_similarity = min_similarity

    def merge(self, members: Sequence[Memory], *, max_chars: int) -> MergeDecision:
        """Merge near-duplicates; veto anything looser."""
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                score = similarity(a.text, b.text)
                if score < self.min_similarity:
                    return MergeDecision(None, f"offline rules: {a.id} and {b.id} are only {score:.2f} "
                                               "alike; a model should judge whether they are one topic")
        users = [m for m in members if m.source == "user"]
        if users:
            base = _preferred(users)
        else:
            # Near-duplicates without a user statement: the one that says most, newest on a tie.
            everything = set().union(*(token_set(m.text) for m in members))
            base = max(members, key=lambda m: (len(token_set(m.text) & everything), m.created, m.id))
        text = base.text.strip()
        if len(text) > max_chars * LENGTH_SLACK:
            return MergeDecision(None, f"offline rules: {base.id} has {len(text)} characters, over the limit "
                                       f"of {max_chars}; a model should shorten it")
        seen = set(token_set(text))
        for other in sorted(members, key=lambda m: (m.created, m.id), reverse=True):
            if other is base:
                continue
            for sentence in _sentences(other.text):
                new = token_set(sentence) - seen
                if len(new) * 2 <= len(token_set(sentence)):
                    continue  # mostly said already
                if len(text) + 1 + len(sentence) > max_chars:
                    continue
                text = f"{text} {sentence}"
                seen |= token_set(sentence)
        who = "the user's statement" if base.source == "user" else "the fullest statement"
        return MergeDecision(text, f"offline rules: near-duplicates; kept {who} ({base.id}) "
                                   "and added what the others said beyond it")

    def pair(self, target: Memory, candidate: Memory, *, max_chars: int) -> PairDecision:
        """Fold one into the other when its words are a subset; otherwise leave both."""
        a, b = token_set(target.text), token_set(candidate.text)
        if b <= a and len(target.text) <= max_chars * LENGTH_SLACK:
            return PairDecision("update", target.text, "offline rules: the newer memory says nothing "
                                                       "the older one does not")
        if a <= b and len(candidate.text) <= max_chars * LENGTH_SLACK:
            return PairDecision("update", candidate.text, "offline rules: the newer memory says "
                                                          "everything the older one does, and more")
        if a <= b or b <= a:
            return PairDecision("ignore", None, f"offline rules: one says all the other does, but in over "
                                                f"{max_chars} characters; a model should shorten it")
        return PairDecision("ignore", None, "offline rules: each says something the other does not; "
                                            "a model should judge")

    def judge(self, memory: Memory, *, question: str, score: float | None = None) -> Judgement:
        """Keep: without a model there is no ground to drop anything in the grey zone."""
        return Judgement("keep", "offline rules: undecided cases are kept")


# --- OpenAI-compatible chat completions -----------------------------------------------------------

_SCHEMAS: dict[str, dict[str, Any]] = {
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
    """Validate ``value`` against the small JSON-schema subset used in :data:`_SCHEMAS`."""
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


def parse_answer(content: str, kind: str) -> dict[str, Any]:
    """Read the JSON object in a model's reply (a ```json fence is tolerated) and validate it."""
    text = content.strip()
    fenced = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadAnswer(f"not JSON ({exc.msg} at {exc.pos})") from exc
    except RecursionError as exc:
        # A runaway model that repeats "[" up to its token limit nests deeper than the decoder goes.
        raise BadAnswer("not JSON (nested too deeply)") from exc
    _check(data, _SCHEMAS[kind])
    assert isinstance(data, dict)
    # The reason goes into commit messages and frontmatter as it is: a NUL byte cuts a commit
    # message short (its trailers with it) and an unpaired surrogate cannot be written at all.
    if data["reason"].strip() and _clean(data["reason"]) is None:
        raise BadAnswer("the reason is not valid text (a NUL byte or invalid UTF-8)")
    return data


def _memory_data(memory: Memory) -> dict[str, Any]:
    return {"id": memory.id, "source": memory.source, "created": iso(memory.created),
            "type": memory.type, "text": memory.text}


class OpenAICompatible:
    """A client for ``POST {base_url}/chat/completions`` with JSON answers."""

    name = "openai-compatible"

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 30.0,
                 retries: int = 2, transport: httpx.BaseTransport | None = None) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise InvalidInput(f"LLM base URL {base_url!r} must start with http:// or https://")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.retries = max(0, retries)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self.client.close()

    def ask(self, kind: str, template: str, **context: Any) -> dict[str, Any]:
        """Send one prompt and return the validated JSON answer.

        Raises :class:`BadAnswer` for an answer that does not parse or validate, and
        :class:`Unavailable` when the endpoint does not answer after the retries.
        """
        prompt = render_template(f"prompts/{template}", schema=json.dumps(_SCHEMAS[kind]), **context)
        payload = {
            "model": self.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": render_template("prompts/system.j2")},
                {"role": "user", "content": prompt},
            ],
        }
        url = f"{self.base_url}/chat/completions"
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(2.0, 0.2 * 2**attempt))
            try:
                response = self.client.post(url, json=payload)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                continue
            if response.status_code == 429 or response.status_code >= 500:
                problem = f"HTTP {response.status_code}"
                continue
            if response.status_code >= 400:
                raise Unavailable(f"the LLM at {self.base_url} refused the request: HTTP "
                                  f"{response.status_code} {response.text[:200]}")
            try:
                content = response.json()["choices"][0]["message"]["content"]
            except (ValueError, LookupError, TypeError, RecursionError) as exc:
                raise BadAnswer(f"not a chat-completions response ({exc})") from exc
            if not isinstance(content, str):
                raise BadAnswer("the reply has no text content")
            return parse_answer(content, kind)
        raise Unavailable(f"the LLM at {self.base_url} did not answer after {self.retries + 1} "
                          f"attempts ({problem}); check GITMEM_LLM_BASE_URL or try later")

    def merge(self, members: Sequence[Memory], *, max_chars: int) -> MergeDecision:
        """Ask for one merged memory; a bad answer is a veto."""
        try:
            data = self.ask("merge", "merge.j2", max_chars=max_chars,
                            memories=json.dumps([_memory_data(m) for m in members], ensure_ascii=False,
                                                indent=1))
        except BadAnswer as exc:
            return MergeDecision(None, f"vetoed: the model's answer did not parse ({exc})")
        merged, reason = data["merged"], data["reason"].strip() or "no reason given"
        if merged is None or not merged.strip():
            return MergeDecision(None, f"vetoed by the model: {reason}")
        merged = _clean(merged)
        if merged is None:
            return MergeDecision(None, "vetoed: the merged text is not valid memory text")
        if len(merged) > max_chars * LENGTH_SLACK:
            return MergeDecision(None, f"vetoed: the merged text has {len(merged)} characters, over the "
                                       f"limit of {max_chars}")
        return MergeDecision(merged, reason)

    def pair(self, target: Memory, candidate: Memory, *, max_chars: int) -> PairDecision:
        """Ask update/delete/ignore; a bad answer is ignore."""
        try:
            data = self.ask("pair", "pair.j2", max_chars=max_chars,
                            target=json.dumps(_memory_data(target), ensure_ascii=False),
                            candidate=json.dumps(_memory_data(candidate), ensure_ascii=False))
        except BadAnswer as exc:
            return PairDecision("ignore", None, f"ignored: the model's answer did not parse ({exc})")
        action, text, reason = data["action"], data["memory"], data["reason"].strip() or "no reason given"
        if action == "update":
            text = _clean(text) if isinstance(text, str) else None
            if not text:
                return PairDecision("ignore", None, "ignored: the model said update but gave no valid text")
            if len(text) > max_chars * LENGTH_SLACK:
                return PairDecision("ignore", None, f"ignored: the updated text has {len(text)} "
                                                    f"characters, over the limit of {max_chars}")
            return PairDecision("update", text, reason)
        return PairDecision(action, None, reason)

    def judge(self, memory: Memory, *, question: str, score: float | None = None) -> Judgement:
        """Ask keep/archive or promote/discard/keep; a bad answer keeps the memory as it is."""
        verdicts = VERDICTS[question]
        try:
            data = self.ask("judge", "judge.j2", question=question, verdicts=verdicts,
                            score=None if score is None else round(score, 3),
                            memory=json.dumps(_memory_data(memory), ensure_ascii=False))
        except BadAnswer as exc:
            return Judgement("keep", f"kept: the model's answer did not parse ({exc})")
        if data["verdict"] not in verdicts:
            return Judgement("keep", f"kept: the model answered {data['verdict']!r}, not one of "
                                     f"{', '.join(verdicts)}")
        return Judgement(data["verdict"], data["reason"].strip() or "no reason given")


def _clean(text: str) -> str | None:
    """Model output as memory text (the same rules as a user's), or None when it breaks them."""
    try:
        return clean_text(text, limit=100_000)
    except InvalidInput:
        return None


def llm_from_settings(settings: Settings) -> LLM:
    """The configured client, or :class:`Offline` when ``llm_base_url`` is unset."""
    if not settings.llm_base_url:
        return Offline()
    return OpenAICompatible(settings.llm_base_url, settings.llm_model, settings.llm_api_key,
                            settings.llm_timeout, settings.llm_retries)
