"""Git over HTTP with the real git client against a live server on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import logging
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from gitmem.service import MemoryService

from .conftest import Keys


def git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": tempfile.gettempdir(), "GIT_TERMINAL_PROMPT": "0",
           "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}
    return subprocess.run(["git", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60)


def with_key(key: str) -> list[str]:
    return ["-c", f"http.extraHeader=Authorization: Bearer {key}"]


def test_clone_and_pull_with_a_reader_key(live_server: str, keys: Keys, svc: MemoryService,
                                          remember: Callable[..., str], tmp_path: Path) -> None:
    remember("Releases are tagged vX.Y.Z", type="convention")
    work = tmp_path / "clone"
    cloned = git(*with_key(keys.reader), "clone", f"{live_server}/git/default.git", str(work))
    assert cloned.returncode == 0, cloned.stderr
    assert (work / "convention" / "releases-are-tagged-vx-y-z.md").is_file()
    assert git("rev-parse", "HEAD", cwd=work).stdout.strip() == svc.status("default")["head"]

    remember("Hotfixes branch from the last release tag", type="convention")
    pulled = git(*with_key(keys.reader), "pull", "--ff-only", cwd=work)
    assert pulled.returncode == 0, pulled.stderr
    assert git("rev-parse", "HEAD", cwd=work).stdout.strip() == svc.status("default")["head"]
    assert len(list((work / "convention").glob("*.md"))) == 2


def test_clone_with_basic_auth_key_as_password(live_server: str, keys: Keys, tmp_path: Path) -> None:
    url = live_server.replace("http://", f"http://agent:{keys.reader}@") + "/git/default"  # no .git
    cloned = git("clone", url, str(tmp_path / "clone"))
    assert cloned.returncode == 0, cloned.stderr
    assert (tmp_path / "clone" / "README.md").is_file()


@pytest.mark.parametrize(("key", "status", "said"), [
    (None, 401, "could not read Username"),  # git asks for credentials after a 401
    ("gmk_000000000000_wrongwrongwrongwrongwrong", 401, "could not read Username"),
    ("other", 403, "The requested URL returned error: 403"),  # a valid key for another namespace
])
def test_clone_without_a_valid_key_is_refused(live_server: str, keys: Keys, tmp_path: Path,
                                              key: str | None, status: int, said: str) -> None:
    presented = keys.other if key == "other" else key
    refs = httpx.get(f"{live_server}/git/default.git/info/refs", params={"service": "git-upload-pack"},
                     headers={"Authorization": f"Bearer {presented}"} if presented else {}, timeout=30)
    assert refs.status_code == status
    assert refs.json()["error"]["status"] == status
    cloned = git(*(with_key(presented) if presented else []), "clone", f"{live_server}/git/default.git",
                 str(tmp_path / "clone"))
    assert cloned.returncode != 0
    assert said in cloned.stderr, cloned.stderr
    assert not (tmp_path / "clone" / "README.md").exists()


def test_unknown_namespace_is_404(live_server: str, svc: MemoryService, tmp_path: Path) -> None:
    from gitmem.repo import KeyStore

    key = KeyStore(svc.settings.home).create("*", "reader")[0]
    cloned = git(*with_key(key), "clone", f"{live_server}/git/nowhere.git", str(tmp_path / "clone"))
    assert cloned.returncode != 0 and "not found" in cloned.stderr.lower()


def raw_get(live_server: str, path: str, key: str) -> tuple[int, str, bytes]:
    """GET ``path`` exactly as written (no client normalises its dots away)."""
    host, port = live_server.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {key}"})
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("path", ["/git/default.git/%2e%2e/other.git/HEAD", "/git/default.git/../other.git/HEAD",
                                  "/git/default.git/..%2fother.git/HEAD", "/git/default.git/./HEAD",
                                  "/git/default.git/objects/%2E%2E/%2E%2E/other.git/HEAD"])
def test_dot_dot_paths_are_refused_with_a_json_error(live_server: str, keys: Keys, svc: MemoryService,
                                                     path: str) -> None:
    svc.init("other")
    status, kind, body = raw_get(live_server, path, keys.reader)
    assert status == 400 and kind == "application/json", (status, body)
    assert "'..' part" in json.loads(body)["error"]["message"]


def test_a_failing_git_backend_is_a_json_500_not_an_empty_one(live_server: str, keys: Keys, svc: MemoryService,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    svc.require("default")  # open while the repository is whole; then someone breaks its config by hand
    ((svc.settings.repos_dir / "default.git") / "config").write_text("[broken\n")
    with caplog.at_level(logging.WARNING, logger="gitmem.web.git"):
        status, kind, body = raw_get(live_server, "/git/default.git/info/refs?service=git-upload-pack",
                                     keys.reader)
    assert status == 500 and kind == "application/json"
    assert "could not serve 'info/refs'" in json.loads(body)["error"]["message"]
    assert "config" in caplog.text  # git's own words are in the server log
