"""``/mem``: signed slash commands through the Flask adapter, commits in the repository, replies sent."""

from __future__ import annotations

import json

from gitmem.service import MemoryService
from tests.bots.conftest import ALICE, REVIEWER, TEAM_CHANNEL, Slack


def remember(slack: Slack, text: str, **kw: object) -> str:
    """Remember through /mem and return the new memory's id."""
    slack.command(f"remember {text}", **kw)  # type: ignore[arg-type]
    reply = slack.last("respond")
    value = json.loads(reply.blocks[-1]["elements"][0]["value"])
    return str(value["m"])


def test_remember_commits_with_the_slack_user_as_author(slack: Slack, svc: MemoryService) -> None:
    before = len(slack.commits())
    response = slack.command("remember decision: we deploy on Tuesdays")
    assert response.status_code == 200
    commits = slack.commits()
    assert len(commits) == before + 1
    head = commits[0]
    assert head.action == "remember"
    assert head.actor == f"slack:{ALICE}"
    memory = svc.show("default", head.memory_ids[0])
    assert memory.type == "decision"
    assert memory.text == "we deploy on Tuesdays"
    assert memory.source == "user"
    assert memory.author == f"slack:{ALICE}"
    reply = slack.last("respond")
    assert reply.args["response_type"] == "ephemeral"
    assert "Remembered" in reply.text and "we deploy on Tuesdays" in reply.text
    assert {e["action_id"] for e in reply.blocks[-1]["elements"]} == {
        "gitmem_confirm", "gitmem_reject", "gitmem_discuss", "gitmem_amend"}


def test_the_channel_mapping_picks_the_namespace(slack: Slack, svc: MemoryService) -> None:
    slack.command("remember the team channel writes to its own namespace", channel=TEAM_CHANNEL)
    assert svc.exists("team")
    assert slack.commits("team")[0].action == "remember"
    assert all(c.action != "remember" for c in slack.commits("default"))


def test_markup_is_stored_as_text_and_shown_escaped(slack: Slack, svc: MemoryService) -> None:
    # Slack sends &, < and > as entities; what the person typed is what gitmem keeps.
    slack.command("remember ping &lt;!channel&gt; &amp; &lt;@U999&gt; before *deploys*")
    memory = svc.show("default", slack.commits()[0].memory_ids[0])
    assert memory.text == "ping <!channel> & <@U999> before *deploys*"
    shown = slack.last("respond").text
    assert "&lt;!channel&gt; &amp; &lt;@U999&gt;" in shown
    assert "<!channel>" not in shown and "<@U999>" not in shown


def test_recall_shows_cards_with_feedback_buttons(slack: Slack) -> None:
    first = remember(slack, "the staging database is reset every night")
    remember(slack, "deploys need a green build")
    slack.command("recall staging database")
    reply = slack.last("respond")
    assert "the staging database is reset every night" in reply.text
    ids = [json.loads(b["elements"][0]["value"])["m"] for b in reply.blocks if b["type"] == "actions"]
    assert ids[0] == first


def test_recall_with_no_match_says_what_to_do(slack: Slack) -> None:
    slack.command("recall kubernetes")
    reply = slack.last("respond")
    assert reply.args["response_type"] == "ephemeral"
    assert "Nothing" in reply.text and "/mem remember" in reply.text


def test_confirm_from_recall_commits_and_redraws_the_ephemeral_message(slack: Slack, svc: MemoryService) -> None:
    memory_id = remember(slack, "use pnpm, not npm")
    slack.command("recall pnpm")
    recall = slack.last("respond")
    slack.press(recall, "gitmem_confirm", user=REVIEWER, memory_id=memory_id)
    head = slack.commits()[0]
    assert (head.action, head.actor, head.memory_ids) == ("confirm", f"slack:{REVIEWER}", (memory_id,))
    assert svc.show("default", memory_id).verified == (f"slack:{REVIEWER}",)
    redraw = slack.last("respond")
    assert redraw.path.startswith("/respond/action")
    assert redraw.args["replace_original"] is True
    assert f"<@{REVIEWER}> confirmed this" in redraw.text
    assert not slack.calls("chat.update")


def test_amend_with_text_by_a_reviewer_commits_directly(slack: Slack, svc: MemoryService) -> None:
    memory_id = remember(slack, "lunch is at noon")
    slack.command(f"amend {memory_id} lunch is at half past twelve", user=REVIEWER)
    head = slack.commits()[0]
    assert (head.action, head.actor) == ("amend", f"slack:{REVIEWER}")
    assert svc.show("default", memory_id).text == "lunch is at half past twelve"
    assert "amended this" in slack.last("respond").text


def test_amend_without_text_opens_a_modal_with_the_current_text(slack: Slack, svc: MemoryService) -> None:
    memory_id = remember(slack, "retros are on Fridays")
    before = len(slack.commits())
    slack.command(f"amend {memory_id}", user=REVIEWER)
    opened = slack.last("views.open")
    assert opened.args["trigger_id"].startswith("trigger-cmd-")
    element = opened.view["blocks"][1]["element"]
    assert element["initial_value"] == "retros are on Fridays"
    assert len(slack.commits()) == before
    slack.submit(opened, "retros are on Thursdays", user=REVIEWER)
    assert svc.show("default", memory_id).text == "retros are on Thursdays"
    assert slack.commits()[0].action == "amend"


def test_forget_archives_with_the_reason(slack: Slack, svc: MemoryService) -> None:
    memory_id = remember(slack, "the office wifi password rotates monthly")
    slack.command(f"forget {memory_id} we moved offices")
    head = slack.commits()[0]
    assert (head.action, head.actor) == ("forget", f"slack:{ALICE}")
    memory = svc.show("default", memory_id)
    assert memory.state == "archived" and memory.archived_reason == "we moved offices"
    assert "archived this" in slack.last("respond").text


def test_status_and_help(slack: Slack) -> None:
    remember(slack, "one memory to count")
    slack.command("status")
    assert "Namespace `default`" in slack.last("respond").text
    response = slack.command("help")
    assert "/mem remember" in json.dumps(response.get_json())
    response = slack.command("")
    assert "/mem recall" in json.dumps(response.get_json())


# --- bad input: an ephemeral message that says what to type, and nothing changed ----------------


def test_unknown_subcommand_says_what_to_type(slack: Slack) -> None:
    before = len(slack.commits())
    response = slack.command("rememberr this")
    assert response.status_code == 200
    body = response.get_json()
    assert "rememberr" in body["text"] and "/mem help" in body["text"]
    assert body.get("response_type", "ephemeral") == "ephemeral"
    assert len(slack.commits()) == before
    assert not slack.calls("respond")


def test_empty_text_says_what_to_type(slack: Slack) -> None:
    before = len(slack.commits())
    for text in ("remember", "remember    ", "remember decision:", "recall", "amend", "forget"):
        body = slack.command(text).get_json()
        assert "Type `/mem" in body["text"], text
    assert len(slack.commits()) == before


def test_bad_and_unknown_ids(slack: Slack) -> None:
    before = len(slack.commits())
    body = slack.command("amend not-an-id new text").get_json()
    assert "is not a memory id" in body["text"] and "/mem recall" in body["text"]
    slack.command("forget 0123456789")
    reply = slack.last("respond")
    assert reply.args["response_type"] == "ephemeral"
    assert ":warning:" in reply.text and "0123456789" in reply.text and "/mem help" in reply.text
    assert len(slack.commits()) == before


def test_text_over_the_limit_is_refused(slack: Slack) -> None:
    before = len(slack.commits())
    slack.command("remember " + "x" * 5000)
    assert "limit is 4000" in slack.last("respond").text
    assert len(slack.commits()) == before


def test_review_with_nothing_open(slack: Slack) -> None:
    slack.command("review")
    assert "No open reviews in `default`" in slack.last("respond").text


def test_recall_of_a_techchoice_shows_its_options(slack: Slack, svc: MemoryService) -> None:
    options = [{"name": "pnpm", "pros": ["fast <installs>"], "cons": ["fewer users"]},
               {"name": "npm", "pros": ["ships with node"], "cons": ["slow"]}]
    made = svc.remember("default", "Package manager for the web app", type="techchoice", options=options,
                        active="pnpm", reason="disk space", author="alice").memory
    assert made is not None
    svc.choose("default", made.id, "npm", reason="CI has only npm", actor="bob")
    slack.command("recall package manager")
    card = slack.last("respond").blocks[1]["text"]["text"]
    assert "*Options*" in card
    assert "• *pnpm*: :heavy_plus_sign: fast &lt;installs&gt;  :heavy_minus_sign: fewer users" in card
    assert "• *npm* _(active)_: :heavy_plus_sign: ships with node  :heavy_minus_sign: slow" in card
    assert "by bob: CI has only npm" in card


def test_a_techchoice_card_shows_each_options_description_configuration_and_status(slack: Slack,
                                                                                   svc: MemoryService) -> None:
    options = [{"name": "React 18 + Vite", "description": "the team knows it", "config": "vite.config.ts"},
               {"name": "Vue 3", "description": "quick to learn", "status": "candidate"}]
    svc.remember("default", "Frontend framework", type="techchoice", options=options, active="React 18 + Vite")
    slack.command("recall frontend framework")
    card = slack.last("respond").blocks[1]["text"]["text"]
    assert "• *React 18 + Vite* _(active)_: the team knows it  :gear: vite.config.ts" in card
    assert "• *Vue 3*: quick to learn  _candidate_" in card
