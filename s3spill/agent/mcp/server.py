"""``s3spill mcp``: the retrieval tools over the Model Context Protocol (official SDK, 2.x).

Why the low-level ``Server`` and not ``MCPServer``: the tools already exist, transport-free,
in :class:`~s3spill.agent.tools.AgentTools` — with their own JSON schemas, strict argument
checks and one-line errors. The decorator API would derive a second schema from Python
signatures and turn a wrong argument type into a multi-line pydantic report; with the
low-level handlers the model sees the same schema and the same one-line message whether
its harness speaks MCP or declares the tools to a chat API itself.

What the server is bound to, and why it is not an argument: one store and one session,
both from the server's configuration (``--store``, ``--session`` / ``S3SPILL_SESSION``).
The model names an artifact only by its source id, and an id of another session is
refused exactly as the CLI refuses it (:class:`~s3spill.errors.SourceIdError`).

Every failure — an unknown or foreign id, a tampered artifact, an unreachable store, a
bad argument — is an MCP *tool error* (``isError: true``) with one line of text; nothing
a tool does can end the server. Tool bodies run on worker threads (the store is
blocking I/O), so one slow read does not stall other requests on the HTTP transport.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from s3spill._version import __version__
from s3spill.agent.mcp.config import check_bind, rebinding_allowlist
from s3spill.log import get_logger

if TYPE_CHECKING:  # imported where used: ``initialize`` is answered before they load (build_deferred)
    from s3spill.agent.resources import ArtifactResources
    from s3spill.agent.tools import AgentTools, ToolOutcome
    from s3spill.spill.spiller import Spiller

log = get_logger("s3spill.mcp")

SERVER_NAME = "s3spill"
INSTRUCTIONS = (
    "Large tool outputs in this session are stored by s3spill; the model receives a preview "
    'and a pointer with stored as source_id="artifact:…". Use read_artifact to page through a '
    "stored output and grep_artifact to search it, list_artifacts to find one whose pointer you "
    "no longer have; never re-run a command just to see its output."
)
#: Harness-facing: takes a complete tool output and returns the model-facing text.
EXTERNALIZE_TOOL = "externalize"
#: ``externalize``'s text, tool, call_id, exit_code -> the model-facing text.
Externalizer = Callable[[str, str, str | None, int | None], str]

_EXTERNALIZE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The tool's complete output."},
        "tool": {"type": "string", "description": "Name of the tool that produced it (e.g. bash)."},
        "call_id": {"type": ["string", "null"], "description": "The tool call's id, if any."},
        "exit_code": {"type": ["integer", "null"], "description": "The command's exit status, if any."},
    },
    "required": ["text", "tool"],
}
_EXTERNALIZE_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "The text to put in the model's context."}},
    "required": ["text"],
}


class _Served:
    """What the handlers serve: the tools, their listing, the externalizer, the resources."""

    def __init__(self, tools: AgentTools, externalizer: Externalizer | None) -> None:
        from s3spill.agent.resources import ArtifactResources

        self.tools, self.externalizer = tools, externalizer
        self.listing = _tool_listing(tools, with_externalize=externalizer is not None)
        self.schemas = {tool.name: tool.input_schema for tool in self.listing}
        self.resources = ArtifactResources(tools)

    def run(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        if name == EXTERNALIZE_TOOL and self.externalizer is not None:
            return _externalize(self.externalizer, arguments)
        return self.tools.call(name, arguments)


class _Deferred:
    """:class:`_Served`, built once by ``make`` on a thread of its own, waited for by whoever
    needs it first; what ``make`` raised is raised to each."""

    def __init__(self, make: Callable[[], tuple[AgentTools, Externalizer | None]] | None,
                 ready: _Served | None = None) -> None:
        self._make, self._done = make, threading.Event()
        self._value: _Served | None = ready
        self._error: BaseException | None = None
        if ready is not None:
            self._done.set()

    def start(self) -> None:
        threading.Thread(target=self._build, daemon=True, name="s3spill-mcp-build").start()

    def _build(self) -> None:
        try:
            assert self._make is not None
            self._value = _Served(*self._make())
        except BaseException as exc:
            log.exception("mcp.build_failed")
            self._error = exc
        finally:
            self._done.set()

    def get(self) -> _Served:
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value

    async def aget(self) -> _Served:
        return self._value if self._value is not None else await anyio.to_thread.run_sync(self.get)


def build_server(tools: AgentTools, externalizer: Externalizer | None = None) -> Server[Any]:
    """A low-level MCP server exposing ``tools`` (and ``externalize`` when given one)."""
    return _server(_Deferred(None, _Served(tools, externalizer)))


def build_deferred(make: Callable[[], tuple[AgentTools, Externalizer | None]],
                   ) -> tuple[Server[Any], Callable[[], Any]]:
    """:func:`build_server` whose tools ``make`` builds on a thread, started now: the SDK
    answers ``initialize`` meanwhile (it needs none of them), the first request that needs
    them waits. Returns the server and what waits for the build (and raises its failure)."""
    deferred = _Deferred(make)
    deferred.start()
    return _server(deferred), deferred.get


def _server(deferred: _Deferred) -> Server[Any]:
    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=(await deferred.aget()).listing)

    async def call_tool(ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        served = await deferred.aget()
        return tool_result(await run_off_loop(served.run, params.name, dict(params.arguments or {})))

    return Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS,
                  get_tool_input_schema=lambda name: deferred.get().schemas.get(name),
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  **resource_handlers(lambda ctx: deferred.get().resources))


#: The artifact resources a request may reach (None: none, its token opens no session).
ResourcesFor = Callable[[ServerRequestContext[Any, Any]], "ArtifactResources | None"]


def resource_handlers(resources_for: ResourcesFor) -> dict[str, Any]:
    """The low-level server's resources/list, resources/templates/list and resources/read,
    each on the artifacts of the session its request is bound to."""
    from mcp import MCPError

    from s3spill.agent.resources import RESOURCE_NOT_FOUND, TEMPLATE

    async def list_resources(ctx: ServerRequestContext[Any, Any],
                             params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        resources = await anyio.to_thread.run_sync(resources_for, ctx)
        listed = [] if resources is None else await anyio.to_thread.run_sync(resources.listing)
        return types.ListResourcesResult.model_validate({"resources": listed})

    async def list_templates(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None,
                             ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult.model_validate({"resourceTemplates": [TEMPLATE]})

    async def read_resource(ctx: ServerRequestContext[Any, Any],
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        resources = await anyio.to_thread.run_sync(resources_for, ctx)
        if resources is None:
            raise MCPError(RESOURCE_NOT_FOUND,
                           "Resource not found: this request carries no valid bearer token")
        answer = await anyio.to_thread.run_sync(resources.read, str(params.uri))
        if "error" in answer:
            raise MCPError(answer["error"]["code"], answer["error"]["message"])
        return types.ReadResourceResult.model_validate(answer["result"])

    return {"on_list_resources": list_resources, "on_list_resource_templates": list_templates,
            "on_read_resource": read_resource}


async def run_off_loop(run: Callable[[str, Mapping[str, Any]], ToolOutcome], name: str,
                       arguments: Mapping[str, Any]) -> ToolOutcome:
    """Run a blocking tool on a worker thread (one slow grep must not stall other requests);
    a crash becomes a one-line error outcome, never the end of the server."""
    from s3spill.agent.tools import ToolOutcome, error_line

    try:
        return await anyio.to_thread.run_sync(run, name, arguments)
    except Exception as exc:  # a tool must never end the server; the model gets one line
        log.exception("mcp.tool_crashed", tool=name)
        return ToolOutcome(f"internal error in {name}: {error_line(exc)}", is_error=True)


def tool_result(outcome: ToolOutcome) -> types.CallToolResult:
    """The MCP answer: the text, plus structured content unless it is an error."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=outcome.text)],
                                structured_content=None if outcome.is_error else outcome.structured,
                                is_error=outcome.is_error)


def _tool_listing(tools: AgentTools, *, with_externalize: bool) -> list[types.Tool]:
    """The declared tools: names, titles, descriptions, input and output schemas."""
    from s3spill.agent.tool_specs import EXTERNALIZE_DESCRIPTION

    listing = [
        types.Tool(name=spec["name"], title=spec["title"], description=spec["description"],
                   input_schema=spec["inputSchema"], output_schema=spec["outputSchema"],
                   annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True,
                                                     open_world_hint=False))
        for spec in tools.specs("mcp")
    ]
    if with_externalize:
        listing.append(types.Tool(name=EXTERNALIZE_TOOL, title="Store a tool output (harness)",
                                  description=EXTERNALIZE_DESCRIPTION,
                                  input_schema=_EXTERNALIZE_SCHEMA, output_schema=_EXTERNALIZE_OUTPUT,
                                  annotations=types.ToolAnnotations(read_only_hint=False,
                                                                    open_world_hint=False)))
    return listing


def spiller_externalizer(spiller: Spiller) -> Externalizer:
    """``externalize`` backed by a :class:`~s3spill.spill.spiller.Spiller` (which never raises for
    store failures: a degraded result says the output could not be saved)."""

    def externalize(text: str, tool: str, call_id: str | None, exit_code: int | None) -> str:
        return spiller.externalize(text, tool, call_id, exit_code).context_text

    return externalize


def _externalize(externalizer: Externalizer, arguments: Mapping[str, Any]) -> ToolOutcome:
    from s3spill.agent.tools import ToolOutcome

    text, tool = arguments.get("text"), arguments.get("tool")
    call_id, exit_code = arguments.get("call_id"), arguments.get("exit_code")
    unknown = sorted(set(arguments) - set(_EXTERNALIZE_SCHEMA["properties"]))
    if unknown or not isinstance(text, str) or not isinstance(tool, str) or not tool \
            or not (call_id is None or isinstance(call_id, str)) \
            or not (exit_code is None or (isinstance(exit_code, int) and not isinstance(exit_code, bool))):
        return ToolOutcome("InvalidRequest: externalize takes text (string), tool (string), "
                           "call_id (string or null), exit_code (integer or null)", is_error=True)
    context_text = externalizer(text, tool, call_id, exit_code)
    return ToolOutcome(context_text, structured={"text": context_text})


# -- transports --------------------------------------------------------------------------


def transport_security(host: str) -> Any:
    """The SDK's DNS-rebinding settings for ``host``: on for every loopback address."""
    from mcp.server.transport_security import TransportSecuritySettings

    allow = rebinding_allowlist(host)
    if allow is None:
        return None
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allow[0],
                                     allowed_origins=allow[1])


def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on stdin/stdout until it closes stdin, or SIGINT/SIGTERM (exit 0)."""
    from s3spill.agent.mcp.stdio import serve_stdio as serve

    serve(server)


def serve_http(server: Server[Any], host: str, port: int, *, allow_remote: bool = False) -> None:
    """Serve the streamable HTTP transport at ``http://HOST:PORT/mcp`` until interrupted.

    There is no authentication, so a non-loopback address is refused unless the operator
    says otherwise; on every loopback address the SDK's DNS-rebinding protection
    (Host/Origin checks) is on (the SDK itself enables it only for three host names).
    """
    check_bind(host, allow_remote=allow_remote)
    import uvicorn

    app = server.streamable_http_app(host=host, transport_security=transport_security(host))
    log.info("mcp.http_listening", host=host, port=port)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    anyio.run(uvicorn.Server(config).serve)
