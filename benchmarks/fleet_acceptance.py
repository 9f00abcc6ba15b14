"""Issue 34's acceptance at GiB scale: one policy file caps, masks and budgets every route.

One TOML file sets a 256 MiB cap, a session quota (1 GiB) and ``at_rest`` masking; a
generated stream with planted secrets (at its start, its middle and its end) goes, for one
explicit session, through ``s3spill run`` and ``s3spill spill -`` (``--gib``, 3), the Claude
Code hook's persisted-file route (a Bash output Claude Code saved to a file; ``--hook-gib``, 1)
and ``s3spill mcp-proxy`` (one tool result of ``--proxy-gib``, 1, from a minimal stdio server,
called by the official MCP SDK's client). For each route it checks and prints: the stored copy
is at most the cap, the whole output's byte count is exact, the peak RSS is bounded, no
``read`` or ``grep`` of the stored copy prints a planted secret. Then the session's quota
counter must equal the four stored copies and stay within the quota, and ``config show`` must
name the file and line of each value. Last, ``run --background --max-bytes`` at
``--background-cap-mib`` (8) over ``--background-mib`` (256) of output, in a session of its
own: the final copy is at most that cap (the issue measured 68,157,591 bytes kept at 8 MiB),
its counts are exact and its session's counter is charged exactly.

    python benchmarks/fleet_acceptance.py              # the issue's sizes (~8 min on 2 busy cores)
    python benchmarks/fleet_acceptance.py --gib 0.25 --cap-mib 16   # a quick run

Exit 0 when every check holds, 1 otherwise (a .ci/run step).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MiB = 1024 * 1024
#: The background route's own session.
BACKGROUND_SESSION = "fleet-acceptance-background"
#: Planted secrets: an AWS access key id and a GitHub token, as a leak in a log would hold them.
SECRETS = ("AKIAQYLPMN5HHHFPZAM2", "ghp_8c1XkQm3ZpL0vT7rW2yN5bJ4sD6fH9aE1gUo")
GENERATOR = r"""
import sys
total, secrets = int(sys.argv[1]), sys.argv[2:]
line = b"2026-12-01T21:00:00Z INFO worker=7 step=compile status=ok elapsed_ms=12 note=steady\n"
block = line * (1024 * 1024 // len(line))
out = sys.stdout.buffer
def leak(tag):
    for s in secrets:
        out.write(f"{tag} export AWS_ACCESS_KEY_ID={s}\n".encode())
written = 0
leak("start")
while written < total:
    n = min(len(block), total - written)
    out.write(block[:n])
    written += n
    if written == total // 2 or (written >= total // 2 and written - n < total // 2):
        leak("middle")
leak("end")
"""

#: A minimal MCP server over stdio whose one tool, ``generate``, answers with the same stream
#: as GENERATOR in one text content, written as it is generated. Not a reference server:
#: none can answer 1 GiB in one text (Node's strings stop at 2**29 characters, ~512 MiB).
UPSTREAM = r"""
import json, sys
secrets = sys.argv[1:]
line = b"2026-12-01T21:00:00Z INFO worker=7 step=compile status=ok elapsed_ms=12 note=steady\n"
block = line * (1024 * 1024 // len(line))
out = sys.stdout.buffer
def esc(data):
    return data.replace(b"\n", b"\\n")
def leak(tag):
    for s in secrets:
        out.write(esc(f"{tag} export AWS_ACCESS_KEY_ID={s}\n".encode()))
def generate(mid, total):
    out.write(b'{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "'
              % json.dumps(mid).encode())
    written, whole = 0, esc(block)
    leak("start")
    while written < total:
        n = min(len(block), total - written)
        out.write(whole if n == len(block) else esc(block[:n]))
        written += n
        if written >= total // 2 and written - n < total // 2:
            leak("middle")
    leak("end")
    out.write(b'"}]}}\n')
    out.flush()
TOOLS = [{"name": "generate", "description": "a generated build log",
          "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}},
                          "required": ["bytes"]}}]
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    mid, method = msg.get("id"), msg.get("method")
    if method == "tools/call":
        generate(mid, int(msg["params"]["arguments"]["bytes"]))
        continue
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "fleet-generator", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "ping":
        result = {}
    else:
        continue
    out.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}).encode() + b"\n")
    out.flush()
"""


def cli(env: dict[str, str], *args: str, stdin: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "s3spill", *args], env=env, text=True,
                          capture_output=True, stdin=stdin, timeout=3600)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def check_reads(env: dict[str, str], source_id: str) -> list[str]:
    problems = []
    for args in (("read", source_id, "--limit", "400"), ("grep", source_id, "AWS_ACCESS_KEY_ID"),
                 ("grep", source_id, "AKIA|ghp_")):
        out = cli(env, *args)
        if any(s in out.stdout or s in out.stderr for s in SECRETS):
            problems.append(f"`s3spill {' '.join(args)}` printed a planted secret")
    return problems


#: The pointer's line with the whole output's counts (hook and proxy answers).
FULL_OUTPUT = re.compile(r"Full output of [^\n]*?: (\d+) bytes, (\d+) lines")


def stored_size(env: dict[str, str], sid: str) -> object:
    """The stored copy's size in bytes of output, as ``ls`` lists it."""
    listed = json.loads(cli(env, "ls", "--json").stdout)["artifacts"]
    return next((a["size_bytes"] for a in listed if a["source_id"] == sid), None)


def route_run(env: dict[str, str], gen: Path, total: int) -> tuple[dict[str, object], str]:
    proc = cli(env, "run", "--json", "--", sys.executable, str(gen), str(total), *SECRETS)
    result = json.loads(proc.stdout)
    art = result.get("artifact") or {}
    stored = result.get("stored_bytes") or art.get("size_bytes")  # stored_bytes: only when capped
    return {**result, "size_bytes": stored}, str(art.get("source_id", ""))


def route_spill(env: dict[str, str], gen: Path, total: int) -> tuple[dict[str, object], str]:
    producer = subprocess.Popen([sys.executable, str(gen), str(total), *SECRETS], stdout=subprocess.PIPE)
    assert producer.stdout is not None
    proc = cli(env, "spill", "-", stdin=producer.stdout.fileno())  # --json has no whole-output count
    producer.stdout.close()
    producer.wait()
    lines = proc.stdout.splitlines() if proc.returncode == 0 else [""]
    sid = lines[0] if lines[0].startswith("artifact:") else ""
    capped = re.search(r"stored ([\d,]+) of ([\d,]+) bytes", proc.stdout)
    total_seen = int(capped.group(2).replace(",", "")) if capped else None
    return {"size_bytes": stored_size(env, sid) if sid else None, "total_bytes": total_seen}, sid


def route_hook(env: dict[str, str], gen: Path, total: int) -> tuple[dict[str, object], str]:
    """Claude Code's PostToolUse for a Bash output it persisted to a file (the whole output)."""
    saved = gen.with_name("persisted-output.txt")
    with open(saved, "wb") as fh:
        subprocess.run([sys.executable, str(gen), str(total), *SECRETS], stdout=fh, check=True)
    before = json.loads(cli(env, "quota", "show", "--json").stdout)["bytes"]
    payload = json.dumps({"hook_event_name": "PostToolUse", "session_id": env["S3SPILL_SESSION"],
                          "tool_name": "Bash", "tool_use_id": "toolu_fleet", "tool_input": {"command": "gen"},
                          "tool_response": {"stdout": "(excerpt)", "stderr": "", "interrupted": False,
                                            "persistedOutputPath": str(saved),
                                            "persistedOutputSize": saved.stat().st_size}})
    proc = subprocess.run([sys.executable, "-m", "s3spill", "hook", "claude-code"], env=env, text=True,
                          input=payload, capture_output=True, timeout=3600)
    saved.unlink()
    text = proc.stdout
    found = re.search(r"artifact:[0-9a-f]{32}:[A-Za-z0-9T._-]+:[0-9a-f]{16}", text)
    after = json.loads(cli(env, "quota", "show", "--json").stdout)["bytes"]
    counts = FULL_OUTPUT.search(text)
    sid = found.group(0) if found else ""
    return {"size_bytes": stored_size(env, sid) if sid else None, "counted": after - before,
            "leak": any(s in text for s in SECRETS),
            "total_bytes": int(counts.group(1)) if counts else None}, sid


def route_proxy(env: dict[str, str], gen: Path, total: int) -> tuple[dict[str, object], str, float]:
    """``s3spill mcp-proxy`` in front of UPSTREAM, called by the official MCP SDK's client
    (validation on): the pointer's counts, the stored copy's size (``ls``), the proxy's peak RSS."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    upstream = gen.with_name("upstream.py")
    upstream.write_text(UPSTREAM)
    argv = ["-m", "s3spill", "mcp-proxy", "--", sys.executable, str(upstream), *SECRETS]
    found: dict[str, object] = {}

    async def call() -> None:
        params = StdioServerParameters(command=sys.executable, args=argv, env=env)
        with open(gen.with_name("proxy.err"), "a") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                result = await client.call_tool("generate", {"bytes": total})
                found["text"] = "".join(getattr(block, "text", "") for block in result.content)
                found["rss"] = max((_hwm_mib(pid) for pid in _pids("mcp-proxy")), default=0.0)

    try:
        anyio.run(call)
    except Exception as exc:  # noqa: BLE001 - an acceptance step reports what failed and goes on
        causes = getattr(exc, "exceptions", [exc])
        while causes and hasattr(causes[0], "exceptions"):
            causes = causes[0].exceptions
        return {"error": f"{type(causes[0]).__name__}: {causes[0]}"[:300]}, "", 0.0
    text = str(found.get("text", ""))
    counts = FULL_OUTPUT.search(text)
    sid = re.search(r'source_id="([^"]+)"', text)
    doc: dict[str, object] = {"size_bytes": stored_size(env, sid.group(1)) if sid else None,
                              "leak": any(s in text for s in SECRETS),
                              "total_bytes": int(counts.group(1)) if counts else None,
                              "lines": int(counts.group(2)) if counts else None}
    return doc, sid.group(1) if sid else "", float(str(found.get("rss", 0.0)))


def _pids(marker: str) -> list[int]:
    """Our descendants whose command line names ``marker``."""
    me, out = os.getpid(), []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if marker.encode() in cmdline and int(stat[1]) in (me, *_children(me)):
            out.append(int(proc.name))
    return out


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _hwm_mib(pid: int) -> float:
    """The peak RSS (VmHWM) of a live process not our child (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0.0


def route_background(env: dict[str, str], gen: Path, total: int,
                     cap: int) -> tuple[dict[str, object], str, float]:
    """``run --background --max-bytes CAP`` in a session of its own (the four routes share the
    policy's quota): the final copy, its exact counts, what its quota counter was charged, and
    the supervisor's peak RSS (it is detached: sampled from /proc while it runs)."""
    env = {**env, "S3SPILL_SESSION": BACKGROUND_SESSION}
    proc = cli(env, "run", "--background", "--json", "--max-bytes", str(cap), "--",
               sys.executable, str(gen), str(total), *SECRETS)
    started = json.loads(proc.stdout)
    live_id, supervisor = str(started["source_id"]), int(started["supervisor_pid"])
    hwm, status = 0.0, {}
    deadline = time.monotonic() + 3600
    while time.monotonic() < deadline:
        hwm = max(hwm, _hwm_mib(supervisor))
        status = json.loads(cli(env, "status", live_id, "--json").stdout)
        if status.get("final_source_id"):
            break
        time.sleep(0.5)
    final = str(status.get("final_source_id") or "")
    counted = json.loads(cli(env, "quota", "show", "--json").stdout)["bytes"]
    size = stored_size(env, final) if final else None
    return {**status, "size_bytes": size, "counted": counted}, final, hwm


def leaked_bytes() -> int:
    """What the generator adds to its ``total`` bytes: the planted lines."""
    return sum(len(f"{t} export AWS_ACCESS_KEY_ID={s}\n") for t in ("start", "middle", "end")
               for s in SECRETS)


@dataclass
class Outcome:
    """What one route stored: its size, the exact count it reported, the peak RSS it took."""

    name: str
    sid: str
    stored: object
    cap: int
    rss: float
    rss_bound: int
    expected_total: int | None = None
    total: object = None
    leak: bool = False
    seconds: float = 0.0
    note: str = ""
    #: What the route's own session counter was charged (None: it shares the session's).
    counted: object = None
    #: What the shared session's counter rose by for this route alone, where it is measured.
    shared: object = None

    def problems(self) -> list[str]:
        out = []
        if self.expected_total is not None and self.total != self.expected_total:
            out.append(f"{self.name}: total {self.total} is not the exact size {self.expected_total:,}")
        if self.leak:
            out.append(f"{self.name}: its answer printed a planted secret")
        if not self.sid or not isinstance(self.stored, int) or self.stored > self.cap:
            out.append(f"{self.name}: stored {self.stored} (cap {self.cap:,}) id {self.sid!r}")
        for charged in (self.counted, self.shared):
            if charged is not None and charged != self.stored:
                out.append(f"{self.name}: the quota counter was charged {charged}, not {self.stored}")
        if self.rss <= 0:
            out.append(f"{self.name}: its peak RSS was not measured (process not found)")
        if self.rss > self.rss_bound:
            out.append(f"{self.name}: peak RSS {self.rss:.0f} MiB over {self.rss_bound}")
        return out

    def line(self) -> str:
        stored = self.stored if isinstance(self.stored, int) else 0
        return (f"  {self.name:<16} stored {stored:>12,} B (cap {self.cap:,})  {self.seconds:6.1f} s  "
                f"peak RSS {self.rss:6.0f} MiB{self.note}")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=3.0, help="GiB per route (default 3)")
    ap.add_argument("--cap-mib", type=int, default=256)
    ap.add_argument("--quota-mib", type=int, default=1024)
    ap.add_argument("--max-rss-mib", type=int, default=600,
                    help="peak RSS bound per route: of any child, the proxy, the supervisor (default 600)")
    ap.add_argument("--hook-gib", type=float, default=1.0,
                    help="GiB through the Claude Code hook's persisted-file route (default 1)")
    ap.add_argument("--proxy-gib", type=float, default=1.0,
                    help="GiB through `s3spill mcp-proxy` in one tool result (default 1)")
    ap.add_argument("--background-mib", type=int, default=256,
                    help="MiB through `run --background` (default 256) ...")
    ap.add_argument("--background-cap-mib", type=int, default=8, help="... at this --max-bytes (default 8)")
    return ap


def measure(args: argparse.Namespace, env: dict[str, str], gen: Path) -> Iterator[Outcome]:
    """Every route in turn, in the one session (each reported as soon as it ended)."""
    total, cap, exact = int(args.gib * 1024 * MiB), args.cap_mib * MiB, leaked_bytes()
    for name, route, size in (("run", route_run, total), ("spill -", route_spill, total),
                              ("hook", route_hook, int(args.hook_gib * 1024 * MiB))):
        t0 = time.monotonic()
        doc, sid = route(env, gen, size)
        yield Outcome(name, sid, doc.get("size_bytes"), cap, peak_mib(), args.max_rss_mib, size + exact,
                      doc.get("total_bytes"), bool(doc.get("leak")), time.monotonic() - t0,
                      " (any child so far)", shared=doc.get("counted"))
    size, t0 = int(args.proxy_gib * 1024 * MiB), time.monotonic()
    doc, sid, rss = route_proxy(env, gen, size)
    yield Outcome("mcp-proxy", sid, doc.get("size_bytes"), cap, rss, args.max_rss_mib,
                  size + exact, doc.get("total_bytes"), bool(doc.get("leak")), time.monotonic() - t0,
                  f" (the proxy; a {size:,} B result){'; ' + str(doc['error']) if 'error' in doc else ''}")
    size, bg_cap, t0 = args.background_mib * MiB, args.background_cap_mib * MiB, time.monotonic()
    doc, sid, rss = route_background(env, gen, size, bg_cap)
    yield Outcome("run --background", sid, doc.get("size_bytes"), bg_cap, rss, args.max_rss_mib,
                  size + exact, doc.get("total_bytes") if doc.get("status") == "exited" else None,
                  False, time.monotonic() - t0, f" (the supervisor; {size:,} B of output)",
                  counted=doc.get("counted"))


def main() -> int:
    args = _parser().parse_args()
    with tempfile.TemporaryDirectory(prefix="s3spill-fleet-") as tmp:  # GiBs: never left behind
        return accept(args, Path(tmp))


def accept(args: argparse.Namespace, tmp: Path) -> int:
    policy = tmp / "fleet.toml"
    policy.write_text(f'[spill]\nmax_stored_bytes = "{args.cap_mib}MiB"\nsecrets = "at_rest"\n\n'
                      f'[quota]\nsession_bytes = "{args.quota_mib}MiB"\n')
    gen = tmp / "gen.py"
    gen.write_text(GENERATOR)
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3SPILL_")}
    env.update(S3SPILL_CONFIG=str(policy), S3SPILL_STORE=(tmp / "store").as_uri(),
               S3SPILL_SESSION="fleet-acceptance", XDG_CONFIG_HOME=str(tmp / "cfg"))
    print(f"policy {policy}: cap {args.cap_mib * MiB:,} B, quota {args.quota_mib} MiB, secrets at_rest; "
          f"{int(args.gib * 1024 * MiB):,} B through run and spill -")
    problems: list[str] = []
    stored_total = 0
    for outcome in measure(args, env, gen):
        print(outcome.line(), flush=True)
        problems += outcome.problems()
        if outcome.sid:
            problems += check_reads(env, outcome.sid)
        if outcome.counted is None and isinstance(outcome.stored, int):  # the shared session's
            stored_total += outcome.stored
    quota = json.loads(cli(env, "quota", "show", "--json").stdout)
    print(f"  quota            {quota['bytes']:,} of {quota['limit_bytes']:,} B "
          f"(the stored copies add up to {stored_total:,})")
    if quota["bytes"] > quota["limit_bytes"] or quota["bytes"] != stored_total:
        problems.append(f"quota: counter {quota['bytes']:,} vs stored {stored_total:,}, limit "
                        f"{quota['limit_bytes']:,}")
    rows = json.loads(cli(env, "config", "show", "--json").stdout)["settings"]
    shown = {r["key"]: r["origin"] for r in rows}
    for key, line in (("spill.max_stored_bytes", 2), ("spill.secrets", 3), ("quota.session_bytes", 6)):
        if shown.get(key) != f"file:{policy}:{line}":
            problems.append(f"config show: {key} from {shown.get(key)}, not file:{policy}:{line}")
    for p in problems:
        print(f"FAILED: {p}")
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
