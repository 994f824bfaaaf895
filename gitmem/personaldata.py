"""Personal data a team's memory should not hold: national id numbers, payment card numbers, IBANs.

Pure, no I/O. A pattern finds what has the shape of such a number; ``python-stdnum`` then checks
it as its issuer does (a US Social Security number's reserved ranges, a Chinese resident id's
birth date, place and check digit, a card's Luhn digit, an IBAN's country length and mod-97
check), so a build number, a timestamp or an order id that merely has as many digits is left
alone. :mod:`gitmem.secretscan` reports what is found beside secrets: writes refuse it, ingestion
masks it. stdnum is imported only when a candidate turns up, since most text has none.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

__all__ = ["KINDS", "find"]

_SSN = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")
_RESIDENT_ID = re.compile(r"(?<![\w-])\d{17}[\dXx](?![\w-])")
# 13 to 19 digits, in groups split by single spaces or hyphens (or none), as cards are written.
_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
# Two letters, two check digits, then up to 30 letters and digits, in groups of four or not.
_IBAN = re.compile(r"(?<![\w-])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?![\w-])")
# The first digits of the card networks (Visa, Mastercard, Amex, Discover, JCB, UnionPay, Diners,
# Maestro): a number that passes Luhn by chance but starts otherwise is no card.
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|3[0689]|6011|64[4-9]|65|62|35|50|5[6-8]|6[37])")

KINDS = ("US Social Security number", "Chinese resident id number", "payment card number", "IBAN")


def _ssn(value: str) -> bool:
    from stdnum.us import ssn

    return bool(ssn.is_valid(value))


def _resident_id(value: str) -> bool:
    from stdnum.cn import ric

    return bool(ric.is_valid(value.upper()))


def _card(value: str) -> bool:
    from stdnum import luhn

    digits = re.sub(r"[ -]", "", value)
    separators = set(re.findall(r"[ -]", value))
    # One kind of separator at most: "4111 1111-1111 1111" is no way anyone writes a card.
    return (13 <= len(digits) <= 19 and len(separators) <= 1 and bool(_CARD_PREFIX.match(digits))
            and bool(luhn.is_valid(digits)))


def _iban(value: str) -> bool:
    from stdnum import iban

    return bool(iban.is_valid(value))


_CHECKS: tuple[tuple[str, re.Pattern[str], Callable[[str], bool]], ...] = (
    (KINDS[0], _SSN, _ssn),
    (KINDS[1], _RESIDENT_ID, _resident_id),
    (KINDS[2], _CARD, _card),
    (KINDS[3], _IBAN, _iban),
)


def find(line: str) -> Iterator[tuple[str, tuple[int, int]]]:
    """Each piece of personal data in one line: its kind and where it is."""
    taken: list[tuple[int, int]] = []
    for kind, pattern, valid in _CHECKS:
        for match in pattern.finditer(line):
            start, end = match.span()
            # A resident id's 18 digits are no card as well: the first kind that claims a span keeps it.
            if any(start < e and s < end for s, e in taken) or not valid(match.group()):
                continue
            taken.append((start, end))
            yield kind, (start, end)
