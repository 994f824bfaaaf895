"""pi-okf-memory's folders: OKF concepts in a folder per type, learned weights, cross links, TechChoices.

A concept is a Markdown file with OKF frontmatter (``type``, ``title``, ``tags``) in
``fact/``, ``decision/``, ``techchoice/``...; ``.meta/weights.json`` is
``{"version": 1, "updatedAt", "entries": {"fact/x": {"weight", "accessCount", "lastAccessed",
"state", "createdAt", "lastDecayDays"}}}``, keyed by the concept's path without ``.md``. A
TechChoice's body is an ``## Options`` table (``| 候选 | 说明 | 配置要点 | 状态 |``: option,
description, configuration notes, status) and an ``## Active`` section, ``- 当前使用:X``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from .. import safeparse, techchoice
from ..concepts import TYPES, Option
from ..errors import InvalidInput
from ..memories import Candidate
from .items import Item, Problem, frontmatter, memory_type_of, strings, title_of

_OKF_LINK = re.compile(r"\[[^\]\n]*\]\((/[^)\s]+?\.md)\)")
_ACTIVE_LINE = re.compile(r"^\s*[-*]?\s*(?:当前使用|当前|active|current|chosen)\s*[:：]\s*(.+?)\s*$",
                          re.IGNORECASE | re.MULTILINE)
# The columns of a TechChoice's Options table, by the names pi-okf-memory and people give them.
_COLUMNS = {
    "name": ("option", "options", "name", "候选", "选项", "方案"),
    "description": ("description", "desc", "about", "说明", "描述", "简介"),
    "pros": ("pros", "pro", "advantages", "优点", "优势", "好处"),
    "cons": ("cons", "con", "disadvantages", "缺点", "劣势", "不足"),
    "config": ("config", "configuration", "setup", "配置要点", "配置", "要点"),
    "status": ("status", "state", "状态"),
}


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


def read_okf(files: Mapping[str, str], problems: list[Problem]) -> list[Item]:
    """The concepts of a pi-okf-memory folder (``index.md`` and ``log.md`` left out), with weights and links."""
    weights: dict[str, Any] = {}
    if ".meta/weights.json" in files:
        try:
            meta = safeparse.load_json(files[".meta/weights.json"])
            entries = meta.get("entries") if isinstance(meta, dict) else None
            if not isinstance(entries, dict):
                raise ValueError("no 'entries' object")
            weights = entries
        except ValueError as exc:  # JSONDecodeError and safeparse.Unsafe are ValueErrors
            problems.append(Problem(".meta/weights.json", f"not pi-okf-memory's weights ({exc}); weights left out"))
    items: list[Item] = []
    for name, text in sorted(files.items()):
        path = PurePosixPath(name)
        if path.suffix != ".md" or len(path.parts) < 2:
            continue  # index.md and log.md at the root describe the bundle
        key = str(path.with_suffix(""))
        try:
            meta, body = frontmatter(text)
        except InvalidInput as exc:
            problems.append(Problem(name, str(exc)))
            continue
        if meta is None:
            problems.append(Problem(name, "no OKF frontmatter (a 'type' between '---' lines)"))
            continue
        memory_type = memory_type_of(meta.get("type"), "") or memory_type_of(path.parts[0], "") or None
        if memory_type is None:
            problems.append(Problem(name, f"type {meta.get('type')!r} is none of gitmem's: {', '.join(TYPES)}"))
            continue
        body = body.strip()
        candidate = Candidate(body, type=memory_type, title=title_of(meta, path.stem), tags=strings(meta.get("tags")),
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
        # A pipe escaped in a cell ("a \| b") is one, as Markdown shows it, not a column's edge.
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", stripped[1:-1])]
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
    """A TechChoice's Options table and Active line as options and the active one.

    pi-okf-memory's own table is ``| 候选 | 说明 | 配置要点 | 状态 |`` (option, description,
    configuration notes, status), its ``## Active`` section ``- 当前使用:X``; a table of pros and
    cons is read too. Without two options that each say something of themselves, or without an
    active one, it is imported as a decision that keeps its text as it was.
    """
    header, rows = _table(body)
    at = {field: _column(header, names) for field, names in _COLUMNS.items()}
    if at["name"] is None and header:
        at["name"] = 0
    said = _ACTIVE_LINE.finditer(body)
    active = next((m.group(1).strip() for m in said), None)
    options: list[Option] = []
    for row in rows:
        cells = {field: _cell(row, column) for field, column in at.items() if column is not None}
        name = cells.get("name", "").strip("* ")
        if not name:
            continue
        status = cells.get("status", "")
        if status.casefold() in techchoice.IN_USE:
            # In use is what the techchoice's active says; the table's word for it names it when no
            # Active line does.
            active = active or name
            status = ""
        options.append(Option(name, tuple(_split(cells.get("pros", ""))), tuple(_split(cells.get("cons", ""))),
                              cells.get("description", ""), cells.get("config", ""), status))
    problem = None
    if len(options) < techchoice.MIN_OPTIONS:
        problem = f"fewer than {techchoice.MIN_OPTIONS} options in its table ({', '.join(header) or 'no table'})"
    elif not all(techchoice.says_enough(o) for o in options):
        bare = ", ".join(o.name for o in options if not techchoice.says_enough(o))
        problem = f"options without a description or pros and cons ({bare})"
    elif active is None:
        problem = "no active option (an '## Active' section with '- 当前使用:X', or a status 'active')"
    elif techchoice.find_option(options, active) is None:
        problem = f"its active option {active!r} is not in its table"
    if problem is not None:
        return replace(candidate, type="decision"), f"a TechChoice with {problem}: imported as a decision with its text"
    chosen = techchoice.find_option(options, active or "")
    assert chosen is not None
    return replace(candidate, options=tuple(options), active=chosen.name, choice_reason="imported from OKF"), ""


def _cell(row: list[str], column: int) -> str:
    """A table cell's text; pi-okf-memory's empty marks ('-', '—') and quotes around a YAML-style scalar dropped."""
    text = row[column].strip() if column < len(row) else ""
    if text in ("-", "—", "–", "n/a"):
        return ""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            loaded = json.loads(text)  # pi-okf-memory writes a cell that needs quoting as a JSON string
        except json.JSONDecodeError:
            return text
        return loaded if isinstance(loaded, str) else text
    return text


def _split(cell: str) -> list[str]:
    """Pros or cons in one cell: separated by ';', '；', '、' or line breaks."""
    return [part.strip() for part in re.split(r"[;；、]|<br\s*/?>", cell) if part.strip()]
