"""Paged reads and grep on artifacts of growing size: does a page cost O(page)?

For each artifact size (1 MB, 100 MB, 500 MB, 1 GiB by default) and each backend (the
embedded S3 — a moto server over HTTP, one request at a time — and the local store), it
writes one artifact of log-like lines, then reads a 2000-line page at its start, middle and
end, and prints side by side:

* ``cold ms``  — a fresh ArtifactStore: HEAD + index GET + the chunks the page needs;
* ``warm ms``  — the index already verified and cached: the chunk GETs only;
* ``raw ms``   — the baseline: one plain ranged GET of one chunk at the same place, no
  verification (what any reader must pay at least);
* ``bytes``    — body bytes the cold read transferred (index + chunks), and requests.

Then grep on a 200 MB artifact with 10^5 matching lines and max_matches=50, in a child
process so its peak RSS is grep's own, next to a plain streamed download of the same object.

    python benchmarks/read_bench.py                        # everything (several minutes)
    python benchmarks/read_bench.py --sizes 1MB,100MB --grep-size 20MB --backends local
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from s3spill import keys  # noqa: E402
from s3spill.artifacts.store import ArtifactStore  # noqa: E402
from s3spill.store.base import ObjectStore  # noqa: E402
from s3spill.store.local import LocalStore  # noqa: E402
from s3spill.testing import EmbeddedS3  # noqa: E402
from tests.artifacts.inspect_store import CountingStore  # noqa: E402

SESSION = "read-bench"
BUCKET = "read-bench"
UNITS = {"KB": 1000, "MB": 1000**2, "GB": 1000**3, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def parse_size(text: str) -> int:
    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * UNITS[unit])
    return int(text)


def log_lines(size: int, match_every: int = 0) -> Iterator[bytes]:
    """About ``size`` bytes of ~100-byte log lines, yielded in 1 MiB pieces."""
    buf = bytearray()
    produced = 0
    i = 0
    while produced < size:
        level = b"ERROR" if match_every and i % match_every == 0 else b"INFO "
        line = b"%010d %s request handled path=/api/v1/items/%08d status=200 duration_ms=%05d\n" % (
            i,
            level,
            i * 7 % 99_999_999,
            i % 99_991,
        )
        buf += line
        i += 1
        if len(buf) >= 1 << 20:
            piece = bytes(buf[: size - produced])
            produced += len(piece)
            buf.clear()
            yield piece
    if buf and produced < size:
        yield bytes(buf[: size - produced])


def timed(fn: Any, repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000, result


def bench_size(store: ObjectStore, label: str, size: int, repeat: int) -> list[dict[str, Any]]:
    writer = ArtifactStore(store, session_id=SESSION)
    t0 = time.perf_counter()
    ref = writer.write(SESSION, log_lines(size), "bench")
    write_s = time.perf_counter() - t0
    akey = keys.artifact_key(ref.session_hash, ref.name)
    chunk = writer.config.index_chunk_size
    rows = []
    for where, offset in (
        ("start", 0),
        ("middle", ref.line_count // 2),
        ("end", max(0, ref.line_count - 2000)),
    ):
        counting = CountingStore(store)

        def cold(offset: int = offset, counting: CountingStore = counting) -> Any:
            counting.reset()
            return ArtifactStore(counting, session_id=SESSION).read_page(ref.source_id, offset=offset)

        cold_ms, page = timed(cold, repeat)
        fetched, requests = counting.bytes_read, len(counting.requests)
        warm_store = ArtifactStore(store, session_id=SESSION)
        warm_store.read_page(ref.source_id, offset=offset)
        warm_ms, _ = timed(lambda o=offset, w=warm_store: w.read_page(ref.source_id, offset=o), repeat)
        k = page.byte_start // chunk
        rng = (k * chunk, min((k + 1) * chunk, ref.size_bytes))
        raw_ms, _ = timed(lambda r=rng: store.get(akey, r), repeat)
        rows.append(
            {
                "backend": label,
                "size": size,
                "where": where,
                "write_s": round(write_s, 2),
                "cold_ms": round(cold_ms, 1),
                "warm_ms": round(warm_ms, 1),
                "raw_ms": round(raw_ms, 1),
                "page_bytes": page.byte_end - page.byte_start,
                "fetched": fetched,
                "requests": requests,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def grep_child(args: argparse.Namespace) -> None:
    """Runs in a child process: one grep (or one plain download), then its own figures."""
    store: ObjectStore
    if args.endpoint:
        s3 = EmbeddedS3()
        s3.endpoint_url = args.endpoint
        store = s3.store(BUCKET, "bench")
    else:
        store = LocalStore(args.local_root)
    arts = ArtifactStore(store, session_id=SESSION)
    t0 = time.perf_counter()
    if args.mode == "grep":
        result = arts.grep(args.source_id, "ERROR", max_matches=50)
        out = {
            "matches": len(result.matches),
            "total": result.total_matches,
            "omitted": result.omitted,
            "exact": result.exact,
        }
    else:
        sid = keys.SourceId.parse(args.source_id)
        n = sum(len(c) for c in store.iter_chunks(keys.artifact_key(sid.session_hash, sid.name)))
        out = {"bytes": n}
    out["seconds"] = round(time.perf_counter() - t0, 2)
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out))


def bench_grep(store: ObjectStore, label: str, size: int, endpoint: str, root: str) -> dict[str, Any]:
    lines = size // 100
    every = max(1, lines // 100_000)
    ref = ArtifactStore(store, session_id=SESSION).write(SESSION, log_lines(size, every), "bench")
    results: dict[str, Any] = {"backend": label, "size": size, "lines": ref.line_count}
    for mode in ("download", "grep"):
        cmd = [
            sys.executable,
            __file__,
            "--child",
            mode,
            "--source-id",
            ref.source_id,
            "--endpoint",
            endpoint,
            "--local-root",
            root,
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
        results[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    results["grep_vs_download"] = round(results["grep"]["seconds"] / results["download"]["seconds"], 2)
    print(json.dumps(results), flush=True)
    return results


def table(rows: list[dict[str, Any]]) -> None:
    print(
        f"\n{'backend':8} {'size':>9} {'where':7} {'cold ms':>8} {'warm ms':>8} {'raw ms':>7}"
        f" {'fetched':>11} {'req':>4} {'page bytes':>10}"
    )
    for r in rows:
        print(
            f"{r['backend']:8} {r['size']:>9,} {r['where']:7} {r['cold_ms']:>8} {r['warm_ms']:>8}"
            f" {r['raw_ms']:>7} {r['fetched']:>11,} {r['requests']:>4} {r['page_bytes']:>10,}"
        )
    for backend in sorted({r["backend"] for r in rows}):
        mine = [r for r in rows if r["backend"] == backend and r["where"] == "middle"]
        if len(mine) < 2:
            continue
        base = min(mine, key=lambda r: r["size"])
        for r in mine:
            if r is base:
                continue
            print(
                f"{backend}: middle page, {r['size']:,} B vs {base['size']:,} B:"
                f" cold x{r['cold_ms'] / base['cold_ms']:.2f}, warm x{r['warm_ms'] / base['warm_ms']:.2f},"
                f" raw ranged GET x{r['raw_ms'] / base['raw_ms']:.2f},"
                f" bytes x{r['fetched'] / base['fetched']:.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1MB,100MB,500MB,1GiB")
    parser.add_argument("--backends", default="s3,local")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--grep-size", default="200MB")
    parser.add_argument("--child", choices=["grep", "download"])
    parser.add_argument("--source-id")
    parser.add_argument("--endpoint", default="")
    parser.add_argument("--local-root", default="")
    args = parser.parse_args()
    if args.child:
        args.mode = args.child
        grep_child(args)
        return
    sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    rows: list[dict[str, Any]] = []
    greps = []
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends.split(","):
            if backend == "s3":
                s3 = EmbeddedS3().__enter__()
                s3.create_bucket(BUCKET)
                store: ObjectStore = s3.store(BUCKET, "bench")
                endpoint, root = s3.endpoint_url, ""
            else:
                s3 = None
                root = str(Path(tmp, "store"))
                store, endpoint = LocalStore(root), ""
            try:
                for size in sizes:
                    rows += bench_size(store, backend, size, args.repeat)
                if args.grep_size:
                    greps.append(bench_grep(store, backend, parse_size(args.grep_size), endpoint, root))
            finally:
                if s3 is not None:
                    s3.__exit__(None, None, None)
    table(rows)
    for g in greps:
        print(
            f"\ngrep {g['backend']}: {g['size']:,} B, {g['lines']:,} lines:"
            f" {g['grep']['matches']} shown, {g['grep']['total']:,} total,"
            f" {g['grep']['omitted']:,} omitted (exact={g['grep']['exact']}),"
            f" {g['grep']['seconds']} s, peak RSS {g['grep']['peak_rss_mib']} MiB;"
            f" plain download {g['download']['seconds']} s, peak RSS {g['download']['peak_rss_mib']} MiB"
            f" (grep/download x{g['grep_vs_download']})"
        )


if __name__ == "__main__":
    main()
