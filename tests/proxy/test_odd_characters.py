"""Every result over the budget is spilled whatever its characters: a lone surrogate escape
is the byte it stands for, any other lone surrogate its WTF-8 bytes, invalid UTF-8 on the
wire the bytes received; pages give back exactly those bytes."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.proxy.conftest import SESSION, hostile_command
from tests.proxy.hostile_upstream import BULK
from tests.proxy.servers import OURS, connect, proxy_command, read_back, source_id

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
