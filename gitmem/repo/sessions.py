"""Page sessions that were signed out: a copied session cookie must die with the sign-out.

A page session lives in a signed cookie, which the server keeps nothing of: clearing it at
``/logout`` clears the browser's copy, while a copy taken before (from a shared machine, a proxy
log, a backup of a browser profile) stays valid for as long as its signature does (Flask's 31
days). So each sign-in gets a random session id, and signing out records that id here until the
cookie would have expired anyway; a session whose id is recorded is refused.

The record is in the shared home, ``$GITMEM_HOME/signed-out.json`` (mode 0600), kept like
``keys.json`` (:class:`~gitmem.repo.records.SharedRecords`): every web process, on every host
sharing the home, sees a sign-out at its next request. Entries past their expiry are dropped at
the next sign-out, so the file holds at most a month of sign-outs.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .records import SharedRecords


@dataclass(frozen=True)
class SignedOutSession:
    """A session id's digest (the id itself is a bearer secret) and when its cookie expires."""

    session: str
    until: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


class SignedOut:
    """The sessions of one gitmem home that were signed out (see the module docstring)."""

    def __init__(self, home: Path) -> None:
        """Keep the record at ``home/signed-out.json``."""
        self._file: SharedRecords[str, SignedOutSession] = SharedRecords(
            home / "signed-out.json", lambda s: s.session, lambda item: SignedOutSession(**item),
            SignedOutSession.to_dict, mode=0o600)
        self.path = self._file.path

    def end(self, session_id: str, until: float) -> None:
        """Record that ``session_id`` signed out; it stays refused until ``until`` (Unix seconds)."""
        now = time.time()
        with self._file.editing() as ended:
            for key in [k for k, s in ended.items() if s.until <= now]:
                del ended[key]
            ended[_digest(session_id)] = SignedOutSession(_digest(session_id), until)

    def ended(self, session_id: str) -> bool:
        """Whether ``session_id`` was signed out."""
        return _digest(session_id) in self._file.read()


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()
