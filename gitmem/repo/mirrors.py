"""Mirrors: a namespace's branches pushed to upstream remotes (GitHub, GitLab, Gitea, a bare path).

The mirrors of a namespace are kept in its repository's config (``mirror.<name>.url``), in the
shared home, so every host sees them alike. A push sends ``main`` and the review branches
(``+refs/heads/*``, pruning the review branches that closed) with ``git push``; nothing ever
waits for it: the workers push after every change and retry, and a mirror that is down only
falls behind (its status says so) until it answers again.

Credentials come from the environment, through :class:`~gitmem.settings.Settings`
(``GITMEM_MIRROR_CREDENTIALS="github.com=TOKEN,gitlab.example.com=user:TOKEN"``, by host), and
reach git as an HTTP header in its environment (``GIT_CONFIG_*``), never in the repository's
config, on a command line, or in a status. The last outcome of each mirror is kept under the
state folder (``<state>/<namespace>/mirrors.json``).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pygit2

from ..errors import InvalidInput, NotFound, Unavailable
from ..settings import Settings
from .packing import git_program
from .store import Store

REFSPEC = "+refs/heads/*:refs/heads/*"
PUSH_TIMEOUT = 120
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


def check_url(url: str) -> str:
    """A mirror URL gitmem takes: http(s), ssh, git@host:path, or an absolute path to a repository."""
    if not isinstance(url, str) or not url.strip() or any(c.isspace() for c in url.strip()):
        raise InvalidInput(f"{url!r} is not a git URL")
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme in ("http", "https", "ssh", "git") and parts.netloc:
        if parts.password:
            raise InvalidInput("put no password or token in a mirror URL (it would sit in the repository's "
                               "config); set GITMEM_MIRROR_CREDENTIALS=host=TOKEN in the environment instead")
        return url
    if parts.scheme == "file" or url.startswith("/"):
        return url
    if re.match(r"^[\w.-]+@[\w.-]+:", url):  # scp-like ssh: git@github.com:team/memory.git
        return url
    raise InvalidInput(f"{url!r} is not a git URL gitmem mirrors to: use https://, ssh://, git@host:path "
                       "or an absolute path")


def shown(url: str) -> str:
    """A URL as statuses show it: without any user password."""
    parts = urlsplit(url)
    if parts.password:
        return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{parts.hostname}"))
    return url


class Mirrors:
    """The mirrors of one namespace: their configuration, pushes and last outcomes."""

    def __init__(self, store: Store, state: Path, settings: Settings) -> None:
        self.store = store
        self.state = state
        self.settings = settings

    # --- configuration -----------------------------------------------------------------------------

    def list(self) -> dict[str, str]:
        """Mirror name -> URL."""
        config = pygit2.Repository(str(self.store.path)).config  # read fresh: another process may add one
        out: dict[str, str] = {}
        for entry in config:
            match = re.fullmatch(r"mirror\.(.+)\.url", entry.name)
            if match:
                out[match.group(1)] = str(entry.value)
        return dict(sorted(out.items()))

    def add(self, url: str, name: str | None = None) -> str:
        """Add a mirror (its name: ``name``, else taken from the URL's host); the name."""
        url = check_url(url)
        name = name or _name_from(url)
        if not _NAME.match(name):
            raise InvalidInput(f"mirror name {name!r}: use 1 to 40 lower-case letters, digits, '_' or '-'")
        existing = self.list()
        if name in existing:
            raise InvalidInput(f"the namespace has a mirror named {name!r} already ({shown(existing[name])}); "
                               "remove it first or pick another --name")
        self.store.repo.config[f"mirror.{name}.url"] = url
        return name

    def remove(self, name: str) -> None:
        """Stop mirroring to ``name`` (what it holds stays there)."""
        if name not in self.list():
            raise NotFound(f"no mirror named {name!r}; see `gitmem mirror list`")
        del self.store.repo.config[f"mirror.{name}.url"]
        status = self._read_status()
        status.pop(name, None)
        self._write_status(status)

    # --- pushing -------------------------------------------------------------------------------------

    def push(self, only: str | None = None) -> dict[str, dict[str, Any]]:
        """Push the branches to every mirror (or ``only`` one); each mirror's new status.

        One push at a time per namespace (a file lock), so the status records them in order. A
        mirror that fails is recorded as failing, with git's words; the others go on.
        """
        mirrors = self.list()
        if only is not None:
            if only not in mirrors:
                raise NotFound(f"no mirror named {only!r}; see `gitmem mirror list`")
            mirrors = {only: mirrors[only]}
        self.state.mkdir(parents=True, exist_ok=True)
        with open(self.state / "mirrors.lock", "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            refs = self._refs()
            status = self._read_status()
            for name, url in mirrors.items():
                entry = status.get(name, {})
                entry.update(url=shown(url), last_attempt=time.time())
                try:
                    self._push_one(url)
                except Unavailable as exc:
                    entry.update(ok=False, error=str(exc), failures=int(entry.get("failures", 0)) + 1)
                else:
                    entry.update(ok=True, error=None, failures=0, last_ok=time.time(), pushed=refs)
                status[name] = entry
            self._write_status(status)
            return {name: status[name] for name in mirrors}

    def _push_one(self, url: str) -> None:
        git = git_program("to push to mirrors")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.state),
            "GIT_DIR": str(self.store.path),
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new",
            "GIT_CONFIG_NOSYSTEM": "1",
            "LC_ALL": "C",
        }
        config = [("safe.directory", "*")]
        token = self._credential(url)
        if token is not None:
            config.append((f"http.{url}.extraHeader", f"Authorization: Basic {token}"))
        env["GIT_CONFIG_COUNT"] = str(len(config))
        for i, (key, value) in enumerate(config):
            env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
        try:
            done = subprocess.run([git, "push", "--porcelain", "--prune", url, REFSPEC], env=env,
                                  capture_output=True, text=True, timeout=PUSH_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"{shown(url)} did not answer within {PUSH_TIMEOUT} s") from None
        if done.returncode != 0:
            said = " ".join((done.stderr or done.stdout).split())
            raise Unavailable(f"pushing to {shown(url)} failed: {said[-500:] or f'git exited {done.returncode}'}")

    def _credential(self, url: str) -> str | None:
        """``base64(user:token)`` for the URL's host from ``settings.mirror_credentials``, if any."""
        host = urlsplit(url).hostname
        if not host or urlsplit(url).scheme not in ("http", "https"):
            return None
        value = self.settings.mirror_credentials.get(host)
        if not value:
            return None
        user, sep, token = value.partition(":")
        pair = f"{user}:{token}" if sep else f"gitmem:{value}"
        return base64.b64encode(pair.encode()).decode()

    # --- status -------------------------------------------------------------------------------------

    def status(self) -> dict[str, dict[str, Any]]:
        """Each mirror: its URL, whether the last push worked, its error, and whether it is behind now."""
        refs = self._refs()
        recorded = self._read_status()
        out = {}
        for name, url in self.list().items():
            entry = dict(recorded.get(name, {}))
            entry["url"] = shown(url)
            entry.setdefault("ok", None)  # never pushed yet
            entry["behind"] = entry.get("pushed") != refs
            entry.pop("pushed", None)
            out[name] = entry
        return out

    def behind(self) -> bool:
        """Whether any mirror lacks the branches as they are now (or failed last time)."""
        return any(entry["behind"] or entry["ok"] is False for entry in self.status().values())

    def _refs(self) -> dict[str, str]:
        return {ref: self.store.head_id(ref) or "" for ref in sorted(self.store.refs("refs/heads/"))}

    def _read_status(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads((self.state / "mirrors.json").read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_status(self, status: dict[str, dict[str, Any]]) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        temp = self.state / f"mirrors.json.{os.getpid()}"
        temp.write_text(json.dumps(status, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(temp, self.state / "mirrors.json")


def _name_from(url: str) -> str:
    host = urlsplit(url).hostname or ""
    if not host:
        match = re.match(r"^[\w.-]+@([\w.-]+):", url)
        host = match.group(1) if match else "local"
    name = re.sub(r"[^a-z0-9]+", "-", host.lower().removeprefix("www.").split(".")[0]).strip("-")
    return name or "upstream"
