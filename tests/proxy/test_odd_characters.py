"""Every result over the budget is spilled whatever its characters: a lone surrogate escape
is the byte it stands for, any other lone surrogate its WTF-8 bytes, invalid UTF-8 on the
wire the bytes received; pages give back exactly those bytes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import anyio
import pytest

from s3spill.proxy.wire import encode
from tests.proxy.conftest import SESSION, hostile_command
from tests.proxy.hostile_upstream import BULK
from tests.proxy.servers import OURS, connect, proxy_command, read_back, relay, source_id

HALF = len(BULK) // 2
#: What each odd character is stored as (docs/harnesses.md, "Characters").
STORED = {"escape": b"caf\xe9", "other": b"x\xed\xa0\x80y", "raw": b"caf\xe9",
          "mixed": b"caf\xe9 x\xed\xa0\x80y \xff"}


@pytest.mark.parametrize("kind", sorted(STORED))
def test_a_550_kb_result_with_an_odd_character_is_spilled_and_paged_back_exactly(tmp_path: Path,
                                                                                 kind: str) -> None:
    """The SDK client gets a pointer of a few KB, not the 560 KB message; reading every page
    of the artifact gives the upstream's text with the odd character as its bytes."""
    command = proxy_command((tmp_path / "store").as_uri(), SESSION, hostile_command(tmp_path / "up.jsonl"))

    async def run() -> None:
        async with connect(command, tmp_path / "proxy.err") as client:
            result = await client.call_tool("odd", {"kind": kind})
            text = result.content[0].text
            assert len(text.encode()) < 10_000, len(text)
            data, pages = await read_back(client, OURS[0], source_id(text))
            expected = BULK[:HALF].encode() + STORED[kind] + BULK[HALF:].encode()
            assert data == expected and pages > 1

    anyio.run(run)


def test_a_lone_high_surrogate_before_a_byte_escape_is_not_written_as_one_character() -> None:
    """``\\ud800`` then the byte 0xE9 (held as ``\\udce9``) cannot both be JSON escapes: the
    two would read as the pair U+100E9, a character the upstream never sent. The byte stays
    its escape, the other lone surrogate is written as its WTF-8 ``\\xHH`` escapes, as pages
    show it; a lone one anywhere else stays its JSON escape."""
    message = {"a\ud800\udce9": ["x\ud800\udce9y", "\ud800", "\udce9", "\udbff\udc80\udc80", "ok\U000100e9"]}
    written = encode(message)
    assert json.loads(written) == {"a\\xed\\xa0\\x80\udce9": [
        "x\\xed\\xa0\\x80\udce9y", "\ud800", "\udce9", "\\xed\\xaf\\xbf\udc80\udc80",
        "ok\U000100e9"]}


def test_an_unspilled_result_with_both_on_the_wire_reaches_the_client_without_a_new_character(
        tmp_path: Path) -> None:
    """The upstream writes the escape ``\\ud800`` and then the raw byte 0xE9 in a small result:
    the client's parser finds no astral character in what the proxy hands on."""

    async def run() -> None:
        async with relay(tmp_path) as (client, upstream):
            await client.put({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                              "params": {"name": "odd", "arguments": {}}})
            pid = (await upstream.get())["id"]
            await upstream.put(b'{"jsonrpc": "2.0", "id": %d, "result": {"content": [{"type": "text", '
                               b'"text": "caf\\ud800\xe9!"}]}}' % pid)
            raw = await client.get_raw()
            assert raw is not None
            text = json.loads(raw)["result"]["content"][0]["text"]
            assert text == "caf\\xed\\xa0\\x80\udce9!", ascii(text)

    asyncio.run(run())
