"""The floor of a safe local GC plan in Python: the reads its safety steps need, and nothing else (issue 35).

Populates N artifacts as :mod:`benchmarks.costs_gc` does, then times, each alone in this
process with the cyclic collector off, plain-Python loops over the same store that make
only the system calls and hashes a plan that keeps our safety steps cannot skip:

* ``walk``: the plain baseline's walk (``scandir`` of each session's artifacts, one ``stat``
  per body), what :func:`benchmarks.plain.gc_plan` does before it writes its lines;
* ``listing records``: what a conditional delete needs planned, the ETag, size and time of
  body and sidecar: ``lstat`` + ``getxattr`` of each (the local store's listing record);
* ``commit records``: the content digest, from each body's sidecar: ``open`` + ``read`` +
  ``close``, the SHA-256 its trailer names, the record's JSON;
* ``journal``: per session, the manifest and its segments read, each segment's SHA-256 and
  each record's canonical hash (the hash chain), nothing folded;
* the plain baseline's whole plan (:func:`benchmarks.plain.gc_plan`).

Each figure is CPU per artifact (``time.process_time``, best of 3). The sum of the first
four, against the plain plan, says what the safety reads alone cost before any decision
is made or any line written.

    python benchmarks/gc_floor.py --artifacts 2000
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.costs_gc import POPULATE  # noqa: E402
from benchmarks.plain import gc_plan  # noqa: E402


def _sessions(root: Path) -> list[str]:
    base = root / "objects" / "v1" / "sessions"
    return sorted(e.path for e in os.scandir(base))


def walk(root: Path) -> int:
    n = 0
    for session in _sessions(root):
        for entry in os.scandir(f"{session}/artifacts"):
            if not entry.name.endswith(".idx"):
                entry.stat()
                n += 1
    return n


def listing_records(root: Path) -> int:
    n = 0
    for session in _sessions(root):
        for entry in os.scandir(f"{session}/artifacts"):
            os.lstat(entry.path)
            os.getxattr(entry.path, "user.s3s", follow_symlinks=False)
            n += 1
    return n // 2


def commit_records(root: Path) -> int:
    n = 0
    for session in _sessions(root):
        for entry in os.scandir(f"{session}/artifacts"):
            if not entry.name.endswith(".idx"):
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                raw = os.read(fd, 65536)  # a commit record is ~1 KiB (a 1 MiB read costs 27 µs here)
            finally:
                os.close(fd)
            length = int.from_bytes(raw[-16:-8], "big")
            trailer = orjson.loads(raw[-16 - length:-16])
            body = raw[:trailer["size"]]
            if hashlib.sha256(body).hexdigest() != trailer["sha256"]:
                raise SystemExit("damaged record")
            orjson.loads(body)
            n += 1
    return n


def journal(root: Path) -> int:
    records = 0
    for session in _sessions(root):
        paths = [f"{session}/journal/manifest.json"]
        segments = f"{session}/journal/segments"
        paths += [e.path for e in os.scandir(segments)] if os.path.isdir(segments) else []
        for path in paths:
            with open(path, "rb") as fh:
                raw = fh.read()
            length = int.from_bytes(raw[-16:-8], "big")
            body = raw[:len(raw) - 16 - length]
            hashlib.sha256(body).hexdigest()
            for record in orjson.loads(body).get("records", ()):
                rest = {k: v for k, v in record.items() if k != "record_hash"}
                hashlib.sha256(b"s3spill-journal-record\0" + orjson.dumps(rest, option=orjson.OPT_SORT_KEYS))
                records += 1
    return records


def _best(fn: Callable[[], object], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="s3spill-gc-floor-") as tmp:
        root = Path(tmp) / "store"
        env = {k: v for k, v in os.environ.items() if not k.startswith("S3SPILL_")}
        env["PYTHONPATH"] = str(ROOT)
        sessions = max(1, args.artifacts // 100)
        subprocess.run([sys.executable, "-c", POPULATE.format(
            root=str(ROOT), store=str(root), sessions=sessions, per_session=args.artifacts // sessions)],
            env=env, capture_output=True, check=True)
        n = args.artifacts
        gc.disable()
        later = time.time() + 3 * 86400
        steps = {
            "walk (scandir, one stat per body: the plain plan's)": lambda: walk(root),
            "listing records of body and sidecar (lstat + getxattr each)": lambda: listing_records(root),
            "commit records (open, read, close, trailer, SHA-256, JSON)": lambda: commit_records(root),
            "journal (manifest and segments read, SHA-256 each, every record's hash)": lambda: journal(root),
        }
        out = {label: _best(fn) / n * 1e6 for label, fn in steps.items()}
        plain = _best(lambda: gc_plan(str(root), str(Path(tmp) / "plain.plan"), later)) / n * 1e6
        print(json.dumps({"artifacts": n, "load_average": os.getloadavg()}))
        print("| step | CPU per artifact |\n|---|---|")
        for label, us in out.items():
            print(f"| {label} | {us:.1f} µs |")
        print(f"| **the safety reads together** | **{sum(out.values()) - next(iter(out.values())):.1f} µs** "
              "(walk left out: the listing records replace its stat) |")
        print(f"| plain plan, whole (walk, manifest, JSON lines) | {plain:.1f} µs |")


if __name__ == "__main__":
    main()
