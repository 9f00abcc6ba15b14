"""``s3spill mcp`` over stdio ends as a harness expects: EOF, SIGINT or SIGTERM, exit 0, silent."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from tests.proxy.servers import RawProxy


@pytest.mark.parametrize("how", ["eof", "sigint", "sigterm"])
def test_the_server_ends_with_exit_0_and_no_message(tmp_path: Path, how: str) -> None:
    """After a handshake and a list_artifacts call, each way of ending gives exit 0, empty stderr."""
    command = [sys.executable, "-m", "s3spill", "--store", (tmp_path / "store").as_uri(), "--session",
               "stdio-life", "mcp"]
    server = RawProxy(command, tmp_path / "unused", tmp_path / "mcp.err")
    try:
        assert server.handshake()["result"]["serverInfo"]["name"] == "s3spill"
        server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "list_artifacts", "arguments": {}}})
        assert server.answer()["result"]["isError"] is False
        if how == "eof":
            code = server.close()
        else:
            server.proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGTERM)
            code = server.proc.wait(30)
        assert code == 0 and server.stderr() == ""
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(10)
