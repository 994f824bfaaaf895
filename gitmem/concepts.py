"""A memory concept: one Markdown file with YAML frontmatter, and the rules it must follow.

No I/O here: parse bytes, validate input, render bytes. The frontmatter is OKF v0.1-compatible
(``type`` required; ``title``, ``description``, ``tags``, ``timestamp``) plus gitmem's own fields.

A ``techchoice`` also keeps its ``options`` (each a name with pros and cons, a description,
configuration notes and a status), the ``active`` one and ``choices``, the append-only record of
which option was chosen when, by whom and why. Other memories carry none of the three, so their
files are as before. Validating and choosing options is :mod:`gitmem.techchoice`'s.
"""

from __future__ import annotations

import math
import re
import secrets
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import Any

import yaml

from . import safeparse, secretscan
from .errors import InvalidInput, MalformedConcept

TYPES = (
    "fact",
    "preference",
    "decision",
    "convention",
    "pattern",
    "method",
    "insight",
    "idea",
    "lesson",
    "techchoice",
)
SOURCES = ("user", "agent", "slack", "consolidation", "import")
STATES = ("active", "pending", "archived")

NEW_POTENCY = 0.8
DAILY_DECAY = 0.95
USE_BOOST = 0.3
ACTIVE_FLOOR = 0.15
ARCHIVE_BELOW = 0.10

_ID = re.compile(r"^[0-9a-f]{10}$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SLUG_DROP = re.compile(r"[^\w]+")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_MAX_SLUG = 60
_FRONTMATTER = re.compile(r"^---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)(.*)$", re.DOTALL)
_HEADING = re.compile(r"^#{1,6}(?:[ \t]+(.*?))??(?:[ \t]+#+)?[ \t]*$")
# The most tags, and the most paths, a memory takes from a caller (also any other list of strings).
MAX_LIST_ITEMS = 50
# Characters YAML reads as line breaks (and so folds inside a quoted value) besides \n itself.
_YAML_BREAKS = re.compile("[\r\x85\u2028\u2029]")

# libyaml is ~10x faster than pure-Python PyYAML; the output is identical except for escapes,
# where render() falls back to the pure-Python dumper. Reading goes through safeparse.
_Dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def now() -> datetime:
    """The current time in UTC, to the second."""
    return datetime.now(UTC).replace(microsecond=0)


def iso(moment: datetime) -> str:
    """Format a time as ``2026-11-30T06:04:46Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    """Read a timestamp from frontmatter (YAML may already have made it a datetime)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    text = str(value).strip().replace("Z", "+00:00")
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def new_id() -> str:
    """A short random id, stable for the life of the memory."""
    return secrets.token_hex(5)


def is_id(value: str) -> bool:
    """Whether ``value`` has the shape of a memory id."""
    return bool(_ID.match(value))


def check_id(memory_id: Any) -> str:
    """Validate the shape of a memory id; returns it trimmed and in lower case."""
    if not isinstance(memory_id, str) or not is_id(memory_id.strip().lower()):
        raise InvalidInput(f"{memory_id!r} is not a memory id (10 hex characters, see `gitmem recall`)")
    return memory_id.strip().lower()


def decayed(potency: float, since: datetime | None, at: datetime, *, tenured: bool = False) -> float:
    """Potency after the days between ``since`` and ``at`` without use (pure; apply it freely)."""
    if since is None or at <= since:
        value = potency
    else:
        days = (at - since).total_seconds() / 86400
        value = potency * math.pow(DAILY_DECAY, days)
    if tenured:
        # Tenured memories fade, but never below the active tier.
        value = max(value, min(potency, ACTIVE_FLOOR))
    return value


def used(potency: float, since: datetime | None, at: datetime, *, tenured: bool = False) -> float:
    """Potency right after one use at ``at``: decay to then, then :data:`USE_BOOST` of what it lacks of 1.

    A use closes 30% of the gap (0.8 -> 0.86 -> 0.90...), so a memory used every day settles near
    0.9, one used every week near 0.6, and one never used decays to the archive in about 45 days:
    potency says how much a memory is used, rather than sitting at 1.0 for all that ever were.
    """
    value = decayed(potency, since, at, tenured=tenured)
    return min(1.0, value + USE_BOOST * (1.0 - value))


def used_times(potency: float, since: datetime | None, at: datetime, count: int, *, tenured: bool = False) -> float:
    """Potency after ``count`` uses at ``at`` (the first decays from ``since``), rounded as files keep it.

    ``count`` is the number of days with a use (:meth:`gitmem.repo.UsageLog.pending`): ten
    deliveries in one session are one use.
    """
    for _ in range(count):
        potency = used(potency, since, at, tenured=tenured)
        since = at
    return round(potency, 4)


def tier(potency: float) -> str:
    """``active`` (>= 0.15), ``low`` (0.10 to 0.15) or ``archived`` (< 0.10)."""
    if potency >= ACTIVE_FLOOR:
        return "active"
    if potency >= ARCHIVE_BELOW:
        return "low"
    return "archived"


@dataclass(frozen=True)
class Option:
    """One option of a technology choice: its name, what speaks for and against it, and what it is.

    ``description`` says what the option is or why it is there, ``config`` how it is set up
    (pi-okf-memory's 说明 and 配置要点 columns), ``status`` where it stands (``candidate``,
    ``deprecated``...; which option is in use is the techchoice's ``active``, never a status).
    """

    name: str
    pros: tuple[str, ...] = ()
    cons: tuple[str, ...] = ()
    description: str = ""
    config: str = ""
    status: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: name, pros, cons, description, config, status (every key, empty or not)."""
        return {"name": self.name, "pros": list(self.pros), "cons": list(self.cons),
                "description": self.description, "config": self.config, "status": self.status}

    def to_file(self) -> dict[str, Any]:
        """The option as its file keeps it: the fields it has (a file from before they existed reads the same)."""
        out: dict[str, Any] = {"name": self.name, "pros": list(self.pros), "cons": list(self.cons)}
        out.update((key, value) for key, value in (("description", self.description), ("config", self.config),
                                                   ("status", self.status)) if value)
        return out


@dataclass(frozen=True)
class Choice:
    """One entry of a technology choice's record: the option chosen, when, by whom, and why."""

    option: str
    at: datetime
    by: str | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the time as an ISO 8601 string)."""
        return {"option": self.option, "at": iso(self.at), "by": self.by, "reason": self.reason}


@dataclass(frozen=True)
class Memory:
    """One memory concept, as stored in ``<type>/<slug>.md``."""

    id: str
    type: str
    text: str
    title: str
    description: str = ""
    tags: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    source: str = "user"
    author: str | None = None
    created: datetime = field(default_factory=now)
    updated: datetime = field(default_factory=now)
    potency: float = NEW_POTENCY
    last_used: datetime | None = None
    access_count: int = 0
    state: str = "active"
    tenured: bool = False
    verified: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    archived_reason: str | None = None
    path: str = ""
    options: tuple[Option, ...] = ()
    active: str | None = None
    choices: tuple[Choice, ...] = ()

    def potency_at(self, at: datetime) -> float:
        """Potency at a moment, decayed lazily from the last use (or creation)."""
        return decayed(self.potency, self.last_used or self.created, at, tenured=self.tenured)

    def with_use(self, at: datetime, count: int = 1) -> Memory:
        """The memory after ``count`` uses at ``at``."""
        potency = used_times(self.potency, self.last_used or self.created, at, count, tenured=self.tenured)
        return replace(self, potency=potency, last_used=at, access_count=self.access_count + count)

    def replace(self, **changes: Any) -> Memory:
        """Return a copy with some fields changed."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, datetime):
                value = iso(value)
            elif isinstance(value, tuple):
                value = [v.to_dict() if isinstance(v, Option | Choice) else v for v in value]
            out[f.name] = value
        return out


# --- validation of what callers pass in -------------------------------------------------------


def clean_text(text: Any, *, limit: int, what: str = "text", scan: bool = True) -> str:
    """Validate text to store: a non-empty string of valid UTF-8 within ``limit`` characters.

    ``scan``: refuse a secret (:func:`gitmem.secretscan.refuse`); off only for text that is never
    stored, such as a search query.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{what} is not valid UTF-8 (byte {exc.start})") from exc
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be a string")
    if _SURROGATE.search(text):
        raise InvalidInput(f"{what} is not valid UTF-8")
    if "\x00" in text:
        raise InvalidInput(f"{what} must not contain NUL bytes")
    value: str = unicodedata.normalize("NFC", text).replace("\r\n", "\n").strip()
    if not value:
        raise InvalidInput(f"{what} is empty" + (": say what to remember" if what == "text" else ""))
    if len(value) > limit:
        raise InvalidInput(f"{what} is {len(value)} characters; the limit is {limit}")
    if scan:
        secretscan.refuse(value, what=what)
    return value


def clean_title(title: Any, *, limit: int) -> str:
    """Validate a title: one line, no control characters, nothing that looks like a path escape."""
    value = clean_text(title, limit=limit, what="title")
    if _CONTROL.search(value) or "\n" in value:
        raise InvalidInput("title must be one line without control characters")
    parts = re.split(r"[/\\]", value)
    if value.startswith(("/", "\\", "~")) or ".." in parts or "." in parts:
        raise InvalidInput(f"title {value!r} looks like a file path; use plain words")
    return value


def clean_type(value: Any) -> str:
    """Validate a memory type against the ten known types."""
    if not isinstance(value, str) or value.strip().lower() not in TYPES:
        raise InvalidInput(f"unknown type {value!r}; use one of: {', '.join(TYPES)}")
    return value.strip().lower()


def clean_source(value: Any) -> str:
    """Validate a memory source."""
    if not isinstance(value, str) or value not in SOURCES:
        raise InvalidInput(f"unknown source {value!r}; use one of: {', '.join(SOURCES)}")
    return value


def clean_list(values: Iterable[Any] | None, *, what: str, limit: int = 200,
               most: int = MAX_LIST_ITEMS) -> tuple[str, ...]:
    """Validate a list of at most ``most`` short strings (tags, paths), dropping blanks and repeats.

    Each string is scanned like text (:func:`gitmem.secretscan.refuse`): a tag, a path, an author
    or a pro lands in the file's frontmatter, the index and the commit as surely as the text does.
    """
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        if not isinstance(value, str):
            raise InvalidInput(f"each {what} must be a string")
        value = value.strip()
        if not value:
            continue
        if _CONTROL.search(value) or _SURROGATE.search(value) or "\n" in value:
            raise InvalidInput(f"{what} {value!r} holds line breaks, control characters or invalid UTF-8")
        if len(value) > limit:
            raise InvalidInput(f"{what} {value[:40]!r}... is over {limit} characters")
        secretscan.refuse(value, what=what)
        if value not in out:
            if len(out) == most:
                raise InvalidInput(f"more than {most} {what}s; a memory takes at most {most}")
            out.append(value)
    return tuple(out)


def title_from(text: str, limit: int = 80) -> str:
    """A title made from the first line of the text, below any YAML frontmatter, without '#' marks."""
    meta, body = _frontmatter(text)
    lines = (body if meta is not None and body.strip() else text).strip().splitlines()
    first = lines[0].strip() if lines else ""
    # A Markdown heading, "# Title" (or "## Title ##"), is titled by its words.
    heading = _HEADING.match(first)
    words = (heading.group(1) or "").strip() if heading else ""
    first = _CONTROL.sub(" ", words or first)
    if len(first) > limit:
        first = first[: limit - 1].rstrip() + "…"
    return first


def read_note(text: str) -> tuple[str, dict[str, Any]]:
    """Split a note into its text and what its frontmatter says of title, type, tags, paths and options.

    A note without frontmatter (or whose first ``---`` block is not a mapping: a rule, say) is
    all text. Other frontmatter fields are left out; the values are checked when they are used.
    """
    try:
        meta, body = _frontmatter(text, strict=True)
    except yaml.YAMLError as exc:
        raise InvalidInput(f"the note's frontmatter is not valid YAML: {_one_line(exc)}") from exc
    except safeparse.Unsafe as exc:
        raise InvalidInput(f"the note's frontmatter: {exc}") from exc
    if meta is None:
        return text, {}
    found: dict[str, Any] = {}
    for key in ("title", "type"):
        if meta.get(key) is not None:
            found[key] = str(meta[key])
    for key in ("tags", "paths"):
        try:
            values = _strings(meta, key)
        except ValueError as exc:
            raise InvalidInput(f"the note's frontmatter: {exc}") from exc
        if values:
            found[key] = values
    # A techchoice note brings its options and active one; they are checked when used.
    if meta.get("options") is not None:
        found["options"] = meta["options"]
    if meta.get("active") is not None:
        found["active"] = str(meta["active"])
    return body, found


def _frontmatter(text: str, *, strict: bool = False) -> tuple[dict[str, Any] | None, str]:
    """A leading YAML mapping between '---' lines and the text below it; (None, text) without one.

    Invalid YAML counts as no frontmatter, unless ``strict`` (then it raises ``yaml.YAMLError``).
    """
    match = _FRONTMATTER.match(text.lstrip("\ufeff"))
    if not match:
        return None, text
    try:
        meta = safeparse.load_yaml(match.group(1))
    except (yaml.YAMLError, safeparse.Unsafe):
        if strict:
            raise
        return None, text
    if not isinstance(meta, dict):
        return None, text
    return meta, match.group(2)


def description_from(text: str, limit: int = 160) -> str:
    """A one-sentence description for OKF readers."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def slugify(title: str) -> str:
    """A file-name slug for Chinese or English titles; never empty, never a path."""
    folded = unicodedata.normalize("NFKC", title).casefold()
    slug = _SLUG_DROP.sub("-", folded).strip("-_")
    slug = re.sub(r"[_-]{2,}", "-", slug)[:_MAX_SLUG].strip("-_")
    return slug or "memory"


def file_path(memory_type: str, slug: str) -> str:
    """Repository path of a memory file."""
    return f"{memory_type}/{slug}.md"


# --- parsing and rendering ---------------------------------------------------------------------

_ORDER = (
    "type", "title", "description", "tags", "timestamp", "id", "source", "author", "created",
    "updated", "paths", "potency", "last_used", "access_count", "state", "tenured", "verified",
    "related", "supersedes", "archived_reason", "options", "active", "choices",
)


def render(memory: Memory) -> bytes:
    """Serialise a memory to Markdown with YAML frontmatter."""
    return _file(_meta(memory), memory)[0]


def rendered(memory: Memory) -> tuple[bytes, Memory]:
    """The file for ``memory``, and the memory exactly as :func:`parse` will read it back from that file.

    A writer that keeps both spares the search index a parse of the file it has just written.
    """
    meta = _meta(memory)
    data, front = _file(meta, memory)
    if _YAML_BREAKS.search(front):
        # YAML folds these inside a quoted value: only a real parse says what the file holds.
        return data, parse(data, memory.path)
    return data, _from_meta(meta, memory.text.strip(), memory.path)


def _meta(memory: Memory) -> dict[str, Any]:
    """The frontmatter fields of a memory, in file order."""
    meta: dict[str, Any] = {
        "type": memory.type,
        "title": memory.title,
        "description": memory.description or description_from(memory.text),
        "tags": list(memory.tags),
        "timestamp": iso(memory.updated),
        "id": memory.id,
        "source": memory.source,
        "author": memory.author,
        "created": iso(memory.created),
        "updated": iso(memory.updated),
        "paths": list(memory.paths),
        "potency": round(memory.potency, 4),
        "last_used": iso(memory.last_used) if memory.last_used else None,
        "access_count": memory.access_count,
        "state": memory.state,
        "tenured": memory.tenured,
        "verified": list(memory.verified),
        "related": list(memory.related),
        "supersedes": list(memory.supersedes),
    }
    if memory.archived_reason:
        meta["archived_reason"] = memory.archived_reason
    if memory.options or memory.choices:
        meta["options"] = [o.to_file() for o in memory.options]
        meta["active"] = memory.active
        meta["choices"] = [c.to_dict() for c in memory.choices]
    return meta


def _file(meta: dict[str, Any], memory: Memory) -> tuple[bytes, str]:
    """The file's bytes, and its frontmatter as text."""
    front = yaml.dump(meta, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=1000)
    if _Dumper is not yaml.SafeDumper and "\\" in front:
        # libyaml escapes characters outside the BMP (emoji) that PyYAML writes as they are.
        front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=1000)
    return f"---\n{front}---\n\n{memory.text.strip()}\n".encode(), front


def _file_fields(data: bytes, path: str) -> tuple[dict[Any, Any], str]:
    """A memory file's frontmatter fields and its text; MalformedConcept naming ``path`` when it has none."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedConcept(path, f"not valid UTF-8 (byte {exc.start})") from exc
    match = _FRONTMATTER.match(text.removeprefix("\ufeff"))
    if not match:
        raise MalformedConcept(path, "no YAML frontmatter between '---' lines at the top")
    try:
        meta = safeparse.load_yaml(match.group(1))
    except yaml.YAMLError as exc:
        raise MalformedConcept(path, f"frontmatter is not valid YAML: {_one_line(exc)}") from exc
    except safeparse.Unsafe as exc:
        raise MalformedConcept(path, f"frontmatter refused: {exc}") from exc
    if not isinstance(meta, dict):
        raise MalformedConcept(path, "frontmatter must be a mapping of fields")
    return meta, match.group(2).strip()


def parse(data: bytes, path: str) -> Memory:
    """Parse a memory file; a malformed one raises :class:`MalformedConcept` naming ``path``."""
    meta, body = _file_fields(data, path)
    try:
        return _from_meta(meta, body, path)
    except (TypeError, ValueError) as exc:
        raise MalformedConcept(path, str(exc)) from exc


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def _strings(meta: dict[str, Any], key: str) -> tuple[str, ...]:
    value = meta.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        raise ValueError(f"'{key}' must be a list")
    if any(isinstance(v, list | dict) for v in value):
        # Text of a nested value is not a tag or a path, and turning one into text can be costly.
        raise ValueError(f"'{key}' must be a list of strings, not of lists or mappings")
    return tuple(str(v) for v in value if v is not None)


def _from_meta(meta: dict[str, Any], body: str, path: str) -> Memory:
    memory_type = meta.get("type")
    if memory_type not in TYPES:
        raise ValueError(f"'type' must be one of {', '.join(TYPES)}, not {memory_type!r}")
    memory_id = str(meta.get("id") or "")
    if not is_id(memory_id):
        raise ValueError(f"'id' must be 10 hex characters, not {memory_id!r}")
    if not body:
        raise ValueError("the memory has no text below the frontmatter")
    state = meta.get("state", "active")
    if state not in STATES:
        raise ValueError(f"'state' must be one of {', '.join(STATES)}, not {state!r}")
    try:
        potency = float(meta.get("potency", NEW_POTENCY))
    except (TypeError, ValueError):
        raise ValueError(f"'potency' must be a number between 0 and 1, not {meta.get('potency')!r}") from None
    if not 0.0 <= potency <= 1.0:
        raise ValueError(f"'potency' must be between 0 and 1, not {potency}")
    stamp = parse_time(meta.get("timestamp"))
    # A file written by hand may carry no date at all: take it as new rather than as written in
    # 1970, which would decay it to nothing and hide it from recall.
    created = parse_time(meta.get("created")) or stamp or parse_time(meta.get("updated")) or now()
    source = str(meta.get("source") or "import")
    return Memory(
        id=memory_id,
        type=memory_type,
        text=body,
        title=str(meta.get("title") or title_from(body)),
        description=str(meta.get("description") or ""),
        tags=_strings(meta, "tags"),
        paths=_strings(meta, "paths"),
        source=source if source in SOURCES else "import",
        author=None if meta.get("author") is None else str(meta["author"]),
        created=created,
        updated=parse_time(meta.get("updated")) or stamp or created,
        potency=potency,
        last_used=parse_time(meta.get("last_used")),
        access_count=int(meta.get("access_count") or 0),
        state=state,
        tenured=bool(meta.get("tenured", False)),
        verified=_strings(meta, "verified"),
        related=_strings(meta, "related"),
        supersedes=_strings(meta, "supersedes"),
        archived_reason=None if not meta.get("archived_reason") else str(meta["archived_reason"]),
        path=path,
        options=options_from(meta.get("options")),
        active=None if meta.get("active") is None else str(meta["active"]),
        choices=choices_from(meta.get("choices")),
    )


# --- technology choices ------------------------------------------------------------------------

def _records(value: Any, key: str, field: str, shape: str) -> list[dict[str, Any]]:
    """The frontmatter list ``key`` of mappings that each name ``field``; [] when absent."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"'{key}' must be a list of {shape}")
    for item in value:
        if not isinstance(item, dict) or not item.get(field):
            raise ValueError(f"each of '{key}' must be a mapping with a '{field}'")
    return value


def options_from(value: Any) -> tuple[Option, ...]:
    """Options as a file or an index document holds them (a list of mappings); () when absent."""
    return tuple(Option(str(item["name"]), _strings(item, "pros"), _strings(item, "cons"),
                        *(str(item.get(key) or "") for key in ("description", "config", "status")))
                 for item in _records(value, "options", "name", "{name, pros, cons, description, config, status}"))


def choices_from(value: Any) -> tuple[Choice, ...]:
    """The record of choices as a file or an index document holds it; () when absent."""
    return tuple(Choice(str(item["option"]), parse_time(item.get("at")) or now(),
                        None if item.get("by") is None else str(item["by"]), str(item.get("reason") or ""))
                 for item in _records(value, "choices", "option", "{option, at, by, reason}"))


# --- files pushed over git -------------------------------------------------------------------------

#: gitmem's own fields: a pushed file that lacks one (a plain OKF file with only ``type``) is
#: accepted and completed when it reaches main.
OWN_FIELDS = ("id", "created", "updated", "potency", "state", "source")


def parse_pushed(data: bytes, path: str, *, default_id: str | None = None) -> tuple[Memory, bool]:
    """A memory file pushed over git, and whether it lacks some of :data:`OWN_FIELDS`.

    Such a file parses as far as OKF asks (frontmatter with a valid ``type``, text below it);
    a missing ``id`` is given ``default_id`` or a new one, so the memory read back is what
    completing the file writes. Anything else wrong raises :class:`MalformedConcept` naming ``path``.
    """
    meta, body = _file_fields(data, path)
    missing = [name for name in OWN_FIELDS if meta.get(name) in (None, "")]
    if "id" in missing:
        meta = {**meta, "id": default_id or new_id()}
    try:
        return _from_meta(meta, body, path), bool(missing)
    except (TypeError, ValueError) as exc:
        raise MalformedConcept(path, str(exc)) from exc


def stated_id(data: bytes, path: str) -> str | None:
    """The id a memory file's frontmatter gives, read as :func:`parse` reads it; None without one.

    Every YAML form counts (``'id': …``, ``id: >-``, a flow mapping, ``1_234_567_890``, a line
    after 4 KB): a check of duplicate ids must see the id recall will see. A file that does not
    parse gives None (it is refused, or reported, for that).
    """
    try:
        meta, _ = _file_fields(data, path)
    except MalformedConcept:
        return None
    return str(meta.get("id") or "") or None


def complete(data: bytes, path: str, *, author: str | None = None, before: Memory | None = None) -> bytes | None:
    """The pushed file as main keeps it, or None when it is that already.

    gitmem's own fields are filled in (id, created, potency...), and when ``before`` (the memory
    as it was) had a title or description taken from its text and the push changed only the
    text, they follow the new text (:func:`follow_text`). ``author``: who wrote it (the review's
    author, the pusher), unless the file names someone.
    """
    memory, incomplete = parse_pushed(data, path)
    followed = memory if before is None else follow_text(before, memory)
    if not incomplete and followed == memory:
        return None
    return render(followed.replace(description=followed.description or description_from(followed.text),
                                   author=followed.author or author))


def follow_text(before: Memory, after: Memory, *, title_limit: int = 80) -> Memory:
    """``after`` with the title and description its text gives, where they were taken from the text.

    A title (or description) that ``before`` took from its text (:func:`title_from`,
    :func:`description_from`) and that ``after`` keeps while its text changed would go stale:
    it follows the new text. One set by hand (it differs from what the old text gives) stays.
    """
    if after.text == before.text:
        return after
    changes: dict[str, str] = {}
    if after.title == before.title and before.title == title_from(before.text, title_limit):
        changes["title"] = title_from(after.text, title_limit)
    if after.description == before.description and before.description in ("", description_from(before.text)):
        changes["description"] = description_from(after.text)
    return after.replace(**changes) if changes else after
