"""The LLM port's contract (tests/contracts/llm.py), run against every implementation of the port."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from gitmem.endpoints import OpenAICompatible
from gitmem.llm import Offline
from tests.contracts.llm import (
    CLUSTERS,
    JUDGEMENTS,
    LIMITS,
    PAIRS,
    Backend,
    Implementation,
    LLMContract,
    plausible,
)
from tests.fakes.openai_server import FakeOpenAI, running

IMPLEMENTATIONS = ["offline", "openai"]
MODEL_BACKED = ["openai"]  # those with a model behind them, which the contract makes misbehave


class FakeModel:
    """The model behind OpenAICompatible: the local fake of a chat-completions endpoint."""

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake

    def become(self, backend: Backend) -> None:
        if backend.reply is None:
            self.fake.stop()
        else:
            self.fake.responder = backend.reply


@contextmanager
def implementation_named(name: str) -> Iterator[Implementation]:
    """Build one implementation; a remote one talks to its fake, answering as a well-behaved model."""
    if name == "offline":
        yield Implementation(Offline())
    elif name == "openai":
        with running(plausible) as fake:
            # No retries and a short timeout: a backend that does not answer fails fast.
            llm = OpenAICompatible(fake.url, "contract-model", "sk-contract", timeout=1.0, retries=0)
            try:
                yield Implementation(llm, FakeModel(fake))
            finally:
                llm.close()
    else:
        raise ValueError(f"no implementation named {name!r}")


@pytest.fixture(params=IMPLEMENTATIONS)
def implementation(request: pytest.FixtureRequest) -> Iterator[Implementation]:
    with implementation_named(request.param) as built:
        yield built


@pytest.fixture(params=MODEL_BACKED)
def model_backed(request: pytest.FixtureRequest) -> Iterator[Implementation]:
    with implementation_named(request.param) as built:
        assert built.model is not None, f"{request.param} has no model to script"
        yield built


class TestLLMContract(LLMContract):
    """Offline and OpenAICompatible keep the LLM port's contract."""


def test_the_well_behaved_model_gives_every_kind_of_answer() -> None:
    # Otherwise the contract would pass for OpenAICompatible on vetoes alone.
    with implementation_named("openai") as openai:
        llm = openai.llm
        merges = [llm.merge(members, max_chars=limit) for members in CLUSTERS.values() for limit in LIMITS]
        actions = {llm.pair(*pair, max_chars=limit).action for pair in PAIRS.values() for limit in LIMITS}
        verdicts = {(question, llm.judge(memory, question=question, score=score).verdict)
                    for memory, question, score in JUDGEMENTS.values()}
    assert {d.text is None for d in merges} == {True, False}
    assert any(d.text not in {m.text for members in CLUSTERS.values() for m in members} for d in merges)
    assert actions == {"update", "delete", "ignore"}
    assert verdicts == {("never_used", "keep"), ("never_used", "archive"),
                        ("pending", "promote"), ("pending", "discard"), ("pending", "keep")}
