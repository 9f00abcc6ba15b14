"""GC at scale on the embedded S3 (a moto server over HTTP, one request at a time).

Populates N artifacts (each with its ``.idx`` sidecar) across S sessions, a quarter of
them referenced through the lease journal, then runs ``plan_cleanup`` and
``apply_cleanup`` in a child process (so its peak RSS is GC's alone) with a clock
three days ahead. Prints plan and apply durations, objects per second, requests per
deleted object (goal: at most 2) and the peak RSS of the GC process, plus the same
figures relative to the population baseline (one PUT per object).

    python benchmarks/gc_bench.py                      # 20,000 artifacts, 200 sessions
    python benchmarks/gc_bench.py --artifacts 2000 --sessions 20
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from s3spill import keys  # noqa: E402
from s3spill.config import TransferConfig  # noqa: E402
from s3spill.gc.apply import apply_cleanup  # noqa: E402
from s3spill.gc.metered_store import MeteredStore  # noqa: E402
from s3spill.gc.models import CleanupPolicy, CleanupScope  # noqa: E402
from s3spill.gc.plan import plan_cleanup  # noqa: E402
from s3spill.leases.journal import LeaseJournal  # noqa: E402
from s3spill.models import ArtifactRetentionClaim  # noqa: E402
from s3spill.testing import EmbeddedS3  # noqa: E402

BUCKET = "gc-bench"


def populate(s3: EmbeddedS3, artifacts: int, sessions: int, workers: int) -> dict[str, float]:
    store = s3.store(BUCKET, "bench")
    per_session = artifacts // sessions

    def one_session(i: int) -> int:
        sid = f"bench-session-{i}"
        shash = keys.session_hash(sid)
        claims = []
        for j in range(per_session):
            name = keys.new_artifact_name("bash")
            body = (f"session {i} artifact {j}\n" * 40).encode()
            put = store.put_if_absent(keys.artifact_key(shash, name), body)
            store.put_if_absent(keys.index_key(shash, name), b'{"lines":[]}')
            if j % 4 == 0:
                claims.append(ArtifactRetentionClaim(
                    source_id=str(keys.SourceId(shash, name, put.sha256[:16])), sha256=put.sha256))
        journal = LeaseJournal(store, sid)
        for k, claim in enumerate(claims):
            journal.publish_reference(claim, lambda: None, transaction_id=f"tx-{i}-{k}")
        return per_session

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        total = sum(pool.map(one_session, range(sessions)))
    elapsed = time.monotonic() - started
    return {"artifacts": total, "populate_seconds": round(elapsed, 1),
            "populate_objects_per_second": round(2 * total / elapsed, 1)}


def run_gc(endpoint: str, concurrency: int) -> dict[str, object]:
    """The GC half, in its own process: plan, apply, figures."""
    s3 = EmbeddedS3()
    s3.endpoint_url = endpoint
    store = s3.store(BUCKET, "bench", config=TransferConfig(max_concurrency=concurrency))
    later = datetime.now(UTC) + timedelta(days=3)
    policy = CleanupPolicy(dry_run=False, max_deletions=None)
    with tempfile.TemporaryDirectory() as tmp:
        meter = MeteredStore(store)
        t0 = time.monotonic()
        plan = plan_cleanup(meter, CleanupScope(), policy, out=Path(tmp, "plan.jsonl"), now=later,
                            config=TransferConfig(max_concurrency=concurrency))
        plan_seconds = time.monotonic() - t0
        plan_requests = dict(meter.requests)
        rss_after_plan = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t1 = time.monotonic()
        report = apply_cleanup(store, plan, now=lambda: later,
                               config=TransferConfig(max_concurrency=concurrency))
        apply_seconds = time.monotonic() - t1
    deleted_artifacts = report.counts.get("deleted", 0)
    deleted_objects = deleted_artifacts * 2  # each artifact goes with its sidecar
    apply_requests = sum(report.requests.values())
    return {
        "entries": plan.footer.entries,
        "plan_counts": plan.footer.counts,
        "plan_seconds": round(plan_seconds, 2),
        "plan_objects_per_second": round(2 * plan.footer.entries / plan_seconds, 1),
        "plan_requests": plan_requests,
        "apply_counts": report.counts,
        "apply_seconds": round(apply_seconds, 2),
        "apply_deleted_objects_per_second": round(deleted_objects / apply_seconds, 1),
        "apply_requests": report.requests,
        "requests_per_deleted_object": round(apply_requests / max(1, deleted_objects), 3),
        "requests_per_deleted_artifact": round(apply_requests / max(1, deleted_artifacts), 3),
        "peak_rss_mib_after_plan": round(rss_after_plan / 1024, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=int, default=20_000)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--workers", type=int, default=8, help="population threads")
    parser.add_argument("--concurrency", type=int, default=4, help="GC sessions in parallel")
    parser.add_argument("--gc-only", metavar="ENDPOINT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.gc_only:
        print(json.dumps(run_gc(args.gc_only, args.concurrency)))
        return
    with EmbeddedS3() as s3:
        s3.create_bucket(BUCKET)
        figures: dict[str, object] = populate(s3, args.artifacts, args.sessions, args.workers)
        print(f"populated: {json.dumps(figures)}", flush=True)
        proc = subprocess.run(
            [sys.executable, __file__, "--gc-only", s3.endpoint_url, "--concurrency", str(args.concurrency)],
            capture_output=True, text=True, check=True, timeout=3600)
        gc = json.loads(proc.stdout.strip().splitlines()[-1])
        figures.update(gc)
    base = float(figures["populate_objects_per_second"])  # type: ignore[arg-type]
    figures["apply_vs_populate_rate"] = round(
        float(figures["apply_deleted_objects_per_second"]) / base, 2)  # type: ignore[arg-type]
    print(json.dumps(figures, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
