"""The same JSON-RPC exchange direct and through the proxy, for each protocol version the
servers speak: the answers differ only in the tools and resources we add, the results we
spill and the outputSchemas we widen for them (2025-06-18 and 2025-11-25 with
server-everything, raw; 2026-07-28, stateless, with the Python SDK against mcp-server-git)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from s3spill.agent.resources import TEMPLATE
from s3spill.proxy.schemas import widened
from s3spill.testing import child_env
from tests.proxy.conftest import SESSION
from tests.proxy.servers import OURS, RawProxy, proxy_command, server_command, source_id
from tests.proxy.test_every_tool import _git_repo, _git_server

BIG = "".join(f"conformance line {i}\n" for i in range(40_000))
OUR_CAPABILITIES = {"tools": {}, "resources": {}}


def _requests(version: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("initialize", {"protocolVersion": version, "capabilities": {},
                        "clientInfo": {"name": "conformance", "version": "1"}}),
        ("tools/list", {}),
        ("tools/call", {"name": "echo", "arguments": {"message": "hi"}}),
        ("tools/call", {"name": "get-sum", "arguments": {"a": 1, "b": 2}}),
        ("tools/call", {"name": "get-structured-content", "arguments": {"location": "Chicago"}}),
        ("tools/call", {"name": "get-tiny-image", "arguments": {}}),
        ("tools/call", {"name": "echo", "arguments": {"message": BIG}}),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("prompts/list", {}),
        ("ping", {}),
        ("logging/setLevel", {"level": "error"}),
        ("no/such/method", {}),
    ]


def _same_but_ours(method: str, params: dict[str, Any], direct: dict[str, Any],
                   proxied: dict[str, Any]) -> None:
    """``proxied`` is ``direct`` changed only as the proxy documents it changes ``method``."""
    assert set(proxied) == set(direct) and proxied["id"] == direct["id"], method
    if "error" in direct:
        assert proxied == direct, method
        return
    one, other = direct["result"], proxied["result"]
    if method == "initialize":
        caps = {**OUR_CAPABILITIES, **one["capabilities"]}
        assert other == {**one, "capabilities": caps}
    elif method == "tools/list":
        advertised = [{**t, "outputSchema": widened(t["outputSchema"])} if "outputSchema" in t else t
                      for t in one["tools"]]
        assert other["tools"][: len(advertised)] == advertised
        assert [t["name"] for t in other["tools"][len(advertised):]] == OURS
    elif method == "tools/call" and params["arguments"].get("message") == BIG:
        assert one["content"][0]["text"] == f"Echo: {BIG}"
        assert source_id(other["content"][0]["text"]) and [b["type"] for b in other["content"]] == [
            "text", "resource_link"]
    elif method == "resources/list":
        if one.get("nextCursor"):
            assert other == one
        else:
            assert other["resources"][: len(one["resources"])] == one["resources"]
            added = other["resources"][len(one["resources"]):]
            assert [r["uri"].split("/")[0] for r in added] == ["s3spill:"]
    elif method == "resources/templates/list":
        assert other == {**one, "resourceTemplates": [*one["resourceTemplates"], TEMPLATE]}
    else:
        assert other == one, method


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_the_same_exchange_direct_and_through_the_proxy(raw_proxy: Callable[..., RawProxy],
                                                        tmp_path: Path, version: str) -> None:
    """server-everything negotiates ``version`` both ways; each answer, taken in lockstep, is the
    direct one or differs from it only where the proxy says it does."""
    upstream = server_command("everything", "stdio")
    direct = RawProxy(upstream, tmp_path / "unused", tmp_path / "direct.err")
    proxied = raw_proxy(upstream=upstream)
    try:
        for k, (method, params) in enumerate(_requests(version)):
            request = {"jsonrpc": "2.0", "id": k, "method": method, "params": params}
            answers = []
            for side in (direct, proxied):
                side.send(request)
                answers.append(side.answer(60))
                if method == "initialize":
                    side.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            _same_but_ours(method, params, *answers)
            if method == "initialize":
                assert answers[0]["result"]["protocolVersion"] == version
    finally:
        direct.close()
    assert proxied.close() == 0


def test_the_stateless_2026_exchange_direct_and_through_the_proxy(tmp_path: Path) -> None:
    """The Python SDK pinned to 2026-07-28 (no initialize: each request names its version) gets
    the same tools (plus ours), results and templates (plus ours) from mcp-server-git through
    the proxy as direct, and our own tools and resources answer in that version's shape."""
    repo = _git_repo(tmp_path / "repo")
    upstream = _git_server(repo)

    async def exchange(command: list[str]) -> dict[str, Any]:
        params = StdioServerParameters(command=command[0], args=command[1:], env=child_env({}))
        with (tmp_path / "modern.err").open("a") as err:
            async with Client(stdio_client(params, errlog=err), mode="2026-07-28") as client:
                assert client.protocol_version == "2026-07-28"
                tools = [t.model_dump() for t in (await client.list_tools()).tools]
                calls = [(await client.call_tool(name, {"repo_path": str(repo), **extra})).model_dump()
                         for name, extra in (("git_status", {}), ("git_log", {}),
                                             ("git_branch", {"branch_type": "local"}))]
                listed_templates = (await client.list_resource_templates()).resource_templates
                templates = [t.model_dump() for t in listed_templates]
                ours = None
                if OURS[2] in [t["name"] for t in tools]:
                    listed = await client.call_tool(OURS[2], {})
                    ours = (listed.is_error, len((await client.list_resources()).resources))
                return {"tools": tools, "calls": calls, "templates": templates, "ours": ours}

    direct = anyio.run(exchange, upstream)
    proxied = anyio.run(exchange, proxy_command((tmp_path / "store").as_uri(), SESSION, upstream))
    assert proxied["tools"][: len(direct["tools"])] == direct["tools"]
    assert [t["name"] for t in proxied["tools"][len(direct["tools"]):]] == OURS
    assert proxied["calls"] == direct["calls"]
    assert proxied["templates"][: len(direct["templates"])] == direct["templates"]
    assert [t["uri_template"] for t in proxied["templates"][len(direct["templates"]):]] == [
        TEMPLATE["uriTemplate"]]
    assert proxied["ours"] == (False, 0)
