"""What MCP adds to a page read or a search: the same calls direct, over stdio, over HTTP.

Spills one artifact (default 20 MB of log lines) to a local store, then times
``read_artifact`` at random offsets and ``grep_artifact`` over the whole artifact three
ways: :class:`~s3spill.agent.tools.AgentTools` called in-process (the baseline),
``s3spill mcp`` over stdio, and ``s3spill mcp --http`` on 127.0.0.1, each through the
SDK's own client. Prints median and p95 latency and the ratio to the baseline.

    python benchmarks/mcp_bench.py [--mib 20] [--reads 50] [--greps 5]
"""

from __future__ import annotations

import argparse
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from s3spill.agent.tools import AgentTools
from s3spill.artifacts.store import ArtifactStore
from s3spill.store.local import LocalStore
from s3spill.testing import child_env, free_port

SESSION = "bench-session"


def make_data(mib: int) -> tuple[bytes, int]:
    lines = []
    size, n = 0, 0
    while size < mib * 1024 * 1024:
        line = f"{n:08d} {'ERROR timeout' if n % 5000 == 0 else 'INFO request served'} in {n % 997} ms\n"
        lines.append(line)
        size += len(line)
        n += 1
    return "".join(lines).encode(), n


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def plan(lines: int, reads: int) -> list[int]:
    rng = random.Random(7)
    return [rng.randrange(lines) for _ in range(reads)]


def bench_direct(tools: AgentTools, sid: str, offsets: list[int], greps: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"read": [], "grep": []}
    for offset in offsets:
        t = time.perf_counter()
        tools.read_artifact(sid, offset=offset, limit=100)
        out["read"].append(time.perf_counter() - t)
    for _ in range(greps):
        t = time.perf_counter()
        tools.grep_artifact(sid, "ERROR", max_matches=20)
        out["grep"].append(time.perf_counter() - t)
    return out


async def bench_client(client: Client, sid: str, offsets: list[int], greps: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"read": [], "grep": []}
    await client.list_tools()
    for offset in offsets:
        t = time.perf_counter()
        result = await client.call_tool("read_artifact", {"source_id": sid, "offset": offset, "limit": 100})
        out["read"].append(time.perf_counter() - t)
        assert not result.is_error
    for _ in range(greps):
        t = time.perf_counter()
        result = await client.call_tool("grep_artifact", {"source_id": sid, "pattern": "ERROR"})
        out["grep"].append(time.perf_counter() - t)
        assert not result.is_error
    return out


def run_stdio(env: dict[str, str], body: Callable[[Client], Awaitable[Any]]) -> Any:
    params = StdioServerParameters(command=sys.executable, args=["-m", "s3spill", "mcp"], env=env)

    async def go() -> Any:
        async with Client(stdio_client(params, errlog=sys.stderr)) as client:
            return await body(client)

    return anyio.run(go)


def run_http(env: dict[str, str], body: Callable[[Client], Awaitable[Any]]) -> Any:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "s3spill", "mcp", "--http", f"127.0.0.1:{port}"],
                            env=env, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the HTTP server did not start") from None
                time.sleep(0.05)

        async def go() -> Any:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                return await body(client)

        return anyio.run(go)
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=20)
    parser.add_argument("--reads", type=int, default=50)
    parser.add_argument("--greps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = LocalStore(Path(tmp) / "store")
        data, lines = make_data(args.mib)
        sid = ArtifactStore(store, session_id=SESSION).write(SESSION, data, "bench").source_id
        offsets = plan(lines, args.reads)
        env = child_env({"S3SPILL_STORE": store.url, "S3SPILL_SESSION": SESSION})
        print(f"artifact: {len(data):,} bytes, {lines:,} lines; {args.reads} reads of 100 lines at "
              f"random offsets, {args.greps} greps of the whole artifact")
        direct = AgentTools(store, SESSION)
        bench_direct(direct, sid, offsets[:5], 1)  # warm-up: imports, index cache, regex cache
        first = bench_direct(direct, sid, offsets, args.greps)
        results = {
            "MCP stdio": run_stdio(env, lambda c: bench_client(c, sid, offsets, args.greps)),
            "MCP HTTP": run_http(env, lambda c: bench_client(c, sid, offsets, args.greps)),
        }
        # The machine is shared: time the baseline before and after, keep the faster run.
        second = bench_direct(direct, sid, offsets, args.greps)
        results = {"direct (AgentTools)": {k: min(first[k], second[k], key=lambda v: summary(v)[0])
                                           for k in first}, **results}
    base = {k: summary(v)[0] for k, v in results["direct (AgentTools)"].items()}
    print(f"{'path':<22} {'read p50':>10} {'read p95':>10} {'x direct':>9} {'grep p50':>10} {'x direct':>9}")
    for name, samples in results.items():
        r50, r95 = summary(samples["read"])
        g50, _ = summary(samples["grep"])
        print(f"{name:<22} {r50 * 1000:>8.2f}ms {r95 * 1000:>8.2f}ms {r50 / base['read']:>8.1f}x "
              f"{g50 * 1000:>8.1f}ms {g50 / base['grep']:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
