"""The receive-pack protocol and what a push brings (gitmem.repo.receive), against real repositories.

Packs come from the real ``git pack-objects``; commits are written with pygit2 into real bare
repositories (tests/gitbuild.py), including trees ``git add`` never makes.
"""

from __future__ import annotations

import io
import os
import subprocess
import time
from dataclasses import FrozenInstanceError
from pathlib import Path

import pygit2
import pytest

from gitmem.errors import InvalidInput
from gitmem.repo import Change, Store
from gitmem.repo import receive as wire

from .gitbuild import bare, commit, fsck

A, B = "a" * 40, "b" * 40
CAPS = b"report-status side-band-64k ofs-delta quiet agent=gitmem object-format=sha1"


# --- pkt-lines ---------------------------------------------------------------------------------------


def test_a_pkt_line_counts_its_own_four_digits() -> None:
    assert wire.pkt(b"abc") == b"0007abc"
    assert wire.pkt(b"") == b"0004"
    assert wire.pkt(b"x" * 65516) == b"fff0" + b"x" * 65516


def test_pkt_lines_are_read_one_at_a_time() -> None:
    stream = io.BytesIO(b"0007abc0004" + b"000ahello\n" + b"0000rest")
    assert wire.read_pkt(stream) == b"abc"
    assert wire.read_pkt(stream) == b""
    assert wire.read_pkt(stream) == b"hello\n"
    assert wire.read_pkt(stream) is None
    assert stream.read() == b"rest"  # a flush packet ends the reading, the pack follows


@pytest.mark.parametrize(("data", "said"), [
    (b"", "the push request ended early (no flush packet after the ref updates)"),
    (b"000", "the push request ended early (no flush packet after the ref updates)"),
    (b"zzzzabc", "the push request is not pkt-line framed (it starts b'zzzz')"),
    (b"0003", "bad pkt-line length 3"),
    (b"0001", "bad pkt-line length 1"),
    (b"-001", "bad pkt-line length -1"),
    (b"0009abcd", "the push request ended in the middle of a line"),
])
def test_a_broken_pkt_line_is_refused_saying_how(data: bytes, said: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        wire.read_pkt(io.BytesIO(data))
    assert str(caught.value) == said


def test_side_band_data_is_cut_in_pkt_lines_of_at_most_65520_bytes() -> None:
    data = bytes(range(256)) * 512  # 131072 bytes: two full lines and a short one
    out = io.BytesIO(wire.sideband(2, data))
    lines = []
    while (line := wire.read_pkt(out)) is not None:
        lines.append(line)
        if out.tell() == len(out.getvalue()):
            break
    assert [len(line) for line in lines] == [65516, 65516, 131072 - 2 * 65515 + 1]
    assert all(line[0] == 2 for line in lines)
    assert b"".join(line[1:] for line in lines) == data
    assert wire.sideband(1, b"") == b""
    assert wire.sideband(1, b"ok") == b"0007\x01ok"


# --- the commands ------------------------------------------------------------------------------------


def commands(*lines: bytes) -> io.BytesIO:
    return io.BytesIO(b"".join(wire.pkt(line) for line in lines) + wire.FLUSH + b"PACK")


def test_the_commands_and_the_first_lines_capabilities_are_read() -> None:
    stream = commands(f"{wire.ZERO} {A} refs/for/main".encode() + b"\0report-status side-band-64k agent=git/2\n",
                      f"{B} {wire.ZERO} refs/heads/review/x\0ignored-here\n".encode())
    found, caps = wire.read_commands(stream)
    assert found == [wire.RefUpdate(wire.ZERO, A, "refs/for/main"), wire.RefUpdate(B, wire.ZERO, "refs/heads/review/x")]
    assert caps == {"report-status", "side-band-64k", "agent=git/2"}
    assert [c.deletes for c in found] == [False, True]
    assert stream.read() == b"PACK"


def test_what_a_push_brings_is_made_of_values() -> None:
    update = wire.RefUpdate(wire.ZERO, A, "refs/for/main")
    assert hash(update) == hash(wire.RefUpdate(wire.ZERO, A, "refs/for/main"))
    for made in (update, wire.PushedFile("a", "added", "file", b""), wire.PushedCommit(A, "s", 1, [])):
        with pytest.raises(FrozenInstanceError):
            made.id = "x"  # type: ignore[misc,union-attr]


def test_a_lone_flush_packet_is_gits_probe_and_carries_no_command() -> None:
    assert wire.read_commands(io.BytesIO(wire.FLUSH)) == ([], set())


@pytest.mark.parametrize("line", [
    f"{wire.ZERO} {A}".encode(),
    f"{wire.ZERO} {A} refs/for/main extra".encode(),
    f"{wire.ZERO} {A} heads/main".encode(),
    f"{wire.ZERO} {A.upper()} refs/for/main".encode(),
    f"{wire.ZERO} {'g' * 40} refs/for/main".encode(),
    f"{wire.ZERO[:39]} {A} refs/for/main".encode(),
    f"{wire.ZERO} {A}0 refs/for/main".encode(),
    f"{'z' * 40} {A} refs/for/main".encode(),
])
def test_a_line_that_is_no_ref_update_is_refused(line: bytes) -> None:
    with pytest.raises(InvalidInput, match=r"^not a ref update: "):
        wire.read_commands(commands(line))


def test_a_push_may_update_a_hundred_refs_and_no_more() -> None:
    lines = [f"{wire.ZERO} {A} refs/heads/review/r{n}".encode() for n in range(wire.MAX_COMMANDS)]
    assert len(wire.read_commands(commands(*lines))[0]) == wire.MAX_COMMANDS == 100
    with pytest.raises(InvalidInput, match="^a push may update at most 100 refs$"):
        wire.read_commands(commands(*lines, b"%s %s refs/heads/one-more" % (wire.ZERO.encode(), A.encode())))


# --- what the server says ----------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.create(tmp_path / "ns.git", b"# memories\n")


def test_the_advertisement_lists_every_branch_with_the_capabilities_on_the_first(store: Store) -> None:
    main = store.head_id()
    assert main is not None
    store.move_ref("refs/heads/review/a", main, None, "test")
    store.move_ref("refs/gitmem/reviews", main, None, "test")  # not a branch: not advertised
    assert wire.advertisement(store) == (
        b"001f# service=git-receive-pack\n0000"
        + wire.pkt(f"{main} refs/heads/main".encode() + b"\0" + CAPS + b"\n")
        + wire.pkt(f"{main} refs/heads/review/a\n".encode()) + b"0000")


def test_an_empty_repository_advertises_only_its_capabilities(tmp_path: Path) -> None:
    bare(tmp_path / "empty.git")
    empty = Store(tmp_path / "empty.git")
    assert wire.advertisement(empty) == (
        b"001f# service=git-receive-pack\n0000"
        + wire.pkt(f"{wire.ZERO} capabilities^{{}}".encode() + b"\0" + CAPS + b"\n") + b"0000")


def test_a_refusal_before_the_push_is_one_err_line() -> None:
    assert wire.refused_advertisement("needs a\n writer   key") == (
        b"001f# service=git-receive-pack\n0000" + wire.pkt(b"ERR needs a writer key"))


def test_the_report_says_ok_or_ng_per_ref() -> None:
    results: list[tuple[str, str | None]] = [("refs/for/main", None), ("refs/heads/main", "main moved\n  since")]
    plain = wire.report("ok", results, ["shown nowhere"], use_sideband=False)
    assert plain == (wire.pkt(b"unpack ok\n") + wire.pkt(b"ok refs/for/main\n")
                     + wire.pkt(b"ng refs/heads/main main moved since\n") + b"0000")
    banded = wire.report("ok", results, ["review #1 opened", "approve it"], use_sideband=True)
    assert banded == (wire.sideband(2, b"review #1 opened\napprove it\n") + wire.sideband(1, plain) + b"0000")
    assert wire.report("index-pack failed", [], [], use_sideband=True) == (
        wire.sideband(1, wire.pkt(b"unpack index-pack failed\n") + b"0000") + b"0000")


# --- the quarantine ------------------------------------------------------------------------------------


def pack_of(repo: pygit2.Repository, tip: str, *, not_: str | None = None) -> bytes:
    """What ``git push`` sends after the commands: a pack of ``tip`` and all it needs (less ``not_``'s)."""
    revs = f"{tip}\n" + (f"^{not_}\n" if not_ else "")
    done = subprocess.run(["git", "--git-dir", repo.path, "pack-objects", "--revs", "--stdout", "--thin", "-q"],
                          input=revs.encode(), capture_output=True, check=True)
    return done.stdout


def objects(store: Store) -> list[str]:
    root = Path(store.repo.path) / "objects"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def client_commit(store: Store, tmp_path: Path, files: dict[str, bytes]) -> tuple[pygit2.Repository, str]:
    """A clone's new commit on main: a separate repository holding main's objects and one more commit."""
    path = tmp_path / "client.git"
    bare(path)
    (path / "objects" / "info" / "alternates").write_text(str(Path(store.repo.path) / "objects") + "\n")
    client = pygit2.Repository(str(path))
    main = store.head_id()
    assert main is not None
    tree = {"README.md": b"# memories\n", **files}
    return client, commit(client, tree, [main], "a pushed commit\n")


def raw_tree(repo: pygit2.Repository, entries: list[tuple[str, str, pygit2.Oid]]) -> pygit2.Oid:
    """A tree object written byte for byte: names and modes no tree builder takes (``..``, a tree as a file)."""
    data = b"".join(f"{mode} {name}".encode() + b"\0" + oid.raw for mode, name, oid in entries)
    return repo.odb.write(pygit2.enums.ObjectType.TREE, data)


def raw_commit(repo: pygit2.Repository, tree: pygit2.Oid, parents: list[str], message: str = "raw\n") -> str:
    who = pygit2.Signature("Ann", "ann@example.com", 1_700_000_000, 0)
    return str(repo.create_commit(None, who, who, message, tree, [pygit2.Oid(hex=p) for p in parents]))


def test_a_pack_waits_in_quarantine_until_it_is_migrated(store: Store, tmp_path: Path) -> None:
    client, new = client_commit(store, tmp_path, {"fact/a.md": b"---\ntype: fact\n---\n\nA\n"})
    before = objects(store)
    quarantine = wire.Quarantine(store)
    assert quarantine.path.parent == Path(store.repo.path) / "objects"
    assert quarantine.path.name.startswith("incoming-") and len(quarantine.path.name) == len("incoming-") + 16
    quarantine.receive(io.BytesIO(pack_of(client, new, not_=store.head_id())))
    assert pygit2.Oid(hex=new) in quarantine.repo  # the checks see the pushed commit...
    assert pygit2.Oid(hex=new) not in Store(Path(store.repo.path)).repo  # ...the repository does not
    quarantine.migrate()
    assert not quarantine.path.exists()
    assert pygit2.Oid(hex=new) in Store(Path(store.repo.path)).repo
    added = sorted(set(objects(store)) - set(before))
    assert [Path(p).suffix for p in added] == [".idx", ".pack"] and all(p.startswith("pack/") for p in added)
    fsck(store.repo)


def test_a_discarded_quarantine_leaves_the_repository_as_it_was(store: Store, tmp_path: Path) -> None:
    client, new = client_commit(store, tmp_path, {"fact/a.md": b"---\ntype: fact\n---\n\nA\n"})
    before = objects(store)
    quarantine = wire.Quarantine(store)
    quarantine.receive(io.BytesIO(pack_of(client, new)))
    assert pygit2.Oid(hex=new) in quarantine.repo
    quarantine.discard()
    assert objects(store) == before and not quarantine.path.exists()


def test_a_push_without_a_pack_brings_nothing(store: Store) -> None:
    before = objects(store)
    quarantine = wire.Quarantine(store)
    quarantine.receive(io.BytesIO(b""))
    quarantine.migrate()
    assert objects(store) == before


@pytest.mark.parametrize("data", [b"PACK\x00\x00\x00\x02garbage", b"not a pack at all"])
def test_a_broken_pack_is_refused_with_gits_reason(store: Store, data: bytes) -> None:
    quarantine = wire.Quarantine(store)
    with pytest.raises(InvalidInput) as caught:
        quarantine.receive(io.BytesIO(data))
    said = str(caught.value)
    assert said.startswith("the pushed pack was refused: ") and "fatal" in said, said
    assert "\n" not in said
    quarantine.discard()


def test_a_long_stream_git_stops_reading_is_refused_with_gits_reason(store: Store) -> None:
    quarantine = wire.Quarantine(store)
    with pytest.raises(InvalidInput, match="^the pushed pack was refused: "):
        quarantine.receive(io.BytesIO(b"not a pack at all" + bytes(16 * 1024 * 1024)))  # git hangs up early
    quarantine.discard()


def test_names_git_refuses_come_through_the_pack_for_gitmem_to_name(store: Store, tmp_path: Path) -> None:
    # git's own fsck would stop the pack at "..", ".git" or an empty name without naming the file:
    # index-pack lets them in, and the push's checks refuse them by name.
    client, _ = client_commit(store, tmp_path, {})
    blob = client.create_blob(b"x\n")
    fact = raw_tree(client, [("100644", "..", blob), ("100644", ".git", blob)])
    root = raw_tree(client, [("40000", ".GIT", fact), ("100644", "README.md", client.create_blob(b"# memories\n")),
                             ("40000", "fact", fact)])
    main = store.head_id()
    assert main is not None
    new = raw_commit(client, root, [main])
    quarantine = wire.Quarantine(store)
    quarantine.receive(io.BytesIO(pack_of(client, new, not_=store.head_id())))
    pushed = wire.pushed(quarantine.repo, quarantine.repo[pygit2.Oid(hex=new)], 1000)
    assert sorted(f.path for f in pushed.files) == [".GIT/..", ".GIT/.git", "fact/..", "fact/.git"]
    quarantine.discard()


def test_other_object_faults_are_still_refused_by_git(store: Store, tmp_path: Path) -> None:
    client = bare(tmp_path / "client.git")
    tree = commit(client, {"README.md": b"x\n"})
    broken = client.odb.write(pygit2.enums.ObjectType.COMMIT,
                              f"tree {client[pygit2.Oid(hex=tree)].tree_id}\nauthor nobody\n\nno email\n")
    quarantine = wire.Quarantine(store)
    with pytest.raises(InvalidInput, match="^the pushed pack was refused: .*(missingEmail|badDate|bad)"):
        quarantine.receive(io.BytesIO(pack_of(client, str(broken))))
    quarantine.discard()


def test_a_quarantine_older_than_an_hour_is_cleared_a_newer_one_kept(store: Store) -> None:
    assert wire.ABANDONED_SECONDS == 3600  # no push takes an hour
    root = Path(store.repo.path) / "objects"
    dead, busy, other = root / "incoming-dead", root / "incoming-busy", root / "info-old"
    for folder in (dead, busy, other):
        (folder / "pack").mkdir(parents=True)
        (folder / "pack" / "tmp_pack_x").write_bytes(b"half a pack")
    old = time.time() - wire.ABANDONED_SECONDS - 60
    os.utime(dead, (old, old))
    os.utime(other, (old, old))
    recent = time.time() - wire.ABANDONED_SECONDS + 60
    os.utime(busy, (recent, recent))
    quarantine = wire.Quarantine(store)
    assert not dead.exists() and busy.exists() and other.exists()
    assert quarantine.path.exists()
    quarantine.discard()


def test_the_pack_moves_in_before_its_index(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A reader that sees the index finds its pack there already (git's own order).
    client, new = client_commit(store, tmp_path, {"fact/a.md": b"---\ntype: fact\n---\n\nA\n"})
    quarantine = wire.Quarantine(store)
    quarantine.receive(io.BytesIO(pack_of(client, new)))
    moved: list[str] = []
    real = os.replace

    def replace(source: Path, target: Path) -> None:
        moved.append(Path(target).suffix)
        real(source, target)

    monkeypatch.setattr(wire.os, "replace", replace)
    quarantine.migrate()
    assert moved[-1] == ".idx" and ".pack" in moved[:-1] and moved.count(".idx") == 1


def test_migrating_leaves_half_written_files_behind(store: Store, tmp_path: Path) -> None:
    client, new = client_commit(store, tmp_path, {"fact/a.md": b"---\ntype: fact\n---\n\nA\n"})
    quarantine = wire.Quarantine(store)
    quarantine.receive(io.BytesIO(pack_of(client, new)))
    (quarantine.path / "pack" / "tmp_pack_half").write_bytes(b"half")
    quarantine.migrate()
    assert not list((Path(store.repo.path) / "objects" / "pack").glob("tmp_*"))
    assert not quarantine.path.exists()
    assert pygit2.Oid(hex=new) in Store(Path(store.repo.path)).repo  # the pack and its index moved in past it


# --- what a push brings ----------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> pygit2.Repository:
    return bare(tmp_path / "repo.git")


def test_new_commits_are_those_no_known_commit_has_oldest_first(repo: pygit2.Repository) -> None:
    one = commit(repo, {"a": b"1"})
    two = commit(repo, {"a": b"2"}, [one])
    three = commit(repo, {"a": b"3"}, [two])
    assert [str(c.id) for c in wire.new_commits(repo, three, [one])] == [two, three]
    assert [str(c.id) for c in wire.new_commits(repo, three, [])] == [one, two, three]
    assert wire.new_commits(repo, two, [three]) == []


def test_a_push_may_bring_a_thousand_commits_and_no_more(repo: pygit2.Repository) -> None:
    tip = base = commit(repo, {"a": b"0"})
    for n in range(wire.MAX_COMMITS):
        tip = commit(repo, {"a": b"0"}, [tip], f"{n}\n")
    assert len(wire.new_commits(repo, tip, [base])) == 1000
    with pytest.raises(InvalidInput, match="^the push brings more than 1000 new commits; push them in parts$"):
        wire.new_commits(repo, tip, [])


def test_a_pushed_commit_tells_each_file_it_changes_and_its_kind(repo: pygit2.Repository) -> None:
    sub = commit(repo, {"x": b"x"})
    old = commit(repo, {"README.md": b"readme\n", "fact/kept.md": b"kept\n", "fact/edited.md": b"old\n",
                        "fact/gone.md": b"gone\n", "fact/run.md": b"run\n", "becomes/a.md": b"file\n",
                        "folder/inner.md": b"inner\n", "folder/deep/x.md": b"deep\n"})
    new = commit(repo, {"README.md": b"readme\n", "fact/kept.md": b"kept\n", "fact/edited.md": b"new\n",
                        "fact/run.md": ("exec", b"run\n"), "fact/link.md": ("link", "/etc/passwd"),
                        "fact/sub": ("commit", sub), "becomes/a.md/inside.md": b"now a folder\n",
                        "folder": b"now a file\n"}, [old], "Subject line\n\nBody text\n")
    pushed = wire.pushed(repo, repo[pygit2.Oid(hex=new)], 1000)
    assert (pushed.id, pushed.summary, pushed.parents) == (new, "Subject line", 1)
    assert pushed.message == "Subject line\n\nBody text\n"
    assert [(f.path, f.status, f.kind, f.data, f.size) for f in pushed.files] == [
        ("becomes/a.md", "deleted", "file", None, 0),
        ("becomes/a.md/inside.md", "added", "file", b"now a folder\n", 13),
        ("fact/edited.md", "modified", "file", b"new\n", 4),
        ("fact/gone.md", "deleted", "file", None, 0),
        ("fact/link.md", "added", "symlink", None, 0),
        ("fact/run.md", "modified", "executable", b"run\n", 4),
        ("fact/sub", "added", "submodule", None, 0),
        ("folder/deep/x.md", "deleted", "file", None, 0),
        ("folder/inner.md", "deleted", "file", None, 0),
        ("folder", "added", "file", b"now a file\n", 11),
    ]


def test_a_first_commit_adds_every_file(repo: pygit2.Repository) -> None:
    root = commit(repo, {"README.md": b"r\n", "fact/a.md": b"a\n"}, [], "", author="Bob", email="bob@x.org",
                  committer="Cy")
    pushed = wire.pushed(repo, repo[pygit2.Oid(hex=root)], 1000)
    assert [(f.path, f.status) for f in pushed.files] == [("README.md", "added"), ("fact/a.md", "added")]
    assert (pushed.summary, pushed.parents, pushed.message) == ("", 0, "")
    assert pushed.people == (("author", "Bob <bob@x.org>"), ("committer", "Cy <bob@x.org>"))


def test_a_merge_is_compared_with_its_first_parent(repo: pygit2.Repository) -> None:
    base = commit(repo, {"a": b"0"})
    left = commit(repo, {"a": b"0", "l": b"l"}, [base])
    right = commit(repo, {"a": b"0", "r": b"r"}, [base])
    merge = commit(repo, {"a": b"0", "l": b"l", "r": b"r"}, [left, right])
    pushed = wire.pushed(repo, repo[pygit2.Oid(hex=merge)], 1000)
    assert pushed.parents == 2 and [(f.path, f.status) for f in pushed.files] == [("r", "added")]


def test_a_message_and_names_in_another_encoding_are_read_as_far_as_they_go(repo: pygit2.Repository) -> None:
    tree = repo[pygit2.Oid(hex=commit(repo, {"a": b"1"}))].tree_id
    raw = (f"tree {tree}\nauthor Ren\xe9 <r\xe9@x.org> 1700000000 +0000\n"
           f"committer Ren\xe9 <r@x.org> 1700000000 +0000\n\nCaf\xe9 au lait\n").encode("latin-1")
    oid = repo.odb.write(pygit2.enums.ObjectType.COMMIT, raw)
    pushed = wire.pushed(repo, repo[oid], 1000)
    assert pushed.summary == "Caf\ufffd au lait"
    assert pushed.people == (("author", "Ren\ufffd <r\ufffd@x.org>"), ("committer", "Ren\ufffd <r@x.org>"))


def test_a_file_over_the_limit_is_sized_not_read(repo: pygit2.Repository) -> None:
    new = commit(repo, {"fact/at.md": b"x" * 100, "fact/over.md": b"x" * 101, "fact/run.md": ("exec", b"y" * 101)})
    files = {f.path: (f.data, f.size) for f in wire.pushed(repo, repo[pygit2.Oid(hex=new)], 100).files}
    assert files == {"fact/at.md": (b"x" * 100, 100), "fact/over.md": (None, 101), "fact/run.md": (None, 101)}


def test_a_tree_entry_naming_another_kind_of_object_is_no_file(repo: pygit2.Repository) -> None:
    inner = raw_tree(repo, [("100644", "x", repo.create_blob(b"x\n"))])
    new = raw_commit(repo, raw_tree(repo, [("100644", "lies.md", inner)]), [])  # a tree said to be a file
    (lies,) = wire.pushed(repo, repo[pygit2.Oid(hex=new)], 1000).files
    assert (lies.path, lies.kind, lies.data, lies.size) == ("lies.md", "file", None, 0)


def test_memory_files_are_the_markdown_files_one_folder_down(repo: pygit2.Repository) -> None:
    new = commit(repo, {"README.md": b"r\n", "fact/a.md": b"a\n", "fact/b.txt": b"b\n", "fact/deep/c.md": b"c\n",
                        "decision/d.md": ("exec", b"d\n"), "fact/link.md": ("link", "a.md"),
                        "fact/big.md": b"x" * 11, "fact/edge.md": b"x" * 10, "notes/e.md": b"e\n"})
    assert sorted(wire.memory_files(repo, new, 10)) == [
        ("decision/d.md", b"d\n"), ("fact/a.md", b"a\n"), ("fact/edge.md", b"x" * 10), ("notes/e.md", b"e\n")]


def test_histories_ancestors_and_tips(store: Store, repo: pygit2.Repository) -> None:
    one = commit(repo, {"a": b"1"})
    two = commit(repo, {"a": b"2"}, [one])
    side = commit(repo, {"a": b"3"}, [one])
    other = commit(repo, {"b": b"1"})
    assert wire.merge_base(repo, two, side) == one
    assert wire.merge_base(repo, two, other) is None
    assert wire.descends(repo, two, two) and wire.descends(repo, two, one)
    assert not wire.descends(repo, one, two) and not wire.descends(repo, side, two)
    main = store.head_id()
    assert main is not None
    assert wire.branch_tips(store) == [main]
    newer = str(store.write_commit(store.head(), Change({"fact/x.md": b"x\n"}, "x", "edit")))
    store.move_ref("refs/heads/review/x", newer, None, "test")
    store.move_ref("refs/heads/review/y", newer, None, "test")
    store.move_ref("refs/gitmem/reviews", newer, None, "test")
    assert wire.branch_tips(store) == sorted({main, newer})
    assert wire.valid_branch_name("refs/heads/review/a-b") and not wire.valid_branch_name("refs/heads/a..b")
