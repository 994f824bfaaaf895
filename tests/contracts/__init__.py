"""Contract suites: what every implementation of a port guarantees its callers, tested once for all.

A port is a Protocol in the core with an offline implementation and remote ones (the LLM port,
``gitmem/llm.py``, today; embeddings and extraction next). Its contract lives here, in a module
named after the port, as a class of tests written against the Protocol alone::

    tests/contracts/llm.py        LLMContract: the guarantees, and the inputs and model answers they are tried on
    tests/test_llm_contract.py    the fixtures that build each implementation, and
                                  class TestLLMContract(LLMContract) to run the contract against them

The test module provides two fixtures, each yielding the contract's ``Implementation`` (the object
under test, plus a handle on the model behind it, or None when nothing stands behind it):

``implementation``
    parametrised over every implementation (``params=["offline", "openai"]``); a remote one is
    pointed at its local fake server (``tests/fakes/``), answering as a well-behaved model would.
``model_backed``
    parametrised over the implementations with a model behind them; the contract makes that model
    answer badly or not at all, to pin what the port does then.

A new port follows the same shape: ``tests/contracts/<port>.py`` with a ``<Port>Contract`` class
and its ``Implementation``; ``tests/test_<port>_contract.py`` with the two fixtures and one
``Test<Port>Contract`` class; a fake of the remote service in ``tests/fakes/`` as a real local HTTP
server. A new implementation of an existing port is one more fixture parameter.

The contract holds only what callers may rely on from any implementation, read from the port's
docstrings and from how its callers use the answers; what one implementation does by its own rules
is tested in that module's own test file. When an implementation breaks the contract, fix the
implementation; do not weaken or skip the contract for it.
"""
