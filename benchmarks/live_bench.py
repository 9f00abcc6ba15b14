"""Live output of running commands: latency to readable, supervisor memory, request rate, page cost.

Four measurements, each on the backends asked for (``local``: a directory; ``s3``: the
embedded S3, a moto server over HTTP serving one request at a time):

1. **latency** — ``s3spill run --background`` (default cadence: 1 s / 1 MiB) of a command
   that prints a timestamped line every 0.2 s; a reader polls ``read_page(since=...)``
   every 50 ms and records, per line, readable-time minus printed-time (goal: <= 2 s).
2. **rss** — the supervisor's peak RSS (``VmHWM``) while its command writes as fast as it
   can (``--rss-bytes`` of 100-byte lines), with the rate it reached; baseline: the peak
   RSS of a supervisor whose command prints one line.
3. **requests** — store requests per minute of a running command, quiet (one line every
   2 s) and busy (as fast as the store takes it), from a metered store.
4. **page** — a 50-line page at the newest output (``since`` near the end) and in the middle
   (``offset``) of a live output of ``--big`` bytes against one of 1 MiB: wall time,
   requests and bytes fetched (the state and tables included), a fresh reader each time.

    python benchmarks/live_bench.py                    # everything, local and s3
    python benchmarks/live_bench.py --only latency,page --backends local --big 256MiB
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from s3spill import keys  # noqa: E402
from s3spill.artifacts.store import ArtifactStore  # noqa: E402
from s3spill.config import LiveConfig  # noqa: E402
from s3spill.gc.metered_store import MeteredStore  # noqa: E402
from s3spill.live.run import start_live  # noqa: E402
from s3spill.live.segments import read_state  # noqa: E402
from s3spill.live.writer import LiveWriter  # noqa: E402
from s3spill.store.base import ObjectStore  # noqa: E402
from s3spill.store.local import LocalStore  # noqa: E402
from s3spill.testing import EmbeddedS3, child_env  # noqa: E402

SESSION = "live-bench"
BUCKET = "live-bench"
UNITS = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "KB": 1000, "MB": 1000**2, "GB": 1000**3}
STAMPER = ("import sys, time\n"
           "for i in range({n}):\n"
           "    print(f'{{time.time():.6f}} line {{i}}', flush=True)\n"
           "    time.sleep({every})\n")
FLOOD = ("import sys\n"
         "line = b'x' * 99 + b'\\n'\n"
         "block = line * 10000\n"
         "w = sys.stdout.buffer.write\n"
         "for _ in range({blocks}):\n"
         "    w(block)\n")


def parse_size(text: str) -> int:
    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * UNITS[unit])
    return int(text)


class Backend:
    def __init__(self, name: str, tmp: Path, s3: EmbeddedS3 | None) -> None:
        self.name, self.tmp, self.s3 = name, tmp, s3
        self.n = 0

    def fresh(self) -> tuple[ObjectStore, dict[str, str]]:
        """A new empty store and the environment a CLI child needs to reach it."""
        self.n += 1
        if self.name == "local":
            path = self.tmp / f"store-{self.n}"
            return LocalStore(path), child_env({"S3SPILL_STORE": path.as_uri(),
                                                "S3SPILL_SESSION": SESSION})
        assert self.s3 is not None
        store = self.s3.store(BUCKET, f"b{self.n}")
        return store, child_env({**self.s3.env(), "S3SPILL_STORE": store.url,
                                 "S3SPILL_SESSION": SESSION})


def _background(env: dict[str, str], *cmd: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "s3spill", "run", "--background", "--json", "--",
                          *cmd], env=env, capture_output=True, text=True, timeout=120, check=True)
    started: dict[str, Any] = json.loads(out.stdout)
    return started


def _wait_pid(pid: int, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def latency(b: Backend, lines: int) -> dict[str, Any]:
    store, env = b.fresh()
    started = _background(env, sys.executable, "-c", STAMPER.format(n=lines, every=0.2))
    arts = ArtifactStore(store, session_id=SESSION)
    since, lags = 0, []
    deadline = time.monotonic() + lines * 0.2 + 30
    while len(lags) < lines and time.monotonic() < deadline:
        page = arts.read_page(started["source_id"], since=since)
        now = time.time()
        for ln in page.lines:
            if ln.complete and ln.newline:
                lags.append(now - float(ln.text.split()[0]))
        since = page.live.next_since if hasattr(page, "live") else page.byte_end  # type: ignore[attr-defined]
        time.sleep(0.05)
    _wait_pid(started["supervisor_pid"])
    lags.sort()
    return {"lines": len(lags), "median_s": round(statistics.median(lags), 3),
            "p95_s": round(lags[int(len(lags) * 0.95) - 1], 3), "max_s": round(lags[-1], 3)}


def _peak_rss(pid: int) -> int:
    """VmHWM of ``pid`` in bytes, sampled until it exits (the kernel keeps the high-water mark)."""
    peak = 0
    while True:
        try:
            with open(f"/proc/{pid}/status") as fh:
                for row in fh:
                    if row.startswith("VmHWM:"):
                        peak = max(peak, int(row.split()[1]) * 1024)
        except (FileNotFoundError, ProcessLookupError):
            return peak
        time.sleep(0.05)


def rss(b: Backend, nbytes: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    runs = (("baseline (one line)", "print('one line')"),
            (f"flood {nbytes / 2**20:.0f} MiB", FLOOD.format(blocks=max(1, nbytes // 1_000_000))))
    for label, cmd in runs:
        store, env = b.fresh()
        t0 = time.monotonic()
        started = _background(env, sys.executable, "-c", cmd)
        peak = _peak_rss(started["supervisor_pid"])
        took = time.monotonic() - t0
        state = read_state(store, keys.LiveId.parse(started["source_id"]))[0]
        out[label] = {"peak_rss_mib": round(peak / 2**20, 1), "bytes": state.total_bytes,
                      "seconds": round(took, 2),
                      "rate_mb_s": round(state.total_bytes / took / 1e6, 1)}
    return out


def requests(b: Backend, seconds: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, cmd in (("quiet (1 line / 2 s)", STAMPER.format(n=10_000, every=2.0)),
                       ("busy (as fast as it goes)", FLOOD.format(blocks=10**6))):
        store, _ = b.fresh()
        metered = MeteredStore(store)
        handle = start_live(metered, SESSION, [sys.executable, "-c", cmd])
        time.sleep(2.0)  # past start-up
        before = sum(metered.requests.values())
        bytes_before = read_state(store, keys.LiveId.parse(handle.source_id))[0].total_bytes
        time.sleep(seconds)
        counts = dict(metered.requests)
        after = sum(counts.values())
        state = read_state(store, keys.LiveId.parse(handle.source_id))[0]
        handle.stop()
        out[label] = {"requests_per_min": round((after - before) / seconds * 60),
                      "mb_per_min": round((state.total_bytes - bytes_before) / seconds * 60 / 1e6, 1),
                      "by_op_total": counts}
    return out


def _lines(total: int) -> Iterator[bytes]:
    block = b"".join(f"2026-12-01T10:00:00Z worker-{i % 97:02d} request {i} served in 12 ms\n"
                     .encode() for i in range(20_000))
    made = 0
    while made < total:
        piece = block[: total - made]
        made += len(piece)
        yield piece


def page(b: Backend, big: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for size in (1 * 2**20, big):
        store, _ = b.fresh()
        w = LiveWriter(store, SESSION, "bench", config=LiveConfig(segment_interval=60))
        w.open()
        t0 = time.monotonic()
        for piece in _lines(size):
            w.feed(piece)
        w.tick()
        w._commit()  # list the last full segments (a partial one stays buffered)
        wrote = time.monotonic() - t0
        state = read_state(store, w.live_id)[0]
        row: dict[str, Any] = {
            "segments": sum(t.count for t in state.tables) + len(state.segments),
            "state_spans": len(state.spans), "levels": max((t.level for t in state.tables), default=0),
            "state_kib": round(len(state.to_bytes()) / 1024, 1), "write_s": round(wrote, 1)}
        for where, kwargs in (("newest", {"since": max(0, state.committed_bytes - 4000)}),
                              ("middle", {"offset": state.line_count // 2})):
            timings, reqs, fetched = [], 0, 0
            for _ in range(15):
                counting = _Counting(store)
                arts = ArtifactStore(counting, session_id=SESSION)
                t = time.perf_counter()
                p = arts.read_page(str(w.live_id), limit=50, **kwargs)  # type: ignore[arg-type]
                timings.append(time.perf_counter() - t)
                reqs, fetched = counting.requests, counting.fetched
                assert p.lines
            row[f"{where}_page_ms"] = round(statistics.median(timings) * 1000, 1)
            row[f"{where}_requests"] = reqs
            row[f"{where}_bytes_fetched"] = fetched
        out[f"{size / 2**20:.0f} MiB"] = row
    return out


class _Counting(ObjectStore):
    """GETs and bytes a read makes (HEADs too), delegating everything."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner, self.kind, self.requests, self.fetched = inner, inner.kind, 0, 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def url(self) -> str:
        return self.inner.url

    def get(self, key: str, byte_range: Any = None) -> bytes:
        data = self.inner.get(key, byte_range)
        with self._lock:
            self.requests += 1
            self.fetched += len(data)
        return data

    def head(self, key: str) -> Any:
        with self._lock:
            self.requests += 1
        return self.inner.head(key)

    def put_if_absent(self, *a: Any, **k: Any) -> Any:
        return self.inner.put_if_absent(*a, **k)

    def put_if_match(self, *a: Any, **k: Any) -> Any:
        return self.inner.put_if_match(*a, **k)

    def iter_chunks(self, *a: Any, **k: Any) -> Any:
        return self.inner.iter_chunks(*a, **k)

    def delete_if_match(self, *a: Any, **k: Any) -> Any:
        return self.inner.delete_if_match(*a, **k)

    def delete_version(self, *a: Any, **k: Any) -> Any:
        return self.inner.delete_version(*a, **k)

    def list(self, prefix: str = "") -> Any:
        return self.inner.list(prefix)

    def capabilities(self) -> Any:
        return self.inner.capabilities()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="latency,rss,requests,page")
    ap.add_argument("--backends", default="local,s3")
    ap.add_argument("--latency-lines", type=int, default=50)
    ap.add_argument("--rss-bytes", type=parse_size, default=parse_size("1GiB"))
    ap.add_argument("--request-seconds", type=float, default=20.0)
    ap.add_argument("--big", type=parse_size, default=parse_size("1GiB"))
    args = ap.parse_args()
    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        s3 = None
        if "s3" in args.backends.split(","):
            s3 = EmbeddedS3()
            s3.start()
            s3.create_bucket(BUCKET)
        try:
            for name in args.backends.split(","):
                b = Backend(name, Path(tmp), s3)
                result: dict[str, Any] = {"backend": name}
                if "latency" in only:
                    result["latency"] = latency(b, args.latency_lines)
                if "rss" in only:
                    result["rss"] = rss(b, args.rss_bytes)
                if "requests" in only:
                    result["requests"] = requests(b, args.request_seconds)
                if "page" in only:
                    result["page"] = page(b, args.big)
                print(json.dumps(result, indent=2), flush=True)
        finally:
            if s3 is not None:
                s3.stop()


if __name__ == "__main__":
    main()
