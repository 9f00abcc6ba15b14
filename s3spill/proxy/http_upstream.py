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

import asyncio
import sys
from typing import Any

import mcp_types as types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.message import ClientMessageMetadata

from s3spill.log import get_logger
from s3spill.proxy.relay import Relay
from s3spill.proxy.sdk_streams import SdkStreams
from s3spill.proxy.stdio import MAX_MESSAGE_BYTES, own_stdio, stop_on_signals

log = get_logger("s3spill.proxy")


class SdkChannel(SdkStreams):
    """A relay channel over the SDK's client transport streams."""

    side = "upstream"

    def __init__(self, read_stream: Any, write_stream: Any) -> None:
        super().__init__(read_stream, write_stream)
        self.version: str | None = None
        self._initialize_ids: set[Any] = set()

    def _observe(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse) and message.id in self._initialize_ids:
            self._initialize_ids.discard(message.id)
            version = message.result.get("protocolVersion") if isinstance(message.result, dict) else None
            self.version = version if isinstance(version, str) else self.version

    async def send(self, message: bytes) -> None:
        parsed = types.jsonrpc_message_adapter.validate_json(message, by_name=False)
        if isinstance(parsed, types.JSONRPCRequest) and parsed.method == "initialize":
            self._initialize_ids.add(parsed.id)
            self.version = None
        metadata = None
        if self.version is not None:
            metadata = ClientMessageMetadata(headers={MCP_PROTOCOL_VERSION_HEADER: self.version})
        await self._write(parsed, metadata)


async def relay_http(relay: Relay, url: str) -> int:
    """Serve our stdin/stdout through ``relay`` to the streamable-HTTP server at ``url``."""
    # The SDK caps one SSE event at 1 MiB by default: a result is as large as it is.
    async with streamable_http_client(url, max_sse_event_size=MAX_MESSAGE_BYTES) as (read_stream,
                                                                                     write_stream):
        client = await own_stdio()
        stop = asyncio.Event()
        stop_on_signals(stop)
        try:
            closed = await relay.run(client, SdkChannel(read_stream, write_stream), stop=stop)
            log.info("proxy.closed", side=closed)
        finally:
            await client.close()
    if closed == "upstream":
        left = f"; {relay.unanswered} request(s) it left unanswered got an error" if relay.unanswered else ""
        print(f"s3spill mcp-proxy: the upstream server at {url} closed the connection{left}",
              file=sys.stderr, flush=True)
        return 1
    return 0
