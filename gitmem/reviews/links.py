"""Links that follow a merge: after one is approved, no ``related`` link points at a memory it took away.

A memory elsewhere in the namespace may link (``related``) to a memory that an approved merge
removed. Approving the merge also points such links at the memory it became, in one more commit,
so the graph and an agent reading the links never meet a memory that is gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .. import concepts
from ..errors import MalformedConcept
from ..repo import Change, Commit, Store
from ..wording import plural


def successor(gone: Mapping[str, str], memory_id: str) -> str:
    """What ``memory_id`` became through the merges in ``gone`` (a merged memory merged again included)."""
    seen = {memory_id}
    while memory_id in gone:
        memory_id = gone[memory_id]
        if memory_id in seen:  # a cycle cannot come from merges; stop rather than loop
            break
        seen.add(memory_id)
    return memory_id


def relinked(store: Store, tip: Commit, linking: Iterable[concepts.Memory], gone: Mapping[str, str],
             actor: str) -> Commit:
    """``tip``, or one more commit on it pointing links at what merged-away memories became.

    ``linking``: the memories that may link to one in ``gone`` (merged-away id -> the memory it
    became), read again at ``tip``; a link to a memory's own successor is dropped, a repeat too.
    """
    files: dict[str, bytes | None] = {}
    ids: list[str] = []
    for memory in linking:
        if not set(memory.related) & gone.keys() or not memory.path:
            continue
        data = store.read(memory.path, tip)
        if data is None:
            continue  # the merge took this one away too
        try:
            current = concepts.parse(data, memory.path)
        except MalformedConcept:
            continue  # not gitmem's to rewrite here; the graph counts the link as dangling
        related: list[str] = []
        for link in current.related:
            target = successor(gone, link)
            if target != current.id and target not in related:
                related.append(target)
        if tuple(related) != current.related:
            files[memory.path] = concepts.render(current.replace(related=tuple(related)))
            ids.append(current.id)
    if not files:
        return tip
    change = Change(files, f"relink {plural(len(files), 'memory file')} to what merged memories became", "relink",
                    tuple(ids), None, actor,
                    body="Their related links named memories an approved merge took away.")
    return store.commit(str(store.write_commit(tip, change)))
