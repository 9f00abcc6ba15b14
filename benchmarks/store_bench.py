"""Streamed writes through S3Store vs. a raw boto3 upload of the same bytes.

Each case runs in its own child process so that its peak RSS (``ru_maxrss`` from
``wait4``) is the client's alone; the S3 server (an EmbeddedS3, moto behind werkzeug's
single-threaded server) is another process and is not counted. The body is a
non-seekable stream in both cases: S3Store gets it as a file-like object (it hashes
and spools it, then uploads one part at a time), boto3 gets it via ``upload_fileobj``
(s3transfer's managed upload with its default 8 MiB parts and 10 threads).

Usage: python benchmarks/store_bench.py [--sizes 10MB,100MB,1GiB] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = {"10MB": 10 * 10**6, "100MB": 100 * 10**6, "1GiB": 1 << 30}
BUCKET = "bench"
BLOCK = os.urandom(1 << 20)


class PatternStream:
    """A one-shot, non-seekable stream of ``size`` bytes (a random 1 MiB block, rotated)."""

    def __init__(self, size: int) -> None:
        self.remaining = size
        self.offset = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = self.remaining
        n = min(n, self.remaining)
        out = bytearray()
        while len(out) < n:
            start = self.offset % len(BLOCK)
            take = min(n - len(out), len(BLOCK) - start)
            out += BLOCK[start : start + take]
            self.offset += take
        self.remaining -= n
        return bytes(out)


def child(method: str, size: int, endpoint: str, key: str) -> None:
    """Upload one stream and print timing as JSON (RSS is read by the parent via wait4)."""
    from s3spill.store.s3.store import S3Store
    from s3spill.testing import EmbeddedS3

    client = EmbeddedS3().session().client("s3", endpoint_url=endpoint)  # throwaway credentials
    started = time.perf_counter()
    if method == "s3store":
        store = S3Store(BUCKET, "bench", client=client)
        store.put_if_absent(key, PatternStream(size))
        full = store.full_key(key)
    elif method == "boto3":
        full = f"bench/{key}"
        client.upload_fileobj(PatternStream(size), BUCKET, full)
    elif method == "idle":  # imports and a client, no upload: the floor of both
        full = ""
    else:
        raise SystemExit(f"unknown method {method}")
    seconds = time.perf_counter() - started
    if full:
        stored = client.head_object(Bucket=BUCKET, Key=full)["ContentLength"]
        assert stored == size, (stored, size)
        client.delete_object(Bucket=BUCKET, Key=full)
    print(json.dumps({"seconds": seconds}))


def run_case(method: str, size: int, endpoint: str, key: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", method, str(size), endpoint, key],
        stdout=subprocess.PIPE, env=env,
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{method} {size} failed with {proc.returncode}")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    result["peak_rss_mib"] = usage.ru_maxrss / 1024  # Linux: kilobytes
    return result


def server_hwm_mib(pid: int | None) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10MB,100MB,1GiB",
                        help=f"comma-separated, from {', '.join(SIZES)}")
    parser.add_argument("--repeat", type=int, default=1, help="runs per case (best time kept)")
    args = parser.parse_args()

    from s3spill.testing import EmbeddedS3

    with EmbeddedS3() as s3:
        s3.create_bucket(BUCKET)
        idle = run_case("idle", 0, s3.endpoint_url, "idle")
        print(f"client floor (python + boto3 + s3spill imported, one client): "
              f"{idle['peak_rss_mib']:.0f} MiB peak RSS")
        header = (f"{'size':>6}  {'S3Store s':>9}  {'boto3 s':>8}  {'time ratio':>10}  "
                  f"{'S3Store RSS':>11}  {'boto3 RSS':>9}")
        print(header)
        for name in args.sizes.split(","):
            size = SIZES[name.strip()]
            best: dict[str, dict[str, Any]] = {}
            for run in range(args.repeat):
                for method in ("s3store", "boto3"):
                    result = run_case(method, size, s3.endpoint_url, f"{method}-{name}-{run}")
                    prev = best.get(method)
                    if prev is None or result["seconds"] < prev["seconds"]:
                        best[method] = {**result, "peak_rss_mib": max(
                            result["peak_rss_mib"], prev["peak_rss_mib"] if prev else 0)}
            ours, raw = best["s3store"], best["boto3"]
            print(f"{name:>6}  {ours['seconds']:9.2f}  {raw['seconds']:8.2f}  "
                  f"{ours['seconds'] / raw['seconds']:9.2f}x  "
                  f"{ours['peak_rss_mib']:8.0f} MiB  {raw['peak_rss_mib']:6.0f} MiB", flush=True)
        hwm = server_hwm_mib(s3.pid)
        if hwm is not None:
            print(f"(moto server process peak RSS, not counted above: {hwm:.0f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
