"""``git push`` to a namespace: who may push where, what a pushed memory must be, what a push becomes.

A writer pushes to ``refs/for/main`` (the Gerrit convention) or to ``refs/heads/review/<name>``:
nothing reaches main, the pushed commits open a review (the one consolidation uses: web page,
Slack card, approve, merge selected, reject), and the client's terminal shows its number and
address as ``remote:`` lines. A reviewer or an admin may also move ``main`` forward (fast-forward
only). Every commit a push brings is checked before anything is accepted, file by file (see
:meth:`Pushes.problems`); one problem refuses the whole push, names the file on the client's
terminal, and leaves the repository as it was (the pack never leaves its quarantine): what can
refuse a push is checked before the pack moves in (:mod:`gitmem.pushrules`, and the review it
would open), so a refused push leaves every ref and object as it found them.

A pushed file may lack gitmem's own fields (a plain OKF file with only ``type``): it is accepted
and completed (id, created, potency...) when it reaches main, by a review's approval or by the
push itself.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from . import notify
from .concepts import now
from .errors import GitmemError, InvalidInput, RefLocked, RefRaceLost
from .pushrules import Rules, review_title
from .repo import MAIN, Namespace, Namespaces
from .repo import receive as wire
from .repo import rewrite as history
from .reviews import Review, Reviews, completed
from .semantic import Semantics
from .settings import Settings
from .wording import article, plural

log = logging.getLogger(__name__)

FOR_MAIN = "refs/for/main"
REVIEW_PREFIX = "refs/heads/review/"
HOW_TO_PUSH = ("push to refs/for/main to open a review: git push origin HEAD:refs/for/main "
               "(or run `gitmem sync`)")


@dataclass
class Outcome:
    """What became of a push: per ref ``None`` (accepted) or the reason it was refused, and what to say."""

    unpack: str = "ok"
    results: list[tuple[str, str | None]] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    reviews: list[int] = field(default_factory=list)
    main: str | None = None  # main's new commit, when the push moved it

    @property
    def accepted(self) -> bool:
        """Whether every ref of the push was accepted."""
        return self.unpack == "ok" and all(reason is None for _, reason in self.results)


@dataclass(frozen=True)
class ReviewPlan:
    """What a push to a review ref will do, worked out before the pack leaves its quarantine."""

    how: str  # "open" a new review, "update" the open one of the branch, or "same": one holds it already
    base: str  # the commit the review's commits build on: main's, or the head of the review it stacks on
    summaries: list[str]  # the first line of each of the review's commits, oldest first
    existing: Review | None = None  # the review that holds the commits ("same") or is updated
    stacks_on: Review | None = None  # the open review whose commits come first


class Pushes:
    """Receive pushes into a namespace's repository."""

    def __init__(self, namespaces: Namespaces, reviews: Reviews, settings: Settings, semantics: Semantics,
                 *, on_main: Callable[[str], None] | None = None) -> None:
        """``on_main(namespace)`` runs after a push moved main (the consolidation trigger)."""
        self.namespaces = namespaces
        self.reviews = reviews
        self.settings = settings
        self.semantics = semantics
        self.on_main = on_main
        self.rules = Rules(settings)

    def advertise(self, namespace: str) -> bytes:
        """The ref advertisement ``git push`` reads first (``info/refs?service=git-receive-pack``)."""
        return wire.advertisement(self.namespaces.open(namespace).store)

    def receive(self, namespace: str, body: IO[bytes], *, actor: str, role: str,
                base_url: str | None = None) -> bytes:
        """Take one push request (its commands and its pack); the report-status answer to send back.

        ``role`` is the pusher's role on the namespace (writer at least: the caller checked);
        ``base_url`` is where the web app is reached, for the review's address.
        """
        commands, caps = wire.read_commands(body)
        if not commands:
            return b""  # git's probe before a large push: it may go on
        outcome = self.apply(namespace, commands, body, actor=actor, role=role, base_url=base_url)
        return wire.report(outcome.unpack, outcome.results, outcome.messages, use_sideband="side-band-64k" in caps)

    def apply(self, namespace: str, commands: list[wire.RefUpdate], pack: IO[bytes], *, actor: str, role: str,
              base_url: str | None = None) -> Outcome:
        """Check ``commands`` and the pack against the rules and carry them out, all or nothing.

        Everything that may refuse the push is settled while the pack is in its quarantine: a
        refused push leaves the repository byte for byte as it was (no ref, no pack).
        """
        ns = self.namespaces.open(namespace)
        outcome = Outcome()
        policy = {c.ref: self._policy(ns, c, role) for c in commands}
        plans: dict[str, ReviewPlan] = {}
        quarantine = wire.Quarantine(ns.store)
        try:
            try:
                quarantine.receive(pack)
            except InvalidInput as exc:
                outcome.unpack = " ".join(str(exc).split())[:300]
                outcome.results = [(c.ref, "the pack was refused") for c in commands]
                outcome.messages = [f"refused: {exc}"]
                return outcome
            before_purge = self.rules.from_before_purge(quarantine.repo, wire.branch_tips(ns.store), commands,
                                                        self._rewritten(ns))
            for command in commands:
                policy[command.ref] = policy[command.ref] or before_purge or self._moves(ns, quarantine, command,
                                                                                         actor, role)
            refused = {ref: why for ref, why in policy.items() if why}
            problems: list[str] = []
            if not refused:
                problems = self.problems(ns, quarantine, commands)
            if not refused and not problems:
                for command in commands:
                    if command.ref == MAIN:
                        continue
                    try:
                        plans[command.ref] = self._plan_review(ns, quarantine.repo, command)
                    except InvalidInput as exc:
                        problems.append(f"{command.ref}: {exc}")
            if refused or problems:
                outcome.messages = [f"refused {ref}: {why}" for ref, why in refused.items()]
                outcome.messages += [f"refused: {p}" for p in problems]
                if problems:
                    outcome.messages.append("nothing was changed; fix what is named above and push again")
                first = problems[0] if problems else None
                outcome.results = [(c.ref, refused.get(c.ref) or first or
                                    "not applied: another ref of this push was refused") for c in commands]
                return outcome
            if any(c.ref == MAIN or plans[c.ref].how != "same" for c in commands):
                quarantine.migrate()  # a push that only repeats an open review brings nothing to keep
        finally:
            quarantine.discard()
        for command in commands:
            try:
                if command.ref == MAIN:
                    self._to_main(ns, command, actor, outcome)
                else:
                    self._to_review(ns, command, plans[command.ref], actor, base_url, outcome)
            except GitmemError as exc:
                outcome.results.append((command.ref, str(exc)))
                outcome.messages.append(f"refused {command.ref}: {exc}")
        return outcome

    # --- the rules ---------------------------------------------------------------------------------

    def _policy(self, ns: Namespace, command: wire.RefUpdate, role: str) -> str | None:
        """Why ``role`` may not make this ref update, or None."""
        ref = command.ref
        if command.deletes:
            return ("deleting a branch over git is not allowed; reject the review instead "
                    "(its page, or `gitmem review reject`)")
        if ref == MAIN:
            if role not in ("reviewer", "admin"):
                return f"{article(role)} may not push to main; {HOW_TO_PUSH}"
            return None
        if ref == FOR_MAIN or ref.startswith(FOR_MAIN + "%"):
            return None
        if ref.startswith("refs/for/"):
            return f"only refs/for/main takes reviews here (there is no other branch to review against), not {ref}"
        if ref.startswith(REVIEW_PREFIX):
            name = ref.removeprefix(REVIEW_PREFIX)
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}", name) or not wire.valid_branch_name(ref):
                return f"{ref} is not a review branch name gitmem takes (letters, digits, '.', '_', '-', '/')"
            return None
        return (f"gitmem takes pushes to refs/for/main, refs/heads/review/<name> and (reviewers) main, "
                f"not to {ref}")

    def _moves(self, ns: Namespace, quarantine: wire.Quarantine, command: wire.RefUpdate, actor: str,
               role: str) -> str | None:
        """Why the ref cannot move as asked (main moved, or would go back; someone else's review), or None."""
        current = ns.store.head_id(command.ref) if command.ref.startswith("refs/heads/") else None
        if current is None:
            return None
        if command.ref.startswith(REVIEW_PREFIX):
            # A proposal may be rewritten (rebased): its open review follows it. Only its author
            # (or a reviewer) may do that.
            found = [r for r in self.reviews.list(ns.name, status="open") if r.branch == command.ref]
            if not found:
                return f"{command.ref} belongs to no open review; push to a new review branch name"
            if found[0].author != actor and role not in ("reviewer", "admin"):
                return (f"{command.ref} is review #{found[0].number} by {found[0].author}; push your own "
                        "changes to refs/for/main or a review branch of your own")
            return None
        if command.old != current:
            return (f"{command.ref.removeprefix('refs/heads/')} moved since you fetched it (it is at {current[:10]} "
                    "now); fetch, rebase and push again (`gitmem sync` does all three)")
        branch = command.ref.removeprefix("refs/heads/")
        try:
            forward = wire.descends(quarantine.repo, command.new, current)
            back = not forward and wire.descends(quarantine.repo, current, command.new)
        except KeyError:
            forward = back = False
        if back:
            dropped = len(wire.new_commits(quarantine.repo, current, [command.new]))
            return (f"{branch} only moves forward: your push would take it back to {command.new[:10]}, dropping "
                    f"{plural(dropped, 'commit')}; to undo a change, revert it (`gitmem revert COMMIT`)")
        if not forward:
            return (f"{branch} is at {current[:10]}, which your commit does not build on (it moved since you "
                    "fetched, or your history was rewritten); fetch, rebase and push again (`gitmem sync` does "
                    "all three)")
        return None

    @staticmethod
    def _rewritten(ns: Namespace) -> dict[str, str]:
        """Commit id -> the way out, for every commit a purge rewrote (from the records on main)."""
        return history.rewritten_commits(ns.store)

    def problems(self, ns: Namespace, quarantine: wire.Quarantine, commands: list[wire.RefUpdate]) -> list[str]:
        """Every reason to refuse the commits the push brings (see :mod:`gitmem.pushrules`)."""
        main = ns.store.head_id(MAIN)
        assert main is not None
        return self.rules.problems(quarantine.repo, main, wire.branch_tips(ns.store), commands)

    def _plan_review(self, ns: Namespace, repo: wire.Repository, command: wire.RefUpdate) -> ReviewPlan:
        """What a push to a review ref will do; :class:`InvalidInput` when it would do nothing.

        A push to refs/for/main (or a new review branch) whose history holds an open review's
        commits stacks on that review: its own review holds only the commits after them.
        """
        main = ns.store.head_id(MAIN)
        assert main is not None
        base = wire.merge_base(repo, main, command.new)
        assert base is not None  # checked with the problems
        reviews = self.reviews.list(ns.name, status="open")
        mine = [r for r in reviews if r.branch == command.ref]
        if command.ref.startswith(REVIEW_PREFIX) and ns.store.head_id(command.ref) is not None:
            if not mine:  # closed while the push was checked
                raise InvalidInput(f"{command.ref} belongs to no open review; push to a new review branch name")
            return ReviewPlan("update", base, self._summaries(repo, base, command.new), existing=mine[0])
        same = [r for r in reviews if r.head == command.new]
        if command.ref == FOR_MAIN and same:
            return ReviewPlan("same", base, [], existing=same[0])
        stacks_on = None
        for review in reviews:
            try:
                if review.head in (command.new, base) or not wire.descends(repo, command.new, review.head):
                    continue
            except KeyError:
                continue  # its commits are gone (a branch deleted by hand): nothing to stack on
            if stacks_on is None or wire.descends(repo, review.head, stacks_on.head):
                stacks_on = review  # the nearest: its head is the latest of those in the history
        if stacks_on is not None:
            base = stacks_on.head
        summaries = self._summaries(repo, base, command.new)
        if not summaries:
            raise InvalidInput("nothing to review: main has those commits already")
        return ReviewPlan("open", base, summaries, stacks_on=stacks_on)

    @staticmethod
    def _summaries(repo: wire.Repository, base: str, head: str) -> list[str]:
        return [c.message.splitlines()[0] if c.message else "" for c in wire.new_commits(repo, head, [base])]

    # --- carrying a push out -------------------------------------------------------------------------

    def _to_main(self, ns: Namespace, command: wire.RefUpdate, actor: str, outcome: Outcome) -> None:
        """Move main forward to the pushed commit (completed), by compare-and-swap from what the client saw."""
        store = ns.store
        with ns.lock:
            current = store.head_id(MAIN)
            assert current is not None
            if command.old != current:
                raise RefRaceLost(f"main moved since you fetched it (it is at {current[:10]} now); "
                                  "fetch, rebase and push again (`gitmem sync` does all three)")
            if not wire.descends(store.repo, command.new, current):
                raise InvalidInput("main only moves forward (fast-forward); fetch, rebase and push again")
            tip = completed(store, store.commit(command.new), store.commit(current), actor, author=actor)
            try:
                store.move_ref(MAIN, tip.id, current, f"push by {actor}")
            except RefLocked:
                raise
            except RefRaceLost:
                raise RefRaceLost("main moved while your push was checked; fetch, rebase and push again") from None
            ns.synced()
        count = len(store.between(current, command.new))
        outcome.results.append((command.ref, None))
        outcome.main = str(tip.id)
        outcome.messages.append(f"main is at {str(tip.id)[:10]}: {plural(count, 'commit')} from {actor}")
        if str(tip.id) != command.new:
            outcome.messages.append("gitmem completed the memory files in one more commit (the fields it keeps: "
                                    "id, created, potency...; titles that follow an edited text): git pull to get it")
        self._after_main(ns, current, str(tip.id), actor, count)

    def _after_main(self, ns: Namespace, before: str, after: str, actor: str, count: int) -> None:
        """The index and vectors catch up; the write is announced and may trigger consolidation."""
        try:
            if self.semantics.enabled:
                self.semantics.fill(ns)
        except GitmemError:
            log.exception("vectors of %s did not catch up after a push; `gitmem vectors` fills them", ns.name)
        notify.publish(self.settings, {"event": "push.merged", "namespace": ns.name, "actor": actor,
                                       "before": before, "after": after, "commits": count,
                                       "summary": f"{actor} pushed {plural(count, 'commit')} to main"})
        if self.on_main is not None:
            try:
                self.on_main(ns.name)
            except Exception:  # a trigger must never fail the write that fired it
                log.exception("after-push hook failed in %s", ns.name)

    def _to_review(self, ns: Namespace, command: wire.RefUpdate, plan: ReviewPlan, actor: str, base_url: str | None,
                   outcome: Outcome) -> None:
        """Put the pushed commits on a review branch and open a review of them (or update the open one)."""
        store = ns.store
        if plan.how == "same":
            assert plan.existing is not None
            outcome.results.append((command.ref, None))
            outcome.messages.append(f"review #{plan.existing.number} holds these commits already; "
                                    "it waits for a reviewer")
            return
        if plan.how == "update":
            assert plan.existing is not None
            review = self._update_review(ns, command, actor, plan.base, plan.existing)
            verb = "updated"
        else:
            if command.ref.startswith(REVIEW_PREFIX):
                branch = command.ref
                store.move_ref(branch, command.new, None, f"push by {actor}")
            else:
                stamp = now().strftime("%Y%m%dT%H%M%S")
                branch = store.write_branch(store.commit(command.new), [],
                                            f"{REVIEW_PREFIX}push-{_slug(actor)}-{stamp}", f"push by {actor}")
            description = "\n".join(f"- {summary}" for summary in plan.summaries)
            if plan.stacks_on is not None:
                description += (f"\n\nThese commits come after those of review #{plan.stacks_on.number}, "
                                "which is open: approve that one first.")
            try:
                review = self.reviews.open(ns.name, branch=branch, base=plan.base, title=review_title(plan.summaries),
                                           author=actor, kind="push",
                                           description=f"Pushed over git by {actor}:\n\n{description}")
            except GitmemError:
                store.delete_ref(branch)  # no review, no branch: nothing of the push is published
                raise
            verb = "opened"
        outcome.results.append((command.ref, None))  # only now: a review that failed to open is the ref's "ng"
        outcome.reviews.append(review.number)
        where = f"{base_url.rstrip('/')}/ns/{ns.name}/reviews/{review.number}" if base_url else \
            f"`gitmem review show {review.number} --namespace {ns.name}`"
        count = len(plan.summaries)
        outcome.messages.append(f"review #{review.number} {verb} with {plural(count, 'commit')}: {where}")
        if plan.stacks_on is not None:
            stacked = plan.stacks_on
            outcome.messages.append(f"it holds only the commits after review #{stacked.number} (still open, "
                                    f"{plural(stacked.commit_count, 'commit')}); approve #{stacked.number} first")
        outcome.messages.append("nothing reaches main until a reviewer approves it")
        advice = self.reviews.pull_advice(ns.name, review, pusher=True)
        if advice:  # how the pusher's clone gets back in step once it is approved
            outcome.messages.append(advice)

    def _update_review(self, ns: Namespace, command: wire.RefUpdate, actor: str, base: str, review: Review) -> Review:
        """A push to an existing review branch: move it (a rebase may rewrite it) and point its open review at it."""
        store = ns.store
        current = store.head_id(command.ref)
        assert current is not None
        store.move_ref(command.ref, command.new, current, f"push by {actor}")
        return self.reviews.repoint(ns.name, review.number, head=command.new, base=base, actor=actor)


def _slug(actor: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", actor.lower()).strip("-")[:40] or "someone"
