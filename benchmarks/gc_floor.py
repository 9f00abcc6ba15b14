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

The apply's floor (the same population, a fresh copy per round; per *deleted* artifact,
every unreferenced one, as both applies delete) makes, per session, the system calls
and hashes our apply's safety steps cannot skip, in the plainest Python, and times each:

* ``journal read``: the session's history re-read and its hashes checked (apply decides on
  fresh facts, not the plan's);
* ``fence`` and ``finish``: two durable compare-and-swap writes of the journal, each a
  record per artifact (its canonical JSON and chained SHA-256), a segment created once
  and a manifest replaced (a temporary created, written and fsynced, then linked or
  renamed, and its directory fsynced: four fsyncs and two new files per write);
* ``revalidation``: the listing record of each body after the fence (``lstat`` + ``getxattr``);
* ``commit records``: each body's record re-read (an unsigned plan's digest check);
* ``conditional deletes``: body, then sidecar, each under its lock stripe (``flock``),
  opened without following links, its ETag from ``fgetxattr`` after ``fstat``, ``unlinkat``,
  one directory fsync per batch;

and the plain baseline's whole apply (:func:`benchmarks.plain.gc_apply`: two unlinks a
line, no fsync) on another copy.

    python benchmarks/gc_floor.py --artifacts 2000
"""

from __future__ import annotations

import argparse
import fcntl
import gc
import hashlib
import json
import os
import shutil
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
from benchmarks.plain import gc_apply, gc_plan  # noqa: E402


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
    return sum(journal_of(session) for session in _sessions(root))


_XATTR = "user.s3s"
_APPLY_STEPS = ("journal read", "fence (CONDEMNED records, segment + manifest, 4 fsyncs)",
                "revalidation (lstat + getxattr of each body)", "commit records re-read",
                "conditional deletes of bodies and sidecars (+ a directory fsync)",
                "finish (DELETED records, segment + manifest, 4 fsyncs)")


def _durable_write(root: Path, path: str, body: bytes, replace: bool) -> None:
    """A temporary created, written, fsynced, then linked (create-once) or renamed onto
    ``path``; the directory fsynced: what each half of a journal write costs at least."""
    tmp = f"{root}/tmp/{os.urandom(12).hex()}.part"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    if replace:
        os.replace(tmp, path)
    else:
        os.link(tmp, path)
        os.unlink(tmp)
    fd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _journal_write(root: Path, session: str, event: str, names: list[str], head: str, n: int) -> str:
    """One compare-and-swap's worth of writing: a record per name, chained, in a new segment
    and a replaced manifest."""
    shash = os.path.basename(session)
    records = []
    for name in names:
        record = {"schema_version": 1, "kind": "journal_record", "session_hash": shash, "sequence": n,
                  "prev_hash": head, "event": event, "at": "2026-12-03T00:00:00Z",
                  "source_id": f"artifact:{shash}:{name}:{'0' * 16}", "sha256": "0" * 64, "plan_id": "floor"}
        head = hashlib.sha256(b"s3spill-journal-record\0"
                              + orjson.dumps(record, option=orjson.OPT_SORT_KEYS)).hexdigest()
        records.append({**record, "record_hash": head})
        n += 1
    body = orjson.dumps({"records": records}, option=orjson.OPT_SORT_KEYS)
    _durable_write(root, f"{session}/journal/segments/floor-{event}.json", body, replace=False)
    manifest = orjson.dumps({"head_hash": head, "next_sequence": n, "segments": [
        hashlib.sha256(body).hexdigest()]}, option=orjson.OPT_SORT_KEYS)
    _durable_write(root, f"{session}/journal/manifest.json", manifest, replace=True)
    return head


def _delete_if_match(locks: dict[int, int], directory: int, name: str) -> None:
    """A conditional delete's system calls: the lock stripe, the object opened without
    following a link, its size and time, its ETag from the record, ``unlinkat``."""
    stripe = hashlib.sha256(name.encode()).digest()[0] % 64
    lock = locks[stripe]
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
        try:
            os.fstat(fd)
            os.getxattr(fd, _XATTR)
        finally:
            os.close(fd)
        os.unlink(name, dir_fd=directory)
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)


def apply_floor(root: Path) -> tuple[int, dict[str, float]]:
    """Every unreferenced artifact deleted with the safety steps' system calls; CPU per step."""
    spent = dict.fromkeys(_APPLY_STEPS, 0.0)
    locks = {i: os.open(f"{root}/locks/{i:02d}.lock", os.O_RDWR | os.O_CREAT, 0o600) for i in range(64)}
    deleted = 0
    clock = time.process_time
    try:
        for session in _sessions(root):
            started = clock()
            journal_of(session)
            t1 = clock()
            with open(f"{session}/journal/plain-manifest.json", "rb") as fh:
                referenced = set(json.load(fh)["referenced"])
            names = sorted(e.name for e in os.scandir(f"{session}/artifacts")
                           if not e.name.endswith(".idx") and e.name not in referenced)
            head = _journal_write(root, session, "CONDEMNED", names, "0" * 64, 1_000_000)
            t2 = clock()
            artifacts = f"{session}/artifacts"
            for name in names:
                os.lstat(f"{artifacts}/{name}")
                os.getxattr(f"{artifacts}/{name}", _XATTR, follow_symlinks=False)
            t3 = clock()
            for name in names:
                fd = os.open(f"{artifacts}/{name}.idx", os.O_RDONLY | os.O_NOFOLLOW)
                try:
                    raw = os.read(fd, 65536)
                finally:
                    os.close(fd)
                length = int.from_bytes(raw[-16:-8], "big")
                trailer = orjson.loads(raw[-16 - length:-16])
                hashlib.sha256(raw[:trailer["size"]]).hexdigest()
                orjson.loads(raw[:trailer["size"]])
            t4 = clock()
            directory = os.open(artifacts, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                for name in names:
                    _delete_if_match(locks, directory, name)
                for name in names:
                    _delete_if_match(locks, directory, f"{name}.idx")
                os.fsync(directory)
            finally:
                os.close(directory)
            t5 = clock()
            _journal_write(root, session, "DELETED", names, head, 1_000_000 + len(names))
            t6 = clock()
            for step, (a, b) in zip(_APPLY_STEPS, ((started, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5),
                                                   (t5, t6)), strict=True):
                spent[step] += b - a
            deleted += len(names)
    finally:
        for fd in locks.values():
            os.close(fd)
    return deleted, spent


def journal_of(session: str) -> int:
    """:func:`journal` of one session."""
    records = 0
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


def _plain_apply_plan(root: Path, out: Path) -> None:
    """The plain apply's plan of the same deletions: a line per unreferenced artifact."""
    with open(out, "w") as fh:
        for session in _sessions(root):
            with open(f"{session}/journal/plain-manifest.json", "rb") as m:
                referenced = set(json.load(m)["referenced"])
            for e in sorted(os.scandir(f"{session}/artifacts"), key=lambda e: e.name):
                if not e.name.endswith(".idx") and e.name not in referenced:
                    fh.write(json.dumps({"path": e.path, "sidecar": e.path + ".idx"}) + "\n")


def _apply_floors(root: Path, tmp: Path, rounds: int = 3) -> None:
    """Best of ``rounds`` of the apply floor and of the plain apply, each on a fresh copy."""
    best: dict[str, float] = {}
    plain_best = float("inf")
    deleted = 1
    for i in range(rounds):
        copy = tmp / f"apply-{i}"
        subprocess.run(["cp", "-a", str(root), str(copy)], check=True)
        deleted, spent = apply_floor(copy)
        for step, cpu in spent.items():
            best[step] = min(best.get(step, float("inf")), cpu)
        shutil.rmtree(copy)
        subprocess.run(["cp", "-a", str(root), str(copy)], check=True)
        _plain_apply_plan(copy, tmp / "plain-apply.jsonl")
        started = time.process_time()
        gc_apply(str(copy), str(tmp / "plain-apply.jsonl"))
        plain_best = min(plain_best, time.process_time() - started)
        shutil.rmtree(copy)
    print(f"\n| apply step ({deleted:,} deleted) | CPU per deleted artifact |\n|---|---|")
    for step, cpu in best.items():
        print(f"| {step} | {cpu / deleted * 1e6:.1f} µs |")
    print(f"| **the safety steps together** | **{sum(best.values()) / deleted * 1e6:.1f} µs** |")
    print(f"| plain apply, whole (two unlinks a line, no fsync) | {plain_best / deleted * 1e6:.1f} µs |")


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
        _apply_floors(root, Path(tmp))


if __name__ == "__main__":
    main()
