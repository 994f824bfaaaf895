"""``gitmem sync DIR`` (the real command, running the real git) against a live server."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from gitmem.service import MemoryService

from .conftest import Keys
from .test_git import git

OKF = "---\ntype: {type}\n---\n\n{text}\n"


def sync(live_server: str, key: str, folder: Path, *args: str, home: Path,
         url: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``gitmem sync`` as a user would: the server and key in the environment, a home of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITMEM_", "GIT_"))}
    env.update(GITMEM_KEY=key, GITMEM_HOME=str(home), HOME=tempfile.gettempdir(), GIT_CONFIG_NOSYSTEM="1")
    if url:
        env["GITMEM_URL"] = live_server
    return subprocess.run([sys.executable, "-m", "gitmem", "sync", str(folder), "--actor", "ann", *args],
                          env=env, capture_output=True, text=True, timeout=120)


def okf_folder(root: Path) -> Path:
    """A folder of OKF concepts written by hand (only ``type`` in the frontmatter), and a stray index."""
    folder = root / "notes"
    (folder / "fact").mkdir(parents=True)
    (folder / "decision").mkdir()
    (folder / "fact" / "ci.md").write_text(OKF.format(type="fact", text="CI runs on GitHub Actions"))
    (folder / "decision" / "db.md").write_text(OKF.format(type="decision", text="We chose PostgreSQL over MySQL"))
    (folder / "index.md").write_text("# Index\n")
    return folder


def test_sync_of_a_hand_edited_okf_folder_opens_a_review_and_follows_it(
        live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    folder = okf_folder(tmp_path)
    before = svc.head("default")
    dry = sync(live_server, keys.writer, folder, "--dry-run", "--json", home=tmp_path / "h")
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)
    assert planned["committed"] == ["decision/db.md", "fact/ci.md"] and planned["left_out"] == ["index.md"]
    assert not (folder / ".git").exists() and svc.head("default") == before  # a dry run changes nothing

    done = sync(live_server, keys.writer, folder, home=tmp_path / "h")
    assert done.returncode == 0, done.stderr
    assert "left out (not a memory file): index.md" in done.stdout
    assert "server: review #1 opened with 1 commit" in done.stdout
    assert svc.head("default") == before  # a writer's edits wait for review
    assert (folder / "README.md").is_file()  # the folder is a whole clone now

    again = sync(live_server, keys.writer, folder, home=tmp_path / "h", url=False)  # the clone knows its server
    assert again.returncode == 0, again.stderr
    assert "holds these commits already" in again.stdout

    svc.reviews.approve("default", 1, actor="reviewer")
    texts = sorted(m.text for m in svc.list("default"))
    assert texts == ["CI runs on GitHub Actions", "We chose PostgreSQL over MySQL"]

    # An edit by hand after the merge: the sync takes in main (with gitmem's completion) first.
    (folder / "fact" / "ci.md").write_text(OKF.format(type="fact", text="CI runs on GitHub Actions and Buildkite"))
    edited = sync(live_server, keys.writer, folder, "-m", "CI also runs on Buildkite", home=tmp_path / "h")
    assert edited.returncode == 0, edited.stderr
    assert "server: review #2 opened" in edited.stdout
    svc.reviews.approve("default", 2, actor="reviewer")
    assert "CI runs on GitHub Actions and Buildkite" in {m.text for m in svc.list("default")}
    pulled = sync(live_server, keys.writer, folder, home=tmp_path / "h")
    assert pulled.returncode == 0, pulled.stderr
    assert "id: " in (folder / "fact" / "ci.md").read_text()  # completed on merge, back in the folder
    assert git("status", "--porcelain", cwd=folder).stdout.strip() == "?? index.md"


def test_a_reviewers_sync_lands_on_main(live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    folder = okf_folder(tmp_path)
    done = sync(live_server, keys.reviewer, folder, "--json", home=tmp_path / "h")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["pushed_to"] == "main" and result["review"] is None
    assert len(svc.list("default")) == 2
    assert git("rev-parse", "HEAD", cwd=folder).stdout.strip() == svc.head("default")  # completion pulled


def test_a_conflict_is_named_by_file_and_leaves_the_folder_as_it_was(
        live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    folder = okf_folder(tmp_path)
    assert sync(live_server, keys.reviewer, folder, home=tmp_path / "h").returncode == 0
    memory = next(m for m in svc.list("default") if m.path == "fact/ci.md")
    svc.amend("default", memory.id, text="CI runs on Jenkins", actor="bob")  # the server changes it
    text = (folder / "fact" / "ci.md").read_text()
    (folder / "fact" / "ci.md").write_text(text.replace("GitHub Actions", "CircleCI"))  # and so do we
    head = svc.head("default")
    done = sync(live_server, keys.reviewer, folder, home=tmp_path / "h")
    assert done.returncode == 4, done.stderr
    assert "conflict: fact/ci.md" in done.stderr
    assert "both changed fact/ci.md" in done.stderr and "rebase --continue" in done.stderr
    assert "CircleCI" in (folder / "fact" / "ci.md").read_text()  # our edit is kept, committed
    assert not (folder / ".git" / "rebase-merge").exists()
    assert svc.head("default") == head
    # Taking the server's version, as the message says, and syncing again works.
    local = git("rev-parse", "refs/remotes/origin/main", cwd=folder).stdout.strip()
    assert git("reset", "-q", "--hard", local, cwd=folder).returncode == 0
    assert sync(live_server, keys.reviewer, folder, home=tmp_path / "h").returncode == 0
    assert "Jenkins" in (folder / "fact" / "ci.md").read_text()


def test_a_refused_file_is_named_and_nothing_reaches_the_server(
        live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    folder = okf_folder(tmp_path)
    (folder / "fact" / "bad.md").write_text(OKF.format(type="decision", text="We use Rust"))
    head = svc.head("default")
    done = sync(live_server, keys.writer, folder, home=tmp_path / "h")
    assert done.returncode == 2
    assert "fact/bad.md: its type is 'decision' but it is in fact/" in done.stderr
    assert svc.head("default") == head and svc.reviews.list("default") == []


def test_sync_without_a_server_says_how_to_name_one(tmp_path: Path) -> None:
    folder = okf_folder(tmp_path)
    done = sync("", "k", folder, home=tmp_path / "h", url=False)
    assert done.returncode == 2 and "--url" in done.stderr
    assert not (folder / ".git").exists()


class Trap(http.server.BaseHTTPRequestHandler):
    """A server that answers every request 404 and keeps each Authorization header it was sent."""

    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        Trap.seen.append(self.headers.get("Authorization", ""))
        self.send_response(404)
        self.end_headers()

    do_POST = do_GET  # noqa: N815

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        pass


def test_sync_url_on_a_clone_talks_to_that_server_and_sends_the_key_nowhere_else(
        live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    folder = okf_folder(tmp_path)
    assert sync(live_server, keys.reviewer, folder, home=tmp_path / "h").returncode == 0
    trap = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trap)
    threading.Thread(target=trap.serve_forever, daemon=True).start()
    Trap.seen = []
    try:
        elsewhere = f"http://127.0.0.1:{trap.server_port}/git/default.git"
        assert git("remote", "set-url", "origin", elsewhere, cwd=folder).returncode == 0  # a mirror, say
        (folder / "fact" / "queue.md").write_text(OKF.format(type="fact", text="The queue is RabbitMQ"))
        done = sync(live_server, keys.reviewer, folder, "--url", f"{live_server}/git/default.git",
                    home=tmp_path / "h", url=False)
        assert done.returncode == 0, done.stderr
        assert "The queue is RabbitMQ" in {m.text for m in svc.list("default")}
        assert Trap.seen == []  # origin was never asked, so never given the key
        assert git("remote", "get-url", "origin", cwd=folder).stdout.strip() == elsewhere  # left alone
        # Without --url the clone's origin is the server: the trap sees the sync (so it could have above).
        (folder / "fact" / "queue.md").write_text(OKF.format(type="fact", text="The queue is Kafka"))
        failed = sync(live_server, keys.reviewer, folder, home=tmp_path / "h", url=False)
        assert failed.returncode != 0 and Trap.seen
    finally:
        trap.shutdown()
        trap.server_close()


def test_the_first_sync_leaves_out_only_the_folders_own_strays(
        live_server: str, keys: Keys, svc: MemoryService, remember: Callable[..., str], tmp_path: Path) -> None:
    memory_id = remember("Deploys happen on Tuesdays", type="convention")
    svc.feedback("default", memory_id, "discuss", actor="bob", text="Also on Thursdays?")
    folder = okf_folder(tmp_path)
    done = sync(live_server, keys.writer, folder, "--json", home=tmp_path / "h")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["left_out"] == ["index.md"]
    assert (folder / ".gitmem" / "discussions" / f"{memory_id}.jsonl").is_file()  # the server's, now here
