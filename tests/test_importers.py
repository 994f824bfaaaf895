"""Importing other memory stores: OKF folders, pi-memory-spaced, basic-memory projects, mem0 exports.

The fixtures under tests/data/import/ follow each format's documentation (see the module
docstring of gitmem.importers and the closing note of issue 15).
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from werkzeug.serving import make_server

from gitmem import importers
from gitmem.concepts import Memory
from gitmem.repo import KeyStore
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.web import create_app

from .conftest import Run, git

DATA = Path(__file__).parent / "data" / "import"


def run_import(gitmem: Run, fmt: str, *args: str, source: Path | None = None) -> dict[str, Any]:
    done = gitmem("import", fmt, str(source or DATA / fmt), "--json", *args)
    return dict(json.loads(done.stdout))


def by_label(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["label"]: item for item in report["items"]}


def memories(settings: Settings, namespace: str = "default") -> dict[str, Memory]:
    svc = MemoryService(settings)
    try:
        return {m.title: m for m in svc.list(namespace, limit=1000)}
    finally:
        svc.close()


def head(settings: Settings, namespace: str = "default") -> str:
    return git(settings.repos_dir / f"{namespace}.git", "rev-parse", "main").strip()


def test_okf_folder_weights_links_and_techchoices(gitmem: Run, settings: Settings,
                                                  fsck: Callable[[str], None]) -> None:
    report = run_import(gitmem, "okf")
    assert report["counts"] == {"added": 6, "reinforced": 0, "merged": 0, "skipped": 0, "refused": 2}
    items = by_label(report)
    assert "password" in items["method/部署.md"]["reason"]  # the secret scan refuses it; the rest go on
    assert "not valid YAML" in items["idea/坏的头.md"]["reason"]
    assert "index.md" not in items and "log.md" not in items  # the bundle's own files
    got = memories(settings)
    assert set(got) == {"门店布局", "经营数据来源", "包管理器", "前端框架", "后端语言", "周五不上线"}
    shop, data = got["门店布局"], got["经营数据来源"]
    assert (shop.type, shop.source, shop.tags) == ("fact", "import", ("门店", "网络"))
    assert shop.potency == importers.weight_to_potency(2.5) == 0.8333 and shop.access_count == 4
    # Cross links [text](/decision/x.md) are kept as related, both ways here.
    assert shop.related == (data.id,) and data.related == (shop.id,)
    assert data.text.startswith("# 数据") and "# 结论" in data.text
    assert got["周五不上线"].potency == 0.0667  # inactive there (weight 0.2): below the archive line here
    assert got["包管理器"].potency == 0.8  # weight 1.0, a new concept's
    backend = got["后端语言"]
    assert backend.type == "techchoice" and backend.active == "Go"
    assert [(o.name, o.pros, o.cons) for o in backend.options] == [
        ("Go", ("部署简单", "并发好"), ("泛型晚",)), ("Python", ("库多",), ("慢", "部署麻烦"))]
    frontend = got["前端框架"]  # pi-okf-memory's own table: 候选 | 说明 | 配置要点 | 状态, and its Active line
    assert frontend.type == "techchoice" and frontend.active == "React 18 + Vite"
    assert [(o.name, o.description, o.config, o.status, o.pros, o.cons) for o in frontend.options] == [
        ("React 18 + Vite", "团队熟悉", "vite.config.ts", "", (), ()),  # in use: the active one, not a status
        ("Vue 3", "上手快", "", "candidate", (), ())]
    assert [(c.option, c.reason) for c in frontend.choices] == [("React 18 + Vite", "imported from OKF")]
    assert items["techchoice/前端框架.md"]["note"] == ""
    # One commit, touching only the imported memories' files.
    log = json.loads(gitmem("log", "--json").stdout)
    assert [entry["action"] for entry in log] == ["import", "init"]
    changed = git(settings.repos_dir / "default.git", "-c", "core.quotePath=false", "show", "--name-only", "--format=",
                  log[0]["id"]).split()
    assert sorted(changed) == sorted(m.path for m in got.values())
    fsck("default")


def test_an_import_reverts_whole_and_can_then_be_imported_again(gitmem: Run, settings: Settings,
                                                                fsck: Callable[[str], None]) -> None:
    gitmem("remember", "Deploys need a green build")
    report = run_import(gitmem, "basic-memory")
    gitmem("revert", report["commit"])
    assert set(memories(settings)) == {"Deploys need a green build"}
    fsck("default")
    again = run_import(gitmem, "basic-memory")  # a reverted import counts as never made
    assert again["counts"]["added"] == 3 and again["commit"]


def test_a_second_run_changes_nothing(gitmem: Run, settings: Settings) -> None:
    for fmt in importers.FORMATS:
        first = run_import(gitmem, fmt)
        assert first["commit"]
        before = head(settings)
        second = run_import(gitmem, fmt)
        assert second["commit"] is None and head(settings) == before, fmt
        assert second["counts"]["added"] == second["counts"]["reinforced"] == second["counts"]["merged"] == 0
        skipped = [i for i in second["items"] if i["outcome"] == "skipped"]
        assert len(skipped) == sum(first["counts"][k] for k in ("added", "reinforced", "merged", "skipped")), fmt
        assert all(i["reason"].startswith("imported before") for i in skipped)


def test_dry_run_reports_the_same_and_writes_nothing(gitmem: Run, settings: Settings) -> None:
    gitmem("init")
    before = head(settings)
    dry = run_import(gitmem, "mem0", "--dry-run")
    assert dry["dry_run"] is True and dry["commit"] is None and head(settings) == before
    real = run_import(gitmem, "mem0")
    assert [(i["label"], i["outcome"]) for i in dry["items"]] == [(i["label"], i["outcome"]) for i in real["items"]]


def test_pi_memory_spaced_keeps_potency_uses_tenure_and_paths(gitmem: Run, settings: Settings) -> None:
    report = run_import(gitmem, "pi-memory-spaced")
    assert report["counts"] == {"added": 3, "reinforced": 1, "merged": 0, "skipped": 0, "refused": 2}
    items = by_label(report)
    assert items["memory-store.json#m5"]["reason"] == "potency must be a number from 0 to 1, not 1.7"
    assert "'content'" in items["memory-store.json#m6"]["reason"]
    got = {m.text: m for m in memories(settings).values()}
    pnpm = got["This project uses pnpm as its package manager"]
    assert items["memory-store.json#m4"]["memory_id"] == pnpm.id  # the same text reinforces, never doubles
    assert pnpm.source == "user" and pnpm.tenured  # a "user" memory there stays the user's own
    assert pnpm.paths == ("package.json", "pnpm-lock.yaml") and pnpm.tags == ("tooling",)
    assert pnpm.access_count == 58  # 57 there, and the duplicate's use
    assert pnpm.created.isoformat() == "2026-04-24T03:06:40+00:00"  # createdAt 1777000000000 ms
    token = got["API requests need the X-Token header or they fail with 401"]
    assert (token.source, token.type, token.potency, token.last_used, token.access_count) == (
        "import", "lesson", 0.34, None, 0)
    sqlite = got["The test database is SQLite"]
    assert sqlite.source == "user" and sqlite.last_used is not None and sqlite.last_used.year == 2026


def test_basic_memory_notes_and_wiki_links(gitmem: Run, settings: Settings) -> None:
    report = run_import(gitmem, "basic-memory")
    assert report["counts"]["added"] == 3
    items = by_label(report)
    assert set(items) == {"notes/authentication-design.md", "specs/api-security.md", "User Database Schema.md"}
    assert "[[Session Management]] names no note" in items["notes/authentication-design.md"]["note"]
    got = memories(settings)
    auth, api, users = got["Authentication Design"], got["API Security Requirements"], got["User Database Schema"]
    assert auth.type == "decision" and auth.tags == ("auth", "security", "backend")
    assert api.type == "fact" and api.tags == ("security", "api")  # basic-memory's "note"; tags as a string
    assert set(auth.related) == {api.id, users.id}
    assert api.related == (auth.id,)  # [[authentication-design|the auth design]] by its permalink
    assert "- [fact] Passwords are stored as argon2id hashes" in users.text


def test_mem0_export(gitmem: Run, settings: Settings) -> None:
    report = run_import(gitmem, "mem0")
    assert report["counts"] == {"added": 3, "reinforced": 0, "merged": 0, "skipped": 0, "refused": 1}
    got = {m.text: m for m in memories(settings).values()}
    pnpm = got["Uses pnpm instead of npm for JavaScript projects"]
    assert (pnpm.type, pnpm.author, pnpm.paths, pnpm.tags) == (
        "preference", "alex", ("package.json",), ("technology", "tooling"))
    food = got["Is vegetarian and allergic to nuts"]
    assert food.type == "fact" and food.tags == ("health", "food")
    label = "memories.json#8a7b6c5d-1e2f-4a3b-9c8d-7e6f5a4b3c2d"
    assert "'food' is none of gitmem's" in by_label(report)[label]["note"]
    assert got["Runs the test suite with pytest -x before every commit"].author == "coding-agent"


def test_duplicates_of_what_the_namespace_holds_reinforce_or_merge(gitmem: Run, settings: Settings) -> None:
    gitmem("remember", "Uses pnpm instead of npm for JavaScript projects", "--source", "agent")
    gitmem("remember", "Runs the whole test suite with pytest -x before every commit", "--source", "agent")
    report = run_import(gitmem, "mem0")
    outcomes = {i["label"].split("#")[1][:8]: i["outcome"] for i in report["items"]}
    assert outcomes["3c90c3cc"] == "reinforced"
    assert outcomes["5e4d3c2b"] == "merged"
    assert outcomes["8a7b6c5d"] == "added"
    assert len(memories(settings)) == 3
    assert run_import(gitmem, "mem0")["commit"] is None


@pytest.mark.parametrize(("fmt", "source", "message"), [
    ("okf", "missing-folder", "does not exist"),
    ("okf", "mem0/memories.json", "imports a folder"),
    ("mem0", "okf", "holds no .json file"),
    ("basic-memory", "empty", "holds no Markdown files"),
    ("mem0", "broken.json", "is not valid JSON"),
    ("pi-memory-spaced", "mem0/memories.json", "has no 'memories' list"),
])
def test_a_source_that_is_not_of_its_format_exits_2_and_creates_nothing(gitmem: Run, settings: Settings,
                                                                        tmp_path: Path, fmt: str, source: str,
                                                                        message: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken.json").write_text('{"results": [')
    for name in ("okf", "mem0"):
        shutil.copytree(DATA / name, tmp_path / name)
    done = gitmem("import", fmt, str(tmp_path / source), ok=False)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not settings.repos_dir.exists() or not any(settings.repos_dir.iterdir())


@pytest.fixture
def served(settings: Settings) -> Iterator[tuple[str, MemoryService]]:
    svc = MemoryService(settings)
    svc.init("default")
    server = make_server("127.0.0.1", 0, create_app(service=svc), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", svc
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
        svc.close()


def test_the_api_imports_for_admins_only(served: tuple[str, MemoryService], settings: Settings,
                                         fsck: Callable[[str], None]) -> None:
    url, svc = served
    store = KeyStore(settings.home)
    admin = {"Authorization": f"Bearer {store.create('default', 'admin', name='ada')[0]}"}
    writer = {"Authorization": f"Bearer {store.create('default', 'writer', name='wes')[0]}"}
    files = {str(p.relative_to(DATA / "okf")): p.read_text() for p in (DATA / "okf").rglob("*") if p.is_file()}
    endpoint = f"{url}/api/v1/namespaces/default/import"
    before = svc.head("default")
    assert httpx.post(endpoint, headers=writer, json={"format": "okf", "files": files}).status_code == 403
    for bad in ({"format": "okf"}, {"format": "csv", "files": files}, {"format": "okf", "files": {"/etc/x.md": "x"}},
                {"format": "okf", "files": {"../x.md": "x"}}, {"format": "okf", "files": {"a.md": 3}},
                {"format": "okf", "files": files, "dry_run": "yes"}, {"format": "okf", "files": files, "path": "/x"},
                {"format": "mem0", "files": {"m.json": "[1, "}}):
        response = httpx.post(endpoint, headers=admin, json=bad)
        assert response.status_code == 400, (bad, response.text)
        assert response.json()["error"]["message"]
    assert svc.head("default") == before
    dry = httpx.post(endpoint, headers=admin, json={"format": "okf", "files": files, "dry_run": True}).json()
    assert dry["commit"] is None and dry["counts"]["added"] == 6 and svc.head("default") == before
    done = httpx.post(endpoint, headers=admin, json={"format": "okf", "files": files})
    assert done.status_code == 200 and done.json()["counts"]["added"] == 6
    info = svc.log("default", limit=1)[0]
    assert (info.id, info.action, info.actor) == (done.json()["commit"], "import", "ada")
    again = httpx.post(endpoint, headers=admin, json={"format": "okf", "files": files}).json()
    assert again["commit"] is None and again["counts"]["skipped"] == 6
    fsck("default")


def test_a_symbolic_link_out_of_the_folder_is_not_followed(svc: MemoryService, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "team-b").mkdir(parents=True)
    (outside / "notes.md").write_text("---\ntitle: other\n---\nThe other team's staging runs on db-7\n")
    (outside / "team-b" / "plan.md").write_text("---\ntitle: plan\n---\nTeam B ships the rewrite in May\n")
    (outside / "memories.json").write_text(json.dumps([{"id": "x", "memory": "Deploys need the VPN"}]))
    source = tmp_path / "notes"
    shutil.copytree(DATA / "basic-memory", source)
    (source / "leak.md").symlink_to(outside / "notes.md")
    (source / "team-b").symlink_to(outside / "team-b", target_is_directory=True)
    (source / "alias.md").symlink_to(source / "notes" / "authentication-design.md")  # inside: followed

    files = svc.import_source("basic-memory", source)
    report = svc.import_memories("default", "basic-memory", files, actor="ana")
    refused = {i.label: i.reason for i in report.items if i.outcome == "refused"}
    assert refused == {"leak.md": "a symbolic link to outside the folder: not followed"}
    texts = " ".join(m.text for m in svc.list("default", limit=100))
    assert "db-7" not in texts and "Team B" not in texts
    assert "alias.md" in {i.label for i in report.items if i.outcome != "refused"}

    mem0 = tmp_path / "mem0"
    mem0.mkdir()
    (mem0 / "memories.json").symlink_to(outside / "memories.json")
    files = svc.import_source("mem0", mem0)
    assert files == {"memories.json": "\x00outside"}
    report = svc.import_memories("default", "mem0", files, actor="ana")
    assert [(i.outcome, i.reason) for i in report.items] == [
        ("refused", "a symbolic link to outside the folder: not followed")]
    assert "VPN" not in " ".join(m.text for m in svc.list("default", limit=100))


def test_an_item_edited_in_the_source_is_imported_again_and_the_rest_skipped(svc: MemoryService) -> None:
    def source(deploys: str) -> dict[str, str]:
        return {"memories.json": json.dumps([{"id": "a", "memory": "Uses pnpm for JavaScript projects"},
                                             {"id": "b", "memory": f"Deploys happen on {deploys}"}])}

    first = svc.import_memories("default", "mem0", source("Tuesdays"), actor="ana")
    assert [i.outcome for i in first.items] == ["added", "added"]
    again = svc.import_memories("default", "mem0", source("Tuesdays"), actor="ana")
    assert [i.outcome for i in again.items] == ["skipped", "skipped"] and again.commit is None
    edited = svc.import_memories("default", "mem0", source("Thursdays"), actor="ana")
    assert [(i.label, i.outcome) for i in edited.items] == [("memories.json#a", "skipped"),
                                                            ("memories.json#b", "added")]
    assert "Deploys happen on Thursdays" in {m.text for m in svc.list("default")}
def test_alias_bombs_and_deep_nesting_in_a_source_are_refused_item_by_item(
        served: tuple[str, MemoryService], settings: Settings) -> None:
    """Issue 23, items 1 and 12: each such file is one refused item; the rest is imported, no 500."""
    from .test_safeparse import bomb

    url, svc = served
    admin = {"Authorization": f"Bearer {KeyStore(settings.home).create('default', 'admin', name='ada')[0]}"}
    files = {
        "fact/good.md": "---\ntype: fact\ntitle: Good\n---\n\nThe build runs on Fridays\n",
        "fact/bomb.md": f"---\ntype: fact\n{bomb(9)}---\n\nExpanded it would be huge\n",
        "fact/deep.md": "---\ntype: fact\ntags: " + "[" * 3000 + "]" * 3000 + "\n---\n\nDeep\n",
        "fact/deep900.md": "---\ntype: fact\ntags: " + "[" * 900 + "]" * 900 + "\n---\n\nDeep\n",
        ".meta/weights.json": "{\"entries\": " + "[" * 3000 + "]" * 3000 + "}",
    }
    for fmt in ("okf", "basic-memory"):
        response = httpx.post(f"{url}/api/v1/namespaces/default/import", headers=admin,
                              json={"format": fmt, "files": files, "dry_run": True})
        assert response.status_code == 200, response.text
        items = {item["label"]: item for item in response.json()["items"]}
        assert items["fact/good.md"]["outcome"] == "added"
        assert "no anchors or aliases" in items["fact/bomb.md"]["reason"]
        assert items["fact/deep.md"]["outcome"] == items["fact/deep900.md"]["outcome"] == "refused"
        if fmt == "okf":
            assert "more than 20 deep" in items[".meta/weights.json"]["reason"]
def test_a_dry_run_into_a_new_namespace_reports_what_the_import_would_do(gitmem: Run, settings: Settings,
                                                                        fsck: Callable[[str], None]) -> None:
    gitmem("init")
    dry = run_import(gitmem, "okf", "--dry-run", "-n", "newns")
    assert dry["dry_run"] is True and dry["new_namespace"] is True and dry["commit"] is None
    assert dry["counts"]["added"] == 6 and dry["counts"]["refused"] == 2
    assert not (settings.repos_dir / "newns.git").exists() and not (settings.state_dir / "newns").exists()
    human = gitmem("import", "okf", str(DATA / "okf"), "--dry-run", "-n", "newns").stdout
    assert human.startswith("would import 8 okf items into newns (a new namespace it would create): 6 added")
    real = run_import(gitmem, "okf", "-n", "newns")
    assert real["new_namespace"] is True and real["commit"]
    assert [(i["label"], i["outcome"], i["reason"]) for i in dry["items"]] == \
        [(i["label"], i["outcome"], i["reason"]) for i in real["items"]]
    assert run_import(gitmem, "okf", "-n", "newns", "--dry-run")["new_namespace"] is False
    fsck("newns")


def test_the_api_imports_into_a_new_namespace_and_names_no_cli_command(served: tuple[str, MemoryService],
                                                                      settings: Settings) -> None:
    url, svc = served
    store = KeyStore(settings.home)
    admin = {"Authorization": f"Bearer {store.create('*', 'admin', name='ada')[0]}"}
    writer = {"Authorization": f"Bearer {store.create('*', 'writer', name='wes')[0]}"}
    files = {str(p.relative_to(DATA / "mem0")): p.read_text() for p in (DATA / "mem0").rglob("*.json")}
    endpoint = f"{url}/api/v1/namespaces/newns/import"
    missing = httpx.get(f"{url}/api/v1/namespaces/newns", headers=admin)
    assert missing.status_code == 404
    message = missing.json()["error"]["message"]
    assert "POST /api/v1/namespaces" in message and "gitmem" not in message
    assert httpx.post(endpoint, headers=writer, json={"format": "mem0", "files": files}).status_code == 403
    dry = httpx.post(endpoint, headers=admin, json={"format": "mem0", "files": files, "dry_run": True})
    assert dry.status_code == 200, dry.text
    assert dry.json()["new_namespace"] is True and dry.json()["counts"]["added"] == 3
    assert not svc.exists("newns")
    done = httpx.post(endpoint, headers=admin, json={"format": "mem0", "files": files})
    assert done.status_code == 200 and done.json()["new_namespace"] is True and done.json()["counts"]["added"] == 3
    assert svc.exists("newns") and svc.log("newns", limit=1)[0].actor == "ada"


def test_okf_techchoices_as_pi_okf_memory_writes_them(gitmem: Run, settings: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "okf" / "techchoice"
    folder.mkdir(parents=True)
    head = ("---\ntype: TechChoice\ntitle: {}\n---\n\n## Options\n\n"
            "| 候选 | 说明 | 配置要点 | 状态 |\n|---|---|---|---|\n")
    # The active one named by its status alone; a cell pi-okf-memory quoted as a JSON string.
    (folder / "包管理器.md").write_text(head.format("包管理器") + '| pnpm | "快: 省磁盘" | .npmrc | active |\n'
                                        "| npm | 自带 |  | candidate |\n")
    (folder / "数据库.md").write_text(head.format("数据库") + "| MySQL | 鼎赞 SaaS | - | active |\n\n"
                                      "## Active\n\n- 当前使用:MySQL\n")  # one option only
    (folder / "队列.md").write_text(head.format("队列") + "| Redis | 已有 | | candidate |\n"
                                    "| RabbitMQ | 可靠 | | candidate |\n")  # none in use
    report = run_import(gitmem, "okf", source=tmp_path / "okf")
    items = by_label(report)
    got = memories(settings)
    npm = got["包管理器"]
    assert npm.type == "techchoice" and npm.active == "pnpm"
    assert [(o.name, o.description, o.config, o.status) for o in npm.options] == [
        ("pnpm", "快: 省磁盘", ".npmrc", ""), ("npm", "自带", "", "candidate")]
    assert got["数据库"].type == "decision" and "fewer than 2 options" in items["techchoice/数据库.md"]["note"]
    assert got["队列"].type == "decision" and "no active option" in items["techchoice/队列.md"]["note"]
    assert "| 候选 |" in got["队列"].text  # a decision keeps its text as it was
