"""Usage records and their readers at scale: recorder overhead, ``stats`` over 1M events, a UI page.

Three measurements, each against a baseline taken in the same run:

* ``overhead``: 10,000 tool calls (a mix of spilled and inline outputs) through a Spiller on a
  local store, once with a batching :class:`UsageRecorder` and once without, alternating in
  rounds; printed: the time the caller spent in the usage path (event built and queued)
  against the spill time, the wall-clock ratio of the two runs, and objects per event.
* ``stats``: 1,000,000 usage events (100 sessions x 10,000, realistic shown text) as Parquet
  day files in a local store, and the same as NDJSON parts; ``compute_stats`` timed on each.
* ``page``: ``s3spill ui`` in a child process over a store holding a 1 GiB artifact; the
  child's RSS after a warm-up request (its baseline), then a page from the middle of the
  artifact: its latency and the child's peak RSS over the baseline.

    python benchmarks/usage_bench.py overhead
    python benchmarks/usage_bench.py stats
    python benchmarks/usage_bench.py page --gib 1
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from s3spill import keys  # noqa: E402
from s3spill.spill.spiller import Spiller  # noqa: E402
from s3spill.store.local import LocalStore  # noqa: E402
from s3spill.usage import recorder as recorder_module  # noqa: E402
from s3spill.usage.recorder import UsageRecorder  # noqa: E402
from s3spill.usage.source import usage_objects  # noqa: E402
from s3spill.usage.stats import compute_stats  # noqa: E402

MiB = 1024 * 1024


def overhead(calls: int, rounds: int) -> dict[str, float]:
    rng = random.Random(7)
    outputs = [("x" * rng.randint(20, 400) + "\n") if i % 3 else
               "".join(f"line {n} of output {i}\n" for n in range(rng.randint(3000, 8000)))
               for i in range(200)]
    tools = ["build", "test", "ls", "grep"]
    spent = {"with": 0.0, "without": 0.0}
    usage_path = 0.0
    objects = events = 0
    for r in range(rounds):
        for mode in (("with", "without") if r % 2 == 0 else ("without", "with")):
            with tempfile.TemporaryDirectory() as tmp:
                store = LocalStore(Path(tmp) / "s")
                rec = UsageRecorder(store) if mode == "with" else None
                spiller = Spiller(store, f"bench-{r}", usage=rec, journal=None)
                record = spiller._record
                timed = 0.0

                def timed_record(result: object, _record: object = record) -> None:
                    nonlocal timed
                    t0 = time.perf_counter()
                    _record(result)  # type: ignore[operator]
                    timed += time.perf_counter() - t0

                spiller._record = timed_record  # type: ignore[method-assign]
                per = calls // rounds
                t0 = time.perf_counter()
                for i in range(per):
                    spiller.externalize(outputs[i % len(outputs)], tools[i % len(tools)])
                spent[mode] += time.perf_counter() - t0
                if rec is not None:
                    rec.close()
                    usage_path += timed
                    objects += rec.objects
                    events += rec.written
    return {"calls": calls, "spill_seconds_without": round(spent["without"], 3),
            "spill_seconds_with": round(spent["with"], 3),
            "caller_usage_seconds": round(usage_path, 4),
            "caller_usage_share_of_spill_time": round(usage_path / spent["with"], 5),
            "wall_ratio_with_over_without": round(spent["with"] / spent["without"], 4),
            "events": events, "objects": objects, "objects_per_100_events": round(100 * objects / events, 3)}


def _shown(rng: random.Random) -> str:
    return "".join(f"{rng.randint(0, 10**6)} compiling module_{rng.randint(0, 999)}.c ok\n"
                   for _ in range(rng.randint(10, 60)))


def stats_bench(sessions: int, per_session: int, formats: list[str]) -> dict[str, float]:
    import duckdb

    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in formats:
            store = LocalStore(Path(tmp) / fmt)
            rng = random.Random(3)
            t0 = time.perf_counter()
            for s in range(sessions):
                shash = keys.session_hash(f"bench-session-{s}")
                rows = []
                for i in range(per_session):
                    spill = i % 3 == 0
                    op = "spill" if spill else ("read" if i % 3 == 1 else "grep")
                    rows.append({"v": 1, "id": f"{s:04x}{i:012x}", "ts": "2026-11-30T12:00:00.000Z",
                                 "session": shash, "op": op,
                                 "tool": ("build", "test", "search")[(i // 3) % 3], "artifact": f"a{i // 3}",
                                 "spilled": spill, "raw_bytes": 200_000, "stored_bytes": 20_000,
                                 "threshold": 50_000, "shown": _shown(rng), "shown_chars": 2000,
                                 "shown_bytes": 2000})
                body = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
                if fmt == "ndjson":
                    for k in range(10):  # ten parts of a thousand events, as a busy process writes
                        part = b"".join(body.splitlines(keepends=True)[k * per_session // 10:
                                                                          (k + 1) * per_session // 10])
                        store.put_if_absent(keys.usage_part_key(shash, "2026-11-30"), part)
                    continue
                src = Path(tmp) / "rows.ndjson"
                dst = Path(tmp) / "day.parquet"
                src.write_bytes(body)
                duckdb.execute(f"COPY (SELECT * FROM read_json('{src}', format='newline_delimited')) TO "  # noqa: S608
                               f"'{dst}' (FORMAT parquet, COMPRESSION zstd)")
                data = dst.read_bytes()
                store.put_if_absent(keys.usage_day_key(shash, "2026-11-30", hashlib.sha256(data).hexdigest()),
                                    data)
            results[f"{fmt}_populate_seconds"] = round(time.perf_counter() - t0, 2)
            results[f"{fmt}_bytes"] = sum(o.size for o in usage_objects(store))
            t0 = time.perf_counter()
            stats = compute_stats(store)
            results[f"{fmt}_stats_seconds"] = round(time.perf_counter() - t0, 3)
            results[f"{fmt}_events"] = stats.events
    return results


def _rss(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of ``pid`` in bytes."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                  if ":" in line)
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024


def page(gib: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = LocalStore(Path(tmp) / "s")
        line = "0123456789 build output line with a realistic amount of text in it, ok\n"
        total = int(gib * 1024 * MiB)
        per_chunk = (4 * MiB) // len(line)

        def chunks() -> object:
            made = 0
            n = 0
            while made < total:
                block = "".join(f"{n + k:>12} {line}" for k in range(per_chunk)).encode()
                n += per_chunk
                made += len(block)
                yield block

        t0 = time.perf_counter()
        ref = store  # the artifact store writes it as a spill would
        from s3spill.artifacts.store import ArtifactStore

        art = ArtifactStore(ref, session_id="page-bench").write("page-bench", chunks(), "build")  # type: ignore[arg-type]
        written = time.perf_counter() - t0
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "S3SPILL_STORE": (Path(tmp) / "s").as_uri()}
        proc = subprocess.Popen([sys.executable, "-m", "s3spill", "ui", "--port", str(port)], env=env)
        try:
            base_url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(base_url + "/gc", timeout=5).read()  # noqa: S310
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            urllib.request.urlopen(f"{base_url}/a/{art.source_id}?line=1", timeout=60).read()  # noqa: S310 - warm
            baseline, _ = _rss(proc.pid)
            middle = art.line_count // 2
            t0 = time.perf_counter()
            html = urllib.request.urlopen(f"{base_url}/a/{art.source_id}?line={middle}", timeout=60).read()  # noqa: S310
            latency = time.perf_counter() - t0
            rss, hwm = _rss(proc.pid)
            assert f"lines {middle}-".encode() in html
        finally:
            proc.terminate()
            proc.wait(10)
    return {"artifact_bytes": art.size_bytes, "lines": art.line_count, "write_seconds": round(written, 1),
            "page_seconds": round(latency, 3), "baseline_rss_mib": round(baseline / MiB, 1),
            "rss_after_mib": round(rss / MiB, 1), "peak_over_baseline_mib": round((hwm - baseline) / MiB, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    o = sub.add_parser("overhead")
    o.add_argument("--calls", type=int, default=10_000)
    o.add_argument("--rounds", type=int, default=4)
    s = sub.add_parser("stats")
    s.add_argument("--sessions", type=int, default=100)
    s.add_argument("--per-session", type=int, default=10_000)
    s.add_argument("--formats", default="parquet,ndjson", help="comma-separated: parquet, ndjson")
    p = sub.add_parser("page")
    p.add_argument("--gib", type=float, default=1.0)
    args = parser.parse_args()
    recorder_module.ENV  # noqa: B018 - imported for its registry; usage stays on
    if args.what == "overhead":
        out = overhead(args.calls, args.rounds)
    elif args.what == "stats":
        out = stats_bench(args.sessions, args.per_session, args.formats.split(","))
    else:
        out = page(args.gib)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
