"""Technology choices: the options weighed, the one in use, and the append-only record of choosing.

Pure: no I/O. A ``techchoice`` memory (:class:`gitmem.concepts.Memory`) holds two or more
:class:`~gitmem.concepts.Option` s, each saying something about itself: a pro and a con, or a
description (pi-okf-memory's options carry a description, configuration notes and a status and
no pros and cons). ``active`` names the option in use; choosing another appends to ``choices``
and never removes an option (:func:`with_choice`). A status is the standing of an option
(``candidate``, ``deprecated``...); "active" is not one, since ``active`` says which is in use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

from .concepts import MAX_LIST_ITEMS, Choice, Memory, Option, clean_list, clean_text, iso
from .errors import InvalidInput
from .wording import article, inflected

MIN_OPTIONS = 2
FIELDS = ("name", "pros", "cons", "description", "config", "status")
MAX_DESCRIPTION = 1000
MAX_STATUS = 40
#: A status that means "in use": that is the techchoice's ``active``, not an option's status.
IN_USE = ("active", "current", "in use", "当前", "当前使用", "使用中")
#: The status every option has until it is chosen: choosing an option ends it.
CANDIDATE = "candidate"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _one_line(value: Any, what: str, limit: int) -> str:
    text = clean_text(value, limit=limit, what=what)
    if _CONTROL.search(text) or "\n" in text:
        raise InvalidInput(f"{what} {text[:40]!r} must be one line without control characters")
    return text


def _option_name(value: Any, what: str = "option name") -> str:
    return _one_line(value, what, 200)


def _optional_text(value: Any, what: str, name: str) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    if not isinstance(value, str):
        raise InvalidInput(f"the {what} of option {name!r} must be a string")
    return clean_text(value.strip(), limit=MAX_DESCRIPTION, what=f"the {what} of option {name!r}")


def clean_status(value: Any, name: str) -> str:
    """Validate an option's status: one short line, and not "active" (``active`` names the option in use)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    if not isinstance(value, str):
        raise InvalidInput(f"the status of option {name!r} must be a string")
    status = _one_line(value.strip(), f"the status of option {name!r}", MAX_STATUS)
    if status.casefold() in IN_USE:
        raise InvalidInput(f"the status of option {name!r} is {status!r}: the option in use is the one named as "
                           "active (--active), not a status; a status is for where an option stands otherwise "
                           "(candidate, deprecated...)")
    return status


def clean_option(value: Any) -> Option:
    """Validate one option given as ``{"name", "pros", "cons", "description", "config", "status"}`` (or an Option)."""
    if isinstance(value, Option):
        value = value.to_dict()
    if not isinstance(value, dict):
        raise InvalidInput("each option must be an object with a name, and pros and cons or a description")
    unknown = sorted(set(value) - set(FIELDS))
    if unknown:
        raise InvalidInput(f"unknown option {inflected(len(unknown), 'field')}: {', '.join(map(str, unknown))}; "
                           f"an option has {', '.join(FIELDS)}")
    name = _option_name(value.get("name"))
    for key in ("pros", "cons"):
        if value.get(key) is not None and not isinstance(value[key], list | tuple | str):
            raise InvalidInput(f"the {key} of option {name!r} must be a list of strings")
    return Option(name, clean_list(value.get("pros"), what="pro", limit=300),
                  clean_list(value.get("cons"), what="con", limit=300),
                  _optional_text(value.get("description"), "description", name),
                  _optional_text(value.get("config"), "configuration notes", name),
                  clean_status(value.get("status"), name))


def says_enough(option: Option) -> bool:
    """Whether an option says something about itself: a pro and a con, or a description."""
    return bool(option.pros and option.cons) or bool(option.description)


def find_option(options: Iterable[Option], name: str) -> Option | None:
    """The option called ``name`` (case and surrounding space ignored), or None."""
    key = " ".join(name.split()).casefold()
    return next((o for o in options if " ".join(o.name.split()).casefold() == key), None)


def clean_options(values: Any, active: Any) -> tuple[tuple[Option, ...], str]:
    """Validate a technology choice's options and active one: two or more, each saying something of itself.

    Returns the options and the active option's name as the options spell it.
    """
    if not isinstance(values, list | tuple) or len(values) < MIN_OPTIONS:
        raise InvalidInput(f"a techchoice needs {MIN_OPTIONS} or more options, each with pros and cons or a "
                           "description (e.g. --option pnpm --pro pnpm=fast --con pnpm='fewer users' ...)")
    if len(values) > MAX_LIST_ITEMS:
        raise InvalidInput(f"more than {MAX_LIST_ITEMS} options; a techchoice takes at most {MAX_LIST_ITEMS}")
    options: list[Option] = []
    for value in values:
        option = clean_option(value)
        if find_option(options, option.name) is not None:
            raise InvalidInput(f"option {option.name!r} is given twice")
        if not says_enough(option):
            raise InvalidInput(f"option {option.name!r} needs at least one pro and one con, or a description")
        options.append(option)
    if active is None or (isinstance(active, str) and not active.strip()):
        raise InvalidInput("a techchoice needs its active option: name one of its options as active")
    chosen = find_option(options, _option_name(active, "active option"))
    if chosen is None:
        raise InvalidInput(f"the active option {active!r} is not one of the options: "
                           + ", ".join(o.name for o in options))
    return tuple(_chosen(o) if o is chosen else o for o in options), chosen.name


def _chosen(option: Option) -> Option:
    """An option as it is once chosen: no longer a candidate."""
    return replace(option, status="") if option.status.casefold() == CANDIDATE else option


def with_choice(memory: Memory, option: Any, *, reason: Any, by: str | None, at: datetime,
                pros: Iterable[str] = (), cons: Iterable[str] = (), description: str | None = None,
                config: str | None = None, status: str | None = None) -> Memory:
    """The techchoice after choosing ``option`` for ``reason``: an append-only change.

    An option not yet listed is added (it needs a pro and a con, or a description); pros and
    cons given for a listed option are added to it, and a description, configuration notes or
    status given replace its own. Nothing is ever removed: every option stays, and the choice
    is appended to ``choices``.
    """
    if memory.type != "techchoice" or not memory.options:
        raise InvalidInput(f"memory {memory.id} is {article(memory.type)} without options; only a techchoice "
                           "with options can have another option chosen")
    name = _option_name(option, "option")
    # Who chose is kept in the record and named in the commit, like an author: it must hold no secret.
    by = next(iter(clean_list([by], what="actor")), None) if by is not None else None
    why = clean_text(reason, limit=1000, what="reason") if isinstance(reason, str) and reason.strip() else None
    if why is None:
        raise InvalidInput("say why this option is chosen now (--reason): the record keeps it")
    more_pros = clean_list(pros, what="pro", limit=300)
    more_cons = clean_list(cons, what="con", limit=300)
    about = _optional_text(description, "description", name)
    setup = _optional_text(config, "configuration notes", name)
    standing = clean_status(status, name)
    found = find_option(memory.options, name)
    if found is None:
        chosen = Option(name, more_pros, more_cons, about, setup, standing)
        if not says_enough(chosen):
            raise InvalidInput(f"{name!r} is a new option: give at least one pro and one con, or a description "
                               f"(options now: {', '.join(o.name for o in memory.options)})")
        if len(memory.options) >= MAX_LIST_ITEMS:
            raise InvalidInput(f"the techchoice has {MAX_LIST_ITEMS} options already")
        options = memory.options + (_chosen(chosen),)
    else:
        if memory.active is not None and find_option([found], memory.active) is not None:
            raise InvalidInput(f"{found.name!r} is already the active option")
        chosen = _chosen(Option(found.name, found.pros + tuple(p for p in more_pros if p not in found.pros),
                                found.cons + tuple(c for c in more_cons if c not in found.cons),
                                about or found.description, setup or found.config, standing or found.status))
        options = tuple(chosen if o is found else o for o in memory.options)
    return memory.replace(options=options, active=chosen.name,
                          choices=memory.choices + (Choice(chosen.name, at, by, why),), updated=at)


def merged_options(old: Iterable[Option], new: Iterable[Option]) -> tuple[Option, ...]:
    """``old`` with what ``new`` adds: options it lacks, pros and cons unioned, blanks filled; nothing dropped."""
    out = list(old)
    for option in new:
        found = find_option(out, option.name)
        if found is None:
            out.append(option)
        else:
            pros = found.pros + tuple(p for p in option.pros if p not in found.pros)
            cons = found.cons + tuple(c for c in option.cons if c not in found.cons)
            out[out.index(found)] = Option(found.name, pros, cons, found.description or option.description,
                                           found.config or option.config, found.status or option.status)
    return tuple(out)


def options_table(memory: Memory) -> str:
    """A technology choice's options as a Markdown table, the active one marked; "" for other memories.

    Its columns are those some option fills: option always, then description, pros, cons,
    configuration and status.
    """
    if not memory.options:
        return ""

    def cell(values: Iterable[str]) -> str:
        return "; ".join(" ".join(v.split()).replace("|", "\\|") for v in values) or "-"

    columns: list[tuple[str, Any]] = [("option", None)]
    if any(o.description for o in memory.options):
        columns.append(("description", lambda o: [o.description] if o.description else []))
    if any(o.pros or o.cons for o in memory.options):
        columns += [("pros", lambda o: o.pros), ("cons", lambda o: o.cons)]
    if any(o.config for o in memory.options):
        columns.append(("configuration", lambda o: [o.config] if o.config else []))
    if any(o.status for o in memory.options):
        columns.append(("status", lambda o: [o.status] if o.status else []))
    rows = ["| " + " | ".join(name for name, _ in columns) + " |", "|" + " --- |" * len(columns)]
    for o in memory.options:
        mark = " (active)" if memory.active is not None and find_option([o], memory.active) else ""
        rows.append("| " + " | ".join([cell([o.name]) + mark, *(cell(values(o)) for _, values in columns[1:])])
                    + " |")
    if memory.choices:
        last = memory.choices[-1]
        said = f": {' '.join(last.reason.split())}" if last.reason else ""
        rows.append("")
        rows.append(f"Chosen {last.option} on {iso(last.at)[:10]}" + (f" by {last.by}" if last.by else "") + said)
    return "\n".join(rows)
