"""``gitmem credential``: git's credential helper, with the real git client against a live server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gitmem.service import MemoryService

from .conftest import Keys


def run_git(*args: str, cwd: Path | None = None, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60)


def user_env(tmp_path: Path, **more: str) -> dict[str, str]:
    """A user with a home of their own and git told to ask gitmem for credentials."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C", **more}
    helper = f"!{sys.executable} -m gitmem credential"
    assert run_git("config", "--global", "credential.helper", helper, env=env).returncode == 0
    return env


def helper(operation: str, request: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitmem", "credential", operation], input=request,
                          capture_output=True, text=True, env=env, timeout=60)


def test_a_clone_asks_gitmem_for_the_key_and_keeps_none_in_its_config(
        live_server: str, keys: Keys, svc: MemoryService, tmp_path: Path) -> None:
    env = user_env(tmp_path)
    work = tmp_path / "clone"
    refused = run_git("clone", f"{live_server}/git/default.git", str(work), env=env)
    assert refused.returncode != 0  # no key anywhere yet: git may not prompt, so it fails
    # What `gitmem agent install --url --key` keeps, or what git stores after a typed key worked:
    host = live_server.removeprefix("http://")
    stored = helper("store", f"protocol=http\nhost={host}\nusername=ann\npassword={keys.writer}\n", env)
    assert stored.returncode == 0, stored.stderr
    kept = Path(env["XDG_CONFIG_HOME"]) / "gitmem" / "agent-keys.json"
    assert json.loads(kept.read_text()) == {f"http://{host}": keys.writer}
    assert kept.stat().st_mode & 0o777 == 0o600
    cloned = run_git("clone", f"{live_server}/git/default.git", str(work), env=env)
    assert cloned.returncode == 0, cloned.stderr
    assert keys.writer not in (work / ".git" / "config").read_text()
    (work / "fact").mkdir()
    (work / "fact" / "db.md").write_text("---\ntype: fact\n---\n\nThe database is PostgreSQL 16\n")
    assert run_git("add", "-A", cwd=work, env=env).returncode == 0
    assert run_git("-c", "user.name=Ann", "-c", "user.email=ann@example.com", "commit", "-qm", "db",
                   cwd=work, env=env).returncode == 0
    pushed = run_git("push", "origin", "HEAD:refs/for/main", cwd=work, env=env)
    assert pushed.returncode == 0 and "review #1 opened" in pushed.stderr, pushed.stderr
    # A key the server refuses is dropped (git says `erase`); someone else's password is not ours.
    helper("erase", f"protocol=http\nhost={host}\npassword=not-a-gitmem-key\n", env)
    assert json.loads(kept.read_text()) == {f"http://{host}": keys.writer}
    helper("erase", f"protocol=http\nhost={host}\npassword={keys.writer}\n", env)
    assert json.loads(kept.read_text()) == {}


def test_the_environments_key_goes_only_to_the_environments_server(tmp_path: Path) -> None:
    env = user_env(tmp_path, GITMEM_KEY="gmk_000000000000_environment", GITMEM_URL="http://memory:8000")
    given = helper("get", "protocol=http\nhost=memory:8000\n", env)
    assert given.stdout == "username=gitmem\npassword=gmk_000000000000_environment\n", given.stderr
    assert helper("get", "protocol=http\nhost=elsewhere.example.com\n", env).stdout == ""
    assert helper("get", "protocol=https\nhost=memory:8000\n", env).stdout == ""  # another scheme, another server
    unnamed = user_env(tmp_path, GITMEM_KEY="gmk_000000000000_environment")
    assert "password=gmk_000000000000_environment" in helper("get", "url=http://any:1/x\n", unnamed).stdout
    bad = helper("get", "\n", env)
    assert bad.returncode == 2 and "no protocol and host" in bad.stderr
