"""Settings from the environment and the config file, and what they refuse; the several-hosts settings."""

from __future__ import annotations

from pathlib import Path

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
    assert [getattr(settings, name) for name in THRESHOLDS] == [float(value)] * 3


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
