"""The JSON-RPC relay between one MCP client and its upstream server.

Why a relay of messages and not an SDK server in front of an SDK client: "pass everything
through unchanged" is then true by construction. Capabilities, resources, prompts,
completions, logging, sampling and elicitation requests from the server, progress
notifications, list-changed notifications, protocol versions neither side of us knows
yet — every message the proxy has no business with goes on as the bytes it came in, in
both directions, with its own id. The relay touches five things only:

* ``tools/call`` responses: each result over :attr:`Relay.floor` bytes goes through
  :class:`~s3spill.proxy.results.ResultSpiller` on a worker thread (other messages keep
  flowing meanwhile; the client matches responses by id, so order does not matter); a
  JSON-RPC error from the upstream goes on as it is;
* ``tools/call`` requests for our own tools (``<prefix>read_artifact`` …): answered here,
  never forwarded;
* ``tools/list`` responses: our three tools are appended to the last page; an upstream
  tool that takes one of our names makes the listing an error (a clash is never
  resolved silently: the pointers name our tools);
* the ``initialize`` (and ``server/discover``) response: a ``tools`` capability is added
  when the upstream has none, so the client asks for our tools;
* ``notifications/cancelled``: forwarded; a result that arrives for a cancelled call is
  dropped rather than spilled (the client ignores it anyway), and a cancel of one of our
  own calls is not forwarded (the upstream never saw that id).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from s3spill.agent.tools import LIST_TOOL, AgentTools
from s3spill.context.block_plan import UNKNOWN_IMAGE_TOKENS
from s3spill.log import get_logger
from s3spill.proxy.results import ResultSpiller
from s3spill.proxy.settings import ProxySettings

log = get_logger("s3spill.proxy")

#: JSON-RPC "method not found" and "internal error".
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603


class Channel(Protocol):
    """One side of the relay: whole JSON-RPC messages as bytes, one line each (the trailing
    newline may be there or not: a channel adds it when it is missing)."""

    async def receive(self) -> bytes | None:
        """The next message, or None once the other side has closed."""

    async def send(self, message: bytes) -> None: ...

    async def close(self) -> None:
        """No more messages will be sent (the upstream's stdin is closed, say)."""


@dataclass
class _Call:
    tool: str
    cancelled: bool = False


def own_tool_specs(tools: AgentTools, settings: ProxySettings) -> list[dict[str, Any]]:
    """Our tools as MCP ``Tool`` objects, under the proxy's names."""
    out = []
    for spec in tools.specs("mcp"):
        name = settings.list_tool if spec["name"] == LIST_TOOL else spec["name"]
        out.append({**spec, "name": name, "annotations": {
            "readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}})
    return out


class Relay:
    """Relay one client session to one upstream session, spilling what does not fit."""

    def __init__(self, results: ResultSpiller, tools: AgentTools, settings: ProxySettings) -> None:
        self.results = results
        self.tools = tools
        self.settings = settings
        self.specs = own_tool_specs(tools, settings)
        self._bare = {settings.read_tool: tools.read_name, settings.grep_tool: tools.grep_name,
                      settings.list_tool: LIST_TOOL}
        self.floor = _floor(settings, results)
        self._pending: dict[Any, _Call] = {}
        self._listing: set[Any] = set()
        self._handshake: set[Any] = set()
        self._local: set[Any] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self, client: Channel, upstream: Channel, *, drain_timeout: float = 10.0) -> str:
        """Relay until one side closes; returns which one did ("client" or "upstream").

        When the client goes, the upstream is told (its input is closed) and answers still
        on their way get up to ``drain_timeout`` seconds to reach the client.
        """
        up = asyncio.create_task(self._client_to_upstream(client, upstream))
        down = asyncio.create_task(self._upstream_to_client(upstream, client))
        done, _ = await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
        first = "client" if up in done else "upstream"
        for task in done:
            task.result()  # a crash of the relay itself is not hidden
        if first == "upstream":
            up.cancel()
        else:
            await upstream.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._settled(down), drain_timeout)
            down.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=drain_timeout)
        for task in (up, down):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return first

    async def _settled(self, down: asyncio.Task[None]) -> None:
        """Until the upstream has ended, or nothing the client asked for is outstanding."""
        while not down.done() and (self._pending or self._listing or self._handshake):
            await asyncio.wait({down}, timeout=0.05)

    # -- client -> upstream -----------------------------------------------------------

    async def _client_to_upstream(self, client: Channel, upstream: Channel) -> None:
        while (line := await client.receive()) is not None:
            msg = _parse(line)
            if isinstance(msg, dict) and self._intercept_request(msg, client):
                continue
            await upstream.send(line)

    def _intercept_request(self, msg: dict[str, Any], client: Channel) -> bool:
        """Note what the response will need; True when the message is answered here."""
        method = msg.get("method")
        if method is None:
            return False  # a response to a request of the server: not ours
        raw_params = msg.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        if "id" not in msg:
            if method == "notifications/cancelled":
                rid = _hashable(params.get("requestId"))
                if rid in self._local:
                    return True
                call = self._pending.get(rid)
                if call is not None:
                    call.cancelled = True
            return False
        mid = _hashable(msg["id"])
        if method == "tools/call":
            name = params.get("name")
            if isinstance(name, str) and name in self._bare:
                self._local.add(mid)
                arguments = params.get("arguments")
                self._spawn(self._answer_locally(client, msg["id"], name,
                                                 arguments if isinstance(arguments, dict) else {}))
                return True
            self._pending[mid] = _Call(name if isinstance(name, str) else "")
        elif method == "tools/list":
            self._listing.add(mid)
        elif method in ("initialize", "server/discover"):
            self._handshake.add(mid)
        return False

    async def _answer_locally(self, client: Channel, mid: Any, name: str, arguments: dict[str, Any]) -> None:
        try:
            outcome = await asyncio.to_thread(self.tools.call, self._bare[name], arguments)
            result: dict[str, Any] = {"content": [{"type": "text", "text": outcome.text}],
                                      "isError": outcome.is_error}
            if outcome.structured is not None and not outcome.is_error:
                result["structuredContent"] = outcome.structured
        except Exception as exc:  # a tool must never end the proxy; the model gets one line
            log.exception("proxy.own_tool_crashed", tool=name)
            result = {"content": [{"type": "text", "text": f"internal error in {name}: "
                                   f"{type(exc).__name__}: {exc}"}], "isError": True}
        finally:
            self._local.discard(_hashable(mid))
        await client.send(orjson.dumps({"jsonrpc": "2.0", "id": mid, "result": result}))

    # -- upstream -> client -----------------------------------------------------------

    async def _upstream_to_client(self, upstream: Channel, client: Channel) -> None:
        while (line := await upstream.receive()) is not None:
            msg = _parse(line)
            if isinstance(msg, dict) and "method" not in msg and "id" in msg:
                line = self._intercept_response(msg, line, client)
                if not line:
                    continue
            await client.send(line)

    def _intercept_response(self, msg: dict[str, Any], line: bytes, client: Channel) -> bytes:
        """The bytes to hand on now (b"" when handed on later, or never)."""
        mid = _hashable(msg["id"])
        call = self._pending.pop(mid, None)
        if call is not None:
            if call.cancelled:
                log.info("proxy.cancelled_result_dropped", tool=call.tool)
                return b""
            result = msg.get("result")
            if isinstance(result, dict) and len(line) > self.floor:
                # The parsed message is all the spill needs: the bytes are not kept twice.
                self._spawn(self._spill(client, msg, result, call))
                return b""
            return line
        if mid in self._listing:
            self._listing.discard(mid)
            return self._listed(msg) or line
        if mid in self._handshake:
            self._handshake.discard(mid)
            return _with_tools_capability(msg) or line
        return line

    async def _spill(self, client: Channel, msg: dict[str, Any], result: dict[str, Any], call: _Call) -> None:
        try:
            changed = await asyncio.to_thread(self.results.spill, result, call.tool, str(msg["id"]))
        except Exception:  # fail open: the upstream's own answer is better than none
            log.exception("proxy.spill_crashed", tool=call.tool)
            changed = None
        if call.cancelled:
            return
        await client.send(orjson.dumps(msg if changed is None else {**msg, "result": changed}))

    def _listed(self, msg: dict[str, Any]) -> bytes | None:
        result = msg.get("result")
        error = msg.get("error")
        if isinstance(error, dict) and error.get("code") == METHOD_NOT_FOUND:
            return orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": self.specs}})
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            return None
        if result.get("nextCursor"):
            return None  # our tools go on the last page
        names = {t.get("name") for t in result["tools"] if isinstance(t, dict)}
        clash = sorted(name for name in self._bare if name in names)
        if clash:
            text = (f"s3spill mcp-proxy: the upstream server has tool(s) named {', '.join(clash)}, "
                    f"which are the proxy's own; start the proxy with another --tool-prefix")
            log.error("proxy.tool_name_clash", tools=clash)
            return orjson.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                 "error": {"code": INTERNAL_ERROR, "message": text}})
        return orjson.dumps({**msg, "result": {**result, "tools": [*result["tools"], *self.specs]}})

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _with_tools_capability(msg: dict[str, Any]) -> bytes | None:
    result = msg.get("result")
    caps = result.get("capabilities") if isinstance(result, dict) else None
    if not isinstance(caps, dict) or "tools" in caps:
        return None
    assert isinstance(result, dict)
    return orjson.dumps({**msg, "result": {**result, "capabilities": {**caps, "tools": {}}}})


def _floor(settings: ProxySettings, results: ResultSpiller) -> int:
    """Message size (bytes) at or under which no result can be over any budget.

    A character and a token are each at least one byte of the message, so a message no
    larger than every threshold, the hard cap and the token budget needs no look; below
    the price of an image of unknown size, any image might be over the budget.
    """
    policy = results.policy
    limits = [policy.hard_cap_chars, policy.shell.threshold, policy.default.threshold,
              *(rule.threshold for rule in policy.tools.values())]
    if settings.max_inline_tokens is not None:
        if settings.max_inline_tokens < UNKNOWN_IMAGE_TOKENS:
            return 0
        limits.append(settings.max_inline_tokens)
    return min(limits)


def _parse(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None  # not ours to judge: the other side answers a parse error


def _hashable(value: Any) -> Any:
    return value if isinstance(value, str | int) and not isinstance(value, bool) else repr(value)
