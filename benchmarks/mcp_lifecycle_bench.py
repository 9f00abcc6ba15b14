"""``s3spill mcp-proxy`` and ``s3spill mcp`` as processes: first answer, memory, endings.

* startup — spawn to the answer of ``initialize``, 10 spawns each (median, min, max): the
  proxy in front of a minimal Python upstream (tests/proxy/hostile_upstream.py) and in
  front of server-everything (node), each upstream alone (the baselines: interpreter start
  plus the handshake), ``s3spill mcp``, and an empty server on the MCP SDK (the floor of
  ``s3spill mcp``: the SDK's import and its handshake);
* memory — one ``tools/call`` whose result is N bytes of text (30 MB, 300 MB, 1 GB; the
  upstream streams it, it never holds it): the proxy's peak RSS (``VmHWM``) over its RSS
  just before the call, and the size of the pointer the client gets; then a 300 MB text
  sent twice, as the text and as ``structuredContent`` (``--twice``);
* endings — client EOF, SIGINT and SIGTERM, 10 runs each, for both commands: how many ended
  with exit 0 and nothing of ours on stderr.

    python benchmarks/mcp_lifecycle_bench.py [--runs 10] [--sizes 30,300,1000] [--skip endings]
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.proxy.conftest import hostile_command
from tests.proxy.servers import INIT, RawProxy, proxy_command, server_command

#: The least an MCP server on the official Python SDK does before it can answer ``initialize``:
#: import the low-level server and the stdio transport, serve one empty server.
SDK_FLOOR = """
import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

async def main():
    server = Server("floor")
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""
MB = 1_000_000
MiB = 1024 * 1024


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def first_answer(command: list[str], work: Path) -> float:
    """Seconds from spawn to the answer of ``initialize``."""
    started = time.perf_counter()
    proc = RawProxy(command, work / "up.jsonl", work / "startup.err")
    try:
        proc.send(INIT)
        assert proc.answer(60)["id"] == INIT["id"]
        return time.perf_counter() - started
    finally:
        proc.close()


def startup(runs: int, work: Path) -> None:
    store = (work / "store").as_uri()
    commands = {
        "upstream alone (python, baseline)": hostile_command(work / "up.jsonl"),
        "s3spill mcp-proxy -> that upstream": proxy_command(store, "bench",
                                                            hostile_command(work / "up.jsonl")),
        "server-everything alone (node)": server_command("everything", "stdio"),
        "s3spill mcp-proxy -> server-everything": proxy_command(store, "bench",
                                                                server_command("everything", "stdio")),
        "s3spill mcp": [sys.executable, "-m", "s3spill", "--store", store, "--session", "bench", "mcp"],
        "SDK low-level server alone (s3spill mcp's floor)": [sys.executable, "-c", SDK_FLOOR],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):  # interleaved: each sees the same load
        for name, command in commands.items():
            times[name].append(first_answer(command, work))
    base = statistics.median(times["upstream alone (python, baseline)"])
    print(f"first answer to initialize, {runs} spawns each (median / min / max, ms):")
    for name, samples in times.items():
        med = statistics.median(samples)
        print(f"  {name:42s} {med * 1000:7.0f} / {min(samples) * 1000:5.0f} / {max(samples) * 1000:5.0f}"
              f"   {med / base:4.1f}x the baseline")


def memory(size: int, work: Path, twice: bool = False, blocks: int = 1) -> None:
    proc = RawProxy(proxy_command((work / "store").as_uri(), "bench", hostile_command(work / "up.jsonl")),
                    work / "up.jsonl", work / "memory.err")
    try:
        proc.handshake()
        proc.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": "warm"}}})
        proc.answer(60)
        before = _kib(proc.proc.pid, "VmRSS")
        started = time.perf_counter()
        proc.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "flood", "arguments": {"bytes": size, "twice": twice, "blocks": blocks}}})
        answer = proc.answer(1800)
        took = time.perf_counter() - started
        peak = _kib(proc.proc.pid, "VmHWM")
        text = "".join(b.get("text", "") for b in answer["result"]["content"])
        what = "text, and again as structuredContent" if twice else \
            f"result in {blocks} text blocks" if blocks > 1 else "result"
        message = size * (2 if twice else 1)
        print(f"  {size / MB:6.0f} MB {what}: peak RSS {(peak - before) / MiB:7.0f} MiB over the "
              f"{before / MiB:.0f} MiB before it ({(peak - before) / message:4.2f} bytes per byte), "
              f"{took:6.1f} s, "
              f"pointer {len(text)} chars")
    finally:
        proc.close(120)


def endings(runs: int, work: Path) -> None:
    store = (work / "store").as_uri()
    commands = {
        "mcp-proxy": proxy_command(store, "bench", hostile_command(work / "up.jsonl")),
        "mcp": [sys.executable, "-m", "s3spill", "--store", store, "--session", "bench", "mcp"],
    }
    print(f"endings, {runs} runs each (exit 0 and nothing of ours on stderr):")
    for name, command in commands.items():
        for how in ("eof", "sigint", "sigterm"):
            clean = 0
            for _ in range(runs):
                proc = RawProxy(command, work / "up.jsonl", work / "end.err")
                proc.handshake()
                if how == "eof":
                    code = proc.close()
                else:
                    proc.proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGTERM)
                    code = proc.proc.wait(30)
                clean += code == 0 and "s3spill" not in proc.stderr() and "Traceback" not in proc.stderr()
            print(f"  {name:10s} {how:8s} {clean}/{runs}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--sizes", default="30,300,1000", help="result sizes in MB")
    parser.add_argument("--twice", default="300", help="sizes in MB of a text sent twice: as the "
                        "text and as structuredContent (server-filesystem's read_text_file shape)")
    parser.add_argument("--blocks", default="300", help="sizes in MB of a result in two text blocks")
    parser.add_argument("--skip", action="append", default=[], choices=["startup", "memory", "endings"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "up.jsonl").touch()
        if "startup" not in args.skip:
            startup(args.runs, work)
        if "memory" not in args.skip:
            print("memory of one large result through the proxy:")
            for size in (int(s) * MB for s in args.sizes.split(",") if s):
                memory(size, work)
            for size in (int(s) * MB for s in args.twice.split(",") if s):
                memory(size, work, twice=True)
            for size in (int(s) * MB for s in args.blocks.split(",") if s):
                memory(size, work, blocks=2)
        if "endings" not in args.skip:
            endings(args.runs, work)


if __name__ == "__main__":
    main()
