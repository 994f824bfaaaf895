"""Exports of a namespace: a ``MEMORY.md`` index, JSON, or an OKF folder of concept files."""

from __future__ import annotations

import json
from pathlib import Path

from . import concepts, ranking
from .errors import InvalidInput
from .repo import Namespaces, is_memory_path
from .templating import render_template

FORMATS = ("memory-md", "json", "okf")


def export(namespaces: Namespaces, namespace: str, fmt: str, dest: Path | None = None) -> str:
    """Export as ``memory-md`` (a MEMORY.md index), ``json``, or ``okf`` (a folder at ``dest``)."""
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown export format {fmt!r}; use memory-md, json, okf or graph")
    at = concepts.now()
    with namespaces.using(namespace) as ns:
        head = ns.synced()
        memories = ns.index.all(states=["active", "pending", "archived"])
        pending = ns.usage.pending()
        potencies = {m.id: ranking.effective_potency(m, at, pending) for m in memories}
        if fmt == "json":
            return json.dumps([m.to_dict() | {"effective_potency": round(potencies[m.id], 4)}
                               for m in memories], ensure_ascii=False, indent=2)
        if fmt == "memory-md":
            # The agents' index: what is in force, not what waits for consolidation to promote it.
            live = [m for m in memories if m.state == "active" and potencies[m.id] >= concepts.ARCHIVE_BELOW]
            live.sort(key=lambda m: -potencies[m.id])
            return render_template("export/MEMORY.md.j2", namespace=namespace, memories=live,
                                   potencies=potencies, types=concepts.TYPES, head=str(head.id))
        if fmt == "okf":
            if dest is None:
                raise InvalidInput("okf export needs a destination folder")
            index_md = render_template("export/okf-index.md.j2", namespace=namespace, memories=memories,
                                       types=concepts.TYPES, generated=concepts.iso(at))
            try:
                if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
                    raise InvalidInput(f"{dest} is not an empty folder; give a new or empty folder")
                for path, data in ns.store.files(head):
                    if is_memory_path(path):
                        target = dest / path
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(data)
                dest.mkdir(parents=True, exist_ok=True)
                (dest / "index.md").write_text(index_md, encoding="utf-8")
            except OSError as exc:
                raise InvalidInput(f"cannot write the export to {exc.filename or dest}: {exc.strerror}; "
                                   "give a new or empty folder you can write to") from None
            return str(dest)
    raise InvalidInput(f"unknown export format {fmt!r}; use memory-md, json, okf or graph")

