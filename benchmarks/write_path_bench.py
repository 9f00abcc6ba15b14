"""The one-pass write path and the read path, each against a baseline run side by side.

Cases (each in a fresh child process, so peak RSS and disk writes are its own):

* ``local``: ``Spiller.externalize`` and ``ArtifactStore.write`` of a 200 MiB build log
  into the local store, against a *floor* run in the same child on the same stream:
  SHA-256 + write + fsync of the bytes to a file on the same filesystem. Reported: times,
  floor/ours ratio (goal >= 0.60), peak RSS (goal < 100 MiB), stored size.
* ``s3``: the same output spilled to an embedded moto server (``EmbeddedS3``, one request
  at a time) against raw boto3 ``upload_fileobj`` of the same non-seekable stream (its
  defaults: 8 MiB parts, 10 threads). Reported: times, ratio (goal <= 1.0x), bytes the
  client process wrote to local disk (``/proc/self/io`` ``write_bytes``; goal 0), RSS.
  Run for the text log (compressed) and for binary data (stored raw).
* ``ratio``: how much smaller the 200 MiB build log is stored (goal >= 5x).
* ``page``: a 2,000-line page in the middle of a 500 MiB artifact, through a metering
  wrapper that counts body bytes fetched; goal <= page bytes + 2 frames + index.
* ``cli``: wall time of ``s3spill read`` (a 2,000-line page, import included) against
  ``python -c pass`` and ``python -c 'import pydantic'`` (goal <= 150 ms).

    .venv/bin/python benchmarks/write_path_bench.py                  # everything
    .venv/bin/python benchmarks/write_path_bench.py --cases local,cli --mib 50
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
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

MiB = 1024 * 1024
BUCKET = "s3spill-bench"
_BLOCKS = 16


def log_blocks() -> list[bytes]:
    """16 distinct 1 MiB blocks of a build log (compiler lines, warnings, test results)."""
    rng = random.Random(15)
    mods = [f"src/{rng.choice(['core', 'net', 'ui', 'db'])}/mod_{i:04d}.rs" for i in range(3000)]
    blocks = []
    n = 0
    for _ in range(_BLOCKS):
        out = bytearray()
        while len(out) < MiB:
            n += 1
            kind = rng.random()
            if kind < 0.7:
                line = f"[{n // 60:05d}.{n % 1000:03d}s] Compiling {rng.choice(mods)} (opt-level=3)"
            elif kind < 0.85:
                line = (f"warning: unused variable `x{rng.randrange(10**4)}` at "
                        f"{rng.choice(mods)}:{rng.randrange(1, 900)}:{rng.randrange(1, 80)}")
            else:
                line = (f"test {rng.choice(mods).replace('/', '::')}::case_{rng.randrange(10**5)}"
                        f" ... ok ({rng.randrange(1, 999)} ms)")
            out += line.encode() + b"\n"
        blocks.append(bytes(out[:MiB]))
    return blocks


def binary_blocks() -> list[bytes]:
    rng = random.Random(16)
    return [rng.randbytes(MiB) for _ in range(_BLOCKS)]


def stream(blocks: list[bytes], mib: int) -> Iterator[bytes]:
    for i in range(mib):
        yield blocks[i % len(blocks)]


class _OneShot:
    """A non-seekable file object over a generator (what ``upload_fileobj`` is given)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = b""

    def read(self, n: int = -1) -> bytes:
        while n < 0 or len(self._buf) < n:
            nxt = next(self._chunks, None)
            if nxt is None:
                break
            self._buf += nxt
        if n < 0:
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def seekable(self) -> bool:
        return False


def _disk_writes() -> int:
    with open("/proc/self/io") as fh:
        return int(next(line for line in fh if line.startswith("write_bytes")).split()[1])


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- children --------------------------------------------------------------------------

def child_local(mib: int, workdir: str, what: str) -> dict[str, Any]:
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.config import TransferConfig
    from s3spill.context.policy import SpillPolicy
    from s3spill.spill.spiller import Spiller
    from s3spill.store.local import LocalStore

    blocks = log_blocks()
    base_rss = _rss_mib()
    if what == "floor":
        path = Path(workdir, "floor.bin")
        started = time.perf_counter()
        digest = hashlib.sha256()
        with open(path, "wb") as fh:
            for chunk in stream(blocks, mib):
                digest.update(chunk)
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        took = time.perf_counter() - started
        path.unlink()
        return {"seconds": took, "rss": _rss_mib(), "base_rss": base_rss}
    config = TransferConfig(artifact_compression="none" if what == "write-raw" else "auto")
    store = LocalStore(Path(workdir, what), config)
    arts = ArtifactStore(store, config, session_id="bench")
    started = time.perf_counter()
    if what == "spiller":
        spiller = Spiller(arts, "bench", SpillPolicy(store_deadline=60.0), journal=None)
        result = spiller.externalize(stream(blocks, mib), "bash", "c1")
        ref = result.artifact
        spiller.close()
    else:
        ref = arts.write("bench", stream(blocks, mib), "bash")
    took = time.perf_counter() - started
    assert ref is not None, "the spill degraded"
    index = arts.index(ref.source_id)
    return {"seconds": took, "rss": _rss_mib(), "base_rss": base_rss,
            "size": index.size_bytes, "stored": index.stored_size}


def child_s3(mib: int, endpoint: str, what: str, kind: str) -> dict[str, Any]:
    import boto3

    from s3spill.artifacts.store import ArtifactStore
    from s3spill.context.policy import SpillPolicy
    from s3spill.spill.spiller import Spiller
    from s3spill.store.s3.store import S3Store

    blocks = log_blocks() if kind == "text" else binary_blocks()
    session = boto3.session.Session()  # credentials and region: EmbeddedS3.env()
    disk0 = _disk_writes()
    base_rss = _rss_mib()
    started = time.perf_counter()
    out: dict[str, Any] = {}
    if what == "boto3":
        client = session.client("s3", endpoint_url=endpoint)
        client.upload_fileobj(_OneShot(stream(blocks, mib)), BUCKET, f"raw/{kind}/{time.time_ns()}")
    else:
        store = S3Store(BUCKET, f"spill/{kind}/{time.time_ns()}", endpoint_url=endpoint,
                        session=session)
        arts = ArtifactStore(store, session_id="bench")
        spiller = Spiller(arts, "bench", SpillPolicy(store_deadline=120.0), journal=None,
                          min_upload_rate=1 * MiB)
        result = spiller.externalize(stream(blocks, mib), "bash", "c1")
        spiller.close()
        assert result.artifact is not None, result.degraded_reason
        index = arts.index(result.artifact.source_id)
        out.update(size=index.size_bytes, stored=index.stored_size, codec=index.codec)
    out.update(seconds=time.perf_counter() - started, rss=_rss_mib(), base_rss=base_rss,
               disk_bytes=_disk_writes() - disk0)
    return out


def child_page(mib: int, workdir: str, endpoint: str | None) -> dict[str, Any]:
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.keys import index_key
    from s3spill.store.base import ObjectStore
    from s3spill.store.local import LocalStore

    if endpoint:
        import boto3

        from s3spill.store.s3.store import S3Store

        session = boto3.session.Session()
        inner: ObjectStore = S3Store(BUCKET, f"page/{time.time_ns()}", endpoint_url=endpoint,
                                     session=session)
    else:
        inner = LocalStore(Path(workdir, "page"))
    ref = ArtifactStore(inner, session_id="bench").write("bench", stream(log_blocks(), mib), "bash")

    # The metering wrapper: every read of body or index bytes goes through ``get``.
    fetched: list[tuple[str, int]] = []
    real_get = inner.get

    def get(key: str, byte_range: Any = None) -> bytes:
        data = real_get(key, byte_range)
        fetched.append((key, len(data)))
        return data

    inner.get = get  # type: ignore[method-assign]
    arts = ArtifactStore(inner, session_id="bench")
    started = time.perf_counter()
    page = arts.read_page(ref.source_id, offset=ref.line_count // 2, limit=2000, max_chars=400_000)
    took = time.perf_counter() - started
    index = arts.index(ref.source_id)
    index_bytes = len(real_get(index_key(index.session_hash, index.name)))
    frames = sorted(index.stored_range(k)[1] - index.stored_range(k)[0]
                    for k in range(index.chunk_count))
    page_bytes = page.byte_end - page.byte_start
    return {"seconds": took, "fetched": sum(n for _, n in fetched), "requests": len(fetched),
            "page_bytes": page_bytes, "index_bytes": index_bytes, "largest_frame": frames[-1],
            "bound": page_bytes + 2 * frames[-1] + index_bytes, "lines": len(page.lines),
            "size": index.size_bytes, "stored": index.stored_size}


# -- parent ----------------------------------------------------------------------------

def run_child(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--child", *args], check=True,
                         capture_output=True, env=env, timeout=3600).stdout
    return dict(json.loads(out.decode().strip().splitlines()[-1]))


def case_local(mib: int, repeat: int) -> None:
    print(f"\n## local store, {mib} MiB build log (median of {repeat})")
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMPDIR")) as work:
        rows: dict[str, list[dict[str, Any]]] = {"floor": [], "write": [], "spiller": [],
                                                 "write-raw": []}
        for _ in range(repeat):
            for what in rows:  # interleaved, so load on the machine hits all alike
                rows[what].append(run_child(["local", str(mib), work, what]))
    med = {w: statistics.median(r["seconds"] for r in rs) for w, rs in rows.items()}
    print("| what | seconds | MiB/s | floor / this | peak RSS MiB (interpreter + imports) |")
    print("|---|---:|---:|---:|---:|")
    for what, label in (("floor", "SHA-256 + write + fsync (floor)"),
                        ("write", "ArtifactStore.write (zstd, the default for text)"),
                        ("spiller", "Spiller.externalize (zstd)"),
                        ("write-raw", "ArtifactStore.write, compression off")):
        rss = max(r["rss"] for r in rows[what])
        base = min(r["base_rss"] for r in rows[what])
        print(f"| {label} | {med[what]:.2f} | {mib / med[what]:.0f} | "
              f"{med['floor'] / med[what]:.2f} | {rss:.0f} ({base:.0f}) |")
    r = rows["write"][0]
    print(f"stored {r['stored'] / MiB:.1f} MiB for {r['size'] / MiB:.0f} MiB: "
          f"{r['size'] / r['stored']:.1f}x smaller")


def case_s3(mib: int, repeat: int, kinds: list[str]) -> None:
    from s3spill.testing import EmbeddedS3

    with EmbeddedS3() as s3:
        s3.create_bucket(BUCKET)
        env = dict(os.environ, **s3.env())
        for kind in kinds:
            print(f"\n## S3 (moto server), {mib} MiB {kind} (median of {repeat})")
            rows: dict[str, list[dict[str, Any]]] = {"boto3": [], "spiller": []}
            for _ in range(repeat):
                for what in rows:
                    rows[what].append(run_child(["s3", str(mib), s3.endpoint_url, what, kind], env))
            med = {w: statistics.median(r["seconds"] for r in rs) for w, rs in rows.items()}
            print("| what | seconds | this / boto3 | local disk written | peak RSS MiB |")
            print("|---|---:|---:|---:|---:|")
            for what, label in (("boto3", "boto3 upload_fileobj (baseline)"),
                                ("spiller", "Spiller.externalize")):
                disk = max(r["disk_bytes"] for r in rows[what])
                rss = max(r["rss"] for r in rows[what])
                print(f"| {label} | {med[what]:.2f} | {med[what] / med['boto3']:.2f}x | "
                      f"{disk:,} B | {rss:.0f} |")
            r = rows["spiller"][0]
            print(f"codec {r['codec']}: stored {r['stored'] / MiB:.1f} MiB for "
                  f"{r['size'] / MiB:.0f} MiB ({r['size'] / r['stored']:.1f}x)")


def case_page(mib: int, with_s3: bool) -> None:
    print(f"\n## a 2,000-line page in the middle of a {mib} MiB artifact")
    print("| store | fetched B | bound (page + 2 frames + index) B | page B | index B |"
          " largest frame B | requests | ms | stored |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    targets: list[tuple[str, str | None]] = [("local", None)]
    with tempfile.TemporaryDirectory() as work:
        if with_s3:
            from s3spill.testing import EmbeddedS3

            s3 = EmbeddedS3()
            s3.start()
            s3.create_bucket(BUCKET)
            targets.append(("moto server", s3.endpoint_url))
        try:
            for name, endpoint in targets:
                env = dict(os.environ, **(s3.env() if endpoint else {}))
                r = run_child(["page", str(mib), work, endpoint or ""], env)
                ok = "ok" if r["fetched"] <= r["bound"] else "OVER"
                print(f"| {name} | {r['fetched']:,} | {r['bound']:,} ({ok}) | {r['page_bytes']:,} |"
                      f" {r['index_bytes']:,} | {r['largest_frame']:,} | {r['requests']} |"
                      f" {r['seconds'] * 1000:.1f} | {r['stored'] / MiB:.1f} MiB of"
                      f" {r['size'] / MiB:.0f} MiB |")
        finally:
            if with_s3:
                s3.stop()


def case_cli(repeat: int) -> None:
    print(f"\n## `s3spill read` of a 2,000-line page, whole process (median of {repeat})")
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.store.local import LocalStore

    with tempfile.TemporaryDirectory() as work:
        store = LocalStore(Path(work, "store"))
        data = b"".join(b"%07d a line of ordinary build output with some words in it\n" % i
                        for i in range(20_000))[: 1 * MiB]
        sid = ArtifactStore(store, session_id="bench").write("bench", data, "bash").source_id
        env = dict(os.environ, S3SPILL_SESSION="bench")
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import pydantic' + one model": [
                sys.executable, "-c", "from pydantic import BaseModel\nclass A(BaseModel):\n x: int"],
            "s3spill read (2,000 lines)": [sys.executable, "-m", "s3spill", "--store",
                                           str(Path(work, "store")), "read", sid, "--offset",
                                           "5000", "--limit", "2000"],
        }
        times: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(repeat):
            for name, argv in commands.items():
                started = time.perf_counter()
                subprocess.run(argv, check=True, capture_output=True, env=env)
                times[name].append(time.perf_counter() - started)
    print("| process | median ms | min ms |")
    print("|---|---:|---:|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts) * 1000:.0f} | {min(ts) * 1000:.0f} |")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, rest = sys.argv[2], sys.argv[3:]
        if kind == "local":
            result = child_local(int(rest[0]), rest[1], rest[2])
        elif kind == "s3":
            result = child_s3(int(rest[0]), rest[1], rest[2], rest[3])
        else:
            result = child_page(int(rest[0]), rest[1], rest[2] or None)
        print(json.dumps(result))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="local,s3,page,cli")
    parser.add_argument("--mib", type=int, default=200, help="size of the write cases")
    parser.add_argument("--page-mib", type=int, default=500, help="artifact size of the page case")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kinds", default="text,binary", help="S3 case contents")
    args = parser.parse_args()
    cases = args.cases.split(",")
    print(f"# write_path_bench: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    if "local" in cases:
        case_local(args.mib, args.repeat)
    if "s3" in cases:
        case_s3(args.mib, args.repeat, args.kinds.split(","))
    if "page" in cases:
        case_page(args.page_mib, with_s3="s3" in cases)
    if "cli" in cases:
        case_cli(max(5, args.repeat * 3))


if __name__ == "__main__":
    main()
