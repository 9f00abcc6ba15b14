"""GC against real processes on the serialized moto server: SIGKILLs at protocol steps, racing publishers."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from s3spill import keys
from s3spill.errors import ArtifactCondemned, GcRunLocked
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.lock import GcRunLock
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.leases.journal import LeaseJournal
from s3spill.models import utcnow
from s3spill.store.s3.store import S3Store
from s3spill.testing import EmbeddedS3, child_env
from tests.gc.aged_artifacts import REAL, claim_for, later, put_artifact
from tests.gc.aged_artifacts import exists as _exists

pytestmark = pytest.mark.slow


def _cli(moto_server: EmbeddedS3, store: S3Store, *args: str,
         failpoints: str = "") -> subprocess.CompletedProcess[str]:
    env = child_env({**moto_server.env(), "S3SPILL_FAILPOINTS": failpoints})
    return subprocess.run([sys.executable, "-m", "s3spill", "--store", store.url, *args],
                          env=env, capture_output=True, text=True, timeout=120)


#: Apply-time policy for the CLI runs: the artifacts are seconds old, not days.
SHORT = ("--orphan-ttl", "1s", "--session-ttl", "1s", "--allow-dangerously-short-ttl")


def _dead_runs_lock_expired(store: S3Store) -> GcRunLock:
    """The next run, once the killed run's lock has expired: it takes the lock over (fence 2)."""
    return GcRunLock(store, "all", "next-run", clock=lambda: utcnow() + timedelta(hours=1))


def _setup(store: S3Store, tmp_path: Path) -> tuple[list[str], str, Path]:
    orphans = [put_artifact(store, "crash", f"orphan {i}\n".encode() * 30) for i in range(3)]
    kept = put_artifact(store, "crash", b"kept\n" * 30)
    LeaseJournal(store, "crash").publish_reference(claim_for(store, "crash", kept), lambda: None,
                                                   transaction_id="tx-kept")
    short = CleanupPolicy(dry_run=False, orphan_ttl=timedelta(seconds=1),
                          session_ttl=timedelta(seconds=1), allow_dangerously_short_ttl=True)
    plan = plan_cleanup(store, CleanupScope(), short, out=tmp_path / "plan.jsonl", now=later())
    assert plan.footer.counts["planned_delete"] == 3
    # `gc apply` judges age again under its own policy (narrowed by the plan's), on the
    # real clock: short TTLs on both sides, and objects past them.
    time.sleep(2.1)
    return orphans, kept, plan.path


def _killed_applying(store: S3Store, moto_server: EmbeddedS3, tmp_path: Path,
                     failpoint: str) -> tuple[list[str], str, Path]:
    """:func:`_setup`, then a `gc apply` of its plan in a child SIGKILLed at ``failpoint``."""
    orphans, kept, plan_path = _setup(store, tmp_path)
    proc = _cli(moto_server, store, "gc", "apply", str(plan_path), *SHORT, failpoints=failpoint)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return orphans, kept, plan_path


def test_killed_after_condemnation_next_run_completes(
        server_store: S3Store, moto_server: EmbeddedS3, tmp_path: Path) -> None:
    """SIGKILL after CONDEMNED: nothing deleted, claims refused meanwhile; the next run deletes, records."""
    orphans, kept, _ = _killed_applying(server_store, moto_server, tmp_path, "gc.after_condemn=kill")
    shash = keys.session_hash("crash")
    journal = LeaseJournal(server_store, "crash")
    assert len(journal.view().condemned) == 3
    assert all(_exists(server_store, keys.artifact_key(shash, n)) for n in orphans)
    with pytest.raises(ArtifactCondemned):  # the fence holds while the run is dead
        journal.publish_reference(claim_for(server_store, "crash", orphans[0]), lambda: None,
                                  transaction_id="tx-too-late")
    fresh = plan_cleanup(server_store, CleanupScope(), REAL, out=tmp_path / "again.jsonl", now=later())
    with pytest.raises(GcRunLocked):  # the dead run's lock stands until it expires
        apply_cleanup(server_store, fresh, now=later)
    with _dead_runs_lock_expired(server_store) as lock:
        assert lock.record is not None and lock.record.fence == 2
        report = apply_cleanup(server_store, fresh, now=later, lock=lock)
    assert report.recovered == {"deleted": 3}
    assert not any(_exists(server_store, keys.artifact_key(shash, n)) for n in orphans)
    assert not any(_exists(server_store, keys.index_key(shash, n)) for n in orphans)
    assert _exists(server_store, keys.artifact_key(shash, kept))
    assert LeaseJournal(server_store, "crash").view().condemned == ()
    LeaseJournal(server_store, "crash").verify()


def test_killed_between_delete_and_deleted_record_next_run_records(
        server_store: S3Store, moto_server: EmbeddedS3, tmp_path: Path) -> None:
    """SIGKILL after the deletes, before DELETED: the next run (even with a fresh plan) records DELETED."""
    orphans, kept, plan_path = _killed_applying(server_store, moto_server, tmp_path, "gc.after_delete=kill")
    shash = keys.session_hash("crash")
    assert not any(_exists(server_store, keys.artifact_key(shash, n)) for n in orphans)
    assert len(LeaseJournal(server_store, "crash").view().condemned) == 3
    fresh = plan_cleanup(server_store, CleanupScope(), REAL, out=tmp_path / "again.jsonl", now=later())
    assert "planned_delete" not in fresh.footer.counts
    with _dead_runs_lock_expired(server_store) as lock:
        report = apply_cleanup(server_store, fresh, now=later, lock=lock)
    assert report.recovered == {"already_missing": 3}
    assert LeaseJournal(server_store, "crash").view().condemned == ()
    assert _exists(server_store, keys.artifact_key(shash, kept))
    # The original plan, applied late (the lock released by then), finds everything already gone.
    from s3spill.gc.planfile import CleanupPlan

    assert apply_cleanup(server_store, CleanupPlan.open(plan_path), now=later).counts == {
        "already_missing": 3, "retained_referenced": 1, "retained_protocol": 1}


def test_gc_racing_four_publishers_never_loses_a_claimed_artifact(
        server_store: S3Store, moto_server: EmbeddedS3, tmp_path: Path) -> None:
    """While GC applies, 4 processes publish/remove references: every live claim's artifact survives."""
    sessions = ["race-a", "race-b"]
    spec: dict[str, list[tuple[str, str]]] = {}
    for sid in sessions:
        names = [put_artifact(server_store, sid, f"{sid} {i}\n".encode() * 20, index=i % 2 == 0)
                 for i in range(12)]
        spec[sid] = [(c.source_id, c.sha256) for c in (claim_for(server_store, sid, n) for n in names)]
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    plan = plan_cleanup(server_store, CleanupScope(), REAL, out=tmp_path / "plan.jsonl", now=later())
    assert plan.footer.counts["planned_delete"] == 24
    env = child_env(moto_server.env())
    workers = [subprocess.Popen([sys.executable, "-m", "tests.gc.publisher_process", server_store.url,
                                 str(tmp_path / "spec.json"), str(w), "14"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for w in range(4)]
    for w in workers:
        assert w.stdout is not None and w.stdout.readline().strip() == "READY"
    report = apply_cleanup(server_store, plan)
    for w in workers:
        _out, err = w.communicate(timeout=180)
        assert w.returncode == 0, err
    assert sum(report.counts.values()) >= 24
    for sid in sessions:
        journal = LeaseJournal(server_store, sid)
        journal.verify()  # no CONDEMNED landed while a claim protected the artifact (the fold checks it)
        view = journal.view()
        assert view.condemned == ()
        shash = keys.session_hash(sid)
        for tx in view.transactions:
            name = keys.SourceId.parse(tx.claim.source_id).name
            head = server_store.head(keys.artifact_key(shash, name))
            assert head.sha256 == tx.claim.sha256


def test_version_pinned_deletes_where_conditional_deletes_are_ignored(
        moto_server: EmbeddedS3, tmp_path: Path) -> None:
    """With conditional deletes untrusted on a versioned bucket (MinIO), GC deletes the validated version."""
    import uuid

    from s3spill.store.base import StoreCapabilities
    from tests.conftest import TEST_CONFIG, VERSIONED_BUCKET

    store: S3Store = moto_server.store(VERSIONED_BUCKET, f"v/{uuid.uuid4().hex}", TEST_CONFIG)
    minio_like = StoreCapabilities(conditional_delete=False, versioning=True, versioned_delete=True)
    orphan = put_artifact(store, "ver", b"orphan\n")
    replaced = put_artifact(store, "ver", b"will be replaced\n", index=False)
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p.jsonl", now=later())
    shash = keys.session_hash("ver")
    rkey = keys.artifact_key(shash, replaced)
    store.put_if_match(rkey, b"new content\n", store.head(rkey).etag)
    report = apply_cleanup(store, plan, capabilities=minio_like, now=later)
    assert report.delete_method == "version_pinned"
    assert report.counts == {"deleted": 1, "race_detected": 1}
    assert report.requests.get("delete_version") == 2 and "delete_if_match" not in report.requests
    assert not _exists(store, keys.artifact_key(shash, orphan))
    assert store.get(rkey) == b"new content\n"
    store.close()
