"""`s3spill mcp --http --tokens FILE`: one server, many sessions, each request bound to the
session of the bearer token it carries (driven by the SDK's client over real HTTP)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from s3spill.agent.mcp.tokens import TokenRegistry, issue_token, token_hash
from s3spill.agent.resources import uri_of
from s3spill.artifacts.store import ArtifactStore
from s3spill.cli import main as cli_main
from s3spill.store.local import LocalStore
from s3spill.testing import child_env, free_port
from tests.agent.mcp.http_server import serving
from tests.conftest import TEST_CONFIG


def _issue(capsys: pytest.CaptureFixture[str], store: LocalStore, tokens: Path, session: str) -> str:
    code = cli_main(["--store", store.url, "--session", session, "mcp", "--tokens", str(tokens),
                     "--issue-token", "--label", f"agent {session}"])
    out = capsys.readouterr().out.strip()
    assert code == 0 and out.startswith("s3s_")
    return out


def test_issued_tokens_are_kept_only_as_hashes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI prints each token once; the file (mode 0600) keeps only its SHA-256 and session."""
    store = LocalStore(tmp_path / "store", TEST_CONFIG)
    tokens = tmp_path / "tokens.json"
    first, second = _issue(capsys, store, tokens, "run-a"), _issue(capsys, store, tokens, "run-b")
    text = tokens.read_text()
    assert first not in text and second not in text
    doc = json.loads(text)
    assert [(e["sha256"], e["session"], e["label"]) for e in doc["tokens"]] == [
        (token_hash(first), "run-a", "agent run-a"), (token_hash(second), "run-b", "agent run-b")]
    assert stat.S_IMODE(os.stat(tokens).st_mode) == 0o600
    registry = TokenRegistry(tokens)
    assert registry.session_from_header(f"Bearer {first}") == "run-a"
    assert registry.session_from_header(f"bearer {second}") == "run-b"
    assert registry.session_from_header(first) is None and registry.session_for("s3s_forged") is None


def test_a_broken_tokens_file_fails_closed(tmp_path: Path) -> None:
    """A tokens file edited into something unparsable opens no session until it parses again."""
    tokens = tmp_path / "tokens.json"
    token = issue_token(tokens, "run-a")
    registry = TokenRegistry(tokens)
    assert registry.session_for(token) == "run-a"
    good = tokens.read_text()
    tokens.write_text(good[:-20])
    assert registry.session_for(token) is None
    tokens.write_text(good)
    assert registry.session_for(token) == "run-a"


@contextmanager
def _server(store: LocalStore, tokens: Path, log: Path) -> Iterator[str]:
    port = free_port()
    env = child_env({"S3SPILL_STORE": store.url})
    env.pop("S3SPILL_SESSION", None)
    with serving(["--tokens", str(tokens)], env, log, "127.0.0.1", port) as url:
        yield url


def _client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http))


def test_each_request_is_bound_to_its_tokens_session(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Two agents on one server each list and read only their own session's outputs (as tools
    and as resources), refuse the other's source id, and a request without a valid token — or
    with a revoked one — gets 401."""
    store = LocalStore(tmp_path / "store", TEST_CONFIG)
    tokens = tmp_path / "tokens.json"
    token_a, token_b = _issue(capsys, store, tokens, "run-a"), _issue(capsys, store, tokens, "run-b")
    sid_a = ArtifactStore(store, TEST_CONFIG).write("run-a", b"alpha output\n" * 10, "bash").source_id
    sid_b = ArtifactStore(store, TEST_CONFIG).write("run-b", b"bravo output\n" * 10, "bash").source_id

    async def session_view(url: str, token: str, own: str, other: str) -> dict[str, Any]:
        async with _client(url, token) as client:
            listed = await client.call_tool("list_artifacts", {})
            own_page = await client.call_tool("read_artifact", {"source_id": own, "limit": 1})
            other_page = await client.call_tool("read_artifact", {"source_id": other})
            resources = [r.name for r in (await client.list_resources()).resources]
            own_resource = (await client.read_resource(uri_of(own))).contents[0].text
            with pytest.raises(MCPError) as foreign:
                await client.read_resource(uri_of(other))
            return {"listed": [a["source_id"] for a in listed.structured_content["artifacts"]],
                    "own": own_page.content[0].text, "other": (other_page.is_error,
                                                               other_page.content[0].text),
                    "resources": resources, "own_resource": own_resource,
                    "foreign_resource": foreign.value.error.code}

    async def status(url: str, headers: dict[str, str]) -> tuple[int, str]:
        async with httpx2.AsyncClient(timeout=30) as http:
            wanted = {**headers, "Accept": "application/json, text/event-stream",
                      "Content-Type": "application/json"}
            response = await http.post(url, headers=wanted,
                                       content=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}')
            return response.status_code, response.headers.get("www-authenticate", "")

    with _server(store, tokens, tmp_path / "server.log") as url:
        view_a = anyio.run(session_view, url, token_a, sid_a, sid_b)
        view_b = anyio.run(session_view, url, token_b, sid_b, sid_a)
        refused = [anyio.run(status, url, h) for h in ({}, {"Authorization": "Bearer s3s_forged"},
                                                       {"Authorization": f"Basic {token_a}"})]
        # Revoke run-a's token: the server re-reads the file on the next request.
        doc = json.loads(tokens.read_text())
        doc["tokens"] = [e for e in doc["tokens"] if e["session"] != "run-a"]
        tokens.write_text(json.dumps(doc))
        revoked = anyio.run(status, url, {"Authorization": f"Bearer {token_a}"})
        still = anyio.run(session_view, url, token_b, sid_b, sid_a)

    assert view_a["listed"] == [sid_a] and "alpha output" in view_a["own"]
    assert view_b["listed"] == [sid_b] and "bravo output" in view_b["own"]
    # The same sessions as MCP resources: listed and read for one's own token only.
    assert view_a["resources"] == [sid_a] and view_b["resources"] == [sid_b]
    assert "alpha output" in view_a["own_resource"] and "bravo output" in view_b["own_resource"]
    assert view_a["foreign_resource"] == view_b["foreign_resource"] == -32002
    for view, other in ((view_a, sid_b), (view_b, sid_a)):
        assert view["other"] == (True, f"SourceIdError: source id {other} does not belong to this session")
    assert refused == [(401, 'Bearer realm="s3spill"')] * 3
    assert revoked == (401, 'Bearer realm="s3spill"') and still["listed"] == [sid_b]


def test_tokens_need_http_and_issuing_needs_a_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """--tokens without --http, and --issue-token without --session, are one-line refusals."""
    monkeypatch.delenv("S3SPILL_SESSION", raising=False)
    store = (tmp_path / "s").as_uri()
    tokens = str(tmp_path / "tokens.json")
    issue_token(tokens, "run-a")
    for argv, message in ((["mcp", "--tokens", tokens], "add --http"),
                          (["mcp", "--tokens", tokens, "--issue-token"], "no session"),
                          (["--session", "x", "mcp", "--issue-token"], "needs --tokens")):
        code = cli_main(["--store", store, *argv])
        err = capsys.readouterr().err
        assert code == 2 and message in err and err.count("\n") == 1, (argv, err)
