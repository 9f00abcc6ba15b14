"""The third-party MCP servers the proxy is tested against, and clients for both paths.

The servers are the reference servers from npm, pinned in tests/mcp_servers/package.json
and installed by ``.ci/run`` (``npm ci --prefix tests/mcp_servers``). A missing install is a
failure that says how to fix it, never a skip: a proxy test that did not run proved nothing.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from s3spill.artifacts.paging import unrender

SERVERS = Path(__file__).resolve().parent / "mcp_servers"
ENTRY = {
    "everything": SERVERS / "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    "filesystem": SERVERS / "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
}
SID = re.compile(r'source_id="([^"]+)"')


def server_command(name: str, *args: str) -> list[str]:
    """The command line of a pinned third-party server (fails loudly when not installed)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: the proxy tests run the reference MCP servers from npm")
    entry = ENTRY[name]
    if not entry.is_file():
        pytest.fail(f"{entry} is missing: run `npm ci --prefix tests/mcp_servers` (.ci/run does)")
    return [node, str(entry), *args]


def wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> None:
    """Until something listens on 127.0.0.1:``port`` (fails if ``proc`` exits first)."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, log.read_text()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)


def proxy_command(store_url: str, session: str, upstream: list[str], *flags: str) -> list[str]:
    return [sys.executable, "-m", "s3spill", "--store", store_url, "--session", session, "mcp-proxy",
            *flags, "--", *upstream]


@asynccontextmanager
async def connect(command: list[str], errlog: Path, env: dict[str, str] | None = None,
                  **client_options: Any) -> AsyncIterator[Client]:
    """An SDK client over stdio to ``command`` (the server's stderr goes to ``errlog``)."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    with errlog.open("a") as err:
        async with Client(stdio_client(params, errlog=err), **client_options) as client:
            yield client


def source_id(text: str) -> str:
    found = SID.findall(text)
    assert found, text[-600:]
    return str(found[-1])


async def read_back(client: Client, tool: str, sid: str) -> tuple[bytes, int]:
    """The artifact's bytes, reassembled from every page the read tool gives: (bytes, pages)."""
    out, offset, char_offset, pages = b"", 0, 0, 0
    while True:
        page = await client.call_tool(tool, {"source_id": sid, "offset": offset, "char_offset": char_offset})
        assert not page.is_error, page.content
        text = _only_text(page)
        out += unrender(text)
        pages += 1
        data: Any = page.structured_content
        if data["eof"]:
            return out, pages
        offset, char_offset = data["next_offset"], data["next_char_offset"]


def _only_text(result: Any) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return str(result.content[0].text)
