"""What a source becomes before the write gate: items and problems, and the reading every format shares.

Pure: no I/O. Each format's reader (:mod:`.okf`, :mod:`.stores`) turns the source's files into
:class:`Item` s and :class:`Problem` s with these helpers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml

from .. import safeparse
from ..concepts import TYPES, parse_time
from ..errors import InvalidInput
from ..memories import Candidate

_FRONTMATTER = re.compile(r"^\ufeff?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)(.*)$", re.DOTALL)


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


def frontmatter(text: str) -> tuple[dict[str, Any] | None, str]:
    """A leading YAML mapping and the text below it; (None, text) without one; InvalidInput when broken."""
    match = _FRONTMATTER.match(text)
    if not match:
        return None, text
    try:
        meta = safeparse.load_yaml(match.group(1))  # Unsafe (an InvalidInput) for aliases, deep nesting
    except yaml.YAMLError as exc:
        raise InvalidInput("its frontmatter is not valid YAML: " + " ".join(str(exc).split())) from None
    if meta is None:
        return {}, match.group(2)
    if not isinstance(meta, dict):
        raise InvalidInput("its frontmatter is not a mapping of fields")
    return meta, match.group(2)


def strings(value: Any) -> tuple[str, ...]:
    """A list of strings from a YAML or JSON value: a list, or one comma-separated string."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list | tuple):
        return tuple(str(v).strip() for v in value if v is not None and str(v).strip())
    return (str(value),)


def moment(value: Any) -> datetime | None:
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


def memory_type_of(value: Any, default: str = "fact") -> str | None:
    """The gitmem type a source names ("TechChoice", "tech-choice"); ``default`` when none, None if unknown."""
    name = str(value or "").strip().lower().replace("-", "").replace("_", "").replace(" ", "")
    return name if name in TYPES else (None if value else default)


def title_of(meta: Mapping[str, Any], fallback: str) -> str:
    """The frontmatter's title on one line, or ``fallback``."""
    title = meta.get("title")
    return " ".join(str(title).split()) if title else fallback
