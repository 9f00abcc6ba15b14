"""``mcp-proxy --upstream-url URL``: the upstream over MCP's streamable HTTP transport.

Why the SDK's transport here and not raw HTTP: streamable HTTP is sessions, SSE streams,
resumption and per-request headers, which the SDK's client transport already does; the
relay only needs whole messages in and out. The one thing the transport leaves to its
caller is the ``MCP-Protocol-Version`` header every request after the handshake must carry,
so this channel reads the version from the handshake's answer and stamps it on what follows.
Messages cross as JSON-RPC models (the SDK's transport speaks nothing else); their
``params`` and ``result`` are free-form objects, so nothing in them is lost.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import mcp_types as types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.message import ClientMessageMetadata, SessionMessage

from s3spill.log import get_logger
from s3spill.proxy.relay import Relay
from s3spill.proxy.stdio import MAX_MESSAGE_BYTES, own_stdio

log = get_logger("s3spill.proxy")


class SdkChannel:
    """A relay channel over the SDK's client transport streams."""

    def __init__(self, read_stream: Any, write_stream: Any) -> None:
        self.read_stream = read_stream
        self.write_stream = write_stream
        self.version: str | None = None
        self._initialize_ids: set[Any] = set()

    async def receive(self) -> bytes | None:
        while True:
            try:
                item = await self.read_stream.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return None
            if isinstance(item, Exception):
                log.warning("proxy.upstream_transport_error", error=f"{type(item).__name__}: {item}")
                continue
            message = item.message
            if isinstance(message, types.JSONRPCResponse) and message.id in self._initialize_ids:
                self._initialize_ids.discard(message.id)
                version = message.result.get("protocolVersion") if isinstance(message.result, dict) else None
                self.version = version if isinstance(version, str) else self.version
            raw: str = message.model_dump_json(by_alias=True, exclude_unset=True)
            return raw.encode()

    async def send(self, message: bytes) -> None:
        parsed = types.jsonrpc_message_adapter.validate_json(message, by_name=False)
        if isinstance(parsed, types.JSONRPCRequest) and parsed.method == "initialize":
            self._initialize_ids.add(parsed.id)
            self.version = None
        metadata = None
        if self.version is not None:
            metadata = ClientMessageMetadata(headers={MCP_PROTOCOL_VERSION_HEADER: self.version})
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self.write_stream.send(SessionMessage(parsed, metadata=metadata))

    async def close(self) -> None:
        with contextlib.suppress(anyio.ClosedResourceError):
            await self.write_stream.aclose()


async def relay_http(relay: Relay, url: str) -> int:
    """Serve our stdin/stdout through ``relay`` to the streamable-HTTP server at ``url``."""
    # The SDK caps one SSE event at 1 MiB by default: a result is as large as it is.
    async with streamable_http_client(url, max_sse_event_size=MAX_MESSAGE_BYTES) as (read_stream,
                                                                                     write_stream):
        client = await own_stdio()
        try:
            closed = await relay.run(client, SdkChannel(read_stream, write_stream))
            log.info("proxy.closed", side=closed)
        finally:
            await client.close()
    return 0
