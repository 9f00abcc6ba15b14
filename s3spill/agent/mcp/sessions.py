"""``s3spill mcp --http --tokens FILE``: one HTTP server for many sessions, bound by bearer token.

One ``s3spill mcp`` per agent session is simple but does not scale to a fleet: a process
per session, a port per session. Here one server serves every session that has a token
(:mod:`s3spill.agent.mcp.tokens`), and the session of each request is decided by the
token that request carries — never by an argument, a header the model fills in, or the
MCP session id (which is only a transport handle: a client presenting another token on
the same MCP session reaches that token's session, not the first one's).

Two gates, both on every request: an ASGI gate in front of the SDK's app answers 401 (with
``WWW-Authenticate: Bearer``) to any HTTP request without a known token, so nothing
unauthenticated reaches the MCP layer; and the tool handler resolves the session again
from the HTTP request the SDK hands it, so a token revoked mid-connection stops working on
its next call. Per session, the tools (and the ``externalize`` spiller) are created on
first use and kept until the server stops.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from s3spill._version import __version__
from s3spill.agent.mcp.config import check_bind
from s3spill.agent.mcp.server import (
    EXTERNALIZE_TOOL,
    INSTRUCTIONS,
    SERVER_NAME,
    _externalize,
    _tool_listing,
    resource_handlers,
    run_off_loop,
    spiller_externalizer,
    tool_result,
)
from s3spill.agent.mcp.tokens import TokenRegistry
from s3spill.agent.resources import ArtifactResources
from s3spill.agent.tools import AgentTools, ToolOutcome
from s3spill.context.policy import SpillPolicy
from s3spill.log import get_logger
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.usage.recorder import usage_recorder

log = get_logger("s3spill.mcp")

UNAUTHORIZED = "Unauthorized: this request carries no valid bearer token for any session"
_UNAUTHORIZED_BODY = (b'{"error": "unauthorized", '
                      b'"error_description": "a bearer token issued for a session is required"}')


class SessionPool:
    """The tools (and spiller) of each session, created on first use; thread-safe."""

    def __init__(self, store: ObjectStore, *, externalize: bool = True,
                 policy: SpillPolicy | None = None) -> None:
        self.store = store
        self.externalize = externalize
        self.policy = policy or SpillPolicy()
        self._lock = threading.Lock()
        self._tools: dict[str, AgentTools] = {}
        self._spillers: dict[str, Spiller] = {}

    def tools(self, session: str) -> AgentTools:
        with self._lock:
            found = self._tools.get(session)
            if found is None:
                found = self._tools[session] = AgentTools(self.store, session, policy=self.policy,
                                                             usage=usage_recorder(self.store))
            return found

    def spiller(self, session: str) -> Spiller:
        with self._lock:
            found = self._spillers.get(session)
            if found is None:
                found = self._spillers[session] = Spiller(self.store, session, self.policy,
                                                                 usage=usage_recorder(self.store))
            return found

    def resources(self, session: str) -> ArtifactResources:
        """The session's artifacts as MCP resources (over the same read tools)."""
        return ArtifactResources(self.tools(session))

    def run(self, session: str, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        if name == EXTERNALIZE_TOOL and self.externalize:
            return _externalize(spiller_externalizer(self.spiller(session)), arguments)
        return self.tools(session).call(name, arguments)

    def close(self) -> None:
        with self._lock:
            spillers = list(self._spillers.values())
            self._spillers.clear()
        for spiller in spillers:
            spiller.close()


def _authorization(ctx: ServerRequestContext[Any, Any]) -> str | None:
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return None
    value = headers.get("authorization")
    return str(value) if value is not None else None


def build_token_server(pool: SessionPool, tokens: TokenRegistry) -> Server[Any]:
    """A low-level MCP server whose every tool call runs in the session of its request's token."""
    prototype = AgentTools(pool.store, "listing-only", policy=pool.policy)  # names and schemas only
    listing = _tool_listing(prototype, with_externalize=pool.externalize)
    schemas = {tool.name: tool.input_schema for tool in listing}

    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        session = tokens.session_from_header(_authorization(ctx))
        if session is None:
            log.warning("mcp.unauthorized_call", tool=params.name)
            outcome = ToolOutcome(UNAUTHORIZED, is_error=True)
        else:
            bound = session
            outcome = await run_off_loop(lambda name, args: pool.run(bound, name, args), params.name,
                                         arguments)
        return tool_result(outcome)

    def resources_for(ctx: ServerRequestContext[Any, Any]) -> ArtifactResources | None:
        session = tokens.session_from_header(_authorization(ctx))
        return None if session is None else pool.resources(session)

    return Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS,
                  get_tool_input_schema=schemas.get, on_list_tools=list_tools, on_call_tool=call_tool,
                  **resource_handlers(resources_for))


class BearerGate:
    """ASGI middleware: an HTTP request without a known bearer token gets 401, nothing else."""

    def __init__(self, app: Any, tokens: TokenRegistry) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        header = next((value.decode("latin-1") for key, value in scope.get("headers", [])
                       if key == b"authorization"), None)
        session = await anyio.to_thread.run_sync(self.tokens.session_from_header, header)
        if session is None:
            body = _UNAUTHORIZED_BODY
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="s3spill"'),
                (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def serve_http_tokens(server: Server[Any], tokens: TokenRegistry, host: str, port: int, *,
                      allow_remote: bool = False) -> None:
    """Serve the streamable HTTP transport at ``http://HOST:PORT/mcp`` behind the bearer gate."""
    check_bind(host, allow_remote=allow_remote)
    import uvicorn

    app = BearerGate(server.streamable_http_app(host=host), tokens)
    log.info("mcp.http_listening", host=host, port=port, mode="tokens")
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            lifespan="on")
    anyio.run(uvicorn.Server(config).serve)
