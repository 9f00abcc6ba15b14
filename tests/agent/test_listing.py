"""list_artifacts, and what every MCP tool declares and returns besides text (title,
outputSchema, structuredContent), checked by the SDK's own client."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client

from s3spill import keys
from s3spill.agent.mcp.server import build_server, spiller_externalizer
from s3spill.agent.tools import AgentTools
from s3spill.artifacts.store import ArtifactStore
from s3spill.spill.spiller import Spiller
from s3spill.store import ObjectStore
from tests.conftest import TEST_CONFIG

SESSION = "listing-session"
DATA = "".join(f"{i:05d} {'FAIL test_' + str(i) if i % 25 == 7 else 'passed'}\n" for i in range(3_000))


def _write(store: ObjectStore, n: int, session: str = SESSION) -> list[str]:
    arts = ArtifactStore(store, TEST_CONFIG, session_id=session)
    return [arts.write(session, f"output {i}\n".encode() * (i + 1), "bash", call_id=f"c{i}").source_id
            for i in range(n)]


def test_list_is_newest_first_bounded_and_only_this_session(store: ObjectStore) -> None:
    """The newest `limit` artifacts of the harness's session come first with their facts; older
    ones and the total are counted; another session's artifacts never appear."""
    written = _write(store, 5)
    _write(store, 2, "someone-else")
    tools = AgentTools(store, SESSION)
    outcome = tools.call("list_artifacts", {"limit": 3})
    assert not outcome.is_error and outcome.structured is not None
    listed = outcome.structured["artifacts"]
    assert [a["source_id"] for a in listed] == written[::-1][:3]
    assert (outcome.structured["total"], outcome.structured["shown"]) == (5, 3)
    assert listed[0]["call_id"] == "c4" and listed[0]["size_bytes"] == len(b"output 4\n") * 5
    assert listed[0]["line_count"] == 5 and listed[0]["tool"] == "bash"
    lines = outcome.text.splitlines()
    assert lines[0] == "[5 stored outputs in this session, newest first; showing 3]"
    assert all(sid in outcome.text for sid in written[2:]) and written[0] not in outcome.text
    assert "2 older not shown" in lines[-1]


def test_an_artifact_that_cannot_be_verified_is_counted_not_shown(store: ObjectStore) -> None:
    """An artifact whose index is gone is counted as unreadable, never listed with made-up facts."""
    written = _write(store, 3)
    sid = keys.SourceId.parse(written[1])
    index = keys.index_key(sid.session_hash, sid.name)
    store.delete_if_match(index, store.head(index).etag)
    outcome = AgentTools(store, SESSION).call("list_artifacts", {})
    assert outcome.structured is not None
    assert [a["source_id"] for a in outcome.structured["artifacts"]] == [written[2], written[0]]
    assert outcome.structured["unreadable"] == 1 and "1 could not be read" in outcome.text


def test_list_refuses_bad_limits_and_is_empty_for_a_new_session(local_store: ObjectStore) -> None:
    """A limit out of range is a one-line error; an empty session lists nothing and says so."""
    tools = AgentTools(local_store, SESSION)
    for bad in (0, 101, "3"):
        outcome = tools.call("list_artifacts", {"limit": bad})
        assert outcome.is_error and outcome.text.startswith("InvalidRequest: limit")
        assert outcome.structured is None
    empty = tools.call("list_artifacts", {})
    assert empty.structured == {"total": 0, "shown": 0, "unreadable": 0, "artifacts": [], "running": []}
    assert empty.text.startswith("[0 stored outputs in this session")


def test_mcp_tools_have_titles_output_schemas_and_structured_content(store: ObjectStore) -> None:
    """Every tool declares a title and an outputSchema; each successful call returns
    structuredContent that the SDK client validates against it, carrying the text the model
    reads; an error carries none."""
    tools = AgentTools(store, SESSION)
    with Spiller(store, SESSION, journal=None) as spiller:
        server = build_server(tools, spiller_externalizer(spiller))

        async def run() -> dict[str, Any]:
            out: dict[str, Any] = {}
            async with Client(server) as client:
                out["listed"] = (await client.list_tools()).tools
                pointer = await client.call_tool("externalize", {"text": DATA, "tool": "bash"})
                out["externalize"] = pointer
                sid = tools.call("list_artifacts", {}).structured["artifacts"][0]["source_id"]  # type: ignore[index]
                out["sid"] = sid
                out["read"] = await client.call_tool("read_artifact", {"source_id": sid, "limit": 10})
                out["grep"] = await client.call_tool("grep_artifact", {"source_id": sid, "pattern": "FAIL",
                                                                       "max_matches": 3})
                out["list"] = await client.call_tool("list_artifacts", {"limit": 5})
                out["error"] = await client.call_tool("read_artifact", {"source_id": "artifact:x"})
            return out

        out = anyio.run(run)
    assert {t.name for t in out["listed"]} == {"read_artifact", "grep_artifact", "list_artifacts",
                                               "externalize"}
    assert all(t.title and t.output_schema and t.output_schema["type"] == "object" for t in out["listed"])
    for name in ("externalize", "read", "grep", "list"):
        assert not out[name].is_error and out[name].structured_content is not None, name
    for name in ("externalize", "read", "grep"):
        assert out[name].structured_content["text"] == out[name].content[0].text, name
    read = out["read"].structured_content
    assert (read["first_line"], read["last_line"], read["next_offset"], read["eof"]) == (1, 10, 10, False)
    assert read["total_lines"] == 3_000 and read["source_id"] == out["sid"]
    grep = out["grep"].structured_content
    assert grep["line_numbers"] == [8, 33, 58] and grep["total_matches"] == 120 and grep["omitted"] == 117
    assert [a["source_id"] for a in out["list"].structured_content["artifacts"]] == [out["sid"]]
    assert out["error"].is_error and out["error"].structured_content is None
