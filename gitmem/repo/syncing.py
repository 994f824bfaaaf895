"""``gitmem sync DIR``: a clone, or a plain folder of Markdown concepts, two ways with a gitmem server.

One sync: commit the memory files edited by hand (``<type>/<name>.md`` and the README; anything
else in the folder is left out and named), fetch the server's main, rebase the local commits on
it, and push them, to main when the key may (a reviewer or admin key) and otherwise to the
review branch ``refs/heads/review/sync-<user>``, where a push opens a review or updates the one
open. A rebase that conflicts is undone and every conflicting file is named with the way out.

A plain folder (no ``.git``) becomes a clone on its first sync: its files are laid over the
server's main and only additions and edits are taken (a file missing from the folder is not a
deletion, since the folder never had it). The key travels to git in the environment
(``GIT_CONFIG_*``), never on a command line or in ``.git/config``, and only for the server named:
it is an ``http.<url>.extraHeader``, so git sends it nowhere else. A ``--url`` given for a clone
whose ``origin`` is elsewhere is the server the sync talks to (its main is tracked as
``refs/gitmem/sync/main``, leaving ``origin``'s alone).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..concepts import TYPES
from ..errors import Conflict, InvalidInput, PermissionDenied, SyncConflict, Unavailable
from ..wording import plural
from .packing import git_program
from .rewrite import RECORDS

ADOPTING = "gitmem-adopting"
ORIGIN_MAIN = "refs/remotes/origin/main"
# Where the main of a server named with --url, other than origin, is tracked.
OTHER_MAIN = "refs/gitmem/sync/main"
_REMOTE = re.compile(r"^remote: ?(.*?)\s*$", re.MULTILINE)


@dataclass
class SyncResult:
    """What one sync did (or, with ``dry_run``, would do)."""

    path: str
    url: str
    dry_run: bool = False
    adopted: bool = False  # a plain folder that became a clone
    committed: list[str] = field(default_factory=list)  # files of the local commit
    commit: str | None = None
    left_out: list[str] = field(default_factory=list)  # files that are not memories
    pulled: int = 0  # commits of the server's main taken in
    pushed_to: str | None = None  # "main" or the review branch
    pushed: int = 0  # commits sent
    review: int | None = None
    conflicts: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # the server's remote: lines

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return dict(self.__dict__)


class Clone:
    """A working folder that git runs in, with the server's key in git's environment."""

    def __init__(self, path: Path, url: str, key: str | None, actor: str, *, remote: str = "origin") -> None:
        """``remote``: what git fetches from and pushes to (``origin``, or the URL itself)."""
        self.path = path
        self.url = url
        self.actor = actor
        self.remote = remote
        self.tracking = ORIGIN_MAIN if remote == "origin" else OTHER_MAIN
        self.git = git_program("for gitmem sync")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", str(path)),
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
            "GIT_CONFIG_COUNT": "0",
        }
        config: list[tuple[str, str]] = []
        if key and url:
            # Scoped to the server named: a clone's other remotes never see the key.
            basic = base64.b64encode(f"{actor}:{key}".encode()).decode()
            config.append((f"http.{_without_userinfo(url)}.extraHeader", f"Authorization: Basic {basic}"))
        config += [("user.name", actor), ("user.email", f"{_slug(actor)}@gitmem.invalid")]
        for i, (name, value) in enumerate(config):
            self.env[f"GIT_CONFIG_KEY_{i}"] = name
            self.env[f"GIT_CONFIG_VALUE_{i}"] = value
        self.env["GIT_CONFIG_COUNT"] = str(len(config))

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``git args`` in the folder; a failure raises with git's own words when ``check``."""
        done = subprocess.run([self.git, *args], cwd=self.path, env=self.env, capture_output=True, text=True,
                              timeout=600)
        if check and done.returncode != 0:
            said = (done.stderr or done.stdout).strip()
            if "returned error: 401" in said or "Authentication failed" in said or "could not read Username" in said:
                raise PermissionDenied(f"the server refused the key for {self.url}: give a valid key with --key "
                                       "or GITMEM_KEY")
            if "returned error: 403" in said:
                raise PermissionDenied(f"the key may not read {self.url} (a key for another namespace?)")
            if "Could not resolve host" in said or "Failed to connect" in said or "Couldn't connect" in said:
                raise Unavailable(f"cannot reach {self.url}: {said.splitlines()[-1]}")
            raise InvalidInput(f"git {' '.join(args[:2])} failed in {self.path}: {said}")
        return done

    def out(self, *args: str) -> str:
        """The standard output of ``git args``, stripped."""
        return self.run(*args).stdout.strip()


def sync(path: Path, *, url: str | None, key: str | None, actor: str, to: str = "auto",
         message: str | None = None, dry_run: bool = False) -> SyncResult:
    """Sync ``path`` with the server (see the module docstring); ``to``: auto, main or review."""
    if to not in ("auto", "main", "review"):
        raise InvalidInput(f"--to must be auto, main or review, not {to!r}")
    if not path.is_dir():
        raise InvalidInput(f"{path} is not a folder")
    # A plain folder is adopted until its first sync committed: a sync cut short redoes it.
    adopted = not (path / ".git").exists() or (path / ".git" / ADOPTING).exists()
    if adopted and not url:
        raise InvalidInput(f"{path} is not a git clone: give the server's URL with --url (or GITMEM_URL), "
                           "e.g. http://gitmem.example.com/git/default.git")
    probe = Clone(path, url or "", key, actor)
    if not adopted:
        if (path / ".git" / "rebase-merge").exists() or (path / ".git" / "rebase-apply").exists():
            raise Conflict(f"a rebase is under way in {path}: fix the conflicting files, `git add` them and run "
                           "`git rebase --continue` (or `git rebase --abort`), then sync again")
        found = probe.run("remote", "get-url", "origin", check=False).stdout.strip()
        if not url:
            if not found:
                raise InvalidInput(f"{path} has no remote 'origin': give the server's URL with --url")
            url = found
    else:
        found = ""
    assert url is not None
    # The URL named is the server: origin when it is origin's (or there is none yet), else the URL.
    clone = Clone(path, url, key, actor, remote="origin" if not found or found == url else url)
    result = SyncResult(str(path), url, dry_run=dry_run, adopted=adopted)
    if dry_run:
        return _dry_run(clone, result)
    if not (path / ".git").exists():
        clone.run("init", "-q", "-b", "main")
        (path / ".git" / ADOPTING).write_text("gitmem sync adopts this folder: its files are laid over the server's\n")
        clone.run("remote", "add", "origin", url)
    elif not clone.run("remote", "get-url", "origin", check=False).stdout.strip():
        clone.run("remote", "add", "origin", url)
    clone.run("fetch", "-q", clone.remote, f"+refs/heads/main:{clone.tracking}")
    if not adopted:
        _check_not_before_purge(clone)
    if adopted:
        clone.run("reset", "-q", clone.tracking)  # the folder's files over the server's main
    _commit(clone, result, message, removals=not adopted)
    if adopted:
        clone.run("checkout", "-q", "--", ".")  # the server's files the folder lacked: now a whole clone
        (path / ".git" / ADOPTING).unlink(missing_ok=True)
    local = clone.out("rev-parse", "HEAD")
    server = clone.out("rev-parse", clone.tracking)
    result.pulled = int(clone.out("rev-list", "--count", f"HEAD..{server}"))
    if result.pulled:
        rebased = clone.run("rebase", "-q", server, check=False)
        if rebased.returncode != 0:
            result.conflicts = clone.out("diff", "--name-only", "--diff-filter=U").split()
            clone.run("rebase", "--abort", check=False)
            raise _conflict(result, local, server)
    ahead = int(clone.out("rev-list", "--count", f"{server}..HEAD"))
    if not ahead:
        return result
    _push(clone, result, to, ahead)
    return result


def _check_not_before_purge(clone: Clone) -> None:
    """Refuse to sync a clone whose history a purge on the server rewrote since (nothing is changed)."""
    listed = clone.run("ls-tree", "--name-only", f"{clone.tracking}:{RECORDS}", check=False)
    if listed.returncode != 0:
        return  # no purge ever
    rewritten: dict[str, str] = {}
    for name in listed.stdout.split():
        try:
            record = json.loads(clone.out("show", f"{clone.tracking}:{RECORDS}/{name}"))
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("rewritten"), list):
            rewritten |= dict.fromkeys(map(str, record["rewritten"]), str(record.get("recover") or "re-clone"))
    if not rewritten:
        return
    mine = clone.out("rev-list", "HEAD", "--not", clone.tracking).split()
    old = next((c for c in mine if c in rewritten), None)
    if old is not None:
        raise Conflict(f"{clone.path} is a clone from before a purge (it has commit {old[:10]}): {rewritten[old]}; "
                       "nothing was pushed")


def _conflict(result: SyncResult, local: str, server: str) -> SyncConflict:
    files = ", ".join(result.conflicts) or "(git named none)"
    return SyncConflict(
        f"your edits and the server's main both changed {files}; nothing was pushed and your commit "
        f"{local[:10]} is kept as it was. Either resolve: `git -C {result.path} rebase {server[:10]}`, fix "
        "those files, `git add` them, `git rebase --continue`, then `gitmem sync` again; or take the "
        f"server's version and drop yours: `git -C {result.path} reset --hard {server[:10]}`", result.conflicts)


def _dry_run(clone: Clone, result: SyncResult) -> SyncResult:
    """What a sync would commit, pull and push; nothing in the folder or on the server changes."""
    listed = clone.run("ls-remote", clone.url, "refs/heads/main").stdout.split()
    server = listed[0] if listed else None
    if result.adopted:
        result.committed = sorted(str(p.relative_to(clone.path)) for t in TYPES
                                  for p in (clone.path / t).glob("*.md") if p.is_file())
        result.left_out = _strays(clone.path)
        result.pushed_to = "main or review"
        return result
    for _, name in _changes(clone):
        (result.committed if _staged(name) else result.left_out).append(name)
    if server is not None and clone.run("cat-file", "-e", server, check=False).returncode != 0:
        result.pulled = -1  # the server has commits this clone has not fetched: a sync takes them in
    elif server is not None:
        result.pulled = int(clone.out("rev-list", "--count", f"HEAD..{server}"))
        result.pushed = int(clone.out("rev-list", "--count", f"{server}..HEAD")) + (1 if result.committed else 0)
    result.pushed_to = "main or review" if result.pushed or result.committed else None
    return result


def _changes(clone: Clone) -> list[tuple[str, str]]:
    """``(status, path)`` of every file that differs from HEAD, untracked ones included."""
    status = clone.run("status", "--porcelain", "-z", "--untracked-files=all", "--no-renames").stdout
    return [(entry[:2], entry[3:]) for entry in status.split("\0") if entry]


def _commit(clone: Clone, result: SyncResult, message: str | None, *, removals: bool) -> None:
    """Commit the memory files edited by hand; name the files left out."""
    changes = _changes(clone)
    wanted = [name for code, name in changes if _staged(name) and (removals or "D" not in code)]
    # A folder being adopted lacks the server's other files (its .gitmem/ discussions): not edits of its own.
    result.left_out = [name for code, name in changes if not _staged(name) and (removals or "D" not in code)]
    if wanted:
        clone.run("add", "-A", "--", *wanted)
    if result.left_out:
        clone.run("reset", "-q", "--", *result.left_out, check=False)  # staged by hand: not for the server
    result.committed = [s for s in clone.out("diff", "--cached", "--name-only").split("\n") if s]
    if not result.committed:
        return
    summary = message or f"{plural(len(result.committed), 'memory file')} edited by hand"
    clone.run("commit", "-q", "-m", summary)
    result.commit = clone.out("rev-parse", "HEAD")


def _push(clone: Clone, result: SyncResult, to: str, ahead: int) -> None:
    """Push to main (when ``to`` allows and the key may), else to this user's review branch."""
    result.pushed = ahead
    if to in ("auto", "main"):
        done = clone.run("push", "--porcelain", clone.remote, "HEAD:refs/heads/main", check=False)
        said = _REMOTE.findall(done.stderr)
        if done.returncode == 0:
            result.pushed_to, result.messages = "main", said
            clone.run("fetch", "-q", clone.remote, f"+refs/heads/main:{clone.tracking}")
            clone.run("merge", "-q", "--ff-only", clone.tracking, check=False)  # gitmem's completion
            return
        refused_by_role = any("may not push to main" in line for line in said)
        if to == "main" or not refused_by_role:
            raise _refusal(clone, done, said)
    branch = f"refs/heads/review/sync-{_slug(clone.actor)}"
    done = clone.run("push", "--porcelain", clone.remote, f"+HEAD:{branch}", check=False)
    said = _REMOTE.findall(done.stderr)
    if done.returncode != 0:
        raise _refusal(clone, done, said)
    result.pushed_to, result.messages = branch, said
    if "[up to date]" in done.stdout:
        result.pushed = 0
        result.messages = [f"{branch} holds these commits already: its review waits for a reviewer"]
    for line in said:
        found = re.search(r"review #(\d+)", line)
        if found:
            result.review = int(found.group(1))


def _refusal(clone: Clone, done: subprocess.CompletedProcess[str], said: list[str]) -> InvalidInput:
    lines = [s for s in said if s] or [(done.stderr or done.stdout).strip()]
    return InvalidInput(f"the server refused the push from {clone.path}:\n  " + "\n  ".join(lines))


def _staged(name: str) -> bool:
    folder, _, rest = name.partition("/")
    return name == "README.md" or (folder in TYPES and rest.endswith(".md") and "/" not in rest)


def _strays(path: Path) -> list[str]:
    out = []
    for item in sorted(path.rglob("*")):
        rel = str(item.relative_to(path))
        if item.is_file() and not rel.startswith(".git/") and not _staged(rel):
            out.append(rel)
    return out


def _without_userinfo(url: str) -> str:
    """``url`` without a ``user:password@`` part (git matches ``http.<url>.*`` against the request's URL)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _slug(actor: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", actor.lower()).strip("-")[:40] or "someone"
