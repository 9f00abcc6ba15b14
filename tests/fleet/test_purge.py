"""Erasure on request: a purge deletes everything of a session, and nothing comes back."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import orjson
import pytest

from s3spill import keys
from s3spill.artifacts.store import ArtifactStore
from s3spill.errors import ArtifactErased, ArtifactPublicationRejected, CleanupRefused, SessionErased
from s3spill.fleet.purge import purge_session, read_erasure
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.owner import OwnerSlot, S3ReferenceOwner
from s3spill.models import ArtifactRetentionClaim
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.testing import EmbeddedS3
from tests.conftest import TEST_CONFIG, VERSIONED_BUCKET

SESSION = "user-42-session"
#: Printed by every output; must never appear in the audit record (no content in it).
CONTENT = "CUSTOMER-ROW alice@example.com 4111-1111"


def _output(i: int) -> str:
    return "".join(f"{CONTENT} row {i}.{n}\n" for n in range(3000))


def _publish(store: ObjectStore, spiller: Spiller, txid: str, *, stall: bool) -> ArtifactRetentionClaim:
    """A memory reference under a lease; ``stall``: PREPARED, and the publisher not called yet."""
    result = spiller.externalize(_output(999 if stall else 998), "bash")
    assert result.artifact is not None
    ref = result.artifact.for_memory()
    claim = ArtifactRetentionClaim.from_memory_reference(ref)
    journal = LeaseJournal(store, SESSION)
    owner = S3ReferenceOwner(store, SESSION)
    if stall:
        journal.prepare(claim, txid)
    else:
        journal.publish_reference(claim, lambda: owner.publish(txid, ref), txid)
    return claim


def _session_objects(store: ObjectStore) -> list[str]:
    shash = keys.session_hash(SESSION)
    return sorted(i.key for i in store.list(keys.session_prefix(shash)))


def test_a_purge_racing_a_live_writer_and_a_stalled_publish_leaves_nothing(tmp_path: Path) -> None:
    """Seal, then delete: the writer's later spills are undone, the stalled publish is refused,
    only content-free tombstones and the audit record remain, and old ids read 'erased'."""
    store = LocalStore(tmp_path)
    spiller = Spiller(store, SESSION, journal=None)
    kept = spiller.externalize(_output(0), "bash")
    assert kept.artifact is not None
    _publish(store, spiller, "tx-published", stall=False)
    claim = _publish(store, spiller, "tx-stalled", stall=True)
    ref_for_stalled = ArtifactStore(store, session_id=SESSION).reference(claim.source_id).for_memory()

    stop, results = threading.Event(), []

    def live_writer() -> None:
        with Spiller(store, SESSION) as writer:  # with its journal: liveness marks too
            i = 1
            while not stop.is_set():
                results.append(writer.externalize(_output(i), "bash"))
                i += 1

    thread = threading.Thread(target=live_writer)
    thread.start()
    time.sleep(0.3)
    record = purge_session(store, SESSION, requested_by="dpo@example.com", reason="GDPR art. 17",
                           confirm=True)
    time.sleep(0.5)  # the writer keeps going after the purge
    stop.set()
    thread.join(30)

    # The stalled publisher wakes up: its create-once slot write meets the seal.
    owner = S3ReferenceOwner(store, SESSION)
    with pytest.raises(ArtifactPublicationRejected):
        owner.publish("tx-stalled", ref_for_stalled)
    with pytest.raises(SessionErased):
        LeaseJournal(store, SESSION).commit("tx-stalled")
    with pytest.raises(SessionErased):
        LeaseJournal(store, SESSION).touch(0)

    shash = keys.session_hash(SESSION)
    assert _session_objects(store) == [keys.manifest_key(shash)]  # the tombstone, nothing else
    assert orjson.loads(store.get(keys.manifest_key(shash)))["kind"] == "erased_session"
    slots = [OwnerSlot.model_validate_json(store.get(i.key)) for i in store.list(f"{keys.OWNER}/{shash}/")]
    assert {s.transaction_id for s in slots} == {"tx-published", "tx-stalled"}
    assert all(s.state == "sealed" and s.reference is None for s in slots)

    assert record.ok and record.requested_by == "dpo@example.com" and record.reason == "GDPR art. 17"
    deleted = {o.key: o for o in record.objects if o.action in ("deleted", "swept")}
    body = keys.artifact_key(shash, kept.artifact.name)
    assert body in deleted and deleted[body].sha256 == kept.artifact.sha256 and deleted[body].size > 0
    stored = store.get(keys.erasure_key(shash))
    assert CONTENT.encode() not in stored and b"alice" not in stored
    assert read_erasure(store, shash) == record

    with pytest.raises(ArtifactErased, match="erased on request"):
        ArtifactStore(store, session_id=SESSION).read_page(kept.artifact.source_id)
    assert results and any(r.spilled for r in results[:1] + results)  # it did write during the race
    late = [r for r in results if not r.spilled]
    assert late and all("erased on request" in (r.degraded_reason or "") for r in late)
    again = Spiller(store, SESSION, journal=None)
    first = again.externalize(_output(5000), "bash")
    assert not first.spilled and _session_objects(store) == [keys.manifest_key(shash)]


def test_a_purge_refuses_without_confirmation(tmp_path: Path) -> None:
    """No flag, no deletion: the refusal names what would be lost."""
    store = LocalStore(tmp_path)
    Spiller(store, SESSION, journal=None).externalize(_output(0), "bash")
    before = _session_objects(store)
    with pytest.raises(CleanupRefused, match="confirm"):
        purge_session(store, SESSION, requested_by="someone", settle_seconds=0)
    assert _session_objects(store) == before and read_erasure(store, keys.session_hash(SESSION)) is None


def test_a_second_purge_finds_the_seals_and_counts_its_run(tmp_path: Path) -> None:
    """Idempotent: run again, it deletes what is left and says it is run 2."""
    store = LocalStore(tmp_path)
    Spiller(store, SESSION, journal=None).externalize(_output(0), "bash")
    purge_session(store, SESSION, requested_by="a", confirm=True, settle_seconds=0)
    second = purge_session(store, SESSION, requested_by="b", confirm=True, settle_seconds=0)
    assert second.ok and second.runs == 2 and second.requested_by == "b"
    assert _session_objects(store) == [keys.manifest_key(keys.session_hash(SESSION))]


def test_all_versions_removes_every_old_version_on_a_versioned_bucket(moto_server: EmbeddedS3) -> None:
    """Old manifest and slot versions hold content: --all-versions deletes them, seals stay."""
    store = moto_server.store(VERSIONED_BUCKET, f"t/{uuid.uuid4().hex}", TEST_CONFIG)
    with Spiller(store, SESSION) as spiller:  # the journal's liveness mark: manifest versions
        spiller.externalize(_output(0), "bash")
        _publish(store, spiller, "tx-1", stall=False)
    record = purge_session(store, SESSION, requested_by="ops", all_versions=True, confirm=True,
                           settle_seconds=0)
    assert record.ok, record.failures
    shash = keys.session_hash(SESSION)
    listed = store.client.list_object_versions(Bucket=VERSIONED_BUCKET, Prefix=store.prefix + "/")
    left = [(v["Key"].removeprefix(store.prefix + "/"), v["IsLatest"])
            for v in listed.get("Versions", []) + listed.get("DeleteMarkers", [])
            if keys.session_prefix(shash) in v["Key"] or f"{keys.OWNER}/{shash}/" in v["Key"]]
    assert sorted(left) == sorted([(keys.manifest_key(shash), True),
                                   (keys.owner_slot_key(shash, "tx-1"), True)])
    assert any(o.action == "version_deleted" for o in record.objects)


def test_the_cli_refuses_without_the_flag_and_reports_like_gc(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``s3spill purge`` without --yes-erase-everything deletes nothing; with it, a report."""
    from s3spill.cli import main

    store = LocalStore(tmp_path)
    Spiller(store, SESSION, journal=None).externalize(_output(0), "bash")
    url = f"file://{tmp_path}"
    assert main(["--store", url, "--session", SESSION, "purge"]) != 0
    assert "--yes-erase-everything" in capsys.readouterr().err and len(_session_objects(store)) == 2
    assert main(["--store", url, "--session", SESSION, "purge", "--yes-erase-everything",
                 "--requested-by", "dpo", "--reason", "ticket 7"]) == 0
    out = capsys.readouterr().out
    assert "requested by dpo): erased" in out and "deleted:artifact" in out
    assert "audit record: v1/erasures/" in out
    assert _session_objects(store) == [keys.manifest_key(keys.session_hash(SESSION))]


def test_a_busy_writer_checks_the_seal_once_per_ttl_not_per_spill(tmp_path: Path) -> None:
    """The seal check costs one HEAD per two seconds of spilling, not one per spill."""
    with Spiller(LocalStore(tmp_path), SESSION, journal=None) as spiller:
        results = [spiller.externalize(_output(i), "bash") for i in range(5)]
    assert all(r.spilled for r in results) and spiller.sink.erasure.checks == 1


def test_gc_counts_erasure_records_and_quota_counters_as_protocol_state(tmp_path: Path) -> None:
    """A purge's audit record and the quota counters are protocol objects to GC, never 'off-layout'."""
    from s3spill.fleet.quota import Quota
    from s3spill.gc.models import CleanupScope
    from s3spill.gc.plan import plan_cleanup

    store = LocalStore(tmp_path / "s")
    Spiller(store, "other", journal=None, quota=Quota(session_bytes=10**9, prefix_bytes=10**9)).externalize(
        _output(0), "bash")
    Spiller(store, SESSION, journal=None).externalize(_output(0), "bash")
    purge_session(store, SESSION, requested_by="a", confirm=True, settle_seconds=0)
    kinds = {(e.object_kind, e.status) for e in plan_cleanup(store, CleanupScope(),
                                                             out=tmp_path / "plan.jsonl").entries()}
    assert ("erasure", "retained_protocol") in kinds and ("usage", "retained_protocol") in kinds
    assert not any(status == "retained_unknown" for _, status in kinds)
