"""Changing memories: remember (the write gate), amend, forget, revert, restore, fold recorded usage.

Every change is one commit on ``main`` through :meth:`gitmem.repo.Namespace.commit`. Reading is
in :mod:`gitmem.recall`, feedback (confirm, reject, discuss, amend) in :mod:`gitmem.feedback`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from . import concepts, details, techchoice
from .concepts import Memory, check_id, now
from .errors import InvalidInput, MemoryNotFound
from .repo import Change, Commit, Guard, Namespace, Namespaces, match_tokens, search_terms
from .semantic import Semantics
from .settings import Settings
from .similarity import dice, normalise
from .wording import article, plural
from .words import document_terms

log = logging.getLogger(__name__)
AUTO_SOURCES = ("agent", "import", "consolidation")
#: Sources whose statements may correct an earlier one (an import or a merge restates, it does not correct).
CORRECTING_SOURCES = ("user", "agent", "slack")
#: The most memories one statement supersedes.
MOST_SUPERSEDED = 3


@dataclass(frozen=True)
class WriteResult:
    """What a write did: the outcome, the memory after it, and the commit (None when unchanged)."""

    outcome: str
    memory: Memory | None
    commit: str | None
    similar_to: str | None = None
    #: Memories the new one supersedes that this commit archived (a person's correction).
    retired: tuple[str, ...] = ()
    #: Memories it supersedes that stay live until a review archives them (an agent's correction).
    proposed: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the outcome, the memory after the write, the commit and ``similar_to``."""
        return {
            "outcome": self.outcome,
            "memory": self.memory.to_dict() if self.memory else None,
            "commit": self.commit,
            "similar_to": self.similar_to,
            "retired": list(self.retired),
            "proposed": list(self.proposed),
        }


@dataclass(frozen=True)
class Candidate:
    """One memory to store through the write gate, as an import or an ingested conversation offers it.

    ``id``, ``potency``, ``created``, ``last_used`` and ``access_count`` carry what another store
    knew (they are gitmem's own otherwise); ``label`` names the item in reports (a file, a message).
    """

    text: str
    type: str = "fact"
    title: str | None = None
    tags: Sequence[str] = ()
    paths: Sequence[str] = ()
    source: str = "import"
    author: str | None = None
    state: str = "active"
    related: Sequence[str] = ()
    tenured: bool = False
    id: str | None = None
    potency: float | None = None
    created: datetime | None = None
    last_used: datetime | None = None
    access_count: int | None = None
    label: str = ""
    # A techchoice's options ({name, pros, cons} or Option), the active one, and why it was chosen.
    options: Sequence[Any] = ()
    active: str | None = None
    choice_reason: str = ""


@dataclass(frozen=True)
class Outcome:
    """What the write gate did with one candidate: added, reinforced, merged, skipped or refused, and why."""

    label: str
    outcome: str
    memory_id: str | None
    reason: str = ""
    #: Live memories this one supersedes, left to a review to archive.
    proposed: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"label": self.label, "outcome": self.outcome, "memory_id": self.memory_id, "reason": self.reason,
                "proposed": list(self.proposed)}


@dataclass(frozen=True)
class BatchResult:
    """What :meth:`Memories.remember_many` did: an outcome per candidate and the one commit (or None)."""

    outcomes: tuple[Outcome, ...]
    commit: str | None

    def counts(self) -> dict[str, int]:
        """How many candidates had each outcome (every outcome named, zeros included)."""
        return count_outcomes(self.outcomes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the commit, the counts and every outcome."""
        return {"commit": self.commit, "counts": self.counts(), "items": [o.to_dict() for o in self.outcomes]}


OUTCOMES = ("added", "reinforced", "merged", "skipped", "refused")


def count_outcomes(items: Iterable[Outcome]) -> dict[str, int]:
    """How many items had each outcome (every outcome named, zeros included)."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for item in items:
        counts[item.outcome] += 1
    return counts


@dataclass(frozen=True)
class _Decided:
    outcome: str
    memory: Memory | None
    similar_to: str | None
    reason: str
    retired: tuple[str, ...] = ()
    proposed: tuple[str, ...] = ()


class _Batch:
    """The files one commit of the write gate changes, and what later candidates must see of them."""

    def __init__(self) -> None:
        self.memories: dict[str, Memory] = {}  # id -> the memory as this commit leaves it
        self.norms: dict[str, str] = {}  # normalised text -> id, for memories added by this commit
        self.paths: set[str] = set()
        self.added: set[str] = set()
        self.touched: list[str] = []

    def put(self, old: Memory, new: Memory) -> None:
        """Record a changed memory."""
        if new.id not in self.memories:
            self.touched.append(new.id)
        self.memories[new.id] = new.replace(path=old.path)

    def add(self, memory: Memory, norm: str) -> None:
        """Record a new memory."""
        self.put(memory, memory)
        self.norms[norm] = memory.id
        self.paths.add(memory.path)
        self.added.add(memory.id)

    def files(self) -> tuple[dict[str, bytes | None], dict[str, Memory]]:
        """The files to write and, for new ones, the memories they hold (the index takes them as they are)."""
        files: dict[str, bytes | None] = {}
        parsed: dict[str, Memory] = {}
        for memory_id in self.touched:
            memory = self.memories[memory_id]
            if memory_id in self.added:
                files[memory.path], parsed[memory.path] = concepts.rendered(memory)
            else:
                files[memory.path] = concepts.render(memory)
        return files, parsed


def _superseding(decided: _Decided, batch: _Batch) -> str:
    """A commit body naming what a correction supersedes, and whether it archived it or leaves it to review."""
    lines = []
    for old_id in decided.retired:
        lines.append(f"Supersedes {old_id}, archived: {batch.memories[old_id].text}")
    for old_id in decided.proposed:
        lines.append(f"Supersedes {old_id}, to be archived when a review approves it")
    return "\n\n".join(lines)


def _merges(item: Candidate) -> bool:
    """Whether the write gate merges the candidate into a memory that says the same (not a user's own)."""
    return item.source in AUTO_SOURCES or item.state == "pending"


class Memories:
    """Remember, amend, forget, revert and restore memories in any namespace."""

    def __init__(self, namespaces: Namespaces, settings: Settings,
                 on_added: Callable[[str], None] | None = None, semantics: Semantics | None = None,
                 on_proposed: Callable[[str, str, tuple[str, ...], str], None] | None = None) -> None:
        """Work on ``namespaces``; ``on_added(namespace)`` is called after a write adds a memory.

        ``semantics``: the write gate also finds an agent's statement that says an existing
        memory's rule in other words (or another language). ``on_proposed(namespace, new_id,
        old_ids, actor)`` is called after a write adds a memory that supersedes live ones which
        a review must retire (an agent's correction; see :mod:`gitmem.corrections`).
        """
        self.namespaces = namespaces
        self.settings = settings
        self.on_added = on_added
        self.semantics = semantics
        self.on_proposed = on_proposed

    # --- reading -------------------------------------------------------------------------------

    def title_from(self, text: str) -> str:
        """A title derived from the text, within ``settings.max_title_chars``."""
        return concepts.title_from(text, limit=min(80, self.settings.max_title_chars))

    def remember(
        self,
        namespace: str,
        text: str,
        *,
        type: str = "fact",
        title: str | None = None,
        tags: Iterable[str] = (),
        paths: Iterable[str] = (),
        source: str = "user",
        author: str | None = None,
        state: str = "active",
        related: Iterable[str] = (),
        tenured: bool = False,
        options: Sequence[Any] | None = None,
        active: str | None = None,
        reason: str | None = None,
        actor: str | None = None,
    ) -> WriteResult:
        """Store a memory through the write gate.

        Normalised-identical text reinforces the existing memory. A statement from an automatic
        source that says the same as an existing memory is merged into it (paths and tags
        unioned, potency +0.05, text kept): at least ``settings.high_similarity`` alike in words
        or ``settings.semantic_duplicate`` in meaning, with no detail (number, name, weekday,
        environment) that the memory lacks or contradicts, in the same language. Everything
        else, including a user's own similar statement (it may be a correction), is added as a
        new memory. Text that carries a secret is refused (:class:`~gitmem.errors.SecretFound`).

        A ``techchoice`` needs ``options`` (two or more ``{name, pros, cons, description, config,
        status}``, each with pros and cons or a description) and the ``active`` one; ``reason``
        is kept as the first entry of its ``choices``. A repeat of a techchoice adds the options
        it lacks; none is ever dropped.

        ``actor``: who makes the commit (an API key's name), when not the ``author`` who said it.
        """
        item = self._clean(Candidate(text, type=type, title=title, tags=tuple(tags), paths=tuple(paths),
                                     source=source, author=author, state=state, related=tuple(related),
                                     tenured=tenured, options=tuple(options or ()), active=active,
                                     choice_reason=reason or ""))
        near = self._near(namespace, [item])[0]
        result: dict[str, Any] = {}

        # Plans run inside _commit, on an index snapshot pinned at ``head``: what it finds is there.
        def plan(head: Commit) -> Change | None:
            batch = _Batch()
            outcome = self._gate(ns, head, item, near, batch)
            memory = outcome.memory
            assert memory is not None  # remember gives no id, so nothing is skipped
            result.update(outcome=outcome.outcome, memory=memory, similar_to=outcome.similar_to,
                          retired=outcome.retired, proposed=outcome.proposed)
            files, parsed = batch.files()
            who = actor or item.author
            if outcome.outcome == "reinforced":
                return Change(files, f"reinforce: {memory.title}", "reinforce", (memory.id,), item.source, who)
            if outcome.outcome == "merged":
                return Change(files, f"merge: {memory.title}", "merge", (memory.id,), item.source, who,
                              body=f"A statement {outcome.reason} was merged in:\n\n{item.text}")
            return Change(files, f"remember: {memory.title}", "remember", (memory.id, *outcome.retired),
                          item.source, who, parsed=parsed, body=_superseding(outcome, batch))

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        if result["outcome"] == "added":
            self._announce(namespace)
        if commit and result["proposed"]:
            self._propose(namespace, result["memory"].id, result["proposed"], item.author or item.source)
        return WriteResult(result["outcome"], result["memory"], commit, result["similar_to"],
                           result["retired"], result["proposed"])

    def remember_many(self, namespace: str, candidates: Iterable[Candidate], *, message: str,
                      action: str = "import", actor: str | None = None, body: str = "",
                      trailers: Sequence[tuple[str, str]] = (), repeat: str = "reinforce",
                      dry_run: bool = False) -> BatchResult:
        """Store many memories through the write gate in one commit, which reverts them all cleanly.

        Each candidate is judged as :meth:`remember` judges one (pending candidates merge into a
        memory that says the same, as an agent's do), against main and against the candidates
        before it. One that fails validation or carries a secret is ``refused`` with the reason
        and the rest go on. ``repeat="skip"`` reports a candidate whose text is already stored
        as ``skipped`` instead of reinforcing it, so that running an import twice changes
        nothing. A candidate with an ``id`` that main already holds is ``skipped``. ``dry_run``
        reports what would happen and writes nothing.
        """
        if repeat not in ("reinforce", "skip"):
            raise InvalidInput("repeat is either 'reinforce' or 'skip'")
        given = list(candidates)
        items: list[Candidate | None] = []
        refused: dict[int, str] = {}
        for number, candidate in enumerate(given):
            try:
                items.append(self._clean(candidate))
            except InvalidInput as exc:
                items.append(None)
                refused[number] = str(exc)
        near = self._near(namespace, [item for item in items if item is not None])
        nears = iter(near)
        near_by = [next(nears) if item is not None else {} for item in items]
        labels = [c.label or f"item {n + 1}" for n, c in enumerate(given)]
        result: dict[str, Any] = {}

        def plan(head: Commit) -> Change | None:
            batch = _Batch()
            outcomes: list[Outcome] = []
            for number, item in enumerate(items):
                if item is None:
                    outcomes.append(Outcome(labels[number], "refused", None, refused[number]))
                    continue
                decided = self._gate(ns, head, item, near_by[number], batch, repeat=repeat)
                outcomes.append(Outcome(labels[number], decided.outcome,
                                        decided.memory.id if decided.memory else None, decided.reason,
                                        decided.proposed))
            result["outcomes"] = tuple(outcomes)
            files, parsed = batch.files()
            if dry_run or not files:
                return None
            lines = [f"{o.outcome}: {o.label}" + (f" ({o.reason})" if o.reason else "") for o in outcomes]
            text = "\n\n".join(part for part in (body.strip(), "\n".join(lines)) if part)
            return Change(files, message, action, tuple(batch.touched), None, actor, body=text,
                          extra_trailers=tuple(trailers), parsed=parsed)

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        outcomes: tuple[Outcome, ...] = result["outcomes"]
        if commit and any(o.outcome == "added" for o in outcomes):
            self._announce(namespace)
        for number, outcome in enumerate(outcomes):
            item = items[number]
            if commit and outcome.proposed and outcome.memory_id and item is not None:
                self._propose(namespace, outcome.memory_id, outcome.proposed, item.author or actor or item.source)
        return BatchResult(outcomes, commit)

    def _clean(self, item: Candidate) -> Candidate:
        """The candidate with every field validated (secrets refused); raises InvalidInput."""
        text = concepts.clean_text(item.text, limit=self.settings.max_text_chars)
        title = (concepts.clean_title(item.title, limit=self.settings.max_title_chars) if item.title
                 else self.title_from(text))
        author = item.author
        if author:
            author = concepts.clean_list([author], what="author", limit=200)[0]
        if item.state not in ("active", "pending"):
            raise InvalidInput("a new memory is either active or pending")
        if item.potency is not None and not (isinstance(item.potency, (int, float)) and 0 <= item.potency <= 1):
            raise InvalidInput(f"potency must be a number from 0 to 1, not {item.potency!r}")
        memory_type = concepts.clean_type(item.type)
        options, active, why = self.techchoice(memory_type, item.options, item.active, item.choice_reason)
        return replace(
            item, text=text, title=title, type=memory_type,
            source=concepts.clean_source(item.source),
            tags=concepts.clean_list(item.tags, what="tag", limit=80),
            paths=concepts.clean_list(item.paths, what="path", limit=400),
            related=concepts.clean_list(item.related, what="related id", limit=40),
            author=author or None, id=check_id(item.id) if item.id else None,
            options=options, active=active, choice_reason=why,
        )

    def _near(self, namespace: str, items: Sequence[Candidate]) -> list[dict[str, float]]:
        """For each candidate the write gate may merge, the memories alike in meaning (vector hash: cosine)."""
        found: list[dict[str, float]] = [{} for _ in items]
        merging = [n for n, item in enumerate(items) if _merges(item)]
        if merging and self.semantics is not None and self.semantics.enabled:
            with self.namespaces.using(namespace) as ns:
                ns.synced()
                for n in merging:
                    found[n] = dict(self.semantics.search(ns, items[n].text, 5, self.settings.semantic_duplicate))
        return found

    def _gate(self, ns: Namespace, head: Commit, item: Candidate, near: Mapping[str, float], batch: _Batch,
              *, repeat: str = "reinforce") -> _Decided:
        """Decide what one cleaned candidate does to main (and to ``batch``, the files of this commit)."""
        at = now()
        if item.id and (item.id in batch.memories or ns.index.get(item.id) is not None):
            return _Decided("skipped", batch.memories.get(item.id), item.id, f"{item.id} is already there")
        norm = normalise(item.text)
        same_id = batch.norms.get(norm) or next((m.id for m in ns.index.by_norm(norm)), None)
        same = None if same_id is None else batch.memories.get(same_id) or ns.current(head, same_id)
        # A techchoice's options are never lost in a memory that cannot hold them.
        if same is not None and not (item.options and not same.options):
            old = same
            if repeat == "skip":
                return _Decided("skipped", old, old.id, f"already stored as {old.id}")
            new = old.with_use(at).replace(
                paths=old.paths + tuple(p for p in item.paths if p not in old.paths),
                tags=old.tags + tuple(t for t in item.tags if t not in old.tags),
                state="active" if old.state == "archived" else old.state,
                archived_reason=None if old.state == "archived" else old.archived_reason,
                options=techchoice.merged_options(old.options, item.options) if old.options else old.options,
                updated=at,
            )
            batch.put(old, new)
            return _Decided("reinforced", new, old.id, f"the same text as {old.id}")
        if _merges(item):
            best, how = self._same_as(ns, item.text, item.title or "", item.tags, near)
            if best is not None and not (item.options and not best.options):
                old = batch.memories.get(best.id) or ns.current(head, best.id)
                if repeat == "skip":
                    return _Decided("skipped", old, old.id, f"says the same as {old.id}, {how}")
                new = old.replace(
                    paths=old.paths + tuple(p for p in item.paths if p not in old.paths),
                    tags=old.tags + tuple(t for t in item.tags if t not in old.tags),
                    options=techchoice.merged_options(old.options, item.options) if old.options else old.options,
                    potency=min(1.0, round(old.potency_at(at) + 0.05, 4)),
                    last_used=at,
                    updated=at,
                )
                batch.put(old, new)
                return _Decided("merged", new, old.id, how)
        memory_id = item.id or concepts.new_id()
        replaced = self._replaced(ns, head, item, batch) if item.source in CORRECTING_SOURCES else []
        title = item.title or self.title_from(item.text)
        path = ns.free_path(head, item.type, title, memory_id)
        if path in batch.paths:
            path = concepts.file_path(item.type, f"{concepts.slugify(title)}-{memory_id}")
        memory = Memory(id=memory_id, type=item.type, text=item.text, title=title,
                        description=concepts.description_from(item.text), tags=tuple(item.tags),
                        paths=tuple(item.paths), source=item.source, author=item.author,
                        created=item.created or at, updated=at, state=item.state, related=tuple(item.related),
                        tenured=item.tenured, path=path,
                        potency=concepts.NEW_POTENCY if item.potency is None else float(item.potency),
                        last_used=item.last_used, access_count=item.access_count or 0,
                        options=tuple(item.options), active=item.active,
                        choices=(concepts.Choice(item.active, at, item.author, item.choice_reason),)
                        if item.active else (), supersedes=tuple(old.id for old, _ in replaced))
        batch.add(memory, norm)
        if not replaced:
            return _Decided("added", memory, None, "")
        why = "; ".join(f"supersedes {old.id} ({how})" for old, how in replaced)
        if item.source == "user" and item.state == "active":
            # A person's correction retires what it corrects in the same commit: reverting it restores both.
            for old, _ in replaced:
                batch.put(old, old.replace(state="archived", archived_reason=f"superseded by {memory_id}",
                                           updated=at))
            return _Decided("added", memory, None, why, retired=tuple(old.id for old, _ in replaced))
        return _Decided("added", memory, None, why, proposed=tuple(old.id for old, _ in replaced))

    def _replaced(self, ns: Namespace, head: Commit, item: Candidate, batch: _Batch) -> list[tuple[Memory, str]]:
        """The live memories a new statement corrects (:func:`gitmem.details.update_of`), with why; newest first."""
        if not details.may_update(item.text):
            return []
        found: dict[str, tuple[Memory, str]] = {}
        rows = [row.memory for row, _ in ns.index.search(document_terms(item.text).words, limit=10)]
        for memory in [*rows, *(m for m in batch.memories.values() if m.id in batch.added)]:
            if memory.id in found or memory.state == "archived" or memory.type == "techchoice":
                continue
            how = details.update_of(item.text, memory.text)
            if how is not None:
                found[memory.id] = (batch.memories.get(memory.id) or ns.current(head, memory.id), how)
        ranked = sorted(found.values(), key=lambda f: (-f[0].updated.timestamp(), f[0].id))
        return ranked[:MOST_SUPERSEDED]

    def _propose(self, namespace: str, new_id: str, old_ids: tuple[str, ...], actor: str) -> None:
        """Hand an agent's correction to the review hook (a failure there never fails the write)."""
        if self.on_proposed is None:
            return
        try:
            self.on_proposed(namespace, new_id, old_ids, actor)
        except Exception:
            log.exception("opening the review of %s superseding %s in %s failed", new_id, old_ids, namespace)

    def _announce(self, namespace: str) -> None:
        """Embed what was added if the model is loaded here, and tell the after-write hook (it may start a run)."""
        if self.semantics is not None and self.semantics.loaded:
            try:
                with self.namespaces.using(namespace) as ns:
                    ns.synced()
                    self.semantics.fill(ns)
            except Exception:  # a vector is derived state: the next recall makes it
                log.exception("embedding the new memories of %s failed", namespace)
        if self.on_added is None:
            return
        try:
            self.on_added(namespace)
        except Exception:  # a trigger must never fail the write that fired it
            log.exception("after-write hook failed in %s", namespace)

    @staticmethod
    def techchoice(memory_type: str, options: Sequence[Any] | None, active: str | None,
                   reason: str | None) -> tuple[tuple[concepts.Option, ...], str | None, str]:
        """Check a new memory's options: (options, active, reason); options only for a techchoice."""
        if memory_type != "techchoice":
            if options or active:
                raise InvalidInput(f"options and an active option belong to a techchoice, not {article(memory_type)}; "
                                   "give --type techchoice")
            return (), None, ""
        found, chosen = techchoice.clean_options(list(options or ()), active)
        why = concepts.clean_text(reason, limit=1000, what="reason") if reason and reason.strip() else ""
        return found, chosen, why

    def choose(self, namespace: str, memory_id: str, option: str, *, reason: str,
               pros: Iterable[str] = (), cons: Iterable[str] = (), description: str | None = None,
               config: str | None = None, status: str | None = None, actor: str | None = None) -> WriteResult:
        """Make ``option`` a techchoice's active one, for ``reason``: one append-only commit.

        A new option (with its pros and cons, or a description) is added; every option stays and
        the choice is appended to the memory's ``choices`` (see :func:`gitmem.techchoice.with_choice`).
        """
        memory_id = check_id(memory_id)
        pros, cons = tuple(pros), tuple(cons)
        result: dict[str, Any] = {}

        def plan(head: Commit) -> Change | None:
            old = ns.current(head, memory_id)
            new = techchoice.with_choice(old, option, reason=reason, by=actor, at=now(), pros=pros, cons=cons,
                                         description=description, config=config, status=status)
            result["memory"] = new
            added = "" if techchoice.find_option(old.options, new.active or "") else " (a new option)"
            return Change({old.path: concepts.render(new)}, f"choose: {new.active} for {old.title}", "choose",
                          (old.id,), None, actor, body=f"Chosen: {new.active}{added}, after {old.active}.\n\n"
                                                       f"{new.choices[-1].reason}")

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        return WriteResult("chosen", result["memory"], commit)

    def _same_as(self, ns: Namespace, text: str, title: str, tags: Sequence[str],
                 near: Mapping[str, float]) -> tuple[Memory | None, str]:
        """The live memory an agent's statement says again, and how alike they are; (None, "") if none."""
        mine = frozenset(match_tokens(title, text, tags))
        found: list[tuple[float, str, Memory]] = []
        for row, _ in ns.index.search(search_terms(title, text, tags), limit=20):
            score = dice(mine, row.tokens)
            if score >= self.settings.high_similarity:
                found.append((score, f"{score:.2f} alike in words", row.memory))
        if near:
            candidates = ns.index.by_hashes(near)
            docs = ns.index.documents(c.rowid for c in candidates)
            for candidate in candidates:
                cos = near[candidate.vhash]
                found.append((cos, f"{cos:.2f} alike in meaning", docs[candidate.rowid]))
        for _, how, memory in sorted(found, key=lambda f: (-f[0], f[2].id)):
            if memory.state == "archived" or details.language(memory.text) != details.language(text):
                continue
            # The statement merges in only if the memory says every word and detail of it: nothing lost.
            if details.conflict(memory.text, text) is None and not details.lost(memory.text, text):
                return memory, how
        return None, ""

    def amend(
        self,
        namespace: str,
        memory_id: str,
        *,
        text: str | None = None,
        title: str | None = None,
        type: str | None = None,
        tags: Iterable[str] | None = None,
        paths: Iterable[str] | None = None,
        tenured: bool | None = None,
        actor: str | None = None,
        reason: str = "",
    ) -> WriteResult:
        """Change a memory's text, title, type, tags, paths or tenure in one commit."""
        memory_id = check_id(memory_id)
        if all(v is None for v in (text, title, type, tags, paths, tenured)):
            raise InvalidInput("nothing to amend: give new text, title, type, tags, paths or tenure")
        change = self.amend_change(namespace, memory_id, text=text, title=title, type=type, tags=tags,
                                    paths=paths, tenured=tenured, actor=actor, reason=reason)
        result: dict[str, Any] = {}

        def plan(head: Commit) -> Change | None:
            built = change(head)
            result["memory"] = built[0]
            return built[1]

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        return WriteResult("amended" if commit else "unchanged", result["memory"], commit)

    def amend_change(self, namespace: str, memory_id: str, *, text: str | None, title: str | None,
                      type: str | None, tags: Iterable[str] | None, paths: Iterable[str] | None,
                      tenured: bool | None, actor: str | None, reason: str,
                      action: str = "amend") -> Callable[[Commit], tuple[Memory, Change | None]]:
        """Validate an amendment and return a plan builder: head -> (memory, Change | None)."""
        limit = self.settings.max_text_chars
        new_text = None if text is None else concepts.clean_text(text, limit=limit)
        new_title = None if title is None else concepts.clean_title(title, limit=self.settings.max_title_chars)
        new_type = None if type is None else concepts.clean_type(type)
        new_tags = None if tags is None else concepts.clean_list(tags, what="tag", limit=80)
        new_paths = None if paths is None else concepts.clean_list(paths, what="path", limit=400)
        ns = self.namespaces.open(namespace)

        def build(head: Commit) -> tuple[Memory, Change | None]:
            old = ns.current(head, memory_id)
            changes: dict[str, Any] = {}
            if new_text is not None and new_text != old.text:
                # A title and description taken from the text follow it; ones set by hand stay.
                followed = concepts.follow_text(old, old.replace(text=new_text),
                                                title_limit=min(80, self.settings.max_title_chars))
                changes.update(text=new_text, title=followed.title, description=followed.description)
            if new_title is not None and new_title != old.title:
                changes["title"] = new_title
            if new_type is not None and new_type != old.type:
                if new_type == "techchoice" and not old.options:
                    raise InvalidInput(f"memory {old.id} has no options, so it cannot become a techchoice; "
                                       "remember the choice with its options instead")
                changes["type"] = new_type
            if new_tags is not None and new_tags != old.tags:
                changes["tags"] = new_tags
            if new_paths is not None and new_paths != old.paths:
                changes["paths"] = new_paths
            if tenured is not None and tenured != old.tenured:
                changes["tenured"] = tenured
            if not changes:
                return old, None
            new = old.replace(**changes, updated=now())
            files: dict[str, bytes | None] = {}
            if new.type != old.type:
                new = new.replace(path=ns.free_path(head, new.type, new.title, new.id))
                files[old.path] = None
            files[new.path] = concepts.render(new)
            what = ", ".join(sorted(k for k in changes if k != "description" and getattr(old, k) != changes[k]))
            body = f"Changed: {what}."
            if reason.strip():
                body += f"\n\n{reason.strip()}"
            return new, Change(files, f"{action}: {new.title}", action, (new.id,), "user", actor, body=body)

        return build

    def forget(self, namespace: str, memory_id: str, *, purge: bool = False, reason: str | None = None,
               actor: str | None = None, action: str = "forget") -> WriteResult:
        """Archive a memory (kept in the repository, never recalled) or, with ``purge``, delete its file."""
        memory_id = check_id(memory_id)
        reason_text = concepts.clean_text(reason, limit=1000, what="reason") if reason and reason.strip() else None
        result: dict[str, Any] = {}

        def plan(head: Commit) -> Change | None:
            old = ns.current(head, memory_id)
            if purge:
                result.update(outcome="purged", memory=old)
                return Change({old.path: None}, f"purge: {old.title}", action, (old.id,), None, actor,
                              body=reason_text or "")
            if old.state == "archived":
                result.update(outcome="unchanged", memory=old)
                return None
            new = old.replace(state="archived", archived_reason=reason_text, updated=now())
            result.update(outcome="archived", memory=new)
            return Change({old.path: concepts.render(new)}, f"{action}: {old.title}", action, (old.id,),
                          None, actor, body=reason_text or "")

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        return WriteResult(result["outcome"], result["memory"], commit)

    def revert(self, namespace: str, commit_id: str, *, actor: str | None = None) -> WriteResult:
        """Undo one commit of main with a new commit; a conflicting revert changes nothing."""
        result: dict[str, Any] = {}

        def plan(head: Commit) -> Change | None:
            target = ns.store.commit(commit_id)
            if not ns.store.is_ancestor(target, head):
                raise InvalidInput(f"commit {commit_id} is not on main; only main's commits can be reverted")
            tree = ns.store.revert_change(target, head)
            if tree == head.tree.id:
                result["outcome"] = "unchanged"
                return None
            info = ns.store.info(target)
            result["outcome"] = "reverted"
            return Change({}, f'Revert "{info.summary}"', "revert", info.memory_ids, None, actor,
                          body=f"This reverts commit {target.id}.",
                          extra_trailers=(("Reverts", str(target.id)),), tree=tree)

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        return WriteResult(result["outcome"], None, commit)

    def restore(self, namespace: str, memory_id: str, commit_id: str, *, actor: str | None = None) -> WriteResult:
        """Bring a memory back to how it was at ``commit_id`` (its usage figures stay current)."""
        memory_id = check_id(memory_id)
        result: dict[str, Any] = {}

        def plan(head: Commit) -> Change | None:
            source = ns.store.commit(commit_id)
            current = ns.index.get(memory_id)
            old = ns.version_at(source, memory_id, current.path if current else None)
            if old is None:
                raise MemoryNotFound(f"memory {memory_id} did not exist at commit {commit_id}")
            at = now()
            files: dict[str, bytes | None] = {}
            new = old.replace(updated=at)
            if current is not None:
                new = new.replace(potency=current.potency, last_used=current.last_used,
                                  access_count=current.access_count, verified=current.verified)
                if current.path != old.path:
                    files[current.path] = None
            if ns.store.read(new.path, head) is not None and (current is None or current.path != new.path):
                new = new.replace(path=ns.free_path(head, new.type, new.title, new.id))
            unchanged = current is not None and concepts.render(current) == concepts.render(
                new.replace(updated=current.updated)
            )
            if unchanged:
                result.update(outcome="unchanged", memory=current)
                return None
            files[new.path] = concepts.render(new)
            result.update(outcome="restored", memory=new)
            return Change(files, f"restore: {new.title}", "restore", (memory_id,), None, actor,
                          body=f"Restored to its version at {source.id}.",
                          extra_trailers=(("Restored-From", str(source.id)),))

        with self.namespaces.using(namespace) as ns:
            commit = ns.commit(plan)
        return WriteResult(result["outcome"], result["memory"], commit)

    def fold_usage(self, namespace: str, *, actor: str | None = None, guard: Guard | None = None) -> str | None:
        """Fold the recorded uses into the memory files in one commit; None when there were none.

        ``guard`` runs right before main moves and may raise to stop the fold (the uses stay logged).
        """
        with self.namespaces.using(namespace) as ns, ns.usage.folding():
            high = ns.usage.high_water()
            if not high:
                return None
            pending = ns.usage.pending(up_to=high)

            def plan(head: Commit) -> Change | None:
                files: dict[str, bytes | None] = {}
                ids = []
                for memory_id, (count, last) in sorted(pending.items()):
                    indexed = ns.index.get(memory_id)
                    data = ns.store.read(indexed.path, head) if indexed else None
                    if indexed is None or data is None:
                        continue  # purged since it was used
                    memory = concepts.parse(data, indexed.path).with_use(last, count)
                    files[memory.path] = concepts.render(memory)
                    ids.append(memory_id)
                if not files:
                    return None
                uses = sum(pending[i][0] for i in ids)
                return Change(files, f"usage: fold {plural(uses, 'use')} of {plural(len(ids), 'memory')}", "usage",
                              tuple(ids), None, actor)

            commit = ns.commit(plan, guard)
            ns.usage.clear(high)
            return commit

