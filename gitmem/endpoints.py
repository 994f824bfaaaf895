"""Clients for OpenAI-compatible HTTP endpoints: chat completions and embeddings.

Any server that speaks ``POST /v1/chat/completions`` (OpenAI, vLLM, Ollama, llama.cpp, LM Studio)
answers consolidation's questions through :class:`OpenAICompatible`; :func:`llm_from_settings`
picks it, or the offline rules when no endpoint is configured. Any server that speaks
``POST /v1/embeddings`` (OpenAI, Ollama, vLLM, llama.cpp, TEI) gives sentence vectors through
:class:`EmbeddingsEndpoint`; :func:`embeddings_from_settings` picks it, the offline encoder, or none.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import embeddings as embeddings_port
from . import extraction
from .concepts import TYPES, Memory, iso
from .errors import InvalidInput, Unavailable
from .extraction import Extracted, Message
from .llm import (
    LENGTH_SLACK,
    LLM,
    SCHEMAS,
    VERDICTS,
    BadAnswer,
    Judgement,
    MergeDecision,
    Offline,
    PairDecision,
    clean_answer,
    parse_answer,
    unfence,
)
from .settings import Settings
from .templating import render_template
from .wording import plural

if TYPE_CHECKING:  # httpx loads with the first client made: the offline defaults never need it
    import httpx
    import numpy as np


def _post(client: httpx.Client, url: str, payload: dict[str, Any], retries: int, where: str,
          setting: str) -> httpx.Response:
    """POST JSON, retrying connection errors, 429 and 5xx with backoff; the first other answer.

    Raises :class:`Unavailable` for a 4xx refusal, and when no attempt got an answer.
    """
    import httpx

    problem = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(min(2.0, 0.2 * 2**attempt))
        try:
            response = client.post(url, json=payload)
        except httpx.HTTPError as exc:
            problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            continue
        if response.status_code == 429 or response.status_code >= 500:
            problem = f"HTTP {response.status_code}"
            continue
        if response.status_code >= 400:
            raise Unavailable(f"{where} refused the request: HTTP {response.status_code} {response.text[:200]}")
        return response
    raise Unavailable(f"{where} did not answer after {retries + 1} attempts ({problem}); check {setting} or try later")


def _client(timeout: float, headers: dict[str, str], transport: httpx.BaseTransport | None) -> httpx.Client:
    import httpx

    return httpx.Client(timeout=timeout, headers=headers, transport=transport)


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
        self.client = _client(timeout, headers, transport)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self.client.close()

    def ask(self, kind: str, template: str, **context: Any) -> dict[str, Any]:
        """Send one prompt and return the validated JSON answer.

        Raises :class:`BadAnswer` for an answer that does not parse or validate, and
        :class:`Unavailable` when the endpoint does not answer after the retries.
        """
        prompt = render_template(f"prompts/{template}", schema=json.dumps(SCHEMAS[kind]), **context)
        return parse_answer(self._chat(prompt), kind)

    def extract(self, messages: Sequence[Message], *, segments: Sequence[int] = ()) -> list[Extracted]:
        """Ask for the memories in a conversation; an answer off the schema raises BadExtraction."""
        starts = {0, *segments}
        data = [{"id": m.id, "role": m.role, "author": m.author, "time": iso(m.time) if m.time else None,
                 "text": m.text, **({"topic_starts": True} if i in starts and len(starts) > 1 else {})}
                for i, m in enumerate(messages)]
        prompt = render_template("prompts/extract.j2", schema=json.dumps(extraction.SCHEMA, ensure_ascii=False),
                                 types=TYPES, messages=json.dumps(data, ensure_ascii=False, indent=1))
        try:
            answer = json.loads(unfence(self._chat(prompt)))
        except BadAnswer as exc:
            raise extraction.BadExtraction(str(exc)) from exc
        except (ValueError, RecursionError) as exc:
            raise extraction.BadExtraction(f"the answer is not JSON ({type(exc).__name__})") from exc
        return extraction.parse(answer, messages)

    def _chat(self, prompt: str) -> str:
        """One chat completion in JSON mode; the reply's text."""
        payload = {
            "model": self.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": render_template("prompts/system.j2")},
                {"role": "user", "content": prompt},
            ],
        }
        response = _post(self.client, f"{self.base_url}/chat/completions", payload, self.retries,
                         f"the LLM at {self.base_url}", "GITMEM_LLM_BASE_URL")
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, LookupError, TypeError, RecursionError) as exc:
            raise BadAnswer(f"not a chat-completions response ({exc})") from exc
        if not isinstance(content, str):
            raise BadAnswer("the reply has no text content")
        return content

    def merge(self, members: Sequence[Memory], *, max_chars: int, alike: bool = True) -> MergeDecision:
        """Ask for one merged memory; a bad answer is a veto (the model judges ``alike`` itself)."""
        try:
            data = self.ask("merge", "merge.j2", max_chars=max_chars,
                            memories=json.dumps([_memory_data(m) for m in members], ensure_ascii=False,
                                                indent=1))
        except BadAnswer as exc:
            return MergeDecision(None, f"vetoed: the model's answer did not parse ({exc})")
        merged, reason = data["merged"], data["reason"].strip() or "no reason given"
        if merged is None or not merged.strip():
            return MergeDecision(None, f"vetoed by the model: {reason}")
        merged = clean_answer(merged)
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
            text = clean_answer(text) if isinstance(text, str) else None
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


def llm_from_settings(settings: Settings) -> LLM:
    """The configured client, or :class:`Offline` when ``llm_base_url`` is unset."""
    if not settings.llm_base_url:
        return Offline()
    return OpenAICompatible(settings.llm_base_url, settings.llm_model, settings.llm_api_key,
                            settings.llm_timeout, settings.llm_retries)


class EmbeddingsEndpoint:
    """A client for ``POST {base_url}/embeddings``: batches, timeouts and retries."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 30.0,
                 retries: int = 2, batch: int = 64, transport: httpx.BaseTransport | None = None) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise InvalidInput(f"embeddings base URL {base_url!r} must start with http:// or https://")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"endpoint:{model}"
        self.retries = max(0, retries)
        self.batch = batch
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = _client(timeout, headers, transport)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self.client.close()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts``, ``batch`` texts per request.

        Raises :class:`Unavailable` when the endpoint refuses, does not answer after the retries,
        or answers something other than one vector of one size per text.
        """
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            rows.extend(self._batch(list(texts[start : start + self.batch])))
        if not rows:
            import numpy as np

            return np.zeros((0, 1), dtype=np.float32)
        if len({len(r) for r in rows}) != 1:
            raise Unavailable(f"the embeddings endpoint at {self.base_url} answered vectors of different sizes")
        return embeddings_port.unit(rows)

    def _batch(self, texts: list[str]) -> list[list[float]]:
        where = f"the embeddings endpoint at {self.base_url}"
        response = _post(self.client, f"{self.base_url}/embeddings", {"model": self.model, "input": texts},
                         self.retries, where, "GITMEM_EMBED_BASE_URL")
        try:
            items = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (ValueError, LookupError, TypeError, RecursionError) as exc:
            raise Unavailable(f"{where} answered something that is not an embeddings response "
                              f"({type(exc).__name__}: {exc})") from exc
        if len(vectors) != len(texts) or not all(vectors):
            raise Unavailable(f"{where} answered {plural(len(vectors), 'vector')} for {plural(len(texts), 'text')}")
        return vectors


def embeddings_from_settings(settings: Settings) -> embeddings_port.Embeddings | None:
    """The configured embeddings: none, an endpoint (``embed_base_url``), or the offline encoder."""
    if settings.embeddings == "none":
        return None
    if settings.embed_base_url:
        return EmbeddingsEndpoint(settings.embed_base_url, settings.embed_model, settings.embed_api_key,
                                  settings.embed_timeout, settings.embed_retries)
    return embeddings_port.Offline(settings.state_dir / "models")
