"""Many writers: W sessions spilling into one store at once, W from 1 to 64.

Each writer is one session with its own ``Spiller`` on a thread of this process (as an
MCP server or an agent framework hosts many sessions), spilling ``--outputs`` tool
results of ``--size`` bytes of log text each (every one over the spill threshold, so each
is an artifact plus its journal touch). Afterwards every artifact is read back through
its reference and checked (SHA-256, line count) from a fresh store handle. Printed per
W: spills per second, MiB/s of tool output, CPU seconds per spill (``process_time``,
less load-dependent than wall-clock), errors (spills that degraded instead of storing)
and lost artifacts (stored but not readable back) — the goal is zero of both.

    python benchmarks/many_writers_bench.py                       # local store, W = 1..64
    python benchmarks/many_writers_bench.py --backend moto --writers 1,8,64 --outputs 5
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from s3spill.artifacts.store import ArtifactStore  # noqa: E402
from s3spill.spill.spiller import Spiller  # noqa: E402
from s3spill.store.base import ObjectStore  # noqa: E402
from s3spill.store.local import LocalStore  # noqa: E402


def _output(writer: int, n: int, size: int) -> bytes:
    line = f"writer {writer:03d} output {n:04d} request handled status=200 path=/api/v1/items\n".encode()
    return (line * (size // len(line) + 1))[:size]


@contextmanager
def _store(backend: str) -> Iterator[ObjectStore]:
    if backend == "local":
        with tempfile.TemporaryDirectory() as tmp:
            yield LocalStore(Path(tmp, "store"))
        return
    from s3spill.testing import EmbeddedS3

    with EmbeddedS3() as s3:
        s3.create_bucket("many-writers")
        yield s3.store("many-writers", "bench")


def run(backend: str, writers: int, outputs: int, size: int) -> dict[str, Any]:
    with _store(backend) as store:
        # The store's one-time costs (the conditional-write check) are not a writer's.
        Spiller(store, "warm-up").externalize(_output(0, 0, size).decode(), "bash")
        refs: list[tuple[str, str, bool]] = []
        errors: list[str] = []
        lock = threading.Lock()
        start = threading.Barrier(writers + 1)

        def writer(w: int) -> None:
            spiller = Spiller(store, f"writer-{w}")
            start.wait()
            for n in range(outputs):
                data = _output(w, n, size)
                result = spiller.externalize(data.decode(), "bash", call_id=f"{w}-{n}")
                with lock:
                    if result.spilled and result.artifact is not None:
                        refs.append((f"writer-{w}", result.artifact.source_id,
                                     hashlib.sha256(data).hexdigest() == result.artifact.sha256))
                    else:
                        errors.append(result.degraded_reason or result.mode)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        start.wait()
        wall, cpu = time.perf_counter(), time.process_time()
        for t in threads:
            t.join()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        lost = 0
        for session, source_id, digest_ok in refs:
            try:
                page = ArtifactStore(store, session_id=session).read_page(source_id, limit=1)
                lost += 0 if digest_ok and page.total_lines > 0 else 1
            except Exception:  # noqa: BLE001 - a lost artifact is what is being counted
                lost += 1
        spills = len(refs) + len(errors)
        return {"backend": backend, "writers": writers, "spills": spills,
                "spills_per_second": round(spills / wall, 1),
                "mib_per_second": round(spills * size / wall / 2**20, 2),
                "cpu_ms_per_spill": round(cpu / max(1, spills) * 1e3, 2),
                "errors": len(errors), "lost": lost, "seconds": round(wall, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("local", "moto"), default="local")
    parser.add_argument("--writers", default="1,4,16,64")
    parser.add_argument("--outputs", type=int, default=20, help="spills per writer")
    parser.add_argument("--size", type=int, default=256 * 1024, help="bytes per tool output")
    args = parser.parse_args()
    rows = [run(args.backend, int(w), args.outputs, args.size) for w in args.writers.split(",")]
    for row in rows:
        print(json.dumps(row), flush=True)
    base = rows[0]["spills_per_second"]
    print(json.dumps({"throughput_vs_first": {r["writers"]: round(r["spills_per_second"] / base, 2)
                                              for r in rows}}))


if __name__ == "__main__":
    main()
