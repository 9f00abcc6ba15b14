"""``s3spill mcp`` over stdio: the SDK's transport on pipes that a signal can interrupt.

Why not the SDK's ``stdio_server()`` as it is: it reads stdin on a worker thread, so a
SIGINT cancels everything but that blocked read, and the process never ends (harnesses
stop their MCP servers with SIGINT, then SIGTERM, then SIGKILL). Here stdin and stdout
are asyncio pipes (on copies of the descriptors), handed to the SDK's transport as the
async files it accepts; SIGINT and SIGTERM cancel the serving scope, and every way of
ending — end of stdin, SIGINT, SIGTERM — is a normal end: exit 0, nothing printed. A tool
running on a worker thread (a spill) is waited for: it commits whole or not at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import Any, cast

import anyio

#: Longest line (request) read from the client.
MAX_LINE = 1024 * 1024 * 1024


class _Lines:
    """The client's requests, one text line at a time (the SDK's ``async for line in stdin``)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", "replace")


class _Out:
    """Our answers (the SDK's ``await stdout.write(...)`` and ``flush()``)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def write(self, text: str) -> None:
        if not self.writer.is_closing():
            self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()


async def _pipes() -> tuple[_Lines, _Out] | None:
    """Our stdin/stdout as asyncio pipes, or None when either is not a pipe (a file, or no
    descriptor at all): the SDK's own transport serves those."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    try:
        read_fd, write_fd = sys.stdin.fileno(), sys.stdout.fileno()
    except (OSError, ValueError):  # not backed by a descriptor (an embedding's stand-in)
        return None
    read_end = os.fdopen(os.dup(read_fd), "rb", buffering=0)
    write_end = os.fdopen(os.dup(write_fd), "wb", buffering=0)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), read_end)
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), write_end)
    except (ValueError, OSError):
        read_end.close()
        write_end.close()
        return None
    return _Lines(reader), _Out(asyncio.StreamWriter(transport, protocol, None, loop))


def serve_stdio(server: Any) -> None:
    """Serve one client on stdin/stdout until it closes stdin or we get SIGINT/SIGTERM."""
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        pipes = await _pipes()
        streams: Any = stdio_server(*cast(Any, pipes)) if pipes is not None else stdio_server()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_cancel_on_signals, tg.cancel_scope)
            async with streams as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            tg.cancel_scope.cancel()

    anyio.run(main)


async def _cancel_on_signals(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return
