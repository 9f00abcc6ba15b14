"""Claude Agent SDK: the in-process SDK MCP server's tools and the PostToolUse hook, invoked
directly as the SDK invokes them (the SDK's model loop needs the Claude Code CLI and a key)."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client

from s3spill.adapters.claude_agent_sdk import S3SpillClaude
from s3spill.store import ObjectStore
from s3spill.testing import Fault, FaultyStore
from tests.adapters import build_scenario as scenario


def _post_tool_use(tool_name: str, response: Any, tool_use_id: str = "tu-1") -> Any:
    return {"hook_event_name": "PostToolUse", "session_id": "claude-session", "transcript_path": "/dev/null",
            "cwd": "/", "tool_name": tool_name, "tool_input": {"command": "make"},
            "tool_response": response, "tool_use_id": tool_use_id}


def _bash(stdout: str) -> dict[str, Any]:
    return {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False}


def test_bash_output_becomes_a_pointer_to_the_servers_tools(store: ObjectStore) -> None:
    """Bash's stdout is replaced (shape kept) by a pointer naming the tools as Claude Code names
    them; the in-process server's tools grep and read it; another session's id is a tool error."""
    s3 = S3SpillClaude(store, scenario.SESSION, journal=None)
    theirs = scenario.foreign_source_id(store)

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {}
        payload = _post_tool_use("Bash", _bash(scenario.BUILD_LOG))
        out["hook"] = await s3.hook(payload, "tu-1", {"signal": None})
        sid = scenario.source_id_of(out["hook"]["hookSpecificOutput"]["updatedToolOutput"]["stdout"])
        async with Client(s3.server["instance"]) as client:
            out["listed"] = [t.name for t in (await client.list_tools()).tools]
            out["grep"] = await client.call_tool("grep_artifact", {"source_id": sid, "pattern": "ERROR"})
            out["page"] = await client.call_tool(
                "read_artifact", {"source_id": sid, "offset": scenario.ERROR_LINE - 2, "limit": 3})
            out["refused"] = await client.call_tool("read_artifact", {"source_id": theirs})
        return out

    out = anyio.run(run)
    specific = out["hook"]["hookSpecificOutput"]
    assert specific["hookEventName"] == "PostToolUse"
    updated = specific["updatedToolOutput"]
    assert set(updated) == {"stdout", "stderr", "interrupted", "isImage"} and updated["stderr"] == ""
    pointer = updated["stdout"]
    assert len(pointer) < 40_000 < len(scenario.BUILD_LOG)
    assert scenario.stored_text(store, scenario.source_id_of(pointer)) == scenario.BUILD_LOG
    names = [f"mcp__{s3.server_name}__{name}" for name in out["listed"]]
    assert names == s3.allowed_tools == ["mcp__s3spill__read_artifact", "mcp__s3spill__grep_artifact",
                                         "mcp__s3spill__list_artifacts"]
    assert scenario.called_tools(pointer) == names[:2]
    assert f"{scenario.ERROR_LINE}:\t[15000] ERROR module_15000.c:7" in out["grep"].content[0].text
    assert f"{scenario.ERROR_LINE}\t[15000] ERROR" in out["page"].content[0].text
    refused = out["refused"]
    assert refused.is_error and refused.content[0].text.startswith("SourceIdError: ")


def test_small_and_own_results_are_left_alone(local_store: ObjectStore) -> None:
    """A small response and a page of the retrieval tools get no opinion ({}), and nothing is stored."""
    s3 = S3SpillClaude(local_store, scenario.SESSION, journal=None)

    async def run() -> list[Any]:
        page = [{"type": "text", "text": "x" * 90_000}]
        return [await s3.hook(_post_tool_use("Bash", _bash("ok\n")), "a", {"signal": None}),
                await s3.hook(_post_tool_use("mcp__s3spill__read_artifact", page), "b", {"signal": None})]

    assert anyio.run(run) == [{}, {}]
    assert list(local_store.list("")) == []


def test_a_down_store_gives_the_degraded_text(local_store: ObjectStore) -> None:
    """With the store down the hook still replaces the output, with the honest degraded text."""
    down = FaultyStore(local_store)
    down.add(Fault("*", "unavailable", times=1_000))
    s3 = S3SpillClaude(down, scenario.SESSION, journal=None)

    async def run() -> Any:
        return await s3.hook(_post_tool_use("Bash", _bash(scenario.BUILD_LOG)), "a", {"signal": None})

    stdout = anyio.run(run)["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
    assert "could NOT be saved" in stdout and "source_id" not in stdout


def test_options_wire_the_server_the_hook_and_the_tools(local_store: ObjectStore) -> None:
    """ClaudeAgentOptions carry the server under its name, the hook on PostToolUse, and allow
    the retrieval tools next to the caller's own."""
    s3 = S3SpillClaude(local_store, scenario.SESSION, journal=None)
    options = s3.options(allowed_tools=["Bash"], max_turns=3)
    assert options.mcp_servers == {"s3spill": s3.server}
    assert [m.hooks for m in options.hooks["PostToolUse"]] == [[s3.hook]]
    assert options.allowed_tools == ["Bash", "mcp__s3spill__read_artifact", "mcp__s3spill__grep_artifact",
                                     "mcp__s3spill__list_artifacts"]
    assert options.max_turns == 3
