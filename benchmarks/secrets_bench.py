"""Cost of keeping secrets out of the context, against the spill itself, in one run.

Spills the same generated CI log (tests/context/secrets/clean_build_logs.py: pip hashes, npm
integrity, go.sum, docker digests, env dumps — no secret in it) through a Spiller on a local
store with ``secrets="off"``, ``"preview"`` (the default: only what the model sees is masked)
and ``"at_rest"`` (the whole stream is scanned and masked before it is stored), and reports
each spill's wall time and CPU time (all its threads) and their ratios to ``off``, and
the CPU of the calling thread (where ``at_rest`` masks) against the rest (the writer's
compression and hashing): the busier of the two is the spill's critical path on two free
cores, a lower bound of its wall time on an idle machine (waits for the GIL not counted);
``at_rest`` masks in a worker process (s3spill/spill/maskworker.py: its CPU is read from
/proc and counted in the CPU column and the critical path, the busiest of the three),
``at_rest/inproc`` in the calling thread as before it (Hyperscan), ``at_rest/re2`` in the
calling thread with the RE2 trigger pass (what runs without the ``fast-secrets`` extra).
The worker is started before the timed rounds (a process starts one once); a spill that
starts a fresh one is timed at the end (``at_rest, cold worker``). Also the detector alone
(StreamRedactor, 1 MiB chunks; wall and CPU seconds) per engine against hashlib.sha256
over the same chunks, the false positives on the log (masked spans; 0 is the goal), and
the detections on a copy of the log with fake secrets of every kind planted (both
engines must mask the same bytes).
The load average is printed: the machine is shared.

    python benchmarks/secrets_bench.py --mib 200 [--dir /dev/shm] [--rounds 5]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import s3spill.context.secrets.detector as detector_module  # noqa: E402
import s3spill.spill.maskworker as maskworker  # noqa: E402
from s3spill.context.policy import SpillPolicy  # noqa: E402
from s3spill.context.secrets import StreamRedactor  # noqa: E402
from s3spill.context.secrets.detector import SecretDetector  # noqa: E402
from s3spill.spill.spiller import Spiller  # noqa: E402
from s3spill.store.local import LocalStore  # noqa: E402
from tests.context.secrets.clean_build_logs import build_log  # noqa: E402

sys.path[:0] = [str(ROOT / "benchmarks")]
from secrets_corpus import KINDS, fake  # noqa: E402

MiB = 1024 * 1024


_WAITED = [0.0]
_answer = maskworker._Worker.answer


def _timed_answer(self: maskworker._Worker, epoch: int, timeout: float) -> bytes:
    """The worker's answer, the time the spill's thread waited for it added up."""
    started = time.perf_counter()
    try:
        return _answer(self, epoch, timeout)
    finally:
        _WAITED[0] += time.perf_counter() - started


maskworker._Worker.answer = _timed_answer  # type: ignore[method-assign]


def _worker_cpu() -> float:
    """CPU seconds the mask workers used so far (utime + stime from /proc; 0 elsewhere)."""
    total = 0.0
    for worker in maskworker._POOL.workers:
        try:
            fields = Path(f"/proc/{worker.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _spill(root: str, chunks: list[bytes], mode: str) -> tuple[float, float, float, float]:
    """Wall seconds, CPU seconds (every thread of this process, and the mask worker's), the
    calling thread's CPU seconds (where ``at_rest`` masks in process; the writer thread
    compresses and hashes) and the worker's of one spill."""
    with tempfile.TemporaryDirectory(dir=root) as d:
        store = LocalStore(d)
        policy = SpillPolicy(secrets=mode, store_deadline=120.0)  # type: ignore[arg-type]
        with Spiller(store, "bench", policy, journal=None) as spiller:
            worker = _worker_cpu()
            started, cpu, own = time.perf_counter(), time.process_time(), time.thread_time()
            result = spiller.externalize(iter(chunks), "bash")
            took, cpu = time.perf_counter() - started, time.process_time() - cpu
            own = time.thread_time() - own
            worker = _worker_cpu() - worker
        assert result.spilled, result.degraded_reason
        return took, cpu + worker, own, worker


def _warm_worker() -> None:
    """Start the mask worker and wait until it is ready (as a second spill of a process finds it)."""
    redactor = maskworker.OffloadRedactor()
    deadline = time.monotonic() + 30
    while not redactor.offloaded and time.monotonic() < deadline:
        redactor.push(b"x" * maskworker.BATCH_BYTES + b"\n")
        time.sleep(0.05)
    redactor.finish()


def _detect(chunks: list[bytes], detector: SecretDetector) -> tuple[float, float, StreamRedactor, str]:
    """Wall and CPU seconds, the redactor (its counts) and the SHA-256 of the masked stream."""
    redactor = StreamRedactor(detector)
    digest = hashlib.sha256()
    wall, cpu = time.perf_counter(), time.process_time()
    for chunk in chunks:
        digest.update(redactor.push(chunk))
    digest.update(redactor.finish())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, redactor, digest.hexdigest()


def _planted(log: bytes, n: int = 2000) -> tuple[list[bytes], int]:
    rng = random.Random(9)
    lines = log.split(b"\n")
    for _ in range(n):
        lines.insert(rng.randrange(len(lines)), fake(rng.choice(KINDS), rng)[0].encode())
    data = b"\n".join(lines)
    return [data[i:i + MiB] for i in range(0, len(data), MiB)], n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=200)
    parser.add_argument("--dir", default="/dev/shm" if Path("/dev/shm").is_dir() else None)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    log = build_log(args.mib * MiB)
    chunks = [log[i:i + MiB] for i in range(0, len(log), MiB)]
    # Built once, not timed (the default detector builds Hyperscan's pass in the background).
    engines = {"hyperscan": SecretDetector("hyperscan"), "re2": SecretDetector("re2")}
    print(f"engine: {engines['hyperscan'].engine.name}; load average at start: {os.getloadavg()}")

    started = time.perf_counter()
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    sha = time.perf_counter() - started
    lines = log.count(b"\n")
    print(f"log: {len(log) / MiB:.0f} MiB, {lines:,} lines; sha256: {len(log) / sha / 1e6:.0f} MB/s")
    planted, n = _planted(log[: 32 * MiB])
    found = {}
    for name, detector in engines.items():
        wall, cpu, redactor, _ = _detect(chunks, detector)
        print(f"detector alone ({name}): {len(log) / wall / 1e6:.0f} MB/s ({wall:.2f} s wall,"
              f" {cpu:.2f} s CPU); false positives: {sum(redactor.counts.values())} {dict(redactor.counts)}")
        _, _, redactor, masked = _detect(planted, detector)
        found[name] = (dict(sorted(redactor.counts.items())), masked[:16])
    print(f"detections on 32 MiB of it with {n} fake secrets planted: {found['hyperscan'][0]}, masked stream"
          f" sha256 {found['hyperscan'][1]}; RE2 masks the same bytes: {found['re2'] == found['hyperscan']}")

    times: dict[str, list[float]] = {"off": [], "preview": [], "at_rest": [], "at_rest/inproc": [],
                                     "at_rest/re2": []}
    cpus: dict[str, list[float]] = {mode: [] for mode in times}
    mains: dict[str, list[float]] = {mode: [] for mode in times}
    waits: list[float] = []
    paths: dict[str, list[float]] = {mode: [] for mode in times}
    modes = list(times)
    _warm_worker()
    offloaded = maskworker.OffloadRedactor()
    digest = hashlib.sha256()
    for chunk in planted:
        digest.update(offloaded.push(chunk))
    digest.update(offloaded.finish())
    worker_found = (dict(sorted(offloaded.counts.items())), digest.hexdigest()[:16])
    print(f"the mask worker on the same 32 MiB: {worker_found[0]}, masked stream sha256 {worker_found[1]};"
          f" the same as in process: {worker_found == found['hyperscan']}")
    for n_round in range(args.rounds):  # interleaved and rotated, so load and order hit every mode alike
        for mode in modes[n_round % len(modes):] + modes[: n_round % len(modes)]:
            detector_module._DETECTOR = engines["re2" if mode.endswith("/re2") else "hyperscan"]
            maskworker.ENABLED = "/" not in mode
            _WAITED[0] = 0.0
            wall, cpu, own, worker = _spill(args.dir, chunks, mode.split("/")[0])
            if mode == "at_rest":
                waits.append(_WAITED[0])
            times[mode].append(wall)
            cpus[mode].append(cpu)
            mains[mode].append(own)
            # The critical path on free cores: the busiest of the calling thread (reading,
            # masking in process, the preview), the rest of this process (the writer:
            # compression, hashing) and the mask worker.
            paths[mode].append(max(own, cpu - worker - own, worker))
    maskworker.ENABLED = True
    detector_module._DETECTOR = engines["hyperscan"]
    base, cpu_base = statistics.median(times["off"]), statistics.median(cpus["off"])
    path = {mode: statistics.median(values) for mode, values in paths.items()}
    for mode, values in times.items():
        med, cpu = statistics.median(values), statistics.median(cpus[mode])
        print(f"spill secrets={mode:15s} median {med:.2f} s (min {min(values):.2f}, max {max(values):.2f})"
              f"  {len(log) / med / 1e6:.0f} MB/s  {(med / base - 1) * 100:+.1f}% vs off;"
              f" CPU {cpu:.2f} s ({(cpu / cpu_base - 1) * 100:+.1f}%), of it the calling thread"
              f" {statistics.median(mains[mode]):.2f} s; critical path {path[mode]:.2f} s"
              f" ({(path[mode] / path['off'] - 1) * 100:+.1f}%)")
    print(f"at_rest: the spill's thread waited for the worker's answers {statistics.median(waits):.2f} s"
          f" (median; min {min(waits):.2f}, max {max(waits):.2f})")
    maskworker._stop_all()
    cold = [_spill(args.dir, chunks, "at_rest") for _ in range(1)]
    print(f"spill secrets=at_rest, cold worker (started by this spill): {cold[0][0]:.2f} s"
          f" ({(cold[0][0] / base - 1) * 100:+.1f}% vs off), CPU {cold[0][1]:.2f} s of it the worker's"
          f" {cold[0][3]:.2f} s")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
