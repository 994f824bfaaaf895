"""Refuse text that carries a secret: an API key, a token, a private key or a password.

Git history is forever: a key committed once stays in every clone even after ``forget --purge``.
Every write path cleans its text through :mod:`gitmem.concepts`, which calls :func:`refuse`; ingestion
masks such messages with :func:`mask` before anything is extracted from them.

The scanning is Yelp's ``detect-secrets`` (its provider plugins: AWS, GitHub, GitLab, Slack, Stripe,
OpenAI, JWT, private keys, basic-auth URLs, ``password = "..."`` keywords and more), run line by line
with its false-positive filters. Its two entropy plugins are left out: on prose they flag ordinary
words and commit ids. A few patterns it lacks are added here: today's OpenAI and Anthropic key
formats, Google API keys, and a password given in words ("the password is ...", "密码是 ...").
Nothing is verified over the network.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .errors import SecretFound
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

# Formats detect-secrets 1.5 does not know, each with the kind a refusal names.
_EXTRA = (
    ("OpenAI key", re.compile(r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}")),
    ("Anthropic key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{32,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("Slack token", re.compile(r"\bxox[abposr]-[0-9A-Za-z-]{10,}")),
    ("private key", re.compile(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    # "the password is hunter2", "pwd: x8#kLq": a value that is one word with a digit or a symbol in it.
    ("password", re.compile(
        r"(?i)\b(?:password|passwd|pwd|passphrase)\s*(?:is|=|:)\s*['\"]?(?![${<%])"
        r"(?=[^\s'\"]*[\d!@#$%^&*])[^\s'\"]{6,}")),
    ("password", re.compile(
        r"(?:密码|口令|密钥|令牌)\s*(?:是|为|[:：=])\s*(?![${<%])(?=[^\s，。]*[\dA-Za-z])[^\s，。]{6,}")),
)

_lock = threading.Lock()
_scan_line: Callable[[str], Iterable[Any]] | None = None


@dataclass(frozen=True)
class Finding:
    """One secret found: what kind it looks like and the 1-based line it is on."""

    kind: str
    line: int
    span: tuple[int, int] | None = None  # where in the line, when known


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


_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_.+/=-]")


def _token(line: str, start: int, end: int) -> tuple[int, int]:
    """Widen a match to the whole token around it (a plugin may report only a key's prefix)."""
    while start > 0 and _TOKEN_CHARS.match(line[start - 1]):
        start -= 1
    while end < len(line) and _TOKEN_CHARS.match(line[end]):
        end += 1
    return start, end


def find(text: str) -> list[Finding]:
    """Every secret in ``text``, in line order; an empty list when there is none."""
    found: list[Finding] = []
    scan = _scanner()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        kinds: dict[str, tuple[int, int] | None] = {}
        for kind, pattern in _EXTRA:
            match = pattern.search(line)
            if match:
                kinds.setdefault(kind, match.span())
        for secret in scan(line):
            kind = str(secret.type)
            value = secret.secret_value or ""
            at = line.find(value) if value else -1
            if kind.lower() not in {k.lower() for k in kinds}:
                kinds[kind] = _token(line, at, at + len(value)) if at >= 0 else None
        found.extend(Finding(kind, number, span) for kind, span in sorted(kinds.items()))
    return found


def refuse(text: str, *, what: str = "text") -> None:
    """Raise :class:`~gitmem.errors.SecretFound` when ``text`` carries a secret."""
    found = find(text)
    if found:
        first = found[0]
        where = f" on line {first.line}" if "\n" in text else ""
        raise SecretFound(
            f"{what} carries what looks like {article(first.kind)}{where}; gitmem refuses it, because git history "
            "keeps it forever: remove the secret (say where it lives instead, e.g. 'the key is in the "
            "DEPLOY_KEY variable') and try again",
            kinds=tuple(dict.fromkeys(f.kind for f in found)))


def mask(text: str) -> tuple[str, int]:
    """``text`` with each found secret replaced by ``[secret removed]``, and how many were found.

    A line whose secret cannot be located exactly is replaced whole.
    """
    found = find(text)
    if not found:
        return text, 0
    lines = text.splitlines()
    by_line: dict[int, list[Finding]] = {}
    for finding in found:
        by_line.setdefault(finding.line, []).append(finding)
    for number, findings in by_line.items():
        line = lines[number - 1]
        spans = [f.span for f in findings]
        if any(span is None for span in spans):
            lines[number - 1] = "[secret removed]"
            continue
        merged: list[list[int]] = []
        for start, end in sorted(s for s in spans if s is not None):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        for start, end in reversed(merged):
            line = line[:start] + "[secret removed]" + line[end:]
        lines[number - 1] = line
    return "\n".join(lines), len(found)
