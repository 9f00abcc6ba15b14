"""Settle PREPARED transactions by asking the owner, per the source's outcome table.

============================================  ==============================  ==========
owner observation                             journal                         report
============================================  ==============================  ==========
published, same source id and full digest     append COMMITTED                committed
published, another identity                   stays PREPARED                  pending_conflict
unknown / owner unreachable                   stays PREPARED                  pending_unknown
absent, not sealed                            seal, then append ABORTED       aborted
slot changed between observation and seal     stays PREPARED                  pending_stale
absent, sealed                                append ABORTED                  aborted
published then removed (removed tombstone)    COMMITTED, then RELEASED        released
============================================  ==============================  ==========

The absence path is *seal first, abort second*: if the process dies in between, the
artifact is still protected by PREPARED and the next run sees a sealed absence. The
other order would reopen the window in which GC deletes the artifact and a late
reference then becomes visible. Terminal outcomes are idempotent (``already_*``) and
every journal append is a CAS, so concurrent reconcilers append at most one terminal
record per transaction. For a COMMITTED transaction whose owner slot holds a removed
tombstone (a remover that finished before its process died), RELEASED is appended.

Reports carry transaction id, outcome, state, reason and generations — no keys, paths
or reference content.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from s3spill.errors import JournalContention, StoreUnavailable, TransactionStateError
from s3spill.failpoints import declare, failpoint
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.journal_format import TxView
from s3spill.leases.owner import ArtifactReferenceOwner, OwnerObservation
from s3spill.leases.reports import TransitionResult
from s3spill.log import get_logger

FP_AFTER_OBSERVE = declare("reconcile.after_observe", "owner observed; nothing decided yet")
FP_AFTER_SEAL = declare("reconcile.after_seal", "owner sealed the absence; ABORTED not appended")

log = get_logger("s3spill.leases.reconcile")

PENDING_OUTCOMES = frozenset({"pending_conflict", "pending_unknown", "pending_stale"})


@dataclass(frozen=True)
class ReconciliationReport:
    transaction_id: str
    outcome: str
    state: str
    reason: str
    #: The journal manifest's generation after this step.
    generation: int
    #: The owner's generation (slot ETag) the decision was fenced on, if any.
    owner_generation: str | None = None

    @property
    def settled(self) -> bool:
        return self.outcome not in PENDING_OUTCOMES

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _report(txid: str, result: TransitionResult | None, outcome: str, state: str, reason: str,
            journal: LeaseJournal, obs: OwnerObservation | None) -> ReconciliationReport:
    generation = result.generation if result is not None else journal.generation
    report = ReconciliationReport(txid, outcome, state, reason, generation,
                                  obs.generation if obs else None)
    log.info("reconcile.outcome", transaction_id=txid, outcome=outcome, reason=reason,
             generation=generation)
    return report


def reconcile_reference(journal: LeaseJournal, owner: ArtifactReferenceOwner,
                        transaction_id: str) -> ReconciliationReport:
    """Bring one transaction as far as the owner's answer allows; never guesses."""
    tx = journal.transaction(transaction_id)
    if tx is None:
        raise TransactionStateError(f"unknown transaction {transaction_id}")
    if tx.state in ("ABORTED", "RELEASED"):
        return _report(transaction_id, None, f"already_{tx.state.lower()}", tx.state, "terminal",
                       journal, None)
    obs = _observe(owner, tx, transaction_id)
    failpoint(FP_AFTER_OBSERVE)
    if tx.state == "COMMITTED":
        if obs.status == "removed":
            return _released(journal, transaction_id, obs)
        return _report(transaction_id, None, "already_committed", "COMMITTED", f"owner_{obs.status}",
                       journal, obs)
    return _settle_prepared(journal, owner, tx, transaction_id, obs)


def _observe(owner: ArtifactReferenceOwner, tx: TxView, transaction_id: str) -> OwnerObservation:
    try:
        return owner.observe(tx)
    except Exception as exc:  # noqa: BLE001 - the owner is foreign code: any failure is "unknown"
        log.warning("reconcile.observe_failed", transaction_id=transaction_id, error=type(exc).__name__)
        return OwnerObservation(transaction_id, "unknown")


def _released(journal: LeaseJournal, transaction_id: str, obs: OwnerObservation) -> ReconciliationReport:
    r = journal.release(transaction_id)
    return _report(transaction_id, r, "released" if r.changed else r.outcome, "RELEASED",
                   "owner_removed", journal, obs)


def _settle_prepared(journal: LeaseJournal, owner: ArtifactReferenceOwner, tx: TxView,
                     transaction_id: str, obs: OwnerObservation) -> ReconciliationReport:
    """A PREPARED transaction: commit what the owner published, abort only a sealed absence."""
    if obs.status == "published":
        if not obs.matches(tx.claim):
            return _report(transaction_id, None, "pending_conflict", "PREPARED", "identity_mismatch",
                           journal, obs)
        r = journal.commit(transaction_id)
        return _report(transaction_id, r, "committed" if r.changed else r.outcome, r.state or "COMMITTED",
                       "owner_published", journal, obs)
    if obs.status == "unknown":
        return _report(transaction_id, None, "pending_unknown", "PREPARED", "owner_unreachable", journal, obs)
    if obs.status == "removed":
        if obs.source_id is not None and not obs.matches(tx.claim):
            return _report(transaction_id, None, "pending_conflict", "PREPARED", "identity_mismatch",
                           journal, obs)
        journal.commit(transaction_id)
        return _released(journal, transaction_id, obs)
    return _seal_and_abort(journal, owner, tx, transaction_id, obs)


def _seal_and_abort(journal: LeaseJournal, owner: ArtifactReferenceOwner, tx: TxView,
                    transaction_id: str, obs: OwnerObservation) -> ReconciliationReport:
    """ABORTED only once the owner's absence is sealed (or was already): nothing can be published later."""
    reason = "sealed_absence"
    if obs.status == "absent":
        try:
            sealed = owner.seal_absent(tx, obs.generation)
        except Exception as exc:  # noqa: BLE001 - foreign owner: outcome of the seal is unknown
            log.warning("reconcile.seal_failed", transaction_id=transaction_id, error=type(exc).__name__)
            return _report(transaction_id, None, "pending_unknown", "PREPARED", "seal_unknown", journal, obs)
        if sealed == "stale":
            return _report(transaction_id, None, "pending_stale", "PREPARED", "slot_changed", journal, obs)
        reason = "sealed_absence" if sealed == "sealed" else "already_sealed"
        failpoint(FP_AFTER_SEAL)
    r = journal.abort(transaction_id, reason)
    return _report(transaction_id, r, "aborted" if r.changed else r.outcome, "ABORTED", reason, journal, obs)


def reconcile_pending(journal: LeaseJournal, owner: ArtifactReferenceOwner, *,
                      include_committed: bool = False) -> list[ReconciliationReport]:
    """Reconcile the pending transactions seen at the start (new ones wait for the next run).

    ``include_committed`` also observes COMMITTED transactions, to release those whose
    remover finished before its process died (one owner read each).
    """
    view = journal.view()
    states = {t.transaction_id: t.state for t in view.transactions
              if t.state == "PREPARED" or include_committed}
    reports = []
    for txid, state in states.items():
        try:
            reports.append(reconcile_reference(journal, owner, txid))
        except (StoreUnavailable, JournalContention) as exc:
            log.warning("reconcile.journal_unavailable", transaction_id=txid, error=type(exc).__name__)
            outcome = "pending_unknown" if state == "PREPARED" else "already_committed"
            reports.append(ReconciliationReport(txid, outcome, state, "journal_unavailable",
                                                journal.generation))
    return reports
