"""The bucket owner's slots and reconciliation, row by row of the source's outcome table."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from s3spill import keys
from s3spill.errors import ArtifactPublicationRejected, IntegrityError
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.owner import OwnerObservation, OwnerTransaction, S3ReferenceOwner, SealOutcome
from s3spill.leases.reconcile import reconcile_pending, reconcile_reference
from s3spill.leases.references import publish_memory_reference, remove_memory_reference
from s3spill.models import ArtifactMemoryReference, ArtifactRetentionClaim
from s3spill.store.base import ObjectStore
from s3spill.testing import Fault, FaultyStore
from tests.leases.journal_artifacts import JCFG, SESSION, put_artifact


def setup(store: ObjectStore) -> tuple[LeaseJournal, S3ReferenceOwner]:
    return LeaseJournal(store, SESSION, JCFG), S3ReferenceOwner(store, SESSION)


def lost_answer(action: object) -> None:
    """A publisher whose write may have happened but whose answer never came back."""
    raise TimeoutError("memory write timed out")


def test_slots_are_written_once_then_only_tombstoned(store: ObjectStore) -> None:
    """publish creates, remove tombstones, seal makes an absence permanent; nothing reopens a slot."""
    _, owner = setup(store)
    claim, ref = put_artifact(store)
    _, other_ref = put_artifact(store)
    etag = owner.publish("tx-1", ref)
    assert owner.publish("tx-1", ref) == etag  # a replay of the same publication is idempotent
    with pytest.raises(IntegrityError):
        owner.publish("tx-1", other_ref)  # another reference under the same id is not a rejection
    tx = _Tx("tx-1", claim)
    assert owner.observe(tx) == OwnerObservation("tx-1", "published", etag, ref.source_id, ref.sha256)
    assert owner.seal_absent(tx, None) == "stale"
    owner.remove("tx-1")
    owner.remove("tx-1")  # idempotent
    assert owner.observe(tx).status == "removed"
    with pytest.raises(ArtifactPublicationRejected):
        owner.publish("tx-1", ref)
    absent = _Tx("tx-2", claim)
    assert owner.observe(absent) == OwnerObservation("tx-2", "absent")
    assert owner.seal_absent(absent, None) == "sealed"
    assert owner.seal_absent(absent, None) == "already_sealed"  # a repeated seal is a no-op
    with pytest.raises(ArtifactPublicationRejected):
        owner.publish("tx-2", ref)  # a late publish after the seal never lands
    assert owner.observe(absent).status == "sealed"
    assert owner.get_reference("tx-2") is None


def test_an_unreadable_owner_is_unknown(store: ObjectStore) -> None:
    """A slot that cannot be read (store down, damaged body) is observed as unknown, never absent."""
    claim, _ = put_artifact(store)
    down = S3ReferenceOwner(FaultyStore(store, [Fault("*", "unavailable", times=100)]), SESSION)
    assert down.observe(_Tx("tx-1", claim)).status == "unknown"
    key = keys.owner_slot_key(keys.session_hash(SESSION), "tx-bad")
    store.put_if_absent(key, b"not a slot")
    assert S3ReferenceOwner(store, SESSION).observe(_Tx("tx-bad", claim)).status == "unknown"


def test_built_in_flow_publishes_and_removes_through_the_owner(store: ObjectStore) -> None:
    """The built-in owner flow: the reference exists exactly while the lease is committed."""
    journal, owner = setup(store)
    _, ref = put_artifact(store)
    result = publish_memory_reference(journal, owner, ref, transaction_id="tx-1")
    assert result.state == "COMMITTED"
    assert owner.get_reference("tx-1") == ref
    remove_memory_reference(journal, owner, "tx-1")
    assert owner.get_reference("tx-1") is None
    assert journal.transaction("tx-1").state == "RELEASED"  # type: ignore[union-attr]


def test_published_matching_reference_commits(store: ObjectStore) -> None:
    """Row 1: published with the same source id and digest → COMMITTED; a rerun says already_committed."""
    journal, owner = setup(store)
    claim, ref = put_artifact(store)
    with pytest.raises(TimeoutError):
        journal.publish_reference(claim, lambda: lost_answer(owner.publish("tx-1", ref)), "tx-1")
    report = reconcile_reference(journal, owner, "tx-1")
    assert (report.outcome, report.state, report.reason) == ("committed", "COMMITTED", "owner_published")
    assert report.owner_generation is not None
    assert reconcile_reference(journal, owner, "tx-1").outcome == "already_committed"


def test_published_mismatch_stays_pending(store: ObjectStore) -> None:
    """Row 2: published with another identity → pending_conflict, still PREPARED, still protecting."""
    journal, owner = setup(store)
    claim, _ = put_artifact(store)
    _, other_ref = put_artifact(store)
    owner.publish("tx-1", other_ref)
    journal.prepare(claim, "tx-1")
    report = reconcile_reference(journal, owner, "tx-1")
    assert (report.outcome, report.state) == ("pending_conflict", "PREPARED")
    assert journal.view().pending_transaction_ids == ("tx-1",)


def test_unreachable_owner_stays_pending(store: ObjectStore) -> None:
    """Row 3: owner unreachable → pending_unknown, still PREPARED."""
    journal, _ = setup(store)
    claim, _ = put_artifact(store)
    journal.prepare(claim, "tx-1")
    down = S3ReferenceOwner(FaultyStore(store, [Fault("head", "unavailable", times=100)]), SESSION)
    report = reconcile_reference(journal, down, "tx-1")
    assert (report.outcome, report.state) == ("pending_unknown", "PREPARED")
    assert report.reason == "owner_unreachable"


def test_unsealed_absence_is_sealed_then_aborted(store: ObjectStore) -> None:
    """Row 4: absent → the owner seals first, then ABORTED; a late publish is then refused."""
    journal, owner = setup(store)
    claim, ref = put_artifact(store)
    journal.prepare(claim, "tx-1")
    report = reconcile_reference(journal, owner, "tx-1")
    assert (report.outcome, report.state, report.reason) == ("aborted", "ABORTED", "sealed_absence")
    assert owner.observe(_Tx("tx-1", claim)).status == "sealed"
    with pytest.raises(ArtifactPublicationRejected):
        owner.publish("tx-1", ref)
    assert reconcile_reference(journal, owner, "tx-1").outcome == "already_aborted"


class _LateWriterOwner(S3ReferenceOwner):
    """The real bucket owner, with a late publication landing between observation and seal."""

    def __init__(self, store: ObjectStore, ref: ArtifactMemoryReference) -> None:
        super().__init__(store, SESSION)
        self.ref = ref

    def seal_absent(self, transaction: OwnerTransaction, observed_generation: str | None) -> SealOutcome:
        self.publish(transaction.transaction_id, self.ref)
        return super().seal_absent(transaction, observed_generation)


def test_slot_changed_before_seal_is_stale(store: ObjectStore) -> None:
    """Row 5: the slot changed between observation and seal → pending_stale; the next run commits."""
    journal, owner = setup(store)
    claim, ref = put_artifact(store)
    journal.prepare(claim, "tx-1")
    report = reconcile_reference(journal, _LateWriterOwner(store, ref), "tx-1")
    assert (report.outcome, report.state, report.reason) == ("pending_stale", "PREPARED", "slot_changed")
    assert reconcile_reference(journal, owner, "tx-1").outcome == "committed"


def test_sealed_absence_aborts(store: ObjectStore) -> None:
    """Row 6: an absence sealed earlier (e.g. before a crash) → ABORTED without sealing again."""
    journal, owner = setup(store)
    claim, _ = put_artifact(store)
    journal.prepare(claim, "tx-1")
    assert owner.seal_absent(_Tx("tx-1", claim), None) == "sealed"
    report = reconcile_reference(journal, owner, "tx-1")
    assert (report.outcome, report.state) == ("aborted", "ABORTED")


def test_removed_reference_is_released(store: ObjectStore) -> None:
    """A removed tombstone settles both a PREPARED and a COMMITTED lease as RELEASED."""
    journal, owner = setup(store)
    claim, ref = put_artifact(store)
    journal.prepare(claim, "tx-prepared")
    owner.publish("tx-prepared", ref)
    owner.remove("tx-prepared")
    journal.publish_reference(claim, lambda: owner.publish("tx-committed", ref), "tx-committed")
    owner.remove("tx-committed")  # the remover finished, then its process died before RELEASED
    reports = {r.transaction_id: r for r in reconcile_pending(journal, owner, include_committed=True)}
    assert reports["tx-prepared"].outcome == "released"
    assert reports["tx-committed"].outcome == "released"
    assert journal.view().transactions == ()
    assert reconcile_reference(journal, owner, "tx-committed").outcome == "already_released"


def test_reconcile_pending_takes_the_snapshot_and_reports_nothing_private(store: ObjectStore) -> None:
    """reconcile_pending settles what was pending; reports hold ids, states and generations only."""
    journal, owner = setup(store)
    claim, ref = put_artifact(store)
    journal.prepare(claim, "tx-absent")
    with pytest.raises(TimeoutError):
        journal.publish_reference(claim, lambda: lost_answer(owner.publish("tx-pub", ref)), "tx-pub")
    reports = reconcile_pending(journal, owner)
    assert sorted((r.transaction_id, r.outcome) for r in reports) == [
        ("tx-absent", "aborted"), ("tx-pub", "committed")]
    for r in reports:
        text = repr(r.to_dict())
        assert "v1/" not in text and ref.summary not in text and claim.source_id not in text
    assert reconcile_pending(journal, owner) == []


def test_concurrent_reconcilers_append_one_terminal_record(race_store: ObjectStore) -> None:
    """Four reconcilers racing on the same pending transactions append one terminal record each."""
    store = race_store  # atomic conditional checks: in-process moto's are not
    journal, owner = setup(store)
    claim, ref = put_artifact(store)
    txids = [f"tx-{n}" for n in range(4)]
    for n, txid in enumerate(txids):
        journal.prepare(claim, txid)
        if n % 2:
            owner.publish(txid, ref)
    outcomes: list[tuple[str, str]] = []
    barrier = threading.Barrier(4)

    errors: list[BaseException] = []

    def run() -> None:
        try:
            j, o = LeaseJournal(store, SESSION, JCFG), S3ReferenceOwner(store, SESSION)
            barrier.wait()
            outcomes.extend((r.transaction_id, r.outcome) for r in reconcile_pending(j, o))
        except BaseException as exc:  # surfaced by the assertion below, not lost in a thread
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    by_tx = Counter(outcomes)
    for n, txid in enumerate(txids):
        done, already = ("committed", "already_committed") if n % 2 else ("aborted", "already_aborted")
        assert by_tx[(txid, done)] == 1, outcomes
        # A reconciler that observed the absence before another one sealed it reports
        # pending_stale (the source table's "slot changed before seal"): correct, not terminal.
        allowed = {done, already, "pending_stale"}
        assert {o for (t, o) in outcomes if t == txid} <= allowed, outcomes
    fresh = LeaseJournal(store, SESSION, JCFG)
    report = fresh.verify()
    assert report.records == 4 + 4 and report.pending == 0


class _Tx:
    def __init__(self, transaction_id: str, claim: ArtifactRetentionClaim) -> None:
        self.transaction_id = transaction_id
        self.claim = claim
