"""``s3spill read`` and ``grep`` of two checkouts, interleaved with the plain-Python baselines.

    python benchmarks/read_ab.py OTHER_CHECKOUT [--rounds 31] [--first-calls 21]

The same artifact and commands as the read section of ``benchmarks/costs.py``; each round
runs every command once, in turn: this checkout's CLI, the other checkout's (its
``s3spill`` package on ``PYTHONPATH``), and the plain reads. Medians of the CPU time
(user+sys from ``wait4``) and of the wall time, with the load average before and after.

``--first-calls N`` (0: none) then runs costs.py's first page call in a fresh process
(``FIRST_CALL``: imports done, then one ``read_page`` of the same page, timed inside the
process: wall and the process's CPU time), N rounds of five sides in turn: this checkout
masked (``view=mask_view``) and with no view, the other checkout's two, and the plain
``read_page``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402

from benchmarks.costs import (  # noqa: E402
    FIRST_CALL,
    GREP_PATTERN,
    PAGE_LINES,
    PAGE_MAX_CHARS,
    PY,
    S3SPILL,
    SESSION,
    Cmd,
    Timing,
    _once,
    bench_env,
    read_args,
)

_TIMED = "t = time.perf_counter(); call(); print(json.dumps(time.perf_counter() - t))"
assert _TIMED in FIRST_CALL
#: costs.py's first call, timed in wall and CPU time.
FIRST_CALL_CPU = FIRST_CALL.replace(_TIMED, "t, c = time.perf_counter(), time.process_time(); call(); "
                                    "print(json.dumps([time.perf_counter() - t, time.process_time() - c]))")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path)
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--first-calls", type=int, default=0, help="rounds of first page calls (0: none)")
    args = parser.parse_args()
    from benchmarks.read_bench import log_lines
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.store.local import LocalStore

    with tempfile.TemporaryDirectory(prefix="s3spill-read-ab-") as tmp:
        store = Path(tmp, "store")
        env = bench_env(store)
        other_env = {**env, "PYTHONPATH": str(args.other.resolve())}
        data = b"".join(log_lines(1 << 20, match_every=50))
        plain_file = Path(tmp, "plain.log")
        plain_file.write_bytes(data)
        ref = ArtifactStore(LocalStore(store), session_id=SESSION).write(SESSION, [data], "bench")
        mid = str(ref.line_count // 2)
        plain = str(ROOT / "benchmarks" / "plain.py")
        read = read_args(ref.source_id, mid)
        grep = ["grep", ref.source_id, GREP_PATTERN, "--max-matches", "20"]
        cmds = {
            "plain read": (Cmd([PY, plain, "read", str(plain_file), mid, "2000", ref.sha256]), env),
            "read (this)": (Cmd([*S3SPILL, *read]), env),
            "read (other)": (Cmd([*S3SPILL, *read]), other_env),
            "read --show-secrets (this)": (Cmd([*S3SPILL, *read, "--show-secrets"]), env),
            "read --show-secrets (other)": (Cmd([*S3SPILL, *read, "--show-secrets"]), other_env),
            "plain grep": (Cmd([PY, plain, "grep", str(plain_file), GREP_PATTERN, "20"]), env),
            "grep (this)": (Cmd([*S3SPILL, *grep]), env),
            "grep (other)": (Cmd([*S3SPILL, *grep]), other_env),
        }
        before = os.getloadavg()
        got = {name: Timing() for name in cmds}
        for _ in range(args.rounds + 1 if args.rounds else 0):
            for name, (cmd, cmd_env) in cmds.items():
                _once(cmd, cmd_env, got[name])
        after = os.getloadavg()
        if args.rounds:
            for t in got.values():  # the first round warms up
                del t.wall[0], t.cpu[0]
            print(f"{args.rounds} rounds, interleaved; load average {before[0]:.2f} -> {after[0]:.2f}")
            print("| command | CPU median ms | wall median ms | CPU / plain |\n|---|---|---|---|")
            for name, t in got.items():
                base = got["plain grep" if "grep" in name else "plain read"]
                print(f"| {name} | {t.cpu_ms:.2f} | {t.wall_ms:.2f} | {t.cpu_ms / base.cpu_ms:.2f}x |")
        if args.first_calls:
            _first_calls(args.other.resolve(), store, ref.source_id, int(mid), plain_file, ref.sha256, env,
                         args.first_calls)


def _first_calls(other: Path, store: Path, source_id: str, mid: int, plain: Path, sha: str,
                 env: dict[str, str], rounds: int) -> None:
    """costs.py's first page calls of both checkouts and the plain one, interleaved."""
    sides = {"masked (this)": (ROOT, True, True), "no view (this)": (ROOT, True, False),
             "masked (other)": (other, True, True), "no view (other)": (other, True, False),
             "plain read_page": (ROOT, False, False)}
    got: dict[str, list[list[float]]] = {name: [] for name in sides}
    before = os.getloadavg()
    for _ in range(rounds):
        for name, (root, ours, masked) in sides.items():
            code = FIRST_CALL_CPU.format(root=str(root), ours=ours, masked=masked, store=str(store),
                                         session=SESSION, source_id=source_id, mid=mid, plain=str(plain),
                                         sha=sha, lines=PAGE_LINES, max_chars=PAGE_MAX_CHARS)
            out = subprocess.run([PY, "-c", code], env={**env, "PYTHONPATH": str(root)}, capture_output=True,
                                 text=True, check=True)
            got[name].append(json.loads(out.stdout))
    after = os.getloadavg()
    print(f"\nfirst page call, {rounds} rounds, interleaved; load average {before[0]:.2f} -> {after[0]:.2f}")
    print("| side | CPU median ms (range) | wall median ms | CPU / plain |\n|---|---|---|---|")
    base = statistics.median(c for _, c in got["plain read_page"])
    for name, values in got.items():
        cpu = [c * 1e3 for _, c in values]
        wall = statistics.median(w for w, _ in values) * 1e3
        print(f"| {name} | {statistics.median(cpu):.2f} ({min(cpu):.2f}-{max(cpu):.2f}) | {wall:.2f} | "
              f"{statistics.median(cpu) / (base * 1e3):.2f}x |")


if __name__ == "__main__":
    main()
