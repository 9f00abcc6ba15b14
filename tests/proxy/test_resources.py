"""Artifacts as MCP resources through the proxy: pointers carry a resource_link, a client that
understands resources pages a result with resources/read, our artifacts and template are
listed beside the upstream's resources, which pass through unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPError

from s3spill.artifacts.paging import unrender
from tests.proxy.conftest import SESSION, hostile_command
from tests.proxy.servers import connect, proxy_command, server_command, source_id

FIVE_MB = "".join(f"{i:08d} a line of a five-megabyte result ✓\n" for i in range(120_000))


async def _page_all(client: Any, uri: str) -> tuple[bytes, int]:
    """Follow each page's _meta.s3spill.next from ``uri`` to the end: (bytes, pages)."""
    out, pages = b"", 0
    while True:
        read = await client.read_resource(uri)
        (content,) = read.contents
        out += unrender(content.text)
        pages += 1
        facts = content.meta["s3spill"]
        if facts["eof"]:
            return out, pages
        uri = facts["next"]


async def _all_resources(client: Any) -> list[Any]:
    found, cursor = [], None
    while True:
        page = await client.list_resources(cursor=cursor)
        found.extend(page.resources)
        cursor = page.next_cursor
        if not cursor:
            return found


def test_a_resource_aware_client_pages_a_5_mb_result(tmp_path: Path) -> None:
    """server-everything echoes 5 MB: the pointer has a resource_link, resources/read pages it
    back byte for byte (pages of the read tool's size), the artifact is listed after the
    upstream's resources, our template after its templates, and its own resources read as
    they read direct."""
    upstream = server_command("everything", "stdio")
    command = proxy_command((tmp_path / "store").as_uri(), SESSION, upstream)

    async def run() -> None:
        async with connect(upstream, tmp_path / "direct.err") as direct:
            plain_resources = await _all_resources(direct)
            plain_templates = (await direct.list_resource_templates()).resource_templates
            plain_read = await direct.read_resource(plain_resources[0].uri)
        async with connect(command, tmp_path / "proxy.err") as proxied:
            result = await proxied.call_tool("echo", {"message": FIVE_MB})
            (link,) = [block for block in result.content if block.type == "resource_link"]
            sid = source_id(result.content[0].text)
            assert str(link.uri).startswith("s3spill://") and link.name == sid
            assert link.size == len(f"Echo: {FIVE_MB}".encode())
            data, pages = await _page_all(proxied, str(link.uri))
            assert data == f"Echo: {FIVE_MB}".encode() and pages > 10
            listed = await _all_resources(proxied)
            upstream_uris = [str(r.uri) for r in plain_resources]
            assert [str(r.uri) for r in listed[: len(plain_resources)]] == upstream_uris
            assert [str(r.uri) for r in listed[len(plain_resources):]] == [str(link.uri)]
            templates = (await proxied.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates[:-1]] == [t.uri_template for t in plain_templates]
            assert templates[-1].uri_template.startswith("s3spill://{session}/{artifact}")
            again = await proxied.read_resource(plain_resources[0].uri)
            assert again.model_dump() == plain_read.model_dump()

    anyio.run(run)


def test_our_resources_are_answered_by_the_proxy_only(tmp_path: Path) -> None:
    """In front of an upstream without resources: the handshake offers them, the listing is ours,
    a read of an s3spill:// URI never reaches the upstream, an unknown artifact is -32002."""
    record = tmp_path / "up.jsonl"
    command = proxy_command((tmp_path / "store").as_uri(), SESSION, hostile_command(record))

    async def run() -> None:
        async with connect(command, tmp_path / "proxy.err") as client:
            assert client.server_capabilities is not None and client.server_capabilities.resources is not None
            big = await client.call_tool("odd", {"kind": "escape"})
            (link,) = [block for block in big.content if block.type == "resource_link"]
            assert [str(r.uri) for r in await _all_resources(client)] == [str(link.uri)]
            first = await client.read_resource(str(link.uri) + "?limit=5")
            assert first.contents[0].meta["s3spill"]["last_line"] == 5
            with pytest.raises(MCPError) as missing:
                await client.read_resource(str(link.uri)[:-4] + "0000")
            assert missing.value.error.code == -32002

    anyio.run(run)
    assert b"resources/read" not in record.read_bytes()
