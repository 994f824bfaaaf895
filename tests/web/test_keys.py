"""API keys: made once, stored hashed, revoked at once; the `gitmem key` commands."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from gitmem.cli import main
from gitmem.errors import InvalidInput, NotFound
from gitmem.repo import KeyStore
from gitmem.settings import Settings

from .conftest import Client


def test_a_key_is_stored_only_as_a_hash(settings: Settings) -> None:
    store = KeyStore(settings.home)
    secret, stored = store.create("default", "writer", name="ci")
    text = (settings.home / "keys.json").read_text()
    assert secret not in text and secret.split("_")[-1] not in text
    assert stat.S_IMODE((settings.home / "keys.json").stat().st_mode) == 0o600
    assert store.verify(secret) == stored
    assert store.verify(secret[:-1] + ("A" if secret[-1] != "A" else "B")) is None


def test_roles_are_ranked_and_scoped_to_a_namespace(settings: Settings) -> None:
    store = KeyStore(settings.home)
    _, reviewer = store.create("team", "reviewer")
    assert reviewer.allows("team", "writer") and reviewer.allows("team", "reviewer")
    assert not reviewer.allows("team", "admin") and not reviewer.allows("other", "reader")
    _, root = store.create("*", "admin")
    assert root.allows("anything", "admin")


def test_revoked_key_stops_working_in_a_running_app(client: Client, settings: Settings) -> None:
    store = KeyStore(settings.home)
    secret, stored = store.create("default", "reader")
    auth = {"Authorization": f"Bearer {secret}"}
    assert client.get("/api/v1/namespaces/default", headers=auth).status_code == 200
    KeyStore(settings.home).revoke(stored.id)  # another process, as `gitmem key revoke` would be
    assert client.get("/api/v1/namespaces/default", headers=auth).status_code == 401


def test_bad_key_requests(settings: Settings) -> None:
    store = KeyStore(settings.home)
    with pytest.raises(InvalidInput):
        store.create("default", "owner")
    with pytest.raises(InvalidInput):
        store.create("../etc", "reader")
    with pytest.raises(InvalidInput):
        store.create("default", "reader", name="\x00bad")
    with pytest.raises(NotFound):
        store.revoke("000000000000")


@pytest.fixture
def runner(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    from gitmem.cli import base

    monkeypatch.setenv("GITMEM_HOME", str(settings.home))
    base.settings.cache_clear()
    base.service.cache_clear()
    return CliRunner()


def test_key_commands(runner: CliRunner, settings: Settings) -> None:
    assert runner.invoke(main, ["init"]).exit_code == 0
    made = runner.invoke(main, ["key", "create", "--namespace", "default", "--role", "reviewer",
                                "--name", "dana"])
    assert made.exit_code == 0, made.output
    secret = made.stdout.strip().splitlines()[0]
    assert secret.startswith("gmk_") and "cannot be shown again" in made.stderr
    assert KeyStore(settings.home).verify(secret) is not None

    listed = runner.invoke(main, ["key", "list", "--json"])
    [entry] = json.loads(listed.stdout)
    assert entry["name"] == "dana" and entry["role"] == "reviewer" and "digest" not in entry
    assert entry["kind"] == "person"  # a key is a person's unless made with --kind agent
    assert secret not in listed.stdout

    revoked = runner.invoke(main, ["key", "revoke", entry["id"]])
    assert revoked.exit_code == 0 and KeyStore(settings.home).verify(secret) is None
    again = runner.invoke(main, ["key", "revoke", entry["id"]])
    assert again.exit_code != 0 and "no key" in again.stderr


def test_key_create_refuses_unknown_roles(runner: CliRunner, settings: Settings) -> None:
    result = runner.invoke(main, ["key", "create", "--role", "owner"])
    assert result.exit_code == 2
    assert not Path(settings.home / "keys.json").exists()


def test_a_key_for_a_namespace_that_does_not_exist_is_refused(runner: CliRunner, settings: Settings) -> None:
    assert runner.invoke(main, ["init"]).exit_code == 0
    typo = runner.invoke(main, ["key", "create", "-n", "defualt", "--role", "writer"])
    assert typo.exit_code == 3
    assert "namespace 'defualt' does not exist (there are: default)" in typo.stderr
    assert "`gitmem init --namespace defualt`" in typo.stderr and "--create" in typo.stderr
    assert KeyStore(settings.home).list() == [] and not (settings.repos_dir / "defualt.git").exists()
    made = runner.invoke(main, ["key", "create", "-n", "ops", "--create", "--role", "writer", "--json"])
    assert made.exit_code == 0, made.output
    assert json.loads(made.stdout)["namespace"] == "ops" and (settings.repos_dir / "ops.git" / "HEAD").exists()
    every = runner.invoke(main, ["key", "create", "-n", "*", "--role", "admin"])  # '*' names no repository
    assert every.exit_code == 0, every.output


def test_a_key_has_a_kind_and_writes_as_it(runner: CliRunner, settings: Settings, client: Client) -> None:
    made = runner.invoke(main, ["key", "create", "--role", "writer", "--name", "ci-claude", "--kind", "agent",
                                "--json"])
    assert made.exit_code == 0, made.output
    agent = json.loads(made.stdout)
    assert agent["kind"] == "agent"
    assert "(bot, an agent)" in runner.invoke(main, ["key", "create", "--role", "reader", "--name", "bot",
                                                    "--kind", "agent"]).stderr
    person = json.loads(runner.invoke(main, ["key", "create", "--role", "writer", "--name", "ana", "--json"]).stdout)
    assert person["kind"] == "person"
    assert runner.invoke(main, ["key", "create", "--role", "writer", "--kind", "robot"]).exit_code == 2
    # A key stored before kinds existed is a person's.
    keys = json.loads((settings.home / "keys.json").read_text())
    old = next(k for k in keys if k["id"] == person["id"])
    del old["kind"]
    (settings.home / "keys.json").write_text(json.dumps(keys))
    assert KeyStore(settings.home).get(person["id"]).kind == "person"  # type: ignore[union-attr]

    url = "/api/v1/namespaces/default/memories"
    said = client.post(url, headers={"Authorization": f"Bearer {person['key']}"},
                       json={"text": "Deploys happen on Tuesdays only"})
    told = client.post(url, headers={"Authorization": f"Bearer {agent['key']}"},
                       json={"text": "Releases are tagged vYYYY.MM.DD"})
    named = client.post(url, headers={"Authorization": f"Bearer {person['key']}"},
                        json={"text": "The CI image has node 22", "source": "agent"})
    assert said.status_code == told.status_code == named.status_code == 201
    assert said.json["memory"]["source"] == "user"  # a person's statement, never merged into another
    assert told.json["memory"]["source"] == "agent"
    assert named.json["memory"]["source"] == "agent"  # a source named in the request stands
