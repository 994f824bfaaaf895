"""Meaning, not words: sentence vectors for recall, the write gate and consolidation's candidates.

:class:`Semantics` keeps each namespace's vectors up to date (derived state, see
:mod:`gitmem.repo.vectors`) and answers three questions: which memories are nearest a query
(:meth:`Semantics.search`), which are nearest a new statement (the write gate), and which pairs
of memories are semantic neighbours (consolidation). With ``GITMEM_EMBEDDINGS=none`` it is
off, and every caller works on words alone.

Vectors are made when memories are written: at once in a process whose model is loaded (a
server), else by the workers right after (``gitmem.embed``), else by the next recall, which
embeds at most :data:`RECALL_BUDGET` texts that lack one; a plan or ``gitmem vectors`` embeds
them all. A text that has no vector yet is still found by its words.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .repo import Namespace, VectorStore
from .settings import Settings

if TYPE_CHECKING:  # numpy loads with the first vector, so commands that need none never import it
    import numpy as np

    from .embeddings import Embeddings
    from .vectorspace import Space

RECALL_BUDGET = 64
LIVE = ("active", "pending")
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Neighbours:
    """Semantic neighbour pairs of a set of texts, by text hash, and the cosine of any two of them."""

    pairs: list[tuple[str, str, float]]
    space: Space

    def cosine(self, a: str, b: str) -> float | None:
        """The cosine of two texts' vectors (None when one has none)."""
        if a in self.space.position and b in self.space.position:
            return self.space.cosine(a, b)
        return None


class Semantics:
    """Sentence vectors of every namespace, for one embeddings model (or none)."""

    def __init__(self, settings: Settings, embeddings: Callable[[], Embeddings | None]) -> None:
        """Use ``embeddings()`` (built on first need; None: semantics off)."""
        self.settings = settings
        self._factory = embeddings
        self._model: Embeddings | None = None
        self._built = False
        self._lock = threading.Lock()
        self._spaces: dict[str, tuple[tuple[str, int, int], Space]] = {}
        # Per namespace: the head at which every live memory had a vector (a recall then skips
        # the check), and how many times this process added vectors (the space's cache key).
        self._complete: dict[str, str] = {}
        self._added: dict[str, int] = {}
        self._stores: dict[str, VectorStore] = {}
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()

    @property
    def enabled(self) -> bool:
        """Whether a model is configured (``GITMEM_EMBEDDINGS`` is not ``none``)."""
        return self.settings.embeddings != "none"

    def model(self) -> Embeddings | None:
        """The embeddings model, built on first call (loading weights waits for the first text)."""
        with self._lock:
            if not self._built:
                self._model = self._factory() if self.enabled else None
                self._built = True
            return self._model

    @property
    def loaded(self) -> bool:
        """Whether this process has built its model already (so embedding a new memory costs no load)."""
        return self._built and self._model is not None

    def store(self, ns: Namespace) -> VectorStore | None:
        """The namespace's vector file for the model, or None when semantics are off."""
        model = self.model()
        if model is None:
            return None
        with self._lock:
            store = self._stores.get(ns.name)
            if store is None:
                store = VectorStore(ns.state / "vectors.sqlite", model.name)
                self._stores[ns.name] = store
            return store

    def close(self) -> None:
        """Close the vector files."""
        with self._lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()
            self._spaces.clear()

    def forget(self, ns: Namespace) -> None:
        """Drop what this process knows of a namespace's vectors (they are about to be rebuilt)."""
        with self._lock:
            self._complete.pop(ns.name, None)
            self._spaces.pop(ns.name, None)
            self._added[ns.name] = self._added.get(ns.name, 0) + 1

    # --- vectors -------------------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> np.ndarray | None:
        """Vectors for ``texts`` (None when semantics are off)."""
        model = self.model()
        return None if model is None else model.embed(list(texts))

    def query(self, text: str) -> np.ndarray | None:
        """A query's vector, remembered for the last 256 queries."""
        with self._lock:
            found = self._queries.get(text)
            if found is not None:
                self._queries.move_to_end(text)
                return found
        vectors = self.embed([text])
        if vectors is None:
            return None
        with self._lock:
            self._queries[text] = vectors[0]
            while len(self._queries) > 256:
                self._queries.popitem(last=False)
        vector: np.ndarray = vectors[0]
        return vector

    def fill(self, ns: Namespace, budget: int | None = None, progress: Progress | None = None) -> int:
        """Embed the live memories' texts that have no vector yet (at most ``budget``); how many."""
        store = self.store(ns)
        model = self.model()
        if store is None or model is None:
            return 0
        head = ns.index.indexed_commit() or ""
        if self._complete.get(ns.name) == head:
            return 0
        hashes = ns.index.hashes(states=LIVE)
        missing = sorted(set(hashes) - store.known(hashes))
        if budget is None or len(missing) <= budget:
            self._complete[ns.name] = head  # set before embedding: a failure below clears it
        else:
            missing = missing[:budget]
        done = 0
        for start in range(0, len(missing), 256):
            part = missing[start : start + 256]
            texts = ns.index.texts(part)
            keys = [h for h in part if h in texts]
            if keys:
                try:
                    store.put(keys, model.embed([texts[h] for h in keys]))
                except BaseException:
                    self._complete.pop(ns.name, None)
                    raise
                with self._lock:
                    self._added[ns.name] = self._added.get(ns.name, 0) + 1
            done += len(keys)
            if progress is not None:
                progress(done, len(missing))
        return done

    def space(self, ns: Namespace) -> Space | None:
        """The live memories' vectors as a searchable space, kept per head commit in this process."""
        store = self.store(ns)
        if store is None:
            return None
        # Another process (a second web worker, `gitmem vectors`) may have embedded what this one
        # lacks without a commit: its writes change the file's data_version, this process's `_added`.
        stamp = (ns.index.indexed_commit() or "", self._added.get(ns.name, 0), store.version())
        with self._lock:
            cached = self._spaces.get(ns.name)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        import numpy as np

        from .vectorspace import Space
        hashes = ns.index.hashes(states=LIVE)
        old = cached[1] if cached is not None else None
        reuse = [h for h in hashes if old is not None and h in old.position]
        fresh = store.get([h for h in hashes if old is None or h not in old.position])
        keys = reuse + sorted(fresh)
        parts = []
        if reuse and old is not None:
            parts.append(old.matrix[[old.position[h] for h in reuse]])
        if fresh:
            parts.append(np.vstack([fresh[h] for h in sorted(fresh)]))
        matrix = np.vstack(parts) if parts else np.zeros((0, 1), dtype=np.float32)
        space = Space(keys, matrix)
        with self._lock:
            self._spaces[ns.name] = (stamp, space)
        return space

    def search(self, ns: Namespace, text: str, k: int, floor: float) -> list[tuple[str, float]]:
        """Text hashes of the live memories nearest ``text``, with their cosines, nearest first."""
        if not self.enabled:
            return []
        self.fill(ns, budget=RECALL_BUDGET)
        space = self.space(ns)
        vector = self.query(text)
        if space is None or vector is None:
            return []
        return space.search(vector, k, floor)

    def nearest(self, ns: Namespace, text: str, k: int, also: Sequence[str] = ()) -> dict[str, float]:
        """The cosine of ``text`` to its ``k`` nearest live memories and to the texts ``also`` names (by hash)."""
        if not self.enabled:
            return {}
        self.fill(ns, budget=RECALL_BUDGET)
        space = self.space(ns)
        vector = self.query(text)
        if space is None or vector is None:
            return {}
        found = dict(space.search(vector, k))
        missing = [h for h in also if h not in found]
        found.update(space.cosines(vector, missing))
        return found

    def neighbours(self, ns: Namespace, hashes: Sequence[str], threshold: float, k: int,
                   progress: Progress | None = None) -> Neighbours | None:
        """Neighbour pairs among ``hashes`` (the memories a plan looks at), kept up to date incrementally."""
        store = self.store(ns)
        if store is None:
            return None
        self.fill(ns, progress=progress)
        import numpy as np

        from .vectorspace import Space, neighbour_pairs

        vectors = store.get(list(hashes))
        keys = sorted(vectors)
        if not keys:
            return Neighbours([], Space([], np.zeros((0, 1), dtype=np.float32)))
        space = Space(keys, np.vstack([vectors[h] for h in keys]), searchable=False)
        store.settings_for_pairs(threshold, k)
        members = store.members()
        current = set(keys)
        touched = store.leave(members - current)
        members &= current
        rows = [space.position[h] for h in keys if h not in members or h in touched]
        found = neighbour_pairs(space.matrix, rows, threshold, k)
        store.join((keys[i] for i in rows), ((keys[i], keys[j], c) for i, j, c in found))
        pairs = [(a, b, c) for a, b, c in store.pairs() if a in current and b in current]
        return Neighbours(pairs, space)
