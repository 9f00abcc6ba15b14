"""How a proxy session ends: by the client (EOF, SIGINT, SIGTERM: exit 0, nothing said), by
the upstream (every pending request answered with an error, one line why), or a call at a
time (timeouts, cancellation)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import MCPError

from s3spill.failpoints import ENV_VAR, REACHED_MARKER
from tests.proxy.conftest import SESSION, hostile_command
from tests.proxy.servers import RawProxy, connect, proxy_command, server_command


def end(proxy: RawProxy, how: str) -> int:
    if how == "eof":
        return proxy.close()
    proxy.proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGTERM)
    return proxy.proc.wait(30)


@pytest.mark.parametrize("how", ["eof", "sigint", "sigterm"])
def test_the_client_ends_the_proxy_with_exit_0_and_no_message(raw_proxy: Callable[..., RawProxy],
                                                              how: str) -> None:
    """In front of server-everything, after a handshake and a call: exit 0, nothing of ours on
    stderr (the upstream's own banner is its business), the upstream stopped too."""
    proxy = raw_proxy(upstream=server_command("everything", "stdio"))
    assert "tools" in proxy.handshake()["result"]["capabilities"]
    proxy.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"message": "hi"}}})
    assert proxy.answer()["id"] == 2
    assert end(proxy, how) == 0
    assert "s3spill" not in proxy.stderr() and "Traceback" not in proxy.stderr()


def test_a_sigterm_while_the_proxy_closes_still_ends_it_with_0(raw_proxy: Callable[..., RawProxy],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The client ends the session, then SIGTERMs the proxy while it closes its spiller and
    store (held there by a failpoint, as a close that takes seconds under load): exit 0 once
    closed, not death by the signal (asyncio had put SIGTERM back to its default)."""
    monkeypatch.setenv(ENV_VAR, "proxy.closing=sleep(1500)")
    proxy = raw_proxy()
    proxy.handshake()
    proxy.proc.stdin.close()  # type: ignore[union-attr]
    deadline = time.monotonic() + 30
    while f"{REACHED_MARKER} proxy.closing" not in proxy.stderr():
        assert time.monotonic() < deadline and proxy.proc.poll() is None, proxy.stderr()
        time.sleep(0.05)
    proxy.proc.terminate()
    assert proxy.proc.wait(30) == 0, proxy.stderr()


def test_an_upstream_that_outlives_its_input_ends_with_the_proxy(raw_proxy: Callable[..., RawProxy]) -> None:
    """The upstream keeps running after its stdin closes (server-everything does, once a client
    declared roots). Ended as the TypeScript SDK's stdio transport ends a server (stdin closed,
    SIGTERM 2 s later, SIGKILL 2 s after that), the proxy exits 0 before the SIGKILL and the
    upstream is gone: not orphaned, not dead of EPIPE writing to a proxy that was killed."""
    proxy = raw_proxy("lingers")
    proxy.handshake()
    pid = int(Path(f"{proxy.record}.pid").read_text())
    proxy.proc.stdin.close()  # type: ignore[union-attr]
    for step in (proxy.proc.terminate, None):
        try:
            proxy.proc.wait(2)
            break
        except subprocess.TimeoutExpired:
            assert step is not None, "the proxy outlived SIGTERM by 2 s: the SDK client kills it there"
            step()
    assert proxy.proc.returncode == 0
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
    assert "EPIPE" not in proxy.stderr() and "s3spill" not in proxy.stderr(), proxy.stderr()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")


def test_an_upstream_dying_mid_answer_fails_every_pending_request(raw_proxy: Callable[..., RawProxy]) -> None:
    """The upstream writes half an answer and exits 9 with two calls pending: the half line is
    not relayed, both calls get a JSON-RPC error, the proxy says why in one line and exits 9."""
    proxy = raw_proxy()
    proxy.handshake()
    proxy.send({"jsonrpc": "2.0", "id": "h", "method": "tools/call", "params": {"name": "hang"}})
    proxy.send({"jsonrpc": "2.0", "id": "d", "method": "tools/call", "params": {"name": "die"}})
    answers = {}
    for _ in range(2):
        msg = proxy.answer()
        answers[msg["id"]] = msg
    assert proxy.answer() is None
    assert {k: m["error"]["code"] for k, m in answers.items()} == {"h": -32603, "d": -32603}
    assert "ended before answering" in answers["d"]["error"]["message"]
    assert proxy.proc.wait(30) == 9
    ours = [line for line in proxy.stderr().splitlines() if line.startswith("s3spill")]
    assert ours == ["s3spill mcp-proxy: the upstream server ended (exit status 9); "
                    "2 request(s) it left unanswered got an error"]


def test_an_unanswered_call_times_out_while_others_proceed(tmp_path: Path) -> None:
    """With --call-timeout 2 the SDK client's call of a tool the upstream never answers fails
    with the timeout code after about 2 s, echoes made meanwhile are answered at once, and
    the upstream is told to cancel the call."""
    record = tmp_path / "up.jsonl"
    command = proxy_command((tmp_path / "store").as_uri(), SESSION, hostile_command(record),
                            "--call-timeout", "2")
    seen: dict[str, object] = {}

    async def hang(client: object) -> None:
        started = time.monotonic()
        with pytest.raises(MCPError) as failed:
            await client.call_tool("hang", {})  # type: ignore[attr-defined]
        seen["code"], seen["after"] = failed.value.error.code, time.monotonic() - started

    async def run() -> None:
        async with connect(command, tmp_path / "proxy.err") as client, anyio.create_task_group() as tg:
            tg.start_soon(hang, client)
            for k in range(5):
                echoed = await client.call_tool("echo", {"text": str(k)})
                assert echoed.content[0].text == f"echo: {k}"
            seen["echoes_done"] = "code" not in seen

    anyio.run(run)
    assert seen["code"] == -32001 and 1.5 < float(seen["after"]) < 20  # type: ignore[arg-type]
    assert seen["echoes_done"] is True
    lines = [line for line in record.read_text().splitlines() if "hang" in line or "cancelled" in line]
    assert '"notifications/cancelled"' in lines[-1]


def test_a_cancel_is_forwarded_under_the_proxys_id(raw_proxy: Callable[..., RawProxy]) -> None:
    """notifications/cancelled for a pending call reaches the upstream naming the id the upstream
    was sent; a cancel for an id nothing is pending under is not forwarded."""
    proxy = raw_proxy()
    proxy.handshake()
    proxy.send({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "hang"}})
    proxy.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 41,
                                                                                "reason": "user"}})
    proxy.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}})
    proxy.send({"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "after"}}})
    assert proxy.answer() == {"jsonrpc": "2.0", "id": 42, "result": {
        "content": [{"type": "text", "text": "echo: after"}]}}
    assert proxy.close() == 0
    got = [m for m in proxy.upstream_got() if isinstance(m, dict)]
    call = next(m for m in got if m.get("params", {}).get("name") == "hang")
    cancels = [m for m in got if m.get("method") == "notifications/cancelled"]
    assert cancels == [{"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": call["id"], "reason": "user"}}]
