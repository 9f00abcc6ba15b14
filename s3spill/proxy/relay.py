"""The JSON-RPC relay between one MCP client and its upstream server.

Why a relay of messages and not an SDK server in front of an SDK client: "pass everything
through unchanged" is then true by construction. Capabilities, resources, prompts,
completions, logging, sampling and elicitation requests from the server, progress
notifications, list-changed notifications, protocol versions neither side of us knows
yet — every message the proxy has no business with goes on as it came (a request, and
the answer to it, under the id the proxy gave it: :mod:`~s3spill.proxy.outstanding`).
What the relay does itself:

* every line is parsed (:mod:`~s3spill.proxy.wire`); a client's line that is not JSON
  gets a JSON-RPC parse error and is never forwarded, an upstream's is dropped and logged,
  and so is an upstream response to an id the proxy did not send — the upstream cannot
  answer for the proxy, nor for a request it was never asked;
* ``tools/call`` for our own tools (``<prefix>read_artifact`` …): answered here only;
* ``tools/call`` responses, and ``tasks/result`` of a call made as a task (2025-11-25):
  each result over :attr:`Relay.floor` bytes goes through
  :class:`~s3spill.proxy.results.ResultSpiller` on a worker thread (other messages keep
  flowing meanwhile; the client matches responses by id, so order does not matter); a
  JSON-RPC error from the upstream goes on as it is. A call the upstream does not answer
  within ``call_timeout`` seconds gets a timeout error and is cancelled upstream;
* ``tools/list`` pages and the handshake: :mod:`~s3spill.proxy.listing`;
* ``notifications/cancelled``: forwarded under the proxy's id; a result that arrives for
  a cancelled call is dropped rather than sent, a cancel of one of our own calls stops it;
* the upstream's end: every request still outstanding gets a JSON-RPC error.

A JSON-RPC batch (2025-03-26; removed in 2025-06-18) is taken apart and each message
handled as if it had come alone.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

from s3spill.agent.tools import LIST_TOOL, AgentTools
from s3spill.context.block_plan import UNKNOWN_IMAGE_TOKENS
from s3spill.log import get_logger
from s3spill.proxy.channel import Channel, Closed, Drops, deliver
from s3spill.proxy.handshake import handshake
from s3spill.proxy.listing import listed_page
from s3spill.proxy.outstanding import Outstanding, Sent
from s3spill.proxy.resources import LISTS, ProxyResources
from s3spill.proxy.results import UNLISTED, ResultSpiller
from s3spill.proxy.schemas import widened
from s3spill.proxy.settings import ProxySettings
from s3spill.proxy.wire import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    MALFORMED,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    encode,
    error,
    is_id,
    parse,
    parse_spooled,
)
from s3spill.spill.json_spool import Spool

log = get_logger("s3spill.proxy")

#: Methods whose answer carries the server's capabilities.
_HANDSHAKES = ("initialize", "server/discover")
#: Answers the relay changes (its handshake, tools and resources lists): a spooled one is
#: read into memory first. Any other answer is sent on from its spool.
_LOOKED_INTO = frozenset({*_HANDSHAKES, "tools/list", *LISTS})
#: Tasks whose tool is remembered (the oldest forgotten first; its result then goes on as it is).
_TASKS_KEPT = 10_000
#: Where a 2026-07-28 request names its protocol version (there is no handshake), and the
#: first such version: its results must carry ``resultType`` (a stricter client rejects one
#: without, an older one rejects one with it).
_VERSION_META = "io.modelcontextprotocol/protocolVersion"
_MODERN_SINCE = "2026-07-28"


def _modern(params: dict[str, Any]) -> bool:
    meta = params.get("_meta")
    version = meta.get(_VERSION_META) if isinstance(meta, dict) else None
    return isinstance(version, str) and version >= _MODERN_SINCE


def _tagged(body: dict[str, Any]) -> dict[str, Any]:
    """A result of a 2026-07-28 request, with its ``resultType`` (``complete`` when absent)."""
    result = body.get("result")
    if isinstance(result, dict) and "resultType" not in result:
        return {**body, "result": {**result, "resultType": "complete"}}
    return body
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
        self._sent = Outstanding()
        self._local: dict[Any, asyncio.Task[None]] = {}  # client id -> our own tool's answer
        self._spilling: dict[Any, Sent] = {}  # client id -> a result being spilled
        #: Upstream lines taken off the wire whose answer is still being written to the client.
        self._delivering = 0
        self._schemas: dict[str, dict[str, Any] | None] = {}  # tool -> its outputSchema, as listed
        self.resources = ProxyResources(tools)
        self._links = True  # resource_link blocks in pointers (not before 2025-06-18)
        self._tasks: set[asyncio.Task[None]] = set()
        self._spools: set[Spool] = set()  # spooled lines a spill task still reads
        self._task_tools: dict[Any, str] = {}  # task id -> the tool whose call created it
        self._client: Channel = Closed()
        self._upstream: Channel = Closed()
        #: Requests answered with an error because the upstream ended before it answered them.
        self.unanswered = 0
        self.dropped = Drops()

    async def run(self, client: Channel, upstream: Channel, *, stop: asyncio.Event | None = None,
                  drain_timeout: float = 10.0) -> str:
        """Relay until one side closes or ``stop`` is set: "client", "upstream" or "stopped".

        When the client goes, answers still on their way get up to ``drain_timeout``
        seconds to reach the client, then the upstream is told (its input is closed); when the
        upstream goes, every request it left unanswered gets an error.
        """
        self._client, self._upstream = client, upstream
        up = asyncio.create_task(self._client_to_upstream())
        down = asyncio.create_task(self._upstream_to_client())
        stopper = asyncio.create_task((stop or asyncio.Event()).wait())
        done, _ = await asyncio.wait({up, down, stopper}, return_when=asyncio.FIRST_COMPLETED)
        for task in done - {stopper}:
            task.result()  # a crash of the relay itself is not hidden
        first = "stopped" if stopper in done else "upstream" if down in done else "client"
        if first == "client":
            # Answers first, then the upstream's input: a server that exits at EOF (as
            # server-everything does) would otherwise drop a request it had not answered yet.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._settled(down), drain_timeout)
            await upstream.close()
        for task in (up, down, stopper):
            task.cancel()
        await self._finish_tasks(first, drain_timeout)
        if first == "upstream":
            await self._fail_outstanding()
        for task in (up, down, stopper):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return first

    async def _settled(self, down: asyncio.Task[None]) -> None:
        """Until the upstream has ended, or nothing the client asked for is outstanding."""
        while not down.done() and (len(self._sent) or self._spilling or self._delivering):
            await asyncio.wait({down}, timeout=0.05)

    async def _finish_tasks(self, first: str, timeout: float) -> None:
        """Spills and our own answers in flight get ``timeout`` seconds (stopped: our own
        answers are cancelled, a spill gets 2 s, then the store's commit decides)."""
        if first == "stopped":
            for task in self._local.values():
                task.cancel()
            timeout = min(timeout, 2.0)
        running = set(self._tasks) | set(self._local.values())
        if running:
            await asyncio.wait(running, timeout=timeout)

    async def _fail_outstanding(self) -> None:
        for sent in self._sent.drain():
            self.unanswered += 1
            await self._client.send(error(sent.client_id, INTERNAL_ERROR, (
                f"s3spill mcp-proxy: the upstream server ended before answering this {sent.method} request")))

    # -- client -> upstream -----------------------------------------------------------

    async def _client_to_upstream(self) -> None:
        while (line := await self._client.receive()) is not None:
            if isinstance(line, Spool):  # never from a client channel; held, as before
                line = line.raw()
            msg = parse(line)
            if msg is MALFORMED:
                log.warning("proxy.client_parse_error", bytes=len(line))
                await self._client.send(error(None, PARSE_ERROR, "Parse error: the message is not JSON"))
                continue
            for item in msg if isinstance(msg, list) and msg else [msg]:
                out = await self._from_client(item, line if item is msg else None)
                if out is not None:
                    await self._upstream.send(out)

    async def _from_client(self, msg: Any, raw: bytes | None) -> bytes | None:
        """What goes upstream for one client message (None: nothing, it is answered here)."""
        method = msg.get("method") if isinstance(msg, dict) else None
        if not isinstance(msg, dict) or (method is None and "id" not in msg) \
                or not isinstance(method, str | None):
            await self._client.send(error(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC message"))
            return None
        if method is None:  # an answer to the server's request: its id is the upstream's own
            return raw or encode(msg)
        params = msg.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in msg:
            return self._notification(msg, method, params, raw)
        if not is_id(msg["id"]):
            await self._client.send(error(None, INVALID_REQUEST,
                                          "Invalid Request: an id is a string or an integer"))
            return None
        name = params.get("name") if method == "tools/call" else self._task_tools.get(params.get("taskId")) \
            if method == "tasks/result" else None
        tool = name if isinstance(name, str) else ""
        modern = _modern(params)
        if tool in self._bare:
            arguments = params.get("arguments")
            arguments = arguments if isinstance(arguments, dict) else {}
            self._answer_locally(msg["id"], tool, self._tool_answer(tool, arguments), modern)
            return None
        if self.resources.answers(method, params):
            self._answer_locally(msg["id"], method, lambda: self.resources.read(params), modern)
            return None
        pid, sent = self._sent.add(msg["id"], method, tool, modern)
        if method == "tools/call" and self.settings.call_timeout is not None:
            sent.timer = asyncio.get_running_loop().call_later(self.settings.call_timeout, self._expire, pid)
        return encode({**msg, "id": pid})

    def _notification(self, msg: dict[str, Any], method: str, params: dict[str, Any],
                      raw: bytes | None) -> bytes | None:
        if method != "notifications/cancelled":
            return raw or encode(msg)
        rid = params.get("requestId")
        if not is_id(rid):
            return None
        if rid in self._local:
            self._local[rid].cancel()
            return None
        if rid in self._spilling:  # answered upstream already: only the client's copy is dropped
            self._spilling[rid].cancelled = True
            return None
        pid = self._sent.pid_of(rid)
        sent = self._sent.pop(pid) if pid is not None else None
        if sent is None or pid is None:
            log.info("proxy.cancel_of_unknown_request_dropped")
            return None
        return encode({**msg, "params": {**params, "requestId": pid}})

    def _expire(self, pid: int) -> None:
        sent = self._sent.pop(pid)
        if sent is None:
            return
        timeout = self.settings.call_timeout
        log.warning("proxy.call_timeout", tool=sent.tool, seconds=timeout)
        self._spawn(self._client.send(error(sent.client_id, REQUEST_TIMEOUT, (
            f"s3spill mcp-proxy: {sent.tool} got no answer from the upstream server within "
            f"{timeout:g} s (--call-timeout); the call is cancelled"))))
        self._spawn(self._upstream.send(encode({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                "params": {"requestId": pid, "reason": "timed out"}})))

    def _answer_locally(self, mid: Any, what: str, work: Callable[[], dict[str, Any]], modern: bool) -> None:
        """Answer ``mid`` with ``work()`` (``{"result": ...}`` or ``{"error": ...}``, on a thread)."""
        answer = (lambda: _tagged(work())) if modern else work
        task = asyncio.create_task(self._local_answer(mid, what, answer))
        self._local[mid] = task
        task.add_done_callback(lambda _: self._local.pop(mid, None))

    async def _local_answer(self, mid: Any, what: str, work: Callable[[], dict[str, Any]]) -> None:
        try:
            body = await asyncio.to_thread(work)
        except Exception as exc:  # our own answer must never end the proxy; the model gets one line
            log.exception("proxy.own_answer_crashed", what=what)
            body = {"error": {"code": INTERNAL_ERROR, "message": f"internal error in {what}: "
                              f"{type(exc).__name__}: {exc}"}}
        await self._client.send(encode({"jsonrpc": "2.0", "id": mid, **body}))

    def _tool_answer(self, name: str, arguments: dict[str, Any]) -> Callable[[], dict[str, Any]]:
        def work() -> dict[str, Any]:
            try:
                outcome = self.tools.call(self._bare[name], arguments)
            except Exception as exc:  # a tool must never end the proxy; the model gets one line
                log.exception("proxy.own_tool_crashed", tool=name)
                return {"result": {"content": [{"type": "text", "text": f"internal error in {name}: "
                                                f"{type(exc).__name__}: {exc}"}], "isError": True}}
            result: dict[str, Any] = {"content": [{"type": "text", "text": outcome.text}],
                                      "isError": outcome.is_error}
            if outcome.structured is not None and not outcome.is_error:
                result["structuredContent"] = outcome.structured
            return {"result": result}

        return work

    # -- upstream -> client -----------------------------------------------------------

    async def _upstream_to_client(self) -> None:
        while (line := await self._upstream.receive()) is not None:
            spool = line if isinstance(line, Spool) else None
            msg = parse_spooled(line) if isinstance(line, Spool) else parse(line)
            if msg is MALFORMED:
                self.dropped("proxy.upstream_malformed_dropped", len(line))
                if spool is not None:
                    spool.close()
                continue
            if spool is not None and isinstance(msg, list):  # a batch: taken apart in memory
                msg, line, spool = spool.materialized(msg), b"", None
            self._delivering += 1  # answered upstream, not yet written to the client
            try:
                for item in msg if isinstance(msg, list) and msg else [msg]:
                    raw = line if item is msg and isinstance(line, bytes) else None
                    out = self._from_upstream(item, raw, len(line), spool)
                    if out:
                        await deliver(self._client, out, spool)
            finally:
                self._delivering -= 1
                if spool is not None and spool not in self._spools:
                    spool.close()

    def _from_upstream(self, msg: Any, raw: bytes | None, size: int,
                       spool: Spool | None = None) -> bytes | None:
        """What goes to the client for one upstream message (None: nothing, or later).

        ``spool``: ``msg`` is a spooled line's skeleton; what is returned is sent through
        :func:`~s3spill.proxy.channel.deliver`, a spilled result streamed from it.
        """
        if isinstance(msg, dict) and isinstance(msg.get("method"), str):
            return raw or encode(msg)  # the server's own request or notification
        if not isinstance(msg, dict) or "id" not in msg or ("result" not in msg and "error" not in msg):
            self.dropped("proxy.upstream_malformed_dropped", size)
            return None
        sent = self._sent.pop(msg["id"])
        if sent is None:
            self.dropped("proxy.unknown_response_dropped", size)
            return None
        answer = {**msg, "id": sent.client_id}
        if spool is not None and sent.method != "tools/call":  # a request the relay looks into
            answer = answer if sent.method not in _LOOKED_INTO else spool.materialized(answer)
        if sent.modern:
            answer = _tagged(answer)
        if sent.method == "tools/call" or (sent.method == "tasks/result" and sent.tool):
            result = answer.get("result")
            self._task_of(sent, result)
            if isinstance(result, dict) and size > self.floor:
                self._spilling[sent.client_id] = sent
                if spool is not None:
                    self._spools.add(spool)
                self._spawn(self._spill(answer, result, sent, spool))
                return None
        elif sent.method == "tools/list":
            answer = listed_page(answer, self._bare, self.specs, self._advertised)
        elif sent.method in LISTS:
            self._spilling[sent.client_id] = sent
            self._spawn(self._merge_resources(answer, sent))
            return None
        elif sent.method in _HANDSHAKES:
            answer = self._handshake(answer)
        return encode(answer)

    def _task_of(self, sent: Sent, result: Any) -> None:
        """A tools/call answered with a task (2025-11-25 tasks): its tool, for ``tasks/result``."""
        task = result.get("task") if isinstance(result, dict) and "content" not in result else None
        if isinstance(task, dict) and isinstance(task.get("taskId"), str):
            self._task_tools[task["taskId"]] = sent.tool
            while len(self._task_tools) > _TASKS_KEPT:
                del self._task_tools[next(iter(self._task_tools))]

    def _handshake(self, answer: dict[str, Any]) -> dict[str, Any]:
        answer, links = handshake(answer)
        self.negotiated(links)
        return answer

    def adopt(self, pid: int, client_id: Any, method: str) -> None:
        """Answer a request that was sent upstream before the relay ran (under ``pid``)."""
        self._sent.adopt(pid, client_id, method)

    def negotiated(self, links: bool | None) -> None:
        """What the handshake said (also when it was answered before the relay ran:
        :mod:`~s3spill.proxy.quick_start`): pointers carry ``resource_link`` blocks or not."""
        if links is not None:
            self._links = links

    async def _merge_resources(self, answer: dict[str, Any], sent: Sent) -> None:
        try:
            merged = await asyncio.to_thread(self.resources.merged, sent.method, answer)
        except Exception:  # fail open: the upstream's own page is better than none
            log.exception("proxy.resource_listing_crashed")
            merged = answer
        finally:
            self._spilling.pop(sent.client_id, None)
        if not sent.cancelled:
            await self._client.send(encode(merged))

    def _advertised(self, tool: dict[str, Any]) -> dict[str, Any]:
        """An upstream tool as the client sees it: an outputSchema widened to accept our
        pointer (:mod:`~s3spill.proxy.schemas`) unless the tool is never spilled."""
        name, schema = tool.get("name"), tool.get("outputSchema")
        if not isinstance(name, str):
            return tool
        self._schemas[name] = schema if isinstance(schema, dict) else None
        if not isinstance(schema, dict) or name in self.settings.never_spill:
            return tool
        return {**tool, "outputSchema": widened(schema)}

    async def _spill(self, answer: dict[str, Any], result: dict[str, Any], sent: Sent,
                     spool: Spool | None = None) -> None:
        schema = self._schemas.get(sent.tool, UNLISTED)
        try:
            try:
                changed = await asyncio.to_thread(self.results.spill, result, sent.tool, str(sent.client_id),
                                                  schema, links=self._links, spool=spool)
            except Exception:  # fail open: the upstream's own answer is better than none
                log.exception("proxy.spill_crashed", tool=sent.tool)
                changed = None
            finally:
                self._spilling.pop(sent.client_id, None)
            if sent.cancelled:
                log.info("proxy.cancelled_result_dropped", tool=sent.tool)
                return
            await deliver(self._client, encode(answer if changed is None else {**answer, "result": changed}),
                          spool)
        finally:
            if spool is not None:
                self._spools.discard(spool)
                spool.close()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


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
