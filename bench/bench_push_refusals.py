"""What refusing a hostile push costs gitmem, against git's own receive-pack taking it, in the same run.

Both servers get the same pushes from the real git client:

* gitmem: gunicorn serving ``create_app()`` (one worker), a writer key pushing to ``refs/for/main``;
  every push here is refused;
* the floor: ``git http-backend`` with ``http.receivepack`` on (``tests/fakes/git_host.py``), which
  checks nothing and takes them.

The pushes: the level-i YAML alias bomb of issue 23 (nine levels, 387 million strings once a
reader expands it) as a memory file; and three files of ``--mb`` MiB of zeros each (a pack of a
few hundred KiB), in ``fact/`` as memory files. For each, the seconds of ``git push`` on both and
their ratio; for the large files also the gunicorn worker's peak resident memory (``VmHWM``)
before and after the push, read from ``/proc``.

    .venv/bin/python bench/bench_push_refusals.py             # three files of 250 MiB
    .venv/bin/python bench/bench_push_refusals.py --mb 20 --json
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_api import gunicorn  # noqa: E402
from bench_push import bearer, git, timed  # noqa: E402

from gitmem.repo import KeyStore  # noqa: E402
from gitmem.service import MemoryService  # noqa: E402
from gitmem.settings import Settings  # noqa: E402
from tests.fakes.git_host import GitHost  # noqa: E402

TOKEN = "bench-token"


def bomb(levels: int = 9) -> str:
    """The alias bomb: ``a: &a [x ×9]``, each next level nine aliases of the one before, then ``tags:``."""
    names = "abcdefghijklmnop"[:levels]
    lines = ["a: &a [" + ", ".join(["x"] * 9) + "]"]
    lines += [f"{n}: &{n} [" + ", ".join([f"*{b}"] * 9) + "]" for b, n in zip(names, names[1:], strict=False)]
    return "---\ntype: fact\n" + "\n".join(lines) + f"\ntags: *{names[-1]}\n---\n\nHarmless looking\n"


def worker_pid(port: str) -> int:
    """The pid of gunicorn's one worker bound to ``port``: the gunicorn process whose parent is one too."""
    bound = f"127.0.0.1:{port}".encode()
    found: dict[int, int] = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes()
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"gunicorn" in cmdline and bound in cmdline:
            found[int(proc.name)] = parent
    workers = [pid for pid, parent in found.items() if parent in found]
    if len(workers) != 1:
        raise RuntimeError(f"expected one gunicorn worker on port {port}, found {workers}")
    return workers[0]


def peak_rss_mb(pid: int) -> float:
    """A process's peak resident memory so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for {pid}")


def commit(work: Path, message: str) -> None:
    git("add", "-A", cwd=work)
    git("-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-qm", message, cwd=work)


def push(args: list[str], work: Path) -> tuple[float, str]:
    """Seconds of a ``git push`` that may be refused, and what it printed."""
    started = time.perf_counter()
    done = subprocess.run(["git", *args], cwd=work, capture_output=True, text=True, timeout=900,
                          env={"PATH": os.environ["PATH"], "HOME": tempfile.gettempdir(), "GIT_TERMINAL_PROMPT": "0",
                               "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"})
    return time.perf_counter() - started, done.stderr


def run(mb: int, tmp: Path, parts: tuple[str, ...] = ("bomb", "large")) -> dict[str, Any]:
    home = tmp / "home"
    service = MemoryService(Settings(home=home))
    service.init("default")
    service.close()
    writer = KeyStore(home).create("default", "writer", name="writer")[0]
    (tmp / "host").mkdir()
    host = GitHost(tmp / "host", TOKEN)
    bare = host.create("memory")
    host.start()
    basic = base64.b64encode(f"gitmem:{TOKEN}".encode()).decode()
    floor_auth = ["-c", f"http.extraHeader=Authorization: Basic {basic}"]
    figures: dict[str, Any] = {}
    try:
        with gunicorn(home, 1, 4) as url:
            worker = worker_pid(url.rsplit(":", 1)[1])
            mine, floor = tmp / "mine", tmp / "floor"
            git(*bearer(writer), "clone", "-q", f"{url}/git/default.git", str(mine))
            subprocess.run(["git", "push", "-q", str(bare), "main"], cwd=mine, check=True, capture_output=True)
            git(*floor_auth, "clone", "-q", host.url("memory"), str(floor))
            for work in (mine, floor):  # a first push of each warms the server up (not counted)
                (work / "fact").mkdir(exist_ok=True)
                (work / "fact" / "warm.md").write_text("---\ntype: fact\n---\n\nWarm up\n")
                commit(work, "warm up")
            timed([*bearer(writer), "push", "-q", "origin", "HEAD:refs/for/main"], mine)
            timed([*floor_auth, "push", "-q", "origin", "HEAD:refs/heads/warm"], floor)

            if "bomb" in parts:
                for work in (mine, floor):
                    (work / "fact" / "bomb.md").write_text(bomb())
                    commit(work, "a harmless looking fact")
                gitmem_s, said = push([*bearer(writer), "push", "origin", "HEAD:refs/for/main"], mine)
                if "no anchors or aliases" not in said:
                    raise RuntimeError(f"the bomb was not refused: {said}")
                floor_s, _ = push([*floor_auth, "push", "origin", "HEAD:refs/heads/bomb"], floor)
                figures["bomb"] = {"gitmem_refused_s": round(gitmem_s, 3), "floor_took_s": round(floor_s, 3),
                                   "ratio": round(gitmem_s / floor_s, 2)}
                for work in (mine, floor):
                    git("reset", "-q", "--hard", "HEAD~1", cwd=work)
            if "large" not in parts:
                return {"when": datetime.now(UTC).isoformat(timespec="seconds"), **figures}
            for work in (mine, floor):
                for name in ("a.md", "b.md", "c.md"):
                    with open(work / "fact" / name, "wb") as out:
                        out.truncate(mb * 1024 * 1024)
                commit(work, "three large files")
            before = peak_rss_mb(worker)
            gitmem_s, said = push([*bearer(writer), "push", "origin", "HEAD:refs/for/main"], mine)
            if "a memory file may have" not in said:
                raise RuntimeError(f"the large files were not refused: {said}")
            after = peak_rss_mb(worker)
            floor_s, _ = push([*floor_auth, "push", "origin", "HEAD:refs/heads/large"], floor)
            figures["large_files"] = {"files": 3, "mib_each": mb, "gitmem_refused_s": round(gitmem_s, 3),
                                      "floor_took_s": round(floor_s, 3), "ratio": round(gitmem_s / floor_s, 2),
                                      "worker_peak_rss_mb_before": round(before, 1),
                                      "worker_peak_rss_mb_after": round(after, 1)}
    finally:
        host.stop()
    return {"when": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.platform(),
            "cpus": os.cpu_count(), **figures}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=250, help="MiB of zeros in each of the three large files")
    parser.add_argument("--only", choices=["bomb", "large"], default=None,
                        help="push only the alias bomb, or only the large files")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "push_refusals.json")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.mb < 1:
        print("error: --mb must be at least 1", file=sys.stderr)
        raise SystemExit(2)
    with tempfile.TemporaryDirectory() as folder:
        figures = run(args.mb, Path(folder), (args.only,) if args.only else ("bomb", "large"))
    if args.json or args.only:
        print(json.dumps(figures, indent=1))
    else:
        bomb_, large = figures["bomb"], figures["large_files"]
        print(f"level-i alias bomb: refused in {bomb_['gitmem_refused_s']} s (git took it in "
              f"{bomb_['floor_took_s']} s: x{bomb_['ratio']})")
        print(f"three files of {large['mib_each']} MiB: refused in {large['gitmem_refused_s']} s (git took them in "
              f"{large['floor_took_s']} s: x{large['ratio']}); worker peak RSS {large['worker_peak_rss_mb_before']}"
              f" MB before, {large['worker_peak_rss_mb_after']} MB after")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
