"""Secrets never reach git: the scanner, and every write path that refuses what it finds."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem import secretscan
from gitmem.errors import PersonalDataFound, SecretFound
from gitmem.memories import Candidate
from gitmem.service import MemoryService
from tests.secret_formats import FORMATS, KINDS, MARK, unmark

Fsck = Callable[[str], None]


SECRETS = {
    "AWS": "the deploy user's key is AKIAIOSFODNN7EXAMPLE",
    "GitHub": "CI pushes with ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
    "Slack": "bot token xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx",
    "OpenAI": "use sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH for the evals",
    "Google": "maps key AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "URL": "reports read postgres://admin:s3cretpass@db.internal:5432/app",
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
    # Names of secrets with no secret given: placeholders, variables, types, code.
    "Set API_KEY=your-api-key-here in .env",
    "token: string; password: string",
    "export OPENAI_API_KEY=$OPENAI_API_KEY",
    "const apiKey = process.env.API_KEY",
    "api_key = os.environ[\"API_KEY\"]",
    "secret_key = settings.SECRET_KEY",
    "token = get_token(user_id)",
    "access_token: str = Field(...)",
    "API_KEY=\"<your key>\"",
    "API_KEY=<your-api-key-2024>",
    "SECRET_KEY=%DJANGO_SECRET_2%",
    "password: ${DB_PASSWORD_1}",
    "export GITHUB_TOKEN=$GH_TOKEN_2",
    "PASSWORD=DB_PASSWORD_FILE",
    "Authorization: Bearer <token>",
    "TOKENIZER=bert-base-uncased2",
    "token_limit=8192tokens and max_tokens=1000000",
    "the password is stored in Vault",
    "the password for staging is in 1Password",
    "the password is at least 12 characters",
    "passwordless login is on",
    "docker run -p 8080:80 nginx",
    # Numbers with the shape of personal data that fail its check: Luhn, mod-97, reserved ranges.
    "Build 4111111111111112 failed",
    "order 1234567890123456 shipped",
    "call 555-123-4567 on 2024-01-15",
    "timestamp 1700000000000 ms",
    "SSN placeholder 000-12-3456 and 078-05-1120",
    "resident id 110105194912310021 (wrong check digit)",
    "IBAN GB82 WEST 1234 5698 7654 33 (wrong check digits)",
]

# Personal data, each valid as its issuer checks it, with the kind the scanner names.
PERSONAL = {
    "US SSN": ("her SSN is ⟦536-90-4399⟧", "US Social Security number"),
    "Chinese resident id": ("身份证号 ⟦11010519491231002X⟧", "Chinese resident id number"),
    "Visa card": ("card ⟦4111 1111 1111 1111⟧ exp 12/30", "payment card number"),
    "Mastercard": ("paid with ⟦5555555555554444⟧", "payment card number"),
    "Amex card": ("amex ⟦3782-822463-10005⟧", "payment card number"),
    "IBAN, grouped": ("wire to ⟦GB82 WEST 1234 5698 7654 32⟧", "IBAN"),
    "IBAN, compact": ("Konto ⟦DE89370400440532013000⟧", "IBAN"),
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_format_is_found_with_its_kind_and_masked_exactly(name: str) -> None:
    text, secrets = unmark(FORMATS[name])
    assert tuple(f.kind for f in secretscan.find(text)) == KINDS[name]
    masked, count = secretscan.mask(text)
    # Exactly the secrets are replaced: nothing of them is left, nothing around them is lost.
    assert masked == MARK.sub("[secret removed]", FORMATS[name])
    assert count == len(secrets)
    assert secretscan.find(masked) == []


@pytest.mark.parametrize("text", HARMLESS)
def test_prose_about_secrets_is_not_a_secret(text: str) -> None:
    assert secretscan.find(text) == []


def test_the_5064_rules_statements_hold_no_false_alarm() -> None:
    path = Path(__file__).parent / "data" / "cursorrules.jsonl"
    texts = [json.loads(line)["text"] for line in path.read_text().splitlines()]
    assert len(texts) == 5064
    assert [t for t in texts if secretscan.find(t)] == []


def test_the_other_test_data_holds_only_its_planted_secret() -> None:
    data = Path(__file__).parent / "data"
    flagged = {(str(p.relative_to(data)), f.kind, f.line) for p in sorted(data.rglob("*"))
               if p.is_file() and p.name != "cursorrules.jsonl" and p.suffix in {".json", ".md", ".txt"}
               for f in secretscan.find(p.read_text())}
    # The okf import set carries one password on purpose: the import refuses that note.
    assert flagged == {("import/okf/method/部署.md", "password", 7)}


def test_every_secret_on_a_line_is_masked_back_to_front() -> None:
    text = "old AKIA2E0A8F3B244C9986 new AKIA3F1B9G4C355D0A97, and ghp_1234567890abcdefghijklmnopqrstuvwxyzAB too"
    found = secretscan.find(text)
    assert [(f.kind, f.span) for f in found] == [("AWS Access Key", (4, 24)), ("AWS Access Key", (29, 49)),
                                                  ("GitHub Token", (55, 97))]
    assert secretscan.mask(text) == ("old [secret removed] new [secret removed], and [secret removed] too", 3)


def test_a_six_character_password_is_a_password_and_five_are_not() -> None:
    assert [(f.kind, f.span) for f in secretscan.find("the wifi password is p4ss!x")] == [("password", (21, 27))]
    assert secretscan.find("the wifi password is p4ss!") == []


def test_a_private_key_is_masked_from_its_begin_line_to_its_end_line() -> None:
    text = ("deploy with this key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAA\n"
            "QyNTUxOQAAACDK4p8ZqvQ3s\n-----END OPENSSH PRIVATE KEY-----\nthen log out")
    masked, count = secretscan.mask(text)
    assert masked == "deploy with this key:\n" + "[secret removed]\n" * 4 + "then log out"
    assert count == 4


@pytest.mark.parametrize("name", sorted(PERSONAL))
def test_personal_data_is_found_masked_and_refused(name: str) -> None:
    marked, kind = PERSONAL[name]
    text, _ = unmark(marked)
    assert [(f.kind, f.personal) for f in secretscan.find(text)] == [(kind, True)]
    assert secretscan.mask(text) == (MARK.sub("[secret removed]", marked), 1)
    with pytest.raises(PersonalDataFound, match=f"looks like an? {kind}; gitmem refuses personal data") as caught:
        secretscan.refuse(text)
    assert caught.value.kinds == (kind,)


def test_the_finding_names_the_line() -> None:
    found = secretscan.find("first line is fine\nsecond has AKIAIOSFODNN7EXAMPLE")
    assert [(f.kind, f.line) for f in found] == [("AWS Access Key", 2)]
    with pytest.raises(SecretFound, match="AWS Access Key on line 2"):
        secretscan.refuse("first line is fine\nsecond has AKIAIOSFODNN7EXAMPLE")


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
    # This interpreter, from the checkout's root: the gitmem under test, wherever the tests run
    # (a worktree or a copy has no .venv of its own, and PATH may hold no "python").
    done = subprocess.run([sys.executable, "-m", "gitmem", "remember", SECRETS["OpenAI"]], env=env,
                          cwd=Path(__file__).parents[1], capture_output=True, text=True)
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
