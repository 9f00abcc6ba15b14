"""A hostile grep pattern through MCP cannot stall the other requests of the same server."""

from __future__ import annotations

import time

import anyio
from mcp import Client

from s3spill.agent.mcp.server import build_server
from s3spill.agent.tools import AgentTools
from s3spill.artifacts.store import ArtifactStore
from s3spill.store.local import LocalStore

SESSION = "isolation-session"


def test_a_backtracking_pattern_does_not_freeze_other_requests(local_store: LocalStore) -> None:
    """While grep_artifact runs `(a+)+$` over lines of 27 a's and a b (tens of seconds of
    GIL-holding backtracking under Python's re), a read_artifact is answered within 5 s."""
    arts = ArtifactStore(local_store, session_id=SESSION)
    hostile = arts.write(SESSION, (b"a" * 27 + b"b\n") * 4, "bash").source_id
    small = arts.write(SESSION, b"hello\n", "bash").source_id
    server = build_server(AgentTools(local_store, SESSION))
    answered: dict[str, float] = {}

    async def run() -> None:
        async with Client(server) as client:
            started = time.monotonic()

            async def grep() -> None:
                await client.call_tool("grep_artifact", {"source_id": hostile, "pattern": "(a+)+$"})
                answered["grep"] = time.monotonic() - started

            async def read() -> None:
                await anyio.sleep(0.2)  # the grep is in flight by now
                result = await client.call_tool("read_artifact", {"source_id": small})
                assert not result.is_error and "hello" in result.content[0].text
                answered["read"] = time.monotonic() - started

            async with anyio.create_task_group() as tg:
                tg.start_soon(grep)
                tg.start_soon(read)

    anyio.run(run)
    assert answered["read"] < 5.0, answered
