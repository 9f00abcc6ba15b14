"""`s3spill mcp --http` as a real process for a test: started, waited for, always ended."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def serving(args: list[str], env: dict[str, str], log: Path, host: str, port: int,
            timeout: float = 120) -> Iterator[str]:
    """Run ``s3spill mcp --http host:port ARGS`` until the block ends; yields its MCP URL.

    The wait is long because a loaded 2-core box (a land batch beside benchmarks, load ~12)
    once took over 30 s to bring the server up; a server that exits early still fails at once.

    Its output goes to ``log``, whose text is the failure message when it exits early or
    never listens; on the way out it gets SIGTERM, then SIGKILL after 10 s.
    """
    with log.open("w") as errlog:
        proc = subprocess.Popen([sys.executable, "-m", "s3spill", "mcp", "--http", f"{host}:{port}",
                                 *args], env=env, stdin=subprocess.DEVNULL, stdout=errlog,
                                stderr=errlog)
    try:
        deadline = time.monotonic() + timeout
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                socket.create_connection((host, port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
        yield f"http://{host}:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
