"""Context side: externalize 1 MiB / 100 MiB / 1 GiB outputs through the Spiller.

For each size and store (the local directory store, and the S3 store against an
embedded moto server on 127.0.0.1) a *child process* streams a log-like output
(1 MiB blocks of numbered lines, produced by a generator, so the producer holds one
block) through ``Spiller.externalize`` and reports wall time, throughput and its own
peak RSS (``ru_maxrss``). The floor is a plain SHA-256 pass over the same bytes from
the same generator, timed in the same child: the Spiller cannot be faster than
hashing once, and the ratio says how far above that floor it is. A second baseline,
``ArtifactStore.write`` alone on the same stream (run after the peak RSS is taken),
shows how much of the time is the store's own (its spool and the backend write).

A fresh child per case keeps peak RSS honest (nothing left over from a bigger case).
The acceptance line: the 1 GiB cases must stay under 200 MiB of peak RSS.

    .venv/bin/python benchmarks/context_bench.py                # all cases
    .venv/bin/python benchmarks/context_bench.py --sizes 1,100  # MiB
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MiB = 1024 * 1024
BUCKET = "s3spill-bench"
RSS_LIMIT_MIB = 200


def block() -> bytes:
    """1 MiB of numbered log lines (no error words, so the salient scan runs to the end)."""
    out = bytearray()
    i = 0
    while len(out) < MiB:
        line = f"{i:08d} INFO worker-{i % 17:02d} processed batch {i * 7919 % 100_000} in {i % 97} ms\n"
        out += line.encode()
        i += 1
    return bytes(out[:MiB])


def stream(chunk: bytes, size_mib: int) -> Iterator[bytes]:
    for _ in range(size_mib):
        yield chunk


def child(size_mib: int, store_kind: str, endpoint: str | None, workdir: str) -> dict[str, object]:
    """One case, in this (fresh) process; prints one JSON line."""
    from s3spill.config import TransferConfig
    from s3spill.context.policy import SpillPolicy
    from s3spill.spill.spiller import Spiller
    from s3spill.store.local import LocalStore
    from s3spill.store.s3.store import S3Store

    data = block()
    started = time.perf_counter()
    digest = hashlib.sha256()
    for chunk in stream(data, size_mib):
        digest.update(chunk)
    sha_seconds = time.perf_counter() - started

    config = TransferConfig()
    if store_kind == "local":
        store: object = LocalStore(Path(workdir) / "store", config)
    else:
        from s3spill.testing import EmbeddedS3

        store = S3Store(BUCKET, f"bench/{os.getpid()}", config=config, endpoint_url=endpoint,
                        session=EmbeddedS3().session())
    # moto on one thread is far slower than S3; give the upload the time it needs so the
    # case measures a spill, not a degradation (the result's mode is reported).
    policy = SpillPolicy(store_deadline=30.0)
    spiller = Spiller(store, "bench-session", policy, min_upload_rate=4 * MiB)  # type: ignore[arg-type]
    started = time.perf_counter()
    result = spiller.externalize(stream(data, size_mib), "bash", "bench", exit_code=0)
    seconds = time.perf_counter() - started
    spiller.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ok = result.artifact is not None and result.artifact.sha256 == digest.hexdigest()
    # Second baseline: the artifact store alone (no preview, no thread hand-off).
    started = time.perf_counter()
    spiller.artifacts.write("bench-session", stream(data, size_mib), "bash")
    store_seconds = time.perf_counter() - started
    return {
        "size_mib": size_mib, "store": store_kind, "seconds": seconds, "sha_seconds": sha_seconds,
        "store_seconds": store_seconds, "mode": result.mode, "sha_ok": ok,
        "context_chars": len(result.context_text), "peak_rss_mib": peak,
    }


def run_case(size_mib: int, store_kind: str, endpoint: str | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="s3spill-bench-") as workdir:
        cmd = [sys.executable, __file__, "--child", str(size_mib), store_kind, endpoint or "-", workdir]
        env = dict(os.environ, S3SPILL_SPOOL_DIR=workdir)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"case {size_mib} MiB / {store_kind} failed:\n{proc.stderr[-4000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,100,1024", help="comma-separated sizes in MiB")
    parser.add_argument("--stores", default="local,s3", help="comma-separated: local, s3")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        size, kind, endpoint, workdir = args.child
        print(json.dumps(child(int(size), kind, None if endpoint == "-" else endpoint, workdir)))
        return 0

    from s3spill.testing import EmbeddedS3

    sizes = [int(s) for s in args.sizes.split(",")]
    stores = args.stores.split(",")
    rows = []
    with EmbeddedS3() as s3:
        s3.create_bucket(BUCKET)
        for kind in stores:
            for size in sizes:
                row = run_case(size, kind, s3.endpoint_url if kind == "s3" else None)
                rows.append(row)
                print(_format(row), flush=True)
    failed = [r for r in rows if r["size_mib"] == 1024 and float(str(r["peak_rss_mib"])) >= RSS_LIMIT_MIB]
    bad = [r for r in rows if not r["sha_ok"] or r["mode"] != "pointer"]
    print(f"\nacceptance: 1 GiB peak RSS < {RSS_LIMIT_MIB} MiB: {'FAIL' if failed else 'OK'}; "
          f"every case stored and verified: {'FAIL' if bad else 'OK'}")
    return 1 if failed or bad else 0


def _format(row: dict[str, object]) -> str:
    size, secs, sha = int(str(row["size_mib"])), float(str(row["seconds"])), float(str(row["sha_seconds"]))
    return (f"{row['store']:>5} {size:>5} MiB: {secs:7.2f} s  {size / secs:7.1f} MiB/s  "
            f"peak RSS {float(str(row['peak_rss_mib'])):6.1f} MiB  "
            f"sha256 floor {size / sha:7.1f} MiB/s  ratio {secs / sha:6.1f}x  "
            f"store alone {size / float(str(row['store_seconds'])):6.1f} MiB/s  "
            f"mode {row['mode']}  stored sha256 {'ok' if row['sha_ok'] else 'MISMATCH'}")


if __name__ == "__main__":
    raise SystemExit(main())
