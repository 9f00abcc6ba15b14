"""The relay's protocol rules, message by message, between two in-memory channels.

The real-server tests (tests/test_mcp_proxy.py) show the proxy works in front of servers we
did not write; these pin the cases those servers cannot be made to produce on demand: a
tool name clash, pagination, a missing tools capability, cancellation, byte-identical
pass-through of what the relay has no business with.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson

from s3spill.agent.tools import AgentTools
from s3spill.proxy.relay import Relay
from s3spill.proxy.results import ResultSpiller
from s3spill.proxy.settings import ProxySettings
from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore

SESSION = "relay-session"
OURS = ["s3spill_read_artifact", "s3spill_grep_artifact", "s3spill_list_artifacts"]


class Pipe:
    """A channel end: what one side sends, the other receives."""

    def __init__(self, inbox: asyncio.Queue[bytes | None], outbox: asyncio.Queue[bytes | None]) -> None:
        self.inbox, self.outbox = inbox, outbox

    async def receive(self) -> bytes | None:
        return await self.inbox.get()

    async def send(self, message: bytes) -> None:
        await self.outbox.put(message)

    async def close(self) -> None:
        await self.outbox.put(None)

    async def put(self, message: dict[str, Any] | bytes) -> None:
        await self.outbox.put(message if isinstance(message, bytes) else orjson.dumps(message))

    async def get(self, timeout: float = 10) -> Any:
        raw = await asyncio.wait_for(self.inbox.get(), timeout)
        return None if raw is None else orjson.loads(raw)

    async def get_raw(self, timeout: float = 10) -> bytes | None:
        return await asyncio.wait_for(self.inbox.get(), timeout)


def _pair() -> tuple[Pipe, Pipe]:
    a: asyncio.Queue[bytes | None] = asyncio.Queue()
    b: asyncio.Queue[bytes | None] = asyncio.Queue()
    return Pipe(a, b), Pipe(b, a)


@asynccontextmanager
async def relay(tmp_path: Path, **settings: Any) -> AsyncIterator[tuple[Pipe, Pipe]]:
    """(client, upstream): the test plays both sides of a running relay."""
    store = LocalStore(tmp_path / "store")
    config = ProxySettings(**settings)
    policy = config.policy()
    spiller = Spiller(store, SESSION, policy)
    relay_ = Relay(ResultSpiller(spiller, config), AgentTools(store, SESSION, policy=policy), config)
    client, client_side = _pair()
    upstream, upstream_side = _pair()
    task = asyncio.create_task(relay_.run(client_side, upstream_side, drain_timeout=1))
    try:
        yield client, upstream
    finally:
        await client.outbox.put(None)
        await upstream.outbox.put(None)
        await asyncio.wait_for(task, 10)
        spiller.close()
        store.close()


def _tools(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "inputSchema": {"type": "object"}} for n in names]


def test_a_clashing_upstream_tool_name_is_an_error_not_a_shadow(tmp_path: Path) -> None:
    """An upstream tool named like one of ours turns tools/list into an error that says which."""

    async def run() -> None:
        async with relay(tmp_path) as (client, upstream):
            await client.put({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert (await upstream.get())["method"] == "tools/list"
            await upstream.put({"jsonrpc": "2.0", "id": 1, "result": {"tools": _tools("a", OURS[0])}})
            answer = await client.get()
            assert "result" not in answer and OURS[0] in answer["error"]["message"]
            assert "--tool-prefix" in answer["error"]["message"]

    asyncio.run(run())


def test_our_tools_go_on_the_last_page_and_the_capability_is_added(tmp_path: Path) -> None:
    """A first page passes byte for byte; the last one gets our three tools; a handshake without
    a tools capability gets one, every other field unchanged."""

    async def run() -> None:
        async with relay(tmp_path) as (client, upstream):
            await client.put({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
            await upstream.get()
            init = {"protocolVersion": "2025-06-18", "capabilities": {"prompts": {"listChanged": True}},
                    "serverInfo": {"name": "up", "version": "1"}, "x-extra": [1, 2]}
            await upstream.put({"jsonrpc": "2.0", "id": 0, "result": init})
            caps = {"prompts": {"listChanged": True}, "tools": {}}
            assert (await client.get())["result"] == {**init, "capabilities": caps}
            await client.put({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            await upstream.get()
            first = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": _tools("a"),
                                                                        "nextCursor": "p2"}})
            await upstream.put(first)
            assert await client.get_raw() == first
            await client.put({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "p2"}})
            await upstream.get()
            await upstream.put({"jsonrpc": "2.0", "id": 2, "result": {"tools": _tools("b")}})
            names = [t["name"] for t in (await client.get())["result"]["tools"]]
            assert names == ["b", *OURS]

    asyncio.run(run())


def test_cancelled_calls_and_errors(tmp_path: Path) -> None:
    """A cancel is forwarded and the late (large) result dropped; a JSON-RPC error and a
    server-to-client request pass byte for byte; our own tool answers without the upstream."""

    async def run() -> None:
        async with relay(tmp_path) as (client, upstream):
            await client.put({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                              "params": {"name": "dump", "arguments": {}}})
            await upstream.get()
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
            await client.put(cancel)
            assert await upstream.get() == cancel
            await upstream.put({"jsonrpc": "2.0", "id": 7, "result": {
                "content": [{"type": "text", "text": "x" * 200_000}]}})

            error = orjson.dumps({"jsonrpc": "2.0", "id": 8, "error": {"code": -32602, "message": "bad"}})
            await client.put({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "dump"}})
            await upstream.get()
            await upstream.put(error)
            assert await client.get_raw() == error  # and nothing for id 7 came before it

            # Odd spacing and key order: what goes on is the bytes, not a re-serialisation.
            sampling = (b'{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage",'
                        b'"params":{"z":1,  "a":2}}')
            await upstream.put(sampling)
            assert await client.get_raw() == sampling

            await client.put({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                              "params": {"name": OURS[2], "arguments": {}}})
            await client.put({"jsonrpc": "2.0", "method": "notifications/cancelled",
                              "params": {"requestId": 9}})
            listed = await client.get()
            assert listed["id"] == 9 and listed["result"]["isError"] is False
            assert upstream.inbox.empty()  # neither our call nor its cancel reached the upstream

    asyncio.run(run())


def test_never_spill_and_per_tool_thresholds(tmp_path: Path) -> None:
    """A never-spill tool's 60 KB result and one under its own raised threshold pass byte for
    byte; the same result from another tool (default threshold 50 KiB) becomes a pointer."""
    big = orjson.dumps({"content": [{"type": "text", "text": "y" * 60_000}]})

    async def call(client: Pipe, upstream: Pipe, mid: int, tool: str) -> bytes | None:
        await client.put({"jsonrpc": "2.0", "id": mid, "method": "tools/call", "params": {"name": tool}})
        await upstream.get()
        await upstream.put(b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (mid, big))
        return await client.get_raw()

    async def run() -> None:
        async with relay(tmp_path, never_spill=frozenset({"dump"}),
                         thresholds={"export": 90_000}) as (client, upstream):
            for mid, tool in ((1, "dump"), (2, "export")):
                raw = await call(client, upstream, mid, tool)
                assert raw == b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (mid, big), tool
            other = orjson.loads(await call(client, upstream, 3, "other") or b"null")
            text = other["result"]["content"][0]["text"]
            assert len(text) < 10_000 and "source_id=" in text

    asyncio.run(run())
