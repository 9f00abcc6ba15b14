"""Small reads, the way an agent waits on them: one page of a 1 MiB artifact (local store).

Measures CPU time (``time.process_time`` in process; user+sys from ``wait4`` for a child),
which a loaded machine inflates far less than wall-clock; both are printed, each as the
minimum (and median) of N runs, next to its floors measured in the same run:

* the call: ``read_page`` of 2,000 lines from the middle, cold (a fresh ``ArtifactStore``:
  HEAD, index GET and parse, one chunk GET, zstd decode, SHA-256 of the chunk, the page)
  and warm (index and chunk cached), against a plain ranged read of the same chunk;
* the process: ``s3spill read`` and ``s3spill grep`` as a whole, against ``python -c pass``
  and against a process that only imports pydantic and builds one model (the floor of any
  process that touches a pydantic model), with the package's bytecode compiled (as a
  wheel install has it) and without (``PYTHONDONTWRITEBYTECODE=1`` and no cache: every
  s3spill module compiled on each start, as in a fresh checkout).

    python benchmarks/small_read_bench.py [--runs 21]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.read_bench import log_lines  # noqa: E402
from s3spill import keys  # noqa: E402
from s3spill.artifacts.store import ArtifactStore  # noqa: E402
from s3spill.store.local import LocalStore  # noqa: E402

SESSION = "small-read"


def _figures(cpu: list[float], wall: list[float]) -> dict[str, float]:
    return {"cpu_ms_min": round(min(cpu) * 1e3, 2),
            "cpu_ms_median": round(statistics.median(cpu) * 1e3, 2),
            "wall_ms_min": round(min(wall) * 1e3, 2),
            "wall_ms_median": round(statistics.median(wall) * 1e3, 2)}


def _in_process(fn: Callable[[], object], runs: int) -> dict[str, float]:
    fn()
    cpu, wall = [], []
    for _ in range(runs):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return _figures(cpu, wall)


def _process(cmd: list[str], runs: int, env: dict[str, str]) -> dict[str, float]:
    cpu, wall = [], []
    for _ in range(runs):
        w = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall.append(time.perf_counter() - w)
        cpu.append(usage.ru_utime + usage.ru_stime)
        if os.waitstatus_to_exitcode(status) not in (0, 1):  # grep exits 1 on no match
            raise RuntimeError(f"{cmd} failed: {status}")
    return _figures(cpu, wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "store")
        ref = ArtifactStore(LocalStore(root), session_id=SESSION).write(SESSION, log_lines(1 << 20), "bench")
        mid = ref.line_count // 2

        def cold() -> object:
            return ArtifactStore(LocalStore(root), session_id=SESSION).read_page(
                ref.source_id, offset=mid, limit=2000).render()

        warm_store = ArtifactStore(LocalStore(root), session_id=SESSION)
        page = warm_store.read_page(ref.source_id, offset=mid, limit=2000)
        store = LocalStore(root)
        akey = keys.artifact_key(ref.session_hash, ref.name)
        chunk = store.get(akey + ".idx")  # warm the page cache for the floor too
        out["call_cold"] = _in_process(cold, args.runs)
        out["call_warm"] = _in_process(lambda: warm_store.read_page(
            ref.source_id, offset=mid, limit=2000).render(), args.runs)
        out["call_floor_ranged_get"] = _in_process(lambda: store.get(akey, (0, 1 << 20)), args.runs)
        out["page"] = {"lines": len(page.lines),
                       "chars": len(page.render()), "index_bytes": len(chunk)}

        python = sys.executable
        read = [python, "-m", "s3spill", "read", "--store", str(root), "--session", SESSION, ref.source_id,
                "--offset", str(mid), "--limit", "2000"]
        grep = [python, "-m", "s3spill", "grep", "--store", str(root), "--session", SESSION, ref.source_id,
                "status=200", "--max-matches", "20"]
        floors = {"python_pass": [python, "-c", "pass"],
                  "python_pydantic_one_model": [python, "-c", "from pydantic import BaseModel\n"
                                                "class M(BaseModel):\n    x: int\nM(x=1)"]}
        cache = Path(tmp, "pyc")
        compiled = {**os.environ, "PYTHONPYCACHEPREFIX": str(cache)}
        compiled.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run(read, env=compiled, check=True, capture_output=True)  # fills the cache
        uncached = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        uncached.pop("PYTHONPYCACHEPREFIX", None)
        for name, cmd in floors.items():
            out[name] = _process(cmd, args.runs, compiled)
        for name, cmd in (("s3spill_read", read), ("s3spill_grep", grep)):
            out[f"{name}_bytecode_cached"] = _process(cmd, args.runs, compiled)
            out[f"{name}_compiling_s3spill"] = _process(cmd, args.runs, uncached)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
