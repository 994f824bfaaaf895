"""The facade's parts built on first use: consolidation, ingestion, the graph, and the ports.

``gitmem show``, ``gitmem log`` or an agent's session-start hook need none of them, and importing
them (with the LLM port, extraction and word diffs behind them) would cost every command tens of
milliseconds. So :class:`Deferred`, the base of :class:`gitmem.service.MemoryService`, imports and
builds each one the first time a method needs it, and the ports' adapters (httpx, redis) load
only when a model or a shared lease is asked for.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

from .errors import Unavailable

if TYPE_CHECKING:
    from datetime import datetime

    from .consolidate import Consolidation, Plan
    from .embeddings import Embeddings
    from .graph import Graph, Graphs
    from .ingest import Distilled, Ingest
    from .llm import LLM
    from .memories import Memories
    from .repo import Leases, Namespaces
    from .reviews import Reviews
    from .semantic import Semantics
    from .settings import Settings

log = logging.getLogger(__name__)


class Deferred:
    """What the facade builds when first asked: its subclass sets the attributes declared here."""

    settings: Settings
    reviews: Reviews
    _namespaces: Namespaces
    _memories: Memories
    _semantics: Semantics

    @functools.cached_property
    def _consolidation(self) -> Consolidation:
        from .consolidate import Consolidation

        return Consolidation(self._namespaces, self._memories, self.reviews, self.settings, self._llm,
                             self._leases, self._semantics)

    @functools.cached_property
    def _ingest(self) -> Ingest:
        from .ingest import Ingest

        return Ingest(self._namespaces, self._memories, self.settings, self._llm, self._semantics)

    @functools.cached_property
    def _graphs(self) -> Graphs:
        from .graph import Graphs

        return Graphs(self._namespaces, self.settings, self._semantics)

    def plan(self, namespace: str, *, strict: bool | None = None) -> Plan:
        """What a consolidation run would do, changing nothing (see :meth:`gitmem.consolidate.Consolidation.plan`)."""
        return self._consolidation.plan(namespace, strict=strict)

    def should_trigger(self, namespace: str, at: datetime | None = None) -> bool:
        """Whether the trigger rule says a consolidation run is due in ``namespace``."""
        return self._consolidation.should_trigger(namespace, at)

    def consolidation_open(self, namespace: str) -> bool:
        """Whether a consolidation review of ``namespace`` is waiting for a decision."""
        return self._consolidation.open_review(namespace)

    def distil(self, namespace: str, buffer_id: str) -> Distilled:
        """Distil one sealed buffer of a conversation into memories (see :mod:`gitmem.ingest`)."""
        return self._ingest.distil(namespace, buffer_id)

    def ingest_status(self, namespace: str) -> dict[str, Any]:
        """Ingestion's counts in ``namespace``: messages taken, repeats, masked secrets, buffers."""
        return self._ingest.stats(namespace)

    def graph(self, namespace: str, *, similar: bool | None = None, embed_at_most: int | None = None) -> Graph:
        """The memory graph of ``namespace`` (see :meth:`gitmem.graph.Graphs.graph`)."""
        return self._graphs.graph(namespace, similar=similar, embed_at_most=embed_at_most)

    def warm_up(self) -> None:
        """Load the offline encoder now (a server calls this on a thread, so no recall waits for it).

        Nothing for an endpoint (it would cost a request) or with semantics off; a failure is left
        for the first recall that needs the model, which reports it.
        """
        from .embeddings import Offline

        model = self._semantics.model()
        if isinstance(model, Offline):
            try:
                model.load()
            except Unavailable as exc:
                log.warning("the encoder did not load: %s", exc)

    def _leases(self) -> Leases | None:
        """The consolidation leases on the Redis hosts share, or None (the file lock alone)."""
        from .repo.leases import shared_leases  # redis loads only when hosts share one

        return shared_leases(self.settings)

    def _llm(self) -> LLM:
        """The configured model, or the offline rules (the HTTP client loads only when configured)."""
        from .endpoints import llm_from_settings

        return llm_from_settings(self.settings)

    def _embeddings(self) -> Embeddings | None:
        """The configured embeddings model (the HTTP client loads only when an endpoint is set)."""
        from .endpoints import embeddings_from_settings

        return embeddings_from_settings(self.settings)
