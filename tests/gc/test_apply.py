"""apply_cleanup: fenced by the journal, revalidated against the plan, conditional deletes only."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from s3spill import keys
from s3spill.errors import ArtifactCondemned, CleanupRefused, GcRunLocked, NotFound, StoreUnavailable
from s3spill.gc.apply import apply_cleanup, choose_delete_method
from s3spill.gc.lock import GcRunLock
from s3spill.gc.metered_store import MeteredStore
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.gc.planfile import PlanEntry, PlanWriter
from s3spill.keys import SourceId
from s3spill.leases.journal import LeaseJournal
from s3spill.models import ArtifactRetentionClaim
from s3spill.store.base import ObjectStore, StoreCapabilities
from s3spill.store.s3.store import S3Store
from s3spill.testing import Fault, FaultyStore
from tests.gc.aged_artifacts import REAL, claim_for, later, put_artifact
from tests.gc.aged_artifacts import exists as _exists


def test_orphan_deleted_and_referenced_kept(store: ObjectStore, tmp_path: Path) -> None:
    """An expired orphan and its sidecar are deleted; a referenced artifact stays; journal records it."""
    orphan = put_artifact(store, "s1", b"orphan\n" * 50)
    kept = put_artifact(store, "s1", b"kept\n" * 50)
    journal = LeaseJournal(store, "s1")
    journal.publish_reference(claim_for(store, "s1", kept), lambda: None, transaction_id="tx-kept")
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    statuses = {e.name: e.status for e in plan.entries() if e.object_kind == "artifact"}
    assert statuses == {orphan: "planned_delete", kept: "retained_referenced"}
    report = apply_cleanup(store, plan, now=later)
    assert report.counts["deleted"] == 1
    shash = keys.session_hash("s1")
    assert not _exists(store, keys.artifact_key(shash, orphan))
    assert not _exists(store, keys.index_key(shash, orphan))
    assert _exists(store, keys.artifact_key(shash, kept))
    assert report.requests.get("delete_if_match", 0) + report.requests.get("delete_version", 0) == 2


def test_reference_published_between_plan_and_apply_is_retained(store: ObjectStore, tmp_path: Path) -> None:
    """A claim that lands after the plan keeps the artifact: retained_referenced, not deleted."""
    name = put_artifact(store, "s1", b"late claim\n" * 20)
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    assert plan.footer.counts["planned_delete"] == 1
    LeaseJournal(store, "s1").publish_reference(claim_for(store, "s1", name), lambda: None,
                                                transaction_id="tx-late")
    report = apply_cleanup(store, plan, now=later)
    assert report.counts == {"retained_referenced": 1}
    assert _exists(store, keys.artifact_key(keys.session_hash("s1"), name))


def test_replaced_artifact_is_a_race_not_a_delete(store: ObjectStore, tmp_path: Path) -> None:
    """An artifact overwritten after the plan is race_detected, kept, and its condemnation lifted."""
    name = put_artifact(store, "s1", b"original\n")
    key = keys.artifact_key(keys.session_hash("s1"), name)
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    etag = store.head(key).etag
    store.put_if_match(key, b"replaced by someone\n", etag)  # a direct overwrite, as a rogue writer would
    report = apply_cleanup(store, plan, now=later)
    assert report.counts == {"race_detected": 1}
    assert store.get(key) == b"replaced by someone\n"
    facts_after = LeaseJournal(store, "s1")
    claim = claim_for(store, "s1", name)  # the new content can be claimed again: lifted, not condemned
    facts_after.publish_reference(claim, lambda: None, transaction_id="tx-after-race")


def test_apply_twice_reports_already_missing(store: ObjectStore, tmp_path: Path) -> None:
    """Applying the same plan again deletes nothing more and reports already_missing."""
    put_artifact(store, "s1", b"x" * 100)
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    assert apply_cleanup(store, plan, now=later).counts == {"deleted": 1}
    assert apply_cleanup(store, plan, now=later).counts == {"already_missing": 1}


def test_foreign_objects_are_never_touched(store: ObjectStore, tmp_path: Path) -> None:
    """Non-s3spill keys under the prefix and protocol objects survive an apply unchanged."""
    put_artifact(store, "s1", b"x")
    store.put_if_absent("other-app/data.bin", b"theirs")
    store.put_if_absent(f"v1/sessions/{keys.session_hash('s1')}/artifacts/not-a-name", b"odd")
    LeaseJournal(store, "s1").publish_reference(
        claim_for(store, "s1", put_artifact(store, "s1", b"y")), lambda: None, transaction_id="t")
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    survivors = {i.key: i.etag for i in store.list("") if parse_kind(i.key) != "artifact"}
    apply_cleanup(store, plan, now=later)
    after = {i.key: i.etag for i in store.list("")}
    for key, etag in survivors.items():
        if parse_kind(key) == "index":
            continue
        if parse_kind(key) == "manifest":
            assert key in after
        else:
            assert after.get(key) == etag, key


def parse_kind(key: str) -> str:
    return keys.parse_key(key).kind


def test_unverifiable_journal_retains_everything(store: ObjectStore, tmp_path: Path) -> None:
    """A session whose manifest fails verification has all artifacts retained_unverifiable."""
    name = put_artifact(store, "s1", b"x")
    LeaseJournal(store, "s1").publish_reference(claim_for(store, "s1", name), lambda: None,
                                                transaction_id="t1")
    orphan = put_artifact(store, "s1", b"orphan")
    mkey = keys.manifest_key(keys.session_hash("s1"))
    info = store.head(mkey)
    body = store.get(mkey).replace(b"t1", b"t2")
    store.put_if_match(mkey, body, info.etag)
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    statuses = {e.name: e.status for e in plan.entries() if e.object_kind == "artifact"}
    assert statuses == {name: "retained_unverifiable", orphan: "retained_unverifiable"}
    report = apply_cleanup(store, plan, now=later)
    assert "deleted" not in report.counts
    assert _exists(store, keys.artifact_key(keys.session_hash("s1"), orphan))


def test_no_safe_delete_method_refuses(store: ObjectStore, tmp_path: Path) -> None:
    """Without conditional deletes and without versioning, apply refuses and names the guarantee."""
    put_artifact(store, "s1", b"x")
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    weak = StoreCapabilities(conditional_delete=False, versioned_delete=True, versioning=False)
    with pytest.raises(CleanupRefused, match=r"conditional deletes.*versioning is off"):
        apply_cleanup(store, plan, capabilities=weak, now=later)
    assert choose_delete_method(weak, force_unverified=True) == "unconditional"
    assert choose_delete_method(StoreCapabilities(conditional_delete=False, versioning=True,
                                                  versioned_delete=True)) == "version_pinned"


def test_dry_run_deletes_nothing(store: ObjectStore, tmp_path: Path) -> None:
    """The default policy is a dry run: apply reports dry_run and the store is unchanged."""
    put_artifact(store, "s1", b"x")
    plan = plan_cleanup(store, CleanupScope(), CleanupPolicy(), out=tmp_path / "p", now=later())
    before = {i.key for i in store.list("")}
    report = apply_cleanup(store, plan, now=later)
    assert report.counts == {"dry_run": 1} and report.dry_run
    assert {i.key for i in store.list("")} == before




def test_dangling_claim_and_digest_conflict_are_reported(store: ObjectStore, tmp_path: Path) -> None:
    """A claim on a vanished artifact is missing_referenced; one whose digest changed is retained_corrupt."""
    gone = put_artifact(store, "s1", b"will vanish", index=False)
    changed = put_artifact(store, "s1", b"will change", index=False)
    journal = LeaseJournal(store, "s1")
    for i, name in enumerate((gone, changed)):
        journal.publish_reference(claim_for(store, "s1", name), lambda: None, transaction_id=f"t{i}")
    shash = keys.session_hash("s1")
    store.delete_if_match(keys.artifact_key(shash, gone), store.head(keys.artifact_key(shash, gone)).etag)
    ckey = keys.artifact_key(shash, changed)
    store.put_if_match(ckey, b"rogue overwrite", store.head(ckey).etag)
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    statuses = {e.name: e.status for e in plan.entries() if e.name}
    assert statuses == {gone: "missing_referenced", changed: "retained_corrupt"}
    assert "deleted" not in apply_cleanup(store, plan, now=later).counts
    assert _exists(store, ckey)


def test_active_session_and_expired_claims(store: ObjectStore, tmp_path: Path) -> None:
    """A recently touched session keeps everything; an expired claim protects until orphan_ttl after it."""
    name = put_artifact(store, "s1", b"x", index=False)
    journal = LeaseJournal(store, "s1")
    claim = claim_for(store, "s1", name).model_copy(update={"retain_until": later(timedelta(days=1))})
    journal.publish_reference(claim, lambda: None, transaction_id="t-exp")
    two_days = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "a", now=later(timedelta(hours=36)))
    assert {e.name: e.status for e in two_days.entries() if e.name} == {name: "retained_recent"}
    four_days = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "b", now=later(timedelta(hours=60)))
    assert {e.name: e.status for e in four_days.entries() if e.name} == {name: "planned_delete"}
    LeaseJournal(store, "s2", clock=lambda: later(timedelta(days=4))).touch()
    other = put_artifact(store, "s2", b"y", index=False)
    active = plan_cleanup(store, CleanupScope(session_hash=keys.session_hash("s2")), REAL,
                          out=tmp_path / "c", now=later(timedelta(days=4, hours=1)))
    assert {e.name: e.status for e in active.entries() if e.name} == {other: "retained_recent"}


def test_orphan_sidecar_is_deleted_and_forged_keys_denied(store: ObjectStore, tmp_path: Path) -> None:
    """A sidecar without its artifact is collected; a plan line with an edited key is denied, not deleted."""
    shash = keys.session_hash("s1")
    name = put_artifact(store, "s1", b"body")
    akey = keys.artifact_key(shash, name)
    store.delete_if_match(akey, store.head(akey).etag)
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    entries = {e.name: e for e in plan.entries() if e.name}
    assert entries[name].object_kind == "index" and entries[name].status == "planned_delete"
    report = apply_cleanup(store, plan, now=later)
    assert report.counts.get("deleted") == 1
    assert not _exists(store, keys.index_key(shash, name))
    # Forge: a planned line for session s2 that points at s1's artifact.
    keep = put_artifact(store, "s1", b"must stay", index=False)
    forged = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "f", now=later())
    lines = forged.path.read_text().splitlines()
    other = keys.session_hash("s2")
    lines = [ln.replace(f'"session_hash":"{shash}"', f'"session_hash":"{other}"') if keep in ln else ln
             for ln in lines]
    writer = PlanWriter(tmp_path / "forged.jsonl", forged.header)
    for ln in lines[1:-1]:
        writer.add(PlanEntry.model_validate_json(ln))
    report = apply_cleanup(store, writer.close(), now=later)
    assert report.counts.get("denied", 0) >= 1 and "deleted" not in report.counts
    assert _exists(store, keys.artifact_key(shash, keep))


def test_objects_outside_the_prefix_are_never_listed_or_touched(moto_store: S3Store, tmp_path: Path) -> None:
    """Keys of the bucket outside the store's prefix never appear in a plan and survive an apply."""
    client, bucket = moto_store.client, moto_store.bucket
    client.put_object(Bucket=bucket, Key="elsewhere/v1/sessions/x", Body=b"not ours")
    put_artifact(moto_store, "s1", b"old")
    plan = plan_cleanup(moto_store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    assert all(not (e.key or "").startswith("elsewhere") for e in plan.entries())
    apply_cleanup(moto_store, plan, now=later)
    assert client.get_object(Bucket=bucket, Key="elsewhere/v1/sessions/x")["Body"].read() == b"not ours"


def test_unknown_delete_outcome_stays_condemned_until_the_next_run(store: ObjectStore,
                                                                   tmp_path: Path) -> None:
    """A delete whose answer was lost is retained_error and stays condemned; the next run records it."""
    name = put_artifact(store, "s1", b"lost answer", index=False)
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    faulty = FaultyStore(store)
    faulty.add(Fault("delete_if_match", "drop_response"))
    report = apply_cleanup(faulty, plan, now=later)
    assert report.counts == {"retained_error": 1} and report.races == 1
    view = LeaseJournal(store, "s1").view()
    assert [SourceId.parse(c.source_id).name for c in view.condemned] == [name]
    with pytest.raises(ArtifactCondemned):
        LeaseJournal(store, "s1").publish_reference(
            ArtifactRetentionClaim(source_id=view.condemned[0].source_id,
                                   sha256=view.condemned[0].sha256),
            lambda: None, transaction_id="tx-too-late")
    again = apply_cleanup(store, plan, now=later)
    assert again.counts == {"already_missing": 1} and again.recovered == {"already_missing": 1}
    assert LeaseJournal(store, "s1").view().condemned == ()


def test_metered_store_counts_requests_and_halves_its_rate_on_slowdown(local_store: ObjectStore) -> None:
    """Requests are counted by type, and a request that still fails as unavailable halves the pace."""
    faulty = FaultyStore(local_store)
    faulty.add(Fault("head", "unavailable"))
    meter = MeteredStore(faulty, rate_limit=200.0)
    put_artifact(meter, "s1", b"x", index=False)
    with pytest.raises(StoreUnavailable):
        meter.head("v1/missing")
    assert meter.slowdowns == 1 and meter._rate == 100.0
    assert meter.requests == {"put_if_absent": 1, "head": 1}


def test_library_apply_while_another_run_holds_the_lock_deletes_nothing(
        store: ObjectStore, tmp_path: Path) -> None:
    """apply_cleanup takes the scope's run lock itself: another run's live lock is GcRunLocked, no delete."""
    orphan = put_artifact(store, "s1", b"orphan\n" * 50)
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    holder = GcRunLock(store, "all", "other-run")
    holder.acquire()
    try:
        with pytest.raises(GcRunLocked, match="other-run"):
            apply_cleanup(store, plan, now=later)
        assert _exists(store, keys.artifact_key(keys.session_hash("s1"), orphan))
        assert LeaseJournal(store, "s1").view().condemned == ()
        # a dry run deletes nothing, so it needs no lock and may overlap
        assert apply_cleanup(store, plan, now=later, dry_run=True).counts["dry_run"] == 1
    finally:
        holder.release()
    assert apply_cleanup(store, plan, now=later).counts["deleted"] == 1
    with pytest.raises(NotFound):  # released at the end of the run
        store.head(keys.gc_lock_key("all"))


def test_a_lock_the_caller_holds_is_renewed_and_left_to_the_caller(
        store: ObjectStore, tmp_path: Path) -> None:
    """Given lock=held, apply uses it (no second acquire), and the caller still holds it afterwards."""
    put_artifact(store, "s1", b"orphan\n" * 50)
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    with GcRunLock(store, "all", "caller") as held:
        assert apply_cleanup(store, plan, now=later, lock=held).counts["deleted"] == 1
        assert held.record is not None
        assert held.renew().run_id == "caller"  # still ours: apply did not release it
