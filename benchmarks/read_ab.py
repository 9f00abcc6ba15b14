"""``s3spill read`` and ``grep`` of two checkouts, interleaved with the plain-Python baselines.

    python benchmarks/read_ab.py OTHER_CHECKOUT [--rounds 31]

The same artifact and commands as the read section of ``benchmarks/costs.py``; each round
runs every command once, in turn: this checkout's CLI, the other checkout's (its
``s3spill`` package on ``PYTHONPATH``), and the plain reads. Medians of the CPU time
(user+sys from ``wait4``) and of the wall time, with the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.costs import GREP_PATTERN, PY, S3SPILL, SESSION, Cmd, Timing, _once, bench_env  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path)
    parser.add_argument("--rounds", type=int, default=31)
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
        read = ["read", ref.source_id, "--offset", mid, "--limit", "2000"]
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
        for _ in range(args.rounds + 1):
            for name, (cmd, cmd_env) in cmds.items():
                _once(cmd, cmd_env, got[name])
        after = os.getloadavg()
    for t in got.values():  # the first round warms up
        del t.wall[0], t.cpu[0]
    print(f"{args.rounds} rounds, interleaved; load average {before[0]:.2f} -> {after[0]:.2f}")
    print("| command | CPU median ms | wall median ms | CPU / plain |\n|---|---|---|---|")
    for name, t in got.items():
        base = got["plain grep" if "grep" in name else "plain read"]
        print(f"| {name} | {t.cpu_ms:.2f} | {t.wall_ms:.2f} | {t.cpu_ms / base.cpu_ms:.2f}x |")


if __name__ == "__main__":
    main()
