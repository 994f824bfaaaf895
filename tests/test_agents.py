"""``gitmem agent install|hook``: each client's MCP entry and session-start hook, written into real config files."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from gitmem.repo import KeyStore
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.web import create_app
from tests.web.conftest import serving


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A user's home folder for the clients' files (HOME of the commands run)."""
    path = tmp_path / "user"
    path.mkdir()
    return path


def agent(settings: Settings, home: Path, *args: str, input: str | None = None, ok: bool = True,
          cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `gitmem agent ARGS...` with HOME at ``home`` and GITMEM_HOME at the test's home."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITMEM_", "XDG_"))}
    base |= {"HOME": str(home), "GITMEM_HOME": str(settings.home), "GITMEM_EMBEDDINGS": "none"}
    done = subprocess.run([sys.executable, "-m", "gitmem", "agent", *args], capture_output=True, text=True,
                          input=input, cwd=cwd, env=base | (env or {}), timeout=120)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def files_of(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def backups(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.gitmem-backup-*"))


def test_claude_code_keeps_the_users_entries_backs_up_and_runs_twice_alike(settings: Settings, home: Path) -> None:
    claude_json = {"numStartups": 12, "mcpServers": {"github": {"type": "http", "url": "https://x/mcp"}}}
    (home / ".claude.json").write_text(json.dumps(claude_json))
    (home / ".claude").mkdir()
    user_hooks = {"model": "opus", "hooks": {"SessionStart": [
        {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}]}}
    (home / ".claude" / "settings.json").write_text(json.dumps(user_hooks))
    done = agent(settings, home, "install", "claude-code", "--namespace", "team")
    assert "written:" in done.stdout
    config = json.loads((home / ".claude.json").read_text())
    assert config["numStartups"] == 12 and config["mcpServers"]["github"] == claude_json["mcpServers"]["github"]
    entry = config["mcpServers"]["gitmem"]
    assert entry["command"] == sys.executable
    assert entry["args"] == ["-m", "gitmem", "mcp", "--namespace", "team"]
    assert entry["env"] == {"GITMEM_HOME": str(settings.home.resolve())}
    hooks = json.loads((home / ".claude" / "settings.json").read_text())
    assert hooks["model"] == "opus"
    groups = hooks["hooks"]["SessionStart"]
    assert groups[0] == user_hooks["hooks"]["SessionStart"][0]  # the user's own hook stays first
    assert groups[1]["matcher"] == "startup|resume|clear|compact"
    assert groups[1]["hooks"][0]["type"] == "command"
    assert "-m gitmem agent hook claude-code --namespace team" in groups[1]["hooks"][0]["command"]
    # Each changed file was copied first, byte for byte.
    [claude_backup] = backups(home)
    assert json.loads(claude_backup.read_text()) == claude_json
    [settings_backup] = backups(home / ".claude")
    assert json.loads(settings_backup.read_text()) == user_hooks
    before = files_of(home)
    again = agent(settings, home, "install", "claude-code", "--namespace", "team")
    assert again.stdout.count("unchanged:") == 2
    assert files_of(home) == before  # no second backup, nothing rewritten


def test_cursor_files_and_the_installed_mcp_entry_really_serves(settings: Settings, home: Path,
                                                                tmp_path: Path) -> None:
    agent(settings, home, "install", "cursor")
    mcp = json.loads((home / ".cursor" / "mcp.json").read_text())
    hooks = json.loads((home / ".cursor" / "hooks.json").read_text())
    assert hooks["version"] == 1
    [hook] = hooks["hooks"]["sessionStart"]
    assert set(hook) == {"command"} and "agent hook cursor" in hook["command"]
    assert stat.S_IMODE((home / ".cursor" / "hooks.json").stat().st_mode) == 0o644
    assert backups(home / ".cursor") == []  # new files: nothing to back up
    entry = mcp["mcpServers"]["gitmem"]
    # The entry as written starts a server that answers the tools, on the same home.
    svc = MemoryService(settings)
    svc.init("default")
    svc.remember("default", "We use pnpm, not npm", type="convention")
    svc.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")} | entry["env"] | {
        "GITMEM_EMBEDDINGS": "none"}
    errlog = (tmp_path / "stderr.log").open("w+")

    async def go() -> Any:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
        async with Client(stdio_client(params, errlog=errlog)) as client:
            return await client.call_tool("recall", {"query": "package manager pnpm"})

    try:
        result = anyio.run(go)
    finally:
        errlog.close()
    items = json.loads(result.content[0].text)["items"]
    assert items[0]["memory"]["text"] == "We use pnpm, not npm"


def test_codex_edits_toml_keeping_comments_and_other_tables(settings: Settings, home: Path) -> None:
    (home / ".codex").mkdir()
    original = ('# my Codex settings\nmodel = "gpt-5-codex"\n\n[features]\nweb_search = true  # keep\n\n'
                '[mcp_servers.docs]\ncommand = "docs-mcp"\n\n[mcp_servers.gitmem]\ncommand = "old-gitmem"\n'
                'args = ["mcp"]\n\n[profiles.fast]\nmodel = "o4-mini"\n')
    (home / ".codex" / "config.toml").write_text(original)
    agent(settings, home, "install", "codex", "--url", "http://memory.example.com:8000/", "--key", "gmk_secret")
    text = (home / ".codex" / "config.toml").read_text()
    config = tomllib.loads(text)
    assert "# my Codex settings" in text and "web_search = true  # keep" in text
    assert config["model"] == "gpt-5-codex" and config["profiles"]["fast"]["model"] == "o4-mini"
    assert config["mcp_servers"]["docs"] == {"command": "docs-mcp"}
    assert config["mcp_servers"]["gitmem"] == {"url": "http://memory.example.com:8000/mcp",
                                               "bearer_token_env_var": "GITMEM_KEY"}
    assert config["features"] == {"web_search": True, "codex_hooks": True}
    assert "gmk_secret" not in text  # Codex reads the key from the variable
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())
    [group] = hooks["hooks"]["SessionStart"]
    assert group["matcher"] == "startup|resume|clear"
    assert group["hooks"][0]["command"].endswith("agent hook codex --url http://memory.example.com:8000")
    [backup] = backups(home / ".codex")
    assert backup.read_text() == original
    # The key the hook needs is kept outside any repository, for the user alone.
    keys = home / ".config" / "gitmem" / "agent-keys.json"
    assert json.loads(keys.read_text()) == {"http://memory.example.com:8000": "gmk_secret"}
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    assert agent(settings, home, "install", "codex", "--url", "http://memory.example.com:8000",
                 "--key", "gmk_secret").stdout.count("unchanged:") == 2


def test_a_projects_files_name_the_key_variable_never_the_key(settings: Settings, home: Path,
                                                               tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for client in ("claude-code", "cursor"):
        agent(settings, home, "install", client, "--project", str(project), "--url", "http://127.0.0.1:8000",
              "--key", "gmk_secret")
    written = files_of(project)
    assert set(written) == {".mcp.json", ".claude/settings.json", ".cursor/mcp.json", ".cursor/hooks.json"}
    assert all("gmk_secret" not in text for text in written.values())
    assert json.loads(written[".mcp.json"])["mcpServers"]["gitmem"] == {
        "type": "http", "url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ${GITMEM_KEY}"}}
    assert json.loads(written[".cursor/mcp.json"])["mcpServers"]["gitmem"]["headers"] == {
        "Authorization": "Bearer ${env:GITMEM_KEY}"}
    assert not (home / ".claude.json").exists() and not (home / ".cursor").exists()


def test_print_shows_everything_and_writes_nothing(settings: Settings, home: Path) -> None:
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_text('{"mcpServers": {}}')
    before = files_of(home)
    shown = agent(settings, home, "install", "cursor", "--print")
    assert f"# {home / '.cursor' / 'mcp.json'} (mcp)" in shown.stdout
    assert '"sessionStart"' in shown.stdout and '"gitmem"' in shown.stdout
    data = json.loads(agent(settings, home, "install", "codex", "--print", "--json").stdout)
    assert [f["purpose"] for f in data["files"]] == ["mcp", "hook"] and data["dry_run"] is True
    assert "[mcp_servers.gitmem]" in data["files"][0]["content"]
    assert files_of(home) == before


@pytest.mark.parametrize(("client", "name", "content", "message"), [
    ("claude-code", ".claude.json", "{not json", "is not valid JSON"),
    ("cursor", ".cursor/mcp.json", '{"mcpServers": []}', "'mcpServers' is not an object"),
    ("cursor", ".cursor/hooks.json", '{"version": 1, "hooks": {"sessionStart": {}}}', "is not a list"),
    ("codex", ".codex/config.toml", "[mcp_servers\n", "is not valid TOML"),
    ("codex", ".codex/config.toml", 'mcp_servers.gitmem.command = "x"\n', "does not edit"),
])
def test_a_config_that_does_not_parse_is_named_and_nothing_is_written(settings: Settings, home: Path, client: str,
                                                                      name: str, content: str, message: str) -> None:
    path = home / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    before = files_of(home)
    done = agent(settings, home, "install", client, ok=False)
    assert done.returncode == 2 and message in done.stderr and str(path) in done.stderr
    assert files_of(home) == before  # not even the other file of the install


@pytest.mark.parametrize(("args", "message"), [
    (("--key", "gmk_x"), "--key goes with --url"),
    (("--url", "ftp://x", "--key", "k"), "not an http(s) address"),
    (("--url", "http://x", "--key", "a b"), "holds spaces"),
])
def test_bad_options_exit_2(settings: Settings, home: Path, args: tuple[str, ...], message: str) -> None:
    done = agent(settings, home, "install", "cursor", *args, ok=False)
    assert done.returncode == 2 and message in done.stderr
    assert files_of(home) == {}


def git_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    run = {"cwd": project, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q"], **run)  # type: ignore[call-overload]
    (project / "package.json").write_text("{}")
    (project / "README.md").write_text("hi")
    subprocess.run(["git", "add", "."], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "start"],
                   **run)  # type: ignore[call-overload]
    (project / "src").mkdir()
    (project / "src" / "app.ts").write_text("x")  # new and untracked: in play
    return project


def test_the_hook_prints_context_for_the_files_in_play_in_each_clients_format(settings: Settings, home: Path,
                                                                               tmp_path: Path) -> None:
    svc = MemoryService(settings)
    svc.init("default")
    svc.remember("default", "App code lives in src/ and is TypeScript", type="convention", paths=["src/"])
    svc.remember("default", "Deploys happen on Tuesdays", type="decision")
    svc.close()
    project = git_project(tmp_path)
    claude = agent(settings, home, "hook", "claude-code", input=json.dumps({"cwd": str(project),
                                                                             "source": "startup"}))
    out = json.loads(claude.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert "For: src/app.ts" in out["additionalContext"]
    assert out["additionalContext"].index("App code lives in src/") < out["additionalContext"].index("Tuesdays")
    cursor = agent(settings, home, "hook", "cursor", input=json.dumps({"workspace_roots": [str(project)]}))
    assert "App code lives in src/" in json.loads(cursor.stdout)["additional_context"]
    # Run in the project with nothing on standard input, as by hand.
    codex = agent(settings, home, "hook", "codex", cwd=project, input="")
    assert "src/app.ts" in json.loads(codex.stdout)["hookSpecificOutput"]["additionalContext"]
    # A clean tree: the files of the last commit are in play.
    subprocess.run(["git", "add", "."], cwd=project, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "app"], cwd=project,
                   check=True)
    clean = agent(settings, home, "hook", "cursor", input=json.dumps({"workspace_roots": [str(project)]}))
    assert "For: src/app.ts" in json.loads(clean.stdout)["additional_context"]


def test_the_hook_never_stops_a_session(settings: Settings, home: Path, tmp_path: Path) -> None:
    done = agent(settings, home, "hook", "claude-code", "--namespace", "nowhere", input="{not json")
    assert done.stdout == "" and "no memories loaded" in done.stderr and "nowhere" in done.stderr
    far = agent(settings, home, "hook", "cursor", "--url", "http://127.0.0.1:9", input="{}",
                env={"GITMEM_KEY": "gmk_x"})
    assert far.stdout == "" and "no memories loaded" in far.stderr


@pytest.fixture
def served(settings: Settings) -> Iterator[str]:
    svc = MemoryService(settings)
    svc.init("team")
    svc.remember("team", "App code lives in src/ and is TypeScript", type="convention", paths=["src/"])
    try:
        with serving(create_app(service=svc)) as url:
            yield url
    finally:
        svc.close()


def test_the_hook_asks_a_server_with_the_key_install_kept(settings: Settings, home: Path, tmp_path: Path,
                                                          served: str) -> None:
    key = KeyStore(settings.home).create("team", "reader", name="alice-cursor")[0]
    project = git_project(tmp_path)
    agent(settings, home, "install", "cursor", "--url", served, "--key", key, "--namespace", "team")
    hook = json.loads((home / ".cursor" / "hooks.json").read_text())["hooks"]["sessionStart"][0]["command"]
    assert f"--url {served}" in hook and key not in hook
    # Run the installed command line itself, as Cursor would, from another home (no local memories).
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")} | {
        "HOME": str(home), "GITMEM_HOME": str(tmp_path / "elsewhere")}
    done = subprocess.run(hook, shell=True, input=json.dumps({"workspace_roots": [str(project)]}),
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    context = json.loads(done.stdout)["additional_context"]
    assert "App code lives in src/" in context and "For: src/app.ts" in context
    revoked = subprocess.run(hook, shell=True, input="{}", capture_output=True, text=True, timeout=120,
                             env=env | {"GITMEM_KEY": "gmk_wrong"})
    assert revoked.stdout == "" and "401" in revoked.stderr


SESSION = [
    {"type": "user", "sessionId": "5f0c-11aa", "cwd": "/home/ana/shop", "uuid": "u1",
     "timestamp": "2026-11-20T10:00:01Z", "message": {"role": "user", "content": "Add date-fns to the web app"}},
    {"type": "assistant", "sessionId": "5f0c-11aa", "uuid": "a1", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "Running npm install date-fns."},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "npm install date-fns"}}]}},
    {"type": "user", "sessionId": "5f0c-11aa", "uuid": "u2", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "added 1 package"}]}},
    {"type": "user", "sessionId": "5f0c-11aa", "uuid": "u3", "message": {
        "role": "user", "content": "No, we use pnpm, not npm. Never run npm install in this repo."}},
]


def session_file(tmp_path: Path) -> Path:
    path = tmp_path / "5f0c-11aa.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in SESSION))
    return path


def test_the_session_end_hook_ingests_the_session_into_pending_memories(settings: Settings, home: Path,
                                                                        tmp_path: Path) -> None:
    agent(settings, home, "install", "claude-code", "--ingest", "--namespace", "team")
    MemoryService(settings).init("team")
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    (end,) = hooks["SessionEnd"]
    command = end["hooks"][0]["command"]
    assert "agent hook claude-code --ingest --namespace team" in command and end["hooks"][0]["timeout"] == 120
    assert len(hooks["SessionStart"]) == 1
    again = agent(settings, home, "install", "claude-code", "--ingest", "--namespace", "team")
    assert again.stdout.count("unchanged:") == 2  # installing twice adds no second hook
    event = {"session_id": "5f0c-11aa", "transcript_path": str(session_file(tmp_path)), "cwd": str(tmp_path),
             "hook_event_name": "SessionEnd", "reason": "exit"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")} | {"HOME": str(home),
                                                                                 "GITMEM_EMBEDDINGS": "none"}
    done = subprocess.run(command, shell=True, input=json.dumps(event), capture_output=True, text=True, env=env,
                          timeout=120, check=True)
    assert done.stdout == "" and "3 new messages of session 5f0c-11aa" in done.stderr
    svc = MemoryService(settings)
    try:
        texts = sorted((m.text, m.state, m.source) for m in svc.list("team"))
    finally:
        svc.close()
    assert texts == [("Never run npm install in this repo.", "pending", "agent"),
                     ("We use pnpm, not npm.", "pending", "agent")]


def test_the_session_end_hook_sends_the_session_to_a_server(settings: Settings, home: Path, tmp_path: Path,
                                                            served: str) -> None:
    key = KeyStore(settings.home).create("team", "writer", name="alice-claude")[0]
    agent(settings, home, "install", "claude-code", "--ingest", "--url", served, "--key", key, "--namespace", "team")
    (end,) = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]["SessionEnd"]
    command = end["hooks"][0]["command"]
    assert key not in command
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")} | {
        "HOME": str(home), "GITMEM_HOME": str(tmp_path / "elsewhere")}
    event = json.dumps({"session_id": "5f0c-11aa", "transcript_path": str(session_file(tmp_path))})
    done = subprocess.run(command, shell=True, input=event, capture_output=True, text=True, env=env, timeout=120,
                          check=True)
    assert "3 new messages of session 5f0c-11aa sent to" in done.stderr
    svc = MemoryService(settings)
    try:
        assert svc.ingest_status("team")["messages"] == 3
    finally:
        svc.close()
    broken = subprocess.run(command, shell=True, input="{}", capture_output=True, text=True, env=env, timeout=120)
    assert broken.returncode == 0 and "names no transcript_path" in broken.stderr


def test_ingest_is_only_for_claude_code(settings: Settings, home: Path) -> None:
    done = agent(settings, home, "install", "cursor", "--ingest", ok=False)
    assert done.returncode == 2 and "--ingest is for claude-code" in done.stderr
    assert not (home / ".cursor").exists()
