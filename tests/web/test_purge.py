"""Purging a memory from history over HTTP: who may ask and approve, and what clones made before are told."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx

from gitmem.service import MemoryService

from ..test_redaction import SECRET, everything
from .conftest import Client, Keys
from .test_git import git, with_key
from .test_pages import signed_in
from .test_push import OKF, clone, commit, push, state
from .test_sync import sync


def purge(live_server: str, keys: Keys, svc: MemoryService, memory_id: str) -> int:
    """Ask (admin key) and approve (admin key) the purge of ``memory_id`` over the API; the review's number."""
    asked = httpx.post(f"{live_server}/api/v1/namespaces/default/memories/{memory_id}/purge-history",
                       headers=keys.auth("admin"), json={"reason": "a password in a memory"})
    assert asked.status_code == 201, asked.text
    number = int(asked.json()["number"])
    approved = httpx.post(f"{live_server}/api/v1/namespaces/default/reviews/{number}/approve",
                          headers=keys.auth("admin"), json={})
    assert approved.status_code == 200, approved.text
    assert approved.json()["status"] == "merged"
    return number


def test_asking_and_approving_a_purge_over_the_api_needs_an_admin(
        live_server: str, keys: Keys, svc: MemoryService, remember: Callable[..., str]) -> None:
    memory_id = remember(SECRET, type="fact")
    url = f"{live_server}/api/v1/namespaces/default/memories/{memory_id}/purge-history"
    for role in ("reader", "writer", "reviewer"):
        assert httpx.post(url, headers=keys.auth(role), json={"reason": "x"}).status_code == 403
    assert httpx.post(url, headers=keys.auth("admin"), json={}).status_code == 400  # a reason is needed
    asked = httpx.post(url, headers=keys.auth("admin"), json={"reason": "a password"})
    assert asked.status_code == 201 and asked.json()["kind"] == "purge"
    number = asked.json()["number"]
    before = state(svc)
    refused = httpx.post(f"{live_server}/api/v1/namespaces/default/reviews/{number}/approve",
                         headers=keys.auth("reviewer"), json={})
    assert refused.status_code == 403 and "only an admin approves it" in refused.json()["error"]["message"]
    assert state(svc) == before
    done = httpx.post(f"{live_server}/api/v1/namespaces/default/reviews/{number}/approve",
                      headers=keys.auth("admin"), json={})
    assert done.status_code == 200 and done.json()["status"] == "merged"
    assert SECRET.encode() not in everything(svc.settings.repos_dir / "default.git")


def test_a_clone_from_before_a_purge_is_told_how_to_get_back_in_step(
        live_server: str, keys: Keys, svc: MemoryService, remember: Callable[..., str], tmp_path: Path) -> None:
    remember("Deploys happen on Tuesdays", type="convention")
    memory_id = remember(SECRET, type="fact")
    remember("Releases are tagged vX.Y.Z", type="convention")
    old = clone(live_server, keys.admin, tmp_path / "old")
    number = purge(live_server, keys, svc, memory_id)

    # git pull: the fetch tells it (the clone's haves are rewritten commits), then git stops.
    fetched = git(*with_key(keys.admin), "fetch", "origin", cwd=old)
    assert fetched.returncode == 0, fetched.stderr
    assert "remote: gitmem: this clone is from before a purge: history was rewritten on" in fetched.stderr
    assert f"by purge (review #{number}); re-clone, or `git fetch && git reset --hard origin/main`" in fetched.stderr

    # A push of the old history (with a new commit on it) is refused, and changes nothing.
    commit(old, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")})
    before = state(svc)
    for ref in ("HEAD:refs/for/main", "+HEAD:main"):
        pushed = push(keys.admin, old, ref)
        assert pushed.returncode != 0
        assert "your history is from before a purge (commit" in pushed.stderr, pushed.stderr
        assert "git fetch && git reset --hard origin/main" in pushed.stderr
        assert state(svc) == before
    assert SECRET.encode() not in everything(svc.settings.repos_dir / "default.git")

    # gitmem sync says the same and pushes nothing.
    synced = sync(live_server, keys.admin, old, home=tmp_path / "h", url=False)
    assert synced.returncode == 4 and "is a clone from before a purge" in synced.stderr, synced.stderr
    assert state(svc) == before

    # The way out works: the clone is in step, without the text, and pushes again.
    assert git("reset", "-q", "--hard", "origin/main", cwd=old).returncode == 0
    assert SECRET not in subprocess.run(["git", "log", "-p", "--all"], cwd=old, capture_output=True,
                                        text=True).stdout  # the clone's branches hold it no more
    commit(old, {"fact/db.md": OKF.format(type="fact", text="The database is PostgreSQL 16")})
    assert push(keys.admin, old, "HEAD:main").returncode == 0
    fresh = clone(live_server, keys.reader, tmp_path / "fresh")
    assert list((fresh / ".gitmem" / "redactions").glob(f"*-{memory_id}.json"))
    assert SECRET not in subprocess.run(["git", "log", "-p", "--all"], cwd=fresh, capture_output=True,
                                        text=True).stdout


def test_a_fetch_by_a_clone_made_after_the_purge_is_told_nothing(
        live_server: str, keys: Keys, svc: MemoryService, remember: Callable[..., str], tmp_path: Path) -> None:
    memory_id = remember(SECRET, type="fact")
    purge(live_server, keys, svc, memory_id)
    work = clone(live_server, keys.reader, tmp_path / "w")
    remember("Deploys happen on Tuesdays", type="convention")
    fetched = git(*with_key(keys.reader), "fetch", "origin", cwd=work)
    assert fetched.returncode == 0 and "before a purge" not in fetched.stderr, fetched.stderr


def test_mirrors_are_force_pushed(live_server: str, keys: Keys, svc: MemoryService, remember: Callable[..., str],
                                  tmp_path: Path) -> None:
    mirror = tmp_path / "mirror.git"
    subprocess.run(["git", "init", "-q", "--bare", str(mirror)], check=True)
    svc.mirror_add("default", str(mirror), name="backup")
    memory_id = remember(SECRET, type="fact")
    svc.mirror_push("default")
    assert SECRET in subprocess.run(["git", "--git-dir", str(mirror), "log", "-p", "--all"], capture_output=True,
                                    text=True).stdout
    purge(live_server, keys, svc, memory_id)
    purged = svc.last_purge()
    assert purged is not None and purged.mirrors["backup"]["ok"] is True
    assert subprocess.run(["git", "--git-dir", str(mirror), "rev-parse", "main"], capture_output=True,
                          text=True).stdout.strip() == svc.head("default")
    assert SECRET not in subprocess.run(["git", "--git-dir", str(mirror), "log", "-p", "--all"],
                                        capture_output=True, text=True).stdout


def test_the_review_page_says_what_approving_a_purge_does_and_who_may(
        client: Client, live_server: str, keys: Keys, svc: MemoryService, remember: Callable[..., str]) -> None:
    memory_id = remember(SECRET, type="fact")
    review = svc.purge_history("default", memory_id, actor="ann", reason="a password")
    token = signed_in(client, keys.reviewer)
    page = client.get(f"/ns/default/reviews/{review.number}").get_data(as_text=True)
    assert "purges the memory from the whole history of default" in page and "your key is not an admin" in page
    ids = [str(c.id) for c in svc.reviews.commits("default", review)]
    refused = client.post(f"/ns/default/reviews/{review.number}", data={
        "action": "approve-all", "lossless": ids, "version": review.version, "confirmed": "1",
        "csrf_token": token}, follow_redirects=True)
    assert "only an admin approves it" in refused.get_data(as_text=True)
    assert svc.reviews.get("default", review.number).status == "open"
