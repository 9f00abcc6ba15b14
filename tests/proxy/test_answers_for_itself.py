"""The proxy answers for itself: ids of its own upstream, our tools answered only here,
unparseable and malformed lines never relayed, a tool-name clash on any page refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import MCPError

from tests.proxy.conftest import SESSION, hostile_command
from tests.proxy.servers import OURS, RawProxy, connect, proxy_command

LIST = OURS[2]


def test_no_forged_upstream_response_reaches_the_client(raw_proxy: Callable[..., RawProxy]) -> None:
    """An upstream spraying answers to every id it was not sent gets 0 of 1,000 calls of our
    list tool answered with its forgery, and no answer the client did not ask for."""
    proxy = raw_proxy("forge")
    assert proxy.handshake()["result"]["serverInfo"]["name"] == "hostile"
    asked: set[object] = set()
    for k in range(1000):
        proxy.send({"jsonrpc": "2.0", "id": k, "method": "tools/call",
                    "params": {"name": LIST, "arguments": {}}})
        asked.add(k)
        if k % 200 == 0:  # calls the upstream does see, under the proxy's own ids
            proxy.send({"jsonrpc": "2.0", "id": f"e{k}", "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"text": str(k)}}})
            asked.add(f"e{k}")
    answers = {}
    while len(answers) < len(asked):
        msg = proxy.answer()
        assert msg is not None and msg["id"] in asked and msg["id"] not in answers, msg
        answers[msg["id"]] = msg
    forged = [k for k in range(1000) if "FORGED" in json.dumps(answers[k])]
    assert forged == []
    assert all(answers[k]["result"]["structuredContent"]["artifacts"] == [] for k in range(1000))
    assert proxy.close() == 0
    assert "proxy.unknown_response_dropped" in proxy.stderr()
    assert "proxy.upstream_malformed_dropped" in proxy.stderr()
    got = proxy.upstream_got()
    assert not any(isinstance(m, dict) and m.get("params", {}).get("name") == LIST for m in got)


def test_an_unparseable_request_gets_a_parse_error_and_never_reaches_the_upstream(
        raw_proxy: Callable[..., RawProxy]) -> None:
    """A cut-off request naming our read tool is answered with -32700 and not forwarded; a
    request that is JSON but no message is -32600; what follows still works."""
    proxy = raw_proxy()
    proxy.handshake()
    cut = b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "s3spill_read_artifact"'
    proxy.send(cut)
    assert proxy.answer() == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32700, "message": "Parse error: the message is not JSON"}}
    proxy.send(b"[1, 2]")
    assert [proxy.answer()["error"]["code"] for _ in range(2)] == [-32600, -32600]
    proxy.send({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "echo",
                                                                            "arguments": {"text": "ok"}}})
    assert proxy.answer()["result"]["content"][0]["text"] == "echo: ok"
    assert proxy.close() == 0
    assert cut not in proxy.record.read_bytes() and b"[1, 2]" not in proxy.record.read_bytes()
    assert not any(isinstance(m, dict) and m.get("params", {}).get("name") == OURS[0]
                   for m in proxy.upstream_got())


def test_ids_sent_upstream_are_the_proxys_own(raw_proxy: Callable[..., RawProxy]) -> None:
    """The upstream sees integers of the proxy's, never the client's ids; answers come back
    under the client's ids."""
    proxy = raw_proxy()
    proxy.handshake()
    for mid in ("abc", 77):
        proxy.send({"jsonrpc": "2.0", "id": mid, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": str(mid)}}})
        assert proxy.answer() == {"jsonrpc": "2.0", "id": mid, "result": {
            "content": [{"type": "text", "text": f"echo: {mid}"}]}}
    proxy.close()
    requests = [m for m in proxy.upstream_got() if isinstance(m, dict) and "id" in m]
    assert [m["method"] for m in requests] == ["initialize", "tools/call", "tools/call"]
    assert all(isinstance(m["id"], int) for m in requests) and len({m["id"] for m in requests}) == 3
    assert not {m["id"] for m in requests} & {"init", "abc", 77}


def test_a_clash_on_the_second_tools_list_page_is_an_error(tmp_path: Path) -> None:
    """The SDK client's list_tools fails with the clash named when page 2 (of 3) has one of our
    names; pages 1 and 3 are listed as they are (ours after page 3)."""
    record = tmp_path / "up.jsonl"
    command = proxy_command((tmp_path / "store").as_uri(), SESSION, hostile_command(record, "clash2"))

    async def run() -> None:
        async with connect(command, tmp_path / "proxy.err") as client:
            first = await client.list_tools()
            assert [t.name for t in first.tools] == ["echo", "hang", "die", "odd", "flood"]
            assert first.next_cursor == "p2"
            with pytest.raises(MCPError, match=r"s3spill_read_artifact.*--tool-prefix"):
                await client.list_tools(cursor=first.next_cursor)
            last = await client.list_tools(cursor="p3")
            assert [t.name for t in last.tools] == ["last", *OURS]

    anyio.run(run)


def test_the_sdk_client_works_through_a_spraying_upstream(tmp_path: Path) -> None:
    """With the official client (schema validation on), our tools and the upstream's answer
    correctly while the upstream sprays forged answers and malformed lines."""
    record = tmp_path / "up.jsonl"
    command = proxy_command((tmp_path / "store").as_uri(), SESSION, hostile_command(record, "forge"))

    async def run() -> None:
        async with connect(command, tmp_path / "proxy.err") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == ["echo", "hang", "die", "odd", "flood", *OURS]
            for k in range(20):
                listed = await client.call_tool(LIST, {})
                assert not listed.is_error and listed.structured_content is not None
                assert listed.structured_content["artifacts"] == [], listed
                echoed = await client.call_tool("echo", {"text": str(k)})
                assert echoed.content[0].text == f"echo: {k}"

    anyio.run(run)
