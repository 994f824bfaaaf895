"""Secrets never reach git: the scanner, and every write path that refuses what it finds."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitmem import personaldata, secretscan
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


# Just over the line each check draws, with the kind found; and just short of it, found nowhere.
AT_THE_EDGE = {
    "API_KEY=⟦a1b2c3d4⟧": "secret key or token",  # 8 characters, 3 bits a character: the least a secret has
    "API_KEY=⟦AbCdEfGhIjKlMnOpQrSt⟧": "secret key or token",  # 20 letters in both cases need no digit
    "API_KEY=⟦AbCdEfGhIjKlMnOpQrStU⟧": "secret key or token",  # nor do more
    "DB_PASSWORD=⟦Hunter2x⟧": "password",
    "machine h login u password ⟦ab1!⟧": "netrc password",
    "card ⟦4222222222222⟧ ok": "payment card number",  # 13 digits
    "card ⟦4000000000000000006⟧ ok": "payment card number",  # 19 digits
    "card ⟦4111-1111-1111-1111⟧ ok": "payment card number",
    "身份证 ⟦11010519491231002x⟧": "Chinese resident id number",
    # Passes Luhn and starts as a Visa does too: one finding, the first kind's.
    "身份证 ⟦440305199001010149⟧": "Chinese resident id number",
}
SHORT_OF_IT = [
    "API_KEY=a1b2c3d",  # 7 characters
    "API_KEY=AbCdEfGhIjKlMnOpQrS",  # 19 letters and no digit
    "API_KEY=abcdefghijklmnopqrst",  # one case and no digit
    "API_KEY=38475610",  # no letter
    "API_KEY=aaaa1111",  # 1 bit a character
    "API_KEY=a1b2a1b2",  # 2 bits a character: as random as a word
    "DB_PASSWORD=hunterxyz",  # letters only: a word
    "machine h login u password <your-password>",
    "machine h login u password ab1",
    "card 4111 1111-1111 1111 ok",  # two kinds of separator
    "num 1234567812345670 ok",  # passes Luhn, but no card network starts so
]


@pytest.mark.parametrize("marked", sorted(AT_THE_EDGE))
def test_a_value_just_over_a_checks_line_is_found_with_its_kind(marked: str) -> None:
    text, [secret] = unmark(marked)
    assert [(f.kind, text[f.span[0]:f.span[1]] if f.span else None) for f in secretscan.find(text)] == [
        (AT_THE_EDGE[marked], secret)]


@pytest.mark.parametrize("text", SHORT_OF_IT)
def test_a_value_just_short_of_a_checks_line_is_no_secret(text: str) -> None:
    assert secretscan.find(text) == []


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
    assert secretscan.mask(text) == (text, 0)


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


def test_secrets_of_several_kinds_on_one_line_are_each_found_with_their_kind_in_order() -> None:
    # Personal data (found after the prefixed formats) standing before them keeps its place and kind.
    text = ("card 4111 1111 1111 1111 and sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH, ssn 536-90-4399\n"
            "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB then AKIA2E0A8F3B244C9986 then the password is hunter2!x")
    found = secretscan.find(text)
    assert [(f.kind, f.line, f.span) for f in found] == [
        ("payment card number", 1, (5, 24)), ("OpenAI key", 1, (29, 81)), ("US Social Security number", 1, (87, 98)),
        ("GitHub Token", 2, (0, 42)), ("AWS Access Key", 2, (48, 68)), ("password", 2, (90, 99))]
    assert secretscan.mask(text) == (
        "card [secret removed] and [secret removed], ssn [secret removed]\n"
        "[secret removed] then [secret removed] then the password is [secret removed]", 6)
    with pytest.raises(PersonalDataFound) as caught:
        secretscan.refuse(text, what="the note")
    assert str(caught.value).startswith("the note carries what looks like a payment card number on line 1; ")
    assert caught.value.kinds == ("payment card number", "OpenAI key", "US Social Security number", "GitHub Token",
                                  "AWS Access Key", "password")


@pytest.mark.parametrize(("text", "kinds"), [
    # The first detector's find ends where the second's begins: neither hides the other.
    ("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sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH",
     [("Google OAuth client secret", (0, 35)), ("Anthropic key", (35, 92))]),
    ("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xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx",
     [("Google OAuth client secret", (0, 35)), ("Slack token", (35, 91))]),
])
def test_two_secrets_glued_together_are_each_found(text: str, kinds: list[tuple[str, tuple[int, int]]]) -> None:
    assert [(f.kind, f.span) for f in secretscan.find(text)] == kinds
    assert secretscan.mask(text) == ("[secret removed][secret removed]", 2)


JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
       ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")


@pytest.mark.parametrize(("text", "masked"), [
    # detect-secrets names a JWT by its first two parts and a GitHub token by its prefix: the whole
    # token around them goes, from the line's first character or up to its last.
    (f"id_token={JWT} came back", "[secret removed] came back"),
    (f"https://app.example/cb#id_token={JWT}&state=x", "https://app.example/cb#[secret removed]&state=x"),
    ("x" * 300 + " ghp_1234567890abcdefghijklmnopqrstuvwxyzAB", "x" * 300 + " [secret removed]"),
    ("gho_16C7e42F292c6912E7710c838347Ae178B4a", "[secret removed]"),
])
def test_a_token_a_detector_names_by_a_part_is_masked_whole(text: str, masked: str) -> None:
    assert secretscan.mask(text) == (masked, 1)


@pytest.mark.parametrize(("text", "masked"), [
    # detect-secrets stops a quoted value at an escaped quote in it: the rest of the value goes too.
    ('password = "abc\\"def12345"', 'password = "[secret removed]"'),
    ("password = 'abc\\'def12345' # staging", "password = '[secret removed]' # staging"),
    ('secret: "x\\"y z 12345" and "more"', 'secret: "[secret removed]" and "more"'),
    ('pwd = "Hunter2\\"x\\"y" then', 'pwd = "[secret removed]" then'),
    ('password = "abc\\"def12345', 'password = "[secret removed]'),  # never closed: to the line's end
])
def test_a_quoted_secret_with_an_escaped_quote_is_masked_whole(text: str, masked: str) -> None:
    assert secretscan.mask(text) == (masked, 1)


def test_a_secret_that_cannot_be_located_in_its_line_masks_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A detector whose value is not the line's own text (none of today's): the whole line goes, nothing leaks."""

    @dataclass
    class Reported:
        type: str
        secret_value: str

    def scan(line: str) -> list[Reported]:
        return [Reported("Odd Token", "decoded-value")] if "odd" in line else []

    secretscan._scanned.cache_clear()
    monkeypatch.setattr(secretscan, "_scan_line", scan)
    try:
        text = ("first line\nsecond\nthird\nAIzaSyA1234567890abcdefghijklmnopqrstuv, an odd one\n"
                "last 536-90-4399 line")
        # The finding without a place comes first on its line.
        assert [(f.kind, f.line, f.span) for f in secretscan.find(text)] == [
            ("Odd Token", 4, None), ("Google API key", 4, (0, 39)), ("US Social Security number", 5, (5, 16))]
        assert secretscan.mask(text) == (
            "first line\nsecond\nthird\n[secret removed]\nlast [secret removed] line", 3)
        with pytest.raises(SecretFound, match="^text carries what looks like an Odd Token on line 4; "):
            secretscan.refuse(text)
    finally:
        secretscan._scanned.cache_clear()


def test_a_refusal_names_what_carried_the_secret_and_a_line_only_in_several() -> None:
    with pytest.raises(SecretFound) as caught:
        secretscan.refuse("deploy key AKIA2E0A8F3B244C9986", what="title")
    assert str(caught.value) == (
        "title carries what looks like an AWS Access Key; gitmem refuses it, because git history keeps it forever: "
        "remove the secret (say where it lives instead, e.g. 'the key is in the DEPLOY_KEY variable') and try again")
    assert caught.value.kinds == ("AWS Access Key",)
    assert not isinstance(caught.value, PersonalDataFound)
    secretscan.refuse("no secret here\nnor here")


def test_a_six_character_password_is_a_password_and_five_are_not() -> None:
    assert [(f.kind, f.span) for f in secretscan.find("the wifi password is p4ss!x")] == [("password", (21, 27))]
    assert secretscan.find("the wifi password is p4ss!") == []


def test_a_private_key_is_masked_from_its_begin_line_to_its_end_line() -> None:
    text = ("deploy with this key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAA\n"
            "QyNTUxOQAAACDK4p8ZqvQ3s\n-----END OPENSSH PRIVATE KEY-----\nthen log out")
    masked, count = secretscan.mask(text)
    assert masked == "deploy with this key:\n" + "[secret removed]\n" * 4 + "then log out"
    assert count == 4


def test_a_key_begun_on_the_line_where_another_ends_is_masked_whole() -> None:
    # Two keys pasted one after the other, the line break between them lost.
    text = ("keys:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\n"
            "-----END RSA PRIVATE KEY----------BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpY\n"
            "-----END EC PRIVATE KEY-----\n-----BEGIN DSA PRIVATE KEY----- x -----END DSA PRIVATE KEY-----\n"
            "-----BEGIN DSA PRIVATE KEY----- y -----END DSA PRIVATE KEY----- -----BEGIN EC PRIVATE KEY-----\n"
            "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpY\n-----END EC PRIVATE KEY-----\nthe end")
    assert [f.line for f in secretscan.find(text)] == [2, 3, 4, 5, 6, 7, 8, 8, 9, 10]
    masked, count = secretscan.mask(text)
    assert masked == ("keys:\n" + "[secret removed]\n" * 5 + "[secret removed] x -----END DSA PRIVATE KEY-----\n"
                      "[secret removed] y -----END DSA PRIVATE KEY----- [secret removed]\n"
                      + "[secret removed]\n" * 2 + "the end")
    assert count == 10


@pytest.mark.parametrize("name", sorted(PERSONAL))
def test_personal_data_is_found_masked_and_refused(name: str) -> None:
    marked, kind = PERSONAL[name]
    text, _ = unmark(marked)
    assert [(f.kind, f.personal) for f in secretscan.find(text)] == [(kind, True)]
    assert secretscan.mask(text) == (MARK.sub("[secret removed]", marked), 1)
    with pytest.raises(PersonalDataFound, match=f"looks like an? {kind}; gitmem refuses personal data") as caught:
        secretscan.refuse(text)
    assert caught.value.kinds == (kind,)


@pytest.mark.parametrize(("line", "found"), [
    # An 18-digit resident id that passes Luhn and starts as a Visa does is one finding, not two.
    ("身份证 440305199001010149", [("Chinese resident id number", (4, 22))]),
    # One that fails its check does not stop the next one on the line being found.
    ("SSN 000-12-3456 or 536-90-4399, card 4111111111111112 or 4111 1111 1111 1111",
     [("US Social Security number", (19, 30)), ("payment card number", (57, 76))]),
    ("IBAN DE89370400440532013000 and SSN 536-90-4399",
     [("US Social Security number", (36, 47)), ("IBAN", (5, 27))]),
])
def test_personal_data_in_a_line_each_once_with_its_kind_and_place(line: str,
                                                                   found: list[tuple[str, tuple[int, int]]]) -> None:
    assert list(personaldata.find(line)) == found


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
