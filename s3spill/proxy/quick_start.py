"""``s3spill mcp-proxy -- CMD``: the upstream started and ``initialize`` answered before the
spill path is imported.

Why: a harness starts its MCP servers and sends ``initialize`` at once; some give a server
only a short while to answer. Answering the handshake needs nothing but the pipes and the
upstream's own answer with our capabilities added, while the rest of the proxy (the fleet
policy, the store, the Spiller, the read tools: pydantic, boto3, the artifact layers, and
asyncio itself) takes about a second to import and build. So the command line spawns the
upstream first (:func:`~s3spill.proxy.spawn.quick_command`), then relays the handshake with
plain blocking reads and writes: the client's ``initialize`` goes upstream under an id the
relay never uses (0), its answer comes back under the client's id with our capabilities
(:mod:`~s3spill.proxy.handshake`). Only then does :mod:`s3spill.cli.proxy_fast` parse the
command line in full and build the relay (:func:`s3spill.cli.proxy_cmds.stdio_relay`,
exactly what the full path builds).
Whatever else either side wrote meanwhile is handed to the relay's channels unread; a first
client line that is not an ``initialize``, an answer only the relay's parser reads, or one
too long for a handshake is the relay's (it answers the ``initialize`` then: ``Relay.adopt``).

Why not build on a thread while the upstream boots: on two busy cores the build's imports
slowed the upstream's own start more than they saved (median of 12 at load ~14: first
answer 346 ms built after, 508 ms built alongside; the first ``tools/list`` 2.1 s either way).

SIGINT and SIGTERM during the handshake end the proxy with exit 0, as they end the relay.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import stat

from s3spill.proxy.handshake import handshake

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import Any

#: The id the handshake goes upstream under (the relay's own ids start at 1).
INIT_ID = 0
_READ = 1 << 16
#: A handshake line longer than this is not one: the relay takes over.
_MAX_LINE = 1 << 20
#: What :func:`_upstream_line` returns when the client closed its end first.
_CLIENT_GONE = b"\x00client gone"

#: JSON-RPC's internal error (:data:`s3spill.proxy.wire.INTERNAL_ERROR`; wire loads orjson).
_INTERNAL_ERROR = -32603


class Stopped(Exception):
    """SIGTERM (or SIGINT) before the relay's own handlers were in place."""


class Early:
    """What the handshake phase left: the bytes each side wrote that nobody read yet, the
    session's resource_link setting, and how the session ended if it did (as :meth:`Relay.run`
    names it)."""

    def __init__(self) -> None:
        self.client, self.upstream = b"", b""
        self.links: bool | None = None
        self.ended: str | None = None
        #: The client's id of an ``initialize`` sent upstream (as :data:`INIT_ID`) and not yet answered.
        self.pending: Any = None


def early_handshake(proc: subprocess.Popen[bytes]) -> Early:
    """Relay the handshake (see the module's docstring); SIGINT and SIGTERM raise :class:`Stopped`
    from here until the relay's event loop puts its own handlers in place."""
    early = Early()
    _on_signals(_stop)
    _handshake(proc, early)
    return early


def _stop(signum: int, frame: Any) -> None:
    raise Stopped


def ignore_signals() -> None:
    """The relay's event loop is gone, and asyncio put SIGINT and SIGTERM back to their
    defaults with it: from here to the exit (the upstream discarded, the spiller and the
    store closed, the usage batch written: seconds under load) a client that ends us still
    ends us normally, exit 0 once all is closed, not death by the signal (an SDK client
    SIGKILLs a proxy still there 2 s after its SIGTERM)."""
    with contextlib.suppress(ValueError):  # not the main thread (a test's thread): not ours to set
        _on_signals(signal.SIG_IGN)


def _on_signals(handler: Any) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, handler)


def _pipes() -> bool:
    """Are our stdin and stdout pipes or sockets (what the relay reads with asyncio)?"""
    try:
        return all(stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
                   for mode in (os.fstat(0).st_mode, os.fstat(1).st_mode))
    except OSError:
        return False


def _client_line(up: int, early: Early) -> bytes | None:
    """The client's first line; None when the session ended first (``early.ended``), or when
    it is no handshake line (too long, or cut by the end of input: the relay reads it).

    The upstream is watched meanwhile: one that exits before the client speaks ends the
    session (what it wrote first is kept for the relay)."""
    while (end := early.client.find(b"\n")) < 0:
        if len(early.client) > _MAX_LINE:
            return None
        ready, _, _ = select.select([0, up], [], [])
        if up in ready:
            piece = os.read(up, _READ)
            if not piece:
                early.ended = "upstream"
                return None
            early.upstream += piece
        if 0 in ready:
            piece = os.read(0, _READ)
            if not piece:
                early.ended = None if early.client else "client"
                return None
            early.client += piece
    line, early.client = early.client[:end + 1], early.client[end + 1:]
    return line


def _upstream_line(up: int, early: Early) -> bytes | None:
    """The upstream's next line; None at its end of output or past :data:`_MAX_LINE` (what
    was read is in ``early.upstream``), :data:`_CLIENT_GONE` when the client closed its end.

    The client is watched meanwhile: what it writes is kept for the relay."""
    while (end := early.upstream.find(b"\n")) < 0:
        if len(early.upstream) > _MAX_LINE:
            return None
        ready, _, _ = select.select([up, 0], [], [])
        if 0 in ready:
            piece = os.read(0, _READ)
            if not piece:
                return _CLIENT_GONE
            early.client += piece
        if up in ready:
            piece = os.read(up, _READ)
            if not piece:
                return None
            early.upstream += piece
    line, early.upstream = early.upstream[:end + 1], early.upstream[end + 1:]
    return line


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _handshake(proc: subprocess.Popen[bytes], early: Early) -> None:
    """Relay the client's ``initialize`` and its answer (see the module's docstring)."""
    if not _pipes():
        return
    assert proc.stdin is not None and proc.stdout is not None
    up = proc.stdout.fileno()
    line = _client_line(up, early)
    if line is None:
        return
    msg = _loads(line)
    params = msg.get("params") if isinstance(msg, dict) else None
    if not isinstance(msg, dict) or msg.get("method") != "initialize" or not is_id(msg.get("id")) \
            or (isinstance(params, dict) and isinstance(params.get("_meta"), dict)
                and "io.modelcontextprotocol/protocolVersion" in params["_meta"]):
        early.client = line + early.client
        return
    with contextlib.suppress(BrokenPipeError):  # gone already: its end of output says so next
        _write(proc.stdin.fileno(), _dumps({**msg, "id": INIT_ID}) + b"\n")
    while True:
        got = _upstream_line(up, early)
        if got is _CLIENT_GONE:  # the relay ends the session as it always does (answers drained)
            early.pending = msg["id"]
            return
        if got is None and not early.upstream:
            _write(1, _dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": _INTERNAL_ERROR, "message": "s3spill mcp-proxy: the upstream server ended "
                "before answering this initialize request"}}) + b"\n")
            early.ended = "upstream"
            return
        answer = _loads(got) if got is not None else None
        if got is None or (answer is None and got.strip()):
            # Too long for a handshake, or JSON only the relay's parser reads: the relay reads
            # it and answers the initialize as its own (Relay.adopt).
            early.upstream, early.pending = (got or b"") + early.upstream, msg["id"]
            return
        if isinstance(answer, dict) and isinstance(answer.get("method"), str):
            _write(1, got)  # the server's own notification or request, as it came
        elif isinstance(answer, dict) and answer.get("id") == INIT_ID \
                and ("result" in answer or "error" in answer):
            shown, early.links = handshake({**answer, "id": msg["id"]})
            _write(1, _dumps(shown) + b"\n")
            return
        elif answer is not None:
            _dropped(len(got))


def _loads(line: bytes) -> Any:
    """A handshake line's message (None: not JSON; the relay's parser takes what this refuses).

    The standard library's parser, not the relay's (:mod:`s3spill.proxy.wire`): orjson's import
    alone is ~10 ms of the handshake."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _dumps(message: Any) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


def is_id(value: Any) -> bool:
    """:func:`s3spill.proxy.wire.is_id`."""
    return isinstance(value, str | int) and not isinstance(value, bool)


def _dropped(size: int) -> None:
    from s3spill.log import get_logger

    get_logger("s3spill.proxy").warning("proxy.unknown_response_dropped", bytes=size)

