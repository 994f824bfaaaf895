"""The bot configured the way a deployment configures it: from the environment, with channel namespaces."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.bots.conftest import CHANNEL, SECRET, TEAM_CHANNEL, Slack
from tests.fakes.slack_api import FakeSlack

OPS_CHANNEL = "COPSCHAN01"


@pytest.fixture
def settings(tmp_path: Path, fake_slack: FakeSlack) -> Settings:
    """Overrides the bot fixtures' settings: read from variables as `gitmem serve` would read them."""
    return Settings.from_env({
        "GITMEM_HOME": str(tmp_path / "home"),
        "SLACK_BOT_TOKEN": "xoxb-test-token",
        "SLACK_SIGNING_SECRET": SECRET,
        "GITMEM_SLACK_API_URL": fake_slack.api_url,
        "GITMEM_SLACK_CHANNEL_NAMESPACES": f"{TEAM_CHANNEL}=team, {OPS_CHANNEL} = ops",
    })


def test_the_variable_maps_channels_to_namespaces(settings: Settings) -> None:
    assert dict(settings.slack_channel_namespaces) == {TEAM_CHANNEL: "team", OPS_CHANNEL: "ops"}


@pytest.mark.parametrize(("channel", "namespace"), [(TEAM_CHANNEL, "team"), (OPS_CHANNEL, "ops"),
                                                     (CHANNEL, "default")])
def test_each_channel_writes_to_its_namespace(slack: Slack, svc: MemoryService, channel: str,
                                              namespace: str) -> None:
    slack.message(f"remember: said in {channel}", channel=channel)
    [head] = [c for c in slack.commits(namespace) if c.action == "remember"]
    assert svc.show(namespace, head.memory_ids[0]).text == f"said in {channel}"
    others = {"team", "ops", "default"} - {namespace}
    assert not [n for n in others if svc.exists(n) and any(c.action == "remember" for c in slack.commits(n))]


def test_recall_in_a_mapped_channel_reads_its_namespace(slack: Slack) -> None:
    slack.command("remember the ops pager rotates on Mondays", channel=OPS_CHANNEL)
    slack.command("remember the default pager rotates on Fridays")
    slack.command("recall pager rotates", channel=OPS_CHANNEL)
    reply = slack.last("respond").text
    assert "Mondays" in reply and "Fridays" not in reply
