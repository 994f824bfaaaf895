"""Rewriting a repository's whole history to take a text out of it: the repository layer of a purge.

Git keeps everything, which is the point, until a secret or someone's personal data gets in.
:class:`Scrub` rewrites every commit reachable from any ref (``main``, review branches,
``refs/gitmem/reviews``, ``refs/gitmem/closed/*``) without a working tree, as ``git
filter-repo`` would, with pygit2:

- a blob that :attr:`Scrub.drop` names (the memory's own file, its discussion) leaves every tree
  it was in; any other blob, and every commit message, has each of the ``needles`` (the memory's
  texts, titles, descriptions, in the forms JSON gives them) replaced by ``(redacted)``;
- a tree, a blob or a commit that needs no change keeps its id, so history before the memory
  came is untouched; a changed commit keeps its author, committer, dates and the rest of its
  message;
- the refs then move by compare-and-swap (:meth:`Store.move_ref`): a writer that moved one
  meanwhile wins, and the scrub goes again over what it added (everything done is remembered);
- finally :func:`expunge` drops what still holds the text: the reflogs, every object no ref
  reaches that held it, and the packs they were in (``git repack -a -d``, then the loose
  objects one by one). Objects other writers are making are loose and hold no needle, so a
  write under way is never lost.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pygit2
from pygit2.enums import FileMode, ObjectType, SortMode

from ..errors import RefRaceLost, Unavailable
from .packing import git_program
from .store import Store, _writing, packing_refs, parse_trailers

# What a needle becomes: plain text in Markdown, YAML and JSON alike ("[...]" would be a YAML list).
REDACTED = "(redacted)"
#: Where main keeps a record of each purge: what was rewritten, when, by whom, on whose approval.
RECORDS = ".gitmem/redactions"
# How often a scrub goes again over refs that moved under it before it gives up.
_ATTEMPTS = 20


@dataclass
class Rewritten:
    """What a scrub changed: old commit id -> new, and each moved ref's (old, new) commit."""

    commits: dict[str, str] = field(default_factory=dict)
    refs: dict[str, tuple[str, str]] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)  # blob ids taken out of the trees
    replaced: set[str] = field(default_factory=set)  # ids of blobs and trees written again


class Scrub:
    """Take ``needles`` and the blobs ``drop`` names out of every commit of ``store`` (see the module)."""

    def __init__(self, store: Store, needles: Iterable[str], drop: Callable[[str, bytes], bool], *,
                 about: str | None = None, edit: Callable[[str, bytes], bytes | None] | None = None,
                 rename: Callable[[str], str] | None = None) -> None:
        """``drop(path, data)``: whether a blob at ``path`` leaves the history; ``needles``: texts to redact.

        ``about``: a memory id; a commit whose ``Memory-Id`` trailer names it keeps only its action
        and trailers as its message (its summary and body quote the memory, a comment on it...).
        ``edit(path, data)``: a blob's redacted content when the caller knows its format better
        (a memory file's YAML escapes its title), else None for a plain replacement.
        ``rename(path)``: a file's new path, when its name holds the text (only the last part may change).
        """
        self.store = store
        self.about = about
        self.edit = edit
        self.rename = rename
        self.repo = store.repo
        # Longest first, so a title inside its own text is not half redacted before the text is.
        forms = {form for n in needles if n.strip() for form in _forms(n)}
        self.needles = sorted(forms, key=len, reverse=True)
        self.drop = drop
        self._blobs: dict[tuple[str, str], str | None] = {}  # (blob id, path) -> its new id, None: dropped
        self._trees: dict[tuple[str, str], str | None] = {}
        self._trees_of: dict[str, str | None] = {}  # commit id -> its scrubbed root tree (None: empty)
        self.done = Rewritten()

    # --- objects ------------------------------------------------------------------------------------

    def text(self, data: str) -> str:
        """``data`` with every needle replaced, and a needle's beginning cut short by ``…`` too."""
        for needle in self.needles:
            if needle in data:
                data = data.replace(needle, REDACTED)
        if "…" in data:  # commit summaries cut long titles: "remember: The first 61 characters…"
            data = "\n".join(self._cut(line) for line in data.split("\n"))
        return data

    def _cut(self, line: str) -> str:
        if not line.endswith("…"):
            return line
        for needle in self.needles:
            start = line.find(needle[:16]) if len(needle) >= 16 else -1
            if start >= 0 and needle.startswith(line[start:-1]):
                return line[:start] + REDACTED
        return line

    def _renamed(self, path: str) -> str:
        """A file's path after the scrub: a name made from the text (a memory's slug) is renamed."""
        return path if self.rename is None else self.rename(path)

    def _about(self, message: str) -> str:
        """A message of a commit about the memory cut to its action and its trailers."""
        trailers = parse_trailers(message)
        if self.about is None or self.about not in trailers.get("Memory-Id", []):
            return message
        action = (trailers.get("Action") or ["change"])[0]
        last = message.strip().split("\n\n")[-1]
        return f"{action}: {REDACTED}\n\n{last}\n"

    def _blob(self, oid: pygit2.Oid, path: str) -> str | None:
        """The blob's id after the scrub (itself when clean), or None when it leaves the tree."""
        key = (str(oid), path)
        if key not in self._blobs:
            blob = self.repo[oid]
            assert isinstance(blob, pygit2.Blob)
            data = blob.data
            if self.drop(path, data):
                self._blobs[key] = None
                self.done.dropped.add(str(oid))
                return None
            new = self.edit(path, data) if self.edit is not None else None
            if new is None and (any(n.encode() in data for n in self.needles) or "…".encode() in data):
                new = self.text(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
            if new is None or new == data:
                self._blobs[key] = str(oid)
            else:
                self._blobs[key] = str(_writing(partial(self.repo.create_blob, new)))
                self.done.replaced.add(str(oid))
        return self._blobs[key]

    def _tree(self, tree: pygit2.Tree, prefix: str) -> str | None:
        """The tree's id after the scrub (itself when clean), or None when nothing is left in it."""
        key = (str(tree.id), prefix)
        if key in self._trees:
            return self._trees[key]
        builder = None
        for entry in tree:
            name = str(entry.name)
            path = f"{prefix}{name}"
            new: str | None
            if entry.filemode == FileMode.TREE:
                sub = self.repo[entry.id]
                assert isinstance(sub, pygit2.Tree)
                new = self._tree(sub, path + "/")
            elif entry.filemode in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE):
                new = self._blob(entry.id, path)
            else:
                new = str(entry.id)  # a link or a submodule: no text of ours
            renamed = self._renamed(path).rpartition("/")[2]
            if new == str(entry.id) and renamed == name:
                continue
            if builder is None:
                builder = self.repo.TreeBuilder(tree)
            builder.remove(name)
            if new is not None:
                builder.insert(renamed, pygit2.Oid(hex=new), entry.filemode)
        if builder is None:
            result: str | None = str(tree.id)
        elif len(builder) == 0:
            result = None
        else:
            result = str(_writing(builder.write))
            self.done.replaced.add(str(tree.id))
        self._trees[key] = result
        return result

    def _commit_tree(self, commit: pygit2.Commit) -> str | None:
        """The commit's tree after the scrub: its parent's scrubbed tree with only what changed scrubbed.

        Each commit changes a few files of trees that list thousands; walking every tree entry of
        every commit would cost the square of the history. A commit with one parent is the
        parent's result plus the diff between the two (git's, in C), which by induction from a
        root commit walked whole is the same tree. Roots and merges are walked whole.
        """
        if len(commit.parents) != 1:
            return self._tree(commit.tree, "")
        parent = commit.parents[0]
        base = self._trees_of.get(str(parent.id))
        if base is None:
            base = self._tree(parent.tree, "")
            self._trees_of[str(parent.id)] = base
        changes: dict[str, tuple[str | None, int]] = {}
        same = base == str(parent.tree_id)  # so far: the parent's tree needed no change
        for delta in parent.tree.diff_to_tree(commit.tree).deltas:
            if delta.status == pygit2.enums.DeltaStatus.DELETED:
                changes[self._renamed(delta.old_file.path)] = (None, 0)
                continue
            mode = int(delta.new_file.mode)
            if delta.status == pygit2.enums.DeltaStatus.TYPECHANGE or mode not in (
                    int(FileMode.BLOB), int(FileMode.BLOB_EXECUTABLE)):
                return self._tree(commit.tree, "")  # a link or a submodule: walked whole, as it is
            new = self._blob(delta.new_file.id, delta.new_file.path)
            path = self._renamed(delta.new_file.path)
            same = same and new == str(delta.new_file.id) and path == delta.new_file.path
            changes[path] = (new, mode)
        if same:
            return str(commit.tree_id)  # nothing of it changes
        base_tree = None if base is None else self.repo[pygit2.Oid(hex=base)]
        assert base_tree is None or isinstance(base_tree, pygit2.Tree)
        result = self._apply(base_tree, changes)
        if result != str(commit.tree_id):
            self.done.replaced.add(str(commit.tree_id))
        return result

    def _apply(self, tree: pygit2.Tree | None, changes: dict[str, tuple[str | None, int]]) -> str | None:
        """``tree`` with each path set to a blob id (None: removed), nested trees written as needed."""
        builder = self.repo.TreeBuilder(tree) if tree is not None else self.repo.TreeBuilder()
        nested: dict[str, dict[str, tuple[str | None, int]]] = {}
        for path, (oid, mode) in changes.items():
            head, _, rest = path.partition("/")
            if rest:
                nested.setdefault(head, {})[rest] = (oid, mode)
            elif oid is None:
                if builder.get(head) is not None:
                    builder.remove(head)
            else:
                builder.insert(head, pygit2.Oid(hex=oid), mode)
        for name, sub_changes in nested.items():
            sub = None
            if tree is not None and name in tree:
                found = self.repo[tree[name].id]
                sub = found if isinstance(found, pygit2.Tree) else None
            oid = self._apply(sub, sub_changes)
            if oid is None:
                if builder.get(name) is not None:
                    builder.remove(name)
            else:
                builder.insert(name, pygit2.Oid(hex=oid), FileMode.TREE)
        if len(builder) == 0:
            return None
        return str(_writing(builder.write))

    def _commit(self, commit: pygit2.Commit) -> str:
        """The commit's id after the scrub: itself when its tree, message and parents stay."""
        parents = [self.done.commits.get(str(p), str(p)) for p in commit.parent_ids]
        tree = self._commit_tree(commit)
        self._trees_of[str(commit.id)] = tree
        if tree is None:
            tree = str(_writing(self.repo.TreeBuilder().write))
        message = commit.raw_message.decode("utf-8", "surrogateescape")
        scrubbed = self.text(self._about(message))
        if tree == str(commit.tree_id) and scrubbed == message and parents == [str(p) for p in commit.parent_ids]:
            return str(commit.id)
        made = _writing(partial(self.repo.create_commit, None, commit.author, commit.committer,
                                scrubbed.encode("utf-8", "surrogateescape").decode("utf-8", "replace"),
                                pygit2.Oid(hex=tree), [pygit2.Oid(hex=p) for p in parents]))
        self.done.commits[str(commit.id)] = str(made)
        return str(made)

    # --- refs -----------------------------------------------------------------------------------------

    def run(self, guard: Callable[[], None] | None = None) -> Rewritten:
        """Scrub every commit of every ref and move the refs, again for refs that moved meanwhile."""
        for _ in range(_ATTEMPTS):
            tips = self._tips()
            walker = self.repo.walk(None, SortMode.TOPOLOGICAL | SortMode.REVERSE)
            for oid in set(tips.values()):
                walker.push(pygit2.Oid(hex=oid))
            for commit in walker:
                if str(commit.id) not in self.done.commits:
                    self._commit(commit)
            lost = False
            for ref, old in sorted(tips.items()):
                new = self.done.commits.get(old, old)
                if new == old:
                    continue
                if guard is not None:
                    guard()
                try:
                    self.store.move_ref(ref, new, old, "purge: history rewritten")
                except RefRaceLost:
                    lost = True  # a writer moved it: scrub what it added and try again
                    continue
                first = self.done.refs.get(ref, (old, new))[0]
                self.done.refs[ref] = (first, new)
            if not lost:
                return self.done
        raise RefRaceLost(f"the refs of {self.store.path} kept moving during the purge; try again")

    def _tips(self) -> dict[str, str]:
        """Every ref that points at a commit (directly), with that commit."""
        out = {}
        for name in self.repo.references:
            ref = self.repo.references[name]
            if ref.type != pygit2.enums.ReferenceType.DIRECT:
                continue
            target = self.repo.get(ref.target)
            if target is not None and target.type == ObjectType.COMMIT:
                out[name] = str(ref.target)
        return out

    def poisoned(self) -> set[str]:
        """Every object id the scrub replaced or dropped: what must not stay in the repository."""
        return set(self.done.commits) | self.done.dropped | self.done.replaced


def blobs_matching(store: Store, keep: Callable[[str, bytes], bool]) -> list[tuple[str, bytes]]:
    """``(path, data)`` of every distinct blob in any commit of any ref for which ``keep(path, data)``.

    A commit with one parent brings only what git's diff says it changed; roots and merges are
    walked whole (so every blob of the history is seen once, without reading every tree of it).
    """
    repo = store.repo
    walker = repo.walk(None, SortMode.TOPOLOGICAL)
    for name in repo.references:
        ref = repo.references[name]
        target = repo.get(ref.target) if ref.type == pygit2.enums.ReferenceType.DIRECT else None
        if target is not None and target.type == ObjectType.COMMIT:
            walker.push(ref.target)
    seen_trees: set[tuple[str, str]] = set()
    seen_blobs: set[str] = set()
    found: list[tuple[str, bytes]] = []

    def look(oid: pygit2.Oid, path: str) -> None:
        if str(oid) in seen_blobs:
            return
        seen_blobs.add(str(oid))
        blob = repo[oid]
        if isinstance(blob, pygit2.Blob) and keep(path, blob.data):
            found.append((path, blob.data))

    def visit(tree: pygit2.Tree, prefix: str) -> None:
        if (str(tree.id), prefix) in seen_trees:
            return
        seen_trees.add((str(tree.id), prefix))
        for entry in tree:
            path = f"{prefix}{entry.name}"
            if entry.filemode == FileMode.TREE:
                sub = repo[entry.id]
                assert isinstance(sub, pygit2.Tree)
                visit(sub, path + "/")
            elif entry.filemode in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE):
                look(entry.id, path)

    for commit in walker:
        if len(commit.parents) != 1:
            visit(commit.tree, "")
            continue
        for delta in commit.parents[0].tree.diff_to_tree(commit.tree).deltas:
            if delta.status != pygit2.enums.DeltaStatus.DELETED and int(delta.new_file.mode) in (
                    int(FileMode.BLOB), int(FileMode.BLOB_EXECUTABLE)):
                look(delta.new_file.id, delta.new_file.path)
    return found


def read_records(store: Store) -> list[dict[str, object]]:
    """The redaction records on main (``.gitmem/redactions/*.json``), oldest first."""
    out = []
    for path, data in sorted(store.files(store.head(), RECORDS)):
        try:
            record = json.loads(data)
        except ValueError:
            continue
        if isinstance(record, dict) and path.endswith(".json"):
            out.append(record)
    return out


def rewritten_commits(store: Store) -> dict[str, str]:
    """Commit id -> what to tell a clone that still has it, for every commit a purge rewrote."""
    out: dict[str, str] = {}
    for record in read_records(store):
        commits = record.get("rewritten")
        said = str(record.get("recover") or "history was rewritten by a purge; re-clone")
        for commit in commits if isinstance(commits, list) else []:
            out[str(commit)] = said
    return out


def _forms(needle: str) -> set[str]:
    """A text as files may hold it: as it is, with its lines joined, and inside a JSON string."""
    forms = {needle, " ".join(needle.split())}
    forms.add(json.dumps(needle, ensure_ascii=False)[1:-1])
    forms.add(json.dumps(needle)[1:-1])
    return {f for f in forms if f}


def expunge(store: Store, poisoned: set[str], needles: Iterable[str], names: Iterable[str] = ()) -> int:
    """Delete what a scrub left behind that holds the text: reflogs, unreachable objects, old packs.

    Returns how many loose objects were deleted. Safe beside writers: every object a ref reaches
    is packed first, and a loose object is deleted only when it is one of ``poisoned``, holds a
    needle, or (a tree) lists a file whose name holds one of ``names``.
    """
    repo = Path(store.path)
    git = git_program("to purge a history")
    _git(git, repo, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    with packing_refs(repo):  # packed-refs still names the old commits of refs moved since
        _git(git, repo, "pack-refs", "--all")
    # -a without -A: objects no ref reaches are dropped with the old packs, not loosened.
    _git(git, repo, "repack", "-a", "-d", "-q")
    forms = [f.encode() for n in needles if n.strip() for f in _forms(n)] + [n.encode() for n in names if n]
    removed = 0
    objects = repo / "objects"
    for folder in objects.iterdir():
        if len(folder.name) != 2 or not folder.is_dir():
            continue
        for loose in folder.iterdir():
            oid = folder.name + loose.name
            if oid not in poisoned and not _holds(store.repo, oid, forms):
                continue
            try:
                os.unlink(loose)
                removed += 1
            except FileNotFoundError:
                continue
    return removed


def _holds(repo: pygit2.Repository, oid: str, forms: list[bytes]) -> bool:
    """Whether the object ``oid`` holds one of ``forms`` (False for what is not an object)."""
    try:
        data = repo.odb.read(pygit2.Oid(hex=oid))[1]
    except (KeyError, ValueError):
        return False
    return any(form in data for form in forms)


def _git(git: str, repo: Path, *args: str) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo),
           "LC_ALL": "C"}
    done = subprocess.run([git, "--git-dir", str(repo), *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        said = (done.stderr.strip() or f"exit {done.returncode}").splitlines()[-1]
        raise Unavailable(f"git {args[0]} failed on {repo}: {said}")
