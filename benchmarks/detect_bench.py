"""Cost of output-kind detection in a spill, against the same spill without it.

A spill detects once, on the first 64 KiB, so its cost should not grow with the output;
the goal (issue 24) is under 2% of the spill's time on a large text stream. Two figures,
both from this one run: the time of ``detect()`` on the spill's buffered prefix divided by
the time of the whole spill, and the spill's time with detection against the same spill
with detection replaced by "text" (alternating ABBA, medians).

    python benchmarks/detect_bench.py --mib 1024 --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import s3spill.spill.job as job  # noqa: E402
from s3spill.spill.spiller import Spiller  # noqa: E402
from s3spill.store.local import LocalStore  # noqa: E402
from s3spill.typed.detect import TEXT, detect  # noqa: E402

CHUNK = 1 << 20
LINE = b"2026-01-01T00:00:00Z INFO GET /api/v1/items/12345 status=200 bytes=5123 took=12ms\n"


def spill_seconds(root: Path, mib: int) -> float:
    block = (LINE * (CHUNK // len(LINE) + 1))[:CHUNK]
    store = LocalStore(root)
    with Spiller(store, "bench-detect", journal=None) as spiller:
        start = time.perf_counter()
        result = spiller.externalize(iter([block] * mib), "bash")
        took = time.perf_counter() - start
    assert result.spilled, result.degraded_reason
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    block = (LINE * (CHUNK // len(LINE) + 1))[:CHUNK]
    prefix = block[: 120_000]  # what a shell tool's spill has buffered when it decides
    reps = 200
    start = time.perf_counter()
    for _ in range(reps):
        found = detect(prefix)
    detect_s = (time.perf_counter() - start) / reps
    assert found.kind == "text"
    with_detect: list[float] = []
    without: list[float] = []
    real = job.detect
    with tempfile.TemporaryDirectory(dir=str(ROOT)) as tmp:
        for run in range(args.runs):
            # ABBA: alternate which goes first, so warm-up and disk state favour neither.
            for first in ((True, False) if run % 2 == 0 else (False, True)):
                job.detect = real if first else (lambda *_a, **_k: TEXT)
                (with_detect if first else without).append(
                    spill_seconds(Path(tmp) / f"{run}{first}", args.mib))
    job.detect = real
    spill_s = statistics.median(with_detect)
    base_s = statistics.median(without)
    print(f"text stream: {args.mib} MiB, runs={args.runs}, local store under {ROOT}")
    print(f"detect() on the 120 kB prefix: {detect_s * 1e3:.3f} ms "
          f"= {100 * detect_s / spill_s:.4f}% of the spill ({spill_s:.2f} s)")
    print(f"spill with detection {spill_s:.2f} s vs without {base_s:.2f} s: "
          f"ratio {spill_s / base_s:.3f} (run-to-run noise included)")


if __name__ == "__main__":
    main()
