"""Where an ``at_rest`` spill's CPU goes, thread by thread, against ``off`` (issue 31).

One spill of the bench's generated CI log per mode and round, ``off`` and ``at_rest``
alternated; medians of the rounds of the CPU seconds of: the calling thread (reading,
handing chunks to the mask worker, the preview), the upload thread (the index builder:
the full SHA-256, the re-cut into 1 MiB chunks, the writes), the frame pool (each chunk's
SHA-256 and zstd), the thread reading the worker's answers, and the mask worker process
(from /proc). Per-thread CPU is robust where wall time is not (the machine is shared);
the load average is printed. ``TREE`` (a checkout) measures another version of the code.

    TREE=/work/main python benchmarks/secrets_threads.py [--mib 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("TREE") or Path(__file__).resolve().parents[1])
sys.path[:0] = [str(ROOT)]

import s3spill.context.secrets.detector as detector_module  # noqa: E402
import s3spill.spill.maskworker as maskworker  # noqa: E402
from s3spill.artifacts import frames  # noqa: E402
from s3spill.context.policy import SpillPolicy  # noqa: E402
from s3spill.context.secrets.detector import SecretDetector  # noqa: E402
from s3spill.spill import upload  # noqa: E402
from s3spill.spill.spiller import Spiller  # noqa: E402
from s3spill.store.local import LocalStore  # noqa: E402
from tests.context.secrets.clean_build_logs import build_log  # noqa: E402

MiB = 1 << 20
TICK = os.sysconf("SC_CLK_TCK")
SPENT: dict[str, float] = {}


def _timed(key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[key] = SPENT.get(key, 0.0) + time.thread_time() - started
    return wrapped


frames.FrameEncoder._work = _timed("frame pool", frames.FrameEncoder._work)  # type: ignore[method-assign]
upload.BoundedUpload._run = _timed("upload thread", upload.BoundedUpload._run)  # type: ignore[method-assign]


def _stat_cpu(path: str) -> float:
    try:
        fields = Path(path).read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def _worker_cpu() -> float:
    return sum(_stat_cpu(f"/proc/{w.proc.pid}/stat") for w in maskworker._POOL.workers)


def _answers_cpu() -> float:
    return sum(_stat_cpu(f"/proc/self/task/{t.native_id}/stat") for t in threading.enumerate()
               if t.name == "s3spill-maskworker" and t.native_id)


def _spill(chunks: list[bytes], mode: str, root: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory(dir=root) as d:
        policy = SpillPolicy(secrets=mode, store_deadline=120.0)  # type: ignore[arg-type]
        with Spiller(LocalStore(d), "bench", policy, journal=None) as spiller:
            SPENT.clear()
            worker, answers = _worker_cpu(), _answers_cpu()
            wall, cpu, own = time.perf_counter(), time.process_time(), time.thread_time()
            result = spiller.externalize(iter(chunks), "bash")
            out = {"wall": time.perf_counter() - wall, "process CPU": time.process_time() - cpu,
                   "calling thread": time.thread_time() - own, **SPENT,
                   "answers thread": _answers_cpu() - answers, "worker": _worker_cpu() - worker}
    assert result.spilled, result.degraded_reason
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default="/dev/shm" if Path("/dev/shm").is_dir() else None)
    args = parser.parse_args()
    log = build_log(args.mib * MiB)
    chunks = [log[i:i + MiB] for i in range(0, len(log), MiB)]
    detector_module._DETECTOR = SecretDetector("hyperscan")
    redactor, deadline = maskworker.OffloadRedactor(), time.monotonic() + 30
    while not redactor.offloaded and time.monotonic() < deadline:  # a ready worker, as a 2nd spill finds it
        redactor.push(b"x" * maskworker.BATCH_BYTES + b"\n")
        time.sleep(0.05)
    redactor.finish()
    print(f"{ROOT}; load average at start: {os.getloadavg()}")
    runs: dict[str, list[dict[str, float]]] = {"off": [], "at_rest": []}
    for n in range(args.rounds):
        for mode in ("off", "at_rest") if n % 2 == 0 else ("at_rest", "off"):
            runs[mode].append(_spill(chunks, mode, args.dir))
    for mode, rows in runs.items():
        keys = [k for k in rows[0] if any(r.get(k, 0.0) >= 0.005 for r in rows)]
        medians = (f"{k} {statistics.median(r.get(k, 0.0) for r in rows):.2f}" for k in keys)
        print(f"{mode:8s} " + ", ".join(medians))
    print(f"load average at end: {os.getloadavg()}")
    maskworker._stop_all()


if __name__ == "__main__":
    main()
