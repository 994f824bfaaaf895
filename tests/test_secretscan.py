"""Secrets never reach git: the scanner, and every write path that refuses what it finds."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem import secretscan
from gitmem.errors import SecretFound
from gitmem.memories import Candidate
from gitmem.service import MemoryService

Fsck = Callable[[str], None]


SECRETS = {
    "AWS": "the deploy user's key is AKIAIOSFODNN7EXAMPLE",
    "GitHub": "CI pushes with ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
    "Slack": "bot token xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx",
    "private key": "-----BEGIN OPENSSH PRIVATE KEY-----",
    "OpenAI": "use sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH for the evals",
    "Anthropic": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH",
    "Google": "maps key AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "JWT": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
           ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "URL": "reports read postgres://admin:s3cretpass@db.internal:5432/app",
    "keyword": "password = 'hunter2xyz'",
    "words": "the staging password is hunter2!",
    "Chinese": "部署密码是 Passw0rd!2024",
}

HARMLESS = [
    "we use pnpm, not npm",
    "never commit the password to the repo; it lives in 1Password",
    "passwords must be rotated every 90 days",
    "password = os.environ['DB_PASS']",
    "the password comes from ${DB_PASSWORD}",
    "commit 3f2a9c1b8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a fixed the flaky test",
    "密码要定期更换，存放在保险库里",
    "Set the timeout to 30s and retries to 3",
]


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_kind_of_secret_is_found_and_masked(name: str) -> None:
    text = SECRETS[name]
    found = secretscan.find(text)
    assert found, name
    masked, count = secretscan.mask(text)
    assert count >= 1 and "[secret removed]" in masked
    assert not secretscan.find(masked), masked


@pytest.mark.parametrize("text", HARMLESS)
def test_prose_about_secrets_is_not_a_secret(text: str) -> None:
    assert secretscan.find(text) == []


def test_the_data_sets_rules_hold_no_false_alarm() -> None:
    rules = Path(__file__).parent / "data" / "semantic_pairs.json"
    texts = [s["text"] for topic in json.loads(rules.read_text())["topics"] for s in topic["statements"]]
    assert len(texts) > 100
    assert [t for t in texts if secretscan.find(t)] == []


def test_the_finding_names_the_line() -> None:
    found = secretscan.find("first line is fine\nsecond has AKIAIOSFODNN7EXAMPLE")
    assert [(f.kind, f.line) for f in found] == [("AWS Access Key", 2)]


def test_remember_refuses_a_secret_and_writes_nothing(svc: MemoryService, fsck: Fsck) -> None:
    before = svc.head("default")
    with pytest.raises(SecretFound, match="AWS Access Key.*history keeps it forever"):
        svc.remember("default", SECRETS["AWS"])
    with pytest.raises(SecretFound, match="title carries"):
        svc.remember("default", "deploys go through the bastion", title=SECRETS["Slack"])
    assert svc.head("default") == before
    fsck()


def test_amend_and_feedback_refuse_a_secret(svc: MemoryService) -> None:
    memory = svc.remember("default", "staging lives on db-2").memory
    assert memory is not None
    before = svc.head("default")
    with pytest.raises(SecretFound):
        svc.amend("default", memory.id, text="staging lives on " + SECRETS["URL"].split()[-1])
    with pytest.raises(SecretFound):
        svc.feedback("default", memory.id, "discuss", text=SECRETS["GitHub"], actor="ana")
    assert svc.head("default") == before


def test_the_cli_says_why_and_exits_2(tmp_path: Path) -> None:
    env = {"GITMEM_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    cli = [str(Path(__file__).parents[1] / ".venv" / "bin" / "gitmem")]
    if not Path(cli[0]).exists():
        cli = ["python", "-m", "gitmem"]
    done = subprocess.run([*cli, "remember", SECRETS["OpenAI"]], env=env, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert "OpenAI key" in done.stderr and "remove the secret" in done.stderr


def test_a_batch_refuses_the_item_with_a_secret_and_keeps_the_rest(svc: MemoryService) -> None:
    result = svc.remember_many("default", [
        Candidate("we use pnpm, not npm", label="a"),
        Candidate(SECRETS["Google"], label="b"),
    ], message="import: two")
    assert [(o.label, o.outcome) for o in result.outcomes] == [("a", "added"), ("b", "refused")]
    assert "Google API key" in result.outcomes[1].reason
    assert [m.text for m in svc.list("default")] == ["we use pnpm, not npm"]
