"""GC at scale on the embedded S3 (a moto server over HTTP, one request at a time).

Populates N artifacts across S sessions as the artifact store writes them (body + its
``.idx`` commit record; ``--legacy-bodies``: raw bodies with their SHA-256 in metadata
and a placeholder sidecar, as before version 2), a quarter of them referenced through
the lease journal, then runs ``plan_cleanup`` and ``apply_cleanup`` in a child process
(so its peak RSS is GC's alone) with a clock three days ahead.

Request counts are what the boto3 client sent (``s3spill.testing.record_operations``),
so they do not depend on the machine's load; durations do (and are printed anyway).
Printed: requests per artifact for the plan (HEADs, GETs, LISTs), requests per deleted
object for the apply, and, with ``--shards 1,4,16``, the LIST requests each shard of
``gc plan --all --shard K/N`` sends (goal: the N shards together ≈ one full listing).
``--baseline-tree DIR`` first runs the same plan and shard listings with the s3spill of
another checkout (e.g. ``/work/main``) on the same bucket, for before/after in one run.

    python benchmarks/gc_bench.py                      # 20,000 artifacts, 200 sessions
    python benchmarks/gc_bench.py --artifacts 5000 --sessions 50 --shards 1,4,16 \\
        --baseline-tree /work/main
    python benchmarks/gc_bench.py --local --artifacts 2000 --sessions 20
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUCKET = "gc-bench"


def _import_tree(tree: Path) -> None:
    sys.path.insert(0, str(tree))


def populate_session(store: Any, writer: Any, i: int, per_session: int, legacy: bool) -> int:
    """Session ``i``: ``per_session`` artifacts, a quarter of them referenced through the journal.

    ``legacy`` writes version 1 bodies (raw, SHA-256 in metadata) for the baseline tree.
    """
    from s3spill import keys
    from s3spill.leases.journal import LeaseJournal
    from s3spill.models import ArtifactRetentionClaim

    sid = f"bench-session-{i}"
    shash = keys.session_hash(sid)
    claims = []
    for j in range(per_session):
        body = (f"session {i} artifact {j}\n" * 40).encode()
        if legacy:
            name = keys.new_artifact_name("bash")
            put = store.put_if_absent(keys.artifact_key(shash, name), body)
            store.put_if_absent(keys.index_key(shash, name), b'{"lines":[]}')
            assert put.sha256 is not None
            source_id, sha = str(keys.SourceId(shash, name, put.sha256[:16])), put.sha256
        else:
            ref = writer.write(sid, body, "bash")
            source_id, sha = ref.source_id, ref.sha256
        if j % 4 == 0:
            claims.append(ArtifactRetentionClaim(source_id=source_id, sha256=sha))
    journal = LeaseJournal(store, sid)
    for k, claim in enumerate(claims):
        journal.publish_reference(claim, lambda: None, transaction_id=f"tx-{i}-{k}")
    return per_session


def populate(endpoint: str, artifacts: int, sessions: int, workers: int, legacy: bool) -> dict[str, Any]:
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.testing import EmbeddedS3

    s3 = EmbeddedS3()
    s3.endpoint_url = endpoint
    store = s3.store(BUCKET, "bench")
    writer = ArtifactStore(store)
    per_session = artifacts // sessions

    def one_session(i: int) -> int:
        return populate_session(store, writer, i, per_session, legacy)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        total = sum(pool.map(one_session, range(sessions)))
    elapsed = time.monotonic() - started
    objects = sum(1 for _ in store.list(""))
    return {"artifacts": total, "objects": objects, "populate_seconds": round(elapsed, 1),
            "populate_objects_per_second": round(2 * total / elapsed, 1)}


def _record_listings(client: Any) -> list[str]:
    """The Prefix of every ListObjectsV2 the client sends."""
    prefixes: list[str] = []

    def handler(params: dict[str, Any], **_: Any) -> None:
        prefixes.append(str(params.get("Prefix", "")))

    client.meta.events.register("before-parameter-build.s3.ListObjectsV2", handler)
    return prefixes


def _range_lists(prefixes: list[str]) -> int:
    """LISTs of the store's key ranges, not of one session's owner slots or segments."""
    return sum(1 for p in prefixes if p in ("bench/", "bench/v1/owner/", "bench/v1/sessions/"))


def run_gc(endpoint: str, concurrency: int, shards: list[int], plan_only: bool) -> dict[str, Any]:
    """The GC half, in its own process: plan (and shard listings), apply, figures."""
    from s3spill.config import TransferConfig
    from s3spill.gc.models import CleanupPolicy, CleanupScope
    from s3spill.gc.plan import plan_cleanup
    from s3spill.testing import EmbeddedS3, record_operations

    s3 = EmbeddedS3()
    s3.endpoint_url = endpoint
    config = TransferConfig(max_concurrency=concurrency)
    store = s3.store(BUCKET, "bench", config=config)
    objects = sum(1 for _ in store.list(""))
    later = datetime.now(UTC) + timedelta(days=3)
    policy = CleanupPolicy(dry_run=False, max_deletions=None)
    out: dict[str, Any] = {}
    sent = record_operations(store.client)
    listings = _record_listings(store.client)
    with tempfile.TemporaryDirectory() as tmp:
        for n in shards:
            per_shard: list[tuple[int, int, float]] = []
            for k in range(n):
                mark, lmark, cpu = len(sent), len(listings), time.process_time()
                plan_cleanup(store, CleanupScope(shard_index=k, shard_count=n), policy,
                             out=Path(tmp, f"s{n}-{k}.jsonl"), now=later, config=config)
                per_shard.append((_range_lists(listings[lmark:]), sent[mark:].count("ListObjectsV2"),
                                  time.process_time() - cpu))
            out[f"shards_{n}"] = {
                "range_lists_per_shard": [r for r, _, _ in per_shard],
                "range_lists_total": sum(r for r, _, _ in per_shard),
                "all_lists_total": sum(a for _, a, _ in per_shard),
                "cpu_seconds_total": round(sum(c for _, _, c in per_shard), 2)}
        mark = len(sent)
        t0, c0 = time.monotonic(), time.process_time()
        plan = plan_cleanup(store, CleanupScope(), policy, out=Path(tmp, "plan.jsonl"), now=later,
                            config=config)
        plan_seconds, plan_cpu = time.monotonic() - t0, time.process_time() - c0
        plan_requests = Counter(sent[mark:])
        artifacts = sum(1 for e in plan.entries() if e.object_kind == "artifact")
        out.update({
            "objects": objects, "artifacts": artifacts, "entries": plan.footer.entries,
            "plan_counts": plan.footer.counts, "plan_seconds": round(plan_seconds, 2),
            "plan_cpu_seconds": round(plan_cpu, 2), "plan_requests": dict(plan_requests),
            "plan_heads_per_artifact": round(plan_requests["HeadObject"] / max(1, artifacts), 3),
            "plan_requests_per_artifact": round(sum(plan_requests.values()) / max(1, artifacts), 3),
        })
        if plan_only:
            return out
        from s3spill.gc.apply import apply_cleanup

        rss_after_plan = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        mark = len(sent)
        t1 = time.monotonic()
        report = apply_cleanup(store, plan, now=lambda: later, config=config)
        apply_seconds = time.monotonic() - t1
        apply_requests = Counter(sent[mark:])
    deleted_artifacts = report.counts.get("deleted", 0)
    deleted_objects = deleted_artifacts * 2  # each artifact goes with its sidecar
    total_apply = sum(apply_requests.values())
    out.update({
        "apply_counts": report.counts,
        "apply_seconds": round(apply_seconds, 2),
        "apply_deleted_objects_per_second": round(deleted_objects / apply_seconds, 1),
        "apply_requests": dict(apply_requests),
        "requests_per_deleted_object": round(total_apply / max(1, deleted_objects), 3),
        "requests_per_deleted_artifact": round(total_apply / max(1, deleted_artifacts), 3),
        "peak_rss_mib_after_plan": round(rss_after_plan / 1024, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    })
    return out


def _child(tree: Path, endpoint: str, args: argparse.Namespace, plan_only: bool) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--gc-only", endpoint, "--tree", str(tree),
           "--concurrency", str(args.concurrency), "--shards", args.shards]
    if plan_only:
        cmd.append("--plan-only")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=7200, env=env)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def run_local(artifacts: int, sessions: int, concurrency: int, legacy: bool) -> dict[str, Any]:
    """The same population and GC on the local store, in this process: CPU and wall per artifact."""
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.config import TransferConfig
    from s3spill.gc.apply import apply_cleanup
    from s3spill.gc.metered_store import MeteredStore
    from s3spill.gc.models import CleanupPolicy, CleanupScope
    from s3spill.gc.plan import plan_cleanup
    from s3spill.store.local import LocalStore

    config = TransferConfig(max_concurrency=concurrency)
    with tempfile.TemporaryDirectory() as tmp:
        store = LocalStore(Path(tmp, "store"), config)
        writer = ArtifactStore(store, config)
        per_session = artifacts // sessions
        for i in range(sessions):
            populate_session(store, writer, i, per_session, legacy)
        later = datetime.now(UTC) + timedelta(days=3)
        policy = CleanupPolicy(dry_run=False, max_deletions=None)
        meter = MeteredStore(store)
        t0, c0 = time.monotonic(), time.process_time()
        plan = plan_cleanup(meter, CleanupScope(), policy, out=Path(tmp, "plan.jsonl"), now=later,
                            config=config)
        plan_wall, plan_cpu = time.monotonic() - t0, time.process_time() - c0
        plan_requests = dict(meter.requests)
        t1, c1 = time.monotonic(), time.process_time()
        report = apply_cleanup(store, plan, now=lambda: later, config=config)
        apply_wall, apply_cpu = time.monotonic() - t1, time.process_time() - c1
    deleted = report.counts.get("deleted", 0)
    return {
        "backend": "local", "artifacts": artifacts, "sessions": sessions,
        "plan_seconds": round(plan_wall, 3), "plan_cpu_seconds": round(plan_cpu, 3),
        "plan_cpu_us_per_artifact": round(plan_cpu / artifacts * 1e6, 1),
        "plan_requests": plan_requests,
        "apply_seconds": round(apply_wall, 3), "apply_cpu_seconds": round(apply_cpu, 3),
        "apply_cpu_us_per_deleted_artifact": round(apply_cpu / max(1, deleted) * 1e6, 1),
        "apply_counts": report.counts, "apply_requests": report.requests,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=int, default=20_000)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--workers", type=int, default=8, help="population threads")
    parser.add_argument("--concurrency", type=int, default=4, help="GC sessions in parallel")
    parser.add_argument("--legacy-bodies", action="store_true",
                        help="raw bodies with metadata digests and placeholder sidecars")
    parser.add_argument("--shards", default="", help="comma-separated shard counts, e.g. 1,4,16")
    parser.add_argument("--baseline-tree", type=Path, help="another checkout to run the plan with first")
    parser.add_argument("--local", action="store_true",
                        help="the local store instead, in process (plan/apply CPU per artifact)")
    parser.add_argument("--gc-only", metavar="ENDPOINT", help=argparse.SUPPRESS)
    parser.add_argument("--tree", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--plan-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    shards = [int(n) for n in args.shards.split(",") if n]
    if args.gc_only:
        _import_tree(args.tree)
        print(json.dumps(run_gc(args.gc_only, args.concurrency, shards, args.plan_only)))
        return
    _import_tree(args.tree)
    if args.local:
        print(json.dumps(run_local(args.artifacts, args.sessions, args.concurrency, args.legacy_bodies),
                         indent=2))
        return
    from s3spill.testing import EmbeddedS3

    with EmbeddedS3() as s3:
        s3.create_bucket(BUCKET)
        figures: dict[str, Any] = populate(s3.endpoint_url, args.artifacts, args.sessions, args.workers,
                                           args.legacy_bodies)
        print(f"populated: {json.dumps(figures)}", flush=True)
        if args.baseline_tree:
            figures["baseline"] = _child(args.baseline_tree, s3.endpoint_url, args, plan_only=True)
            print(f"baseline: {json.dumps(figures['baseline'])}", flush=True)
        figures.update(_child(ROOT, s3.endpoint_url, args, plan_only=False))
    base = float(figures["populate_objects_per_second"])
    figures["apply_vs_populate_rate"] = round(float(figures["apply_deleted_objects_per_second"]) / base, 2)
    print(json.dumps(figures, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
