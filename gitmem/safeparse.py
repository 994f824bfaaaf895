"""Reading YAML and JSON that someone else wrote: no aliases, no deep nesting, nothing expanded first.

A memory file's frontmatter, an imported note's and pi-okf-memory's ``.meta/weights.json`` come
from whoever pushed or imported them. Two shapes of such input cost a reader far more than its
size: a YAML alias bomb (``a: &a [x, x, ...]``, ``b: &b [*a, *a, ...]``... nine levels of 323
bytes are 387 million strings once a reader turns the lists into text), and thousands of nested
brackets, which overflow Python's recursion (a ``RecursionError``, so a 500) in the JSON reader,
in PyYAML's pure-Python one and in whatever walks the result.

gitmem's frontmatter never needs an anchor, an alias or more than a few levels, so
:func:`load_yaml` refuses them from the parser's events, before anything is built, and
:func:`load_json` refuses nesting deeper than :data:`MAX_DEPTH`. Both raise :class:`Unsafe`
(an :class:`~gitmem.errors.InvalidInput`) with a message that says what to write instead.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from yaml.events import AliasEvent, CollectionStartEvent, NodeEvent

from .errors import InvalidInput

__all__ = ["MAX_DEPTH", "Unsafe", "load_json", "load_yaml"]

#: The deepest nesting of lists and mappings taken (gitmem's own frontmatter nests three deep).
MAX_DEPTH = 20
# libyaml parses ~10x faster than pure-Python PyYAML; both give the same events.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Unsafe(InvalidInput):
    """YAML or JSON whose shape gitmem does not read: an anchor or alias, or nesting too deep."""


def load_yaml(text: str) -> Any:
    """Parse YAML like ``yaml.safe_load``, refusing anchors, aliases and deep nesting before building anything.

    Raises :class:`Unsafe` for those, and ``yaml.YAMLError`` for text that is not YAML.
    """
    if "&" in text or "*" in text:
        # An alias needs an anchor and an anchor needs '&': without either character the
        # events need no look, and most frontmatter is read at libyaml's full speed.
        _check_events(text)
    value = yaml.load(text, Loader=_Loader)
    _check_depth(value, "YAML")
    return value


def _check_events(text: str) -> None:
    """Walk the parser's events (a pass that expands nothing) and refuse anchors, aliases and deep nesting."""
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, AliasEvent):
            raise Unsafe(f"it uses the YAML alias *{event.anchor} ({_where(event)}); gitmem reads no anchors or "
                         "aliases: write each value out")
        if isinstance(event, NodeEvent) and event.anchor is not None:
            raise Unsafe(f"it uses the YAML anchor &{event.anchor} ({_where(event)}); gitmem reads no anchors or "
                         "aliases: write each value out")
        if isinstance(event, CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise _too_deep("YAML")
        elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
            depth -= 1


def _where(event: NodeEvent) -> str:
    mark = event.start_mark
    return "line ?" if mark is None else f"line {mark.line + 1}"


def load_json(text: str) -> Any:
    """Parse JSON, refusing nesting deeper than :data:`MAX_DEPTH` (:class:`Unsafe`).

    Text that is not JSON raises ``json.JSONDecodeError`` as ``json.loads`` does.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        # Python's own decoder gives up near 1,000 levels; the message is ours, not its.
        raise _too_deep("JSON") from None
    _check_depth(value, "JSON")
    return value


def _check_depth(value: Any, what: str) -> None:
    """Refuse a parsed value nested deeper than :data:`MAX_DEPTH` (walked without recursion)."""
    if not isinstance(value, list | dict):
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep(what)
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, list | dict))


def _too_deep(what: str) -> Unsafe:
    return Unsafe(f"its {what} nests lists or mappings more than {MAX_DEPTH} deep; gitmem reads flat fields")
