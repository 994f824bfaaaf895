"""Mutation testing of gitmem's core: the share of planted bugs each module's tests catch.

A mutation tool (cosmic-ray) plants one small bug at a time in a module (``<`` for ``<=``, ``0.8``
for ``0.5``, ``and`` for ``or``, a ``break`` for a ``continue``...) and runs that module's fast tests;
a mutant the tests fail on is *killed*, one they pass on *survived*. The killed share measures how
well the tests pin behaviour, which line coverage cannot.

Everything runs in a throw-away copy of the working tree (cosmic-ray rewrites the file it mutates
on disk), so the checkout is never touched. Not a test and not run by CI. From the repository root::

    .venv/bin/python bench/mutation.py                        # every target, 20 minutes each at most
    .venv/bin/python bench/mutation.py concepts similarity    # some targets
    .venv/bin/python bench/mutation.py --minutes 5 --survivors store

cosmic-ray is installed into the running interpreter on first use (``pip install cosmic-ray``);
pass ``--no-install`` to refuse that. Results go to ``bench/results/mutation.json``.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Plugin autoloading (schemathesis, playwright) costs two seconds a run; the core's tests need none
# of them but pytest-timeout, loaded by name.
PYTEST = ["-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "pytest_timeout", "--no-header",
          "-o", "addopts="]


@dataclass(frozen=True)
class Target:
    """A module (or some functions of it) and the fast tests that should pin it."""

    module: str
    tests: tuple[str, ...]
    functions: tuple[str, ...] = ()  # qualified names; empty: the whole module
    select: str = ""  # a pytest -k expression narrowing the test files
    note: str = ""
    # Mutants that cannot change behaviour: (text of the mutated line, why). A survivor whose
    # mutated line holds the text counts as equivalent, not as survived; each needs its reason.
    equivalent: tuple[tuple[str, str], ...] = ()

    def test_args(self) -> list[str]:
        return [*self.tests, *(["-k", self.select] if self.select else [])]


_NO_SEGMENTS = ("a conversation of fewer than seven messages has no topic boundary (extraction.boundaries needs "
                "six cosines): asking the encoder from five, six or seven messages on gives the same segments")

_SCANNER = "not remember and not amend_and_feedback and not cli_says and not batch"

TARGETS: dict[str, Target] = {
    "concepts": Target("gitmem/concepts.py", ("tests/test_concepts.py",)),
    "similarity": Target("gitmem/similarity.py", ("tests/test_similarity.py",)),
    "write-gate": Target(
        "gitmem/memories.py", ("tests/test_service.py",), functions=("Memories.remember",),
        select="gate or remember or reinforc or merged or users_statement or slug",
        note="Memories.remember: validation, the normalised-duplicate check and the similarity gate",
    ),
    # Issue 23's modules: the newest surfaces, each with the tests that should pin it.
    # The scanner's own tests; the write paths' (a service, the CLI, the write gate) take seconds more.
    "secretscan": Target("gitmem/secretscan.py", ("tests/test_secretscan.py",), select=_SCANNER, equivalent=(
        ("maxsize=", "the cache's size changes how often a line is scanned again, never what is found in it"),
        ("@dataclass(frozen=False)", "nothing changes or hashes a Finding once made: frozen only guards"),
        ("while start != 0 and", "start falls one at a time from a place in the line: it meets 0 before it could pass"),
        ("while end != len(line) and", "end climbs one at a time from inside the line: it meets len(line) first"),
        ("at: int = -1", "re's search reads a negative start as 0"),
        ("quote = line[start - 1] if start ", "only the keyword plugin's values end in a backslash before a quote, "
                                              "and they follow a name and '=' (never at 0 or 1): for a value there "
                                              "the loop never runs, whatever quote is"),
        ("close if close > 0 else", "the next quote is searched from end + 1, so it is never found at 0"),
        ("line[end] >= quote", "detect-secrets cuts a value ending in a backslash at the quote after it, and each "
                               "later step lands on a quote found: the character there is the quote"),
        ("line[end] <= quote", "detect-secrets cuts a value ending in a backslash at the quote after it, and each "
                               "later step lands on a quote found: the character there is the quote"),
        ("lambda f: f[1] or (", "a finding without a place sorts first on its line with any stand-in up to (0, -1): "
                                "a located span starts at 0 or later and ends after it (the stand-ins that sort "
                                "after (0, 39) are killed by test_a_secret_that_cannot_be_located_in_its_line…)"),
    )),
    "secretformats": Target("gitmem/secretformats.py", ("tests/test_secretscan.py",), select=_SCANNER, equivalent=(
        ("@dataclass(frozen=False)", "nothing changes or hashes a Format: they are the module's constants"),
        ("if len(value) < 7 or", "the patterns that call looks_like_secret give it 8 characters or more"),
        ("return len(value) >= 5 and", "the patterns that call looks_like_password give it 6 characters or more"),
    )),
    "personaldata": Target("gitmem/personaldata.py", ("tests/test_secretscan.py",), select=_SCANNER, equivalent=(
        ("12 <= len(digits)", "_CARD's pattern gives 13 to 19 digits: 12 is never there to admit"),
        ("len(digits) <= 20", "_CARD's pattern gives 13 to 19 digits: 20 is never there to admit"),
        ("if any(start <= e and", "two matches never touch: each pattern wants no word character or hyphen just "
                                  "before it, and every match ends in one"),
        ("and s <= end for", "two matches never touch: each pattern wants no word character or hyphen just "
                             "after it, and every match begins with one"),
    )),
    "pushes": Target(
        "gitmem/pushes.py", ("tests/test_pushes.py",),
        equivalent=(
            ("existing=mine[ -1])", "one open review at most holds a branch: the first is the last"),
            ("existing=same[ -1])", "a second push of an open review's commits opens none: one review holds them"),
            ("by {found[ -1].author}", "one open review at most holds a branch: the first is the last"),
            ('plan.how >= "update"', "a plan is open, same or update: update sorts last"),
            ("c.ref >= MAIN or plans", "only a push to refs/for/main (which sorts before main) repeats a review"),
            ("if command.ref <= FOR_MAIN and same", "no ref a push may update sorts before refs/for/main"),
        ),
    ),
    "pushrules": Target(
        "gitmem/pushrules.py", ("tests/test_pushrules.py",),
        equivalent=(("if pushed.parents != 1:", "a commit without parents is a history unrelated to main, refused "
                                                "before its commits are looked at"),
                    ("if len(paths) != 1 and mine:", "an id is listed with the one file or more that hold it"),
                    ("if p is not mine[0]", "mine[0] is one of the very path objects listed, each listed once"),
                    ("elif file.data is not None or is_memory_path(file.path)",
                     "the changed files only pick which of tip's memory files to blame for a duplicate id: a "
                     "deleted file is not at tip and a file that is no memory holds no id"),),
    ),
    "receive": Target(
        "gitmem/repo/receive.py", ("tests/test_receive_wire.py", "tests/test_receive.py"),
        equivalent=(
            ("if len(head) <", "read(4) returns at most four bytes: fewer is the only way to differ from four"),
            ("if len(data) <", "read(n) returns at most n bytes: fewer is the only way to differ from n"),
            ("while chunk := pack.read(", "the size of the pieces the pack is copied to git in changes nothing"),
            ("first = pack.read(", "how many bytes are read before git starts changes nothing: all are passed on"),
            ("filemode <= FileMode.TREE", "no entry mode is below a tree's but a tree's"),
            ("if a_tree or a is not None else None", "an entry that is no tree is read as such and then dropped: "
                                                     "only a Tree is compared"),
            ("if b_tree or b is not None else None", "an entry that is no tree is read as such and then dropped: "
                                                     "only a Tree is compared"),
            ("st_mtime <= cutoff", "a quarantine exactly an hour old, to the clock's last digit, is the only one "
                                   "told apart"),
            ("a.filemode is b.filemode", "pygit2 gives modes as FileMode members: equal modes are one object"),
            ("else (None, 1)", "an object whose header says blob is a Blob: the else is never taken"),
            ("if proc.wait() > 0:", "git exits with a negative status only when a signal killed it mid-push"),
            ("if kind > ObjectType.BLOB:", "an entry that names a tree or a commit is not a Blob: the isinstance "
                                           "check below gives the same answer"),
        ),
    ),
    "ingest": Target(
        "gitmem/ingest.py", ("tests/test_ingest.py",),
        select="not labelled and not offline and not questions and not topic_boundaries and not token_estimates "
               "and not claude_code and not transcript and not hangs",
        note="less the tests of the offline rules and transcripts (gitmem/extraction.py, gitmem/transcripts.py) "
             "and of a model that hangs (its timeout is the LLM port's)",
        equivalent=(
            ('if source >= "slack" else', "of the sources (api, cli, slack, claude-code) only slack sorts at or "
                                          "after 'slack'"),
            ('what=f"{where}.id")[ -1]', "the list checked holds one id: its last is its first"),
            ('what=f"{where}.author")[ -1]', "the list checked holds one author: its last is its first"),
            ("len(messages) < 5", _NO_SEGMENTS),
            ("len(messages) < 7", _NO_SEGMENTS),
            ("len(messages) <= 6", _NO_SEGMENTS),
            ("len(messages) != 6", _NO_SEGMENTS),
            ("len(messages) == 6", _NO_SEGMENTS),
            ('r.author and r.role >= "user"', "of the roles (user, assistant, system, tool) only user sorts at or "
                                              "after 'user'"),
            ("self.semantics is None and not self.semantics.enabled",
             "the service always gives ingestion its Semantics, and with the encoder off embed gives None, "
             "which gives no segments as well"),
            ("not self.semantics.enabled and len(messages) < 6", "with the encoder off, embed gives None, which "
                                                                 "gives no segments as well"),
            ('{"already": False}', "a done buffer's result is kept for whoever opens the buffer file; gitmem never "
                                   "reads it back"),
        )),
    "buffers": Target(
        "gitmem/repo/buffers.py", ("tests/test_buffers_contract.py",), select="not redis",
        note="the contract on SQLite (its Redis half pins gitmem/repo/redisbuffers.py, not this module)",
        equivalent=(
            ("[ -1]", "each indexed read here is of one row (by primary key, or a message id taken once) or of "
                      "one column: its last is its first"),
            ("not_before: float = ", "both backends build every Sealed with its not_before: the default is "
                                     "never used"),
        )),
    "staleness": Target(
        "gitmem/reviews/staleness.py", ("tests/test_review_staleness.py",),
        equivalent=(("str(main.id) is review.base",
                     "the early return only saves work: with main at the base, main changed nothing since it"),),
    ),
    "review-decisions": Target(
        "gitmem/reviews/decisions.py", ("tests/test_review_approvals.py",),
        equivalent=(('if verb <= "approve"', "the verb is approve or reject: only approve sorts at or before approve"),
                    ("chosen.add(matches[ -1])", "a prefix that matches more than one commit is refused above"),
                    ("review.state_of(matches[ -1])", "a prefix that matches no commit or more than one is refused "
                                                      "above: matches holds one id"),
                    ("{matches[ -1][:10]}", "a prefix that matches no commit or more than one is refused above: "
                                            "matches holds one id"),
                    ("if len(matches) != 1:", "a prefix that matches no commit is refused just above: not one is "
                                              "more than one"),
                    ("if not (self.ids < ids or ids <= self.ids)", "equal sets pass the second test"),
                    ('if review.status < "open":', "after approving, a review is open or merged (all stale raised "
                                                   "before): merged is the only status before open")),
    ),
    "review-records": Target(
        "gitmem/reviews/records.py", ("tests/test_review_records.py",),
        equivalent=(
            ('if v <= "merged"', "a commit's recorded state is merged, skipped or stale: only merged sorts at or "
                                 "before merged"),
            ('self.status <= "merged"', "a status is open, merged, rejected or stale: only merged sorts at or before "
                                        "merged"),
            ('values.get("status") <= "merged"', "a status is open, merged, rejected or stale: only merged sorts at "
                                                 "or before merged"),
            ("and merged != total:", "no more commits merge than the review holds"),
        ),
    ),
    "review-diffs": Target(
        "gitmem/reviews/diffs.py", ("tests/test_review_diffs.py",),
        equivalent=(
            ('m.change >= "removed"', "a memory's change is added, changed or removed: removed sorts last"),
            ("sum( 2 for m in self.memories", "counting each removed memory twice: at least one is still at "
                                              "least one"),
            ('kept.change <= "added"', "the memory a merge keeps is added or changed, never removed: added sorts "
                                       "first"),
            ('if m.change < "removed"]', "a memory's change is added, changed or removed: removed sorts last"),
            ('c.kept.change <= "added"', "the memory a merge keeps is added or changed, never removed: added "
                                         "sorts first"),
            ("m.id is not self.result", "a removed memory is never the result (the result stays), so the id "
                                        "check never decides"),
            ("len(paragraphs) != 1 and", "parse_trailers finds none in a message of fewer than two paragraphs"),
            ("len(paragraphs) >= 1 and", "parse_trailers finds none in a message of fewer than two paragraphs"),
            ("len(paragraphs) > 0 and", "parse_trailers finds none in a message of fewer than two paragraphs"),
            ("isinstance(old, tuple) or isinstance(new, tuple)", "both sides of a field are of its one type: a "
                                                                 "list field is a tuple on both"),
        ),
    ),
    "review-listing": Target(
        "gitmem/reviews/listing.py", ("tests/test_review_listing.py",),
        equivalent=(("if page <= chosen.page:", "the page is never past the one asked for, and a filter made again "
                                                "with the same page is equal to it"),
                    ("if page is not chosen.page:", "a filter made again with the same page is equal to it"),
                    ("c.kind is k", "a commit's kind is one of the literals ReviewCommit.kind returns: the very "
                                    "objects KINDS holds"),
                    ("page=page if page != 1 else None", "pages start at 1: not 1 is more than 1"),
                    ("self.page if self.page != 1 else None", "pages start at 1: not 1 is more than 1"),
                    ("if page < chosen.page:", "the page is never past the one asked for: not equal is less"),
                    ("(i * 1 for i", "starting at the commit just decided instead of after it: the loop skips it"),
                    ("(i // 1 for i", "starting at the commit just decided instead of after it: the loop skips it"),
                    ("(i + 0 for i", "starting at the commit just decided instead of after it: the loop skips it"),
                    ("(i | 1 for i", "one after an even index, the commit itself at an odd one (the loop skips it)"),
                    ("(i ** 1 for i", "starting at the commit just decided instead of after it: the loop skips it")),
    ),
    "review-reading": Target(
        "gitmem/reviews/reading.py", ("tests/test_review_reading.py",),
        equivalent=(("_ANALYSED_KEPT = ", "the cache's size only bounds its memory: what it answers is the same"),),
    ),
    "review-links": Target("gitmem/reviews/links.py", ("tests/test_review_staleness.py",)),
    "mcp": Target(
        "gitmem/mcp/server.py", ("tests/mcp/test_server.py",), select="not sdk_loads",
        note="less the test that imports the CLI and the web app in a new process",
        equivalent=(
            ("convert_result: bool = True", "the SDK passes convert_result on every call: the default is never used"),
            ('if error["type"] <= "extra_forbidden":', "no argument of these tools (strings, numbers, lists, "
                                                       "literals, options) fails with an error type that sorts "
                                                       "before extra_forbidden (bool, bytes, date, dict...)"),
            ("arbitrary_types_allowed=False", "every argument is of a type pydantic knows: none is arbitrary"),
            ("model_json_schema(by_alias=False)", "no argument has an alias"),
        )),
    "mcp-access": Target("gitmem/mcp/access.py", ("tests/mcp/test_server.py",), select="not sdk_loads"),
    "recall": Target(
        "gitmem/recall.py", ("tests/test_recall.py",),
        note="each rule on a few memories (tests/test_truth.py and tests/test_service.py measure the ranking on "
             "real data, in minutes)",
        equivalent=(
            ("tier = -1 if matched", "a tier under 0 sorts first, as 0 does"),
            *((text, "the cosine filter only narrows the pool: a memory under the lowest floor is no hit by its "
                     "meaning, and one that is a hit by its words is in the pool by them")
              for text in ("if cos is not lowest)", "if cos != lowest)", "if cos > lowest)")),
            ("for w, x in weighted.items() if x != 0]", "word weights are never negative: not 0 is over 0"),
            ("relevance.get(new_id, -1.0)", "a relevance is never negative"),
            ('memory.state >= "pending"', "of the states (active, pending, archived) only pending sorts at or after "
                                          "'pending'"),
            ('c.state >= "pending"', "of the states (active, pending, archived) only pending sorts at or after "
                                     "'pending'"),
            ('lexicon.scope(k) >= "tool"', "of the scopes (global, language, library, tool) only tool sorts at or "
                                           "after 'tool'"),
            *((text, "j starts at i or i + 1: a hit compared with itself is never newer than itself")
              for text in ("range(i // 1, len(out))", "range(i * 1, len(out))", "range(i | 1, len(out))")),
            ("if i == offset + limit:", "i counts up from 0 by one, so it meets offset + limit before passing it"),
            ("if i is offset + limit:", "the numbers are small ints, one object each in CPython: is is =="),
            *((text, "a lower floor for the cosine filter only widens the pool (see above)")
              for text in ("recall_floor * ranking.CROSS_LINGUAL", "recall_floor % ranking.CROSS_LINGUAL")),
            ("cosines.get(c.vhash, 0.0) < ranking.UNRELATED", "a memory with no cosine is judged by its words alone, "
                                                              "quoted or not"),
            *((text, "being quoted counts only for a memory under UNRELATED (ranking.relevance): reading more of "
                     "them changes nothing")
              for text in ("cosines.get(c.vhash, 1.0) is not ranking.UNRELATED",
                           "cosines.get(c.vhash, 1.0) <= ranking.UNRELATED",
                           "cosines.get(c.vhash, 1.0) != ranking.UNRELATED")),
            ("ns.index.all(states=None, with_paths=False)", "with_paths only narrows: a memory without paths matches "
                                                            "no file"),
            *((text, "every memory has an update time: the else is never taken")
              for text in ("if moment is not None else -1.0", "if moment is not None else 1.0")),
        )),
    "ranking": Target(
        "gitmem/ranking.py", ("tests/test_ranking.py",),
        note="the pure ranking functions, number by number (the end-to-end recall tests are slow)",
        equivalent=(
            ('path = path[ 1:] if path.startswith("./")', "dropping only the dot of a leading ./ leaves a / that "
                                                          "the loop drops next"),
            ("if total == 0:", "word weights are never negative (0, or the log of more than 1): a total at or "
                               "under 0 is 0"),
            ("if w != 0)", "word weights are never negative: a weight that is not 0 is over 0"),
            ("if x != 0 and w in terms", "word weights are never negative: a weight that is not 0 is over 0"),
            ("in_order(pairs, terms) >= 1.0", "a share is never over 1"),
            ("len(t) <= 1 and is_cjk(t)", "no term is empty"),
            ("chinese(query) is not chinese(terms)", "chinese() gives a bool, and True and False are singletons"),
            ('if state >= "pending":', "of the states (active, pending, archived) only pending sorts at or after "
                                       "'pending'"),
        )),
    # In-process tests of the readers and the run (test_importers.py runs the CLI: 40 s).
    "importers": Target(
        "gitmem/importers/__init__.py", ("tests/test_import_reading.py", "tests/test_import_runs.py"), equivalent=(
            ("@dataclass(frozen=False)", "nothing changes or hashes an Imported or an ImportReport once made"),
            ("dry_run: bool = True,", "every caller passes dry_run by name (the service; run itself, for a scratch "
                                      "run)"),
            ("create: bool = True)", "the service passes create by name; run's scratch run is into a namespace that "
                                     "exists, where create changes nothing"),
            ("result.outcomes, strict=False", "remember_many gives one outcome per candidate: the lengths always "
                                              "match"),
            ('info.action > "import"', "only import commits carry an Import-Format trailer: the format test skips "
                                       "every other commit anyway"),
            ("if len(files) == MAX_FILES:", "files grow one at a time: the count meets the limit before passing it"),
            ('o.outcome != "refused" or o.memory_id', "the import's write gate gives a memory id with every outcome "
                                                      "but refused: 'or' keeps the same items"),
            ("new_namespace: bool = True", "every ImportReport is made with new_namespace given"),
            ("first.outcomes if first else (), strict=False", "remember_many gives one outcome per candidate: the "
                                                              "lengths always match"),
            ('info.action < "import"', "only import commits carry an Import-Format trailer: the format test skips "
                                       "every other commit anyway"),
            ('elif fmt <= "basic-memory":', "okf is taken before, and pi-memory-spaced and mem0 sort after "
                                            "basic-memory: the same reader runs"),
            ('if fmt >= "pi-memory-spaced" else', "only pi-memory-spaced and mem0 reach this line, and mem0 sorts "
                                                  "before it"),
            ("if fmt >= 'pi-memory-spaced' else", "only pi-memory-spaced and mem0 reach this message, and mem0 sorts "
                                                  "before it"),
            ("if fmt >= 'okf' else", "only okf and basic-memory reach this message, and basic-memory sorts before okf"),
            ('elif fmt >= "pi-memory-spaced":', "okf and basic-memory are taken before, and mem0 sorts before "
                                                "pi-memory-spaced: the same reader runs"),
        )),
    "importers-items": Target("gitmem/importers/items.py", ("tests/test_import_reading.py",), equivalent=(
        ("@dataclass(frozen=False)", "nothing changes or hashes an Item or a Problem once made: frozen only guards"),
        ('if value is None and value == "" or value == 0:', "parse_time reads None and '' as no time as well"),
        ("value // 1000", "the microseconds are dropped after: / then that gives the second // gives, before 1970 too"),
    )),
    "importers-okf": Target("gitmem/importers/okf.py", ("tests/test_import_reading.py",), equivalent=(
        ("w < 0.3", "weight_to_potency is continuous: at 0.3 both pieces give 0.1"),
        ("w < 1.0", "weight_to_potency is continuous: at 1.0 both pieces give 0.8"),
        ('memory_type >= "techchoice"', "no memory type sorts after 'techchoice': >= picks the same one as =="),
        ("text[ -1] == text[-1] == '\"'", "a cell ending in a quote that does not start with one is no JSON "
                                         "string: json.loads fails and the cell is kept as it was, as before"),
        ("text[0] == text[-1] <= '\"'", "a cell that starts and ends with '!' or a control character is no JSON "
                                        "string either: json.loads fails and the cell is kept as it was"),
        ("text[0] is text[-1]", "one-character strings are shared objects in CPython: 'is' compares them as == does"),
        ("re.IGNORECASE + re.MULTILINE", "two separate flag bits: + gives what | gives"),
        ("re.IGNORECASE ^ re.MULTILINE", "two separate flag bits: ^ gives what | gives"),
        ("if len(text) >= ", "_cell's quote test is a shortcut before json.loads: a variant that still lets every JSON "
                             "string through (the tests try '\"\"', '\"x\"' and longer) keeps any other cell as it "
                             "was, since json.loads fails on it or gives no string"),
        ("len(text) >= 1 and", "a one-character cell '\"' is no JSON string: json.loads fails and it is kept"),
    )),
    "importers-stores": Target("gitmem/importers/stores.py", ("tests/test_import_reading.py",), equivalent=(
        ("found is not name", "a link resolves to the very string the notes list holds: 'is not' compares as != does"),
    )),
    "web-auth": Target("gitmem/web/auth.py", ("tests/web/test_auth.py", "tests/web/test_sign_in.py"),
                       select="not never_redirects and not tab_in_next and not returns_to_a_page", equivalent=(
                           ("exit_code = ", "Unauthenticated is raised only in the web app, which answers with its "
                                            "HTTP status: no command exits with it"),
                           ("@dataclass(frozen=False)", "nothing changes or hashes a Caller once made"),
                           ("time.time() * lifetime", "a sign-out kept on record longer is refused the same; only "
                                                      "the record's pruning comes later"),
                           ("secrets.token_urlsafe(", "a session id of 23 or 25 random bytes is as unguessable and as "
                                                      "unseen as one of 24"),
                       )),
    "web-csrf": Target("gitmem/web/pages.py", ("tests/web/test_sign_in.py",), functions=("_check_post",),
                       select="form_post or without_the_csrf or another_sessions or logout",
                       note="the pages' CSRF check: a form post's Origin or Referer, and its session's token",
                       equivalent=(('request.method < "POST"', "the methods sorting after POST (PUT, TRACE) reach no "
                                    "page: no page route takes them, so routing answers 405 before this check runs"),)),
}


# --- the tool --------------------------------------------------------------------------------------


def ensure_cosmic_ray(install: bool) -> None:
    """Import cosmic-ray, installing it with pip into this interpreter if allowed."""
    if importlib.util.find_spec("cosmic_ray") is not None:
        return
    if not install:
        sys.exit("cosmic-ray is not installed: run `python -m pip install cosmic-ray` (or drop --no-install)")
    print("installing cosmic-ray into", sys.prefix, flush=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "cosmic-ray"], check=True)


def cosmic_ray(*args: str) -> list[str]:
    """The cosmic-ray command line, run by this interpreter."""
    return [sys.executable, "-c", "import sys; from cosmic_ray.cli import main; sys.exit(main())", *args]


# --- the copy --------------------------------------------------------------------------------------


def copy_tree(dest: Path) -> None:
    """Copy the working tree's tracked and new files (not ignored ones) to ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def env_for(copy: Path) -> dict[str, str]:
    # The copy's package must win over the installed (editable) one: it comes first on the path,
    # and no bytecode is cached, so a mutation made within the same second is never missed.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITMEM_", "SLACK_"))}
    env.update(PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return env


# --- picking the mutants ---------------------------------------------------------------------------


def line_ranges(path: Path, functions: tuple[str, ...]) -> list[tuple[int, int]]:
    """First and last line of each named function (``Class.method`` or ``function``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, tuple[int, int]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    found[name] = (child.lineno, child.end_lineno or child.lineno)
                visit(child, f"{name}.")

    visit(tree, "")
    missing = [f for f in functions if f not in found]
    if missing:
        sys.exit(f"{path}: no function {', '.join(missing)} (moved or renamed? update TARGETS in {__file__})")
    return [found[f] for f in functions]


Span = tuple[tuple[int, int], tuple[int, int]]  # (line, column) of the start and of the end


def annotation_spans(path: Path) -> list[Span]:
    """Where the module's type annotations are.

    Under ``from __future__ import annotations`` (every gitmem module) they are strings that
    nothing evaluates, so a mutant inside one (``str | None`` to ``str + None``) cannot change
    behaviour: counting it would only dilute the score.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    spans: list[Span] = []
    for node in ast.walk(tree):
        found: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            found.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        for expr in found:
            if expr is not None:
                end = (expr.end_lineno or expr.lineno, expr.end_col_offset or 0)
                spans.append(((expr.lineno, expr.col_offset), end))
    return spans


def skip_unwanted(session: Path, ranges: list[tuple[int, int]], ignored: list[Span]) -> int:
    """Skip mutants outside ``ranges`` (when given) or inside ``ignored``; returns how many are left."""
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    def wanted(start: tuple[int, int], end: tuple[int, int]) -> bool:
        if ranges and not any(a <= start[0] <= b for a, b in ranges):
            return False
        return not any(lo <= start and end <= hi for lo, hi in ignored)

    left = 0
    with use_db(str(session)) as db:
        for item in list(db.work_items):
            if all(wanted(tuple(m.start_pos), tuple(m.end_pos)) for m in item.mutations):
                left += 1
            else:
                db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
    return left


# --- running and counting --------------------------------------------------------------------------


@dataclass
class Score:
    target: str
    module: str
    mutants: int = 0
    killed: int = 0
    survived: int = 0
    timeouts: int = 0
    not_run: int = 0
    seconds: float = 0.0
    baseline_seconds: float = 0.0
    equivalent: int = 0
    survivors: list[dict[str, Any]] = field(default_factory=list)
    equivalents: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tested(self) -> int:
        return self.killed + self.survived

    @property
    def share(self) -> float:
        return self.killed / self.tested if self.tested else 0.0


def run_target(name: str, target: Target, copy: Path, minutes: float) -> Score:
    work = copy / ".mutation" / name
    work.mkdir(parents=True)
    if not (copy / target.module).is_file():
        sys.exit(f"{name}: {target.module} is gone (moved or renamed? update TARGETS in {__file__})")
    env = env_for(copy)
    test_command = [sys.executable, *PYTEST, *target.test_args()]
    score = Score(name, target.module)

    started = time.monotonic()
    baseline = subprocess.run(test_command, cwd=copy, env=env, capture_output=True, text=True)
    score.baseline_seconds = time.monotonic() - started
    if baseline.returncode != 0:
        sys.exit(f"{name}: the tests fail before any mutation:\n{baseline.stdout[-3000:]}")
    timeout = max(30.0, 6 * score.baseline_seconds)

    config = work / "cosmic-ray.toml"
    config.write_text(
        "[cosmic-ray]\n"
        f"module-path = {json.dumps(target.module)}\n"
        f"timeout = {timeout:.0f}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(shlex.join(test_command))}\n"
        "\n[cosmic-ray.distributor]\nname = \"local\"\n",
        encoding="utf-8",
    )
    session = work / "session.sqlite"
    subprocess.run(cosmic_ray("init", str(config), str(session)), cwd=copy, env=env, check=True)
    ranges = line_ranges(copy / target.module, target.functions) if target.functions else []
    todo = skip_unwanted(session, ranges, annotation_spans(copy / target.module))
    print(f"{name}: {todo} mutants of {target.module}"
          f"{' in ' + ', '.join(target.functions) if target.functions else ''}; "
          f"tests take {score.baseline_seconds:.1f} s; stopping after {minutes:g} min", flush=True)

    proc = subprocess.Popen(cosmic_ray("exec", str(config), str(session)), cwd=copy, env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        proc.wait(timeout=minutes * 60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: the test run under it goes too
        proc.wait()
    score.seconds = time.monotonic() - started
    count(score, session, copy, target)
    return score


def why_equivalent(diff: str, target: Target) -> str | None:
    """Why a surviving mutant cannot change behaviour, or None when it could."""
    removed = [line[1:] for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    if (len(removed) == len(added) == 1 and removed[0].lstrip().startswith(("def ", "async def "))
            and removed[0].replace("*,", "/,") == added[0]):
        return "keyword-only marker made positional-only: every caller passes those arguments by name"
    for text, reason in target.equivalent:
        if any(text in line for line in added):
            return reason
    return None


def count(score: Score, session: Path, copy: Path, target: Target) -> None:
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    with use_db(str(session)) as db:
        results = dict(db.results)
        for item in db.work_items:
            result = results.get(item.job_id)
            if result is not None and result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            score.mutants += 1
            if result is None:
                score.not_run += 1
            elif result.worker_outcome == WorkerOutcome.NO_TEST:
                score.mutants -= 1  # the operator found nothing to change there
            elif result.test_outcome == TestOutcome.SURVIVED:
                mutation = item.mutations[0]
                diff = "\n".join(line for line in (result.diff or "").splitlines()
                                 if line.startswith(("+", "-")) and not line.startswith(("+++", "---")))
                entry = {"line": mutation.start_pos[0], "operator": mutation.operator_name, "diff": diff}
                reason = why_equivalent(diff, target)
                if reason:
                    score.mutants -= 1
                    score.equivalent += 1
                    score.equivalents.append({**entry, "why": reason})
                else:
                    score.survived += 1
                    score.survivors.append(entry)
            else:
                score.killed += 1
                if result.output == "timeout":
                    score.timeouts += 1
    score.survivors.sort(key=lambda s: s["line"])


# --- the report ------------------------------------------------------------------------------------


def report(scores: list[Score], show_survivors: bool) -> None:
    print("\n| target | module | mutants | killed | survived | equivalent | not run | killed share |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for s in scores:
        print(f"| {s.target} | {s.module} | {s.mutants} | {s.killed} | {s.survived} | {s.equivalent} | "
              f"{s.not_run} | {100 * s.share:.1f}% |")
    if show_survivors:
        for s in scores:
            for survivor in s.survivors:
                print(f"\n{s.module}:{survivor['line']} ({survivor['operator']}) survived:\n{survivor['diff']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", metavar="TARGET",
                        help=f"what to mutate: {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--minutes", type=float, default=20.0, help="stop each target after this long")
    parser.add_argument("--survivors", action="store_true", help="print every surviving mutant")
    parser.add_argument("--no-install", action="store_true", help="fail instead of installing cosmic-ray")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "mutation.json")
    parser.add_argument("--keep", action="store_true", help="keep the working copy (its path is printed)")
    args = parser.parse_args()
    unknown = [name for name in args.targets if name not in TARGETS]
    if unknown:
        parser.error(f"unknown target {', '.join(unknown)}; choose from {', '.join(TARGETS)}")
    ensure_cosmic_ray(not args.no_install)
    names = args.targets or list(TARGETS)

    copy = Path(tempfile.mkdtemp(prefix="gitmem-mutation-"))
    try:
        copy_tree(copy)
        scores = [run_target(name, TARGETS[name], copy, args.minutes) for name in names]
    finally:
        if args.keep:
            print("working copy kept at", copy)
        else:
            shutil.rmtree(copy, ignore_errors=True)
    report(scores, args.survivors)

    from importlib.metadata import version

    previous: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    for s in scores:
        previous[s.target] = {
            "module": s.module, "functions": list(TARGETS[s.target].functions),
            "tests": shlex.join(TARGETS[s.target].test_args()), "mutants": s.mutants, "killed": s.killed,
            "survived": s.survived, "equivalent": s.equivalent, "timeouts": s.timeouts, "not_run": s.not_run,
            "killed_share": round(s.share, 4), "seconds": round(s.seconds), "survivors": s.survivors,
            "equivalents": s.equivalents,
            "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "command": shlex.join(sys.argv),
            "tool": f"cosmic-ray {version('cosmic-ray')}", "python": platform.python_version(),
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(previous, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
