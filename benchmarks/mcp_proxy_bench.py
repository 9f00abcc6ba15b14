"""What ``s3spill mcp-proxy`` adds: latency on a small result, memory on a 50 MB one.

Against the npm reference servers (tests/mcp_servers; ``npm ci --prefix tests/mcp_servers``):

* latency — ``echo`` of a short message through the SDK's client, directly to
  server-everything (the baseline) and through the proxy, interleaved in rounds so both
  see the same machine load; prints p50/p95 of each and the added p50 (goal: < 5 ms);
* memory — server-filesystem's ``read_text_file`` of a 50 MB file through the proxy: the
  proxy process's peak RSS (``VmHWM``) before and after the call, and the pointer's size;
* the Claude Code hook — ``s3spill hook claude-code`` as the harness runs it (a process per
  tool call) on the recorded Bash payload with 200 bytes and with 5 MB of stdout.

    python benchmarks/mcp_proxy_bench.py [--calls 300] [--mib 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.proxy.servers import connect, proxy_command, server_command

MiB = 1024 * 1024


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


async def timed_echo(client: Client, n: int) -> list[float]:
    out = []
    for i in range(n):
        t = time.perf_counter()
        result = await client.call_tool("echo", {"message": f"ping {i}"})
        out.append(time.perf_counter() - t)
        assert not result.is_error
    return out


def peak_rss(session: str) -> int:
    """VmHWM (bytes) of the proxy process started for ``session`` (found by its command line)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            if b"mcp-proxy" in cmdline and session.encode() in cmdline:
                status = (proc / "status").read_text()
        except OSError:
            continue
        else:
            if b"mcp-proxy" in cmdline and session.encode() in cmdline:
                line = next(row for row in status.splitlines() if row.startswith("VmHWM:"))
                return int(line.split()[1]) * 1024
    raise RuntimeError("proxy process not found")


async def latency(store_url: str, log: Path, calls: int, rounds: int) -> None:
    upstream = server_command("everything", "stdio")
    session = f"bench-{uuid.uuid4().hex[:8]}"
    direct_s: list[float] = []
    proxied_s: list[float] = []
    async with connect(upstream, log) as direct, \
            connect(proxy_command(store_url, session, upstream), log) as proxied:
        await timed_echo(direct, 20)  # warm-up both paths
        await timed_echo(proxied, 20)
        for _ in range(rounds):
            direct_s += await timed_echo(direct, calls // rounds)
            proxied_s += await timed_echo(proxied, calls // rounds)
    d50, d95 = summary(direct_s)
    p50, p95 = summary(proxied_s)
    print(f"echo, {len(direct_s)} calls each    p50        p95")
    print(f"  direct           {d50 * 1000:8.2f}ms {d95 * 1000:8.2f}ms")
    print(f"  via mcp-proxy    {p50 * 1000:8.2f}ms {p95 * 1000:8.2f}ms")
    print(f"  added p50        {(p50 - d50) * 1000:8.2f}ms ({p50 / d50:.2f}x; goal < 5 ms)")


async def memory(store_url: str, root: Path, log: Path, mib: int) -> None:
    line = "".join(f"{i:09d} INFO request served in {i % 997} ms\n" for i in range(1000))
    path = root / "big.log"
    with path.open("w") as out:
        while out.tell() < mib * MiB:
            out.write(line)
    size = path.stat().st_size
    session = f"bench-{uuid.uuid4().hex[:8]}"
    upstream = server_command("filesystem", str(root))
    async with connect(proxy_command(store_url, session, upstream), log) as proxied:
        await proxied.call_tool("list_allowed_directories", {})
        before = peak_rss(session)
        t = time.perf_counter()
        result = await proxied.call_tool("read_text_file", {"path": str(path)})
        took = time.perf_counter() - t
        after = peak_rss(session)
    text = "".join(getattr(block, "text", "") for block in result.content)
    print(f"read_text_file of {size / MiB:.1f} MiB through the proxy: {took:.2f} s, "
          f"{len(text):,} characters to the client")
    print(f"  proxy peak RSS  {before / MiB:7.1f} MiB before, {after / MiB:7.1f} MiB after "
          f"(+{(after - before) / MiB:.1f} MiB = {(after - before) / size:.2f}x the result)")


def hook_cost(store_url: str, runs: int = 5) -> None:
    import json
    import subprocess

    from s3spill.testing import child_env

    payload = json.loads((Path(__file__).resolve().parents[1] / "tests/data/hooks/claude_code_bash.json")
                         .read_text())
    env = child_env({})
    env.pop("S3SPILL_SESSION", None)
    for name, stdout in (("200 B", "x" * 200),
                         ("5 MB", "".join(f"[{i:07d}] compiling module_{i % 997}.c ... ok\n"
                                          for i in range(130_000)))):
        payload["tool_response"]["stdout"] = stdout
        raw = json.dumps(payload).encode()
        took = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "s3spill", "--store", store_url, "hook", "claude-code"],
                           input=raw, capture_output=True, env=env, check=True)
            took.append(time.perf_counter() - t)
        print(f"hook claude-code, {name} Bash stdout: median {statistics.median(took) * 1000:.0f} ms "
              f"per call (a fresh process each, as the harness runs it)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--mib", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "files").mkdir()
        store_url = (base / "store").as_uri()
        anyio.run(latency, store_url, base / "servers.log", args.calls, args.rounds)
        anyio.run(memory, store_url, base / "files", base / "servers.log", args.mib)
        hook_cost(store_url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
