"""What a pushed commit must be: the checks every commit of a ``git push`` passes before anything is kept.

Each changed file must be a memory ``<type>/<name>.md`` (or the README), parse, have a valid
``type`` that matches its folder and an ``id`` no other file has (or none yet), stay within the
size limits and carry no secret; no ``..``, ``.git``, symbolic links, submodules or other folders.
A commit's whole message, its author's and committer's names and e-mails and the names of the
files it adds carry no secret either; merge commits and histories unrelated to main are refused,
and so is a history that a purge rewrote (the refusal says how to get back in step). One problem
refuses the whole push (see :mod:`gitmem.pushes`), and each names the file or the commit and what to do.

Nothing here reads a blob larger than a memory file may be: sizes come from the objects' headers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from . import concepts, secretscan
from .concepts import TYPES
from .errors import InvalidInput, MalformedConcept
from .repo import is_memory_path, refused_part
from .repo import receive as wire
from .settings import Settings
from .wording import article

# What a pushed README.md may weigh, and how much bigger than its text limit a memory file may be
# (its frontmatter: tags, paths, confirmations...).
README_BYTES = 64 * 1024
FRONTMATTER_BYTES = 16 * 1024
REVIEW_TITLE_CHARS = 200


class Rules:
    """The checks of pushed commits, with the limits of the settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def memory_bytes(self) -> int:
        """The most a memory file may weigh: four bytes a character of text, and its frontmatter."""
        return self.settings.max_text_chars * 4 + FRONTMATTER_BYTES

    @property
    def read_bytes(self) -> int:
        """The largest file a check reads; a larger one is refused from its size alone."""
        return max(self.memory_bytes, README_BYTES)

    def problems(self, repo: wire.Repository, main: str, known: list[str],
                 commands: Iterable[wire.RefUpdate]) -> list[str]:
        """Every reason to refuse the commits the push brings, each naming the file or the commit.

        ``known``: the commits the repository's branches point at (what the push need not bring).
        """
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
                pushed = wire.pushed(repo, commit, self.read_bytes)
                where = f"(commit {pushed.id[:10]} \"{pushed.summary[:60]}\")"
                if pushed.parents > 1:
                    out.append(f"commit {pushed.id[:10]} is a merge; rebase on main instead of merging "
                               "(git pull --rebase, or `gitmem sync`)")
                out += commit_problems(pushed)
                for file in pushed.files:
                    reason = self.file_problem(file)
                    if reason:
                        out.append(f"{file.path}: {reason} {where}")
                    elif file.data is not None and is_memory_path(file.path):
                        changed.add(file.path)
            out += self.duplicate_ids(repo, command.new, changed)
        return list(dict.fromkeys(out))

    def from_before_purge(self, repo: wire.Repository, known: list[str], commands: Iterable[wire.RefUpdate],
                          rewritten: Mapping[str, str]) -> str | None:
        """What to tell a clone whose push brings commits a purge rewrote (it predates it), or None.

        ``rewritten``: commit id -> the way out, from the redaction records on main.
        """
        if not rewritten:
            return None
        for command in commands:
            try:
                commits = wire.new_commits(repo, command.new, known)
            except (KeyError, InvalidInput):
                continue  # the other checks say what is wrong with it
            old = next((str(c.id) for c in commits if str(c.id) in rewritten), None)
            if old is not None:
                return f"your history is from before a purge (commit {old[:10]}): {rewritten[old]}"
        return None

    def file_problem(self, file: wire.PushedFile) -> str | None:
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
        named = _secret(file.path, "its name")
        if named:
            return named
        if file.path == "README.md":
            if file.size > README_BYTES:
                return f"{file.size} bytes; the README may have {README_BYTES}"
            return None if file.data is None else _secret(file.data.decode("utf-8", "replace"))
        if folder == ".gitmem":
            return ".gitmem/ is written by gitmem only (discussions go through the web page or the API)"
        if folder not in TYPES:
            return ("not in a memory folder; a memory is <type>/<name>.md, with <type> one of "
                    f"{', '.join(TYPES)}")
        if "/" in rest:
            return f"a folder inside {folder}/; put memory files in {folder}/ itself"
        if not rest.endswith(".md"):
            return f"only Markdown memory files (<name>.md) go in {folder}/"
        if file.kind not in ("file", "executable"):
            return "not a plain file"
        if file.size > self.memory_bytes or file.data is None:
            return f"{file.size} bytes; a memory file may have {self.memory_bytes}"
        return self.memory_problem(file.path, folder, file.data)

    def memory_problem(self, path: str, folder: str, data: bytes) -> str | None:
        """What is wrong with a pushed memory file's content, or None."""
        try:
            memory, _ = concepts.parse_pushed(data, path)
        except MalformedConcept as exc:
            return exc.reason
        secret = _secret(data.decode("utf-8", "replace"))
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

    def duplicate_ids(self, repo: wire.Repository, tip: str, changed: set[str]) -> list[str]:
        """Changed memory files whose id another file at ``tip`` has too, read from the parsed frontmatter."""
        if not changed:
            return []
        owners: dict[str, list[str]] = {}
        for path, data in wire.memory_files(repo, tip, self.memory_bytes):
            if not is_memory_path(path):
                continue
            memory_id = concepts.stated_id(data, path)
            if memory_id is not None:
                owners.setdefault(memory_id, []).append(path)
        out = []
        for memory_id, paths in owners.items():
            mine = [p for p in paths if p in changed]
            if len(paths) > 1 and mine:
                others = ", ".join(p for p in paths if p != mine[0])
                out.append(f"{mine[0]}: id {memory_id} is also the id of {others}; give one of them another "
                           "id, or delete its id line and gitmem assigns one")
        return out


def commit_problems(commit: wire.PushedCommit) -> list[str]:
    """Secrets in a commit's message (summary and body) or in its author's or committer's name or e-mail."""
    out = []
    found = secretscan.find(commit.message)
    if found:
        out.append(f"commit {commit.id[:10]}: line {found[0].line} of its message carries what looks like "
                   f"{article(found[0].kind)}; reword it (`git commit --amend`, or `git rebase -i`), rotate the "
                   "secret "
                   "(git history keeps it forever) and push again")
    for role, person in commit.people:
        hit = secretscan.find(person)
        if hit:
            out.append(f"commit {commit.id[:10]}: its {role} ({_masked(person)}) carries what looks like "
                       f"{article(hit[0].kind)}; set git's user.name and user.email, then `git commit --amend "
                       "--reset-author` (or `git rebase -i --exec 'git commit --amend --no-edit --reset-author'`)")
    return out


def review_title(summaries: list[str]) -> str:
    """The title of the review a push opens: its first commit's summary, made one plain line.

    A summary git accepts may hold what a title may not (control characters, a leading ``/``
    or ``..``): those are made plain, so opening the review cannot fail after the push was taken.
    """
    first = " ".join(re.sub(r"[\x00-\x1f\x7f]", " ", summaries[0] if summaries else "").split())
    first = first or "pushed change"
    try:
        concepts.clean_title(first, limit=REVIEW_TITLE_CHARS)
    except InvalidInput:
        first = f"pushed: {first.lstrip('/~.')}".strip()
    title = first if len(summaries) <= 1 else f"{len(summaries)} commits: {first}"
    return title[:REVIEW_TITLE_CHARS]


def _secret(text: str, what: str | None = None) -> str | None:
    """What the first secret in ``text`` looks like and where (``what``: a name, else a line), or None."""
    found = secretscan.find(text)
    if not found:
        return None
    where = what or f"line {found[0].line}"
    return (f"{where} carries what looks like {article(found[0].kind)}; remove it (git history keeps it forever, so "
            "rotate it too) and push again")


def _masked(person: str) -> str:
    """A name and e-mail shown without the secret in it: only its first characters."""
    return person[:6] + "…" if len(person) > 6 else person
