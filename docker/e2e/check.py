"""The end-to-end check docker/test.sh runs against the compose layout it brought up.

Standard library only, run by the host's python3; it reaches the layout as a user does: the web
replicas' published ports (HTTP, git over HTTP) and ``docker compose exec`` (the CLI in a
container, Redis' own client). In order:

1. every web replica answers ``/healthz`` with broker and worker up (the time since ``compose up``
   is reported), Docker marks each healthy, and each serves its sign-in page;
2. keys made on one replica work on the other (keys.json on the shared volume), and so does a
   page session signed in on the other;
3. writes through both replicas at once: each is a 201 and every one is on both replicas;
4. a consolidation asked of one replica stalls on the model; the worker container running it
   (the holder of the Redis lease) is killed: ``main`` is untouched, Redis hands the run back,
   the other worker finishes it and opens one review, which is approved through the other replica;
5. ``git clone`` over HTTP from each replica: the same ``main``, ``git fsck --strict`` clean, a
   file for every memory; the server's repository is fsck-clean too;
6. ``/healthz`` once more on every replica (one worker left).

It exits non-zero with what went wrong; docker/test.sh then prints the services' logs.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

NS = "default"
WRITES = 24
WORDS = ("billing", "search", "login", "upload", "reports", "payments", "export", "audit", "mobile", "kafka",
         "nightly", "backup", "ledger", "invoice", "metrics", "alerts", "cache", "queue", "images", "fonts",
         "locale", "tokens", "sessions", "webhooks", "mailer", "sitemap", "crawler", "archive", "tenant",
         "quota", "pricing", "coupons", "refunds", "ratings", "comments", "feeds")
WAIT = 180.0  # seconds for anything the layout does on its own


class Failed(Exception):
    """A check that did not hold."""


def statement(i: int) -> str:
    """Statements that share words, so consolidation finds clusters (as tests/test_several_hosts.py)."""
    a, b, c = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)], WORDS[(i * 11 + 5) % len(WORDS)]
    return f"Team note {i}: the {a} pipeline stores {b} in {c}."


def step(message: str) -> None:
    print(f"e2e: {message}", flush=True)


def until(condition: Any, what: str, limit: float = WAIT) -> Any:
    deadline = time.monotonic() + limit
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise Failed(f"{what} did not happen within {limit:.0f} s")
        time.sleep(0.5)


class Layout:
    """The running compose project: its command line, replicas and keys."""

    def __init__(self, compose: list[str]) -> None:
        self.compose = compose
        self.keys: dict[str, str] = {}

    def run(self, *args: str, check: bool = True) -> str:
        done = subprocess.run([*self.compose, *args], capture_output=True, text=True, timeout=300)
        if check and done.returncode:
            raise Failed(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        return done.stdout

    def containers(self, service: str) -> list[str]:
        """Running containers of a service, by name (web_1 before web_2)."""
        ids = self.run("ps", "-q", service).split()
        running = []
        for cid in ids:
            name, status = docker("inspect", "-f", "{{.Name}} {{.State.Status}}", cid).split()
            if status == "running":
                running.append((name, cid))
        return [cid for _, cid in sorted(running)]

    def url(self, service: str, index: int, port: int) -> str:
        address = self.run("port", "--index", str(index), service, str(port)).strip()
        if not address:
            raise Failed(f"{service} #{index} publishes no port {port}")
        return "http://" + address.replace("0.0.0.0", "127.0.0.1")

    def gitmem(self, index: int, *args: str) -> str:
        return self.run("exec", "-T", "--index", str(index), "web", "gitmem", *args)


def docker(*args: str) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120)
    if done.returncode:
        raise Failed(f"docker {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def call(base: str, method: str, path: str, key: str | None = None, body: Any = None,
         timeout: float = 60) -> tuple[int, Any]:
    """One HTTP request; the status and the JSON answer (or the text when it is not JSON)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    if key:
        request.add_header("X-API-Key", key)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
        return 0, str(exc)
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


def healthy(base: str) -> bool:
    status, body = call(base, "GET", "/healthz", timeout=10)
    return status == 200 and isinstance(body, dict) and body.get("status") == "ok"


def texts(base: str, key: str) -> dict[str, str]:
    """Every memory's text by id, page by page."""
    out: dict[str, str] = {}
    offset: int | None = 0
    while offset is not None:
        status, body = call(base, "GET", f"/api/v1/namespaces/{NS}/memories?limit=200&offset={offset}", key)
        if status != 200:
            raise Failed(f"listing memories on {base}: {status} {body}")
        out.update({m["id"]: m["text"] for m in body["items"]})
        offset = body["next_offset"]
    return out


def main_head(base: str, key: str) -> str:
    """``main`` as git over HTTP shows it."""
    url = base.replace("http://", f"http://e2e:{key}@") + f"/git/{NS}.git"
    out = subprocess.run(["git", "ls-remote", url, "refs/heads/main"], capture_output=True, text=True, timeout=60)
    if out.returncode or not out.stdout.strip():
        raise Failed(f"git ls-remote {base}/git/{NS}.git: {out.stderr.strip()}")
    return out.stdout.split()[0]


def check(layout: Layout, up_started: float) -> dict[str, Any]:
    report: dict[str, Any] = {}
    webs = layout.containers("web")
    if len(webs) != 2 or len(layout.containers("worker")) != 2:
        raise Failed(f"expected 2 web and 2 worker containers, found {len(webs)} and "
                     f"{len(layout.containers('worker'))}")
    urls = [layout.url("web", i, 8000) for i in (1, 2)]

    # 1. Every replica healthy.
    for url in urls:
        until(lambda url=url: healthy(url), f"/healthz ok on {url}")
    report["healthz_ok_after_up_s"] = round(time.time() - up_started, 1)
    step(f"/healthz ok on both replicas {report['healthz_ok_after_up_s']} s after compose up ({', '.join(urls)})")
    until(lambda: all(docker("inspect", "-f", "{{.State.Health.Status}}", c) == "healthy" for c in webs),
          "docker marking both web containers healthy")
    report["docker_healthy_after_up_s"] = round(time.time() - up_started, 1)
    step(f"docker reports both web containers healthy {report['docker_healthy_after_up_s']} s after compose up")

    # The pages come from the templates inside the installed wheel (the image installs no source tree).
    for url in urls:
        status, page = call(url, "GET", "/login")
        if status != 200 or "<form" not in str(page):
            raise Failed(f"the sign-in page of {url}: {status} {str(page)[:300]}")

    # 2. A namespace and keys made through one replica's CLI, used through both.
    layout.gitmem(1, "init", "--namespace", NS)
    for role in ("writer", "reviewer", "reader"):
        # The writer is an agent: its statements merge, so consolidation has something to do.
        kind = "agent" if role == "writer" else "person"
        out = layout.gitmem(2 if role == "writer" else 1, "key", "create", "--namespace", NS, "--role", role,
                            "--name", f"e2e-{role}", "--kind", kind)
        layout.keys[role] = out.split()[0]
    writer, reviewer, reader = (layout.keys[r] for r in ("writer", "reviewer", "reader"))

    # A page session signed in on one replica is good on the other (one GITMEM_SECRET_KEY for all).
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    form = browser.open(urls[0] + "/login", timeout=30).read().decode()
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    if token is None:
        raise Failed(f"no CSRF token in the sign-in form of {urls[0]}")
    browser.open(urls[0] + "/login", timeout=30, data=urllib.parse.urlencode(
        {"key": reviewer, "csrf_token": token.group(1), "next": f"/ns/{NS}/"}).encode())
    with browser.open(urls[1] + f"/ns/{NS}/", timeout=30) as response:
        if "/login" in response.url or response.status != 200:
            raise Failed(f"the session signed in on {urls[0]} is not good on {urls[1]} ({response.url})")
    step("a page session signed in on one replica is good on the other")

    # 3. Writes through both replicas at once.
    def remember(i: int) -> tuple[int, Any]:
        return call(urls[i % 2], "POST", f"/api/v1/namespaces/{NS}/memories", writer,
                    {"text": statement(i), "type": "fact"})

    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(remember, range(WRITES)))
    bad = [(i, s, b) for i, (s, b) in enumerate(made) if s != 201]
    if bad:
        raise Failed(f"writes that were not added: {bad[:5]}")
    expected = {statement(i) for i in range(WRITES)}
    for url in urls:
        missing = expected - set(texts(url, reader).values())
        if missing:
            raise Failed(f"{url} lacks {len(missing)} of the {WRITES} writes: {sorted(missing)[:3]}")
    step(f"{WRITES} writes through both replicas at once: all added, all on both")

    # 4. A consolidation whose worker dies mid-run.
    model = layout.url("model", 1, 8080)
    before = main_head(urls[0], reader)
    status, body = call(urls[0], "POST", f"/api/v1/namespaces/{NS}/consolidate", writer, {})
    if status != 202:
        raise Failed(f"asking for a consolidation: {status} {body}")
    until(lambda: (lambda state: isinstance(state, dict) and state.get("held"))(call(model, "GET", "/")[1]),
          "the run asking the model")
    lease = until(lambda: layout.run("exec", "-T", "redis", "redis-cli", "--scan", "--pattern",
                                     f"*:lease:{NS}").strip(), "a lease on the namespace in Redis")
    holder = layout.run("exec", "-T", "redis", "redis-cli", "get", lease.splitlines()[0]).strip()
    host = holder.split(":")[1]
    workers = {docker("inspect", "-f", "{{.Config.Hostname}}", c): c for c in layout.containers("worker")}
    if host not in workers:
        raise Failed(f"the lease holder {holder!r} is no worker container ({sorted(workers)})")
    docker("kill", workers[host])
    killed_at = time.monotonic()
    step(f"worker container {host} killed while its run waited on the model (lease {holder})")
    if main_head(urls[1], reader) != before:
        raise Failed("main moved although the run was killed")
    call(model, "POST", "/release", body={})

    def open_reviews() -> list[Any]:
        status, body = call(urls[1], "GET", f"/api/v1/namespaces/{NS}/reviews?status=open", reader)
        return body["items"] if status == 200 else []

    reviews = until(open_reviews, "the run handed to the other worker opening a review")
    report["run_handed_back_s"] = round(time.monotonic() - killed_at, 1)
    if [(r["number"], r["kind"]) for r in reviews] != [(1, "consolidation")]:
        raise Failed(f"expected one open consolidation review, found {reviews}")
    if main_head(urls[0], reader) != before:
        raise Failed("main moved before the review was approved")
    status, review = call(urls[1], "GET", f"/api/v1/namespaces/{NS}/reviews/1", reviewer)
    step(f"the other worker finished the run {report['run_handed_back_s']} s after the kill: review #1 with "
         f"{len(review['commits'])} commit(s)")
    status, body = call(urls[1], "POST", f"/api/v1/namespaces/{NS}/reviews/1/approve", reviewer, {})
    if status != 200 or body.get("status") != "merged":
        raise Failed(f"approving review #1 through {urls[1]}: {status} {body}")
    after = main_head(urls[0], reader)
    if after == before:
        raise Failed("approving the review did not move main")
    memories = texts(urls[0], reader)
    if len(memories) >= WRITES:
        raise Failed(f"the approved consolidation merged nothing ({len(memories)} memories)")
    step(f"review #1 approved through the other replica: {WRITES} memories became {len(memories)}")

    # 5. git clone over HTTP from each replica.
    with tempfile.TemporaryDirectory() as tmp:
        for n, url in enumerate(urls):
            target = Path(tmp) / f"clone{n}"
            auth = url.replace("http://", f"http://e2e:{reader}@")
            for args in (["clone", "-q", f"{auth}/git/{NS}.git", str(target)],
                         ["-C", str(target), "fsck", "--strict", "--no-progress"]):
                done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=120)
                if done.returncode:
                    raise Failed(f"git {args[0]} from {url}: {done.stderr.strip()}")
            head = subprocess.run(["git", "-C", str(target), "rev-parse", "HEAD"], capture_output=True,
                                  text=True, check=True).stdout.strip()
            files = [p for p in target.glob("*/*.md")]  # type folders; the root holds a README
            if head != after or len(files) != len(memories):
                raise Failed(f"the clone from {url} has {head[:10]} and {len(files)} files, "
                             f"not {after[:10]} and {len(memories)}")
    layout.run("exec", "-T", "--index", "1", "web", "git", "--git-dir", f"/data/repos/{NS}.git", "fsck",
               "--strict", "--no-progress")
    step(f"git clone over HTTP from both replicas: main {after[:10]}, {len(memories)} files, fsck clean "
         "(and on the server)")

    # 6. Still healthy, one worker left.
    for url in urls:
        until(lambda url=url: healthy(url), f"/healthz ok on {url} after the kill", limit=30)
    step("/healthz ok on every replica with one worker left")
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compose", required=True, help="the compose command line, project and files included")
    parser.add_argument("--up-started", type=float, required=True, help="when `compose up` started (epoch s)")
    parser.add_argument("--report", type=Path, help="write a line of timings here")
    args = parser.parse_args()
    try:
        report = check(Layout(shlex.split(args.compose)), args.up_started)
    except Failed as exc:
        print(f"e2e: FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    if args.report:  # one line for docker/test.sh's summary
        args.report.write_text(f"/healthz ok on every replica {report['healthz_ok_after_up_s']} s after compose up, "
                               f"docker health {report['docker_healthy_after_up_s']} s; a killed run handed back "
                               f"and finished in {report['run_handed_back_s']} s\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
