"""Benchmark the review page: weight, time to first byte and time per action, this branch against main, one run.

Data: the first ``--size`` distinct real statements of ``tests/data/cursorrules.jsonl`` (3,022 by
default, as the issue measured), written to a namespace in one commit, then one consolidation
run (the offline rules, semantic neighbours on), in a fresh home per code version:

* **main's code** (``--baseline``, default the merge base with ``main``, unpacked with ``git
  archive``) opens the review main opens: hundreds of commits;
* **this branch** opens a review of at most ``GITMEM_REVIEW_MAX_CHANGES`` (50).

Each code version serves its pages over real HTTP in a subprocess of its own (a threaded
werkzeug server, as the tests' live server), so what is measured is the page as a browser gets
it. Four servers, each on a copy of a home:

=========  ============  =============================================
row        code          review
=========  ============  =============================================
main 3k    main          main's first consolidation of the statements
branch 3k  this branch   this branch's first consolidation (50)
main 50    main          the same review of 50, as main's page shows it
branch big this branch   main's big review, as this branch pages it
=========  ============  =============================================

Measured per server, in turns over ``--rounds`` rounds so machine load hits all alike:

* **Page weight**: the review page's HTML, and with the stylesheet and script it loads;
* **Time to first byte**: the first request after the server started (nothing cached in the
  process: the cold figure) and the median of later ones (warm);
* **Time per action**: approving one commit the way the page does it (main: tick a box, "Merge
  selected"; this branch: the commit's own Approve), from the POST to the last byte of the page
  it lands on;
* **Keys from the top to a decision** (``--browser``, Chromium): on a freshly loaded page, the
  Tab presses until one change can be approved, plus the keys that approve it (main: Tab to the
  first box, Space, Tab to "Merge selected", Enter; this branch: Tab to the first Approve and Enter,
  Tab to "Next undecided" and Enter twice, or the shortcut: ``n`` then Enter).

Run from the repository root::

    .venv/bin/python bench/bench_review.py                 # 3,022 statements, 5 rounds, with Chromium
    .venv/bin/python bench/bench_review.py --size 800 --rounds 3 --no-browser
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "cursorrules.jsonl"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

# Run in a subprocess with one code version first on sys.path: import, consolidate, make a key.
BUILD = r"""
import json, sys, time
from pathlib import Path
code, home, data, size = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, code)
import gitmem  # a namespace package: its first folder is the code asked for
assert list(gitmem.__path__)[0].startswith(code), gitmem.__path__
from gitmem import concepts
from gitmem.concepts import Memory
from gitmem.repo import Change, KeyStore, Namespaces
from gitmem.service import MemoryService
from gitmem.settings import Settings
texts, seen = [], set()
for line in data.read_text(encoding="utf-8").splitlines():
    text = json.loads(line)["text"]
    if line.strip() and text not in seen:
        seen.add(text)
        texts.append(text)
texts = texts[:size]
svc = MemoryService(Settings(home=home))
svc.init("default")
ns = Namespaces(svc.settings).open("default")
at = concepts.now()
files = {}
for i, text in enumerate(texts):
    memory_id = f"{i:010x}"
    memory = Memory(id=memory_id, type="convention", text=text, title=concepts.title_from(text), source="import",
                    created=at, updated=at)
    path = concepts.file_path("convention", f"m{memory_id}")
    files[path] = concepts.render(memory.replace(path=path))
ns.store.transact(lambda head: Change(files, f"import {len(files)} statements", "import"))
ns.synced()
started = time.perf_counter()
result = svc.consolidate("default")
seconds = time.perf_counter() - started
commits = len(svc.reviews.diff("default", result.review)) if result.review else 0
key = KeyStore(home).create("default", "reviewer", name="bench")[0]
print(json.dumps({"review": result.review, "commits": commits, "key": key, "seconds": seconds,
                  "summary": result.summary, "memories": len(texts)}))
"""

# Run in a subprocess with one code version first: a reviewer key that version can read (keys.json
# gained fields since: a home built by one version is served by the other with a key of its own).
KEY = r"""
import sys
from pathlib import Path
code, home = sys.argv[1], Path(sys.argv[2])
sys.path.insert(0, code)
import gitmem
assert list(gitmem.__path__)[0].startswith(code), gitmem.__path__
from gitmem.repo import KeyStore
(home / "keys.json").unlink()
print(KeyStore(home).create("default", "reviewer", name="bench")[0])
"""

# Run in a subprocess: serve one home with one code version; print the port.
SERVE = r"""
import sys
from pathlib import Path
code, home = sys.argv[1], Path(sys.argv[2])
sys.path.insert(0, code)
import gitmem  # a namespace package: its first folder is the code asked for
assert list(gitmem.__path__)[0].startswith(code), gitmem.__path__
import logging
from werkzeug.serving import make_server
from gitmem.service import MemoryService
from gitmem.settings import Settings
from gitmem.web import create_app
logging.getLogger("werkzeug").setLevel(logging.ERROR)
app = create_app(service=MemoryService(Settings(home=home)))
server = make_server("127.0.0.1", 0, app, threaded=True)
print(server.server_port, flush=True)
server.serve_forever()
"""


def baseline_tree(rev: str, into: Path) -> str:
    """Unpack ``rev`` of this repository into ``into`` (read-only for the repository); its full id."""
    full = subprocess.run(["git", "rev-parse", rev], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    archive = subprocess.run(["git", "archive", "--format=tar", full.strip()], cwd=ROOT, capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return full.strip()


def default_baseline() -> str:
    done = subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else "HEAD~1"


def key_for(code: Path, home: Path) -> str:
    """A new reviewer key for ``home``, written by the code at ``code`` (the only key left)."""
    done = subprocess.run([sys.executable, "-c", KEY, str(code), str(home)], capture_output=True, text=True,
                          env=_env(), check=True)
    return done.stdout.strip().splitlines()[-1]


def build(code: Path, home: Path, size: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", BUILD, str(code), str(home), str(DATA), str(size)],
                          capture_output=True, text=True, env=_env())
    if done.returncode != 0:
        raise SystemExit(f"building {home} with {code} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")}


@dataclass
class Server:
    """One code version serving one home, and a signed-in session on it."""

    name: str
    code: Path
    home: Path
    key: str
    review: int
    process: subprocess.Popen[str] | None = None
    port: int = 0
    cookie: str = ""
    ttfb: list[float] = field(default_factory=list)
    actions: list[float] = field(default_factory=list)
    weight: int = 0
    assets: int = 0
    commits_on_page: int = 0
    cold: float = 0.0

    def start(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", SERVE, str(self.code), str(self.home)],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_env())
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        self._sign_in()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, str], bytes,
                                                                                           float, float]:
        """One request: status, headers, body, seconds to the first byte, seconds to the last."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        headers = {"Cookie": self.cookie, "Origin": f"http://127.0.0.1:{self.port}"}
        data = None
        if body is not None:
            data = urlencode(body, doseq=True).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        started = time.perf_counter()
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()  # the status line and headers: the first bytes
        first = time.perf_counter() - started
        content = response.read()
        last = time.perf_counter() - started
        found = {k.lower(): v for k, v in response.getheaders()}
        connection.close()
        if "set-cookie" in found:
            self.cookie = found["set-cookie"].split(";", 1)[0]
        return response.status, found, content, first, last

    def _sign_in(self) -> None:
        _, _, form, _, _ = self.request("GET", "/login")
        token = _token(form)
        status, _, _, _, _ = self.request("POST", "/login", {"key": self.key, "csrf_token": token, "next": "/"})
        assert status == 303, f"{self.name}: sign-in answered {status}"

    @property
    def url(self) -> str:
        return f"/ns/default/reviews/{self.review}"


def _token(page: bytes) -> str:
    found = re.search(rb'name="csrf_token" value="([^"]+)"', page)
    assert found is not None, "no CSRF token on the page"
    return found.group(1).decode()


def measure_page(server: Server, *, cold: bool) -> bytes:
    status, _, body, first, _ = server.request("GET", server.url)
    assert status == 200, f"{server.name}: {status} {body[:300]!r}"
    if cold:
        server.cold = first
    else:
        server.ttfb.append(first)
    server.weight = len(body)
    assets = re.findall(rb'(?:href|src)="(/static/[^"]+)"', body)
    server.assets = sum(len(server.request("GET", a.decode())[2]) for a in dict.fromkeys(assets))
    server.commits_on_page = len(re.findall(rb'<section class="commit ', body))
    return body


def approve_one(server: Server, page: bytes) -> None:
    """Approve the first open commit as the page lets a person, and load the page it lands on."""
    token = _token(page)
    new = re.search(rb'name="version" value="([0-9a-f]{12})"', page)
    if new is not None:  # this branch: the commit's own Approve
        commit = re.search(rb'<section class="commit open[^"]*" id="commit-[0-9a-f]{10}" data-id="([0-9a-f]{40})"',
                           page)
        assert commit is not None, f"{server.name}: no open commit on the page"
        form = {"csrf_token": token, "action": "approve-one", "commit": commit.group(1).decode(),
                "version": new.group(1).decode()}
    else:  # main: tick one box, "Merge selected"
        commit = re.search(rb'name="commit" value="([0-9a-f]{40})"', page)
        assert commit is not None, f"{server.name}: no box to tick"
        form = {"csrf_token": token, "action": "approve-selected", "commit": commit.group(1).decode()}
    started = time.perf_counter()
    status, headers, _, _, _ = server.request("POST", server.url, form)
    assert status == 303, f"{server.name}: approving answered {status}"
    target = urlsplit(headers["location"])
    landed = target.path + (f"?{target.query}" if target.query else "")
    status, _, body, _, _ = server.request("GET", landed)
    assert status == 200 and b"flash error" not in body, f"{server.name}: {body[:2000]!r}"
    server.actions.append(time.perf_counter() - started)


TAB_LIMIT = 4000


def keys_to_decide(server: Server, browser: Any) -> dict[str, int | str | None]:
    """Keys from a freshly loaded page to one change approved: by Tab, and by the page's shortcut."""
    context = browser.new_context(base_url=f"http://127.0.0.1:{server.port}")
    page = context.new_page()
    page.goto("/login")
    page.fill("input[name=key]", server.key)
    page.click("button[type=submit]")

    def tabs_until(selector: str, limit: int = TAB_LIMIT) -> int | None:
        for n in range(1, limit + 1):
            page.keyboard.press("Tab")
            if page.evaluate("s => !!document.activeElement && document.activeElement.matches(s)", selector):
                return n
        return None

    page.goto(server.url)
    out: dict[str, int | str | None] = {}
    more = f"more than {TAB_LIMIT}"
    if page.locator(".approve-one").count():
        tabs = tabs_until(".approve-one")
        out["by Tab"] = more if tabs is None else tabs + 1  # ... then Enter
        page.goto(server.url)
        to_link = tabs_until("#next-undecided")
        if to_link is not None:
            page.keyboard.press("Enter")
            page.wait_for_timeout(100)
            on_approve = page.evaluate("() => document.activeElement.matches('.approve-one')")
            out["by Next undecided"] = to_link + 2 if on_approve else None  # Enter, then Enter on Approve
        page.goto(server.url)
        page.keyboard.press("n")
        focused = page.evaluate("() => document.activeElement.matches('.approve-one')")
        out["by shortcut"] = 2 if focused else None  # n, then Enter
    else:
        first = tabs_until("input[name=commit]")
        then = None if first is None else tabs_until("#approve-selected")
        out["by Tab"] = more if first is None or then is None else first + 1 + then + 1  # Space, Enter
        out["by shortcut"] = None
    context.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default=None, help="main's commit to compare with (default: merge base)")
    parser.add_argument("--size", type=int, default=3022, help="distinct real statements to import")
    parser.add_argument("--rounds", type=int, default=5, help="page loads and actions per server")
    parser.add_argument("--no-browser", dest="browser", action="store_false", help="skip the keyboard count")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "review.json")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-review-"))
    servers: list[Server] = []
    try:
        base = work / "main"
        base.mkdir()
        rev = baseline_tree(args.baseline or default_baseline(), base)
        print(f"baseline {rev[:10]}; building homes of {args.size} statements...", flush=True)
        old = build(base, work / "old", args.size)
        new = build(ROOT, work / "new", args.size)
        print(f"main's run: {old['summary']} ({old['seconds']:.1f} s); this branch's: {new['summary']} "
              f"({new['seconds']:.1f} s)", flush=True)
        for copy, source in (("old-copy", "old"), ("new-copy", "new")):
            shutil.copytree(work / source, work / copy)
        servers = [Server("main, first consolidation", base, work / "old", old["key"], old["review"]),
                   Server("this branch, first consolidation", ROOT, work / "new", new["key"], new["review"]),
                   Server("main's page, review of 50", base, work / "new-copy", key_for(base, work / "new-copy"),
                          new["review"]),
                   Server("this branch's page, main's big review", ROOT, work / "old-copy",
                          key_for(ROOT, work / "old-copy"), old["review"])]
        commits = {servers[0].name: old["commits"], servers[1].name: new["commits"],
                   servers[2].name: new["commits"], servers[3].name: old["commits"]}
        for server in servers:
            server.start()
            measure_page(server, cold=True)
        for _ in range(args.rounds):  # in turns: load on the machine hits every server alike
            for server in servers:
                approve_one(server, measure_page(server, cold=False))
        keys: dict[str, dict[str, int | str | None]] = {}
        if args.browser and Path(CHROMIUM).exists():
            from playwright.sync_api import sync_playwright

            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
                for server in servers:
                    keys[server.name] = keys_to_decide(server, browser)
                browser.close()
        rows = [{"page": s.name, "commits": commits[s.name], "commits_on_page": s.commits_on_page,
                 "html_bytes": s.weight, "with_assets_bytes": s.weight + s.assets, "ttfb_cold_s": round(s.cold, 3),
                 "ttfb_warm_median_s": round(statistics.median(s.ttfb), 3),
                 "action_median_s": round(statistics.median(s.actions), 3), "keys": keys.get(s.name)}
                for s in servers]
        report(rows, args, rev, old, new)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "baseline": rev, "size": args.size, "rounds": args.rounds, "rows": rows,
            "runs": {"main": {k: old[k] for k in ("summary", "commits", "seconds")},
                     "branch": {k: new[k] for k in ("summary", "commits", "seconds")}},
            "load": os.getloadavg(), "python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count()}, indent=1) + "\n")
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def report(rows: list[dict[str, Any]], args: argparse.Namespace, rev: str, old: dict[str, Any],
           new: dict[str, Any]) -> None:
    def kb(n: int) -> str:
        return f"{n / 1024:,.0f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:,.1f} MB"

    def keys(row: dict[str, Any]) -> str:
        found = row["keys"] or {}
        if not found:
            return "—"
        return " / ".join("—" if found.get(k) is None else str(found[k])
                          for k in ("by Tab", "by Next undecided", "by shortcut"))

    print(f"\nReview page, {args.size} real statements, {args.rounds} rounds, baseline main {rev[:10]}; "
          f"load {os.getloadavg()[0]:.1f}\n")
    print("| page | commits (on the page) | HTML | with CSS/JS | TTFB cold | TTFB warm (median) | "
          "approve one (median) | keys to a decision (Tab / Next undecided / shortcut) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(f"| {row['page']} | {row['commits']} ({row['commits_on_page'] or 'all'}) | {kb(row['html_bytes'])} | "
              f"{kb(row['with_assets_bytes'])} | {row['ttfb_cold_s']:.2f} s | {row['ttfb_warm_median_s']:.3f} s | "
              f"{row['action_median_s']:.3f} s | {keys(row)} |")
    first, second, third = rows[0], rows[1], rows[2]
    print(f"\nFirst consolidation, this branch / main: HTML {second['html_bytes'] / first['html_bytes']:.3f}x, "
          f"warm TTFB {second['ttfb_warm_median_s'] / first['ttfb_warm_median_s']:.3f}x, "
          f"one action {second['action_median_s'] / first['action_median_s']:.3f}x")
    print(f"Review of {new['commits']}, this branch / main: HTML {second['html_bytes'] / third['html_bytes']:.3f}x, "
          f"warm TTFB {second['ttfb_warm_median_s'] / third['ttfb_warm_median_s']:.3f}x, "
          f"one action {second['action_median_s'] / third['action_median_s']:.3f}x")
    print(f"(main's run: {old['summary']}; this branch's: {new['summary']})")


if __name__ == "__main__":
    sys.exit(main())
