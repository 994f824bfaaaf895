"""Corrections: a statement that supersedes an earlier one, and the review that retires the earlier one.

The write gate (:mod:`gitmem.memories`) finds what a new statement corrects
(:func:`gitmem.details.update_of`) and links the two: ``supersedes`` on the new memory. A
person's correction archives the old memory in the same commit. An agent's, or one read from a
conversation, leaves it live and asks for a review: this module opens it, one commit archiving
each memory superseded ("superseded by ID"). Until the review is decided recall shows the new
memory in the old one's place; a rejected review takes the link away again, so both are recalled.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import concepts
from .concepts import now
from .errors import MemoryNotFound
from .memories import Memories
from .repo import Change, Commit, Namespace, Namespaces
from .reviews import Review, Reviews

KIND = "supersede"
#: The trailer of a supersede commit naming the memory that supersedes.
TRAILER = "Superseded-By"


class Corrections:
    """Open and settle the reviews of agents' corrections."""

    def __init__(self, namespaces: Namespaces, memories: Memories, reviews: Reviews) -> None:
        """Work on ``namespaces``, amending through ``memories`` and proposing through ``reviews``.

        Registers itself with ``reviews``: rejecting a supersede review takes the link away.
        """
        self.namespaces = namespaces
        self.memories = memories
        self.reviews = reviews
        reviews.on_rejected[KIND] = self.unlink

    def propose(self, namespace: str, new_id: str, old_ids: Sequence[str], *, actor: str) -> Review | None:
        """Open a review archiving ``old_ids``, which the memory ``new_id`` supersedes; None if none is live."""
        with self.namespaces.using(namespace) as ns:
            head = ns.synced()
            new = ns.current(head, new_id)
            olds = [m for m in (self._live(ns, head, i) for i in old_ids) if m is not None]
        if not olds:
            return None
        at = now()
        files: dict[str, bytes | None] = {
            old.path: concepts.render(old.replace(state="archived", archived_reason=f"superseded by {new.id}",
                                                  updated=at)) for old in olds}
        said = "\n".join(f"- {old.id}: {old.text}" for old in olds)
        change = Change(files, f"supersede: {new.title}", KIND, tuple(m.id for m in olds), None, actor,
                        body=f"{new.id} says: {new.text}\n\nand so supersedes:\n{said}",
                        extra_trailers=((TRAILER, new.id),))
        title = f"Supersede {len(olds)} memor{'y' if len(olds) == 1 else 'ies'} with {new.title}"
        description = (f"{actor} said {new.text!r} ({new.id}), which corrects what the memories below say. "
                       "Approve to archive them; reject to keep both (the link between them is then removed).")
        return self.reviews.propose(namespace, [change], title=title, author=actor, kind=KIND, description=description)

    def unlink(self, namespace: str, review: Review, *, actor: str) -> str | None:
        """After a supersede review is rejected: drop the link from the new memory; the commit, or None."""
        if review.kind != KIND:
            return None
        ns = self.namespaces.open(namespace)
        olds: set[str] = set()
        new_id = None
        for commit in self.reviews.commits(namespace, review):
            info = ns.store.info(commit)
            olds |= set(info.memory_ids)
            new_id = new_id or next(iter(info.trailers.get(TRAILER, [])), None)
        if new_id is None or not concepts.is_id(new_id):
            return None

        def plan(head: Commit) -> Change | None:
            try:
                new = ns.current(head, new_id)
            except MemoryNotFound:
                return None
            keep = tuple(i for i in new.supersedes if i not in olds)
            if keep == new.supersedes:
                return None
            return Change({new.path: concepts.render(new.replace(supersedes=keep, updated=now()))},
                          f"keep both: {new.title}", "unlink", (new.id,), None, actor,
                          body=f"Review #{review.number} was rejected: {new.id} no longer supersedes "
                               f"{', '.join(sorted(olds))}.")

        with self.namespaces.using(namespace) as ns:
            return ns.commit(plan)

    @staticmethod
    def _live(ns: Namespace, head: Commit, memory_id: str) -> concepts.Memory | None:
        try:
            memory = ns.current(head, memory_id)
        except MemoryNotFound:
            return None
        return None if memory.state == "archived" else memory
