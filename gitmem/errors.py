"""The exceptions gitmem raises, one tree so front ends can map them to exit codes and HTTP statuses.

::

    GitmemError
     ├── InvalidInput            bad text, type, title, id, namespace or option   (CLI exit 2, HTTP 400)
     │    └── SecretFound        the text carries an API key, token, private key or password
     │         └── PersonalDataFound  ... or a national id, payment card or IBAN number
     ├── NotFound                                                                   (CLI exit 3, HTTP 404)
     │    ├── NamespaceNotFound
     │    ├── MemoryNotFound
     │    ├── CommitNotFound
     │    └── ReviewNotFound
     ├── Conflict                                                                   (CLI exit 4, HTTP 409)
     │    ├── RevertConflict     the revert would not apply cleanly
     │    ├── RefRaceLost        compare-and-swap kept losing to other writers
     │    │    └── RefLocked     git's lock file on the branch stays in the way (names it)
     │    ├── MergeConflict      a reviewed commit no longer applies to main
     │    ├── StaleReview        main changed the reviewed memories meanwhile
     │    ├── AlreadyRunning     another consolidation of the namespace holds its lock
     │    ├── LeaseLost          a run's lock expired (another host may hold it): it wrote nothing more
     │    ├── SyncConflict       `gitmem sync`: local edits and the server's main changed the same files
     │    └── ReviewStillOpen    a consolidation review of the namespace waits for a decision
     ├── MalformedConcept        a memory file that does not parse, a path git refuses (HTTP 422)
     ├── PermissionDenied        the caller may not do this                          (HTTP 403)
     └── Unavailable             a backing service (LLM, broker) did not answer      (HTTP 503)

Every message says what was wrong and, where it helps, what to do instead.
"""

from __future__ import annotations


class GitmemError(Exception):
    """Base of every error gitmem raises on purpose."""

    exit_code = 1
    http_status = 500


class InvalidInput(GitmemError, ValueError):
    """The caller passed something gitmem cannot accept; nothing was changed."""

    exit_code = 2
    http_status = 400


class SecretFound(InvalidInput):
    """The text carries a secret, which git history would keep forever; nothing was written."""

    def __init__(self, message: str, *, kinds: tuple[str, ...] = ()) -> None:
        """``kinds``: what the secrets look like ("AWS Access Key", "password"), for reports."""
        super().__init__(message)
        self.kinds = kinds


class PersonalDataFound(SecretFound):
    """The text carries personal data (a national id, card or account number); nothing was written."""


class NotFound(GitmemError, LookupError):
    """A namespace, memory, commit or review that does not exist."""

    exit_code = 3
    http_status = 404


class NamespaceNotFound(NotFound):
    """The namespace has no repository yet (``namespace``: which, so each front end can name its own fix)."""

    def __init__(self, message: str, namespace: str | None = None) -> None:
        super().__init__(message)
        self.namespace = namespace


class MemoryNotFound(NotFound):
    """No memory has that id (``replaced_by``: the memory a merge turned it into, when known)."""

    replaced_by: str | None = None


class CommitNotFound(NotFound):
    """The commit id names no commit in the repository."""


class ReviewNotFound(NotFound):
    """No review has that number."""


class Conflict(GitmemError):
    """The change collides with the current state of the repository."""

    exit_code = 4
    http_status = 409


class RevertConflict(Conflict):
    """Reverting the commit would conflict with later changes."""


class RefRaceLost(Conflict):
    """Other writers kept moving the branch; the change was not written."""


class MergeConflict(Conflict):
    """A commit replayed onto main clashes with what main holds now."""

    def __init__(self, commit: str, paths: list[str]) -> None:
        super().__init__(f"commit {commit[:10]} no longer applies to main: it conflicts in {', '.join(paths)}")
        self.commit = commit
        self.paths = paths
class RefLocked(RefRaceLost):
    """A lock file on the branch (``refs/heads/main.lock``) stays in the way of every write."""


class StaleReview(Conflict):
    """The memories under review changed on main after the review was opened."""


class AlreadyRunning(Conflict):
    """Another consolidation of the same namespace holds the lock."""


class LeaseLost(Conflict):
    """A consolidation's lock expired or was taken over; the run stopped before writing more."""


class SyncConflict(Conflict):
    """``gitmem sync``: the local edits and the server's main changed the same files (``files``)."""

    def __init__(self, message: str, files: list[str]) -> None:
        super().__init__(message)
        self.files = files


class ReviewStillOpen(Conflict):
    """A consolidation review of the namespace is open: a new run would overlap it."""

    def __init__(self, message: str, number: int) -> None:
        super().__init__(message)
        self.number = number


class MalformedConcept(GitmemError):
    """A memory file in the repository does not parse, or a path in it is one git refuses."""

    exit_code = 5
    http_status = 422

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class PermissionDenied(GitmemError):
    """The caller is not allowed to do this."""

    exit_code = 6
    http_status = 403


class Unavailable(GitmemError):
    """A service gitmem depends on did not answer."""

    exit_code = 7
    http_status = 503
