"""Settings: the one place gitmem reads the environment.

Every front end (CLI, web app, Celery worker, Slack bot) builds a :class:`Settings` with
:meth:`Settings.from_env` and hands it to :class:`gitmem.service.MemoryService`. Tests build one
directly. Secrets live in the environment or in a file outside the repository
(``GITMEM_CONFIG``, a YAML file of the same keys in lower case without the prefix).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from .errors import InvalidInput


def default_home() -> Path:
    """Per-user data directory: ``$XDG_DATA_HOME/gitmem`` or ``~/.local/share/gitmem``."""
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "gitmem"


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _mapping(value: str) -> dict[str, str]:
    """Parse ``"C123=team,C456=ops"`` into a dict."""
    out: dict[str, str] = {}
    for part in _split(value):
        key, sep, val = part.partition("=")
        if not sep or not key.strip() or not val.strip():
            raise InvalidInput(f"expected KEY=VALUE pairs separated by commas, got {part!r}")
        out[key.strip()] = val.strip()
    return out


# Similarity scores that gate merges and clusters: each must lie from 0 to 1.
THRESHOLDS = ("high_similarity", "cluster_threshold", "pair_threshold", "semantic_threshold", "semantic_duplicate",
              "recall_floor")
EMBEDDINGS = ("offline", "none", "endpoint")
# Sizes, counts and times, each with the least value that makes sense.
AT_LEAST: dict[str, float] = {
    "max_text_chars": 1, "max_title_chars": 1, "merged_max_chars": 1, "max_request_bytes": 1,
    "consolidate_min_active": 0, "consolidate_interval_hours": 0, "consolidate_schedule_hours": 1e-6,
    "maintain_schedule_hours": 1e-6, "review_max_changes": 1,
    "broker_visibility_timeout": 1, "lock_lease_seconds": 1, "llm_timeout": 0.001, "llm_retries": 0,
    "embed_timeout": 0.001, "embed_retries": 0, "semantic_neighbours": 1, "mirror_retry_seconds": 1,
    "ingest_flush_tokens": 1, "ingest_idle_seconds": 0, "ingest_claim_seconds": 1, "ingest_retry_seconds": 0,
}


@dataclass(frozen=True)
class Settings:
    """Everything gitmem can be configured with; immutable once built."""

    home: Path = field(default_factory=default_home)
    #: Derived state (indexes, usage logs, run state); None: ``home/state``. A host's local disk
    #: when ``home`` is a network file system, where SQLite is not safe.
    state_home: Path | None = None
    default_namespace: str = "default"

    # Memory limits and write gate.
    max_text_chars: int = 4000
    max_title_chars: int = 200
    high_similarity: float = 0.8

    # Consolidation.
    cluster_threshold: float = 0.3
    pair_threshold: float = 0.85
    merged_max_chars: int = 200
    consolidate_min_active: int = 15
    consolidate_interval_hours: float = 24.0
    consolidate_schedule_hours: float = 24.0
    #: Changes a consolidation review holds at most; a later run proposes the rest.
    review_max_changes: int = 50

    # Maintenance: packing every namespace on the workers' beat.
    maintain_schedule_hours: float = 24.0

    # Celery: unset broker means the embedded, serverless one under ``home``.
    broker_url: str | None = None
    result_backend: str | None = None
    # Seconds a Redis broker waits for a task's acknowledgement before handing it to another worker.
    broker_visibility_timeout: float = 3600.0

    # Several hosts: Redis for the consolidation lock and the webhook replay window (default: the
    # broker, when it is Redis), and how long a run's lock lasts unless its holder renews it.
    redis_url: str | None = None
    lock_lease_seconds: float = 60.0

    # LLM port: unset base URL means the offline rule-based default.
    llm_base_url: str | None = None
    llm_model: str = "gpt-4o-mini"
    llm_api_key: str | None = None
    llm_timeout: float = 30.0
    llm_retries: int = 2

    # Embeddings port: "offline" (the encoder in the wheel), "none" (words only), or "endpoint":
    # an OpenAI-compatible /v1/embeddings server, also chosen by setting embed_base_url alone.
    embeddings: str = "offline"
    embed_base_url: str | None = None
    embed_model: str = "text-embedding-3-small"
    embed_api_key: str | None = None
    embed_timeout: float = 30.0
    embed_retries: int = 2
    # Cosine at which two memories are semantic neighbours (consolidation candidates), how many
    # neighbours each keeps, the cosine at which an agent's statement is the same as a memory
    # (the write gate), and the least cosine a recalled memory needs to its query.
    semantic_threshold: float = 0.45
    semantic_neighbours: int = 8
    semantic_duplicate: float = 0.85
    recall_floor: float = 0.45

    # Ingestion: a conversation's active buffer is sealed and distilled at this many tokens, or
    # after this long without a message; a worker holds a sealed buffer this long while it
    # distils it, and a buffer whose distilling failed is tried again after this long (doubling,
    # up to an hour).
    ingest_flush_tokens: int = 2000
    ingest_idle_seconds: float = 900.0
    ingest_claim_seconds: float = 600.0
    ingest_retry_seconds: float = 60.0

    # Web.
    secret_key: str | None = None
    hmac_secret: str | None = None
    max_request_bytes: int = 256 * 1024
    maintainers: tuple[str, ...] = ()
    direct_amend_roles: tuple[str, ...] = ("admin", "reviewer")
    #: Host headers /mcp answers besides localhost's (``name`` or ``name:port``, ``name:*`` for any
    #: port; ``*`` for any host): the MCP SDK's guard against DNS rebinding.
    mcp_allowed_hosts: tuple[str, ...] = ()

    # Slack.
    slack_bot_token: str | None = None
    slack_signing_secret: str | None = None
    slack_app_token: str | None = None
    slack_api_url: str | None = None
    slack_channel_namespaces: Mapping[str, str] = field(default_factory=dict)
    slack_reviewers: tuple[str, ...] = ()
    slack_review_channel: str | None = None
    # Where people reach the web app (https://gitmem.example.com): links from Slack to a review.
    public_url: str | None = None

    # Mirrors: tokens by host for pushing to upstream remotes ("github.com=TOKEN,gitlab.example.com=user:TOKEN"),
    # and how often the workers look for a mirror that fell behind (one that was down) to push again.
    mirror_credentials: Mapping[str, str] = field(default_factory=dict)
    mirror_retry_seconds: float = 60.0

    # Celery queue name: separate deployments (or test runs) sharing one broker use different ones.
    celery_queue: str = "gitmem"

    def __post_init__(self) -> None:
        for name in THRESHOLDS:
            value = getattr(self, name)
            # NaN fails the range check too.
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise InvalidInput(f"GITMEM_{name.upper()} must be a number from 0 to 1, not {value!r}")
        if self.embeddings not in EMBEDDINGS:
            raise InvalidInput(f"GITMEM_EMBEDDINGS must be one of {', '.join(EMBEDDINGS)}, not {self.embeddings!r}")
        if self.embeddings == "endpoint" and not self.embed_base_url:
            raise InvalidInput("GITMEM_EMBEDDINGS=endpoint needs GITMEM_EMBED_BASE_URL (an OpenAI-compatible "
                               "server's /v1 URL)")
        for name, low in AT_LEAST.items():
            value = getattr(self, name)
            if not value >= low:  # NaN fails too
                raise InvalidInput(f"GITMEM_{name.upper()} must be at least {low}, not {value!r}")
        if self.public_url is not None and not re.match(r"^https?://[^\s/]+", self.public_url):
            raise InvalidInput(f"GITMEM_PUBLIC_URL must be the web app's http(s) address, not {self.public_url!r}")

    @property
    def repos_dir(self) -> Path:
        """Where the bare repositories live, one per namespace."""
        return self.home / "repos"

    @property
    def state_dir(self) -> Path:
        """Derived state: search indexes, usage logs, run state, broker files (``state_home``)."""
        return self.state_home if self.state_home is not None else self.home / "state"

    @property
    def shared_redis_url(self) -> str | None:
        """The Redis every host shares locks and seen webhook signatures through, if any."""
        if self.redis_url:
            return self.redis_url
        if self.broker_url and self.broker_url.startswith(("redis://", "rediss://")):
            return self.broker_url
        return None

    @property
    def secret_key_file(self) -> Path:
        """The page sessions' signing key, made here when ``secret_key`` is not set."""
        return self.home / "secret_key"

    def with_(self, **changes: Any) -> Settings:
        """Return a copy with some fields changed."""
        return replace(self, **changes)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``GITMEM_*`` (and ``SLACK_*``) variables and ``GITMEM_CONFIG``."""
        env = dict(os.environ if environ is None else environ)
        values: dict[str, Any] = {}
        config_file = env.get("GITMEM_CONFIG")
        if config_file:
            values.update(_load_config_file(Path(config_file)))
        known = {f.name: f for f in fields(cls)}
        for name in known:
            for key in (f"GITMEM_{name.upper()}", name.upper() if name.startswith("slack_") else ""):
                if key and key in env:
                    values[name] = env[key]
        return cls(**{name: _coerce(name, value, known[name].type) for name, value in values.items()})


def _load_config_file(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise InvalidInput(f"cannot read GITMEM_CONFIG file {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise InvalidInput(f"GITMEM_CONFIG file {path} is not valid YAML: {' '.join(str(exc).split())}") from exc
    if not isinstance(data, dict):
        raise InvalidInput(f"GITMEM_CONFIG file {path} must hold a mapping of settings")
    known = {f.name for f in fields(Settings)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise InvalidInput(f"GITMEM_CONFIG file {path}: unknown settings {', '.join(unknown)}")
    return data


def _coerce(name: str, value: Any, annotation: Any) -> Any:
    """Turn strings from the environment into the field's type."""
    kind = str(annotation)
    if not isinstance(value, str):
        if "tuple" in kind and isinstance(value, list):
            return tuple(str(v) for v in value)
        if kind in ("Path", "Path | None") and value is not None:  # a YAML number or list for a folder
            raise InvalidInput(f"setting {name}: {value!r} is not a path")
        return value
    if "None" in kind and value == "":
        return None
    try:
        if kind in ("Path", "Path | None"):
            return Path(value).expanduser()
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if "tuple" in kind:
            return _split(value)
        if "Mapping" in kind:
            return _mapping(value)
    except (ValueError, TypeError) as exc:
        raise InvalidInput(f"setting {name}: cannot read {value!r}: {exc}") from exc
    return value
