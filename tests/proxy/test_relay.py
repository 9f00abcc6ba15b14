"""The relay's protocol rules, message by message, between two in-memory channels.

The real-server tests (tests/proxy/test_mcp_proxy.py) show the proxy works in front of servers we
did not write; these pin the cases those servers cannot be made to produce on demand: a
tool name clash, pagination, a missing tools capability, cancellation, byte-identical
pass-through of what the relay has no business with.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.proxy.servers import OURS, Pipe, relay, relay_with


def _tools(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "inputSchema": {"type": "object"}} for n in names]


def test_a_clashing_upstream_tool_name_is_an_error_not_a_shadow(tmp_path: Path) -> None:
    """An upstream tool named like one of ours turns tools/list into an error that says which."""

    async def run() -> None:
        async with relay(tmp_path) as (client, upstream):
            await client.put({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            asked = await upstream.reply({"tools": _tools("a", OURS[0])})
            assert asked["method"] == "tools/list"
            answer = await client.get()
            assert answer["id"] == 1 and "result" not in answer and OURS[0] in answer["error"]["message"]
            assert "--tool-prefix" in answer["error"]["message"]

    asyncio.run(run())


def test_our_tools_go_on_the_last_page_and_the_capability_is_added(tmp_path: Path) -> None:
    """A first page passes unchanged; the last one gets our three tools; a handshake without
    tools and resources capabilities gets them, every other field unchanged."""

    async def run() -> None:
        async with relay(tmp_path) as (client, upstream):
            await client.put({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
            init = {"protocolVersion": "2025-06-18", "capabilities": {"prompts": {"listChanged": True}},
                    "serverInfo": {"name": "up", "version": "1"}, "x-extra": [1, 2]}
            await upstream.reply(init)
            caps = {"prompts": {"listChanged": True}, "tools": {}, "resources": {}}
            assert (await client.get())["result"] == {**init, "capabilities": caps}
            await client.put({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            first = {"tools": _tools("a"), "nextCursor": "p2"}
            await upstream.reply(first)
            assert await client.get() == {"jsonrpc": "2.0", "id": 1, "result": first}
            await client.put({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "p2"}})
            await upstream.reply({"tools": _tools("b")})
            names = [t["name"] for t in (await client.get())["result"]["tools"]]
            assert names == ["b", *OURS]

    asyncio.run(run())


def test_cancelled_calls_and_errors(tmp_path: Path) -> None:
    """A cancel is forwarded under the proxy's id and the late (large) result dropped; a JSON-RPC
    error passes unchanged and a server-to-client request byte for byte; our own tool answers
    without the upstream."""

    async def run() -> None:
        async with relay(tmp_path) as (client, upstream):
            await client.put({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                              "params": {"name": "dump", "arguments": {}}})
            pid = (await upstream.get())["id"]
            await client.put({"jsonrpc": "2.0", "method": "notifications/cancelled",
                              "params": {"requestId": 7}})
            assert await upstream.get() == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                            "params": {"requestId": pid}}
            await upstream.put({"jsonrpc": "2.0", "id": pid, "result": {
                "content": [{"type": "text", "text": "x" * 200_000}]}})

            bad = {"code": -32602, "message": "bad"}
            await client.put({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "dump"}})
            await upstream.reply(error=bad)
            assert await client.get() == {"jsonrpc": "2.0", "id": 8, "error": bad}  # nothing for 7 before it

            # Odd spacing and key order: what goes on is the bytes, not a re-serialisation.
            sampling = (b'{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage",'
                        b'"params":{"z":1,  "a":2}}')
            await upstream.put(sampling)
            assert await client.get_raw() == sampling

            await client.put({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                              "params": {"name": OURS[2], "arguments": {}}})
            listed = await client.get()
            assert listed["id"] == 9 and listed["result"]["isError"] is False
            assert upstream.inbox.empty()  # our call never reached the upstream

    asyncio.run(run())


def test_never_spill_and_per_tool_thresholds(tmp_path: Path) -> None:
    """A never-spill tool's 60 KB result and one under its own raised threshold pass unchanged;
    the same result from another tool (default threshold 50 KiB) becomes a pointer."""
    big = {"content": [{"type": "text", "text": "y" * 60_000}]}

    async def call(client: Pipe, upstream: Pipe, mid: int, tool: str) -> Any:
        await client.put({"jsonrpc": "2.0", "id": mid, "method": "tools/call", "params": {"name": tool}})
        await upstream.reply(big)
        return await client.get()

    async def run() -> None:
        async with relay(tmp_path, never_spill=frozenset({"dump"}),
                         thresholds={"export": 90_000}) as (client, upstream):
            for mid, tool in ((1, "dump"), (2, "export")):
                assert await call(client, upstream, mid, tool) == {"jsonrpc": "2.0", "id": mid, "result": big}
            other = await call(client, upstream, 3, "other")
            text = other["result"]["content"][0]["text"]
            assert len(text) < 10_000 and "source_id=" in text

    asyncio.run(run())


def test_a_result_cancelled_while_it_is_spilled_is_stored_whole_and_not_sent(tmp_path: Path) -> None:
    """The client cancels a call whose 3 MB result the proxy is spilling: the client gets no
    answer for it, and the artifact the spill committed is whole (its size the result's)."""
    text = "".join(f"cancelled spill line {i}\n" for i in range(120_000))

    async def run() -> None:
        async with relay_with(tmp_path) as (client, upstream, relay_):
            await client.put({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "dump"}})
            pid = (await upstream.get())["id"]
            await upstream.put({"jsonrpc": "2.0", "id": pid, "result": {"content": [{"type": "text",
                                                                                    "text": text}]}})
            for _ in range(2000):  # until the relay has taken the answer and started the spill
                if relay_._spilling:
                    break
                await asyncio.sleep(0.005)
            assert relay_._spilling, "the spill never started"
            await client.put({"jsonrpc": "2.0", "method": "notifications/cancelled",
                              "params": {"requestId": 1}})
            await client.put({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                              "params": {"name": OURS[2], "arguments": {}}})
            listed = None
            while listed is None:
                answer = await client.get(timeout=60)
                assert answer["id"] == 2, answer  # never an answer to the cancelled call
                listed = answer["result"]["structuredContent"]["artifacts"]
                if not listed:  # our list ran before the spill committed: ask again
                    await asyncio.sleep(0.2)
                    await client.put({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                      "params": {"name": OURS[2], "arguments": {}}})
                    listed = None
            assert [a["size_bytes"] for a in listed] == [len(text.encode())]
            assert upstream.inbox.empty()  # the cancel was not forwarded: the upstream had answered

    asyncio.run(run())


def test_the_result_of_a_tool_call_made_as_a_task_is_spilled_like_any_other(tmp_path: Path) -> None:
    """tools/call with ``task`` is answered with the task (as it came); the large result that
    ``tasks/result`` fetches for it later is a pointer, named after the tool."""

    async def run() -> None:
        async with relay(tmp_path) as (client, upstream):
            await client.put({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "research", "arguments": {}, "task": {"ttl": 60000}}})
            task = {"taskId": "t-1", "status": "working", "createdAt": "2026-12-02T00:00:00Z",
                    "lastUpdatedAt": "2026-12-02T00:00:00Z", "ttl": 60000}
            await upstream.reply({"task": task})
            assert (await client.get())["result"] == {"task": task}
            await client.put({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
                              "params": {"taskId": "t-1"}})
            asked = await upstream.reply({"content": [{"type": "text", "text": "report line\n" * 20_000}]})
            assert asked["method"] == "tasks/result"
            answer = await client.get(30)
            text = answer["result"]["content"][0]["text"]
            assert answer["id"] == 2 and len(text) < 10_000 and "source_id=" in text and "research" in text

    asyncio.run(run())
