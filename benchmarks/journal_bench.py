"""Lease journal at scale: 10,000 transactions in one session.

Builds the journal through the real API (publish + remove, some leases left live, some
pending) on the local backend, then measures what a fresh process pays to trust it:

* manifest size (final and largest seen) against the 256 KiB budget;
* ``verify()`` — fold every record of every segment from scratch, check hashes, chain,
  intents, state machine and claim view — against a floor that only reads the same
  objects, parses them and SHA-256s every record (no checks at all);
* the same verify against S3 (moto in-process) after copying the objects there;
* write cost per transaction while building (three CAS writes per cycle).

Run: ``python benchmarks/journal_bench.py [--transactions 10000]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from s3spill import keys
from s3spill.config import TransferConfig
from s3spill.keys import SourceId
from s3spill.leases.journal import LeaseJournal
from s3spill.models import ArtifactRetentionClaim
from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore

SESSION = "journal-bench"
BUDGET = 256 * 1024


def artifact(store: ObjectStore) -> ArtifactRetentionClaim:
    shash = keys.session_hash(SESSION)
    name = keys.new_artifact_name("bash")
    data = os.urandom(1024)
    store.put_if_absent(keys.artifact_key(shash, name), data)
    sha = hashlib.sha256(data).hexdigest()
    return ArtifactRetentionClaim(source_id=str(SourceId(shash, name, sha[:16])), sha256=sha)


def build(store: ObjectStore, n: int, live_every: int, pending: int) -> tuple[float, int]:
    journal = LeaseJournal(store, SESSION)
    claims = [artifact(store) for _ in range(16)]
    largest = 0
    started = time.perf_counter()
    for i in range(n):
        txid = f"tx-{i:06d}"
        claim = claims[i % len(claims)]
        if i >= n - pending:
            journal.prepare(claim, txid)  # a publisher that died after PREPARED
        else:
            journal.publish_reference(claim, lambda: None, txid)
            if i % live_every:
                journal.remove_reference(txid, lambda: None)
        largest = max(largest, journal._manifest_bytes)
        if (i + 1) % 2000 == 0:
            print(f"  built {i + 1} transactions, manifest {journal._manifest_bytes} bytes", flush=True)
    return time.perf_counter() - started, largest


def floor(store: ObjectStore) -> float:
    """Read manifest + every segment, parse, SHA-256 each record: the cost without any checks."""
    started = time.perf_counter()
    shash = keys.session_hash(SESSION)
    doc = orjson.loads(store.get(keys.manifest_key(shash)))
    bodies = [store.get(keys.segment_key(shash, r["first_sequence"], r["last_sequence"], r["sha256"]))
              for r in doc["segments"]]
    for records in [doc["records"], *(orjson.loads(b)["records"] for b in bodies)]:
        for raw in records:
            hashlib.sha256(orjson.dumps(raw, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return time.perf_counter() - started


def timed_verify(store: ObjectStore, repeat: int) -> tuple[list[float], int]:
    times, records = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        report = LeaseJournal(store, SESSION).verify()  # a fresh process's view: nothing cached
        times.append(time.perf_counter() - started)
        records = report.records
    return times, records


def copy_to_s3(src: LocalStore) -> tuple[float, int]:
    from moto import mock_aws

    from s3spill.store.s3.store import S3Store

    with mock_aws():
        s3 = S3Store("journal-bench", "bench", config=TransferConfig())
        s3.client.create_bucket(Bucket="journal-bench")
        prefix = keys.session_prefix(keys.session_hash(SESSION))
        objects = 0
        for info in src.list(prefix):
            s3.put_if_absent(info.key, src.get(info.key))
            objects += 1
        times, _ = timed_verify(s3, 3)
        return statistics.median(times), objects


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=10_000)
    parser.add_argument("--live-every", type=int, default=100, help="every Nth lease stays committed")
    parser.add_argument("--pending", type=int, default=10, help="leases left PREPARED at the end")
    parser.add_argument("--dir", default="/dev/shm" if Path("/dev/shm").is_dir() else None,
                        help="where the local store lives (default: tmpfs when there is one)")
    parser.add_argument("--no-s3", action="store_true", help="skip the verify on in-process moto")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        store = LocalStore(Path(tmp) / "store")
        print(f"building {args.transactions} transactions (local store in {tmp}) ...", flush=True)
        seconds, largest = build(store, args.transactions, args.live_every, args.pending)
        view = LeaseJournal(store, SESSION).view()
        times, records = timed_verify(store, 5)
        base = min(floor(store) for _ in range(3))
        best, median = min(times), statistics.median(times)
        print()
        print(f"transactions          {args.transactions} ({len(view.transactions)} live, "
              f"{len(view.pending_transaction_ids)} pending)")
        print(f"records               {records} in {view.segments} segments + "
              f"{view.recent_records} in the manifest")
        print(f"manifest              {view.manifest_bytes} bytes final, {largest} largest "
              f"({largest / BUDGET:.0%} of the 256 KiB budget)")
        print(f"build                 {seconds:.1f} s, {seconds / args.transactions * 1000:.2f} ms "
              "per transaction (publish + remove: 3 CAS writes)")
        print(f"verify (local)        {median:.3f} s median, {best:.3f} s best of {len(times)} "
              f"({median / records * 1e6:.1f} us per record)")
        print(f"floor: read + hash    {base:.3f} s -> verify costs {median / base:.1f}x the floor")
        if not args.no_s3:
            s3_median, objects = copy_to_s3(store)
            print(f"verify (moto S3)      {s3_median:.3f} s median over {objects} objects")
        load = os.getloadavg()[0]
        print(f"load average          {load:.2f} on {os.cpu_count()} cores while measuring")
        ok = largest < BUDGET and median < 1.0
        met = {True: "met", False: "MISSED"}
        print(f"goals                 manifest < 256 KiB: {met[largest < BUDGET]}; "
              f"verify < 1 s: {met[median < 1.0]}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
