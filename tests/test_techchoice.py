"""Technology choices: options with pros and cons, the active one, append-only choosing, never merged away."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from gitmem import concepts, techchoice
from gitmem.errors import InvalidInput
from gitmem.service import MemoryService
from gitmem.settings import Settings

from .conftest import Run, git

OPTIONS = [
    {"name": "pnpm", "pros": ["fast installs", "strict node_modules"], "cons": ["fewer users"]},
    {"name": "npm", "pros": ["ships with node"], "cons": ["slow installs"]},
]


def choice(svc: MemoryService, text: str = "Package manager for the web app", **kw: Any) -> concepts.Memory:
    kw.setdefault("options", OPTIONS)
    kw.setdefault("active", "pnpm")
    result = svc.remember("default", text, type="techchoice", author="alice", **kw)
    assert result.memory is not None
    return result.memory


def test_a_techchoice_keeps_its_options_in_okf_frontmatter_and_reads_back(svc: MemoryService,
                                                                          fsck: Callable[[str], None]) -> None:
    memory = choice(svc, reason="disk space on the CI runners")
    assert [o.name for o in memory.options] == ["pnpm", "npm"]
    assert memory.active == "pnpm"
    assert [(c.option, c.by, c.reason) for c in memory.choices] == [("pnpm", "alice", "disk space on the CI runners")]
    data = concepts.render(memory)
    front = data.decode().split("---")[1]
    # OKF v0.1: type first, then title, description, tags, timestamp; gitmem's fields after.
    assert front.lstrip().startswith("type: techchoice\ntitle: Package manager for the web app\ndescription:")
    assert concepts.parse(data, memory.path) == memory
    assert svc.show("default", memory.id) == memory  # through the index as well
    fsck("default")


def test_other_memories_files_do_not_change() -> None:
    plain = concepts.Memory(id="0123456789", type="fact", text="x", title="x", path="fact/x.md")
    assert b"options" not in concepts.render(plain)
    assert techchoice.options_table(plain) == ""


@pytest.mark.parametrize(("options", "active", "message"), [
    (None, None, "2 or more options"),
    ([OPTIONS[0]], "pnpm", "2 or more options"),
    ([OPTIONS[0], {"name": "npm", "pros": ["ships with node"]}], "pnpm", "at least one pro and one con"),
    ([OPTIONS[0], {**OPTIONS[0], "name": "PNPM "}], "pnpm", "given twice"),
    (OPTIONS, None, "active option"),
    (OPTIONS, "yarn", "not one of the options"),
    ([OPTIONS[0], "npm"], "pnpm", "object with a name"),
    ([OPTIONS[0], {**OPTIONS[1], "pros": 3}], "pnpm", "list of strings"),
    ([OPTIONS[0], {**OPTIONS[1], "score": 3}], "pnpm", "unknown option field"),
    ([OPTIONS[0], {"name": "npm", "config": "npmrc"}], "pnpm", "or a description"),
    ([OPTIONS[0], {"name": "npm", "description": "ships with node", "status": "Active"}], "pnpm", "not a status"),
    ([OPTIONS[0], {"name": "npm", "description": ["ships with node"]}], "pnpm", "must be a string"),
    ([OPTIONS[0], {"name": "npm", "description": "x", "status": "one\ntwo"}], "pnpm", "one line"),
])
def test_bad_options_are_refused_and_nothing_is_written(svc: MemoryService, options: Any, active: Any,
                                                        message: str) -> None:
    head = svc.head("default")
    with pytest.raises(InvalidInput, match=message):
        choice(svc, options=options, active=active)
    assert svc.head("default") == head


def test_options_belong_to_techchoices_only(svc: MemoryService) -> None:
    with pytest.raises(InvalidInput, match="belong to a techchoice"):
        svc.remember("default", "We use pnpm", type="decision", options=OPTIONS, active="pnpm")
    plain = svc.remember("default", "We use pnpm for the web app", type="decision").memory
    assert plain is not None
    with pytest.raises(InvalidInput, match="cannot become a techchoice"):
        svc.amend("default", plain.id, type="techchoice")


def test_choosing_is_an_append_only_commit_with_its_reason(svc: MemoryService, settings: Settings,
                                                          fsck: Callable[[str], None]) -> None:
    memory = choice(svc)
    result = svc.choose("default", memory.id, "npm", reason="the CI image only has npm", actor="bob")
    after = result.memory
    assert after is not None and result.outcome == "chosen"
    assert after.active == "npm"
    assert after.options == memory.options  # nothing dropped or rewritten
    assert after.choices[:1] == memory.choices
    assert (after.choices[-1].option, after.choices[-1].by, after.choices[-1].reason) == (
        "npm", "bob", "the CI image only has npm")
    # A new option comes with its pros and cons and is appended; the earlier ones stay.
    again = svc.choose("default", memory.id, "Yarn Berry", reason="workspaces", pros=["plug and play"],
                       cons=["another tool"], actor="carol").memory
    assert again is not None
    assert [o.name for o in again.options] == ["pnpm", "npm", "Yarn Berry"]
    assert [c.option for c in again.choices] == ["pnpm", "npm", "Yarn Berry"]
    # Choosing an earlier option adds its new pros and keeps the old ones.
    back = svc.choose("default", memory.id, "PNPM", reason="disk space again", pros=["saves disk"]).memory
    assert back is not None and back.active == "pnpm"
    assert back.options[0].pros == ("fast installs", "strict node_modules", "saves disk")
    log = svc.log("default", limit=3)
    assert [i.action for i in log] == ["choose", "choose", "choose"]
    assert log[0].summary == "choose: pnpm for Package manager for the web app"
    assert "disk space again" in log[0].message
    # Each choice touches only the memory's own file, and reverts cleanly.
    repo = settings.repos_dir / "default.git"
    assert git(repo, "show", "--name-only", "--format=", log[0].id).split() == [memory.path]
    svc.revert("default", log[0].id)
    assert svc.show("default", memory.id).active == "Yarn Berry"
    fsck("default")


@pytest.mark.parametrize(("option", "kw", "message"), [
    ("pnpm", {"reason": "again"}, "already the active option"),
    ("npm", {"reason": "  "}, "say why"),
    ("yarn", {"reason": "workspaces"}, "new option: give at least one pro and one con"),
    ("yarn", {"reason": "workspaces", "pros": ["fast"]}, "new option"),
    ("a\nb", {"reason": "x"}, "one line"),
])
def test_a_bad_choice_changes_nothing(svc: MemoryService, option: str, kw: dict[str, Any], message: str) -> None:
    memory = choice(svc)
    head = svc.head("default")
    with pytest.raises(InvalidInput, match=message):
        svc.choose("default", memory.id, option, **kw)
    assert svc.head("default") == head


def test_only_a_techchoice_with_options_can_be_chosen(svc: MemoryService) -> None:
    plain = svc.remember("default", "We deploy on Tuesdays", type="decision").memory
    assert plain is not None
    with pytest.raises(InvalidInput, match="only a techchoice"):
        svc.choose("default", plain.id, "Wednesday", reason="x", pros=["a"], cons=["b"])


def test_repeating_a_techchoice_adds_the_options_it_lacks(svc: MemoryService) -> None:
    first = choice(svc)
    more = [OPTIONS[1], {"name": "bun", "pros": ["fastest"], "cons": ["young"]}]
    result = svc.remember("default", "Package manager for the web app", type="techchoice", options=more,
                          active="bun")
    assert result.outcome == "reinforced" and result.memory is not None
    assert [o.name for o in result.memory.options] == ["pnpm", "npm", "bun"]
    assert result.memory.active == "pnpm"  # a repeat never switches the choice; `choose` does
    assert result.memory.id == first.id


def test_a_techchoice_never_reinforces_a_memory_that_cannot_hold_options(svc: MemoryService) -> None:
    plain = svc.remember("default", "Package manager for the web app", type="fact").memory
    made = choice(svc)
    assert plain is not None and made.id != plain.id and made.options


def test_consolidation_never_merges_away_an_option(svc: MemoryService) -> None:
    tech = choice(svc, "Package manager for the web app: pnpm or npm")
    # An agent's near copy and a related statement would otherwise cluster with it.
    svc.remember("default", "Package manager for the web app: pnpm or npm, we use pnpm", type="fact", source="agent")
    svc.remember("default", "The package manager of the web app is pnpm", type="fact", source="agent")
    plan = svc.plan("default")
    assert all(tech.id not in {m.id for m in c.members} for c in plan.clusters)
    svc.consolidate("default")
    for review in svc.reviews.list("default", status="open"):
        svc.reviews.approve("default", review.number, actor="rita")
    kept = svc.show("default", tech.id)
    assert kept.options == tech.options and kept.state == "active"


def test_context_and_memory_md_show_the_options_table(svc: MemoryService) -> None:
    memory = choice(svc, paths=["package.json"])
    block = svc.context("default", ["package.json"])
    assert "  | pnpm (active) | fast installs; strict node_modules | fewer users |" in block
    assert "  | npm | ships with node | slow installs |" in block
    index = svc.export("default", "memory-md")
    assert "| pnpm (active) |" in index and memory.id in index


def test_cli_remembers_chooses_and_recalls_with_the_table(gitmem: Run) -> None:
    made = json.loads(gitmem(
        "remember", "Package manager for the web app", "--type", "techchoice",
        "--option", "pnpm", "--pro", "pnpm=fast installs", "--con", "pnpm=fewer users",
        "--option", "npm", "--pro", "npm=ships with node", "--con", "npm=slow", "--active", "pnpm",
        "--reason", "disk space", "--json").stdout)
    memory_id = made["memory"]["id"]
    assert made["memory"]["options"][0] == {"name": "pnpm", "pros": ["fast installs"], "cons": ["fewer users"],
                                            "description": "", "config": "", "status": ""}
    chosen = gitmem("choose", memory_id, "npm", "--reason", "CI has only npm", "--actor", "bob")
    assert "chosen: npm" in chosen.stdout and "| npm (active) | ships with node | slow |" in chosen.stdout
    shown = gitmem("recall", "package manager").stdout
    assert "    | pnpm | fast installs | fewer users |" in shown
    assert "    | npm (active) | ships with node | slow |" in shown
    assert "Chosen npm on" in shown and "by bob: CI has only npm" in shown
    hits = json.loads(gitmem("recall", "package manager", "--json").stdout)
    assert "| npm (active) |" in hits[0]["options_table"]


@pytest.mark.parametrize(("args", "message"), [
    (("--option", "pnpm", "--pro", "yarn=fast"), "--pro 'yarn=fast'"),
    (("--option", "pnpm", "--con", "nothing"), "NAME=TEXT"),
    (("--option", "pnpm", "--pro", "pnpm=a", "--con", "pnpm=b", "--active", "pnpm"), "2 or more options"),
])
def test_cli_bad_options_exit_2_and_write_nothing(gitmem: Run, args: tuple[str, ...], message: str) -> None:
    gitmem("init")
    before = gitmem("log").stdout
    done = gitmem("remember", "Package manager", "--type", "techchoice", *args, ok=False)
    assert done.returncode == 2 and message in done.stderr
    assert gitmem("log").stdout == before


def test_cli_reads_options_from_a_notes_frontmatter(gitmem: Run) -> None:
    note = ("---\ntype: techchoice\ntitle: Frontend framework\nactive: React 18 + Vite\noptions:\n"
            "- {name: React 18 + Vite, pros: [team knows it], cons: [bundle size]}\n"
            "- {name: Vue 3, pros: [simpler], cons: [nobody knows it]}\n---\n\nThe framework of the web app.\n")
    made = json.loads(gitmem("remember", "-", "--json", input=note.encode()).stdout)
    assert made["memory"]["type"] == "techchoice" and made["memory"]["active"] == "React 18 + Vite"
    assert [o["name"] for o in made["memory"]["options"]] == ["React 18 + Vite", "Vue 3"]


# pi-okf-memory's options: what each is, how it is set up, where it stands; no pros and cons.
DESCRIBED = [
    {"name": "React 18 + Vite", "description": "the team knows it", "config": "vite.config.ts"},
    {"name": "Vue 3", "description": "quick to learn", "status": "candidate"},
]


def test_an_option_may_carry_a_description_configuration_and_status(svc: MemoryService,
                                                                    fsck: Callable[[str], None]) -> None:
    memory = choice(svc, "Frontend framework", options=DESCRIBED, active="React 18 + Vite")
    assert [(o.name, o.description, o.config, o.status) for o in memory.options] == [
        ("React 18 + Vite", "the team knows it", "vite.config.ts", ""), ("Vue 3", "quick to learn", "", "candidate")]
    data = concepts.render(memory)
    assert concepts.parse(data, memory.path) == memory and svc.show("default", memory.id) == memory
    assert "description: the team knows it" in data.decode() and "config: vite.config.ts" in data.decode()
    assert techchoice.options_table(memory).splitlines()[:4] == [
        "| option | description | configuration | status |", "| --- | --- | --- | --- |",
        "| React 18 + Vite (active) | the team knows it | vite.config.ts | - |",
        "| Vue 3 | quick to learn | - | candidate |"]
    # Chosen, an option is no longer a candidate; what it said of itself stays.
    chosen = svc.choose("default", memory.id, "Vue 3", reason="the new hires know it", config="vue.config.ts",
                        actor="bob").memory
    assert chosen is not None
    assert [(o.name, o.config, o.status) for o in chosen.options] == [
        ("React 18 + Vite", "vite.config.ts", ""), ("Vue 3", "vue.config.ts", "")]
    # A new option may come with a description alone.
    svelte = svc.choose("default", memory.id, "Svelte", reason="smaller bundles", description="compiles away",
                        status="trial", actor="bob").memory
    assert svelte is not None and svelte.active == "Svelte"
    assert svelte.options[-1] == concepts.Option("Svelte", description="compiles away", status="trial")
    with pytest.raises(InvalidInput, match="or a description"):
        svc.choose("default", memory.id, "Angular", reason="x", actor="bob")
    fsck("default")


def test_an_option_with_pros_and_cons_only_is_written_as_before() -> None:
    memory = concepts.Memory(id="0123456789", type="techchoice", text="x", title="x", path="techchoice/x.md",
                             options=tuple(concepts.Option(o["name"], tuple(o["pros"]), tuple(o["cons"]))
                                           for o in OPTIONS), active="pnpm")
    options = concepts.render(memory).decode().split("\noptions:\n")[1].split("\nactive:")[0]
    assert options == ("- name: pnpm\n  pros:\n  - fast installs\n  - strict node_modules\n  cons:\n  - fewer users\n"
                       "- name: npm\n  pros:\n  - ships with node\n  cons:\n  - slow installs")
    assert techchoice.options_table(memory).splitlines()[0] == "| option | pros | cons |"


def test_cli_takes_an_options_description_configuration_and_status(gitmem: Run) -> None:
    made = json.loads(gitmem(
        "remember", "Frontend framework", "--type", "techchoice",
        "--option", "React 18 + Vite", "--describe", "React 18 + Vite=the team knows it",
        "--config", "React 18 + Vite=vite.config.ts",
        "--option", "Vue 3", "--describe", "Vue 3=quick to learn", "--status", "Vue 3=candidate",
        "--active", "React 18 + Vite", "--json").stdout)["memory"]
    assert made["options"] == [
        {"name": "React 18 + Vite", "pros": [], "cons": [], "description": "the team knows it",
         "config": "vite.config.ts", "status": ""},
        {"name": "Vue 3", "pros": [], "cons": [], "description": "quick to learn", "config": "", "status": "candidate"}]
    shown = gitmem("recall", "frontend framework").stdout
    assert "    | React 18 + Vite (active) | the team knows it | vite.config.ts | - |" in shown
    twice = gitmem("remember", "Bundler", "--type", "techchoice", "--option", "a", "--describe", "a=x",
                   "--describe", "a=y", ok=False)
    assert twice.returncode == 2 and "--describe is given twice" in twice.stderr
    chosen = gitmem("choose", made["id"], "Svelte", "--describe", "compiles away", "--reason", "smaller bundles")
    assert "| Svelte (active) | compiles away | - | - |" in chosen.stdout
