"""Schema-true results: through the proxy, the official Python and TypeScript clients (their
outputSchema validation on) call every tool of server-memory without an error, while a
read_graph of 3,000 entities is spilled and its structuredContent paged back exactly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio

from s3spill.agent.resources import uri_of
from s3spill.testing import child_env
from tests.proxy.conftest import SESSION
from tests.proxy.servers import OURS, connect, proxy_command, read_back, server_command, source_id, ts_client

READ = OURS[0]
#: Every tool of server-memory, with arguments that succeed on the graph below.
MEMORY_CALLS: list[dict[str, Any]] = [
    {"name": "create_entities", "arguments": {"entities": [
        {"name": "new-1", "entityType": "t", "observations": ["o"]}]}},
    {"name": "create_relations", "arguments": {"relations": [
        {"from": "new-1", "to": "entity-00001", "relationType": "knows"}]}},
    {"name": "add_observations", "arguments": {"observations": [
        {"entityName": "new-1", "contents": ["o2"]}]}},
    {"name": "open_nodes", "arguments": {"names": ["entity-00001", "new-1"]}},
    {"name": "search_nodes", "arguments": {"query": "entity-0000"}},
    {"name": "search_nodes", "arguments": {"query": "observation"}},
    {"name": "delete_observations", "arguments": {"deletions": [
        {"entityName": "new-1", "observations": ["o2"]}]}},
    {"name": "delete_relations", "arguments": {"relations": [
        {"from": "new-1", "to": "entity-00001", "relationType": "knows"}]}},
    {"name": "delete_entities", "arguments": {"entityNames": ["new-1"]}},
    {"name": "read_graph", "arguments": {}},
]
BIG = {5: "search_nodes", 9: "read_graph"}  # the calls whose results are over the budget


def _graph(path: Path, entities: int = 3000, relations: int = 1000) -> Path:
    """server-memory's file: about 290 KB of entities, each with two observations."""
    with path.open("w") as out:
        for i in range(entities):
            observations = [f"observation {i} alpha", f"observation {i} beta"]
            out.write(json.dumps({"type": "entity", "name": f"entity-{i:05d}", "entityType": "thing",
                                  "observations": observations}) + "\n")
        for i in range(relations):
            out.write(json.dumps({"type": "relation", "from": f"entity-{i:05d}", "to": f"entity-{i + 1:05d}",
                                  "relationType": "next"}) + "\n")
    return path


def _memory_env(tmp_path: Path, name: str) -> dict[str, str]:
    graph = tmp_path / f"{name}.jsonl"
    if not graph.exists():
        shutil.copy(_graph(tmp_path / "graph.jsonl") if not (tmp_path / "graph.jsonl").exists()
                    else tmp_path / "graph.jsonl", graph)
    return {"MEMORY_FILE_PATH": str(graph)}


def _proxy(tmp_path: Path) -> list[str]:
    return proxy_command((tmp_path / "store").as_uri(), SESSION, server_command("memory"))


def test_python_client_calls_every_memory_tool_and_reads_the_spilled_graph(tmp_path: Path) -> None:
    """Direct and proxied results are equal except the two over budget, which validate (the SDK
    raises otherwise) and point at the upstream's own structuredContent, byte for byte as JSON."""

    async def calls(client: Any) -> list[Any]:
        await client.list_tools()
        return [await client.call_tool(c["name"], c["arguments"]) for c in MEMORY_CALLS]

    async def run() -> None:
        async with connect(server_command("memory"), tmp_path / "direct.err",
                           env=child_env(_memory_env(tmp_path, "direct"))) as direct:
            plain = await calls(direct)
        async with connect(_proxy(tmp_path), tmp_path / "proxy.err",
                           env=child_env(_memory_env(tmp_path, "proxied"))) as proxied:
            spilled = await calls(proxied)
            for k, (one, other) in enumerate(zip(plain, spilled, strict=True)):
                assert not other.is_error, other
                if k not in BIG:
                    assert other.model_dump() == one.model_dump(), MEMORY_CALLS[k]
                    continue
                pointer = other.structured_content["s3spill"]
                assert pointer["stored"] is True and pointer["bytes"] > 100_000
                assert sum(len(block.text) for block in other.content if block.type == "text") < 25_000
                assert [block.uri for block in other.content if block.type == "resource_link"] == [
                    uri_of(source_id(other.content[0].text)), pointer["uri"]]
                stored, _ = await read_back(proxied, READ, pointer["source_id"])
                assert json.loads(stored) == one.structured_content
                text, _ = await read_back(proxied, READ, source_id(other.content[0].text))
                assert text.decode() == one.content[0].text
            assert len(plain[9].structured_content["entities"]) == 3000

    anyio.run(run)


def test_typescript_client_calls_every_memory_tool_through_the_proxy(tmp_path: Path) -> None:
    """@modelcontextprotocol/sdk's Client.callTool (Ajv validation of structuredContent) succeeds
    for every call through the proxy, as it does direct; the big ones carry our pointer."""
    direct = ts_client(server_command("memory"), MEMORY_CALLS, tmp_path, _memory_env(tmp_path, "direct"))
    proxied = ts_client(_proxy(tmp_path), MEMORY_CALLS, tmp_path, _memory_env(tmp_path, "proxied"))
    assert [c["ok"] for c in direct["calls"]] == [True] * len(MEMORY_CALLS)
    assert [(c["name"], c["ok"], c.get("error")) for c in proxied["calls"]] == \
        [(c["name"], True, None) for c in MEMORY_CALLS]
    for k, (one, other) in enumerate(zip(direct["calls"], proxied["calls"], strict=True)):
        if k in BIG:
            assert other["result"]["structuredContent"]["s3spill"]["stored"] is True
        else:
            assert other["result"] == one["result"]
    assert len(direct["calls"][9]["result"]["structuredContent"]["entities"]) == 3000
