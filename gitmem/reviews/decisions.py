"""Decisions on reviews: approve all or some commits onto main, reject the rest, mark what went stale.

Approving replays the review's commits (all, or the ones picked) onto main, one commit each with
its message and trailers, and moves main with compare-and-swap. If main changed the same memories
since the review was opened, nothing is merged: the commit is marked stale with the reason.
Closed reviews keep their commits reachable under ``refs/gitmem/closed/<number>`` and leave
``refs/heads``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass, replace
from dataclasses import fields as dataclass_fields
from typing import Any

from .. import concepts
from ..concepts import now
from ..errors import (
    CommitNotFound,
    Conflict,
    InvalidInput,
    MalformedConcept,
    MergeConflict,
    RefLocked,
    RefRaceLost,
    StaleReview,
)
from ..repo import MAIN, Change, Commit, FileChange, Guard, Store, is_memory_path
from ..wording import plural
from .diffs import digest, memory_diffs, parsed, placeholder_id
from .links import relinked
from .reading import analysed
from .records import CLOSED_PREFIX, Review, ReviewRecords, actor_name, review_number
from .staleness import advice, changed_on_main, stale_message, stale_note, stale_reason, status_of


@dataclass(frozen=True)
class RejectedMerge:
    """A merge a reviewer turned down: the members, each with a digest of its text then."""

    ids: frozenset[str]
    texts: dict[str, str]

    def matches(self, members: Sequence[concepts.Memory]) -> bool:
        """Whether proposing ``members`` together would propose this turned-down merge again.

        It would when they hold every memory of it, or lie inside it, and none of the memories
        they share with it changed since: a reviewer said no to those memories together,
        whatever a new paraphrase joins them or one of them leaves.
        """
        ids = frozenset(m.id for m in members)
        if not (self.ids <= ids or ids <= self.ids):
            return False
        return all(self.texts.get(m.id) == digest(m.text) for m in members if m.id in self.ids)


class ReviewDecisions(ReviewRecords):
    """Approve, reject and check reviews: what reaches main, what is turned down and remembered."""

    def rejected_merges(self, namespace: str) -> builtins.list[RejectedMerge]:
        """Every merge a reviewer turned down in ``namespace``, to leave out of the next runs."""
        out = []
        for review in self.list(namespace):
            for entry in review.rejected:
                ids, texts = entry.get("ids"), entry.get("texts")
                if isinstance(ids, builtins.list) and isinstance(texts, dict):
                    digests = {str(k): str(v) for k, v in texts.items()}
                    out.append(RejectedMerge(frozenset(str(i) for i in ids), digests))
        return out

    def reject(self, namespace: str, number: int, *, actor: str, reason: str | None,
               commits: builtins.list[str] | None = None, version: str | None = None,
               expected: int | None = None) -> Review:
        """Turn down what is left of a review, or only the commits named in ``commits``; main is not touched.

        ``reason`` goes to the thread so the author knows what to change; it is required unless
        exactly one commit is named (skipping one change at a time needs no essay). The merges
        turned down are remembered: consolidation does not propose those memories together again
        until one of them changes (:meth:`rejected_merges`). Commits merged earlier stay merged;
        the review closes when no commit is left open, and counts as merged in part if some
        merged. ``version`` and ``expected`` are what the caller saw (:attr:`Review.version`, how
        many commits it turns down): any other version or count decides nothing (:class:`Conflict`).
        """
        number = review_number(number)
        actor = actor_name(actor)
        if reason is not None and not isinstance(reason, str):
            raise InvalidInput("the reason must be text")
        if not (reason or "").strip() and (commits is None or len(commits) != 1):
            raise InvalidInput("say why you reject it (--reason): a reason is required, so the author knows what "
                               "to change")
        text = concepts.clean_text(reason, limit=self.settings.max_text_chars, what="reason") \
            if (reason or "").strip() else None
        current = self.get(namespace, number)
        if current.status not in ("open", "stale"):
            raise Conflict(f"review #{number} is already {current.status}")
        _same_version(current, version)
        every = self.commits(namespace, current)
        picked = self._select(every, current, commits, number, "reject")
        # The rest: what is neither merged nor turned down already (open, or stale).
        turned = [c for c in every if current.state_of(str(c.id)) not in ("merged", "skipped")] \
            if picked is None else picked
        if expected is not None and len(turned) != expected:
            raise Conflict(f"review #{number} has {plural(len(turned), 'commit')} to turn down now, not the "
                           f"{expected} you saw; nothing was decided: look at it again")
        remembered = self._fingerprints(namespace, current, turned)
        skipped = {str(c.id) for c in turned}

        def update(review: Review) -> Review:
            if review.status not in ("open", "stale"):
                raise Conflict(f"review #{number} is already {review.status}")
            _same_version(review, version)
            states = dict(review.commit_states)
            for commit_id in skipped:
                if states.get(commit_id) == "merged":  # merged by a racing approver meanwhile
                    raise Conflict(f"commit {commit_id[:10]} of review #{number} was merged meanwhile; "
                                   "nothing was decided: look at it again")
                states[commit_id] = "skipped"
            status = status_of(every, states)
            if picked is None:
                status = "merged" if "merged" in states.values() else "rejected"
            comments = review.comments
            if text is not None:
                # While commits are left to decide, say which part of the review the reason is about.
                said = f"Turned down {plural(len(skipped), 'commit')}: {text}" if status == "open" else text
                comments = [*comments, {"actor": actor, "at": concepts.iso(now()), "text": said}]
            return replace(review, status=status, decided_by=actor, updated=now(), comments=comments,
                           commit_states=states, rejected=[*review.rejected, *remembered])

        what = f"rejected by {actor}" if picked is None else f"{plural(len(skipped), 'commit')} turned down by {actor}"
        review = self._save(namespace, number, update, what, actor)
        if review.status != "open":
            self._retire_branch(namespace, review)
        self._publish(namespace, review)
        undo = self.on_rejected.get(review.kind)
        if undo is not None and review.status == "rejected":
            undo(namespace, review, actor=actor)
        return review

    def check(self, namespace: str, number: int, *, actor: str) -> Review:
        """Record as stale the open commits main has overtaken, so the record says what a page shows."""
        number = review_number(number)
        actor = actor_name(actor)
        ns = self.namespaces.open(namespace)
        with ns.lock:
            review = self.get(namespace, number)
            if review.status != "open":
                return review
            changed = changed_on_main(ns.store, review)
            stale = {str(c.id): note for c in self.commits(namespace, review)
                     if review.state_of(str(c.id)) == "open"
                     and (note := stale_note(review, c, ns.store.file_changes(c), changed))}
            return self._mark_stale(namespace, review, stale, actor) if stale else review

    def approve(self, namespace: str, number: int, *, actor: str, commits: builtins.list[str] | None = None,
                expected: int | None = None, version: str | None = None, admin: bool = False) -> Review:
        """Merge the review's open commits (or only ``commits``) into main, one commit each.

        A commit is stale when main changed the text, type or state of a memory it is about
        since the review was opened; uses, potency and confirmations carry over instead. Picked
        commits that are stale merge nothing: they are marked stale and :class:`StaleReview`
        says why. Approving all merges the open commits that are not stale and marks the others.
        ``expected``: how many commits the caller saw to merge; any other number merges nothing
        (:class:`Conflict`), so a reviewer never merges more than was shown; ``version`` (the
        :attr:`Review.version` the caller saw) likewise. The review stays open while commits are
        left to decide ("merged 4 of 8").

        A commit whose parent is main as it stands lands as it is, with the same id (a push
        approved before main moved fast-forwards, so the pusher's ``git pull`` just works);
        the others are replayed onto main.
        A review whose kind has a decider of its own (a purge) is decided by it; ``admin``: whether
        the approver is an admin.
        """
        number = review_number(number)
        actor = actor_name(actor)
        ns = self.namespaces.open(namespace)
        store = ns.store
        with ns.lock:
            review = self.get(namespace, number)
            if review.status == "stale":
                raise StaleReview(f"review #{number} is stale: {review.stale_reason}")
            if review.status != "open":
                raise Conflict(f"review #{number} is already {review.status}")
            decide = self.deciders.get(review.kind)
            if decide is not None:
                return decide(namespace, review, actor=actor, admin=admin)
            first = [r for r in self.list(namespace, status="open") if r.head == review.base and r.number != number]
            if first:
                # Stacked pushes: this review holds only the commits after another's; merging them
                # first would leave out what they build on.
                raise Conflict(f"review #{number} holds the commits that come after those of review "
                               f"#{first[0].number}, which is still open: approve (or reject) #{first[0].number} "
                               "first")
            _same_version(review, version)
            every = self.commits(namespace, review)
            still = [c for c in every if review.state_of(str(c.id)) == "open"]
            picked = self._select(every, review, commits, number, "approve")
            for _ in range(50):
                main = ns.synced()  # the index too: what links to a merged memory is read from it
                changed = changed_on_main(store, review)
                stale = {str(c.id): note for c in (still if picked is None else picked)
                         if (note := stale_note(review, c, store.file_changes(c), changed))}
                selected = [c for c in (still if picked is None else picked) if str(c.id) not in stale]
                if stale and (picked is not None or not selected):
                    self._mark_stale(namespace, review, stale, actor)
                    raise StaleReview(stale_message(number, every, stale))
                if expected is not None and len(selected) != expected:
                    went = f" ({len(stale)} went stale meanwhile)" if stale else ""
                    raise Conflict(f"review #{number} has {plural(len(selected), 'commit')} to merge now, not the "
                                   f"{expected} you saw{went}; nothing was merged: look at it again")
                tip = main
                try:
                    for commit in selected:
                        # On main as it stands: the commit itself, so its id does not change.
                        onto = [str(p) for p in commit.parent_ids] == [str(tip.id)]
                        tip = commit if onto else self._apply(store, commit, tip)
                except MergeConflict as exc:
                    stale = {exc.commit: f"{exc}; {advice(review)}"}
                    self._mark_stale(namespace, review, stale, actor)
                    raise StaleReview(stale_message(number, every, stale)) from exc
                # Links elsewhere to what the review's merges took away follow them (the index is main's).
                chosen = {str(c.id) for c in selected}
                gone = self._gone(store, [c for c in every
                                          if review.state_of(str(c.id)) == "merged" or str(c.id) in chosen])
                if gone:
                    tip = relinked(store, tip, ns.index.all(), gone, actor)
                tip = completed(store, tip, main, actor, author=review.author)  # pushed without gitmem's fields
                try:
                    store.move_ref(MAIN, tip.id, str(main.id), f"approve review #{number} by {actor}")
                except RefLocked:
                    raise  # move_ref waited already and names the lock file
                except RefRaceLost:
                    continue  # someone wrote meanwhile: check again against the new main
                break
            else:
                raise RefRaceLost("main kept moving while approving; try again")
            approved = [str(c.id) for c in selected]

            def update(current: Review) -> Review:
                # Main now holds the commits, so the record says so whatever a racing approver
                # in another process wrote meanwhile.
                states = {**current.commit_states, **{c: "merged" for c in approved},
                          **{c: "stale" for c in stale}}
                notes = {**current.commit_notes, **stale}
                return replace(current, status=status_of(every, states), merged_commit=str(tip.id), decided_by=actor,
                               approved_commits=[*current.approved_commits, *approved], commit_states=states,
                               commit_notes=notes, stale_reason=stale_reason(every, states, notes),
                               updated=now())

            merged = sum(1 for c in every if c.id in {s.id for s in selected}) + sum(
                1 for c in every if review.state_of(str(c.id)) == "merged")
            review = self._save(namespace, number, update, f"approved by {actor} (merged {merged} of {len(every)})",
                                actor)
            ns.synced()
        if review.status != "open":
            self._retire_branch(namespace, review)
        self._publish(namespace, review)
        return review

    def settle(self, namespace: str, number: int, *, actor: str, merged_commit: str, summary: str) -> Review:
        """Record an open review a decider of its kind carried out (a purge) as merged whole; retire its branch."""
        every = [str(c.id) for c in self.commits(namespace, self.get(namespace, number))]

        def update(current: Review) -> Review:
            if current.status != "open":
                raise Conflict(f"review #{number} is already {current.status}")
            return replace(current, status="merged", merged_commit=merged_commit, decided_by=actor,
                           approved_commits=every, commit_states=dict.fromkeys(every, "merged"), updated=now())

        review = self._save(namespace, number, update, summary, actor)
        self._retire_branch(namespace, review)
        self._publish(namespace, review)
        return review

    def prune_orphans(self, namespace: str, guard: Guard | None = None) -> builtins.list[str]:
        """Delete consolidation branches that have no review (left by a run killed mid-write).

        Only a run holding the namespace's consolidation lock may call this (another run's
        branch has no review until it finishes); ``guard`` checks the lock before each deletion.
        """
        store = self.namespaces.open(namespace).store
        known = {r.branch for r in self.list(namespace)}
        gone = [ref for ref in store.refs(f"refs/heads/consolidate/{namespace}/") if ref not in known]
        for ref in gone:
            if guard is not None:
                guard()
            store.delete_ref(ref)
        return gone

    def _select(self, every: builtins.list[Commit], review: Review, picked: builtins.list[str] | None,
                number: int, verb: str) -> builtins.list[Commit] | None:
        """The commits named in ``picked`` (None: every open one), each still open; bad names refused."""
        if picked is None:
            if verb == "approve" and not any(review.state_of(str(c.id)) == "open" for c in every):
                raise Conflict(f"review #{number} has no open commits to merge")
            return None
        if not picked:
            raise InvalidInput(f"name at least one commit to {verb}, or {verb} them all")
        chosen: set[str] = set()
        for sha in picked:
            sha = sha.strip().lower() if isinstance(sha, str) else ""
            if len(sha) < 4 or any(ch not in "0123456789abcdef" for ch in sha):
                raise InvalidInput(f"{sha!r} is not a commit id (4 to 40 hex characters)")
            matches = [str(c.id) for c in every if str(c.id).startswith(sha)]
            if not matches:
                raise InvalidInput(f"commit {sha} is not part of review #{number}; see "
                                   f"`gitmem review show {number}`")
            if len(matches) > 1:
                raise InvalidInput(f"commit id {sha} is ambiguous in review #{number}; give more digits")
            state = review.state_of(matches[0])
            if state != "open":
                raise Conflict(f"commit {matches[0][:10]} of review #{number} is {state} already")
            chosen.add(matches[0])
        return [c for c in every if str(c.id) in chosen]

    @staticmethod
    def _gone(store: Store, commits: builtins.list[Commit]) -> dict[str, str]:
        """The memories the merges among ``commits`` took away, each with the memory it became."""
        gone: dict[str, str] = {}
        for commit in commits:
            item = analysed(store, commit, False)
            if item.merge and item.result is not None:
                gone.update({m.id: item.result for m in item.members})
        return gone

    def _apply(self, store: Store, commit: Commit, onto: Commit) -> Commit:
        """``commit`` replayed on ``onto``, taking over what main changed in fields that never make it stale.

        Main may have changed a memory's uses, potency or confirmations meanwhile: the
        commit's version of the memory takes those over field by field.
        """
        try:
            return store.replay([commit], onto)
        except MergeConflict:
            pass
        files: dict[str, bytes | None] = {}
        for change in store.file_changes(commit):
            if change.status == "deleted":
                assert change.old_path is not None
                if store.read(change.old_path, onto) is not None:
                    files[change.old_path] = None
                continue
            assert change.new_path is not None and change.new_text is not None
            present = store.read(change.new_path, onto)
            if change.status == "added":
                if present is not None and present.decode("utf-8", "replace") != change.new_text:
                    raise MergeConflict(str(commit.id), [change.new_path])
                files[change.new_path] = change.new_text.encode()
                continue
            base = parsed(change.old_text, change.old_path)
            mine = parsed(change.new_text, change.new_path)
            theirs = parsed(None if present is None else present.decode("utf-8", "replace"), change.new_path)
            if base is None or mine is None or theirs is None or (
                    theirs.id != base.id and base.id != placeholder_id(change.new_path)):
                # (A file pushed without an id that main completed since is the same memory.)
                raise MergeConflict(str(commit.id), [change.new_path])
            files[change.new_path] = concepts.render(merge_fields(base, mine, theirs))
        return store.recommit(commit, onto, files)

    def _fingerprints(self, namespace: str, review: Review,
                      commits: builtins.list[Commit]) -> builtins.list[dict[str, Any]]:
        """What to remember of the merges among ``commits``: their members and their texts."""
        ns = self.namespaces.open(namespace)
        try:
            base = ns.store.commit(review.base)
        except CommitNotFound:
            return []
        out = []
        for commit in commits:
            info = ns.store.info(commit)
            if info.action != "consolidate":
                continue
            texts: dict[str, str] = {}
            added: set[str] = set()
            for memory in memory_diffs(ns.store.file_changes(commit)):
                if memory.change == "added":
                    added.add(memory.id)
                elif memory.before is not None:
                    texts[memory.id] = digest(memory.before)
            for memory_id in info.memory_ids:
                if memory_id in texts or memory_id in added:
                    continue
                hint = ns.index.get(memory_id)
                found = ns.version_at(base, memory_id, hint.path if hint else None)
                if found is not None:
                    texts[memory_id] = digest(found.text)
            if len(texts) >= 2:
                out.append({"ids": sorted(texts), "texts": texts, "commit": info.id})
        return out

    def _mark_stale(self, namespace: str, review: Review, stale: dict[str, str], actor: str) -> Review:
        every = self.commits(namespace, review)

        def update(current: Review) -> Review:
            if current.status != "open":  # e.g. merged by a racing approver in another process
                raise Conflict(f"review #{current.number} is already {current.status}")
            states = {**current.commit_states, **{c: "stale" for c in stale}}
            notes = {**current.commit_notes, **stale}
            return replace(current, status=status_of(every, states), commit_states=states, commit_notes=notes,
                           stale_reason=stale_reason(every, states, notes), updated=now())

        marked = self._save(namespace, review.number, update, f"{plural(len(stale), 'commit')} stale", actor)
        if marked.status != "open":  # nothing left to decide: the review closes
            self._retire_branch(namespace, marked)
        self._publish(namespace, marked)
        return marked

    def _retire_branch(self, namespace: str, review: Review) -> None:
        """Keep a closed review's commits reachable off ``refs/heads`` and drop its branch."""
        store = self.namespaces.open(namespace).store
        closed = f"{CLOSED_PREFIX}{review.number}"
        if store.head_id(closed) is None:
            try:
                store.move_ref(closed, review.head, None, f"close review #{review.number}")
            except RefRaceLost:
                pass
        if review.branch.startswith("refs/heads/") and store.head_id(review.branch) == review.head:
            store.delete_ref(review.branch)


def completed(store: Store, tip: Commit, since: Commit, actor: str, *, author: str | None = None) -> Commit:
    """``tip``, or one more commit on it that completes the memory files changed since ``since``.

    A file pushed over git may lack gitmem's own fields (a plain OKF file with only ``type``):
    when it reaches main it gets them (:func:`gitmem.concepts.complete`), in one commit. A file
    whose text was edited by hand gets the title and description the new text gives, where the
    old ones were taken from the old text (one set by hand stays).
    """
    files: dict[str, bytes | None] = {}
    ids: list[str] = []
    for change in store.file_changes(tip, since=since):
        if change.new_path is None or change.new_text is None or not is_memory_path(change.new_path):
            continue
        data = store.read(change.new_path, tip)
        try:
            done = None if data is None else concepts.complete(data, change.new_path, author=author,
                                                                before=_before(change))
        except MalformedConcept:
            continue  # the push was checked; a file that does not parse now is left as it is
        if done is not None:
            files[change.new_path] = done
            ids.append(concepts.parse(done, change.new_path).id)
    if not files:
        return tip
    summary = f"complete {plural(len(files), 'pushed memory file')}"
    completing = Change(files, summary, "complete", tuple(ids), "import", actor,
                        body="Gave the files without them an id and the fields gitmem keeps (created, potency, "
                             "state...), and edited texts the title and description they give, where those "
                             "had been taken from the text.")
    return store.commit(str(store.write_commit(tip, completing)))



def _before(change: FileChange) -> concepts.Memory | None:
    """The memory a pushed file changed, as it was; None for a new file (or one that did not parse)."""
    if change.old_path is None or change.old_text is None or not is_memory_path(change.old_path):
        return None
    try:
        return concepts.parse(change.old_text.encode("utf-8"), change.old_path)
    except MalformedConcept:
        return None


def merge_fields(base: concepts.Memory, mine: concepts.Memory, theirs: concepts.Memory) -> concepts.Memory:
    """``mine`` (the review's version) with what main changed since ``base`` in the fields mine left alone.

    Where both changed a field: confirmations are joined, uses added up, the later time and the
    higher potency kept; otherwise the review's value stands.
    """
    values: dict[str, Any] = {}
    for f in dataclass_fields(mine):
        name = f.name
        b, m, t = getattr(base, name), getattr(mine, name), getattr(theirs, name)
        if name == "path" or t == b:
            continue
        if m == b:
            values[name] = t
        elif name == "verified":
            values[name] = (*m, *(v for v in t if v not in m))
        elif name == "access_count":
            values[name] = m + (t - b)
        elif name == "potency":
            values[name] = max(m, t)
        elif name in ("last_used", "updated"):
            values[name] = max(v for v in (m, t) if v is not None) if (m or t) else None
    return mine.replace(**values)


def _same_version(review: Review, version: str | None) -> None:
    """Refuse a decision made on another version of the review than it has now (None: not checked)."""
    if version is None or version == review.version:
        return
    if not isinstance(version, str):
        raise InvalidInput("version must be the text the review gave (12 hex digits)")
    raise Conflict(f"review #{review.number} changed since you looked at it (someone decided or pushed "
                   "meanwhile); nothing was decided: look at it again")
