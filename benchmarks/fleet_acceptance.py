"""Issue 34's acceptance at GiB scale: one policy file caps, masks and budgets every route.

One TOML file sets a 256 MiB cap, a session quota and ``at_rest`` masking; a generated stream
with planted secrets (at its start, its middle and its end) goes through ``s3spill run`` and
``s3spill spill -`` for one explicit session. For each route it checks and prints: the stored
copy is at most the cap, the byte count is exact, the process's peak RSS is bounded, no
``read`` or ``grep`` of the stored copy prints a planted secret; then that ``quota show``
stays within the quota and that ``config show`` names the file and line of each value.

Also ``--hook-gib`` (1) through the Claude Code hook's persisted-file route (a Bash output
Claude Code saved to a file; the hook stores the file), and ``--proxy-gib`` (1) through
``s3spill mcp-proxy``: an MCP server (stdio) whose one tool answers with the stream as the
text of its result, written as it is generated (the upstream never holds it); the proxy
spools the line and streams the text into the spill (its own peak RSS is printed).

    python benchmarks/fleet_acceptance.py              # 3 GiB per route, 256 MiB cap
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
from pathlib import Path

MiB = 1024 * 1024
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


def route_run(env: dict[str, str], gen: Path, total: int) -> tuple[dict[str, object], str]:
    proc = cli(env, "run", "--json", "--", sys.executable, str(gen), str(total), *SECRETS)
    result = json.loads(proc.stdout)
    return result, str(result["artifact"]["source_id"]) if result.get("artifact") else ""


def route_spill(env: dict[str, str], gen: Path, total: int) -> tuple[dict[str, object], str]:
    producer = subprocess.Popen([sys.executable, str(gen), str(total), *SECRETS], stdout=subprocess.PIPE)
    assert producer.stdout is not None
    proc = cli(env, "spill", "--json", "-", stdin=producer.stdout.fileno())
    producer.stdout.close()
    producer.wait()
    ref = json.loads(proc.stdout) if proc.returncode == 0 else {}
    return ref, str(ref.get("source_id", ""))


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
    if any(s in text for s in SECRETS):
        return {"size_bytes": None, "leak": True}, ""
    return {"size_bytes": after - before}, found.group(0) if found else ""


#: An MCP server over stdio with one tool, ``gen``, whose result's text is GENERATOR's stream,
#: JSON-escaped and written as it is generated.
UPSTREAM = r"""
import json, sys
total, secrets = int(sys.argv[1]), sys.argv[2:]
line = "2026-12-01T21:00:00Z INFO worker=7 step=compile status=ok elapsed_ms=12 note=steady\n"
block = line * (1024 * 1024 // len(line))
out = sys.stdout.buffer
def esc(text):
    return json.dumps(text)[1:-1].encode()
def send(msg):
    out.write(json.dumps(msg).encode() + b"\n"); out.flush()
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": "2025-06-18",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "gen", "version": "1"}}})
    elif msg.get("method") == "tools/list":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": [
              {"name": "gen", "inputSchema": {"type": "object"}}]}})
    elif msg.get("method") == "tools/call":
        out.write(b'{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "'
                  % json.dumps(msg["id"]).encode())
        leak = lambda tag: out.write(b"".join(esc(f"{tag} export AWS_ACCESS_KEY_ID={s}\n") for s in secrets))
        written = 0
        leak("start")
        while written < total:
            n = min(len(block), total - written)
            out.write(esc(block[:n]))
            written += n
            if written >= total // 2 and written - n < total // 2:
                leak("middle")
        leak("end")
        out.write(b'"}]}}\n'); out.flush()
"""


def route_proxy(env: dict[str, str], gen: Path, total: int) -> tuple[dict[str, object], str]:
    """One tools/call through ``s3spill mcp-proxy`` whose result is the stream (see UPSTREAM)."""
    upstream = gen.with_name("upstream.py")
    upstream.write_text(UPSTREAM)
    before = json.loads(cli(env, "quota", "show", "--json").stdout)["bytes"]
    proc = subprocess.Popen([sys.executable, "-m", "s3spill", "mcp-proxy", "--", sys.executable,
                             str(upstream), str(total), *SECRETS], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    client = {"name": "fleet", "version": "1"}
    for msg in ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "gen"}}):
        proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()
    text = ""
    for line in proc.stdout:
        answer = json.loads(line)
        if answer.get("id") == 2:
            text = "".join(block.get("text", "") for block in answer.get("result", {}).get("content", []))
            break
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proxy_rss = usage.ru_maxrss / 1024
    found = re.search(r"artifact:[0-9a-f]{32}:[A-Za-z0-9T._-]+:[0-9a-f]{16}", text)
    after = json.loads(cli(env, "quota", "show", "--json").stdout)["bytes"]
    if any(s in text for s in SECRETS):
        return {"size_bytes": None, "leak": True}, ""
    return {"size_bytes": after - before, "proxy_rss_mib": proxy_rss, "chars": len(text),
            "exit": os.waitstatus_to_exitcode(status)}, found.group(0) if found else ""


def proxy_checks(doc: dict[str, object], bound: float) -> list[str]:
    """The proxy's own peak RSS within ``bound`` and a clean exit (printed either way)."""
    rss = doc.get("proxy_rss_mib")
    shown = round(rss) if isinstance(rss, float) else rss
    print(f"  mcp-proxy: the proxy's own peak RSS {shown} MiB, exit {doc.get('exit')}, "
          f"the client got {doc.get('chars')} characters")
    if not isinstance(rss, float) or rss > bound or doc.get("exit") != 0:
        return [f"mcp-proxy: peak RSS {rss} MiB (bound {bound}), exit {doc.get('exit')}"]
    return []


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=3.0, help="GiB per route (default 3)")
    ap.add_argument("--cap-mib", type=int, default=256)
    ap.add_argument("--quota-mib", type=int, default=1024)
    ap.add_argument("--max-rss-mib", type=int, default=600, help="peak RSS bound per route")
    ap.add_argument("--hook-gib", type=float, default=1.0,
                    help="GiB through the Claude Code hook's persisted-file route (default 1)")
    ap.add_argument("--proxy-gib", type=float, default=1.0,
                    help="GiB as one tool result through s3spill mcp-proxy (default 1)")
    args = ap.parse_args()
    total = int(args.gib * 1024 * MiB)
    cap = args.cap_mib * MiB
    tmp = Path(tempfile.mkdtemp(prefix="s3spill-fleet-"))
    policy = tmp / "fleet.toml"
    policy.write_text(f'[spill]\nmax_stored_bytes = "{args.cap_mib}MiB"\nsecrets = "at_rest"\n\n'
                      f'[quota]\nsession_bytes = "{args.quota_mib}MiB"\n')
    gen = tmp / "gen.py"
    gen.write_text(GENERATOR)
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3SPILL_")}
    env.update(S3SPILL_CONFIG=str(policy), S3SPILL_STORE=(tmp / "store").as_uri(),
               S3SPILL_SESSION="fleet-acceptance", XDG_CONFIG_HOME=str(tmp / "cfg"))
    problems: list[str] = []
    print(f"policy {policy}: cap {cap:,} B, quota {args.quota_mib} MiB, secrets at_rest; "
          f"{total:,} B per route")
    stored_total = 0
    routes = [("run", route_run, total), ("spill -", route_spill, total),
              ("hook", route_hook, int(args.hook_gib * 1024 * MiB)),
              ("mcp-proxy", route_proxy, int(args.proxy_gib * 1024 * MiB))]
    for name, route, size in routes:
        t0, rss0 = time.monotonic(), peak_mib()
        doc, sid = route(env, gen, size)
        seconds, rss = time.monotonic() - t0, peak_mib()
        if name == "run":
            stored, seen = doc.get("stored_bytes"), doc.get("total_bytes")
            if seen != total + sum(len(f"{t} export AWS_ACCESS_KEY_ID={s}\n") for t in
                                   ("start", "middle", "end") for s in SECRETS):
                problems.append(f"run: total_bytes {seen} is not the stream's exact size")
        else:
            stored = doc.get("size_bytes")
        if not sid or not isinstance(stored, int) or stored > cap:
            problems.append(f"{name}: stored {stored} (cap {cap:,}) id {sid!r}")
        else:
            stored_total += stored
        if rss > args.max_rss_mib:
            problems.append(f"{name}: peak RSS {rss:.0f} MiB over {args.max_rss_mib}")
        if name == "mcp-proxy":
            problems += proxy_checks(doc, args.max_rss_mib)
        if sid:
            problems += check_reads(env, sid)
        print(f"  {name:<8} stored {stored if isinstance(stored, int) else 0:>12,} B  "
              f"{seconds:6.1f} s  peak RSS (any child so far) {max(rss, rss0):6.0f} MiB")
    quota = json.loads(cli(env, "quota", "show", "--json").stdout)
    print(f"  quota    {quota['bytes']:,} of {quota['limit_bytes']:,} B")
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
