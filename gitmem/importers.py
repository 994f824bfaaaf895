"""Reading other memory stores into candidates for the write gate: OKF, pi-memory-spaced, basic-memory, mem0.

A source is a set of files, relative path -> text: a folder read from disk (:func:`read_source`),
or the files an API request carries. :func:`read` turns one into :class:`Item` s, each a
:class:`~gitmem.memories.Candidate` with the source's own key for it and the keys it links to
(kept as ``related`` once the links' memory ids are known), and :class:`Problem` s for what could
not be read at all. Nothing here writes: :meth:`gitmem.service.MemoryService.import_memories`
puts the items through the write gate in one commit.

What each format carries over:

- ``okf`` (pi-okf-memory's folders): a folder per type (``fact/``, ``decision/``, ``techchoice/``
  ...), each concept a Markdown file with OKF frontmatter (``type``, ``title``, ``tags``);
  ``.meta/weights.json`` gives each concept's learned weight (0.05 to 10, new at 1.0, archived
  below 0.3, already decayed by its own clock), carried into potency (:func:`weight_to_potency`),
  and its use count; links ``[text](/fact/x.md)`` become ``related``. A TechChoice whose
  Options table has pros and cons columns becomes a techchoice with its options; one without
  them (pi-okf-memory's own table has none) becomes a decision that keeps the table in its text.
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
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from . import concepts
from .concepts import TYPES, Option, new_id, parse_time
from .errors import InvalidInput
from .memories import Candidate, Memories, Outcome, count_outcomes
from .repo import Namespaces
from .wording import plural

FORMATS = ("okf", "pi-memory-spaced", "basic-memory", "mem0")
MAX_FILES = 20_000
MAX_FILE_BYTES = 1 << 20
_FRONTMATTER = re.compile(r"^\ufeff?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)(.*)$", re.DOTALL)
_OKF_LINK = re.compile(r"\[[^\]\n]*\]\((/[^)\s]+?\.md)\)")
_WIKI_LINK = re.compile(r"\[\[([^\]\n|#]+)(?:#[^\]\n|]*)?(?:\|[^\]\n]*)?\]\]")
_UNREADABLE = {"\x00too large": "too large (over 1 MiB)", "\x00not UTF-8": "not UTF-8 text"}
_ACTIVE_LINE = re.compile(r"^\s*[-*]?\s*(?:当前使用|当前|active|current|chosen)\s*[:：]\s*(.+?)\s*$", re.IGNORECASE)
_PROS = ("pros", "pro", "advantages", "优点", "优势", "好处")
_CONS = ("cons", "con", "disadvantages", "缺点", "劣势", "不足")
_NAMES = ("option", "options", "name", "候选", "选项", "方案")


@dataclass(frozen=True)
class Item:
    """One memory read from a source: its candidate, its key in the source, the keys it links to."""

    key: str
    candidate: Candidate
    links: tuple[str, ...] = ()
    note: str = ""  # what the reader changed on the way (a conversion), for the report


@dataclass(frozen=True)
class Problem:
    """Something in the source that could not become a candidate at all, and why."""

    label: str
    reason: str


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
                out.append(Imported(o.label, o.outcome, o.memory_id, o.reason, notes[n]))
            else:
                memory_id, where = seen[digests[n]]
                out.append(Imported(item.candidate.label or item.key, "skipped", memory_id,
                                    f"imported before, in {where[:10]}", notes[n]))
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
    if fmt in ("pi-memory-spaced", "mem0"):
        wanted = ["memory-store.json"] if fmt == "pi-memory-spaced" else sorted(p.name for p in path.glob("*.json"))
        for name in wanted:
            if (path / name).is_file():
                files[name] = _read_text(path / name)
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
            files[rel.as_posix()] = _read_text(file)
    if not any(name.endswith(".md") for name in files):
        raise InvalidInput(f"{path} holds no Markdown files; is it a{'n OKF' if fmt == 'okf' else ' basic-memory'} "
                           "folder?")
    return files


def _read_text(path: Path) -> str:
    try:
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
        items = _okf(good, problems)
    elif fmt == "basic-memory":
        items = _basic_memory(good, problems)
    elif fmt == "pi-memory-spaced":
        items = _pi_memory_spaced(good, problems)
    else:
        items = _mem0(good, problems)
    return items, problems


# --- shared pieces -----------------------------------------------------------------------------------


def _frontmatter(text: str) -> tuple[dict[str, Any] | None, str]:
    """A leading YAML mapping and the text below it; (None, text) without one; InvalidInput when broken."""
    match = _FRONTMATTER.match(text)
    if not match:
        return None, text
    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise InvalidInput("its frontmatter is not valid YAML: " + " ".join(str(exc).split())) from None
    if meta is None:
        return {}, match.group(2)
    if not isinstance(meta, dict):
        raise InvalidInput("its frontmatter is not a mapping of fields")
    return meta, match.group(2)


def _strings(value: Any) -> tuple[str, ...]:
    """A list of strings from a YAML or JSON value: a list, or one comma-separated string."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list | tuple):
        return tuple(str(v).strip() for v in value if v is not None and str(v).strip())
    return (str(value),)


def _time(value: Any) -> datetime | None:
    """A time from ISO 8601 text, a YAML date, or milliseconds since 1970 (JavaScript's Date.now())."""
    if value is None or value == "" or value == 0:
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(value / 1000, UTC).replace(microsecond=0)
        if hasattr(value, "year") and not isinstance(value, datetime):
            return datetime(value.year, value.month, value.day, tzinfo=UTC)
        moment = parse_time(value)
    except (ValueError, OverflowError, OSError, TypeError):
        return None
    return None if moment is None else moment.astimezone(UTC).replace(microsecond=0)


def _type(value: Any, default: str = "fact") -> str | None:
    name = str(value or "").strip().lower().replace("-", "").replace("_", "").replace(" ", "")
    return name if name in TYPES else (None if value else default)


def _title(meta: Mapping[str, Any], fallback: str) -> str:
    title = meta.get("title")
    return " ".join(str(title).split()) if title else fallback


# --- OKF (pi-okf-memory) ---------------------------------------------------------------------------


def weight_to_potency(weight: float) -> float:
    """pi-okf-memory's learned weight on gitmem's potency scale, keeping each side's landmarks.

    Its archive line 0.3 is gitmem's 0.10, a new concept's 1.0 is a new memory's 0.8, and its
    ceiling 10 is 1.0; linear in between.
    """
    w = max(0.0, min(10.0, float(weight)))
    if w <= 0.3:
        value = w / 0.3 * 0.10
    elif w <= 1.0:
        value = 0.10 + (w - 0.3) / 0.7 * 0.70
    else:
        value = 0.80 + (w - 1.0) / 9.0 * 0.20
    return round(value, 4)


def _okf(files: Mapping[str, str], problems: list[Problem]) -> list[Item]:
    weights: dict[str, Any] = {}
    if ".meta/weights.json" in files:
        try:
            meta = json.loads(files[".meta/weights.json"])
            entries = meta.get("entries") if isinstance(meta, dict) else None
            if not isinstance(entries, dict):
                raise ValueError("no 'entries' object")
            weights = entries
        except (json.JSONDecodeError, ValueError) as exc:
            problems.append(Problem(".meta/weights.json", f"not pi-okf-memory's weights ({exc}); weights left out"))
    items: list[Item] = []
    for name, text in sorted(files.items()):
        path = PurePosixPath(name)
        if path.suffix != ".md" or len(path.parts) < 2:
            continue  # index.md and log.md at the root describe the bundle
        key = str(path.with_suffix(""))
        try:
            meta, body = _frontmatter(text)
        except InvalidInput as exc:
            problems.append(Problem(name, str(exc)))
            continue
        if meta is None:
            problems.append(Problem(name, "no OKF frontmatter (a 'type' between '---' lines)"))
            continue
        memory_type = _type(meta.get("type"), "") or _type(path.parts[0], "") or None
        if memory_type is None:
            problems.append(Problem(name, f"type {meta.get('type')!r} is none of gitmem's: {', '.join(TYPES)}"))
            continue
        body = body.strip()
        candidate = Candidate(body, type=memory_type, title=_title(meta, path.stem), tags=_strings(meta.get("tags")),
                              label=name)
        note = ""
        if memory_type == "techchoice":
            candidate, note = _okf_techchoice(candidate, body)
        entry = weights.get(key)
        if isinstance(entry, dict):
            candidate, more = _okf_weight(candidate, entry)
            note = "; ".join(n for n in (note, more) if n)
        links = tuple(dict.fromkeys(link.lstrip("/").removesuffix(".md") for link in _OKF_LINK.findall(body)))
        items.append(Item(key, candidate, tuple(link for link in links if link != key), note))
    return items


def _okf_weight(candidate: Candidate, entry: Mapping[str, Any]) -> tuple[Candidate, str]:
    weight = entry.get("weight")
    if not isinstance(weight, int | float) or isinstance(weight, bool):
        return candidate, "its weight is not a number; potency left at gitmem's default"
    count = entry.get("accessCount")
    # The weight is already decayed by pi-okf-memory's own clock: it is the potency now, and
    # gitmem's decay starts from the import (no creation or last use in the past to decay from).
    changed = replace(candidate, potency=weight_to_potency(weight),
                      access_count=count if isinstance(count, int) and not isinstance(count, bool) and count >= 0
                      else None)
    note = ""
    if entry.get("state") == "inactive":
        note = f"inactive in the source (weight {weight}): potency {changed.potency}, never recalled"
    return changed, note


def _table(body: str) -> tuple[list[str], list[list[str]]]:
    """The first Markdown table in ``body``: its header cells and rows."""
    rows: list[list[str]] = []
    header: list[str] = []
    for line in body.splitlines():
        stripped = line.strip()
        if not (stripped.startswith("|") and stripped.endswith("|")):
            if header:
                break
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", stripped[1:-1])]
        if not header:
            header = cells
        elif all(re.fullmatch(r":?-{1,}:?", c) for c in cells if c):
            continue
        else:
            rows.append(cells)
    return header, rows


def _column(header: list[str], names: Iterable[str]) -> int | None:
    wanted = {n.casefold() for n in names}
    return next((i for i, cell in enumerate(header) if cell.strip("* ").casefold() in wanted), None)


def _okf_techchoice(candidate: Candidate, body: str) -> tuple[Candidate, str]:
    """A TechChoice's Options table and Active line as options; a decision when they say no pros and cons."""
    header, rows = _table(body)
    name_at = _column(header, _NAMES)
    pros_at, cons_at = _column(header, _PROS), _column(header, _CONS)
    active = next((m.group(1).strip() for m in map(_ACTIVE_LINE.match, body.splitlines()) if m), None)
    if name_at is None and header:
        name_at = 0
    if name_at is None or pros_at is None or cons_at is None or len(rows) < concepts.MIN_OPTIONS:
        columns = ", ".join(header) if header else "no table"
        return (replace(candidate, type="decision"),
                f"a TechChoice without pros and cons for two or more options ({columns}): imported as a decision "
                "with its text as it was")

    def split(cell: str) -> list[str]:
        return [part.strip() for part in re.split(r"[;；、]|<br\s*/?>", cell) if part.strip()]

    options = []
    for row in rows:
        if len(row) <= max(name_at, pros_at, cons_at) or not row[name_at].strip():
            continue
        options.append(Option(row[name_at].strip("* "), tuple(split(row[pros_at])), tuple(split(row[cons_at]))))
    chosen = active if active else None
    if chosen is not None:
        found = concepts.find_option(options, chosen)
        chosen = found.name if found else chosen
    return replace(candidate, options=tuple(options), active=chosen,
                   choice_reason="imported from OKF"), ""


# --- basic-memory --------------------------------------------------------------------------------------


def _basic_memory(files: Mapping[str, str], problems: list[Problem]) -> list[Item]:
    notes: list[tuple[str, dict[str, Any], str]] = []
    for name, text in sorted(files.items()):
        if not name.endswith(".md"):
            continue
        try:
            meta, body = _frontmatter(text)
        except InvalidInput as exc:
            problems.append(Problem(name, str(exc)))
            continue
        notes.append((name, meta or {}, body.strip()))
    # A wiki link names a note by its title, permalink, file name or path.
    names: dict[str, str] = {}
    for name, meta, _ in notes:
        path = PurePosixPath(name)
        for alias in (_title(meta, path.stem), str(meta.get("permalink") or ""), path.stem, str(path.with_suffix(""))):
            if alias:
                names.setdefault(alias.casefold(), name)
    items = []
    for name, meta, body in notes:
        path = PurePosixPath(name)
        memory_type = _type(meta.get("type"))
        note = ""
        if memory_type is None:
            if str(meta.get("type")).lower() != "note":  # basic-memory's own default type
                note = f"type {meta.get('type')!r} is none of gitmem's: imported as a fact"
            memory_type = "fact"
        links = []
        for target in _WIKI_LINK.findall(body):
            found = names.get(target.strip().casefold())
            if found is None:
                note = "; ".join(n for n in (note, f"[[{target.strip()}]] names no note of the project") if n)
            elif found != name and found not in links:
                links.append(found)
        candidate = Candidate(body, type=memory_type, title=_title(meta, path.stem), tags=_strings(meta.get("tags")),
                              label=name)
        items.append(Item(name, candidate, tuple(links), note))
    return items


# --- the JSON stores ----------------------------------------------------------------------------------


def _json(files: Mapping[str, str], what: str) -> list[tuple[str, Any]]:
    out = []
    for name, text in sorted(files.items()):
        try:
            out.append((name, json.loads(text)))
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{name} is not valid JSON ({exc.msg}, line {exc.lineno}); is it {what}?") from None
        except (RecursionError, ValueError):
            raise InvalidInput(f"{name} nests too deeply or holds a number too long to read; is it {what}?") from None
    return out


def _pi_memory_spaced(files: Mapping[str, str], problems: list[Problem]) -> list[Item]:
    items = []
    for name, data in _json(files, "pi-memory-spaced's memory-store.json"):
        memories = data.get("memories") if isinstance(data, dict) else data
        if not isinstance(memories, list):
            raise InvalidInput(f"{name} has no 'memories' list; is it pi-memory-spaced's memory-store.json?")
        for number, entry in enumerate(memories, 1):
            label = f"{name}#{entry.get('id') if isinstance(entry, dict) and entry.get('id') else number}"
            if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
                problems.append(Problem(label, "not a memory with 'content' text"))
                continue
            memory_type = _type(entry.get("type"))
            note = ""
            if memory_type is None:
                note = f"type {entry.get('type')!r} is none of gitmem's: imported as a fact"
                memory_type = "fact"
            potency = entry.get("potency")
            count = entry.get("accessCount")
            candidate = Candidate(
                entry["content"], type=memory_type, tags=_strings(entry.get("tags")),
                paths=_strings(entry.get("paths")),
                source="user" if entry.get("source") in ("user", "manual") else "import",
                potency=potency if isinstance(potency, int | float) and not isinstance(potency, bool) else None,
                created=_time(entry.get("createdAt")), last_used=_time(entry.get("lastInjectedAt")),
                access_count=count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None,
                tenured=entry.get("tenured") is True, label=label,
            )
            items.append(Item(label, candidate, (), note))
    return items


def _mem0(files: Mapping[str, str], problems: list[Problem]) -> list[Item]:
    items = []
    for name, data in _json(files, "a mem0 export"):
        memories = data
        if isinstance(data, dict):
            memories = next((data[k] for k in ("results", "memories", "data") if isinstance(data.get(k), list)), None)
        if not isinstance(memories, list):
            raise InvalidInput(f"{name} is not a mem0 export: a list of memories, or an object with 'results'")
        for number, entry in enumerate(memories, 1):
            label = f"{name}#{entry.get('id') if isinstance(entry, dict) and entry.get('id') else number}"
            text = entry.get("memory") if isinstance(entry, dict) else None
            if not isinstance(text, str):
                problems.append(Problem(label, "not a memory with 'memory' text"))
                continue
            metadata = entry.get("metadata") if isinstance(entry.get("metadata"), dict) else {}
            memory_type = _type(metadata.get("type"))
            note = ""
            if memory_type is None:
                note = f"metadata type {metadata.get('type')!r} is none of gitmem's: imported as a fact"
                memory_type = "fact"
            tags = tuple(dict.fromkeys(_strings(entry.get("categories")) + _strings(metadata.get("tags"))))
            author = entry.get("user_id") or entry.get("agent_id") or None
            candidate = Candidate(text, type=memory_type, tags=tags, paths=_strings(metadata.get("paths")),
                                  author=None if author is None else str(author), label=label)
            items.append(Item(label, candidate, (), note))
    return items
