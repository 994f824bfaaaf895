"""Maintenance and backup: pack each namespace's repository; a backup that plain git restores.

::

    maintain(ns)    pack refs and objects under the namespace's maintenance lock (see repo/packing.py),
                    with the object counts before and after; the workers run it on a daily beat
    backup(dest)    per namespace a git bundle of every ref, plus what no repository holds (keys.json,
                    secret_key) and a MANIFEST.json; secrets and bundles mode 0600, the folder 0700
    restore(src)    a backup into a home that has none of it (what docs/backup.md's plain-git commands do,
                    with checks: the bundles' heads match the manifest, nothing is overwritten)

``state/`` (search indexes, usage logs, run state, the embedded broker) is derived and is not
backed up: it is rebuilt on first use. Uses recorded since the last ``gitmem fold`` live only there.
"""

from __future__ import annotations

import builtins
import json
import os
import shutil
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .concepts import iso, now
from .errors import InvalidInput, NotFound
from .repo import Buffers, Fence, KeyStore, Namespaces, ObjectCounts, RunState, check_namespace, packing
from .settings import Settings

MANIFEST = "MANIFEST.json"
BUNDLES = "repos"
#: Files of the home that no repository holds, backed up as they are (mode 0600).
KEYS, SECRET_KEY = "keys.json", "secret_key"
WATCHED = "ingest/watched.json"


@dataclass(frozen=True)
class Maintained:
    """One namespace packed: its object store before and after, and how long it took."""

    namespace: str
    before: ObjectCounts
    after: ObjectCounts
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"namespace": self.namespace, "before": self.before.to_dict(), "after": self.after.to_dict(),
                "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class BackedUp:
    """A backup written to ``dest``, as its manifest describes it."""

    dest: Path
    manifest: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: where, and the manifest."""
        return {"dest": str(self.dest), **self.manifest}


@dataclass(frozen=True)
class Restored:
    """A backup restored into ``home``: each namespace's ``main``, and the files copied."""

    home: Path
    namespaces: dict[str, str]
    files: builtins.list[str]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"home": str(self.home), "namespaces": self.namespaces, "files": self.files}


def gitmem_version() -> str:
    """The installed gitmem's version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gitmem")
    except PackageNotFoundError:
        return "unknown"


class Maintenance:
    """Packing, backup and restore for every namespace under one home."""

    def __init__(self, namespaces: Namespaces, settings: Settings) -> None:
        self.namespaces = namespaces
        self.settings = settings

    def _lock(self, namespace: str, *, wait: bool = False) -> AbstractContextManager[Fence]:
        return RunState(self.settings.state_dir, namespace).lock("maintenance", wait=wait)

    def maintain(self, namespace: str) -> Maintained:
        """Pack ``namespace``'s repository; raises :class:`~gitmem.repo.AlreadyRunning` if it is being packed."""
        repo = self.namespaces.open(namespace).store.path
        with self._lock(namespace):
            started = time.perf_counter()
            before = packing.count_objects(repo)
            packing.pack(repo)
            after = packing.count_objects(repo)
        return Maintained(namespace, before, after, time.perf_counter() - started)

    # --- backup ----------------------------------------------------------------------------------

    def backup(self, dest: Path, namespaces: builtins.list[str] | None = None) -> BackedUp:
        """Write a backup of ``namespaces`` (default: all) and the home's keys and secret to ``dest``.

        ``dest`` must be new or an empty folder. Each namespace is bundled under its maintenance
        lock (waiting for a running maintenance), so no pack disappears under the bundle.
        """
        names = list(namespaces) if namespaces else self.namespaces.names()
        for name in names:
            self.namespaces.open(name)  # NamespaceNotFound, before anything is written
        if not names:
            raise NotFound(f"there are no namespaces in {self.settings.repos_dir} to back up")
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise InvalidInput(f"{dest} is not an empty folder; back up into a new or empty folder")
        created = not dest.exists()
        try:
            return self._write_backup(dest, sorted(set(names)))
        except BaseException:
            if created:
                shutil.rmtree(dest, ignore_errors=True)
            elif dest.is_dir():
                for child in dest.iterdir():
                    _remove(child)
            raise

    def _write_backup(self, dest: Path, names: builtins.list[str]) -> BackedUp:
        dest.mkdir(mode=0o700, parents=True, exist_ok=True)
        dest.chmod(0o700)
        (dest / BUNDLES).mkdir(mode=0o700)
        bundled: dict[str, Any] = {}
        for name in names:
            bundle = dest / BUNDLES / f"{name}.bundle"
            with self._lock(name, wait=True):
                refs = packing.bundle(self.namespaces.repo_path(name), bundle)
            bundled[name] = {"bundle": f"{BUNDLES}/{bundle.name}", "main": refs.get("refs/heads/main"),
                             "refs": len([ref for ref in refs if ref != "HEAD"]),
                             "bytes": bundle.stat().st_size}
        files: dict[str, str] = {}
        for source, what in ((KeyStore(self.settings.home).path, "API keys (hashed)"),
                             (self.settings.secret_key_file, "the page sessions' signing key"),
                             (self.settings.home / WATCHED, "the Slack channels whose messages are ingested")):
            if source.is_file():
                name = str(source.relative_to(self.settings.home))
                _write_private(dest / name, source.read_bytes())
                files[name] = what
        not_included = {"state/": "derived (search indexes, usage logs, run state, broker): rebuilt on use"}
        for name in names:
            # Messages acknowledged and not yet distilled live only here: not derived state.
            buffers = self.namespaces.buffers(name) if self.namespaces.has_buffers(name) else None
            if isinstance(buffers, Buffers):
                target = f"ingest/{name}.sqlite"
                buffers.copy_to(dest / target)
                files[target] = f"{name}'s conversation buffers (messages not yet distilled, ids seen)"
            elif buffers is not None:
                not_included[f"{name}'s conversation buffers"] = (
                    "in Redis (shared by the hosts): back them up with Redis's own persistence")
        if self.settings.secret_key:
            not_included["GITMEM_SECRET_KEY"] = "set in the environment: keep it with your configuration"
        manifest = {
            "what": "gitmem backup: a git bundle of every ref per namespace, and the files no repository holds",
            "created": iso(now()),
            "gitmem_version": gitmem_version(),
            "git_version": packing.git_version(),
            "home": str(self.settings.home),
            "namespaces": bundled,
            "files": files,
            "not_included": not_included,
            "restore": "gitmem restore-backup THIS_FOLDER, or with git alone as docs/backup.md shows",
        }
        _write_private(dest / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
        return BackedUp(dest, manifest)

    # --- restore ---------------------------------------------------------------------------------

    def restore(self, source: Path) -> Restored:
        """Restore the backup in ``source`` into this home, which must hold none of it yet."""
        if not source.is_dir():
            raise InvalidInput(f"{source} is not a folder; give the folder `gitmem backup` wrote")
        manifest = _read_manifest(source)
        bundles: dict[str, tuple[Path, str]] = {}
        for name, entry in manifest["namespaces"].items():
            bundle = source / BUNDLES / f"{check_namespace(name)}.bundle"
            if not bundle.is_file():
                raise InvalidInput(f"the backup has no bundle for namespace {name!r} (looked for {bundle})")
            heads = packing.bundle_refs(bundle)
            if heads.get("refs/heads/main") != entry.get("main"):
                raise InvalidInput(f"{bundle} does not hold the main the manifest names ({entry.get('main')}); "
                                   "the backup is damaged")
            bundles[name] = (bundle, heads["refs/heads/main"])
        known = {KEYS, SECRET_KEY, WATCHED} | {f"ingest/{name}.sqlite" for name in bundles}
        files = sorted(name for name in known if (source / name).is_file())
        targets = {self.settings.home / name for name in files}
        targets |= {self.namespaces.repo_path(name) for name in bundles}
        present = sorted(str(path) for path in targets if path.exists())
        if present:
            raise InvalidInput(f"{', '.join(present)} exist already; restore into a home without them "
                               "(set GITMEM_HOME to a new folder, or move them away)")
        restored: list[Path] = []
        try:
            for name, (bundle, main) in bundles.items():
                repo = self.namespaces.repo_path(name)
                refs = packing.restore(bundle, repo)
                restored.append(repo)
                if refs.get("refs/heads/main") != main:
                    raise InvalidInput(f"restoring {name} gave main {refs.get('refs/heads/main')}, not {main}")
            for name in files:
                _write_private(self.settings.home / name, (source / name).read_bytes())
                restored.append(self.settings.home / name)
        except BaseException:
            for path in restored:
                _remove(path)
            raise
        return Restored(self.settings.home, {name: main for name, (_, main) in bundles.items()}, files)


def _read_manifest(source: Path) -> dict[str, Any]:
    path = source / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(f"{source} is not a gitmem backup: it has no {MANIFEST}") from None
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("namespaces"), dict):
        raise InvalidInput(f"{path} is not a gitmem backup manifest: it lists no namespaces")
    if not all(isinstance(entry, dict) for entry in manifest["namespaces"].values()):
        raise InvalidInput(f"{path} is not a gitmem backup manifest: a namespace entry is not a mapping")
    return manifest


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _write_private(path: Path, data: bytes) -> None:
    """Write ``path`` readable by its owner only (mode 0600), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(tmp, path)
