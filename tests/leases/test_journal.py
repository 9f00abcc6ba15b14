"""The lease journal's protocol on every backend: publish/remove order, idempotency, refusals."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from s3spill import keys
from s3spill.errors import (
    ArtifactCondemned,
    ArtifactPublicationRejected,
    DanglingReference,
    SourceIdError,
    TransactionStateError,
)
from s3spill.leases.journal import CondemnItem, LeaseJournal
from s3spill.models import ArtifactRetentionClaim
from s3spill.store.base import ObjectStore
from tests.leases.journal_artifacts import JCFG, SESSION, put_artifact


def journal(store: ObjectStore, **kw: object) -> LeaseJournal:
    return LeaseJournal(store, SESSION, JCFG, **kw)  # type: ignore[arg-type]


def test_publish_then_remove_walks_the_state_machine(store: ObjectStore) -> None:
    """publish records PREPARED, then COMMITTED around the publisher; RELEASED follows the remover."""
    j = journal(store)
    claim, _ = put_artifact(store)
    calls: list[str] = []

    def publisher() -> None:
        calls.append(f"publish:{j.transaction('tx-1').state}")  # type: ignore[union-attr]

    result = j.publish_reference(claim, publisher, "tx-1")
    assert (result.outcome, result.state, result.changed) == ("committed", "COMMITTED", True)
    assert calls == ["publish:PREPARED"]  # PREPARED was durable before the memory write

    def remover() -> None:
        calls.append(f"remove:{j.transaction('tx-1').state}")  # type: ignore[union-attr]

    released = j.remove_reference("tx-1", remover)
    assert released.outcome == "released"
    assert calls[-1] == "remove:COMMITTED"  # the lease still protected while removing
    events = [r["event"] for r in j.recent_records()]
    assert events == ["PREPARED", "COMMITTED", "RELEASED"]
    assert j.view().generation == 3


def test_repeated_transitions_are_noops_that_say_so(store: ObjectStore) -> None:
    """A repeated commit, publish or release of a settled transaction writes nothing and says so."""
    j = journal(store)
    claim, _ = put_artifact(store)
    j.publish_reference(claim, lambda: None, "tx-1")
    generation = j.view().generation
    assert j.commit("tx-1").outcome == "already_committed"
    calls: list[int] = []
    again = j.publish_reference(claim, lambda: calls.append(1), "tx-1")
    assert (again.outcome, again.changed) == ("already_committed", False)
    assert calls == []  # a committed transaction is never re-published
    j.remove_reference("tx-1", lambda: None)
    assert j.release("tx-1").outcome == "already_released"
    assert j.remove_reference("tx-1", lambda: calls.append(2)).outcome == "already_released"
    assert calls == []
    assert j.view().generation == generation + 1


def test_only_a_typed_rejection_aborts(store: ObjectStore) -> None:
    """ArtifactPublicationRejected aborts; any other publisher error leaves the lease PREPARED."""
    j = journal(store)
    claim, _ = put_artifact(store)

    def rejected() -> None:
        raise ArtifactPublicationRejected("validation refused before any write")

    with pytest.raises(ArtifactPublicationRejected):
        j.publish_reference(claim, rejected, "tx-rejected")
    assert j.transaction("tx-rejected").state == "ABORTED"  # type: ignore[union-attr]

    for n, exc in enumerate([TimeoutError("t"), ConnectionError("c"), OSError("o"), RuntimeError("r")]):
        def failing(exc: Exception = exc) -> None:
            raise exc

        with pytest.raises(type(exc)):
            j.publish_reference(claim, failing, f"tx-unknown-{n}")
        assert j.transaction(f"tx-unknown-{n}").state == "PREPARED"  # type: ignore[union-attr]
    view = j.view()
    assert view.pending_transaction_ids == tuple(f"tx-unknown-{n}" for n in range(4))
    [agg] = view.claims()
    assert agg.pending and agg.retain_until is None and agg.reference_count == 4


def test_a_pending_transaction_is_not_published_again(store: ObjectStore) -> None:
    """Retrying publish_reference on a PREPARED transaction refuses: it must be reconciled first."""
    j = journal(store)
    claim, _ = put_artifact(store)
    with pytest.raises(RuntimeError):
        j.publish_reference(claim, lambda: (_ for _ in ()).throw(RuntimeError("lost")), "tx-1")
    with pytest.raises(TransactionStateError, match="reconcile"):
        j.publish_reference(claim, lambda: None, "tx-1")


def test_failed_remover_keeps_the_lease(store: ObjectStore) -> None:
    """When the remover fails the lease stays COMMITTED and keeps protecting the artifact."""
    j = journal(store)
    claim, _ = put_artifact(store)
    j.publish_reference(claim, lambda: None, "tx-1")

    def remover() -> None:
        raise ConnectionError("memory store down")

    with pytest.raises(ConnectionError):
        j.remove_reference("tx-1", remover)
    assert j.transaction("tx-1").state == "COMMITTED"  # type: ignore[union-attr]
    with pytest.raises(TransactionStateError):
        j.remove_reference("tx-unknown", lambda: None)


def test_prepare_refuses_dangling_foreign_and_mismatched_claims(store: ObjectStore) -> None:
    """prepare refuses a missing artifact, another digest, another session's artifact, a reused txid."""
    j = journal(store)
    claim, _ = put_artifact(store)
    other = hashlib.sha256(b"other").hexdigest()
    sid = keys.SourceId.parse(claim.source_id)
    missing = ArtifactRetentionClaim(
        source_id=str(keys.SourceId(sid.session_hash, keys.new_artifact_name("bash"), sid.sha256_prefix)),
        sha256=claim.sha256)
    with pytest.raises(DanglingReference):
        j.prepare(missing, "tx-missing")
    wrong = ArtifactRetentionClaim(source_id=str(keys.SourceId(sid.session_hash, sid.name, other[:16])),
                                   sha256=other)
    with pytest.raises(DanglingReference):
        j.prepare(wrong, "tx-wrong")
    foreign, _ = put_artifact(store, session_id="another-session")
    with pytest.raises(SourceIdError):
        j.prepare(foreign, "tx-foreign")
    j.prepare(claim, "tx-1")
    with pytest.raises(TransactionStateError, match="another claim"):
        j.prepare(claim.model_copy(update={"reference_count": 2}), "tx-1")
    with pytest.raises(TransactionStateError):
        j.prepare(claim, "../../etc/passwd")
    assert [t.transaction_id for t in j.view().transactions] == ["tx-1"]


def test_condemnation_fences_prepare_and_claims_fence_condemnation(store: ObjectStore) -> None:
    """GC cannot condemn a claimed artifact, and prepare refuses a condemned one."""
    j = journal(store)
    claimed, _ = put_artifact(store)
    orphan, _ = put_artifact(store)
    j.publish_reference(claimed, lambda: None, "tx-1")

    def condemn(claim: ArtifactRetentionClaim, plan_id: str, **snapshot: Any) -> str:
        item = CondemnItem(claim.source_id, claim.sha256, **snapshot)
        return j.condemn_batch([item], plan_id)[claim.source_id]

    assert condemn(claimed, "plan-1") == "claimed"
    assert condemn(orphan, "plan-1", etag='"e"', size=64) == "condemned"
    assert condemn(orphan, "plan-1") == "condemned"  # idempotent for the same plan
    assert condemn(orphan, "plan-other") == "held"
    with pytest.raises(ArtifactCondemned):
        j.prepare(orphan, "tx-late")
    [c] = j.view().condemned
    assert (c.source_id, c.etag, c.size, c.plan_id) == (orphan.source_id, '"e"', 64, "plan-1")
    assert j.finish_condemnations([], [orphan.source_id], "plan-1") == {orphan.source_id: "lifted"}
    assert j.prepare(orphan, "tx-after-lift").outcome == "prepared"
    assert condemn(orphan, "plan-2") == "claimed"
    # an expired committed claim no longer protects
    expired, _ = put_artifact(store, retain_until=datetime.now(UTC) - timedelta(seconds=1))
    j.publish_reference(expired, lambda: None, "tx-expired")
    assert condemn(expired, "plan-3") == "condemned"
    assert j.finish_condemnations([expired.source_id], [], "plan-3") == {expired.source_id: "deleted"}
    assert j.finish_condemnations([expired.source_id], [], "plan-3") == {
        expired.source_id: "already_deleted"}
    assert j.view().condemned == ()
    with pytest.raises(ArtifactCondemned):
        j.prepare(expired.model_copy(update={"reference_count": 3}), "tx-deleted")
    assert condemn(expired, "plan-4") == "deleted"
    assert j.finish_condemnations([claimed.source_id], [], "plan-9") == {claimed.source_id: "not_condemned"}
    j.verify()


def test_claims_aggregate_by_artifact_and_digest(store: ObjectStore) -> None:
    """Several leases on one artifact aggregate: counts add up, the longest expiry wins."""
    j = journal(store)
    claim, _ = put_artifact(store)
    soon, later = datetime(2030, 1, 1, tzinfo=UTC), datetime(2031, 1, 1, tzinfo=UTC)
    j.publish_reference(claim.model_copy(update={"retain_until": soon, "reference_count": 2}),
                        lambda: None, "a")
    j.publish_reference(claim.model_copy(update={"retain_until": later}), lambda: None, "b")
    [agg] = j.claims()
    assert (agg.reference_count, agg.retain_until, agg.pending) == (3, later, False)
    assert agg.protects(datetime(2030, 6, 1, tzinfo=UTC))
    assert not agg.protects(datetime(2032, 1, 1, tzinfo=UTC))


def test_touch_writes_at_most_once_per_interval(store: ObjectStore) -> None:
    """touch refreshes last_active at most once per interval, across instances too."""
    now = [datetime(2030, 1, 1, tzinfo=UTC)]
    a = journal(store, clock=lambda: now[0])
    b = journal(store, clock=lambda: now[0])
    assert a.touch(60) is True
    assert a.touch(60) is False and b.touch(60) is False
    assert a.view().last_active == now[0] and a.view().generation == 1
    now[0] += timedelta(seconds=61)
    assert b.touch(60) is True
    assert a.view().generation == 2 and a.view().last_active == now[0]
    claim, _ = put_artifact(store)
    a.publish_reference(claim, lambda: None, "tx-1")  # records land on a touched manifest
    assert a.verify().records == 2


def test_history_moves_into_segments_and_recovers(store: ObjectStore) -> None:
    """Past the bound, old records go into segments; a fresh process folds them back to the same view."""
    j = journal(store)
    claim, _ = put_artifact(store)
    for n in range(20):
        j.publish_reference(claim, lambda: None, f"tx-{n}")
        if n % 3:
            j.remove_reference(f"tx-{n}", lambda: None)
    view = j.view()
    assert view.segments >= 4 and view.recent_records <= JCFG.journal_max_recent_records
    fresh = LeaseJournal(store, SESSION, JCFG)
    assert fresh.recover() == view
    report = fresh.verify()
    assert report.records == 2 * 20 + 13 and report.orphan_segments == ()
    # terminal transactions folded out of the manifest are still known (and idempotent)
    assert fresh.transaction("tx-1").state == "RELEASED"  # type: ignore[union-attr]
    assert fresh.release("tx-1").outcome == "already_released"
    assert fresh.publish_reference(claim, lambda: None, "tx-0").outcome == "already_committed"


def test_by_hash_journal_sees_the_same_view(store: ObjectStore) -> None:
    """GC opens a journal by session hash and sees the same verified view."""
    j = journal(store)
    claim, _ = put_artifact(store)
    j.publish_reference(claim, lambda: None, "tx-1")
    by_hash = LeaseJournal(store, config=JCFG, session_hash=keys.session_hash(SESSION))
    assert by_hash.view() == j.view()
    foreign, _ = put_artifact(store, session_id="someone-else")
    with pytest.raises(SourceIdError):
        by_hash.prepare(foreign, "tx-2")


def test_a_batch_larger_than_the_bound_compacts_only_durable_records(store: ObjectStore) -> None:
    """A single write that adds more records than the manifest keeps never moves its own
    (not yet durable) records into a segment, and the history still verifies."""
    j = journal(store)
    claim, _ = put_artifact(store)
    for n in range(5):
        j.publish_reference(claim, lambda: None, f"tx-{n}")
    orphans = [put_artifact(store)[0] for _ in range(20)]
    verdicts = j.condemn_batch([CondemnItem(c.source_id, c.sha256) for c in orphans], "plan-1")
    assert set(verdicts.values()) == {"condemned"}
    report = LeaseJournal(store, SESSION, JCFG).verify()
    assert report.records == 10 + 20 and report.condemned == 20 and report.segments == 1
