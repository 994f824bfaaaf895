"""Reading other memory stores into candidates for the write gate: OKF, pi-memory-spaced, basic-memory, mem0.

A source is a set of files, relative path -> text: a folder read from disk (:func:`read_source`),
or the files an API request carries. :func:`read` turns one into :class:`Item` s, each a
:class:`~gitmem.memories.Candidate` with the source's own key for it and the keys it links to
(kept as ``related`` once the links' memory ids are known), and :class:`Problem` s for what could
not be read at all. Nothing here writes: :meth:`gitmem.service.MemoryService.import_memories`
puts the items through the write gate in one commit. The readers are :mod:`.okf` and
:mod:`.stores`, over what :mod:`.items` shares.

What each format carries over:

- ``okf`` (pi-okf-memory's folders): a folder per type (``fact/``, ``decision/``, ``techchoice/``
  ...), each concept a Markdown file with OKF frontmatter (``type``, ``title``, ``tags``);
  ``.meta/weights.json`` gives each concept's learned weight (0.05 to 10, new at 1.0, archived
  below 0.3, already decayed by its own clock), carried into potency (:func:`weight_to_potency`),
  and its use count; links ``[text](/fact/x.md)`` become ``related``. A TechChoice becomes a
  techchoice: its Options table's rows its options (pi-okf-memory's 候选, 说明, 配置要点, 状态 as
  name, description, configuration notes and status; pros and cons columns too) and its Active
  line, ``- 当前使用:X``, the active one; without two such options or an active one it becomes a
  decision that keeps its text (see :mod:`.okf`).
- ``pi-memory-spaced`` (``memory-store.json``): each memory's content, type, paths, tags,
  potency, creation, last injection, access count and tenure; its ``user`` and ``manual``
  memories stay the user's own (never merged automatically), ``auto`` ones are imports.
- ``basic-memory`` (a project folder): each note (frontmatter ``title``, ``type``, ``tags``,
  ``permalink``) is one memory; ``[[wiki links]]`` to other notes of the project become
  ``related``.
- ``mem0`` (an export of memories as JSON: a list, or ``{"results": [...]}`` as ``get_all``
  returns it): each memory's text, ``categories`` as tags, ``metadata.type``/``paths``/``tags``,
  ``user_id`` or ``agent_id`` as author.

Only pi-memory-spaced shares gitmem's potency model (x0.95 a day from the last use), so only its
times are kept: for the others a memory's clock starts at the import, since a creation date in
the past would decay a memory never used since to nothing on arrival.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from ..concepts import new_id
from ..errors import InvalidInput
from ..memories import Memories, Outcome, count_outcomes
from ..repo import Namespaces
from ..wording import plural
from .items import Item, Problem
from .okf import read_okf, weight_to_potency
from .stores import read_basic_memory, read_mem0, read_pi_memory_spaced

__all__ = ["FORMATS", "ImportReport", "Imported", "Importer", "Item", "Problem", "check_files", "check_format",
           "item_digest", "read", "read_source", "weight_to_potency"]

FORMATS = ("okf", "pi-memory-spaced", "basic-memory", "mem0")
MAX_FILES = 20_000
MAX_FILE_BYTES = 1 << 20
_UNREADABLE = {"\x00too large": "too large (over 1 MiB)", "\x00not UTF-8": "not UTF-8 text",
               "\x00outside": "a symbolic link to outside the folder: not followed"}


# --- the import -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Imported(Outcome):
    """What became of one item of the source: the write gate's outcome, and a note on what was kept."""

    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**super().to_dict(), "note": self.note}


@dataclass(frozen=True)
class ImportReport:
    """An import: its one commit (None when nothing changed or on a dry run) and an entry per item.

    ``new_namespace``: the namespace did not exist before; the import made it (a dry run: would make it).
    """

    namespace: str
    format: str
    commit: str | None
    dry_run: bool
    items: tuple[Imported, ...]
    new_namespace: bool = False

    def counts(self) -> dict[str, int]:
        """How many items had each outcome (every outcome named, zeros included)."""
        return count_outcomes(self.items)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: namespace, format, commit, dry_run, counts and every item."""
        return {"namespace": self.namespace, "format": self.format, "commit": self.commit, "dry_run": self.dry_run,
                "new_namespace": self.new_namespace, "counts": self.counts(),
                "items": [i.to_dict() for i in self.items]}


class Importer:
    """Puts a source's items through the write gate of a namespace, in one commit."""

    def __init__(self, memories: Memories, namespaces: Namespaces) -> None:
        """Write through ``memories`` (its ``remember_many``); read earlier imports in ``namespaces``."""
        self.memories = memories
        self.namespaces = namespaces

    def run(self, namespace: str, fmt: str, files: Mapping[str, str], *, dry_run: bool = False,
            actor: str | None = None, origin: str = "", create: bool = False) -> ImportReport:
        """Import ``files`` (relative path -> text) of format ``fmt`` into ``namespace``.

        One commit holds the whole import (a revert of it undoes it). Every new item goes
        through the write gate: text already stored reinforces its memory, a statement that
        says the same as one is merged into it, a bad item is ``refused`` with the reason and
        the rest go on. An item an earlier import of the same format brought in (unchanged, and
        that import not reverted) is ``skipped``, so a second run changes nothing. Links become
        ``related``, to the memory each linked item became. ``origin`` names the source in the
        commit message; ``create`` makes the namespace when it has none, once the source has
        been read (a dry run makes none: it reports what the import would do in a new, empty one).
        """
        fmt = check_format(fmt)
        new = create and not self.namespaces.exists(namespace)
        if new and dry_run:
            # The write gate run for real, on an empty namespace of that name thrown away after:
            # the report is what the import would do, and nothing is created.
            with self.namespaces.scratch(namespace) as empty:
                report = Importer(Memories(empty, self.memories.settings), empty).run(
                    namespace, fmt, files, dry_run=True, actor=actor, origin=origin)
            return replace(report, new_namespace=True)
        items, problems = read(fmt, files)
        if new:
            self.namespaces.init(namespace)
        seen = self.imported(namespace, fmt)
        digests = [item_digest(fmt, item) for item in items]
        fresh = [n for n, digest in enumerate(digests) if digest not in seen]
        # Ids known before the write, so links can name the memories their targets become.
        given = {n: replace(items[n].candidate, id=new_id()) for n in fresh}
        message = f"import: {plural(len(fresh), fmt + ' item')}" + (
            f" from {origin}" if origin else "")
        first = self.memories.remember_many(namespace, list(given.values()), message=message, actor=actor,
                                            dry_run=True) if given else None
        planned = dict(zip(fresh, first.outcomes if first else (), strict=True))
        became = {items[n].key: seen[digests[n]][0] for n in range(len(items)) if digests[n] in seen}
        became |= {items[n].key: o.memory_id for n, o in planned.items() if o.outcome != "refused" and o.memory_id}
        notes = [item.note for item in items]
        linked = []
        for n, candidate in given.items():
            targets = [target for key in items[n].links if (target := became.get(key))]
            missing = [key for key in items[n].links if key not in became]
            if missing:
                notes[n] = "; ".join(part for part in (notes[n], "links to " + ", ".join(missing) + " not imported")
                                     if part)
            linked.append(replace(candidate, related=tuple(dict.fromkeys(t for t in targets if t != candidate.id))))
        outcomes = planned
        commit = None
        if not dry_run and linked:
            trailers = [("Import-Format", fmt)] + [
                ("Import-Item", f"{digests[n]} {o.memory_id}") for n, o in planned.items()
                if o.outcome != "refused" and o.memory_id]
            result = self.memories.remember_many(namespace, linked, message=message, actor=actor, trailers=trailers)
            outcomes = dict(zip(fresh, result.outcomes, strict=True))
            commit = result.commit
        out = []
        for n, item in enumerate(items):
            if n in outcomes:
                o = outcomes[n]
                out.append(Imported(o.label, o.outcome, o.memory_id, o.reason, o.proposed, note=notes[n]))
            else:
                memory_id, where = seen[digests[n]]
                out.append(Imported(item.candidate.label or item.key, "skipped", memory_id,
                                    f"imported before, in {where[:10]}", note=notes[n]))
        out += [Imported(p.label, "refused", None, p.reason) for p in problems]
        return ImportReport(namespace, fmt, commit, dry_run, tuple(out), new)

    def imported(self, namespace: str, fmt: str) -> dict[str, tuple[str, str]]:
        """The items earlier imports of ``fmt`` brought into ``namespace`` and that are still there.

        Digest -> (the memory it became, the import commit), from the ``Import-Item`` trailers
        of import commits on main, leaving out imports that were reverted.
        """
        found: dict[str, tuple[str, str]] = {}
        reverted: set[str] = set()
        with self.namespaces.using(namespace) as ns:
            for commit in ns.store.log():
                info = ns.store.info(commit)
                reverted.update(info.trailers.get("Reverts", ()))
                if info.action != "import" or info.id in reverted or fmt not in info.trailers.get("Import-Format", ()):
                    continue
                for value in info.trailers.get("Import-Item", ()):
                    digest, _, memory_id = value.partition(" ")
                    found.setdefault(digest, (memory_id, info.id))
        return found


def item_digest(fmt: str, item: Item) -> str:
    """What identifies an item across imports: its format, its key in the source and its text."""
    text = " ".join(item.candidate.text.split())
    return hashlib.sha256(f"{fmt}\0{item.key}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


# --- the source ------------------------------------------------------------------------------------


def check_format(fmt: Any) -> str:
    """Validate an import format's name."""
    if not isinstance(fmt, str) or fmt.strip().lower() not in FORMATS:
        raise InvalidInput(f"unknown import format {fmt!r}; use one of: {', '.join(FORMATS)}")
    return fmt.strip().lower()


def check_files(files: Any) -> dict[str, str]:
    """Validate files given as relative path -> text (the API's form of a source)."""
    if not isinstance(files, dict) or not files:
        raise InvalidInput("'files' must be an object of relative path -> file text, with at least one file")
    if len(files) > MAX_FILES:
        raise InvalidInput(f"more than {MAX_FILES} files; import them in parts")
    out: dict[str, str] = {}
    for name, text in files.items():
        if not isinstance(text, str):
            raise InvalidInput(f"file {name!r}: its text must be a string")
        path = PurePosixPath(str(name).replace("\\", "/"))
        if path.is_absolute() or ".." in path.parts or not path.parts or re.search(r"[\x00-\x1f\ud800-\udfff]", name):
            raise InvalidInput(f"file name {name!r} must be a relative path inside the source")
        out[str(path)] = text
    return out


def read_source(path: Path, fmt: str) -> dict[str, str]:
    """The files of a source on disk: a folder (okf, basic-memory; or one holding the JSON), or a JSON file."""
    fmt = check_format(fmt)
    if not path.exists():
        raise InvalidInput(f"{path} does not exist; give the folder or file to import")
    if path.is_file():
        if fmt in ("okf", "basic-memory"):
            raise InvalidInput(f"{fmt} imports a folder; {path} is a file")
        return {path.name: _read_text(path)}
    files: dict[str, str] = {}
    root = path.resolve()
    if fmt in ("pi-memory-spaced", "mem0"):
        wanted = ["memory-store.json"] if fmt == "pi-memory-spaced" else sorted(p.name for p in path.glob("*.json"))
        for name in wanted:
            if (path / name).is_file():
                files[name] = _read_text(path / name, root)
        if not files:
            raise InvalidInput(f"{path} holds no {'memory-store.json' if fmt == 'pi-memory-spaced' else '.json file'}"
                               "; give the JSON file itself")
        return files
    for file in sorted(path.rglob("*")):
        rel = file.relative_to(path)
        hidden = any(part.startswith(".") for part in rel.parts[:-1] if part != ".meta")
        if hidden or not file.is_file():
            continue
        if file.suffix == ".md" or rel.as_posix() == ".meta/weights.json":
            if len(files) >= MAX_FILES:
                raise InvalidInput(f"{path} holds more than {MAX_FILES} files; import it in parts")
            files[rel.as_posix()] = _read_text(file, root)
    if not any(name.endswith(".md") for name in files):
        raise InvalidInput(f"{path} holds no Markdown files; is it a{'n OKF' if fmt == 'okf' else ' basic-memory'} "
                           "folder?")
    return files


def _read_text(path: Path, root: Path | None = None) -> str:
    """A source file's text, or a key of ``_UNREADABLE`` saying why not.

    ``root``: the folder being imported; a symbolic link that leads out of it is not followed (it
    would import whatever file the link names, ``~/.ssh/id_rsa`` or another team's notes).
    """
    try:
        if root is not None and not path.resolve().is_relative_to(root):
            return "\x00outside"
        if path.stat().st_size > MAX_FILE_BYTES:
            return "\x00too large"  # a key of _UNREADABLE
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return "\x00not UTF-8"
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from None


def read(fmt: str, files: Mapping[str, str], *, at: datetime | None = None) -> tuple[list[Item], list[Problem]]:
    """The items of a source in format ``fmt``, and the problems of what could not be read.

    Raises :class:`~gitmem.errors.InvalidInput` when the source as a whole is not of that format.
    """
    fmt = check_format(fmt)
    problems = [Problem(name, _UNREADABLE[text]) for name, text in files.items() if text in _UNREADABLE]
    good = {name: text for name, text in files.items() if text not in _UNREADABLE}
    if fmt == "okf":
        items = read_okf(good, problems)
    elif fmt == "basic-memory":
        items = read_basic_memory(good, problems)
    elif fmt == "pi-memory-spaced":
        items = read_pi_memory_spaced(good, problems)
    else:
        items = read_mem0(good, problems)
    return items, problems
