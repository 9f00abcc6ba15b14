"""Usage records and their readers at scale: recorder overhead, ``stats`` over 1M events, a UI page.

Three measurements, each against a baseline taken in the same run:

* ``overhead``: 10,000 tool calls (a third spilled, 100-200 KB; the rest inline) through a
  Spiller on a local store with a batching :class:`UsageRecorder` (its defaults), and as many
  without, in interleaved blocks (A B B A ...); CPU time of the process, not wall time, so
  the other work on a shared machine does not count. Printed: the usage path's own CPU
  time (measured on each thread it runs on) against the spill CPU time — also less the
  timer's own cost, measured beside the spills without usage — the A/B difference per pair
  of blocks (median, quartiles, range) and in total, and objects per 100 events. By default
  each block has its own store and recorder, closed at its end (a part of 500 events written
  after the spills, into new directories); ``--long-lived``: one of each for all blocks,
  as a server runs (parts of 1,000 written beside the spills).
* ``stats``: 1,000,000 usage events (100 sessions x 10,000, ~1.5 KB of shown text each) in a
  local store, as a fleet leaves them before compaction — zstd NDJSON parts (``--plain``: the
  plain parts written before), by default 99 % of the
  events from long-lived processes at their batch bound (1,000 a part) and 1 % from one-shot
  processes (one object each: 10,000 objects) — and as compacted Parquet day files;
  ``compute_stats`` run ``--repeats`` times on each, wall and CPU seconds (sorted).
* ``page``: ``s3spill ui`` in a child process over a store holding a 1 GiB artifact; the
  child's RSS after a warm-up request (its baseline), then a page from the middle of the
  artifact: its latency and the child's peak RSS over the baseline.

    python benchmarks/usage_bench.py overhead [--calls 10000 --block 500] [--long-lived]
    python benchmarks/usage_bench.py stats [--oneshot 0.01] [--batch 1000] [--plain]
    python benchmarks/usage_bench.py page --gib 1
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from s3spill import keys  # noqa: E402
from s3spill.spill.spiller import Spiller  # noqa: E402
from s3spill.store.local import LocalStore  # noqa: E402
from s3spill.usage import recorder as recorder_module  # noqa: E402
from s3spill.usage.events import UsageEvent  # noqa: E402
from s3spill.usage.recorder import BUILD_EVERY, UsageRecorder, part_body, zstd_part  # noqa: E402
from s3spill.usage.source import usage_objects  # noqa: E402
from s3spill.usage.stats import compute_stats  # noqa: E402

MiB = 1024 * 1024
#: Recorder settings of the overhead run (``--build-every``); empty: the defaults.
RECORDER: dict[str, float] = {}


def _quartiles(values: list[float]) -> dict[str, float]:
    q = statistics.quantiles(values, n=4)
    return {"median": round(statistics.median(values), 5), "q1": round(q[0], 5), "q3": round(q[2], 5),
            "min": round(min(values), 5), "max": round(max(values), 5)}


class _Timed:
    """The usage path's CPU seconds, measured on each thread it runs on: the caller's queueing
    (``caller``), the writer's event building and metrics (``building``), serialising,
    compressing and PUTs (``writing``); and ``floor``, an empty interval timed the same way
    right after a spill without usage — what the caller's two clock reads cost themselves."""

    def __init__(self) -> None:
        self.caller = self.building = self.writing = self.floor = 0.0
        self.lock = threading.Lock()

    def wrap(self, spiller: Spiller, rec: UsageRecorder) -> None:
        record, build, write = spiller._record, rec._build, rec._write

        def timed_record(result: object) -> None:
            c0 = time.thread_time()
            record(result)  # type: ignore[arg-type]
            self.caller += time.thread_time() - c0

        def timed_build() -> None:
            c0 = time.thread_time()
            build()
            with self.lock:
                self.building += time.thread_time() - c0

        def timed_write(shash: str, day: str, part: Any) -> int:
            c0 = time.thread_time()
            n = write(shash, day, part)
            with self.lock:
                self.writing += time.thread_time() - c0
            return n

        spiller._record = timed_record  # type: ignore[method-assign]
        rec._build = timed_build  # type: ignore[method-assign]
        rec._write = timed_write  # type: ignore[method-assign]


def _recorder(store: LocalStore) -> UsageRecorder:
    """A batching recorder with its defaults (1,000 events or 30 s), or the --build-every asked for."""
    return UsageRecorder(store, build_every=RECORDER.get("build_every", BUILD_EVERY))


def _spills(spiller: Spiller, outputs: list[str], tools: list[str], first: int, calls: int,
            timed: _Timed | None) -> None:
    """``calls`` spills; with ``timed`` (the blocks without usage), each followed by an empty
    timed interval, the caller's timer floor (and the same two clock reads as a timed call)."""
    for i in range(first, first + calls):
        spiller.externalize(outputs[i % len(outputs)], tools[i % len(tools)])
        if timed is not None:
            c0 = time.thread_time()
            timed.floor += time.thread_time() - c0


def _block(outputs: list[str], tools: list[str], calls: int, with_usage: bool, first: int,
           timed: _Timed) -> tuple[float, int, int]:
    """One block of ``calls`` spills on a fresh store with a fresh recorder, closed at the
    block's end (its last part written inside the measured time): (process CPU seconds,
    objects written, events written); the usage path's CPU goes into ``timed``."""
    with tempfile.TemporaryDirectory() as tmp:
        store = LocalStore(Path(tmp) / "s")
        rec = _recorder(store) if with_usage else None
        spiller = Spiller(store, f"bench-{first}", usage=rec, journal=None)
        if rec is not None:
            timed.wrap(spiller, rec)
        c0 = _cpu()
        _spills(spiller, outputs, tools, first, calls, None if rec else timed)
        if rec is not None:
            rec.close()
        spent = _cpu() - c0
        spiller.close()
        return spent, rec.objects if rec else 0, rec.written if rec else 0


def _outputs() -> list[str]:
    rng = random.Random(7)
    return [("x" * rng.randint(20, 400) + "\n") if i % 3 else
            "".join(f"line {n} of output {i}\n" for n in range(rng.randint(3000, 8000)))
            for i in range(200)]


def overhead(calls: int, block: int, long_lived: bool = False) -> dict[str, Any]:
    """Interleaved A/B blocks (with, without, without, with, ...) of ``block`` calls until
    ``calls`` have run with usage; CPU time of the whole process (all threads), so a loaded
    machine's waiting is not counted and the writer thread's work is.

    ``long_lived``: as one server runs, one session on one store and one recorder for every
    block with usage (another store for those without), so the writer flushes at its bound
    (1,000 events) while spills run and a part lands in a directory that exists; the recorder
    is closed after the last block. Each block with usage ends by waiting for a flush under
    way (waiting costs no CPU), so the next block is not charged for it; the usage path's own
    CPU is counted on its threads wherever it runs, the final close included."""
    outputs = _outputs()
    tools = ["build", "test", "ls", "grep"]
    warm = _Timed()
    _block(outputs, tools, 50, True, 0, warm)  # warm-up: imports, first-use caches
    _block(outputs, tools, 50, False, 0, warm)
    cpu: dict[bool, list[float]] = {True: [], False: []}
    timed = _Timed()
    objects = events = 0
    rounds = calls // block
    with tempfile.TemporaryDirectory() as tmp:
        shared: dict[bool, Spiller] = {}
        rec: UsageRecorder | None = None
        if long_lived:
            rec = _recorder(LocalStore(Path(tmp) / "with"))
            shared[True] = Spiller(rec.store, "bench-long-lived", usage=rec, journal=None)
            shared[False] = Spiller(LocalStore(Path(tmp) / "without"), "bench-long-lived", journal=None)
            timed.wrap(shared[True], rec)
        for r in range(rounds):
            for mode in ((True, False) if r % 2 == 0 else (False, True)):
                if rec is None:
                    spent, objs, evs = _block(outputs, tools, block, mode, r * block, timed)
                    objects += objs
                    events += evs
                else:
                    c0 = _cpu()
                    _spills(shared[mode], outputs, tools, r * block, block, None if mode else timed)
                    if mode:
                        with rec._write_lock:  # a flush under way ends inside this block
                            pass
                    spent = _cpu() - c0
                cpu[mode].append(spent)
        if rec is not None:
            rec.close()
            objects, events = rec.objects, rec.written
            for spiller in shared.values():
                spiller.close()
    ratios = [w / wo - 1 for w, wo in zip(cpu[True], cpu[False], strict=True)]
    without = sum(cpu[False])
    n = rounds * block
    floor = timed.floor / n
    usage = timed.caller + timed.building + timed.writing
    return {"shape": "long-lived" if long_lived else "blocks", "calls_with_usage": n, "block": block,
            "pairs": rounds, "cpu_seconds_without": round(without, 2),
            "cpu_seconds_with": round(sum(cpu[True]), 2),
            "usage_path_cpu_seconds": {"caller": round(timed.caller, 3), "building": round(timed.building, 3),
                                       "writing": round(timed.writing, 3)},
            "usage_path_share_of_spill_cpu": round(usage / without, 5),
            "usage_path_share_less_timer_floor": round((usage - timed.floor) / without, 5),
            "usage_path_us_per_call": {"caller": round(timed.caller / n * 1e6, 2),
                                       "building": round(timed.building / n * 1e6, 2),
                                       "writing": round(timed.writing / n * 1e6, 2)},
            "caller_timer_floor_us": round(floor * 1e6, 2),
            "spill_cpu_ms_per_call": round(without / n * 1e3, 3),
            "load_average_1min": round(os.getloadavg()[0], 1),
            "ab_overhead_per_pair": _quartiles(ratios),
            "ab_overhead_total": round(sum(cpu[True]) / without - 1, 5),
            "events": events, "objects": objects, "objects_per_100_events": round(100 * objects / events, 3)}


def _shown(rng: random.Random) -> str:
    return "".join(f"{rng.randint(0, 10**6)} compiling module_{rng.randint(0, 999)}.c ok\n"
                   for _ in range(rng.randint(10, 60)))


def _fleet_events(sessions: int, per_session: int) -> Iterator[tuple[str, list[UsageEvent]]]:
    """Each session's events as the recorder makes them: a third spills, a third page reads,
    a third greps (re-reads of the spills), ~1.5 KB of shown text each, every locator set."""
    rng = random.Random(3)
    pool = [_shown(rng) for _ in range(1000)]
    for s in range(sessions):
        shash = keys.session_hash(f"bench-session-{s}")
        events = []
        for i in range(per_session):
            op = ("spill", "read", "grep")[i % 3]
            name = f"20261130T120000Z-{i // 3:08x}-{('build', 'test', 'search')[(i // 3) % 3]}"
            shown = pool[rng.randrange(len(pool))]
            events.append(UsageEvent(
                session=shash, op=op, tool=name.split("-", 2)[2], artifact=name,  # type: ignore[arg-type]
                source_id=f"artifact:{shash}:{name}:{i:012x}", call_id=f"toolu_{s:04x}{i:020x}",
                via=None if op == "spill" else "s3spill_read", spilled=op == "spill", mode="stored",
                raw_bytes=200_000, stored_bytes=20_000, threshold=50_000, shown=shown,
                shown_chars=len(shown), shown_bytes=len(shown), id=f"{s:06x}{i:016x}",
                ts="2026-11-30T12:00:00.000Z"))
        yield shash, events


def _populate_parts(store: LocalStore, sessions: int, per_session: int, oneshot: float, batch: int,
                    plain: bool = False) -> int:
    """Write the events as a fleet's processes would: the ``oneshot`` share one object per
    event (hooks, the CLI), the rest in parts of ``batch`` (a long-lived server at its
    batch bound); zstd parts as the recorder writes them, or ``plain`` NDJSON parts as it
    wrote them before. Written from threads: a local put fsyncs, which dominates populating."""
    from concurrent.futures import ThreadPoolExecutor

    def put(item: tuple[str, list[UsageEvent]]) -> None:
        body, facts = part_body(item[1]) if plain else zstd_part(item[1])
        store.put_if_absent(keys.usage_part_key(item[0], "2026-11-30", facts=facts, zstd=not plain), body)

    objects = 0
    with ThreadPoolExecutor(16) as pool:
        for shash, events in _fleet_events(sessions, per_session):
            cut = round(len(events) * oneshot)
            groups = [[e] for e in events[:cut]]
            groups += [events[k:k + batch] for k in range(cut, len(events), batch)]
            objects += len(groups)
            list(pool.map(put, [(shash, g) for g in groups]))
    return objects


def _populate_days(store: LocalStore, sessions: int, per_session: int, tmp: Path) -> int:
    import duckdb

    for shash, events in _fleet_events(sessions, per_session):
        src, dst = tmp / "rows.ndjson", tmp / "day.parquet"
        src.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
        duckdb.execute(f"COPY (SELECT * FROM read_json('{src}', format='newline_delimited')) TO "  # noqa: S608
                       f"'{dst}' (FORMAT parquet, COMPRESSION zstd)")
        data = dst.read_bytes()
        store.put_if_absent(keys.usage_day_key(shash, "2026-11-30", hashlib.sha256(data).hexdigest()), data)
    return sessions


def _cpu() -> float:
    """CPU seconds of this process, all threads (DuckDB's and the fetchers' included)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def stats_bench(sessions: int, per_session: int, formats: list[str], oneshot: float, batch: int,
                repeats: int, plain: bool = False) -> dict[str, Any]:
    results: dict[str, Any] = {"cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in formats:
            store = LocalStore(Path(tmp) / fmt)
            t0 = time.perf_counter()
            if fmt == "ndjson":
                objects = _populate_parts(store, sessions, per_session, oneshot, batch, plain)
            else:
                objects = _populate_days(store, sessions, per_session, Path(tmp))
            results[f"{fmt}_populate_seconds"] = round(time.perf_counter() - t0, 1)
            results[f"{fmt}_objects"] = objects
            results[f"{fmt}_bytes"] = sum(o.size for o in usage_objects(store))
            walls, cpus = [], []
            for _ in range(repeats):
                t0, c0 = time.perf_counter(), _cpu()
                stats = compute_stats(store)
                walls.append(time.perf_counter() - t0)
                cpus.append(_cpu() - c0)
            results[f"{fmt}_events"] = stats.events
            results[f"{fmt}_stats_wall_seconds"] = [round(w, 2) for w in sorted(walls)]
            results[f"{fmt}_stats_cpu_seconds"] = [round(c, 2) for c in sorted(cpus)]
            results[f"{fmt}_load_average_1min"] = round(os.getloadavg()[0], 1)
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
    o.add_argument("--block", type=int, default=500, help="calls per A/B block")
    o.add_argument("--build-every", type=float, default=None, help="the recorder's build_every (s)")
    o.add_argument("--long-lived", action="store_true",
                   help="one session, store and recorder for all blocks with usage (flushes beside spills)")
    s = sub.add_parser("stats")
    s.add_argument("--sessions", type=int, default=100)
    s.add_argument("--per-session", type=int, default=10_000)
    s.add_argument("--formats", default="ndjson,parquet", help="comma-separated: parquet, ndjson")
    s.add_argument("--oneshot", type=float, default=0.01,
                   help="share of the events written one object each (hooks, the CLI)")
    s.add_argument("--batch", type=int, default=1000, help="events per part of a long-lived process")
    s.add_argument("--repeats", type=int, default=3)
    s.add_argument("--plain", action="store_true",
                   help="NDJSON parts as written before zstd parts (-f<n>.ndjson), not .ndjson.zst")
    p = sub.add_parser("page")
    p.add_argument("--gib", type=float, default=1.0)
    args = parser.parse_args()
    recorder_module.ENV  # noqa: B018 - imported for its registry; usage stays on
    if args.what == "overhead":
        if args.build_every is not None:
            RECORDER["build_every"] = args.build_every
        out = overhead(args.calls, args.block, args.long_lived)
    elif args.what == "stats":
        out = stats_bench(args.sessions, args.per_session, args.formats.split(","), args.oneshot,
                          args.batch, args.repeats, args.plain)
    else:
        out = page(args.gib)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
