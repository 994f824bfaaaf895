"""Refuse text that carries a secret (an API key, a token, a private key, a password) or personal data.

Git history is forever: a key committed once stays in every clone even after ``forget --purge``.
Every write path cleans its text through :mod:`gitmem.concepts`, which calls :func:`refuse`; ingestion
masks such messages with :func:`mask` before anything is extracted from them.

The scanning is Yelp's ``detect-secrets`` (its provider plugins: AWS, GitHub, GitLab, Slack, Stripe,
OpenAI, JWT, private keys, basic-auth URLs, ``password = "..."`` keywords and more), run line by line
with its false-positive filters. Its two entropy plugins are left out: on prose they flag ordinary
words and commit ids. :mod:`gitmem.secretformats` adds the formats it lacks (fine-grained GitHub,
npm, Hugging Face and DigitalOcean tokens, unquoted ``API_KEY=...`` lines, netrc lines, a password
given in words), and :mod:`gitmem.personaldata` national id numbers, payment cards and IBANs.
Every secret is found, several on a line too, each with where it is. Nothing is verified over the
network.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from . import personaldata
from .errors import PersonalDataFound, SecretFound
from .secretformats import CONTEXT_FORMATS, FORMATS, PRIVATE_KEY_BEGIN, PRIVATE_KEY_END, Format
from .wording import article

__all__ = ["Finding", "find", "mask", "refuse"]

# detect-secrets plugins by class name; the entropy and public-IP plugins flag prose, not secrets.
_PLUGINS = (
    "AWSKeyDetector", "ArtifactoryDetector", "AzureStorageKeyDetector", "BasicAuthDetector", "CloudantDetector",
    "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector", "IbmCloudIamDetector",
    "IbmCosHmacDetector", "JwtTokenDetector", "KeywordDetector", "MailchimpDetector", "NpmDetector",
    "OpenAIDetector", "PrivateKeyDetector", "PypiTokenDetector", "SendGridDetector", "SlackDetector",
    "SoftlayerDetector", "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector",
    "TwilioKeyDetector",
)

_lock = threading.Lock()
_scan_line: Callable[[str], Iterable[Any]] | None = None


@dataclass(frozen=True)
class Finding:
    """One secret found: what kind it looks like, the 1-based line it is on, and where in the line."""

    kind: str
    line: int
    span: tuple[int, int] | None = None  # where in the line; None when only the line is known

    @property
    def personal(self) -> bool:
        """Whether this is personal data (an id, card or account number) rather than a credential."""
        return self.kind in personaldata.KINDS


def _scanner() -> Callable[[str], Iterable[Any]]:
    """detect-secrets' line scanner, configured once with the plugins above (its settings are global)."""
    global _scan_line
    with _lock:
        if _scan_line is None:
            from detect_secrets.core.scan import scan_line
            from detect_secrets.settings import get_settings

            get_settings().configure_plugins([{"name": name} for name in _PLUGINS])
            _scan_line = scan_line
        return _scan_line


_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+/=-")


def _token(line: str, start: int, end: int) -> tuple[int, int]:
    """Widen a match to the whole token around it (a plugin may report only a key's prefix)."""
    while start > 0 and line[start - 1] in _TOKEN_CHARS:
        start -= 1
    while end < len(line) and line[end] in _TOKEN_CHARS:
        end += 1
    return start, end


def _quoted(line: str, start: int, end: int) -> tuple[int, int]:
    r"""Widen a quoted value past the escaped quotes in it to its closing quote (or the line's end).

    detect-secrets' keyword plugin stops a value at an escaped quote (``"abc\"def12345"`` gives
    ``abc\``): what follows up to the closing quote is the secret too.
    """
    quote = line[start - 1] if start > 0 else ""
    if quote not in ('"', "'", "`"):
        return start, end
    while end < len(line) and line[end] == quote and line[end - 1] == "\\":
        close = line.find(quote, end + 1)
        end = close if close >= 0 else len(line)
    return start, end


def _occurrences(line: str, value: str) -> Iterable[tuple[int, int]]:
    """Every place ``value`` stands in ``line``."""
    at = line.find(value)
    while at >= 0:
        yield at, at + len(value)
        at = line.find(value, at + len(value))


def _in_line(line: str) -> tuple[tuple[str, tuple[int, int] | None], ...]:
    """Every secret and every piece of personal data in one line, each once, in the order they stand.

    Lines come back again and again (an author's name, a tag, a line kept by an amend): each is
    scanned once per process.
    """
    return _scanned(line)


@functools.lru_cache(maxsize=8192)
def _scanned(line: str) -> tuple[tuple[str, tuple[int, int] | None], ...]:
    found: list[tuple[str, tuple[int, int] | None]] = []

    def add(kind: str, span: tuple[int, int] | None) -> None:
        # The same secret seen by two detectors (a quoted password: detect-secrets' keyword plugin
        # and the password pattern) is one secret.
        if span is None or not any(s is not None and span[0] < s[1] and s[0] < span[1] for _, s in found):
            found.append((kind, span))

    def add_formats(formats: Iterable[Format]) -> None:
        for fmt in formats:
            for match in fmt.pattern.finditer(line):
                value = match.group(fmt.group)
                if value and (fmt.check is None or fmt.check(value)):
                    add(fmt.kind, match.span(fmt.group))

    # Most exact first: a secret two detectors see keeps the first one's kind.
    add_formats(FORMATS)
    for kind, where in personaldata.find(line):
        add(kind, where)
    for secret in _scanner()(line):
        value = secret.secret_value or ""
        spans: list[tuple[int, int] | None] = [_quoted(line, *_token(line, *at)) for at in _occurrences(line, value)]
        for span in spans or [None]:
            add(str(secret.type), span)
    add_formats(CONTEXT_FORMATS)
    return tuple(sorted(found, key=lambda f: f[1] or (-1, -1)))


def find(text: str) -> list[Finding]:
    """Every secret in ``text``, in the order it stands (several on a line each); an empty list when there is none.

    The lines of a private key, from its ``BEGIN`` line to its ``END`` line, are each a finding:
    masking hides the whole key, not its first line.
    """
    found: list[Finding] = []
    in_key = False
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if in_key:
            found.append(Finding("private key", number, (0, len(line))))
            end = PRIVATE_KEY_END.search(line)
            # Another key may begin on the line this one ends on (a line break lost between two).
            in_key = end is None or _key_left_open(line, end.end())
            continue
        found.extend(Finding(kind, number, span) for kind, span in _in_line(line))
        in_key = _key_left_open(line)
    return found


def _key_left_open(line: str, at: int = 0) -> bool:
    """Whether a private key begins in ``line`` (from ``at`` on) and does not end in it."""
    while begin := PRIVATE_KEY_BEGIN.search(line, at):
        end = PRIVATE_KEY_END.search(line, begin.end())
        if end is None:
            return True
        at = end.end()
    return False


def refuse(text: str, *, what: str = "text") -> None:
    """Raise :class:`~gitmem.errors.SecretFound` when ``text`` carries a secret.

    Personal data raises its subclass :class:`~gitmem.errors.PersonalDataFound`.
    """
    found = find(text)
    if not found:
        return
    first = found[0]
    where = f" on line {first.line}" if "\n" in text else ""
    kinds = tuple(dict.fromkeys(f.kind for f in found))
    if first.personal:
        raise PersonalDataFound(
            f"{what} carries what looks like {article(first.kind)}{where}; gitmem refuses personal data, because git "
            "history keeps it forever: leave the number out (name the person or account instead) and try again",
            kinds=kinds)
    raise SecretFound(
        f"{what} carries what looks like {article(first.kind)}{where}; gitmem refuses it, because git history "
        "keeps it forever: remove the secret (say where it lives instead, e.g. 'the key is in the "
        "DEPLOY_KEY variable') and try again",
        kinds=kinds)


def mask(text: str) -> tuple[str, int]:
    """``text`` with each found secret replaced by ``[secret removed]``, and how many were found.

    A line whose secret cannot be located exactly is replaced whole.
    """
    found = find(text)
    if not found:
        return text, 0
    lines = text.splitlines()
    by_line: dict[int, list[tuple[int, int] | None]] = {}
    for finding in found:
        by_line.setdefault(finding.line, []).append(finding.span)
    for number, spans in by_line.items():
        line = lines[number - 1]
        if any(span is None for span in spans):
            lines[number - 1] = "[secret removed]"
            continue
        # A line's spans never overlap (find keeps one finding where two detectors see the same
        # secret). Back to front: a replacement shorter or longer than its secret moves what follows it.
        for start, end in sorted((s for s in spans if s is not None), reverse=True):
            line = line[:start] + "[secret removed]" + line[end:]
        lines[number - 1] = line
    return "\n".join(lines), len(found)
