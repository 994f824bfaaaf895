"""The secret formats gitmem knows beyond detect-secrets' plugins: patterns, and what a value must look like.

Pure data and small checks, no I/O. Each :class:`Format` names the kind a refusal reports, a
pattern, the group that is the secret itself (what masking replaces) and, for the formats that
match on context (a keyword, a sentence) rather than on a vendor's prefix, a check that the value
looks like a secret and not like prose, a placeholder or a variable.

The prefixed formats follow gitleaks' rules (github.com/gitleaks/gitleaks, ``config/gitleaks.toml``:
``github-fine-grained-pat``, ``npm-access-token``, ``huggingface-access-token``,
``digitalocean-pat`` and the others named below), loosened where a vendor's length varies.
detect-secrets 1.5 knows none of them: its npm plugin finds a token only in an ``.npmrc`` line, its
keyword plugin only a quoted value.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "CONTEXT_FORMATS", "FORMATS", "PRIVATE_KEY_BEGIN", "PRIVATE_KEY_END", "Format", "looks_like_assigned_password",
    "looks_like_password", "looks_like_secret",
]


@dataclass(frozen=True)
class Format:
    """One secret format: its kind, its pattern, the group that is the secret, and a check of that value."""

    kind: str
    pattern: re.Pattern[str]
    group: str | int = 0
    check: Callable[[str], bool] | None = None


# Values that stand for a secret without being one: "${TOKEN}", "$API_KEY", "<your key>", "%PASS%",
# "{{ secrets.X }}", "process.env.API_KEY", "os.environ['X']", "your-api-key-here", "xxxx".
_PLACEHOLDER = re.compile(
    r"^[<{\[(*]|^\$\w|\$[{(]|\{\{|<[^>]*>|%\w+%|[()\[\]]|\.\.\.|(?i:^(?:[a-z_]\w*\.)+[a-z_]\w*$)|"
    r"(?i:your|placeholder|changeme|redacted|dummy|xxxx|\*\*\*|_here\b)",
)
# An environment variable's name, a constant: API_KEY_2, AWS_SECRET_ACCESS_KEY.
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]*$")
# Lower-case words joined by separators: a model, a package or a setting's name (bert-base-uncased2);
# a word and a number: a quantity, a version (8192tokens, v20240101).
_WORDS = re.compile(r"^[a-z]+(?:[-_.][a-z0-9]+)+$|^\d+[A-Za-z]+$|^[A-Za-z]+\d+$")


def _entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def looks_like_secret(value: str) -> bool:
    """Whether a value assigned to a secret's name (``API_KEY=...``) looks like the secret itself.

    At least 8 characters, random-looking (3 bits of entropy a character), with a digit and a
    letter (or, 20 characters and longer, both cases), and none of a placeholder's, a variable's or
    a constant's shapes.
    """
    if len(value) < 8 or _PLACEHOLDER.search(value) or _CONSTANT.match(value) or _WORDS.match(value):
        return False
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    mixed = len(value) >= 20 and any(c.islower() for c in value) and any(c.isupper() for c in value)
    return letters and (digits or mixed) and _entropy(value) >= 3.0


def looks_like_password(value: str) -> bool:
    """Whether a word said to be a password ("the password is ...") is one: 6 characters or more, not a placeholder.

    The patterns have already asked for a digit or a symbol in it, which ordinary words lack.
    """
    return len(value) >= 6 and not _PLACEHOLDER.search(value)


def looks_like_assigned_password(value: str) -> bool:
    """Whether a value given to a password's name (``DB_PASSWORD=...``) is one: a password, not a constant."""
    return (looks_like_password(value) and not _CONSTANT.match(value)
            and any(not c.isalpha() for c in value))


# Names a secret goes by in configuration: DB_PASSWORD; API_KEY, aws_secret_access_key, client-secret.
_PASSWORD_NAME = r"(?:passw(?:or)?d|passphrase|pwd)"
_SECRET_NAME = (
    r"(?:api[_-]?key|apikey|secret|token|access[_-]?key|private[_-]?key"
    r"|signing[_-]?key|encryption[_-]?key|master[_-]?key|credentials?)"
)


def _assigned(name: str) -> re.Pattern[str]:
    """A line giving a name that holds ``name`` a value: ``[export ]NAME = value``, ``name: "value"``."""
    return re.compile(
        r"(?i)(?<![\w.-])(?:export\s+|set\s+)?[\w.-]{0,40}?" + name + r"[\w.-]{0,20}['\"`]?"
        r"[ \t]*(?:=|:=|:|=>)[ \t]*['\"`]?(?P<value>[^\s'\"`;,]{8,200})")

PRIVATE_KEY_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
PRIVATE_KEY_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")

# Formats a vendor's prefix gives away: they run before detect-secrets, so they name the kind.
FORMATS: tuple[Format, ...] = (
    Format("OpenAI key", re.compile(r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}")),
    Format("Anthropic key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{32,}")),
    Format("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    # gitleaks: gcp client secrets start GOCSPX- (Google's OAuth client secret format since 2021).
    Format("Google OAuth client secret", re.compile(r"\bGOCSPX-[A-Za-z0-9_-]{28}")),
    Format("Slack token", re.compile(r"\bxox[abposr]-[0-9A-Za-z-]{10,}")),
    Format("Slack token", re.compile(r"\bxapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{32,}")),
    Format("private key", PRIVATE_KEY_BEGIN),
    # gitleaks: github-fine-grained-pat (82 word characters; GitHub has not promised the length).
    Format("GitHub Token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{50,}")),
    # gitleaks: npm-access-token.
    Format("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    # gitleaks: huggingface-access-token, huggingface-organization-api-token.
    Format("Hugging Face token", re.compile(r"\b(?:hf_|api_org_)[A-Za-z0-9]{34,40}\b")),
    # gitleaks: digitalocean-pat, -access-token, -refresh-token.
    Format("DigitalOcean token", re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b")),
    # gitleaks: shopify-access-token and its custom, private-app and shared-secret kin.
    Format("Shopify token", re.compile(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b")),
    # gitleaks: square-access-token (detect-secrets knows only Square's OAuth secret, sq0csp-).
    Format("Square token", re.compile(r"\bsq0atp-[A-Za-z0-9_-]{22,60}")),
    # gitleaks: linear-api-key, heroku-api-key-v2, doppler-api-token, age-secret-key.
    Format("Linear key", re.compile(r"\blin_api_[A-Za-z0-9]{40}\b")),
    Format("Heroku key", re.compile(r"\bHRKU-AA[0-9a-zA-Z_-]{58}\b")),
    Format("Doppler token", re.compile(r"\bdp\.pt\.[A-Za-z0-9]{43}\b")),
    Format("age secret key", re.compile(r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b")),
)

# Formats found by their context (a name, a sentence, a command): they run after detect-secrets and
# the personal data, so a secret those name more exactly keeps that name.
CONTEXT_FORMATS: tuple[Format, ...] = (
    # A secret's name given a value, quoted or not, as in a shell, .env, INI, YAML or TOML line:
    # "export AWS_SECRET_ACCESS_KEY=...", "aws_secret_access_key = ...", "API_KEY=...", "DB_PASSWORD: ...".
    Format("password", _assigned(_PASSWORD_NAME), "value", looks_like_assigned_password),
    Format("secret key or token", _assigned(_SECRET_NAME), "value", looks_like_secret),
    # "the password is hunter2!", "pwd: x8#kLq", "My password for the company system is SuperSecret123!":
    # a value that is one word with a digit or a symbol in it.
    Format("password", re.compile(
        r"(?i)\b(?:password|passwd|pwd|passphrase)\b(?:[ \t]+(?:for|of|to|on|at|in)\b[^.,;:=\n]{1,60}?)?"
        r"[ \t]*(?:\bis\b|\bwas\b|=|:)[ \t]*['\"`]?(?P<value>(?![${<%])(?=[^\s'\"`]*[\d!@#$%^&*])[^\s'\"`]{6,})"),
        "value", looks_like_password),
    Format("password", re.compile(
        r"(?:密码|口令|密钥|令牌)\s*(?:是|为|[:：=])\s*(?P<value>(?![${<%])(?=[^\s，。]*[\dA-Za-z])[^\s，。]{6,})"),
        "value", looks_like_password),
    # A .netrc line: machine HOST login USER password SECRET (curl, git and ftp read them).
    Format("netrc password", re.compile(
        r"\b(?:machine[ \t]+\S+|default)(?:[ \t]+(?:login|account)[ \t]+\S+)*[ \t]+password[ \t]+(?P<value>\S{4,})"),
        "value", lambda value: not _PLACEHOLDER.search(value)),
    # An HTTP Authorization header with its credentials (curl -H, an HTTP client's log).
    Format("authorization header", re.compile(
        r"(?i)\bauthorization[ \t]*:[ \t]*(?:bearer|basic|token)[ \t]+(?P<value>[A-Za-z0-9_~+/.=-]{8,})"),
        "value", looks_like_secret),
    # docker login -p SECRET (the registry's password on a command line).
    Format("password", re.compile(
        r"\bdocker[ \t]+login\b[^\n]*?[ \t](?:-p|--password)(?:[ \t]+|=)['\"]?(?P<value>[^\s'\"]{6,})"),
        "value", looks_like_password),
)
