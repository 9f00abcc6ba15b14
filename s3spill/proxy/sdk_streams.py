"""A relay channel over the MCP SDK's transport streams (either side of an HTTP proxy).

The SDK hands messages as parsed ``SessionMessage`` objects; the relay works on bytes.
Receiving, turning transport errors into log lines and closing are the same on both
sides; what each side must remember about a message (progress tokens on the client
side, the negotiated protocol version upstream) is its ``_observe`` and ``send``.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import MessageMetadata, SessionMessage

from s3spill.log import get_logger

log = get_logger("s3spill.proxy")


class SdkStreams:
    """Bytes in and out of an SDK transport's read and write streams."""

    #: Which side this is, in the log event of a transport error (``proxy.<side>_transport_error``).
    side = "sdk"

    def __init__(self, read_stream: Any, write_stream: Any) -> None:
        self.read_stream = read_stream
        self.write_stream = write_stream

    async def receive(self) -> bytes | None:
        while True:
            try:
                item = await self.read_stream.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return None
            if isinstance(item, Exception):
                log.warning(f"proxy.{self.side}_transport_error", error=f"{type(item).__name__}: {item}")
                continue
            message = item.message
            self._observe(message)
            raw: str = message.model_dump_json(by_alias=True, exclude_unset=True)
            return raw.encode()

    def _observe(self, message: types.JSONRPCMessage) -> None:
        """What this side remembers of a message it received (nothing by default)."""

    async def _write(self, parsed: types.JSONRPCMessage, metadata: MessageMetadata = None) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self.write_stream.send(SessionMessage(parsed, metadata=metadata))

    async def close(self) -> None:
        with contextlib.suppress(anyio.ClosedResourceError):
            await self.write_stream.aclose()
