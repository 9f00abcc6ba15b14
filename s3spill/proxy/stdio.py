"""The pipes around the relay: the client on our stdin/stdout, the upstream as a child process.

MCP's stdio transport is one JSON-RPC message per line, UTF-8, on stdin/stdout, with
stderr free for logs — so the child's stderr is ours (the harness shows it), and nothing
but messages is ever written to our stdout. Lines are read as bytes and handed on as
bytes: a message the relay does not change is never decoded into text and back. A line
may be as long as a result is large; :data:`MAX_MESSAGE_BYTES` bounds what one message
may hold in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import selectors
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence
from typing import IO

from s3spill.errors import ConfigError
from s3spill.log import get_logger
from s3spill.proxy import channel as channels

TYPE_CHECKING = False
if TYPE_CHECKING:  # not imported: the handshake is answered before the relay loads (quick_start)
    from s3spill.proxy.channel import Channel
    from s3spill.proxy.quick_start import Early
    from s3spill.proxy.relay import Relay
    from s3spill.spill.json_spool import Spool

log = get_logger("s3spill.proxy")

#: Longest message accepted on either side (a longer one ends the connection, loudly).
MAX_MESSAGE_BYTES = 1024 * 1024 * 1024
#: Longest upstream message spooled to a file (its memory is bounded; its disk is not free).
MAX_SPOOLED_BYTES = 16 * 1024 * 1024 * 1024
#: Bytes read from a pipe at a time (and about what the reader buffers ahead).
READ_CHUNK = 1024 * 1024
#: Seconds the upstream gets to exit after its stdin closes, then after SIGTERM: under the 2 s
#: both SDK clients' stdio transports wait for us before they SIGTERM us (and TypeScript's SIGKILLs
#: 2 s later, which would leave the upstream running with no reader).
EXIT_GRACE = 1.5
#: The same when we were told to stop (SIGINT/SIGTERM): the harness is waiting for us.
STOP_GRACE = 1.0


class StreamChannel:
    """Newline-delimited messages over an asyncio reader/writer pair.

    Lines are assembled from chunks rather than by ``readuntil``: a 100 MB message then
    costs its chunks and one joined copy, not a growing buffer (copied as it grows) plus
    the copy handed out; the reader's own buffer stays at a few chunks (backpressure).
    With ``spool_over`` (the upstream's side), a line longer than that many bytes is
    written to a :class:`~s3spill.spill.json_spool.Spool` as it arrives instead
    (:mod:`~s3spill.proxy.channel`): held in memory are its skeleton and one chunk.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 spool_over: int | None = None) -> None:
        self.reader = reader
        self.writer = writer
        self.spool_over = spool_over
        self._rest = b""

    async def receive(self) -> bytes | Spool | None:
        """The next non-empty line, newline included (stripping it would copy a huge message)."""
        while True:
            line = await self._line()
            if line is None or len(line) > 2 or (isinstance(line, bytes) and line.strip()):
                return line

    async def _line(self) -> bytes | Spool | None:
        parts: list[bytes] = []
        size = 0
        rest = self._rest
        spool: Spool | None = None
        while True:
            end = rest.find(b"\n")
            if end >= 0:
                self._rest = rest[end + 1 :]
                if spool is not None:
                    spool.feed(rest[: end + 1])
                    spool.finish()
                    return spool
                parts.append(rest[: end + 1])
                return parts[0] if len(parts) == 1 else b"".join(parts)
            if rest:
                size += len(rest)
                if spool is not None:
                    spool.feed(rest)
                else:
                    parts.append(rest)
                    if self.spool_over is not None and size > self.spool_over:
                        spool = _spooled(parts)
                if size > MAX_SPOOLED_BYTES or (spool is None if size > MAX_MESSAGE_BYTES
                                                else spool is not None and spool.held > MAX_MESSAGE_BYTES):
                    log.error("proxy.message_too_large", limit=MAX_MESSAGE_BYTES, spooled=MAX_SPOOLED_BYTES)
                    return None
            rest = await self.reader.read(READ_CHUNK)
            if not rest:  # end of stream: a last line without its newline still counts
                self._rest = b""
                if spool is not None:
                    spool.finish()
                    return spool
                return b"".join(parts) if parts else None

    async def send_pieces(self, pieces: Iterable[bytes]) -> None:
        """One message written piece by piece (a spooled line: :func:`~s3spill.proxy.channel.deliver`)."""
        if self.writer.is_closing():
            return
        last = b""
        for piece in pieces:
            if piece:
                self.writer.write(piece)
                last = piece
                with contextlib.suppress(ConnectionError):
                    await self.writer.drain()
        if not last.endswith(b"\n"):
            self.writer.write(b"\n")
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()

    async def send(self, message: bytes) -> None:
        if self.writer.is_closing():
            return
        self.writer.write(message)
        if not message.endswith(b"\n"):
            self.writer.write(b"\n")
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()

    async def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError):
            self.writer.close()


def _spooled(parts: list[bytes]) -> Spool:
    """A spool holding ``parts`` (emptied: from here on the line goes to the file)."""
    from s3spill.spill.json_spool import Spool

    spool = Spool(lenient=True)
    for part in parts:
        spool.feed(part)
    parts.clear()
    return spool


class FileChannel:
    """Messages over plain file objects, each read and write on a worker thread.

    For a stdin or stdout that asyncio cannot watch (a regular file, ``/dev/null``): slower
    per message than a pipe, but a proxy started that way still works.
    """

    def __init__(self, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.stdin = stdin
        self.stdout = stdout
        self._lock = asyncio.Lock()

    async def receive(self) -> bytes | None:
        while True:
            line = await asyncio.to_thread(self.stdin.readline)
            if not line:
                return None
            if len(line) > 2 or line.strip():
                return line

    async def send(self, message: bytes) -> None:
        data = message if message.endswith(b"\n") else message + b"\n"

        def write() -> None:
            with contextlib.suppress(OSError, ValueError):
                self.stdout.write(data)
                self.stdout.flush()

        async with self._lock:
            await asyncio.to_thread(write)

    async def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.stdout.flush()


async def own_stdio(stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None,
                    read: bytes = b"") -> StreamChannel | FileChannel:
    """Our stdin/stdout as a channel (the client's side of the proxy); ``read``: what was
    already read of stdin (by :mod:`~s3spill.proxy.quick_start`, only from a pipe)."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    if not (_watchable(stdin, selectors.EVENT_READ) and _watchable(stdout, selectors.EVENT_WRITE)):
        return FileChannel(stdin, stdout)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_CHUNK)
    if read:
        reader.feed_data(read)
    # The pipe transports close what they are given: copies of the descriptors, so that
    # sys.stdin/sys.stdout stay open for the interpreter's own flush at exit.
    read_end = os.fdopen(os.dup(stdin.fileno()), "rb", buffering=0)
    write_end = os.fdopen(os.dup(stdout.fileno()), "wb", buffering=0)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), read_end)
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), write_end)
    except (ValueError, OSError):  # a regular file or /dev/null: not watchable
        read_end.close()
        write_end.close()
        return FileChannel(stdin, stdout)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return StreamChannel(reader, writer)


def _watchable(stream: IO[bytes], events: int) -> bool:
    """Can the event loop wait on ``stream``? (Not a regular file, not /dev/null.)"""
    try:
        fd = stream.fileno()
        with selectors.DefaultSelector() as probe:
            probe.register(fd, events)
    except (OSError, ValueError):
        return False
    return True


async def start_upstream(command: Sequence[str]) -> tuple[asyncio.subprocess.Process, StreamChannel]:
    """Start the upstream server; its stderr is ours."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=None,
            limit=READ_CHUNK)
    except OSError as exc:
        raise ConfigError(f"cannot start the upstream server {command[0]!r}: {exc.strerror or exc}") from None
    assert proc.stdin is not None and proc.stdout is not None
    return proc, StreamChannel(proc.stdout, proc.stdin, spool_over=channels.SPOOL_BYTES)


class Spawned:
    """An upstream started by :func:`~s3spill.proxy.spawn.spawn` before the event loop ran:
    its pipes become a channel, its exit is awaited on a worker thread."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    async def channel(self, read: bytes = b"") -> StreamChannel:
        """``read``: what was already read of its stdout."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=READ_CHUNK)
        if read:
            reader.feed_data(read)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self.proc.stdout)
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), self.proc.stdin)
        return StreamChannel(reader, asyncio.StreamWriter(transport, protocol, None, loop),
                             spool_over=channels.SPOOL_BYTES)

    def terminate(self) -> None:
        self.proc.terminate()

    def kill(self) -> None:
        self.proc.kill()

    async def wait(self) -> int:
        return await asyncio.to_thread(self.proc.wait)


async def stop_upstream(proc: asyncio.subprocess.Process | Spawned, channel: StreamChannel,
                        grace: float = EXIT_GRACE, hurry: asyncio.Event | None = None) -> int:
    """Close its stdin (the stdio transport's "goodbye"), then SIGTERM, then SIGKILL; when
    ``hurry`` is set meanwhile (we got SIGINT/SIGTERM: our client is done waiting), the next
    step comes at once and the rest get :data:`STOP_GRACE`."""
    await channel.close()
    exited = asyncio.ensure_future(proc.wait())
    for signal_it in (None, proc.terminate, proc.kill):
        if signal_it is not None:
            with contextlib.suppress(ProcessLookupError):
                signal_it()
        if hurry is not None and hurry.is_set():
            grace = STOP_GRACE
        hurried = asyncio.ensure_future((hurry or asyncio.Event()).wait())
        await asyncio.wait({exited, hurried}, timeout=grace, return_when=asyncio.FIRST_COMPLETED)
        hurried.cancel()
        if exited.done():
            return exited.result()
    return await exited


def stop_on_signals(stop: asyncio.Event) -> None:
    """SIGINT and SIGTERM set ``stop`` (a harness ends its MCP servers with them; either is
    a normal end, exit 0, not a traceback)."""
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)


def upstream_ended(code: int, unanswered: int) -> int:
    """Say in one line why the proxy is ending; our exit status (a signal N is 128 + N)."""
    how = f"exit status {code}" if code >= 0 else f"signal {-code}"
    line = f"s3spill mcp-proxy: the upstream server ended ({how})"
    if unanswered:
        line += f"; {unanswered} request(s) it left unanswered got an error"
    print(line, file=sys.stderr, flush=True)
    return code if code >= 0 else 128 - code


async def relay_stdio(relay: Relay, command: Sequence[str] | subprocess.Popen[bytes]) -> int:
    """Serve our stdin/stdout through ``relay`` to ``command`` (or to the upstream already
    started for it).

    0 when the client ended (end of stdin, SIGINT, SIGTERM); the upstream's status, with
    one line saying so, when the upstream ended first.
    """
    proc: asyncio.subprocess.Process | Spawned
    if isinstance(command, subprocess.Popen):
        proc = Spawned(command)
        upstream = await proc.channel()
    else:
        proc, upstream = await start_upstream(command)
    client = await own_stdio()
    stop = asyncio.Event()
    stop_on_signals(stop)
    return await relay_on(relay, proc, upstream, client, stop)


async def serve_after(relay: Relay, proc: subprocess.Popen[bytes], early: Early) -> int:
    """:func:`relay_stdio` after :mod:`~s3spill.proxy.quick_start` relayed the handshake."""
    spawned = Spawned(proc)
    upstream = await spawned.channel(early.upstream)
    client = await own_stdio(read=early.client)
    stop = asyncio.Event()
    stop_on_signals(stop)
    relay.negotiated(early.links)
    if early.pending is not None:
        from s3spill.proxy.quick_start import INIT_ID

        relay.adopt(INIT_ID, early.pending, "initialize")
    return await relay_on(relay, spawned, upstream, client, stop, ended=early.ended)


async def relay_on(relay: Relay, proc: asyncio.subprocess.Process | Spawned, upstream: StreamChannel,
                   client: Channel, stop: asyncio.Event, ended: str | None = None) -> int:
    """:func:`relay_stdio` once the channels are open (``ended``: the session ended before
    the relay ran, as :meth:`Relay.run` says it: only the ending is left to do)."""
    closed = ended or "stopped"
    try:
        if ended is None:
            closed = await relay.run(client, upstream, stop=stop)
        log.info("proxy.closed", side=closed)
    finally:
        code = await stop_upstream(proc, upstream, STOP_GRACE, None) if closed == "stopped" \
            else await stop_upstream(proc, upstream, EXIT_GRACE, stop)
        await client.close()
    return upstream_ended(code, relay.unanswered) if closed == "upstream" else 0


def run_stdio(relay: Relay, command: Sequence[str] | subprocess.Popen[bytes]) -> int:
    if not command:
        raise ConfigError("mcp-proxy needs the upstream server's command after --")
    return asyncio.run(relay_stdio(relay, command))
