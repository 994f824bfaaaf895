"""basic-memory projects, pi-memory-spaced's memory-store.json and mem0 exports, as items for the write gate."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from ..errors import InvalidInput
from ..memories import Candidate
from .items import Item, Problem, frontmatter, memory_type_of, moment, strings, title_of

_WIKI_LINK = re.compile(r"\[\[([^\]\n|#]+)(?:#[^\]\n|]*)?(?:\|[^\]\n]*)?\]\]")


def read_basic_memory(files: Mapping[str, str], problems: list[Problem]) -> list[Item]:
    """Each note of a basic-memory project, its ``[[wiki links]]`` to the project's other notes as links."""
    notes: list[tuple[str, dict[str, Any], str]] = []
    for name, text in sorted(files.items()):
        if not name.endswith(".md"):
            continue
        try:
            meta, body = frontmatter(text)
        except InvalidInput as exc:
            problems.append(Problem(name, str(exc)))
            continue
        notes.append((name, meta or {}, body.strip()))
    # A wiki link names a note by its title, permalink, file name or path.
    names: dict[str, str] = {}
    for name, meta, _ in notes:
        path = PurePosixPath(name)
        aliases = (title_of(meta, path.stem), str(meta.get("permalink") or ""), path.stem, str(path.with_suffix("")))
        for alias in aliases:
            if alias:
                names.setdefault(alias.casefold(), name)
    items = []
    for name, meta, body in notes:
        path = PurePosixPath(name)
        memory_type = memory_type_of(meta.get("type"))
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
        candidate = Candidate(body, type=memory_type, title=title_of(meta, path.stem), tags=strings(meta.get("tags")),
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


def read_pi_memory_spaced(files: Mapping[str, str], problems: list[Problem]) -> list[Item]:
    """Each memory of pi-memory-spaced's ``memory-store.json``, with its potency, times and tenure."""
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
            memory_type = memory_type_of(entry.get("type"))
            note = ""
            if memory_type is None:
                note = f"type {entry.get('type')!r} is none of gitmem's: imported as a fact"
                memory_type = "fact"
            potency = entry.get("potency")
            count = entry.get("accessCount")
            candidate = Candidate(
                entry["content"], type=memory_type, tags=strings(entry.get("tags")),
                paths=strings(entry.get("paths")),
                source="user" if entry.get("source") in ("user", "manual") else "import",
                potency=potency if isinstance(potency, int | float) and not isinstance(potency, bool) else None,
                created=moment(entry.get("createdAt")), last_used=moment(entry.get("lastInjectedAt")),
                access_count=count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None,
                tenured=entry.get("tenured") is True, label=label,
            )
            items.append(Item(label, candidate, (), note))
    return items


def read_mem0(files: Mapping[str, str], problems: list[Problem]) -> list[Item]:
    """Each memory of a mem0 export (a list, or ``{"results": [...]}``)."""
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
            memory_type = memory_type_of(metadata.get("type"))
            note = ""
            if memory_type is None:
                note = f"metadata type {metadata.get('type')!r} is none of gitmem's: imported as a fact"
                memory_type = "fact"
            tags = tuple(dict.fromkeys(strings(entry.get("categories")) + strings(metadata.get("tags"))))
            author = entry.get("user_id") or entry.get("agent_id") or None
            candidate = Candidate(text, type=memory_type, tags=tags, paths=strings(metadata.get("paths")),
                                  author=None if author is None else str(author), label=label)
            items.append(Item(label, candidate, (), note))
    return items
