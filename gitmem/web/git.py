"""Git over HTTP: ``git clone http://HOST/git/<namespace>.git`` and ``git push`` to it.

Fetching runs the real ``git http-backend`` CGI program with the request body on its standard
input and streams its output back; a reader key is required (HTTP Basic with the key as
password, or a bearer token). Pushing (``git-receive-pack``) is gitmem's own, through the
service (:mod:`gitmem.pushes`): a writer key at least, and ``http.receivepack=false`` keeps
``git http-backend`` from ever taking a push itself.
"""

from __future__ import annotations

import gzip
import logging
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from typing import IO

from flask import Blueprint, Response, request

from ..errors import GitmemError, InvalidInput, Unavailable
from ..service import refusal
from .api import service
from .auth import caller, require

log = logging.getLogger(__name__)
bp = Blueprint("git", __name__, url_prefix="/git")
# Fetch negotiation of a large repository can send more than the API's body limit.
MAX_GIT_BODY = 64 * 1024 * 1024
CHUNK = 64 * 1024


@bp.route("/<repo>/<path:rest>", methods=["GET", "POST"])
def backend(repo: str, rest: str) -> Response:
    """Serve a namespace's repository to ``git clone`` and ``git fetch`` (reader) and ``git push`` (writer)."""
    ns = repo.removesuffix(".git")  # git clone http://HOST/git/NS works as well as NS.git
    request.max_content_length = MAX_GIT_BODY
    # The path arrives decoded (%2e%2e is ".."); git http-backend would refuse it with a bare 500.
    if any(part in ("", ".", "..") for part in rest.split("/")):
        raise InvalidInput(f"the git path {rest!r} has an empty, '.' or '..' part; "
                           "ask for a path inside the repository")
    if rest == "git-receive-pack" or request.args.get("service") == "git-receive-pack":
        return _receive_pack(ns, rest)
    who = require(ns, "reader")
    service().require(ns)  # 404 for a namespace that does not exist
    git = shutil.which("git")
    if git is None:
        raise Unavailable("the git program is not installed on the server")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_PROJECT_ROOT": str(service().settings.repos_dir),
        "GIT_HTTP_EXPORT_ALL": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "http.receivepack",
        "GIT_CONFIG_VALUE_0": "false",
        "GIT_CONFIG_KEY_1": "safe.directory",
        "GIT_CONFIG_VALUE_1": "*",
        "HOME": str(service().settings.home),
        "REQUEST_METHOD": request.method,
        "PATH_INFO": f"/{ns}.git/{rest}",
        "QUERY_STRING": request.query_string.decode("latin-1"),
        "CONTENT_TYPE": request.headers.get("Content-Type", ""),
        "REMOTE_USER": who.name,
        "REMOTE_ADDR": request.remote_addr or "",
        "GATEWAY_INTERFACE": "CGI/1.1",
        "SERVER_PROTOCOL": request.environ.get("SERVER_PROTOCOL", "HTTP/1.1"),
    }
    for header, var in (("Git-Protocol", "GIT_PROTOCOL"), ("Content-Encoding", "HTTP_CONTENT_ENCODING")):
        if request.headers.get(header):
            env[var] = request.headers[header]
    stdin = tempfile.TemporaryFile()
    note = None
    if request.method == "POST":
        while chunk := request.stream.read(CHUNK):
            stdin.write(chunk)
        env["CONTENT_LENGTH"] = str(stdin.tell())
        stdin.seek(0)
        if rest == "git-upload-pack":
            note = _before_purge(ns, stdin, request.headers.get("Content-Encoding", ""))
            stdin.seek(0)
    stderr = tempfile.TemporaryFile()
    proc = subprocess.Popen([git, "http-backend"], stdin=stdin, stdout=subprocess.PIPE,
                            stderr=stderr, env=env)
    stdin.close()
    assert proc.stdout is not None
    status, headers = _read_headers(proc.stdout)
    output = CgiOutput(proc, proc.stdout, stderr)
    if status is None or status >= 500:
        # git reports its failures with headers only: answer with an error body of our own.
        output.close(failed=True)  # reaps git and logs what it said on stderr
        raise GitmemError(f"git http-backend could not serve {rest!r} of namespace {ns!r}; "
                          "the server log says why")
    body: Iterable[bytes] = output if note is None else _told(output, note)
    return Response(body, status=status, headers=headers, direct_passthrough=True)


def _before_purge(ns: str, body: IO[bytes], encoding: str) -> str | None:
    """What to tell a fetching clone whose ``have`` lines name commits a purge rewrote, or None."""
    rewritten = service().rewritten(ns)
    if not rewritten:
        return None
    data = body.read()
    if encoding.lower() == "gzip":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            return None  # git http-backend answers what is wrong with it
    for have in re.findall(rb"have ([0-9a-f]{40})", data):
        said = rewritten.get(have.decode())
        if said is not None:
            return f"gitmem: this clone is from before a purge: {said}"
    return None


def _told(output: CgiOutput, note: str) -> Iterator[bytes]:
    """The fetch's answer with ``note`` on side band 2 (git prints it as ``remote: ...``) at its end.

    The answer is pkt-lines; once the pack began (side band 1), the next flush ends it, and the
    note goes right before that flush. An answer that is not framed so passes as it is.
    """
    pending, packing, done = b"", False, False
    line = b"\x02" + note.encode() + b"\n"
    message = b"%04x" % (len(line) + 4) + line  # one pkt-line on side band 2
    try:
        for chunk in output:
            if done:
                yield chunk
                continue
            pending += chunk
            out = bytearray()
            while len(pending) >= 4 and not done:
                try:
                    size = int(pending[:4], 16)
                except ValueError:
                    done = True  # not pkt-lines (a pack without side band): leave it alone
                    break
                if size == 0 and packing:
                    out += message
                    done = True
                    break
                size = max(size, 4)  # flush, delimiter and response-end packets are four bytes
                if len(pending) < size:
                    break
                packing = packing or pending[4:5] == b"\x01"
                out += pending[:size]
                pending = pending[size:]
            if done:
                out += pending
                pending = b""
            yield bytes(out)
        yield pending
    finally:
        output.close()


def _receive_pack(ns: str, rest: str) -> Response:
    """``git push``: the ref advertisement (GET) and the push itself (POST), a writer key at least."""
    who = caller()
    service().require(ns)
    if not who.allows(ns, "writer"):
        denied = refusal(who.name, who.role, ns, "writer")
        if request.method == "GET" and rest == "info/refs":
            # git prints an ERR line as "fatal: remote error: ...": clearer than a bare 403.
            return Response(service().push_refused(str(denied)), status=200, headers=_NO_CACHE,
                            mimetype="application/x-git-receive-pack-advertisement")
        raise denied
    if request.method == "GET" and rest == "info/refs":
        return Response(service().push_advertisement(ns), headers=_NO_CACHE,
                        mimetype="application/x-git-receive-pack-advertisement")
    if request.method != "POST" or rest != "git-receive-pack":
        raise InvalidInput(f"git push speaks to info/refs and git-receive-pack, not {rest!r}")
    if request.headers.get("Content-Type") != "application/x-git-receive-pack-request":
        raise InvalidInput("a push must be sent as application/x-git-receive-pack-request")
    role = next(r for r in ("admin", "reviewer", "writer") if who.allows(ns, r))
    body: IO[bytes] = request.stream
    if request.headers.get("Content-Encoding", "").lower() == "gzip":
        body = Gunzipped(request.stream)  # type: ignore[assignment]
    base_url = service().settings.public_url or request.host_url.rstrip("/")
    answer = service().receive_push(ns, body, actor=who.name, role=role, base_url=base_url)
    return Response(answer, headers=_NO_CACHE, mimetype="application/x-git-receive-pack-result")


class Gunzipped:
    """A gzip-encoded request body, read as it comes; a body that is not gzip is :class:`InvalidInput` (a 400)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._file = gzip.GzipFile(fileobj=raw, mode="rb")

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes of the decompressed body."""
        try:
            return self._file.read(size)
        except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            raise InvalidInput(f"the push says Content-Encoding: gzip, but its body is not valid gzip ({exc}); "
                               "send it as git does") from None


_NO_CACHE = {"Cache-Control": "no-cache, max-age=0, must-revalidate", "Pragma": "no-cache"}


def _read_headers(out: IO[bytes]) -> tuple[int | None, list[tuple[str, str]]]:
    """Read the CGI header block: ``Status:`` and the headers to pass on.

    The status is None when the output ends before the header block does (git failed early).
    """
    status = 200
    headers: list[tuple[str, str]] = []
    while True:
        line = out.readline()
        if not line:
            return None, headers
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("latin-1").partition(":")
        if name.lower() == "status":
            status = int(value.strip().split()[0])
        else:
            headers.append((name.strip(), value.strip()))
    return status, headers


class CgiOutput:
    """The rest of the CGI program's output; closing it always reaps the process."""

    def __init__(self, proc: subprocess.Popen[bytes], out: IO[bytes], stderr: IO[bytes]) -> None:
        self.proc, self.out, self.stderr = proc, out, stderr

    def __iter__(self) -> Iterator[bytes]:
        while chunk := self.out.read(CHUNK):
            yield chunk

    def close(self, failed: bool = False) -> None:
        """Reap git; log its standard error when it failed (it exits 0 after a 500 of its own)."""
        self.out.close()
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if failed or self.proc.returncode:
            self.stderr.seek(0)
            log.warning("git http-backend exited %s: %s", self.proc.returncode,
                        self.stderr.read().decode("utf-8", "replace").strip())
        self.stderr.close()
