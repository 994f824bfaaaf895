"""Settings: every GITMEM_* variable, the GITMEM_CONFIG file, bad values refused, the several-hosts settings."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from gitmem.errors import InvalidInput
from gitmem.settings import THRESHOLDS, Settings


@pytest.mark.parametrize("name", THRESHOLDS)
@pytest.mark.parametrize("value", ["2", "-0.1", "1.0001", "nan", "inf"])
def test_a_threshold_outside_0_to_1_is_refused_by_name(name: str, value: str) -> None:
    variable = f"GITMEM_{name.upper()}"
    with pytest.raises(InvalidInput, match=f"^{variable} must be a number from 0 to 1, not"):
        Settings.from_env({variable: value})


@pytest.mark.parametrize("value", ["0", "1", "0.5"])
def test_thresholds_from_0_to_1_are_taken(value: str) -> None:
    settings = Settings.from_env({f"GITMEM_{name.upper()}": value for name in THRESHOLDS})
    assert [getattr(settings, name) for name in THRESHOLDS] == [float(value)] * len(THRESHOLDS)


def test_a_threshold_in_the_config_file_is_checked_too(tmp_path: Path) -> None:
    config = tmp_path / "gitmem.yaml"
    config.write_text("pair_threshold: 2\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="GITMEM_PAIR_THRESHOLD"):
        Settings.from_env({"GITMEM_CONFIG": str(config)})
    config.write_text("pair_threshold: [1]\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="GITMEM_PAIR_THRESHOLD"):
        Settings.from_env({"GITMEM_CONFIG": str(config)})


def test_a_settings_object_is_checked_however_it_is_made() -> None:
    with pytest.raises(InvalidInput, match="GITMEM_HIGH_SIMILARITY"):
        Settings(high_similarity=2.0)
    with pytest.raises(InvalidInput, match="GITMEM_CLUSTER_THRESHOLD"):
        Settings().with_(cluster_threshold=-1.0)


def test_state_can_live_apart_from_the_shared_home(tmp_path: Path) -> None:
    shared = Settings.from_env({"GITMEM_HOME": str(tmp_path / "home")})
    assert shared.state_dir == tmp_path / "home" / "state"
    local = Settings.from_env({"GITMEM_HOME": str(tmp_path / "home"), "GITMEM_STATE_HOME": str(tmp_path / "local")})
    assert local.state_dir == tmp_path / "local" and local.repos_dir == tmp_path / "home" / "repos"
    assert Settings.from_env({"GITMEM_STATE_HOME": ""}).state_home is None


def test_hosts_share_the_redis_broker_unless_told_another_redis() -> None:
    assert Settings.from_env({}).shared_redis_url is None
    assert Settings.from_env({"GITMEM_BROKER_URL": "amqp://mq//"}).shared_redis_url is None
    redis = Settings.from_env({"GITMEM_BROKER_URL": "redis://r:6379/0", "GITMEM_LOCK_LEASE_SECONDS": "90"})
    assert redis.shared_redis_url == "redis://r:6379/0" and redis.lock_lease_seconds == 90.0
    both = Settings.from_env({"GITMEM_BROKER_URL": "amqp://mq//", "GITMEM_REDIS_URL": "redis://r:6379/2"})
    assert both.shared_redis_url == "redis://r:6379/2"

# Each field's variable, a value for it as the environment would hold it, and what it reads as.
VARIABLES: dict[str, tuple[str, str, Any]] = {
    "home": ("GITMEM_HOME", "~/gitmem-test-home", Path.home() / "gitmem-test-home"),
    "default_namespace": ("GITMEM_DEFAULT_NAMESPACE", "team", "team"),
    "max_text_chars": ("GITMEM_MAX_TEXT_CHARS", "2000", 2000),
    "max_title_chars": ("GITMEM_MAX_TITLE_CHARS", "120", 120),
    "high_similarity": ("GITMEM_HIGH_SIMILARITY", "0.75", 0.75),
    "cluster_threshold": ("GITMEM_CLUSTER_THRESHOLD", "0.35", 0.35),
    "pair_threshold": ("GITMEM_PAIR_THRESHOLD", "0.9", 0.9),
    "merged_max_chars": ("GITMEM_MERGED_MAX_CHARS", "300", 300),
    "consolidate_min_active": ("GITMEM_CONSOLIDATE_MIN_ACTIVE", "40", 40),
    "consolidate_interval_hours": ("GITMEM_CONSOLIDATE_INTERVAL_HOURS", "12.5", 12.5),
    "consolidate_schedule_hours": ("GITMEM_CONSOLIDATE_SCHEDULE_HOURS", "6", 6.0),
    "review_max_changes": ("GITMEM_REVIEW_MAX_CHANGES", "20", 20),
    "broker_url": ("GITMEM_BROKER_URL", "redis://127.0.0.1:6379/3", "redis://127.0.0.1:6379/3"),
    "result_backend": ("GITMEM_RESULT_BACKEND", "redis://127.0.0.1:6379/4", "redis://127.0.0.1:6379/4"),
    "llm_base_url": ("GITMEM_LLM_BASE_URL", "http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"),
    "llm_model": ("GITMEM_LLM_MODEL", "qwen2.5:7b", "qwen2.5:7b"),
    "llm_api_key": ("GITMEM_LLM_API_KEY", "sk-test", "sk-test"),
    "llm_timeout": ("GITMEM_LLM_TIMEOUT", "7.5", 7.5),
    "llm_retries": ("GITMEM_LLM_RETRIES", "0", 0),
    "embeddings": ("GITMEM_EMBEDDINGS", "none", "none"),
    "embed_base_url": ("GITMEM_EMBED_BASE_URL", "http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"),
    "embed_model": ("GITMEM_EMBED_MODEL", "nomic-embed-text", "nomic-embed-text"),
    "embed_api_key": ("GITMEM_EMBED_API_KEY", "sk-embed", "sk-embed"),
    "embed_timeout": ("GITMEM_EMBED_TIMEOUT", "5", 5.0),
    "embed_retries": ("GITMEM_EMBED_RETRIES", "1", 1),
    "semantic_threshold": ("GITMEM_SEMANTIC_THRESHOLD", "0.5", 0.5),
    "semantic_neighbours": ("GITMEM_SEMANTIC_NEIGHBOURS", "12", 12),
    "semantic_duplicate": ("GITMEM_SEMANTIC_DUPLICATE", "0.9", 0.9),
    "recall_floor": ("GITMEM_RECALL_FLOOR", "0.3", 0.3),
    "secret_key": ("GITMEM_SECRET_KEY", "session-secret", "session-secret"),
    "hmac_secret": ("GITMEM_HMAC_SECRET", "hook-secret", "hook-secret"),
    "max_request_bytes": ("GITMEM_MAX_REQUEST_BYTES", "1024", 1024),
    "maintainers": ("GITMEM_MAINTAINERS", " alice, bob ,,carol ", ("alice", "bob", "carol")),
    "direct_amend_roles": ("GITMEM_DIRECT_AMEND_ROLES", "admin", ("admin",)),
    "mcp_allowed_hosts": ("GITMEM_MCP_ALLOWED_HOSTS", "memory.example.com, 10.0.0.5:8000",
                          ("memory.example.com", "10.0.0.5:8000")),
    "slack_bot_token": ("GITMEM_SLACK_BOT_TOKEN", "xoxb-1", "xoxb-1"),
    "slack_signing_secret": ("GITMEM_SLACK_SIGNING_SECRET", "signing", "signing"),
    "slack_app_token": ("GITMEM_SLACK_APP_TOKEN", "xapp-1", "xapp-1"),
    "slack_api_url": ("GITMEM_SLACK_API_URL", "http://127.0.0.1:9/api/", "http://127.0.0.1:9/api/"),
    "slack_channel_namespaces": ("GITMEM_SLACK_CHANNEL_NAMESPACES", "C1=team, C2 = ops",
                                 {"C1": "team", "C2": "ops"}),
    "slack_reviewers": ("GITMEM_SLACK_REVIEWERS", "U123,U456", ("U123", "U456")),
    "slack_review_channel": ("GITMEM_SLACK_REVIEW_CHANNEL", "CREVIEWS", "CREVIEWS"),
    "public_url": ("GITMEM_PUBLIC_URL", "https://gitmem.example.com", "https://gitmem.example.com"),
    "celery_queue": ("GITMEM_CELERY_QUEUE", "gitmem-staging", "gitmem-staging"),
    "state_home": ("GITMEM_STATE_HOME", "~/gitmem-test-state", Path.home() / "gitmem-test-state"),
    "broker_visibility_timeout": ("GITMEM_BROKER_VISIBILITY_TIMEOUT", "120", 120.0),
    "redis_url": ("GITMEM_REDIS_URL", "redis://127.0.0.1:6379/5", "redis://127.0.0.1:6379/5"),
    "lock_lease_seconds": ("GITMEM_LOCK_LEASE_SECONDS", "30", 30.0),
    "maintain_schedule_hours": ("GITMEM_MAINTAIN_SCHEDULE_HOURS", "12", 12.0),
    "mirror_credentials": ("GITMEM_MIRROR_CREDENTIALS", "github.com=ghp_x, gitlab.example.com=oauth2:glpat",
                           {"github.com": "ghp_x", "gitlab.example.com": "oauth2:glpat"}),
    "mirror_retry_seconds": ("GITMEM_MIRROR_RETRY_SECONDS", "30", 30.0),
    "ingest_flush_tokens": ("GITMEM_INGEST_FLUSH_TOKENS", "500", 500),
    "ingest_idle_seconds": ("GITMEM_INGEST_IDLE_SECONDS", "60", 60.0),
    "ingest_claim_seconds": ("GITMEM_INGEST_CLAIM_SECONDS", "120", 120.0),
    "ingest_retry_seconds": ("GITMEM_INGEST_RETRY_SECONDS", "5", 5.0),
}


def test_this_test_knows_every_setting() -> None:
    assert set(VARIABLES) == {f.name for f in fields(Settings)}


def test_nothing_set_gives_the_defaults(tmp_path: Path) -> None:
    assert Settings.from_env({}) == Settings()
    assert Settings.from_env({"GITMEM_HOME": str(tmp_path)}) == Settings(home=tmp_path)


@pytest.mark.parametrize("name", sorted(VARIABLES))
def test_each_variable_is_read_into_its_setting(name: str) -> None:
    variable, raw, expected = VARIABLES[name]
    settings = Settings.from_env({variable: raw})
    assert getattr(settings, name) == expected
    assert type(getattr(settings, name)) is type(expected)
    # Everything else keeps its default.
    assert settings == Settings().with_(**{name: expected})


def test_all_variables_at_once() -> None:
    settings = Settings.from_env({variable: raw for variable, raw, _ in VARIABLES.values()})
    assert {name: getattr(settings, name) for name in VARIABLES} == {n: v[2] for n, v in VARIABLES.items()}


@pytest.mark.parametrize("name", ["slack_bot_token", "slack_signing_secret", "slack_app_token",
                                  "slack_api_url", "slack_channel_namespaces", "slack_reviewers",
                                  "slack_review_channel"])
def test_slack_settings_also_come_from_slacks_own_names(name: str) -> None:
    variable, raw, expected = VARIABLES[name]
    assert getattr(Settings.from_env({variable.removeprefix("GITMEM_"): raw}), name) == expected


def test_an_empty_variable_unsets_an_optional_setting() -> None:
    settings = Settings.from_env({"GITMEM_BROKER_URL": "", "GITMEM_LLM_BASE_URL": "", "GITMEM_HMAC_SECRET": ""})
    assert (settings.broker_url, settings.llm_base_url, settings.hmac_secret) == (None, None, None)


def test_variables_without_the_prefix_or_unknown_are_ignored() -> None:
    assert Settings.from_env({"MAX_TEXT_CHARS": "5", "GITMEM_NO_SUCH_SETTING": "x", "HOME_DIR": "/x"}) == Settings()


@pytest.mark.parametrize(("variable", "raw", "message"), [
    ("GITMEM_MAX_TEXT_CHARS", "lots", "setting max_text_chars: cannot read 'lots'"),
    ("GITMEM_MAX_TEXT_CHARS", "4000.0", "setting max_text_chars: cannot read '4000.0'"),
    ("GITMEM_LLM_RETRIES", "two", "setting llm_retries: cannot read 'two'"),
    ("GITMEM_HIGH_SIMILARITY", "high", "setting high_similarity: cannot read 'high'"),
    ("GITMEM_LLM_TIMEOUT", "30s", "setting llm_timeout: cannot read '30s'"),
    ("GITMEM_MAX_REQUEST_BYTES", "256KiB", "setting max_request_bytes: cannot read '256KiB'"),
])
def test_a_value_that_cannot_be_read_is_refused_naming_the_setting(variable: str, raw: str, message: str) -> None:
    with pytest.raises(InvalidInput, match="^" + message.replace("(", r"\(").replace("?", r"\?")):
        Settings.from_env({variable: raw})


@pytest.mark.parametrize(("raw", "bad"), [("C1", "C1"), ("C1=team,=ops", "=ops"), ("C1=", "C1=")])
def test_a_channel_mapping_that_cannot_be_read_is_refused(raw: str, bad: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        Settings.from_env({"GITMEM_SLACK_CHANNEL_NAMESPACES": raw})
    assert str(refused.value) == (f"setting slack_channel_namespaces: cannot read {raw!r}: "
                                  f"expected KEY=VALUE pairs separated by commas, got {bad!r}")


@pytest.mark.parametrize(("variable", "raw"), [
    ("GITMEM_HIGH_SIMILARITY", "1.5"),
    ("GITMEM_HIGH_SIMILARITY", "nan"),
    ("GITMEM_CLUSTER_THRESHOLD", "-0.3"),
    ("GITMEM_MAX_TEXT_CHARS", "0"),
    ("GITMEM_LLM_RETRIES", "-1"),
    ("GITMEM_CONSOLIDATE_SCHEDULE_HOURS", "0"),
])
def test_a_value_out_of_range_is_refused(variable: str, raw: str) -> None:
    try:
        Settings.from_env({variable: raw})
    except InvalidInput:
        return
    raise AssertionError(f"{variable}={raw} was accepted")


# --- GITMEM_CONFIG -------------------------------------------------------------------------------


def config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "gitmem.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_config_file_holds_the_settings_in_lower_case(tmp_path: Path) -> None:
    path = config(tmp_path, """
home: ~/gitmem-test-home
max_text_chars: 2000
high_similarity: 0.7
consolidate_interval_hours: 6
maintainers: [alice, bob]
slack_reviewers: U1, U2
slack_channel_namespaces: {C1: team}
llm_base_url: http://127.0.0.1:11434/v1
""")
    settings = Settings.from_env({"GITMEM_CONFIG": path})
    assert settings.home == Path.home() / "gitmem-test-home"
    assert (settings.max_text_chars, settings.high_similarity, settings.consolidate_interval_hours) == (2000, 0.7, 6)
    assert settings.maintainers == ("alice", "bob") and settings.slack_reviewers == ("U1", "U2")
    assert dict(settings.slack_channel_namespaces) == {"C1": "team"}
    assert settings.llm_base_url == "http://127.0.0.1:11434/v1"
    assert settings.pair_threshold == Settings().pair_threshold


def test_the_environment_wins_over_the_config_file(tmp_path: Path) -> None:
    path = config(tmp_path, "max_text_chars: 2000\nllm_model: from-file\nhmac_secret: file-secret\n")
    settings = Settings.from_env({"GITMEM_CONFIG": path, "GITMEM_MAX_TEXT_CHARS": "3000",
                                  "GITMEM_HMAC_SECRET": ""})
    assert (settings.max_text_chars, settings.llm_model, settings.hmac_secret) == (3000, "from-file", None)


def test_an_empty_config_file_changes_nothing(tmp_path: Path) -> None:
    assert Settings.from_env({"GITMEM_CONFIG": config(tmp_path, "# nothing yet\n")}) == Settings()


@pytest.mark.parametrize(("text", "message"), [
    ("max_text_chars: [", "is not valid YAML"),
    ("- max_text_chars\n- 2000\n", "must hold a mapping of settings"),
    ("MAX_TEXT_CHARS: 2000\nmax_txt_chars: 1\n", "unknown settings MAX_TEXT_CHARS, max_txt_chars"),
    ("max_text_chars: many\n", "setting max_text_chars: cannot read 'many'"),
    ("slack_channel_namespaces: C1\n", "expected KEY=VALUE pairs"),
])
def test_a_bad_config_file_is_refused_naming_it(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        Settings.from_env({"GITMEM_CONFIG": config(tmp_path, text)})


def test_a_missing_config_file_is_refused_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.yaml"
    with pytest.raises(InvalidInput, match=f"cannot read GITMEM_CONFIG file {missing}: No such file"):
        Settings.from_env({"GITMEM_CONFIG": str(missing)})


def test_a_config_value_of_the_wrong_kind_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="home"):
        Settings.from_env({"GITMEM_CONFIG": config(tmp_path, "home: 5\n")})


def test_the_cli_reads_the_config_file_and_the_environment_over_it(tmp_path: Path) -> None:
    path = config(tmp_path, "max_text_chars: 20\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")}
    env.update(GITMEM_HOME=str(tmp_path / "home"), GITMEM_CONFIG=path)

    def remember(text: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "gitmem", "remember", text], env=env | extra,
                              capture_output=True, text=True)

    refused = remember("x" * 21)
    assert refused.returncode == 2 and "the limit is 20" in refused.stderr
    assert remember("x" * 21, GITMEM_MAX_TEXT_CHARS="30").returncode == 0
    unknown = remember("fine", GITMEM_CONFIG=config(tmp_path, "max_txt_chars: 20\n"))
    assert unknown.returncode == 2
    assert unknown.stderr == f"error: GITMEM_CONFIG file {tmp_path / 'gitmem.yaml'}: unknown settings max_txt_chars\n"


def test_the_cli_reports_a_broken_config_file_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")}
    env.update(GITMEM_HOME=str(tmp_path / "home"), GITMEM_CONFIG=config(tmp_path, "max_text_chars: [\n"))
    done = subprocess.run([sys.executable, "-m", "gitmem", "status"], env=env, capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("error: GITMEM_CONFIG file ")
    assert len(done.stderr.splitlines()) == 1, done.stderr



@pytest.mark.parametrize("url", ["gitmem.example.com", "ftp://x", "https://", "javascript:alert(1)"])
def test_a_public_url_must_be_a_web_address(url: str) -> None:
    with pytest.raises(InvalidInput, match="GITMEM_PUBLIC_URL must be the web app's http"):
        Settings.from_env({"GITMEM_PUBLIC_URL": url})
