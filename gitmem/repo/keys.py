"""API keys: who may read, write, review or administer which namespace.

A key is ``gmk_<id>_<secret>``. Only its SHA-256 is kept, in ``$GITMEM_HOME/keys.json`` (mode
0600), beside the key's id, name, namespace (or ``*`` for every namespace), role and kind. The
key itself is shown once, when it is made. Roles are ranked; each includes the ones below it::

    reader    read memories, recall, context, history, reviews; clone over HTTP
    writer    remember, forget (archive), feedback, comment on reviews, trigger consolidation
    reviewer  approve and reject reviews, amend directly, revert commits, restore versions
    admin     create namespaces, purge memories

A key's kind says who uses it: a ``person`` (what a key is unless made with ``--kind agent``,
and what keys made before kinds existed are) or an ``agent``. What a key writes without naming
its ``source`` is recorded as that kind's: ``user`` for a person, ``agent`` for an agent, so the
write gate treats a person's statement as a person's (added beside, never merged into another).

The file is re-read when it changes on disk, so ``gitmem key revoke`` takes effect in a running
server, on this host or any other sharing the file, at its next request. Every change replaces
the file (a new inode), which is how a change is seen even within one tick of a coarse clock.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..concepts import iso, now
from ..errors import InvalidInput, NotFound, PermissionDenied
from ..wording import article
from .namespace import check_namespace
from .records import SharedRecords

ROLES = ("reader", "writer", "reviewer", "admin")
KINDS = ("person", "agent")
ALL_NAMESPACES = "*"
_KEY = re.compile(r"^gmk_([0-9a-f]{12})_([A-Za-z0-9_-]{20,100})$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._@+-]{0,63}$")


def role_rank(role: str) -> int:
    """Position of a role in :data:`ROLES`; an unknown role is refused."""
    try:
        return ROLES.index(role)
    except ValueError:
        raise InvalidInput(f"unknown role {role!r}; use one of: {', '.join(ROLES)}") from None


def refusal(name: str, role: str, namespace: str, needed: str) -> PermissionDenied:
    """The error every front end gives a caller ``name`` whose ``role`` is below ``needed`` on ``namespace``."""
    return PermissionDenied(
        f"{name} ({role}) may not do this in namespace {namespace!r}: it needs {article(needed)} key for that namespace"
    )


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ApiKey:
    """A stored key, without its secret."""

    id: str
    name: str
    namespace: str
    role: str
    created: str
    digest: str
    kind: str = "person"  # keys from before kinds existed were made by people, for people

    @property
    def source(self) -> str:
        """The ``source`` a write through this key is recorded with when it names none."""
        return "agent" if self.kind == "agent" else "user"

    def covers(self, namespace: str) -> bool:
        """Whether the key applies to ``namespace``."""
        return self.namespace in (ALL_NAMESPACES, namespace)

    def allows(self, namespace: str, role: str) -> bool:
        """Whether the key grants at least ``role`` on ``namespace``."""
        return self.covers(namespace) and role_rank(self.role) >= role_rank(role)

    def to_dict(self) -> dict[str, Any]:
        """The key's public fields (never the digest)."""
        return {"id": self.id, "name": self.name, "namespace": self.namespace, "role": self.role,
                "kind": self.kind, "created": self.created}


class KeyStore:
    """The keys of one gitmem home."""

    def __init__(self, home: Path) -> None:
        self._file: SharedRecords[str, ApiKey] = SharedRecords(
            home / "keys.json", lambda k: k.id, lambda item: ApiKey(**item), asdict, mode=0o600)
        self.path = self._file.path

    # --- reading -------------------------------------------------------------------------------

    def list(self, namespace: str | None = None) -> list[ApiKey]:
        """Every key, or those that apply to one namespace, oldest first."""
        keys = sorted(self._file.read().values(), key=lambda k: (k.created, k.id))
        return [k for k in keys if namespace is None or k.covers(namespace)]

    def verify(self, key: str) -> ApiKey | None:
        """The stored key matching a presented key, or None."""
        match = _KEY.match(key.strip()) if isinstance(key, str) else None
        if match is None:
            return None
        found = self._file.read().get(match.group(1))
        if found is None or not hmac.compare_digest(found.digest, _digest(key.strip())):
            return None
        return found

    def get(self, key_id: str) -> ApiKey | None:
        """A stored key by id."""
        return self._file.read().get(key_id)

    # --- writing -------------------------------------------------------------------------------

    def create(self, namespace: str, role: str, name: str | None = None, *,
               kind: str = "person") -> tuple[str, ApiKey]:
        """Make a key for a ``person`` or an ``agent``; returns the key (shown once) and what is stored of it."""
        if namespace != ALL_NAMESPACES:
            check_namespace(namespace)
        role_rank(role)
        if kind not in KINDS:
            raise InvalidInput(f"unknown key kind {kind!r}; use one of: {', '.join(KINDS)}")
        key_id = secrets.token_hex(6)
        name = f"{role}-{key_id}" if name is None else name.strip()
        if not _NAME.match(name):
            raise InvalidInput(
                f"invalid key name {name!r}: 1 to 64 letters, digits, spaces or '._@+-'"
            )
        secret = f"gmk_{key_id}_{secrets.token_urlsafe(32)}"
        stored = ApiKey(key_id, name, namespace, role, iso(now()), _digest(secret), kind)
        with self._file.editing() as keys:
            keys[key_id] = stored
        return secret, stored

    def revoke(self, key_id: str) -> ApiKey:
        """Delete a key by id (or by the full key); it stops working at once."""
        match = _KEY.match(key_id.strip())
        key_id = match.group(1) if match else key_id.strip()
        with self._file.editing() as keys:
            gone = keys.pop(key_id, None)
        if gone is None:
            raise NotFound(f"no key {key_id!r}; `gitmem key list` shows the ids")
        return gone
