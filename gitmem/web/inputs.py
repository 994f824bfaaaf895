"""Reading request bodies and query strings, with a clear 400 for anything of the wrong shape."""

from __future__ import annotations

import json
import sys
from typing import Any

from flask import request
from werkzeug.exceptions import RequestEntityTooLarge

from ..errors import InvalidInput
from ..wording import inflected


def raw_body() -> bytes:
    """The request body; :class:`RequestEntityTooLarge` when it is over the limit, sent chunked or not.

    werkzeug refuses a declared Content-Length over the limit, but cuts a chunked body at the limit
    without a word: a body that fills the limit with no length declared is taken as one over it.
    """
    raw = request.get_data(cache=True)
    limit = request.max_content_length
    if limit is not None and request.content_length is None and len(raw) >= limit:
        raise RequestEntityTooLarge()
    return raw


def body() -> dict[str, Any]:
    """The JSON object the request carries (an empty body counts as ``{}``)."""
    raw = raw_body()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"the request body is not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"the request body is not valid JSON: {exc.msg} at position {exc.pos}") from None
    except RecursionError:
        raise InvalidInput("the request body nests JSON too deeply") from None
    except ValueError:
        # Python refuses to read an integer of more digits than its limit (4,300 by default).
        raise InvalidInput(
            f"the request body holds a number of more than {sys.get_int_max_str_digits()} digits; "
            "send such a value as a string"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput("the request body must be a JSON object")
    return data


def known(data: dict[str, Any], *names: str) -> None:
    """Refuse fields the endpoint does not know (a typo would otherwise be silently ignored)."""
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise InvalidInput(f"unknown {inflected(len(unknown), 'field')}: {', '.join(unknown)}; "
                           f"this endpoint takes: {', '.join(names)}")


def string(data: dict[str, Any], name: str, *, required: bool = False) -> str | None:
    """Field ``name`` of a request body as a string; None when absent, unless ``required``."""
    value = data.get(name)
    if value is None:
        if required:
            raise InvalidInput(f"field {name!r} is required")
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"field {name!r} must be a string")
    return value


def boolean(data: dict[str, Any], name: str) -> bool | None:
    """Field ``name`` of a request body as true or false; None when absent."""
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise InvalidInput(f"field {name!r} must be true or false")
    return value


def strings(data: dict[str, Any], name: str) -> list[str] | None:
    """Field ``name`` of a request body as a list of strings; None when absent."""
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"field {name!r} must be a list of strings")
    return value


def query_int(name: str, default: int, low: int, high: int) -> int:
    """Query parameter ``name`` as a whole number from ``low`` to ``high``; ``default`` when absent or empty."""
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"query parameter {name!r} must be a whole number") from None
    if not low <= value <= high:
        raise InvalidInput(f"query parameter {name!r} must be between {low} and {high}")
    return value


def query_bool(name: str) -> bool:
    """Query parameter ``name`` as a flag: 1, true or yes; 0, false, no or absent."""
    raw = request.args.get(name, "").strip().lower()
    if raw in ("", "0", "false", "no"):
        return False
    if raw in ("1", "true", "yes"):
        return True
    raise InvalidInput(f"query parameter {name!r} must be true or false")


def page(items: list[Any], offset: int, limit: int, more: bool) -> dict[str, Any]:
    """A page of a list that grows: the items and where the next page starts (or null)."""
    return {"items": items, "offset": offset, "limit": limit,
            "next_offset": offset + limit if more else None}
