"""``s3spill mcp`` serves the session's artifacts as MCP resources: listed, templated, paged."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import MCPError

from s3spill.agent.resources import uri_of
from s3spill.artifacts.paging import unrender
from tests.proxy.servers import connect, source_id

TEXT = "".join(f"{i:07d} stored by externalize, read back as a resource\n" for i in range(40_000))


def test_an_externalized_output_is_listed_and_paged_back_as_a_resource(tmp_path: Path) -> None:
    """After externalize stores 2 MB, resources/list names it, the template is ours, and following
    _meta.s3spill.next from its URI gives back the bytes; a foreign URI is -32002."""
    command = [sys.executable, "-m", "s3spill", "--store", (tmp_path / "store").as_uri(), "--session",
               "res-session", "mcp"]

    async def run() -> None:
        async with connect(command, tmp_path / "mcp.err") as client:
            assert client.server_capabilities is not None and client.server_capabilities.resources is not None
            stored = await client.call_tool("externalize", {"text": TEXT, "tool": "bash"})
            uri = uri_of(source_id(stored.content[0].text))
            listed = (await client.list_resources()).resources
            assert [str(r.uri) for r in listed] == [uri] and listed[0].size == len(TEXT)
            (template,) = (await client.list_resource_templates()).resource_templates
            assert template.uri_template.startswith("s3spill://{session}/{artifact}")
            data, page_uri = b"", uri
            while True:
                (content,) = (await client.read_resource(page_uri)).contents
                data += unrender(content.text)
                if content.meta["s3spill"]["eof"]:
                    break
                page_uri = content.meta["s3spill"]["next"]
            assert data == TEXT.encode()
            with pytest.raises(MCPError) as foreign:
                await client.read_resource("s3spill://" + "0" * 32 + uri[uri.index("/", 11):])
            assert foreign.value.error.code == -32002

    anyio.run(run)
