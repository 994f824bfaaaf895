"""Watched channels: the chat channels a team opted in to have their conversations ingested.

The list is in the shared home, ``$GITMEM_HOME/ingest/watched.json``, so it survives restarts and
every web replica and bot process sees the same one. Like ``keys.json`` it is changed under a
file lock and replaced atomically (written aside, then renamed over), and re-read by a reader
only when the file changed, so asking "is this channel watched?" for every message costs a
``stat``. A watch belongs to a namespace and a channel: a channel moved to another namespace is
not read until someone watches it there.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from .namespace import check_namespace
from .records import SharedRecords

_CHANNEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,99}$")
_ACTOR_LIMIT = 200


def check_channel(channel: Any) -> str:
    """A channel id: 1 to 100 letters, digits and ``. _ : @ + -``, starting with a letter or digit."""
    if not isinstance(channel, str) or not _CHANNEL.match(channel):
        raise InvalidInput(f"a channel id is 1 to 100 letters, digits and . _ : @ + - (such as C0123ABCD), "
                           f"not {channel!r}")
    return channel


@dataclass(frozen=True)
class Watch:
    """One watched channel: the namespace it ingests into, who turned it on and when."""

    namespace: str
    channel: str
    by: str
    since: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


class WatchList:
    """The watched channels of one gitmem home (see the module docstring)."""

    def __init__(self, home: Path) -> None:
        """Keep the list at ``home/ingest/watched.json``."""
        self._file: SharedRecords[tuple[str, str], Watch] = SharedRecords(
            home / "ingest" / "watched.json", lambda w: (w.namespace, w.channel), lambda item: Watch(**item),
            Watch.to_dict)
        self.path = self._file.path

    def get(self, namespace: str, channel: str) -> Watch | None:
        """The watch of ``channel`` into ``namespace``, or None."""
        return self._file.read().get((namespace, channel))

    def list(self, namespace: str | None = None) -> list[Watch]:
        """Every watch, or one namespace's, oldest first."""
        watches = sorted(self._file.read().values(), key=lambda w: (w.since, w.namespace, w.channel))
        return [w for w in watches if namespace is None or w.namespace == namespace]

    def add(self, namespace: str, channel: str, by: str, since: str) -> tuple[Watch, bool]:
        """Watch ``channel`` into ``namespace``; the watch, and False when it was watched already."""
        check_namespace(namespace)
        check_channel(channel)
        if not isinstance(by, str) or not by.strip() or len(by) > _ACTOR_LIMIT or "\n" in by:
            raise InvalidInput(f"who watches is one line of at most {_ACTOR_LIMIT} characters")
        with self._file.editing() as watches:
            found = watches.get((namespace, channel))
            if found is not None:
                return found, False
            watch = watches[(namespace, channel)] = Watch(namespace, channel, by.strip(), since)
        return watch, True

    def remove(self, namespace: str, channel: str) -> Watch | None:
        """Stop watching ``channel`` into ``namespace``; the watch it was, or None if there was none."""
        check_namespace(namespace)
        check_channel(channel)
        with self._file.editing() as watches:
            return watches.pop((namespace, channel), None)
