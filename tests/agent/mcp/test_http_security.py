"""`s3spill mcp --http` on any loopback address keeps the SDK's DNS-rebinding protection on."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import pytest

from s3spill.agent.mcp.config import rebinding_allowlist
from s3spill.testing import child_env, free_port
from tests.agent.mcp.http_server import serving

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"}}}).encode()


def _post(host: str, port: int, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request("POST", "/mcp", body=INITIALIZE, headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            **headers})
        return conn.getresponse().status
    finally:
        conn.close()


def test_foreign_host_or_origin_is_refused_on_127_0_0_2(tmp_path: Path) -> None:
    """On 127.0.0.2 (not one of the SDK's three names) a foreign Host gets 421 and a foreign
    Origin 403, while the server's own Host is served."""
    host, port = "127.0.0.2", free_port()
    env = child_env({"S3SPILL_STORE": (tmp_path / "store").as_uri(), "S3SPILL_SESSION": "s"})
    log = tmp_path / "server.log"
    with serving([], env, log, host, port):
        assert _post(host, port, {"Host": f"evil.example:{port}"}) == 421
        assert _post(host, port, {"Host": f"{host}:{port}", "Origin": "http://evil.example"}) == 403
        assert _post(host, port, {"Host": f"{host}:{port}"}) == 200


@pytest.mark.parametrize(("host", "expected"), [
    ("127.0.0.1", "127.0.0.1:*"), ("127.0.0.2", "127.0.0.2:*"), ("::1", "[::1]:*"),
    ("localhost", "localhost:*"),
])
def test_every_loopback_host_gets_an_allowlist(host: str, expected: str) -> None:
    """Each loopback bind allows its own name plus the standard loopback names, nothing else."""
    allow = rebinding_allowlist(host)
    assert allow is not None and expected in allow[0] and f"http://{expected}" in allow[1]
    assert all(h.split(":")[0].strip("[]") in ("127.0.0.1", "localhost", "", host) for h in allow[0])


def test_a_remote_bind_has_no_allowlist() -> None:
    """A non-loopback address (only with --allow-remote) is not Host-checked: the operator opted in."""
    assert rebinding_allowlist("0.0.0.0") is None
