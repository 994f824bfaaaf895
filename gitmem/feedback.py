"""Feedback on a memory: confirm, reject, discuss or amend, each a commit naming who gave it.

Maintainers (by name) and the roles in ``direct_amend_roles`` amend ``main`` directly; anyone
else's amendment opens a review (:mod:`gitmem.reviews`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import concepts
from .concepts import Memory, check_id, now
from .errors import InvalidInput
from .memories import Memories
from .repo import DISCUSSIONS, Change, Commit, Namespaces
from .reviews import Reviews
from .settings import Settings

FEEDBACK_ACTIONS = ("confirm", "reject", "discuss", "amend")


@dataclass(frozen=True)
class FeedbackResult:
    """The result of confirm, reject, discuss or amend feedback."""

    action: str
    memory: Memory
    commit: str | None
    review: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; ``review`` is the number of the review an amendment opened."""
        return {"action": self.action, "memory": self.memory.to_dict(), "commit": self.commit,
                "review": self.review}


class Feedback:
    """Confirm, reject, discuss or amend memories under the amendment policy."""

    def __init__(self, namespaces: Namespaces, memories: Memories, reviews: Reviews, settings: Settings) -> None:
        self.namespaces = namespaces
        self.memories = memories
        self.reviews = reviews
        self.settings = settings

    def may_amend_directly(self, actor: str, role: str | None = None) -> bool:
        """The policy: maintainers (by name) and the roles in ``direct_amend_roles`` skip review."""
        return actor in self.settings.maintainers or (role is not None and role in self.settings.direct_amend_roles)

    def feedback(self, namespace: str, memory_id: str, action: str, *, actor: str,
                 text: str | None = None, role: str | None = None) -> FeedbackResult:
        """Confirm, reject, discuss or amend a memory; each becomes a commit naming the actor.

        ``amend`` goes straight to main only when the policy allows the actor
        (:meth:`may_amend_directly`); otherwise it opens a review branch with the change.
        """
        memory_id = check_id(memory_id)
        if action not in FEEDBACK_ACTIONS:
            raise InvalidInput(f"unknown feedback action {action!r}; use one of: {', '.join(FEEDBACK_ACTIONS)}")
        actor = concepts.clean_text(actor, limit=200, what="actor") if isinstance(actor, str) else ""
        if not actor:
            raise InvalidInput("feedback needs an actor: who is giving it")
        if action == "confirm":
            return self._confirm(namespace, memory_id, actor)
        if action == "reject":
            # As a review's rejection: the reason is what tells the author, and later readers, what was wrong.
            if text is None or not text.strip():
                raise InvalidInput("say why you reject it: a reason is required (the feedback's text), and it is "
                                   "kept with the archived memory")
            result = self.memories.forget(namespace, memory_id, reason=text, actor=actor, action="reject")
            assert result.memory is not None
            return FeedbackResult("reject", result.memory, result.commit)
        body = concepts.clean_text(text or "", limit=self.settings.max_text_chars,
                                   what="discussion text" if action == "discuss" else "amended text")
        if action == "discuss":
            return self._discuss(namespace, memory_id, actor, body)
        if self.may_amend_directly(actor, role):
            result = self.memories.amend(namespace, memory_id, text=body, actor=actor,
                                         reason="Amended through feedback.")
            assert result.memory is not None
            return FeedbackResult("amend", result.memory, result.commit)
        return self._propose_amend(namespace, memory_id, actor, body)

    def _confirm(self, namespace: str, memory_id: str, actor: str) -> FeedbackResult:
        result: dict[str, Memory] = {}

        def plan(head: Commit) -> Change | None:
            old = ns.current(head, memory_id)
            at = now()
            new = old.with_use(at).replace(
                verified=old.verified + ((actor,) if actor not in old.verified else ()),
                state="active" if old.state == "pending" else old.state,
            )
            result["memory"] = new
            return Change({old.path: concepts.render(new)}, f"confirm: {old.title}", "confirm",
                          (old.id,), None, actor)

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        return FeedbackResult("confirm", result["memory"], commit)

    def _discuss(self, namespace: str, memory_id: str, actor: str, text: str) -> FeedbackResult:
        result: dict[str, Memory] = {}
        thread = f"{DISCUSSIONS}/{memory_id}.jsonl"

        def plan(head: Commit) -> Change | None:
            memory = ns.current(head, memory_id)
            result["memory"] = memory
            line = json.dumps({"actor": actor, "at": concepts.iso(now()), "text": text}, ensure_ascii=False)
            data = (ns.store.read(thread, head) or b"") + line.encode() + b"\n"
            return Change({thread: data}, f"discuss: {memory.title}", "discuss", (memory_id,), None, actor,
                          body=text)

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        return FeedbackResult("discuss", result["memory"], commit)

    def _propose_amend(self, namespace: str, memory_id: str, actor: str, text: str) -> FeedbackResult:
        build = self.memories.amend_change(namespace, memory_id, text=text, title=None, type=None, tags=None,
                                   paths=None, tenured=None, actor=actor,
                                   reason="Proposed through feedback; needs review.")
        with self.namespaces.using(namespace) as ns:
            head = ns.store.head()
            memory, change = build(head)
            if change is None:
                return FeedbackResult("amend", memory, None)
            review = self.reviews.propose(namespace, [change], title=f"Amend {memory.title}", author=actor,
                                  kind="amend")
        return FeedbackResult("amend", memory, None, review.number)

