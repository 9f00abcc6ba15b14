"""Cost of keeping secrets out of the context, against the spill itself, in one run.

Spills the same generated CI log (tests/context/secrets/clean_build_logs.py: pip hashes, npm integrity,
go.sum, docker digests, env dumps — no secret in it) through a Spiller on a local store
with ``secrets="off"``, ``"preview"`` (the default: only what the model sees is masked)
and ``"at_rest"`` (the whole stream is scanned and masked before it is stored), and
reports each spill's wall time and its ratio to ``off``. Also the detector alone
(StreamRedactor, 1 MiB chunks) against hashlib.sha256 over the same chunks, and the
false positives on the log (the number of masked spans; 0 is the goal).

    python benchmarks/secrets_bench.py --mib 200 [--dir /dev/shm]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from s3spill.context.policy import SpillPolicy  # noqa: E402
from s3spill.context.secrets import StreamRedactor, default_detector  # noqa: E402
from s3spill.spill.spiller import Spiller  # noqa: E402
from s3spill.store.local import LocalStore  # noqa: E402
from tests.context.secrets.clean_build_logs import build_log  # noqa: E402

MiB = 1024 * 1024


def _spill(root: str, chunks: list[bytes], mode: str) -> float:
    with tempfile.TemporaryDirectory(dir=root) as d:
        store = LocalStore(d)
        policy = SpillPolicy(secrets=mode, store_deadline=120.0)  # type: ignore[arg-type]
        with Spiller(store, "bench", policy, journal=None) as spiller:
            started = time.perf_counter()
            result = spiller.externalize(iter(chunks), "bash")
            took = time.perf_counter() - started
        assert result.spilled, result.degraded_reason
        return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=200)
    parser.add_argument("--dir", default="/dev/shm" if Path("/dev/shm").is_dir() else None)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    log = build_log(args.mib * MiB)
    chunks = [log[i:i + MiB] for i in range(0, len(log), MiB)]
    default_detector()  # built once per process; not part of any spill

    started = time.perf_counter()
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    sha = time.perf_counter() - started
    redactor = StreamRedactor()
    started = time.perf_counter()
    out = sum(len(redactor.push(c)) for c in chunks) + len(redactor.finish())
    scan = time.perf_counter() - started
    assert out == len(log)
    lines = log.count(b"\n")
    print(f"log: {len(log) / MiB:.0f} MiB, {lines:,} lines; false positives: "
          f"{sum(redactor.counts.values())} {dict(redactor.counts)}")
    print(f"detector alone: {len(log) / scan / 1e6:.0f} MB/s ({scan:.2f} s); sha256: "
          f"{len(log) / sha / 1e6:.0f} MB/s; ratio {scan / sha:.1f}x")

    times: dict[str, list[float]] = {"off": [], "preview": [], "at_rest": []}
    modes = list(times)
    for n in range(args.rounds):  # interleaved and rotated, so load and order hit every mode alike
        for mode in modes[n % 3:] + modes[: n % 3]:
            times[mode].append(_spill(args.dir, chunks, mode))
    base = statistics.median(times["off"])
    for mode, values in times.items():
        med = statistics.median(values)
        print(f"spill secrets={mode:8s} median {med:.2f} s (min {min(values):.2f}, max {max(values):.2f})"
              f"  {len(log) / med / 1e6:.0f} MB/s  {(med / base - 1) * 100:+.1f}% vs off")


if __name__ == "__main__":
    main()
