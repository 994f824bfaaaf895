"""``/healthz``: is the repository readable, does the broker answer, is a worker listening, do mirrors take pushes?

The answer is 200 while the repositories can be read (the web app can do its job) and 503 when
they cannot; the broker and worker are reported beside it, since the API works without them and
only consolidation waits. ``status`` is ``ok`` when all answer, ``starting`` while the only thing
missing is the worker ``gitmem serve`` started a moment ago on this host, ``degraded`` when
anything else is amiss, ``failing`` when the repositories cannot be read.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from flask import Blueprint, Response, jsonify

from ..service import MemoryService
from .api import service

log = logging.getLogger(__name__)
bp = Blueprint("health", __name__)
PING_TIMEOUT = 0.5


@bp.get("/healthz")
def healthz() -> tuple[Response, int]:
    """Report whether the repositories can be read (200, else 503) and whether broker and worker answer."""
    svc = service()
    report = {"repository": repository(svc), "broker": {"ok": False}, "worker": {"ok": False}}
    mirrors = mirroring(svc)
    try:
        from ..broker import app_for
    except ImportError as exc:
        report["broker"]["error"] = f"tasks are not available: {exc}"
    else:
        celery = app_for(svc.settings)
        report["broker"] = broker(celery, svc)
        if report["broker"]["ok"]:
            report["worker"] = worker(celery)
            if not report["worker"]["ok"] and svc.worker_starting():
                report["worker"]["starting"] = True
    ok = all(part["ok"] for part in report.values()) and mirrors["ok"]
    # Only a worker still booting is amiss (`gitmem serve` just started it): not yet ready, not broken.
    booting = report["worker"].get("starting") is True and mirrors["ok"] and all(
        part["ok"] for name, part in report.items() if name != "worker")
    status = "ok" if ok else "starting" if booting else "degraded" if report["repository"]["ok"] else "failing"
    return jsonify({"status": status, **report, "mirrors": mirrors}), 200 if report["repository"]["ok"] else 503


def mirroring(svc: MemoryService) -> dict[str, Any]:
    """Each namespace's mirrors (a failing mirror degrades the status; writes go on regardless)."""
    out: dict[str, Any] = {}
    try:
        for name in svc.namespaces():
            for mirror, entry in svc.mirror_status(name).items():
                out[f"{name}/{mirror}"] = entry
    except Exception as exc:  # reported beside the repository check, which says more
        return {"ok": False, "error": str(exc)}
    return {"ok": all(entry["ok"] is not False for entry in out.values()), "mirrors": out}


def repository(svc: MemoryService) -> dict[str, Any]:
    """Whether every namespace's head can be read, with the error if not."""
    try:
        names = svc.namespaces()
        for name in names:
            svc.head(name)
    except Exception as exc:  # any failure to read is exactly what this check reports
        return {"ok": False, "error": str(exc)}
    return {"ok": True, "path": str(svc.settings.repos_dir), "namespaces": len(names)}


def redact(url: str) -> str:
    """A broker URL without its passwords: each URL of a failover list (``a;b``), in the user part or the query."""
    return ";".join(_redact_one(part) for part in url.split(";"))


def _redact_one(url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        if ":" in user:
            netloc = f"{user.split(':', 1)[0]}:***@{host}"
    query = "&".join(f"{key}=***" if key.lower() in ("password", "pass", "passwd") else pair
                     for pair in parts.query.split("&") if pair
                     for key in [pair.split("=", 1)[0]])
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def broker(celery: Any, svc: MemoryService) -> dict[str, Any]:
    """Whether the broker takes a connection, with its URL (password hidden)."""
    url = str(celery.conf.broker_url or "")
    out: dict[str, Any] = {"ok": False, "url": redact(url),
                           "embedded": svc.settings.broker_url is None}
    try:
        with celery.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # kombu raises many kinds; all mean "not reachable"
        out["error"] = str(exc)
        return out
    out["ok"] = True
    return out


def worker(celery: Any) -> dict[str, Any]:
    """Whether any worker answers a ping, with the names of those that do."""
    try:
        replies = celery.control.ping(timeout=PING_TIMEOUT) or []
    except Exception as exc:  # a transport without broadcast support cannot be pinged
        return {"ok": False, "error": str(exc)}
    names = sorted(name for reply in replies for name in reply)
    return {"ok": bool(names), "workers": names}
