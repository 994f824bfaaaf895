"""``gitmem credential``: a git credential helper that gives git the gitmem key for a server.

A clone URL with the key in it (``http://agent:KEY@host/git/default.git``) keeps the key in
``.git/config`` for anyone who reads the folder. Instead, tell git to ask gitmem::

    git config --global credential.http://memory:8000.helper '!gitmem credential'

git then runs ``gitmem credential get`` and writes ``protocol=http``, ``host=memory:8000`` (and
more ``key=value`` lines) to its standard input; the answer is ``username=gitmem`` and
``password=<key>``. The key comes from the file ``gitmem agent install --url --key`` keeps keys
in (by server; ``$XDG_CONFIG_HOME/gitmem/agent-keys.json``, the user's alone), else from
``$GITMEM_KEY`` when ``$GITMEM_URL`` is unset or names the same server. After a key typed at
git's prompt works, git runs ``store`` and the key is kept in that file; a refused key is
``erase`` d from it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

import click

from ..errors import InvalidInput
from .base import main

#: Keys look like this; anything else git offers to ``store`` is someone else's password.
KEY_PREFIX = "gmk_"


def keys_file() -> Path:
    """Where keys for servers are kept: outside any repository, the user's alone."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gitmem" / "agent-keys.json"


def read_keys() -> dict[str, str]:
    """Server URL -> key, from :func:`keys_file` ({} when there is none)."""
    try:
        data = json.loads(keys_file().read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def write_keys(keys: dict[str, str]) -> Path:
    """Replace the kept keys (mode 0600, written beside and renamed in)."""
    path = keys_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(keys, out, indent=2)
    os.replace(tmp, path)
    return path


def save_key(url: str, key: str) -> Path:
    """Keep ``key`` for the server at ``url``; the file's path."""
    keys = read_keys()
    if keys.get(url) == key:
        return keys_file()
    keys[url] = key
    return write_keys(keys)


def _origin(url: str) -> tuple[str, str] | None:
    """A URL's scheme and ``host[:port]``, lower-cased; None when it has no host."""
    parts = urlsplit(url.strip())
    host = parts.netloc.rpartition("@")[2].lower()
    return (parts.scheme.lower(), host) if parts.scheme and host else None


def key_for(protocol: str, host: str) -> str | None:
    """The key for the server at ``protocol://host``: a kept one, else ``$GITMEM_KEY`` for ``$GITMEM_URL``'s server."""
    wanted = (protocol.lower(), host.lower())
    for url, key in read_keys().items():
        if _origin(url) == wanted:
            return key
    given = os.environ.get("GITMEM_KEY")
    named = os.environ.get("GITMEM_URL")
    # The environment's key belongs to the environment's server; another host never gets it.
    if given and (not named or _origin(named) == wanted):
        return given
    return None


def read_request(text: str) -> dict[str, str]:
    """The ``key=value`` lines git sends (up to a blank line), with ``url=`` split into protocol and host."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        name, sep, value = line.partition("=")
        if sep:
            fields[name.strip()] = value
    if "url" in fields and ("protocol" not in fields or "host" not in fields):
        origin = _origin(fields["url"])
        if origin is not None:
            fields.setdefault("protocol", origin[0])
            fields.setdefault("host", origin[1])
    return fields


@main.command("credential")
@click.argument("operation", type=click.Choice(["get", "store", "erase"]))
def credential(operation: str) -> None:
    """A git credential helper: answer git with the gitmem key for the server it asks about.

    Set it up once per server, then clone without a key in the URL:

    \b
        git config --global credential.http://memory:8000.helper '!gitmem credential'
        git clone http://memory:8000/git/default.git team-memory

    The key is the one `gitmem agent install --url URL --key KEY` keeps for the server, else
    $GITMEM_KEY (when $GITMEM_URL is unset or names the same server); a key typed at git's prompt
    is kept once it worked (git's `store`) and dropped when the server refused it (`erase`).
    """  # noqa: D301 - click's \b marker is a real backspace; r""" breaks it
    request = read_request(sys.stdin.read())
    protocol, host = request.get("protocol", ""), request.get("host", "")
    if not protocol or not host:
        raise InvalidInput("git sent no protocol and host; run this as git's credential helper "
                           "(git config credential.helper '!gitmem credential')")
    server = f"{protocol.lower()}://{host.lower()}"
    if operation == "get":
        key = key_for(protocol, host)
        if key is not None:
            click.echo(f"username={request.get('username') or 'gitmem'}\npassword={key}")
        return
    password = request.get("password", "")
    if not password.startswith(KEY_PREFIX):
        return  # not a gitmem key: not ours to keep or drop
    if operation == "store":
        save_key(server, password)
    elif read_keys().get(server) == password:
        keys = read_keys()
        del keys[server]
        write_keys(keys)
