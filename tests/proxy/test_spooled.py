"""An upstream's huge line is spooled to a file, not held: the stdio channel spools it, the
relay spills its one long text as a stream and sends anything else on from the file, the
same bytes and characters as when the line is held."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from s3spill.artifacts.store import ArtifactStore
from s3spill.proxy.stdio import StreamChannel
from s3spill.proxy.wire import parse
from s3spill.spill.json_spool import LongString, Spool
from s3spill.store.local import LocalStore
from tests.proxy.hostile_upstream import BULK, odd
from tests.proxy.servers import RELAY_SESSION, SID, relay_with
from tests.proxy.test_odd_characters import STORED

HALF = len(BULK) // 2


class _Sink:
    """A stand-in StreamWriter: what the channel writes, kept."""

    def __init__(self) -> None:
        self.data = bytearray()

    def is_closing(self) -> bool:
        return False

    def write(self, data: bytes) -> None:
        self.data += data

    async def drain(self) -> None:
        return None


def test_the_stdio_channel_spools_a_long_line_and_hands_small_ones_on_as_bytes() -> None:
    """Lines in any chunks: one over the limit comes as a Spool holding exactly its bytes, the
    others as bytes; a spooled message is written back piece by piece with its newline."""
    big = b'{"id": 1, "result": {"text": "' + b"x\\n" * 1_000_000 + b'"}}\n'

    async def run() -> None:
        reader = asyncio.StreamReader()
        data = b'{"id": 0}\n' + big + b'{"id": 2}\n'
        for n in range(0, len(data), 99_999):
            reader.feed_data(data[n:n + 99_999])
        reader.feed_eof()
        sink = _Sink()
        channel = StreamChannel(reader, sink, spool_over=2000)  # type: ignore[arg-type]
        assert await channel.receive() == b'{"id": 0}\n'
        spooled = await channel.receive()
        assert isinstance(spooled, Spool) and spooled.raw() == big and spooled.scanned is not None
        assert await channel.receive() == b'{"id": 2}\n'
        assert await channel.receive() is None
        await channel.send_pieces(iter([big[:10], big[10:-1]]))
        assert bytes(sink.data) == big

    asyncio.run(run())


def _call(mid: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": mid, "method": "tools/call", "params": {"name": name, "arguments": {}}}


def test_a_spooled_result_with_odd_characters_is_spilled_and_stored_exactly(tmp_path: Path) -> None:
    """The 550 KB text holding a surrogate escape, another lone surrogate and a byte that is
    not UTF-8 is streamed into the spill: the client gets a pointer, the artifact holds the
    bytes the documented mapping says (as for a line held in memory)."""

    async def run() -> None:
        async with relay_with(tmp_path, spool_over=100_000) as (client, upstream, _):
            await client.put(_call(5, "odd"))
            pid = (await upstream.get())["id"]
            await upstream.put(odd(pid, "mixed"))
            answer = await client.get(30)
            assert answer["id"] == 5
            text = answer["result"]["content"][0]["text"]
            assert len(text) < 10_000
            sid = SID.findall(text)[-1]
            store = ArtifactStore(LocalStore(tmp_path / "store"), session_id=RELAY_SESSION)
            stored = b"".join(store.iter_verified(sid))
            assert stored == BULK[:HALF].encode() + STORED["mixed"] + BULK[HALF:].encode()

    asyncio.run(run())


def test_a_spooled_answer_that_is_not_spilled_goes_on_as_the_upstream_s_bytes(tmp_path: Path) -> None:
    """A never-spilled tool's huge result, and a huge answer to another request, reach the
    client under the client's id with the long string exactly as the upstream wrote it."""

    async def run() -> None:
        async with relay_with(tmp_path, spool_over=100_000, never_spill=frozenset({"odd"})) as (
                client, upstream, _):
            await client.put(_call(6, "odd"))
            pid = (await upstream.get())["id"]
            line = odd(pid, "mixed")
            await upstream.put(line)
            out = await client.get_raw(30)
            assert out is not None and parse(out)["id"] == 6
            body = line[line.index(b'"text": "') + 9:line.rindex(b'"')]
            assert body in out
            await client.put({"jsonrpc": "2.0", "id": "r", "method": "resources/read",
                              "params": {"uri": "file:///big"}})
            pid = (await upstream.get())["id"]
            await upstream.put(b'{"jsonrpc": "2.0", "id": %d, "result": {"contents": [{"uri": "file:///big", '
                               b'"text": "%s"}]}}' % (pid, body))
            read = await client.get_raw(30)
            assert read is not None and body in read and read.startswith(b'{"jsonrpc":"2.0","id":"r"')

    asyncio.run(run())


def test_a_spooled_text_and_its_structured_copy_are_both_stored_from_the_file(tmp_path: Path) -> None:
    """server-filesystem's shape, the text twice (content and structuredContent): the text is
    streamed, the structuredContent stored as the upstream's JSON and replaced by markers;
    neither is read back whole."""

    async def run() -> None:
        async with relay_with(tmp_path, spool_over=100_000) as (client, upstream, _):
            await client.put({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
            await upstream.reply({"tools": [{"name": "read_text_file", "inputSchema": {"type": "object"}}]})
            await client.get()
            await client.put(_call(8, "read_text_file"))
            pid = (await upstream.get())["id"]
            await upstream.put({"jsonrpc": "2.0", "id": pid, "result": {
                "content": [{"type": "text", "text": BULK}], "structuredContent": {"content": BULK, "n": 1}}})
            answer = (await client.get(30))["result"]
            assert answer["structuredContent"]["n"] == 1
            assert answer["structuredContent"]["content"].startswith("[s3spill: ")
            text = "".join(block["text"] for block in answer["content"] if block["type"] == "text")
            assert len(text) < 20_000
            store = ArtifactStore(LocalStore(tmp_path / "store"), session_id=RELAY_SESSION)
            stored = [b"".join(store.iter_verified(sid)) for sid in dict.fromkeys(SID.findall(text))]
            assert BULK.encode() in stored
            assert {"content": BULK, "n": 1} in [parse(data) for data in stored if data.startswith(b"{")]

    asyncio.run(run())


def _escaped(text: str) -> bytes:
    return json.dumps(text).encode()[1:-1]


@pytest.mark.parametrize("spooled", [False, True], ids=["held", "spooled"])
@pytest.mark.parametrize("bad", [b"\\q", b"\\u12G4", b"\x01"], ids=["escape", "short-u", "control"])
def test_a_long_string_that_is_not_json_drops_the_line_held_or_spooled(tmp_path: Path, spooled: bool,
                                                                       bad: bytes) -> None:
    """A bad escape or a raw control character in a result's long text: the line is not JSON,
    so it is dropped with a log line whether it was held or spooled, for a result to spill and
    for one handed on as it is (never_spill); the next answer goes through."""

    async def run() -> None:
        async with relay_with(tmp_path, spool_over=100_000 if spooled else None,
                              never_spill=frozenset({"as-is"})) as (client, upstream, relay_):
            for n, tool in enumerate(("odd", "as-is")):
                await client.put(_call(10 + n, tool))
                pid = (await upstream.get())["id"]
                text = _escaped(BULK[:HALF]) + bad + _escaped(BULK[HALF:])
                await upstream.put(b'{"jsonrpc": "2.0", "id": %d, "result": {"content": [{"type": "text", '
                                   b'"text": "%s"}]}}' % (pid, text))
                await client.put(_call(20 + n, "echo"))
                pid = (await upstream.get())["id"]
                await upstream.put({"jsonrpc": "2.0", "id": pid, "result": {"content": [
                    {"type": "text", "text": "fine"}]}})
                answer = await client.get(30)
                assert answer["id"] == 20 + n, answer["id"]
            assert relay_.dropped.counts == {"proxy.upstream_malformed_dropped": 2}

    asyncio.run(run())


def test_a_spooled_result_of_several_texts_is_streamed_into_one_artifact(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several text blocks, two of them long (no images): their texts are streamed into the
    spill one after the other, never read back whole; the artifact holds them as the block
    planner stores texts (concatenated, as they are), the client gets one pointer."""
    whole: list[int] = []
    text = LongString.text
    monkeypatch.setattr(LongString, "text", lambda self: whole.append(self.end - self.start) or text(self))

    async def run() -> None:
        async with relay_with(tmp_path, spool_over=100_000) as (client, upstream, _):
            await client.put(_call(9, "many"))
            pid = (await upstream.get())["id"]
            texts = [BULK, "a short one\n", BULK[::-1].replace("\n", "") + "\n"]
            await upstream.put({"jsonrpc": "2.0", "id": pid, "result": {
                "content": [{"type": "text", "text": t} for t in texts]}})
            answer = (await client.get(30))["result"]
            text = "".join(block["text"] for block in answer["content"] if block["type"] == "text")
            assert len(text) < 20_000 and len(SID.findall(text)) >= 1
            store = ArtifactStore(LocalStore(tmp_path / "store"), session_id=RELAY_SESSION)
            assert b"".join(store.iter_verified(SID.findall(text)[-1])) == "".join(texts).encode()

    asyncio.run(run())
    assert whole == []
