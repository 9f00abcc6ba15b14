"""The 200 MB hook payload against another commit's hook, and the spill of the same bytes.

    python benchmarks/hook_ab.py [--ref 4832dba] [--rounds 7] [--mib 200]

Why: a change to the hook's reading of a huge payload is judged against the hook it
replaces, on the same machine in the same minutes (a shared VM's load moves every figure):
the three commands run interleaved round by round (:func:`benchmarks.costs.interleaved`),
``ref``'s package extracted with ``git archive`` and put first on ``PYTHONPATH`` for its
side. Both hooks start as the console script does (``s3spill.cli.main``), from a ``-c`` line that
puts their package first; the spill is the console script. Prints CPU and wall medians,
peak RSS, each command's CPU as a ratio to the spill's, and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.costs import S3SPILL, Cmd, _big_payload, bench_env, interleaved  # noqa: E402


def _hook(package_root: Path) -> list[str]:
    """``s3spill hook claude-code`` as the console script runs it, from ``package_root``'s package."""
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(package_root)!r}); "
            "sys.argv[0] = 's3spill'; from s3spill.cli import main; sys.exit(main())",
            "hook", "claude-code"]


def _extract(ref: str, into: Path) -> None:
    """``ref``'s s3spill package under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "s3spill"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", default="4832dba", help="the commit whose hook is the other side")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--mib", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "ref").mkdir()
        _extract(args.ref, tmp / "ref")
        payload, text = _big_payload(tmp, args.mib)
        env = bench_env(tmp / "store")
        before = os.getloadavg()
        cmds = {"hook": Cmd(_hook(ROOT), payload), f"hook@{args.ref}": Cmd(_hook(tmp / "ref"), payload),
                "spill": Cmd([*S3SPILL, "spill", str(text)])}
        got = interleaved(cmds, args.rounds, env)
        after = os.getloadavg()
        size = payload.stat().st_size
    spill = got["spill"].cpu_ms
    print(f"{size / 1e6:.0f} MB payload, {args.rounds} rounds, load {before[0]:.1f} -> "
          f"{after[0]:.1f}")
    print("| command | CPU median | wall median | CPU / spill's | peak RSS |")
    print("|---|---|---|---|---|")
    for name, t in got.items():
        print(f"| {name} | {t.cpu_ms:.0f} ms | {t.wall_ms:.0f} ms | {t.cpu_ms / spill:.2f}x "
              f"| {t.rss_mib:.1f} MiB |")


if __name__ == "__main__":
    main()
