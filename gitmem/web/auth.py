"""Who is calling: API keys (bearer, ``X-API-Key``, HTTP Basic), page sessions, signed webhooks.

A request is authenticated once, in :func:`caller`, and each view then asks :func:`require` for
the role it needs on the namespace it touches. Failures are gitmem errors, so the one error
handler in :mod:`gitmem.web` turns them into JSON (401 or 403) and nothing is changed.

Signed webhooks carry ``X-Gitmem-Timestamp`` (Unix seconds) and ``X-Gitmem-Signature:
sha256=<hex>``, the HMAC-SHA256 of ``<timestamp>.<body>`` with ``settings.hmac_secret``. A
timestamp more than :data:`SIGNATURE_WINDOW` seconds away is refused, and so is a signature seen
before (recorded where every server process sees it: SQLite under the state folder, or Redis when
hosts share one; see :func:`gitmem.repo.replays.replay_guard`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

from flask import current_app, g, request, session

from ..errors import GitmemError
from ..service import ApiKey, KeyStore, MemoryService, ReplayGuard, SignedOut, refusal, role_rank
from . import inputs

SIGNATURE_WINDOW = 300
HMAC_ROLE = "writer"


class Unauthenticated(GitmemError):
    """No credentials, or credentials that match no key (HTTP 401)."""

    exit_code = 8
    http_status = 401


@dataclass(frozen=True)
class Caller:
    """An authenticated caller: a key (from a header or a page session) or a signed webhook."""

    name: str
    via: str  # "key", "session" or "signature"
    key: ApiKey | None = None

    @property
    def role(self) -> str:
        """The caller's role: its key's, or ``writer`` for a signed webhook."""
        return self.key.role if self.key else HMAC_ROLE

    @property
    def source(self) -> str:
        """What a write records as its ``source`` when the request names none.

        The key's kind: a person's key writes as ``user``, an agent's as ``agent``; a signed
        webhook is an integration, so an agent.
        """
        return self.key.source if self.key else "agent"

    def allows(self, namespace: str, role: str) -> bool:
        """Whether the caller has at least ``role`` on ``namespace``."""
        if self.key is not None:
            return self.key.allows(namespace, role)
        return role_rank(role) <= role_rank(HMAC_ROLE)


def keystore() -> KeyStore:
    """The app's API keys."""
    store = current_app.extensions["gitmem.keys"]
    assert isinstance(store, KeyStore)
    return store


def presented_key() -> str | None:
    """The key sent with the request, from ``Authorization`` (Bearer or Basic) or ``X-API-Key``."""
    header = request.headers.get("X-API-Key")
    if header:
        return header.strip()
    auth = request.headers.get("Authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    if scheme.lower() == "basic" and value.strip():
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise Unauthenticated("the Basic credentials are not valid base64 of user:key") from None
        return decoded.partition(":")[2].strip() or None
    return None


def caller(*, allow_signature: bool = False, allow_session: bool = False) -> Caller:
    """Authenticate the request (once) or raise :class:`Unauthenticated`."""
    found = g.get("caller")
    if isinstance(found, Caller):
        return found
    key = presented_key()
    if key is not None:
        stored = keystore().verify(key)
        if stored is None:
            raise Unauthenticated("that API key is not valid (revoked, mistyped or never made)")
        found = Caller(stored.name, "key", stored)
    elif allow_signature and request.headers.get("X-Gitmem-Signature"):
        verify_signature()
        found = Caller("webhook", "signature")
    elif allow_session and session.get("key_id"):
        stored = session_key()
        found = Caller(stored.name, "session", stored)
    else:
        raise Unauthenticated(
            "authentication required: send an API key as 'Authorization: Bearer <key>' or "
            "'X-API-Key: <key>' (make one with `gitmem key create`)"
        )
    g.caller = found
    return found


def session_key() -> ApiKey:
    """The key this page session signed in with; :class:`Unauthenticated` once it signed out or was revoked.

    The cookie is the browser's, so signing out is recorded on the server too (the session's id,
    see :mod:`gitmem.repo.sessions`): a copy of the cookie taken before is refused as well.
    """
    found = g.get("session_key")
    if isinstance(found, ApiKey):
        return found
    sid = session.get("sid")
    if not isinstance(sid, str) or signed_out().ended(sid):
        session.clear()
        raise Unauthenticated("this session was signed out; sign in again")
    stored = keystore().get(str(session.get("key_id")))
    if stored is None:
        session.clear()
        raise Unauthenticated("your key was revoked; sign in again")
    g.session_key = stored
    return stored


def start_session(key: ApiKey) -> None:
    """Sign a page session in with ``key``, under a new session id."""
    session.clear()
    session["sid"] = secrets.token_urlsafe(24)
    session["key_id"], session["key_name"] = key.id, key.name


def end_session() -> None:
    """Sign the page session out, here and in every copy of its cookie, until the cookie would expire."""
    sid = session.get("sid")
    if isinstance(sid, str):
        lifetime = current_app.permanent_session_lifetime.total_seconds()
        signed_out().end(sid, time.time() + lifetime)
    session.clear()


def signed_out() -> SignedOut:
    """The page sessions that signed out."""
    service = current_app.extensions["gitmem"]
    assert isinstance(service, MemoryService)
    return service.signed_out


def require(namespace: str, role: str, **how: bool) -> Caller:
    """Authenticate and check that the caller holds at least ``role`` on ``namespace``."""
    who = caller(**how)
    if not who.allows(namespace, role):
        raise refusal(who.name, who.role, namespace, role)
    return who


# --- signed webhooks ------------------------------------------------------------------------------


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header value for a body: ``sha256=<hex>``."""
    mac = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify_signature() -> None:
    """Check the HMAC signature and timestamp of the request body; refuse replays."""
    secret = current_app.extensions["gitmem"].settings.hmac_secret
    if not secret:
        raise Unauthenticated("signed requests are not enabled here (GITMEM_HMAC_SECRET is unset)")
    stamp = request.headers.get("X-Gitmem-Timestamp", "")
    try:
        timestamp = int(stamp)
    except ValueError:
        raise Unauthenticated("X-Gitmem-Timestamp must be the Unix time in seconds") from None
    if abs(time.time() - timestamp) > SIGNATURE_WINDOW:
        raise Unauthenticated(
            f"the signature timestamp is more than {SIGNATURE_WINDOW} s away from now; sign again"
        )
    given = request.headers.get("X-Gitmem-Signature", "").strip()
    expected = sign(secret, timestamp, inputs.raw_body())
    if not hmac.compare_digest(given, expected):
        raise Unauthenticated("the request signature does not match its body")
    replays = current_app.extensions["gitmem.replays"]
    assert isinstance(replays, ReplayGuard)
    if not replays.first_use(given, timestamp):
        raise Unauthenticated("this signed request was already received (replay refused)")
