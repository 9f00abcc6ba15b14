"""``mcp-proxy --http HOST:PORT``: the proxy served over streamable HTTP, one upstream per session.

Why one upstream per MCP session: an upstream is written for one client — its request ids,
its subscriptions, its handshake — so each HTTP client (each ``Mcp-Session-Id``) gets its
own upstream connection (its own process for a command, its own HTTP session for
``--upstream-url``), started on the client's first request and stopped when the client
ends the session (DELETE), goes idle, or the server stops.

Which s3spill session a client's results go to is decided as ``s3spill mcp --http`` decides
it: with ``--tokens FILE``, by the bearer token of *every* request (no known token: 401;
an MCP session opened with one token is not found with another: 404); without, the one
``--session`` of the server, on loopback only unless ``--allow-remote``. The SDK's
server-side transport speaks HTTP and SSE; the relay does the rest, as over stdio.
Progress notifications are sent on the stream of the request that asked for them (its
``progressToken``); other server messages go on the client's standalone GET stream.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.shared.message import ServerMessageMetadata

from s3spill.agent.tools import AgentTools
from s3spill.context.policy import SpillPolicy
from s3spill.fleet.quota import Quota
from s3spill.log import get_logger
from s3spill.proxy.channel import Channel
from s3spill.proxy.relay import Relay
from s3spill.proxy.results import ResultSpiller
from s3spill.proxy.sdk_streams import SdkStreams
from s3spill.proxy.settings import ProxySettings
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.usage.recorder import usage_recorder

log = get_logger("s3spill.proxy")

#: Seconds an MCP session may stay without a request in flight before it is closed.
IDLE_TIMEOUT = 1800.0
UpstreamFactory = Callable[[], AbstractAsyncContextManager[Channel]]
_UNAUTHORIZED = (b'{"error": "unauthorized", '
                 b'"error_description": "a bearer token issued for a session is required"}')


class ServerSdkChannel(SdkStreams):
    """The client side of the relay over the SDK's server transport streams."""

    side = "client"

    def __init__(self, read_stream: Any, write_stream: Any) -> None:
        super().__init__(read_stream, write_stream)
        self._progress: dict[Any, Any] = {}  # progressToken -> id of the request that set it

    def _observe(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest) and isinstance(message.params, dict):
            meta = message.params.get("_meta")
            if isinstance(meta, dict) and meta.get("progressToken") is not None:
                self._progress[meta["progressToken"]] = message.id

    async def send(self, message: bytes) -> None:
        parsed = types.jsonrpc_message_adapter.validate_json(message, by_name=False)
        metadata = None
        if isinstance(parsed, types.JSONRPCNotification) and parsed.method == "notifications/progress" \
                and isinstance(parsed.params, dict):
            related = self._progress.get(parsed.params.get("progressToken"))
            if related is not None:
                metadata = ServerMessageMetadata(related_request_id=related)
        elif isinstance(parsed, types.JSONRPCResponse | types.JSONRPCError):
            self._progress = {k: v for k, v in self._progress.items() if v != parsed.id}
        await self._write(parsed, metadata)


class SessionSpillers:
    """Per s3spill session: its Spiller, read tools and result spiller (created on first use)."""

    def __init__(self, store: ObjectStore, settings: ProxySettings, policy: SpillPolicy | None = None,
                 quota: Quota | None = None) -> None:
        self.store = store
        self.settings = settings
        self.policy = policy or settings.policy()
        self.quota = quota
        self._lock = threading.Lock()
        self._made: dict[str, tuple[Spiller, AgentTools, ResultSpiller]] = {}

    def relay(self, session: str) -> Relay:
        with self._lock:
            found = self._made.get(session)
            if found is None:
                spiller = Spiller(self.store, session, self.policy, quota=self.quota,
                                  usage=usage_recorder(self.store))
                found = self._made[session] = (spiller, AgentTools(self.store, session, policy=self.policy,
                                                                          usage=usage_recorder(self.store)),
                                               ResultSpiller(spiller, self.settings))
        return Relay(found[2], found[1], self.settings)

    def close(self) -> None:
        with self._lock:
            made = list(self._made.values())
            self._made.clear()
        for spiller, _, _ in made:
            spiller.close()


@dataclass
class _Open:
    transport: StreamableHTTPServerTransport
    session: str
    task: asyncio.Task[None] | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)


class ProxyHttpApp:
    """ASGI app: ``/mcp``, one relay and one upstream per MCP session."""

    def __init__(self, spillers: SessionSpillers, upstream: UpstreamFactory,
                 session_for: Callable[[str | None], str | None], security: Any = None,
                 path: str = "/mcp") -> None:
        self.spillers = spillers
        self.upstream = upstream
        self.session_for = session_for
        self.security = security
        self.path = path
        self._open: dict[str, _Open] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http" or scope.get("path") != self.path:
            await _reply(send, 404, b'{"error": "not found"}')
            return
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope.get("headers", [])}
        session = await anyio.to_thread.run_sync(self.session_for, headers.get("authorization"))
        if session is None:
            await _reply(send, 401, _UNAUTHORIZED, [(b"www-authenticate", b'Bearer realm="s3spill"')])
            return
        mcp_id = headers.get("mcp-session-id")
        if mcp_id is not None:
            entry = self._open.get(mcp_id)
            if entry is None or entry.session != session:  # another token's session: as if absent
                await _reply(send, 404, b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32600, '
                             b'"message": "Session not found"}}')
                return
            await entry.transport.handle_request(scope, receive, send)
            return
        receive, opening = await _peek_initialize(scope, receive)
        if not opening:  # only an initialize opens a session (and starts an upstream)
            await _reply(send, 400, b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32600, '
                         b'"message": "Bad Request: Missing session ID"}}')
            return
        opened = _Open(StreamableHTTPServerTransport(mcp_session_id=uuid.uuid4().hex,
                                                     security_settings=self.security,
                                                     idle_timeout=IDLE_TIMEOUT), session)
        mcp_id = opened.transport.mcp_session_id
        assert mcp_id is not None
        self._open[mcp_id] = opened
        opened.task = asyncio.create_task(self._serve(mcp_id, opened))
        await opened.ready.wait()
        await opened.transport.handle_request(scope, receive, send)

    async def _serve(self, mcp_id: str, opened: _Open) -> None:
        """One MCP session: its upstream and its relay, until the client or the upstream ends."""
        transport = opened.transport
        try:
            async with transport.connect() as (read_stream, write_stream):
                opened.ready.set()
                try:
                    async with self.upstream() as upstream:
                        relay = await anyio.to_thread.run_sync(self.spillers.relay, opened.session)
                        scope = transport.idle_scope or anyio.CancelScope()
                        with scope:
                            side = await relay.run(ServerSdkChannel(read_stream, write_stream), upstream)
                            log.info("proxy.http_session_closed", side=side)
                finally:
                    # Terminated before its streams close, so the transport knows the end is ours.
                    if not transport.is_terminated:
                        with anyio.CancelScope(shield=True):
                            await transport.terminate()
        except Exception:
            log.exception("proxy.http_session_crashed")
        finally:
            opened.ready.set()
            self._open.pop(mcp_id, None)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                tasks = [o.task for o in self._open.values() if o.task is not None]
                for task in tasks:
                    task.cancel()
                if tasks:
                    await asyncio.wait(tasks, timeout=10)
                await anyio.to_thread.run_sync(self.spillers.close)
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _peek_initialize(scope: dict[str, Any], receive: Any) -> tuple[Any, bool]:
    """(a receive that replays the body, whether the request is an ``initialize``)."""
    if scope.get("method") != "POST":
        return receive, False
    chunks: list[dict[str, Any]] = []
    while True:
        message = await receive()
        chunks.append(message)
        if message["type"] != "http.request" or not message.get("more_body"):
            break
    body = b"".join(m.get("body", b"") for m in chunks)
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    items = parsed if isinstance(parsed, list) else [parsed]
    opening = any(isinstance(i, dict) and i.get("method") == "initialize" for i in items)
    pending = iter(chunks)

    async def replay() -> Any:
        return next(pending, None) or await receive()

    return replay, opening


async def _reply(send: Any, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*headers, *(extra or [])]})
    await send({"type": "http.response.body", "body": body})


def stdio_upstream(command: list[str]) -> UpstreamFactory:
    """Each MCP session starts its own ``command``."""
    from s3spill.proxy.stdio import start_upstream, stop_upstream

    @asynccontextmanager
    async def open_one() -> AsyncIterator[Channel]:
        proc, channel = await start_upstream(command)
        try:
            yield channel
        finally:
            await stop_upstream(proc, channel)

    return open_one


def http_upstream(url: str) -> UpstreamFactory:
    """Each MCP session opens its own streamable-HTTP session with ``url``."""
    from mcp.client.streamable_http import streamable_http_client

    from s3spill.proxy.http_upstream import SdkChannel
    from s3spill.proxy.stdio import MAX_MESSAGE_BYTES

    @asynccontextmanager
    async def open_one() -> AsyncIterator[Channel]:
        async with streamable_http_client(url, max_sse_event_size=MAX_MESSAGE_BYTES) as (read, write):
            yield SdkChannel(read, write)

    return open_one


def serve(app: ProxyHttpApp, host: str, port: int) -> None:
    """Serve ``app`` at ``http://HOST:PORT/mcp`` until interrupted."""
    import uvicorn

    log.info("proxy.http_listening", host=host, port=port)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on")
    anyio.run(uvicorn.Server(config).serve)
