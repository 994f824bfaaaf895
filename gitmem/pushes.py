"""``git push`` to a namespace: who may push where, what a pushed memory must be, what a push becomes.

A writer pushes to ``refs/for/main`` (the Gerrit convention) or to ``refs/heads/review/<name>``:
nothing reaches main, the pushed commits open a review (the one consolidation uses: web page,
Slack card, approve, merge selected, reject), and the client's terminal shows its number and
address as ``remote:`` lines. A reviewer or an admin may also move ``main`` forward (fast-forward
only). Every commit a push brings is checked before anything is accepted, file by file (see
:meth:`Pushes.problems`); one problem refuses the whole push, names the file on the client's
terminal, and leaves the repository as it was (the pack never leaves its quarantine).

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

from . import concepts, notify, secretscan
from .concepts import TYPES, now
from .errors import GitmemError, InvalidInput, MalformedConcept, RefLocked, RefRaceLost
from .repo import MAIN, Namespace, Namespaces, is_memory_path, refused_part
from .repo import receive as wire
from .reviews import Review, Reviews, completed
from .semantic import Semantics
from .settings import Settings

log = logging.getLogger(__name__)

FOR_MAIN = "refs/for/main"
REVIEW_PREFIX = "refs/heads/review/"
# What a pushed README.md may weigh, and how much bigger than its text limit a memory file may be
# (its frontmatter: tags, paths, confirmations...).
README_BYTES = 64 * 1024
FRONTMATTER_BYTES = 16 * 1024
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
        """Check ``commands`` and the pack against the rules and carry them out, all or nothing."""
        ns = self.namespaces.open(namespace)
        outcome = Outcome()
        policy = {c.ref: self._policy(ns, c, role) for c in commands}
        quarantine = wire.Quarantine(ns.store)
        try:
            try:
                quarantine.receive(pack)
            except InvalidInput as exc:
                outcome.unpack = " ".join(str(exc).split())[:300]
                outcome.results = [(c.ref, "the pack was refused") for c in commands]
                outcome.messages = [f"refused: {exc}"]
                return outcome
            for command in commands:
                policy[command.ref] = policy[command.ref] or self._moves(ns, quarantine, command, actor, role)
            refused = {ref: why for ref, why in policy.items() if why}
            problems: list[str] = []
            if not refused:
                problems = self.problems(ns, quarantine, commands)
            if refused or problems:
                outcome.messages = [f"refused {ref}: {why}" for ref, why in refused.items()]
                outcome.messages += [f"refused: {p}" for p in problems]
                if problems:
                    outcome.messages.append("nothing was changed; fix the files named above and push again")
                first = problems[0] if problems else None
                outcome.results = [(c.ref, refused.get(c.ref) or first or
                                    "not applied: another ref of this push was refused") for c in commands]
                return outcome
            quarantine.migrate()
        finally:
            quarantine.discard()
        for command in commands:
            try:
                if command.ref == MAIN:
                    self._to_main(ns, command, actor, outcome)
                else:
                    self._to_review(ns, command, actor, base_url, outcome)
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
                return f"a {role} may not push to main; {HOW_TO_PUSH}"
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
        try:
            forward = wire.descends(quarantine.repo, command.new, current)
        except KeyError:
            forward = False
        if not forward:
            return (f"{command.ref.removeprefix('refs/heads/')} only moves forward (fast-forward); fetch, rebase "
                    "and push again")
        return None

    def problems(self, ns: Namespace, quarantine: wire.Quarantine, commands: list[wire.RefUpdate]) -> list[str]:
        """Every reason to refuse the commits the push brings, each naming the file and the commit.

        Each changed file must be a memory ``<type>/<name>.md`` (or the README), parse, have a
        valid ``type`` that matches its folder and a unique ``id`` (or none yet), stay within the
        size limits and carry no secret; no ``..``, ``.git``, symbolic links, submodules or other
        folders. Merge commits and histories unrelated to main are refused too.
        """
        repo = quarantine.repo
        main = ns.store.head_id(MAIN)
        assert main is not None
        known = wire.branch_tips(ns.store)
        out: list[str] = []
        for command in commands:
            try:
                commits = wire.new_commits(repo, command.new, known)
            except KeyError:
                out.append(f"{command.ref}: the push does not carry commit {command.new[:10]} and all it needs")
                continue
            except InvalidInput as exc:
                out.append(str(exc))
                continue
            if wire.merge_base(repo, main, command.new) is None:
                out.append(f"{command.ref}: the pushed history shares no commit with main; clone the namespace "
                           "and commit on top of it (or run `gitmem sync` on a plain folder)")
                continue
            changed: set[str] = set()
            for commit in commits:
                pushed = wire.pushed(repo, commit)
                where = f"(commit {pushed.id[:10]} \"{pushed.summary[:60]}\")"
                if pushed.parents > 1:
                    out.append(f"commit {pushed.id[:10]} is a merge; rebase on main instead of merging "
                               "(git pull --rebase, or `gitmem sync`)")
                for file in pushed.files:
                    reason = self._file_problem(file)
                    if reason:
                        out.append(f"{file.path}: {reason} {where}")
                    elif file.data is not None and is_memory_path(file.path):
                        changed.add(file.path)
            out += self._duplicate_ids(repo, command.new, changed)
        return list(dict.fromkeys(out))

    def _file_problem(self, file: wire.PushedFile) -> str | None:
        """What is wrong with one changed file, or None."""
        part = refused_part(file.path)
        if part is not None:
            return f"the name {part!r} is not allowed in a path"
        if file.kind == "symlink":
            return "a symbolic link; push plain files only"
        if file.kind == "submodule" or file.path == ".gitmodules":
            return "a submodule; a memory repository holds no other repositories"
        folder, _, rest = file.path.partition("/")
        if file.status == "deleted":
            if is_memory_path(file.path) or file.kind == "tree":
                return None
            return "gitmem's own file; leave it in place"
        if file.path == "README.md":
            if file.data is not None and len(file.data) > README_BYTES:
                return f"{len(file.data)} bytes; the README may have {README_BYTES}"
            return None if file.data is None else _secret(file.data)
        if folder == ".gitmem":
            return ".gitmem/ is written by gitmem only (discussions go through the web page or the API)"
        if folder not in TYPES:
            return ("not in a memory folder; a memory is <type>/<name>.md, with <type> one of "
                    f"{', '.join(TYPES)}")
        if "/" in rest:
            return f"a folder inside {folder}/; put memory files in {folder}/ itself"
        if not rest.endswith(".md"):
            return f"only Markdown memory files (<name>.md) go in {folder}/"
        if file.kind not in ("file", "executable") or file.data is None:
            return "not a plain file"
        return self._memory_problem(file.path, folder, file.data)

    def _memory_problem(self, path: str, folder: str, data: bytes) -> str | None:
        limit = self.settings.max_text_chars * 4 + FRONTMATTER_BYTES
        if len(data) > limit:
            return f"{len(data)} bytes; a memory file may have {limit}"
        try:
            memory, _ = concepts.parse_pushed(data, path)
        except MalformedConcept as exc:
            return exc.reason
        secret = _secret(data)
        if secret:
            return secret
        if memory.type != folder:
            return f"its type is {memory.type!r} but it is in {folder}/; move it to {memory.type}/"
        if len(memory.text) > self.settings.max_text_chars:
            return f"its text is {len(memory.text)} characters; the limit is {self.settings.max_text_chars}"
        if len(memory.title) > self.settings.max_title_chars:
            return f"its title is {len(memory.title)} characters; the limit is {self.settings.max_title_chars}"
        for name in ("tags", "paths", "verified", "related", "supersedes"):
            if len(getattr(memory, name)) > concepts.MAX_LIST_ITEMS:
                return f"it has {len(getattr(memory, name))} {name}; the limit is {concepts.MAX_LIST_ITEMS}"
        return None

    def _duplicate_ids(self, repo: wire.Repository, tip: str, changed: set[str]) -> list[str]:
        """Changed memory files whose id another file at ``tip`` has too."""
        if not changed:
            return []
        owners: dict[str, list[str]] = {}
        for path, data in wire.memory_files(repo, tip):
            if not is_memory_path(path):
                continue
            match = re.search(rb"^id:[ \t]*['\"]?([0-9a-f]{10})['\"]?[ \t]*$", data[:4096], re.MULTILINE)
            if match:
                owners.setdefault(match.group(1).decode(), []).append(path)
        out = []
        for memory_id, paths in owners.items():
            mine = [p for p in paths if p in changed]
            if len(paths) > 1 and mine:
                others = ", ".join(p for p in paths if p != mine[0])
                out.append(f"{mine[0]}: id {memory_id} is also the id of {others}; give one of them another "
                           "id, or delete its id line and gitmem assigns one")
        return out

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
        outcome.messages.append(f"main is at {str(tip.id)[:10]}: {count} commit(s) from {actor}")
        if str(tip.id) != command.new:
            outcome.messages.append("gitmem completed the memory files that lacked its fields (id, created, "
                                    "potency...) in one more commit: git pull to get it")
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
                                       "summary": f"{actor} pushed {count} commit(s) to main"})
        if self.on_main is not None:
            try:
                self.on_main(ns.name)
            except Exception:  # a trigger must never fail the write that fired it
                log.exception("after-push hook failed in %s", ns.name)

    def _to_review(self, ns: Namespace, command: wire.RefUpdate, actor: str, base_url: str | None,
                   outcome: Outcome) -> None:
        """Put the pushed commits on a review branch and open a review of them (or update the open one)."""
        store = ns.store
        main = store.head_id(MAIN)
        assert main is not None
        base = wire.merge_base(store.repo, main, command.new)
        assert base is not None  # checked with the problems
        commits = store.between(base, command.new)
        if not commits:
            raise InvalidInput("nothing to review: main has those commits already")
        same = [r for r in self.reviews.list(ns.name, status="open") if r.head == command.new]
        if command.ref == FOR_MAIN and same:
            outcome.results.append((command.ref, None))
            outcome.messages.append(f"review #{same[0].number} holds these commits already; it waits for a reviewer")
            return
        if command.ref.startswith(REVIEW_PREFIX) and store.head_id(command.ref) is not None:
            review = self._update_review(ns, command, actor, base)
            verb = "updated"
        else:
            if command.ref.startswith(REVIEW_PREFIX):
                branch = command.ref
                store.move_ref(branch, command.new, None, f"push by {actor}")
            else:
                stamp = now().strftime("%Y%m%dT%H%M%S")
                branch = store.write_branch(store.commit(command.new), [],
                                            f"{REVIEW_PREFIX}push-{_slug(actor)}-{stamp}", f"push by {actor}")
            first = store.info(commits[0]).summary or "pushed change"
            title = first if len(commits) == 1 else f"{len(commits)} commits: {first}"
            description = "\n".join(f"- {store.info(c).summary}" for c in commits)
            review = self.reviews.open(ns.name, branch=branch, base=base, title=title[:200], author=actor,
                                       kind="push", description=f"Pushed over git by {actor}:\n\n{description}")
            verb = "opened"
        outcome.results.append((command.ref, None))
        outcome.reviews.append(review.number)
        where = f"{base_url.rstrip('/')}/ns/{ns.name}/reviews/{review.number}" if base_url else \
            f"`gitmem review show {review.number} --namespace {ns.name}`"
        outcome.messages.append(f"review #{review.number} {verb} with {len(commits)} commit(s): {where}")
        outcome.messages.append("nothing reaches main until a reviewer approves it")
        advice = self.reviews.pull_advice(ns.name, review, pusher=True)
        if advice:  # how the pusher's clone gets back in step once it is approved
            outcome.messages.append(advice)

    def _update_review(self, ns: Namespace, command: wire.RefUpdate, actor: str, base: str) -> Review:
        """A push to an existing review branch: move it (a rebase may rewrite it) and point its open review at it."""
        store = ns.store
        current = store.head_id(command.ref)
        assert current is not None
        open_reviews = [r for r in self.reviews.list(ns.name, status="open") if r.branch == command.ref]
        if not open_reviews:  # closed while the push was checked
            raise InvalidInput(f"{command.ref} belongs to no open review; push to a new review branch name")
        store.move_ref(command.ref, command.new, current, f"push by {actor}")
        return self.reviews.repoint(ns.name, open_reviews[0].number, head=command.new, base=base, actor=actor)


def _secret(data: bytes) -> str | None:
    """What a file's first secret looks like and where, or None."""
    found = secretscan.find(data.decode("utf-8", "replace"))
    if not found:
        return None
    return (f"line {found[0].line} carries what looks like a {found[0].kind}; remove it (git history keeps it "
            "forever, so rotate it too) and push again")


def _slug(actor: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", actor.lower()).strip("-")[:40] or "someone"
