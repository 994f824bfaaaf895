"""What a pushed commit must be (gitmem.pushrules), checked on commits written into a real repository.

The slow end-to-end tests (tests/web/test_push*.py) push with the git client over HTTP; these
call the rules on the objects a push brings, so each rule and each limit is pinned exactly.
"""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitmem import concepts
from gitmem.pushrules import README_BYTES, Rules, commit_problems, review_title
from gitmem.repo import receive as wire
from gitmem.settings import Settings

from .gitbuild import bare, commit

# Made-up secrets in formats the scanner knows (none was ever a real one).
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
SLACK = "xoxb-" + "1234567890-" + "abcdefghijklmnop"
GITLAB = "glpat-" + "abcdefghij0123456789"
README = b"# Team memory\n\nWritten by gitmem.\n"


def okf(text: str = "A fact", type: str = "fact", extra: str = "") -> bytes:
    return f"---\ntype: {type}\n{extra}---\n\n{text}\n".encode()


@pytest.fixture
def rules(tmp_path: Path) -> Rules:
    return Rules(Settings(home=tmp_path / "home"))


def file(path: str, data: bytes | None = b"", *, kind: str = "file", status: str = "added",
         size: int | None = None) -> wire.PushedFile:
    return wire.PushedFile(path, status, kind, data, len(data or b"") if size is None else size)


# --- the limits ------------------------------------------------------------------------------------


def test_a_memory_file_may_weigh_four_bytes_a_character_and_its_frontmatter(tmp_path: Path) -> None:
    assert Rules(Settings(home=tmp_path)).memory_bytes == 4000 * 4 + 16 * 1024
    assert Rules(Settings(home=tmp_path)).read_bytes == README_BYTES == 64 * 1024  # the README may weigh more
    larger = Rules(Settings(home=tmp_path, max_text_chars=20_000))
    assert larger.memory_bytes == larger.read_bytes == 20_000 * 4 + 16 * 1024
    assert Rules(Settings(home=tmp_path, max_text_chars=4096)).memory_bytes == 32 * 1024


# --- one file --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("pushed", "said"), [
    (file("fact/../x.md"), "the name '..' is not allowed in a path"),
    (file(".git/config"), "the name '.git' is not allowed in a path"),
    (file("fact/x.md", b"/etc/passwd", kind="symlink"), "a symbolic link; push plain files only"),
    (file("fact/sub", None, kind="submodule"), "a submodule; a memory repository holds no other repositories"),
    (file(".gitmodules", b"[submodule]\n"), "a submodule; a memory repository holds no other repositories"),
    (file(".gitmem/discussions/x.jsonl", b"{}\n"),
     ".gitmem/ is written by gitmem only (discussions go through the web page or the API)"),
    (file("notes/x.md", okf()), "not in a memory folder; a memory is <type>/<name>.md, with <type> one of "
                                + ", ".join(concepts.TYPES)),
    (file(".foo/x.md", okf()), "not in a memory folder; a memory is <type>/<name>.md, with <type> one of "
                               + ", ".join(concepts.TYPES)),
    (file("x.bin", None, kind="unknown", status="deleted"), "gitmem's own file; leave it in place"),
    (file("notes.txt", b"hello\n"), "not in a memory folder; a memory is <type>/<name>.md, with <type> one of "
                                    + ", ".join(concepts.TYPES)),
    (file("fact/deep/x.md", okf()), "a folder inside fact/; put memory files in fact/ itself"),
    (file("fact/x.txt", okf()), "only Markdown memory files (<name>.md) go in fact/"),
    (file("fact/x.md", None, kind="unknown"), "not a plain file"),
    (file("fact/x.md", None, size=40_000), "40000 bytes; a memory file may have 32384"),
    (file("fact/x.md", None, size=10), "10 bytes; a memory file may have 32384"),  # data not read: refused
    (file("fact/x.md", b"x" * 32385), "32385 bytes; a memory file may have 32384"),
    (file("README.md", None, size=README_BYTES + 1), f"{README_BYTES + 1} bytes; the README may have {README_BYTES}"),
    (file("README.md", None, kind="symlink"), "a symbolic link; push plain files only"),
    (file("notes.txt", None, status="deleted"), "gitmem's own file; leave it in place"),
    (file("README.md", None, status="deleted"), "gitmem's own file; leave it in place"),
    (file("../x.md", None, status="deleted"), "the name '..' is not allowed in a path"),
], ids=lambda v: v.path if isinstance(v, wire.PushedFile) else "")
def test_a_file_out_of_place_is_refused_saying_what_to_do(rules: Rules, pushed: wire.PushedFile, said: str) -> None:
    assert rules.file_problem(pushed) == said


@pytest.mark.parametrize("pushed", [
    file("fact/x.md", okf()),
    file("fact/x.md", okf(), kind="executable"),
    file("fact/x.md", okf(), status="modified"),
    file("fact/x.md", None, status="deleted"),
    file("fact", None, kind="tree", status="deleted"),
    file("README.md", README),
    file("README.md", README, status="modified"),
    file("README.md", None, size=README_BYTES),  # just at its limit, not read
    file("README.md", b"x" * README_BYTES),
], ids=lambda f: f"{f.status}-{f.kind}-{f.path}-{f.size}")
def test_a_good_file_passes(rules: Rules, pushed: wire.PushedFile) -> None:
    assert rules.file_problem(pushed) is None


def test_a_memory_file_just_at_its_size_limit_is_read_and_checked(rules: Rules) -> None:
    padded = okf(extra="note: " + "x" * (rules.memory_bytes - len(okf()) - 7) + "\n")
    assert len(padded) == rules.memory_bytes
    assert rules.file_problem(file("fact/x.md", padded)) is None
    moved = padded.replace(b"type: fact", b"type: decision").replace(b"xxxx\n", b"\n")
    assert len(moved) == rules.memory_bytes
    assert rules.file_problem(file("fact/x.md", moved)) == (
        "its type is 'decision' but it is in fact/; move it to decision/")


def test_a_readme_carrying_a_secret_is_refused_naming_its_line(rules: Rules) -> None:
    readme = README + f"The deploy key is {AWS}\n".encode()
    assert rules.file_problem(file("README.md", readme)) == (
        "line 4 carries what looks like an AWS Access Key; remove it (git history keeps it forever, so rotate it "
        "too) and push again")
    assert rules.file_problem(file("README.md", readme, status="modified")) is not None
    two = readme + f"And a token {GITLAB}\n".encode()
    assert (rules.file_problem(file("README.md", two)) or "").startswith(
        "line 4 carries what looks like an AWS Access Key;")  # the first one is named


@pytest.mark.parametrize("path", [f"fact/{AWS}.md", f"{AWS}.txt", f"README-{SLACK}.md"])
def test_a_secret_in_a_file_name_is_refused(rules: Rules, path: str) -> None:
    reason = rules.file_problem(file(path, okf()))
    assert reason is not None and reason.startswith("its name carries what looks like a"), reason
    assert "rotate it too" in reason


# --- a memory file's content -------------------------------------------------------------------------


def test_a_memory_file_is_checked_for_form_type_secrets_and_limits(rules: Rules) -> None:
    def problem(data: bytes, folder: str = "fact") -> str | None:
        return rules.file_problem(file(f"{folder}/x.md", data))

    assert problem(okf()) is None
    assert problem(okf(type="decision"), "decision") is None
    assert problem(b"no frontmatter at all\n") is not None
    assert "'type' must be one of" in (problem(okf(type="rumour")) or "")
    assert problem(okf(type="decision")) == "its type is 'decision' but it is in fact/; move it to decision/"
    assert problem(okf(type="preference")) == (
        "its type is 'preference' but it is in fact/; move it to preference/")
    assert problem(okf(f"The deploy key is {AWS}")) == (
        "line 5 carries what looks like an AWS Access Key; remove it (git history keeps it forever, so rotate it "
        "too) and push again")
    assert problem(okf("x" * 4000)) is None
    assert problem(okf("x" * 4001)) == "its text is 4001 characters; the limit is 4000"
    assert problem(okf(extra=f"title: {'t' * 200}\n")) is None
    assert problem(okf(extra=f"title: {'t' * 201}\n")) == "its title is 201 characters; the limit is 200"


@pytest.mark.parametrize("name", ["tags", "paths", "verified", "related", "supersedes"])
def test_a_list_past_its_limit_is_refused(rules: Rules, name: str) -> None:
    def listed(n: int) -> bytes:
        return okf(extra=f"{name}: [{', '.join(f'{i:010x}' for i in range(n))}]\n")

    assert rules.memory_problem("fact/x.md", "fact", listed(concepts.MAX_LIST_ITEMS)) is None
    assert rules.memory_problem("fact/x.md", "fact", listed(concepts.MAX_LIST_ITEMS + 1)) == (
        f"it has {concepts.MAX_LIST_ITEMS + 1} {name}; the limit is {concepts.MAX_LIST_ITEMS}")


def test_the_limits_follow_the_settings(tmp_path: Path) -> None:
    rules = Rules(Settings(home=tmp_path, max_text_chars=10, max_title_chars=5))
    assert rules.memory_problem("fact/x.md", "fact", okf("0123456789", extra="title: abc\n")) is None
    assert rules.memory_problem("fact/x.md", "fact", okf("0123456789A", extra="title: abc\n")) == (
        "its text is 11 characters; the limit is 10")
    assert rules.memory_problem("fact/x.md", "fact", okf("ok", extra="title: abcdef\n")) == (
        "its title is 6 characters; the limit is 5")


# --- a commit's message and people ---------------------------------------------------------------------


def pushed_commit(message: str = "Harmless subject\n", people: tuple[tuple[str, str], ...] = (
        ("author", "Ann <ann@example.com>"), ("committer", "Ann <ann@example.com>"))) -> wire.PushedCommit:
    return wire.PushedCommit("0123456789abcdef" * 2 + "01234567", message.splitlines()[0], 1, [], message, people)


def test_a_clean_commit_has_no_problem() -> None:
    assert commit_problems(pushed_commit()) == []


def test_a_secret_in_a_commit_message_names_its_line() -> None:
    (aws,) = commit_problems(pushed_commit(f"Harmless subject\n\nkey {AWS}\n"))
    assert aws.startswith("commit 0123456789: line 3 of its message carries what looks like an AWS Access Key;")
    (said,) = commit_problems(pushed_commit(f"Harmless subject\n\ntoken {GITLAB}\n"))
    assert said == ("commit 0123456789: line 3 of its message carries what looks like a GitLab Token; reword it "
                    "(`git commit --amend`, or `git rebase -i`), rotate the secret (git history keeps it forever) "
                    "and push again")
    (first,) = commit_problems(pushed_commit(f"Harmless\n\nkey {AWS}\ntoken {GITLAB}\n"))
    assert first.startswith("commit 0123456789: line 3 of its message carries what looks like an AWS Access Key;")
    (subject,) = commit_problems(pushed_commit(f"Deploy with {SLACK}\n"))
    assert subject.startswith("commit 0123456789: line 1 of its message carries what looks like a Slack token;")


def test_a_secret_in_a_name_or_email_names_the_role_and_hides_the_secret() -> None:
    people = (("author", f"{AWS} <ann@example.com>"), ("committer", f"Ann <{GITLAB}@example.com>"))
    author, committer = commit_problems(pushed_commit(people=people))
    assert author.startswith("commit 0123456789: its author (AKIAIO…) carries what looks like an AWS Access Key; "
                             "set git's user.name and user.email, then `git commit --amend --reset-author`")
    assert committer.startswith("commit 0123456789: its committer (Ann <g…) carries what looks like a GitLab Token;")
    assert AWS not in author and GITLAB not in committer
    assert commit_problems(pushed_commit(people=(("author", "Ann <ann@example.com>"),))) == []
    (both,) = commit_problems(pushed_commit(people=(("author", f"{AWS} <{GITLAB}@example.com>"),)))
    assert "carries what looks like an AWS Access Key;" in both  # the first one is named


def test_a_short_name_with_a_secret_is_shown_whole_up_to_six_characters() -> None:
    from gitmem.pushrules import _masked

    assert _masked("abcdef") == "abcdef"
    assert _masked("abc") == "abc"
    assert _masked("abcdefg") == "abcdef…"


# --- the review's title ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("summaries", "title"), [
    (["Indent with spaces"], "Indent with spaces"),
    (["First", "Second", "Third"], "3 commits: First"),
    ([], "pushed change"),
    ([""], "pushed change"),
    (["  \t "], "pushed change"),
    (["a\x01b\x7fc\td"], "a b c d"),
    (["/etc/passwd"], "pushed: etc/passwd"),
    (["../up"], "pushed: up"),
    (["x" * 200], "x" * 200),
    (["x" * 200, "y"], ("2 commits: " + "x" * 200)[:200]),
    (["x" * 300], ("pushed: " + "x" * 300)[:200]),
])
def test_a_review_title_is_the_first_summary_made_one_plain_line(summaries: list[str], title: str) -> None:
    assert review_title(summaries) == title


# --- every commit of a push ----------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> pygit2.Repository:
    return bare(tmp_path / "repo.git")


def update(new: str, ref: str = "refs/for/main") -> wire.RefUpdate:
    return wire.RefUpdate(wire.ZERO, new, ref)


def test_a_push_of_good_memories_has_no_problem(rules: Rules, repo: pygit2.Repository) -> None:
    main = commit(repo, {"README.md": README})
    new = commit(repo, {"README.md": README, "fact/a.md": okf("First")}, [main])
    newer = commit(repo, {"README.md": README, "fact/a.md": okf("First"), "fact/b.md": okf("Second")}, [new])
    assert rules.problems(repo, main, [main], [update(newer)]) == []


@pytest.mark.parametrize("parents", [2, 3])
def test_a_merge_commit_is_refused(rules: Rules, repo: pygit2.Repository, parents: int) -> None:
    main = commit(repo, {"README.md": README})
    sides = [commit(repo, {"README.md": README, f"fact/{n}.md": okf(f"Side {n}")}, [main]) for n in range(parents)]
    merge = commit(repo, {"README.md": README, **{f"fact/{n}.md": okf(f"Side {n}") for n in range(parents)}}, sides)
    assert rules.problems(repo, main, [main], [update(merge)]) == [
        f"commit {merge[:10]} is a merge; rebase on main instead of merging (git pull --rebase, or `gitmem sync`)"]


def test_each_problem_names_the_file_and_the_commit(rules: Rules, repo: pygit2.Repository) -> None:
    main = commit(repo, {"README.md": README})
    bad = commit(repo, {"README.md": README, "notes/x.md": okf()}, [main], "Add a stray note\n")
    (said,) = rules.problems(repo, main, [main], [update(bad)])
    assert said.startswith("notes/x.md: not in a memory folder;")
    assert said.endswith(f"(commit {bad[:10]} \"Add a stray note\")")
    long = commit(repo, {"README.md": README, "notes/x.md": okf(), "fact/y.txt": b"y\n"}, [bad], "s" * 80 + "\n")
    problems = rules.problems(repo, main, [main], [update(long)])
    assert problems[-1] == f"fact/y.txt: only Markdown memory files (<name>.md) go in fact/ (commit {long[:10]} " \
                           f"\"{'s' * 60}\")"
    assert len(problems) == 2  # the stray note is named once, for the commit that added it


def test_a_secret_in_a_commit_message_refuses_the_push(rules: Rules, repo: pygit2.Repository) -> None:
    main = commit(repo, {"README.md": README})
    new = commit(repo, {"README.md": README, "fact/a.md": okf()}, [main], f"Harmless\n\ntoken {GITLAB}\n")
    (said,) = rules.problems(repo, main, [main], [update(new)])
    assert said.startswith(f"commit {new[:10]}: line 3 of its message carries what looks like a GitLab Token")


def test_a_push_of_a_readme_with_a_secret_is_refused(rules: Rules, repo: pygit2.Repository) -> None:
    main = commit(repo, {"README.md": README})
    new = commit(repo, {"README.md": README + f"key {AWS}\n".encode()}, [main], "Document\n")
    (said,) = rules.problems(repo, main, [main], [update(new)])
    assert said.startswith("README.md: line 4 carries what looks like an AWS Access Key")


def test_an_unrelated_history_is_refused(rules: Rules, repo: pygit2.Repository) -> None:
    main = commit(repo, {"README.md": README})
    other = commit(repo, {"fact/a.md": okf()}, [], "Another history\n")
    assert rules.problems(repo, main, [main], [update(other)]) == [
        "refs/for/main: the pushed history shares no commit with main; clone the namespace and commit on top of it "
        "(or run `gitmem sync` on a plain folder)"]


def test_a_push_that_lacks_its_commit_is_refused(rules: Rules, repo: pygit2.Repository) -> None:
    main = commit(repo, {"README.md": README})
    missing = "ab" * 20
    assert rules.problems(repo, main, [main], [update(missing, "refs/heads/review/x")]) == [
        f"refs/heads/review/x: the push does not carry commit {missing[:10]} and all it needs"]


def test_every_ref_is_checked_after_one_that_cannot_be(rules: Rules, repo: pygit2.Repository) -> None:
    main = commit(repo, {"README.md": README})
    bad = commit(repo, {"README.md": README, "notes/x.md": okf()}, [main], "Stray\n")
    other = commit(repo, {"fact/a.md": okf()}, [], "Another history\n")
    tip = main
    for n in range(wire.MAX_COMMITS + 1):
        tip = commit(repo, {"README.md": README}, [tip], f"commit {n}\n")
    for first in (update("ab" * 20), update(other), update(tip)):
        problems = rules.problems(repo, main, [main], [first, update(bad, "refs/heads/review/x")])
        assert len(problems) == 2 and problems[1].startswith("notes/x.md: not in a memory folder"), problems


def test_a_push_of_too_many_commits_is_refused(rules: Rules, repo: pygit2.Repository) -> None:
    main = tip = commit(repo, {"README.md": README})
    for n in range(wire.MAX_COMMITS + 1):
        tip = commit(repo, {"README.md": README}, [tip], f"commit {n}\n")
    assert rules.problems(repo, main, [main], [update(tip)]) == [
        f"the push brings more than {wire.MAX_COMMITS} new commits; push them in parts"]


def test_the_same_problem_in_two_refs_is_said_once(rules: Rules, repo: pygit2.Repository) -> None:
    main = commit(repo, {"README.md": README})
    bad = commit(repo, {"README.md": README, "notes/x.md": okf()}, [main])
    problems = rules.problems(repo, main, [main], [update(bad), update(bad, "refs/heads/review/x")])
    assert len(problems) == 1 and problems[0].startswith("notes/x.md: not in a memory folder")


def test_a_duplicate_id_is_refused_naming_both_files(rules: Rules, repo: pygit2.Repository) -> None:
    main = commit(repo, {"README.md": README, "fact/old.md": okf(extra="id: '1234567890'\n")})
    new = commit(repo, {"README.md": README, "fact/old.md": okf(extra="id: '1234567890'\n"),
                        "fact/copy.md": okf("A copy", extra="id: 1_234_567_890\n")}, [main])
    assert rules.problems(repo, main, [main], [update(new)]) == [
        "fact/copy.md: id 1234567890 is also the id of fact/old.md; give one of them another id, or delete its id "
        "line and gitmem assigns one"]


def test_two_new_files_with_one_id_are_named_together(rules: Rules, repo: pygit2.Repository) -> None:
    main = commit(repo, {"README.md": README})
    same = okf(extra="id: '1234567890'\n")
    new = commit(repo, {"README.md": README, "fact/a.md": same, "fact/b.md": same}, [main])
    assert rules.problems(repo, main, [main], [update(new)]) == [
        "fact/a.md: id 1234567890 is also the id of fact/b.md; give one of them another id, or delete its id line "
        "and gitmem assigns one"]


def test_ids_only_of_the_files_a_push_changes_are_checked(rules: Rules, repo: pygit2.Repository) -> None:
    # Two files on main already share an id (a hand push from before the check): a push that touches
    # neither is not blamed for them; one that edits either is.
    same = okf(extra="id: '1234567890'\n")
    main = commit(repo, {"README.md": README, "fact/a.md": same, "fact/b.md": same})
    elsewhere = commit(repo, {"README.md": README, "fact/a.md": same, "fact/b.md": same,
                              "fact/c.md": okf("Third", extra="id: 'abcdef0123'\n")}, [main])
    assert rules.problems(repo, main, [main], [update(elsewhere)]) == []
    edits = commit(repo, {"README.md": README, "fact/a.md": same,
                          "fact/b.md": okf("Edited", extra="id: '1234567890'\n")}, [main])
    assert rules.problems(repo, main, [main], [update(edits)]) == [
        "fact/b.md: id 1234567890 is also the id of fact/a.md; give one of them another id, or delete its id line "
        "and gitmem assigns one"]
    deletes = commit(repo, {"README.md": README, "fact/a.md": same}, [main])
    assert rules.problems(repo, main, [main], [update(deletes)]) == []


def test_files_that_are_no_memories_hold_no_ids(rules: Rules, repo: pygit2.Repository) -> None:
    same = okf(extra="id: '1234567890'\n")
    main = commit(repo, {"README.md": README, "fact/a.md": same})
    assert rules.duplicate_ids(repo, main, set()) == []
    new = commit(repo, {"README.md": README, "fact/a.md": same, "notes/b.md": same, "fact/c.md": okf("no id")},
                 [main])
    assert rules.duplicate_ids(repo, new, {"fact/a.md", "fact/c.md"}) == []
    later = commit(repo, {"README.md": README, "fact/a.md": same, "notes/b.md": same,
                          "preference/p.md": okf(type="preference", extra="id: '1234567890'\n")}, [main])
    (said,) = rules.duplicate_ids(repo, later, {"preference/p.md"})  # found past the folder that holds no memory
    assert said.startswith("preference/p.md: id 1234567890 is also the id of fact/a.md;")
    assert rules.problems(repo, main, [main], [update(new)]) == [
        f"notes/b.md: not in a memory folder; a memory is <type>/<name>.md, with <type> one of "
        f"{', '.join(concepts.TYPES)} (commit {new[:10]} \"edit\")"]


def test_a_refused_file_is_not_checked_for_ids(rules: Rules, repo: pygit2.Repository) -> None:
    same = okf(extra="id: '1234567890'\n")
    main = commit(repo, {"README.md": README, "fact/a.md": same})
    secret = okf(f"key {AWS}", extra="id: '1234567890'\n")
    new = commit(repo, {"README.md": README, "fact/a.md": same, "fact/b.md": secret}, [main])
    (said,) = rules.problems(repo, main, [main], [update(new)])
    assert said.startswith("fact/b.md: line 6 carries what looks like an AWS Access Key")


# --- a history from before a purge -----------------------------------------------------------------------


def test_a_push_of_commits_a_purge_rewrote_is_told_the_way_out(rules: Rules, repo: pygit2.Repository) -> None:
    main = commit(repo, {"README.md": README})
    old = commit(repo, {"README.md": README, "fact/a.md": okf("Purged")}, [main])
    new = commit(repo, {"README.md": README, "fact/a.md": okf("Purged"), "fact/b.md": okf("New")}, [old])
    way_out = "run `git fetch && git reset --hard origin/main`"
    assert rules.from_before_purge(repo, [main], [update(new)], {}) is None
    assert rules.from_before_purge(repo, [main], [update(new)], {"ff" * 20: way_out}) is None
    assert rules.from_before_purge(repo, [main], [update("ab" * 20), update(new)], {old: way_out}) == (
        f"your history is from before a purge (commit {old[:10]}): {way_out}")
    assert rules.from_before_purge(repo, [old], [update(new)], {old: way_out}) is None  # it has it: not brought
