"""With a broker configured, "Run it" queues consolidation for a real `gitmem worker` (on Redis).

The worker runs in its own process with the same Slack settings, so the review message it posts
through the ``gitmem.notifiers`` entry point reaches the same fake Slack Web API.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from gitmem.service import MemoryService
from gitmem.settings import Settings
from tests.bots.conftest import REVIEW_CHANNEL, REVIEWER, Slack, slack_settings
from tests.bots.test_reviews import RELATED, installed
from tests.fakes.slack_api import FakeSlack
from tests.test_tasks import REDIS, redis_up, result_of, worker


@pytest.fixture
def settings(tmp_path: Path, fake_slack: FakeSlack) -> Settings:
    if not redis_up():
        pytest.skip("Redis is not running at 127.0.0.1:6379")
    return slack_settings(tmp_path / "home", fake_slack).with_(
        broker_url=REDIS, celery_queue=f"gitmem-test-{uuid.uuid4().hex[:8]}")


def test_run_it_queues_consolidation_and_the_worker_posts_the_review(
        slack: Slack, svc: MemoryService, settings: Settings, tmp_path: Path) -> None:
    for text in RELATED:
        svc.remember("default", text, source="agent")
    slack.command("consolidate")
    slack.press(slack.last("respond"), "gitmem_consolidate_run")
    queued = slack.last("respond")
    assert "is queued (task `" in queued.text and f"<#{REVIEW_CHANNEL}>" in queued.text
    assert svc.reviews.list("default") == []  # the web process did not run it
    task_id = queued.text.split("task `", 1)[1].split("`", 1)[0]
    log = tmp_path / "worker.log"
    with worker(settings, log, SLACK_BOT_TOKEN=str(settings.slack_bot_token),
                SLACK_SIGNING_SECRET=str(settings.slack_signing_secret),
                GITMEM_SLACK_API_URL=str(settings.slack_api_url),
                GITMEM_SLACK_REVIEW_CHANNEL=REVIEW_CHANNEL, GITMEM_SLACK_REVIEWERS=REVIEWER):
        result = result_of(settings, task_id)
    assert result["review"] == 1, log.read_text(errors="replace")
    assert [r.status for r in svc.reviews.list("default")] == ["open"]
    if not installed():
        pytest.skip("the gitmem.notifiers entry point is not installed here (pip install -e .)")
    (posted,) = [c for c in slack.calls("chat.postMessage") if c.args["channel"] == REVIEW_CHANNEL]
    assert "consolidated 2 memories into 1, review #1" in posted.text
    (copy,) = [c for c in slack.calls("chat.postMessage") if c.args["channel"] == REVIEWER]  # the one to decide in
    slack.press(copy, "gitmem_review_approve", user=REVIEWER)
    assert svc.reviews.get("default", 1).status == "merged"
    assert "Approved by" in slack.last("chat.update").text
