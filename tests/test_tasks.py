"""Celery: a real `gitmem worker` process on the embedded broker and on Redis, a fake LLM over HTTP.

Consolidation and maintenance (packing) both run there, on demand and on the beat.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from gitmem import broker, concepts
from gitmem.broker import CeleryQueue
from gitmem.repo import MAIN, RunState, packing
from gitmem.service import MemoryService, build_service
from gitmem.settings import Settings
from tests.conftest import namespace_of
from tests.fakes.openai_server import HOLD, Request, answer, running

from .test_consolidate import plant

REDIS = "redis://127.0.0.1:6379/0"
RESULT_WAIT = 90  # seconds a result may take before the test fails (never reached when healthy)


def redis_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(params=["embedded", "redis"])
def broker_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Settings for each broker; the Redis one gets a queue of its own so runs never mix."""
    home = tmp_path / "home"
    if request.param == "embedded":
        return Settings(home=home)
    if not redis_up():
        pytest.skip("Redis is not running at 127.0.0.1:6379")
    return Settings(home=home, broker_url=REDIS, celery_queue=f"gitmem-test-{uuid.uuid4().hex[:8]}")


def worker_env(settings: Settings, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")}
    env["GITMEM_HOME"] = str(settings.home)
    env["GITMEM_CELERY_QUEUE"] = settings.celery_queue
    if settings.broker_url:
        env["GITMEM_BROKER_URL"] = settings.broker_url
    env.update(extra)
    return env


@contextmanager
def worker(settings: Settings, log: Path, *args: str, **env: str) -> Iterator[subprocess.Popen[bytes]]:
    """Run `gitmem worker` in its own process group; stop the whole group afterwards."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gitmem", "worker", "--loglevel", "INFO",
             "--hostname", f"test-{uuid.uuid4().hex[:8]}@%h", *args],
            env=worker_env(settings, **env), stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        yield proc
    finally:
        kill(proc, signal.SIGKILL)  # the test is done with it; the whole group goes


def kill(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        return
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(20)


def result_of(settings: Settings, task_id: str) -> Any:
    return broker.app_for(settings).AsyncResult(task_id).get(timeout=RESULT_WAIT)


def wait_for(condition: Callable[[], bool], what: str, log: Path) -> None:
    deadline = time.monotonic() + RESULT_WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen; worker log:\n{log.read_text(errors='replace')}")
        time.sleep(0.1)


def near_duplicates(svc: MemoryService, namespace: str = "default") -> None:
    plant(svc, "Use descriptive variable and method names.", days=2, namespace=namespace)
    plant(svc, "Use descriptive variable and method names (e.g., IsUserSignedIn).", days=1, namespace=namespace)


@pytest.fixture
def service(broker_settings: Settings) -> Iterator[MemoryService]:
    svc = MemoryService(broker_settings)
    svc.init("default")
    yield svc
    svc.close()


def test_a_worker_consolidates_and_opens_a_review(service: MemoryService, broker_settings: Settings,
                                                  tmp_path: Path) -> None:
    near_duplicates(service)
    main = namespace_of(service, "default").store.head_id(MAIN)
    task_id = CeleryQueue(broker_settings).enqueue_consolidation("default")
    with worker(broker_settings, tmp_path / "worker.log"):
        result = result_of(broker_settings, task_id)
    assert result["summary"] == "consolidated 2 memories into 1, review #1"
    assert result["llm"] == "offline"
    review = service.reviews.get("default", 1)
    assert review.status == "open" and review.kind == "consolidation"
    assert namespace_of(service, "default").store.head_id(MAIN) == main  # main waits for the approval



def test_cli_consolidate_queue_hands_the_run_to_a_worker(service: MemoryService, broker_settings: Settings,
                                                         tmp_path: Path) -> None:
    near_duplicates(service)
    main = namespace_of(service, "default").store.head_id(MAIN)
    done = subprocess.run([sys.executable, "-m", "gitmem", "consolidate", "--queue", "--json"],
                          env=worker_env(broker_settings), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    queued = json.loads(done.stdout)
    assert queued["namespace"] == "default" and queued["task"]
    assert service.reviews.list("default") == []  # queued, not run by the command itself
    with worker(broker_settings, tmp_path / "worker.log"):
        result = result_of(broker_settings, queued["task"])
    assert result["summary"] == "consolidated 2 memories into 1, review #1"
    assert service.reviews.get("default", 1).status == "open"
    assert namespace_of(service, "default").store.head_id(MAIN) == main


def test_a_worker_uses_the_configured_llm(service: MemoryService, broker_settings: Settings,
                                          tmp_path: Path) -> None:
    near_duplicates(service)

    def respond(request: Request) -> str:
        return answer(merged="Name variables and methods descriptively (IsUserSignedIn).", reason="dup")

    with running(respond) as fake:
        task_id = CeleryQueue(broker_settings).enqueue_consolidation("default")
        with worker(broker_settings, tmp_path / "worker.log", GITMEM_LLM_BASE_URL=fake.url):
            result = result_of(broker_settings, task_id)
    assert result["llm"] == "openai-compatible"
    assert result["merges"][0]["after"] == "Name variables and methods descriptively (IsUserSignedIn)."
    assert fake.kinds() == ["merge"]


def test_a_worker_killed_mid_run_leaves_main_untouched_and_the_next_run_is_clean(
        service: MemoryService, broker_settings: Settings, tmp_path: Path, fsck: Callable[[str], None]) -> None:
    near_duplicates(service)
    store = namespace_of(service, "default").store
    main = store.head_id(MAIN)
    refs_before = set(store.repo.references)
    hold = True

    def respond(request: Request) -> Any:
        if hold:
            return HOLD
        return answer(merged="Use descriptive names for variables and methods.", reason="dup")

    log = tmp_path / "worker.log"
    with running(respond) as fake:
        env = {"GITMEM_LLM_BASE_URL": fake.url, "GITMEM_LLM_TIMEOUT": "60"}
        CeleryQueue(broker_settings).enqueue_consolidation("default")
        with worker(broker_settings, log, **env) as proc:
            assert fake.received.wait(RESULT_WAIT), log.read_text(errors="replace")
            kill(proc, signal.SIGKILL)  # the run is waiting on the model: kill the whole worker
        assert store.head_id(MAIN) == main
        assert set(store.repo.references) - {"refs/gitmem/reviews"} == refs_before
        assert service.reviews.list("default") == []
        hold = False
        task_id = CeleryQueue(broker_settings).enqueue_consolidation("default")
        with worker(broker_settings, log, **env):
            result = result_of(broker_settings, task_id)
    assert result["summary"] == "consolidated 2 memories into 1, review #1"
    assert store.head_id(MAIN) == main
    service.reviews.approve("default", 1, actor="alice")
    fsck("default")


def test_the_trigger_enqueues_once_after_writes(broker_settings: Settings, tmp_path: Path) -> None:
    service = MemoryService(broker_settings, trigger=True)
    service.init("default")
    near_duplicates(service)
    for i in range(16):
        service.remember("default", f"Statement number {i} about topic {i * 7919}.")
    state = service.run_state("default")
    assert state["last_task"]
    if broker_settings.broker_url is None:
        queued = list((broker_settings.state_dir / "broker" / "queue").glob("*.msg"))
        assert len(queued) == 1  # throttled: one run for many writes
    with worker(broker_settings, tmp_path / "worker.log"):
        result = result_of(broker_settings, state["last_task"])
    assert result["review"] == 1
    assert service.run_state("default")["last_run"]
    service.close()


def test_trigger_rules(settings: Settings, svc: MemoryService) -> None:
    at = concepts.now()
    assert not svc.should_trigger("default", at)  # new and small
    assert svc.should_trigger("default", at + timedelta(hours=25))  # a day since creation
    for i in range(16):
        plant(svc, f"Fact {i}: service {i} listens on port {8000 + i}.")
    assert svc.should_trigger("default", at)  # more than 15 active
    RunState(settings.state_dir, "default").write(last_enqueued=concepts.iso(at))
    assert not svc.should_trigger("default", at + timedelta(minutes=5))  # throttled
    assert svc.should_trigger("default", at + timedelta(hours=2))



def test_the_trigger_waits_while_a_consolidation_review_is_open(svc: MemoryService) -> None:
    near_duplicates(svc)
    result = svc.consolidate("default")
    assert result.review is not None
    later = concepts.now() + timedelta(hours=25)
    assert not svc.should_trigger("default", later)  # a day since the run, but its review is open
    svc.reviews.reject("default", result.review, actor="alice", reason="not now")
    assert svc.should_trigger("default", later)
    # An open review of another kind (an amendment) does not hold consolidation back.
    memory = svc.list("default")[0]
    assert svc.feedback("default", memory.id, "amend", actor="eve", text="Name things descriptively.").review
    assert svc.should_trigger("default", later)


def test_the_trigger_waits_for_the_review_however_many_memories_arrive(svc: MemoryService) -> None:
    near_duplicates(svc)
    result = svc.consolidate("default")
    assert result.review is not None
    for i in range(16):
        plant(svc, f"Fact {i}: service {i} listens on port {8000 + i}.")
    at = concepts.now()
    assert not svc.should_trigger("default", at)  # more than 15 active, but the review is open
    svc.reviews.approve("default", result.review, actor="alice")
    assert svc.should_trigger("default", at)


def test_beat_runs_every_namespace_on_its_schedule(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    svc = MemoryService(settings)
    for name in ("default", "team"):
        svc.init(name)
        near_duplicates(svc, name)
    log = tmp_path / "worker.log"
    # A schedule of about a second: the embedded beat fires on its own, no task sent by the test.
    with worker(settings, log, "--beat", GITMEM_CONSOLIDATE_SCHEDULE_HOURS="0.0003"):
        wait_for(lambda: all(svc.reviews.list(n) for n in ("default", "team")), "two scheduled runs", log)
    assert [r.kind for r in svc.reviews.list("team")] == ["consolidation"]
    svc.close()


def test_beat_packs_every_namespace_on_its_schedule(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    svc = MemoryService(settings)
    for name in ("default", "team"):
        svc.init(name)
        svc.remember(name, f"The {name} namespace deploys on Fridays.")
    repos = [settings.repos_dir / f"{name}.git" for name in ("default", "team")]
    assert all(packing.count_objects(repo).loose > 0 for repo in repos)
    log = tmp_path / "worker.log"

    def packed() -> bool:
        return all(packing.count_objects(repo).loose == 0 and packing.count_objects(repo).packs == 1
                   for repo in repos)

    with worker(settings, log, "--beat", GITMEM_MAINTAIN_SCHEDULE_HOURS="0.0003",
                GITMEM_CONSOLIDATE_SCHEDULE_HOURS="1000"):
        wait_for(packed, "both namespaces packed by the schedule", log)
    assert [m.text for m in svc.list("team")] == ["The team namespace deploys on Fridays."]
    assert svc.reviews.list("default") == []  # consolidation kept its own (daily) schedule
    svc.close()


def test_a_maintenance_task_skips_a_namespace_being_packed(svc: MemoryService, settings: Settings,
                                                           tmp_path: Path) -> None:
    send = broker.app_for(settings).send_task
    with RunState(settings.state_dir, "default").lock("maintenance"):
        held = send(broker.MAINTAIN, args=["default"])
        with worker(settings, tmp_path / "worker.log"):
            skipped = result_of(settings, held.id)
            assert skipped["skipped"] is True and "already running" in skipped["summary"]
    with worker(settings, tmp_path / "worker.log"):
        done = result_of(settings, send(broker.MAINTAIN, args=["default"]).id)
    assert done["namespace"] == "default" and done["after"]["loose"] == 0 and done["after"]["packs"] == 1


def test_the_default_schedule_is_daily(settings: Settings) -> None:
    conf = broker.celery_config(settings)
    assert conf["beat_schedule"]["consolidate-every-namespace"]["schedule"] == timedelta(hours=24)
    assert conf["beat_schedule"]["maintain-every-namespace"]["schedule"] == timedelta(hours=24)
    assert conf["beat_schedule"]["maintain-every-namespace"]["task"] == "gitmem.maintain_all"
    assert conf["broker_url"] == "filesystem://localhost//"
    assert (settings.state_dir / "broker" / "queue").is_dir()


def test_enqueueing_an_unknown_namespace_is_a_clear_error(settings: Settings) -> None:
    from gitmem.errors import InvalidInput, NamespaceNotFound

    with pytest.raises(NamespaceNotFound, match="gitmem init"):
        MemoryService(settings).dispatch("nope", background=True)
    with pytest.raises(InvalidInput):
        MemoryService(settings).dispatch("../etc", background=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="Celery warns only of a worker run as root")
def test_a_root_worker_is_not_warned_about_pickle_it_never_takes(settings: Settings, tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    with worker(settings, log):
        wait_for(lambda: "ready." in log.read_text(errors="replace"), "the worker starting", log)
    assert "superuser privileges" not in log.read_text(errors="replace")


def test_runs_are_acknowledged_when_done_and_handed_back_when_a_worker_dies(settings: Settings) -> None:
    embedded = broker.celery_config(settings)
    assert embedded["task_acks_late"] and embedded["task_reject_on_worker_lost"]
    conf = broker.celery_config(settings.with_(broker_url=REDIS, broker_visibility_timeout=20))
    assert conf["task_acks_late"] and conf["task_reject_on_worker_lost"]
    assert conf["broker_transport_options"]["visibility_timeout"] == 20
    assert conf["broker_transport_options"]["unacked_restore_interval"] == 5
    amqp = broker.celery_config(settings.with_(broker_url="amqp://guest@127.0.0.1//"))
    assert "broker_transport_options" not in amqp  # RabbitMQ redelivers when the connection closes


def test_a_run_whose_pool_process_dies_is_handed_back_and_run_again(
        service: MemoryService, broker_settings: Settings, tmp_path: Path, fsck: Callable[[str], None]) -> None:
    near_duplicates(service)
    calls = 0

    def respond(request: Request) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            return HOLD  # the first run waits here until its process is killed
        return answer(merged="Use descriptive names for variables and methods.", reason="dup")

    log = tmp_path / "worker.log"
    with running(respond) as fake:
        env = {"GITMEM_LLM_BASE_URL": fake.url, "GITMEM_LLM_TIMEOUT": "60", "GITMEM_LOCK_LEASE_SECONDS": "2"}
        task_id = CeleryQueue(broker_settings).enqueue_consolidation("default")
        with worker(broker_settings, log, **env) as proc:
            assert fake.received.wait(RESULT_WAIT), log.read_text(errors="replace")
            children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
            assert len(children) == 1, children
            os.kill(int(children[0]), signal.SIGKILL)  # the pool process running the task, not the worker
            result = result_of(broker_settings, task_id)
    assert result["summary"] == "consolidated 2 memories into 1, review #1", result
    assert calls == 2
    assert [r.number for r in service.reviews.list("default")] == [1]
    fsck("default")


@pytest.mark.parametrize(("setting", "url", "client"), [
    ("GITMEM_BROKER_URL", "sqla+sqlite:////tmp/gitmem-queue.db", "sqlalchemy"),
    ("GITMEM_RESULT_BACKEND", "db+sqlite:////tmp/gitmem-results.db", "sqlalchemy"),
    ("GITMEM_BROKER_URL", "mongodb://user:hunter2@localhost/queue", "pymongo"),
])
def test_a_broker_whose_client_gitmem_does_not_install_is_one_line(settings: Settings, setting: str, url: str,
                                                                   client: str) -> None:
    # gitmem installs the clients of Redis and RabbitMQ (SQLAlchemy is not a dependency).
    if importlib.util.find_spec(client) is not None:
        pytest.skip(f"{client} is installed here")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")}
    env.update({"GITMEM_HOME": str(settings.home), setting: url})
    done = subprocess.run([sys.executable, "-m", "gitmem", "worker"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and f"needs the Python package {client}" in done.stderr
    assert "hunter2" not in done.stderr  # the URL's password is never echoed


def test_a_review_the_trigger_opened_is_named_when_a_person_consolidates(tmp_path: Path) -> None:
    # The background worker opens a consolidation review on its own after writes; a person's
    # first `gitmem consolidate` then stops on it, and says what it is and where.
    settings = Settings(home=tmp_path / "home", consolidate_min_active=2)
    svc = build_service(settings)
    svc.init("default")
    try:
        near_duplicates(svc)
        svc.remember("default", "Deploys happen on Tuesdays only")  # a write that adds: the trigger queues a run
        assert svc.run_state("default").get("last_task")
        with worker(settings, tmp_path / "worker.log"):
            wait_for(lambda: bool(svc.reviews.list("default", status="open")), "the triggered run's review",
                     tmp_path / "worker.log")
        [review] = svc.reviews.list("default", status="open")
    finally:
        svc.close()
    env = worker_env(settings, GITMEM_PUBLIC_URL="http://memory.example")
    done = subprocess.run([sys.executable, "-m", "gitmem", "consolidate"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 4 and done.stderr.count("\n") == 1, done.stderr
    said = done.stderr
    assert f"consolidation review #{review.number} of namespace 'default' is still open" in said
    assert f'"{review.title}", opened by gitmem\'s background worker, on its own after writes' in said
    assert f" on {review.created.strftime('%Y-%m-%d %H:%M')} UTC with 1 change;" in said
    assert f"`gitmem review show {review.number} --namespace default`" in said
    assert f"http://memory.example/ns/default/reviews/{review.number}" in said
