"""The lease journal: one compare-and-swapped manifest object per session.

Why a manifest and not an append-only log object: S3 cannot append, but it can replace
an object only if its ETag is still the one we read (``If-Match``) and create one only
if absent (``If-None-Match: *``). So every state change is read → verify → build the
next manifest → conditional write; the ETag is the fence, ``generation`` counts writes.

A write has three outcomes. *Won*: adopt the new state. *Lost* (412/409/exists):
re-read, re-validate against what the winner wrote, re-apply — every transition is
planned from the state it is applied to, so a transition someone else already made
becomes a no-op that says so (``already_committed``). *Unknown* (the store gave up
after the request may have landed): re-read and look for our write (its ``write_id``,
or our record's hash at its sequence) — never apply twice. Because each write is
conditional on the ETag it was built from, a delayed duplicate of an old request can
no longer land once anything else has been written.

The manifest stays small and its cost per write constant (version 2 layout): it holds
the chain head, the pending set, a window of recent records and a pointer to the newest
history segment — no claim view and no segment index, so neither the history nor the
number of live claims makes a write bigger. When the window holds more than
``journal_max_recent_records`` records, the oldest durable ones go into an immutable,
content-addressed segment that names the segment before it, written with
create-if-absent *before* the CAS that drops them from the manifest. A writer that
loses the CAS leaves a segment nobody references; it is either byte-identical to the
one the winner (or the next writer) references, or unreferenced and ignored by
recovery (``verify`` lists it). The claims are folded from the history: the first read
in a process walks the segment chain back to its start, later reads only what is new;
a write applies its records to the verified fold in place and undoes them if it does
not win. Version 1 manifests (claim view + full index) are read as they are and
migrated by the first write. See the README section "Lease journal".
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from s3spill import keys
from s3spill.config import TransferConfig
from s3spill.errors import (
    ArtifactCondemned,
    ArtifactPublicationRejected,
    ConfigError,
    DanglingReference,
    NotFound,
    SourceIdError,
    TransactionStateError,
)
from s3spill.failpoints import declare, failpoint
from s3spill.keys import SourceId
from s3spill.leases.cas import ManifestCandidate, ManifestCas, PlannedAppend
from s3spill.leases.chain import JournalStats, ManifestReader, scan_orphan_segments
from s3spill.leases.condemnation import (
    CondemnItem,
    CondemnVerdict,
    condemnation_planner,
    finish_planner,
)
from s3spill.leases.evidence import read_history_evidence
from s3spill.leases.journal_fold import JournalFold
from s3spill.leases.journal_format import (
    GENESIS_HASH,
    TXID_PATTERN,
    JournalManifest,
    TxView,
    claim_json,
    corrupt,
    intent_hash,
)
from s3spill.leases.reports import (
    AggregatedClaim,
    JournalView,
    TransitionResult,
    VerifyReport,
)
from s3spill.models import ArtifactRetentionClaim, utcnow
from s3spill.store.base import ObjectStore
from s3spill.store.commit import content_info

__all__ = ["AggregatedClaim", "CondemnItem", "CondemnVerdict", "JournalStats", "JournalView", "LeaseJournal",
           "TransitionResult", "VerifyReport", "new_transaction_id"]

FP_AFTER_PREPARED = declare("journal.after_prepared", "PREPARED durable; publisher not called yet")
FP_BEFORE_COMMITTED = declare("journal.before_committed", "publisher returned; COMMITTED not appended")
FP_AFTER_COMMITTED = declare("journal.after_committed", "COMMITTED durable; publish_reference not returned")
FP_AFTER_REMOVER = declare("journal.after_remover", "remover succeeded; RELEASED not appended")


def new_transaction_id() -> str:
    """A fresh, stable transaction id; keep it to retry or reconcile the same publication."""
    return f"tx-{secrets.token_hex(16)}"


def check_transaction_id(txid: str) -> str:
    if not isinstance(txid, str) or not re.match(TXID_PATTERN, txid):
        raise TransactionStateError("transaction id must match [A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
    return txid


class LeaseJournal:
    """Retention leases of one session, recorded as a hash-chained journal in the store.

    Use :meth:`publish_reference` / :meth:`remove_reference` for the memory protocol,
    :mod:`s3spill.leases.reconcile` for pending transactions, :meth:`touch` for session
    liveness, and :meth:`condemn_batch` / :meth:`finish_condemnations`
    from GC. Every read verifies what it reads: the first one in a process folds the
    whole history (segments included), later ones only what is new. It decides what to
    append; the verified reads are a :class:`~s3spill.leases.chain.ManifestReader`'s and
    the conditional writes a :class:`~s3spill.leases.cas.ManifestCas`'s.
    """

    def __init__(
        self, store: ObjectStore, session_id: str | None = None, config: TransferConfig | None = None,
        *, session_hash: str | None = None, clock: Callable[[], datetime] = utcnow,
    ) -> None:
        if (session_id is None) == (session_hash is None):
            raise ConfigError("give exactly one of session_id and session_hash")
        self.store = store
        self.session_id = session_id
        self.session_hash = (keys.session_hash(session_id) if session_id is not None
                             else keys.check_session_hash(str(session_hash)))
        self.config = config or TransferConfig()
        self.clock = clock
        self.stats = JournalStats()
        self._chain = ManifestReader(store, self.session_hash, self.stats)
        self._cas = ManifestCas(self._chain, self.config, clock)
        self.key = self._chain.key
        self._last_active_seen: datetime | None = None

    @property
    def generation(self) -> int:
        """The manifest generation this process last verified (0: none yet)."""
        return self._chain.generation

    @property
    def etag(self) -> str | None:
        """The ETag of the manifest this process last verified (None: there was none)."""
        return self._chain.etag

    @property
    def manifest_bytes(self) -> int:
        """The size of the manifest this process last read or wrote (what every write costs)."""
        return self._chain.manifest_bytes

    def refresh(self) -> JournalFold:
        """Read and verify the current manifest (incrementally); the verified fold."""
        return self._chain.refresh()

    # -- reading -------------------------------------------------------------------------

    def view(self) -> JournalView:
        """The current claim view, verified."""
        fold = self.refresh()
        m = self._chain.manifest
        return JournalView(
            session_hash=self.session_hash, exists=m is not None, generation=self._chain.generation,
            journal_id=self._chain.journal_id, last_active=m.last_active if m else None,
            next_sequence=fold.next_sequence, head_hash=fold.head_hash,
            transactions=tuple(fold.live_views().values()),
            pending_transaction_ids=tuple(fold.pending_ids()),
            condemned=tuple(fold.condemned_view().values()),
            segments=m.segment_count if m else 0, recent_records=len(m.records) if m else 0,
            manifest_bytes=self._chain.manifest_bytes if m else 0,
            known_transaction_ids=frozenset(fold.txs),
        )

    def folded(self) -> tuple[JournalFold, JournalManifest | None]:
        """The verified fold and the manifest it was read from (``None``: no journal yet):
        what :meth:`view` is built from, for a reader (GC) that needs the live transactions
        and condemnations as the fold keeps them, not as views."""
        fold = self.refresh()
        return fold, self._chain.manifest

    def transaction(self, transaction_id: str) -> TxView | None:
        """The folded state of one transaction (terminal ones included), verified."""
        tx = self.refresh().txs.get(transaction_id)
        return tx.view() if tx is not None else None

    def prepared_sequence(self, transaction_id: str) -> int | None:
        """The PREPARED sequence of a transaction as this process last verified or wrote
        it (no request); stored in owner slots so a rolled-back manifest is visible."""
        tx = self._chain.fold.txs.get(transaction_id) if self._chain.fold is not None else None
        return tx.prepared_sequence if tx is not None else None

    def deleted_by_gc(self, source_id: str) -> bool:
        """Does the verified history record that GC deleted this artifact?"""
        art = self.refresh().artifacts.get(source_id)
        return art is not None and art.state == "DELETED"

    def recent_records(self) -> list[dict[str, Any]]:
        self.refresh()
        return list(self._chain.manifest.records) if self._chain.manifest else []

    def claims(self) -> list[AggregatedClaim]:
        """Live and pending claims aggregated per artifact (source id + full digest)."""
        return self.view().claims()

    def recover(self) -> JournalView:
        """Forget what this process verified and fold manifest + segments from scratch."""
        self._chain.reset()
        return self.view()

    def verify(self) -> VerifyReport:
        """Fold everything again from the store (raises :class:`JournalCorrupt`), check it
        against the history outside the manifest (owner slots, segment keys: a missing or
        rolled-back manifest is ``manifest_missing`` / ``rollback``), then classify
        segments the manifest does not reference (harmless, but reported)."""
        started = time.monotonic()
        self._chain.reset()
        fold = self.refresh()
        m = self._chain.manifest
        doubts = read_history_evidence(self.store, self.session_hash).doubts(
            exists=m is not None, next_sequence=fold.next_sequence, known_transactions=set(fold.txs))
        if doubts:
            raise corrupt(self.session_hash, "rollback" if m is not None else "manifest_missing",
                          "; ".join(doubts))
        orphans = scan_orphan_segments(self.store, self.session_hash, m, fold, self._chain.segment_keys,
                                       self._chain.merged_ranges)
        return VerifyReport(
            session_hash=self.session_hash, exists=m is not None, generation=self._chain.generation,
            records=fold.next_sequence, segments=m.segment_count if m else 0,
            transactions=len(fold.txs), live=len(fold.live), pending=len(fold.pending_ids()),
            condemned=len(fold.condemned_view()), head_hash=fold.head_hash,
            manifest_bytes=self._chain.manifest_bytes if m else 0,
            orphan_segments=tuple(orphans), seconds=round(time.monotonic() - started, 4),
        )

    # -- transactions --------------------------------------------------------------------

    def _check_claim(self, claim: ArtifactRetentionClaim) -> SourceId:
        sid = SourceId.parse(claim.source_id)
        if self.session_id is not None:
            sid.require_session(self.session_id)
        elif sid.session_hash != self.session_hash:
            raise SourceIdError(f"source id {sid} does not belong to this session")
        if not claim.sha256.startswith(sid.sha256_prefix):
            raise SourceIdError(f"claim digest does not match the digest prefix of {sid}")
        return sid

    def _check_artifact(self, sid: SourceId, sha256: str) -> None:
        try:
            info = content_info(self.store,
                                self.store.head(keys.artifact_key(sid.session_hash, sid.name)))
        except NotFound:
            raise DanglingReference(f"artifact {sid} does not exist; refusing a dangling reference") from None
        if info.sha256 is None:
            raise DanglingReference(f"the store reports no SHA-256 for {sid}; cannot verify the claim")
        if info.sha256 != sha256:
            raise DanglingReference(f"artifact {sid} has another SHA-256 than the claim; refused")

    def prepare(self, claim: ArtifactRetentionClaim, transaction_id: str) -> TransitionResult:
        """Append PREPARED (the durable intent) after checking, in the same CAS, that the
        artifact exists with the claimed digest and that GC has not condemned it."""
        txid = check_transaction_id(transaction_id)
        sid = self._check_claim(claim)
        raw_claim = claim_json(claim)
        intent = intent_hash(raw_claim)

        def plan(manifest: JournalManifest | None, fold: JournalFold) -> PlannedAppend | TransitionResult:
            existing = fold.txs.get(txid)
            if existing is not None:
                if existing.intent_sha256 != intent:
                    raise TransactionStateError(f"transaction {txid} already names another claim")
                return self._cas.noop(f"already_{existing.state.lower()}", existing.state, txid=txid,
                                      source_id=existing.claim.source_id)
            art = fold.artifacts.get(claim.source_id)
            if art is not None and art.state in ("CONDEMNED", "DELETED"):
                raise ArtifactCondemned(f"artifact {sid} is {art.state.lower()} by GC plan {art.plan_id}")
            self._check_artifact(sid, claim.sha256)
            return PlannedAppend([{"event": "PREPARED", "transaction_id": txid, "claim": claim,
                            "intent_sha256": intent}], "prepared", "PREPARED", transaction_id=txid,
                                 source_id=claim.source_id)

        return self._cas.mutate(plan)

    def _transition(self, txid: str, event: str, allowed_from: str,
                    noop_states: dict[str, str], reason: str | None = None) -> TransitionResult:
        check_transaction_id(txid)

        def plan(manifest: JournalManifest | None, fold: JournalFold) -> PlannedAppend | TransitionResult:
            tx = fold.txs.get(txid)
            if tx is None:
                raise TransactionStateError(f"unknown transaction {txid}")
            if tx.state in noop_states:
                return self._cas.noop(noop_states[tx.state], tx.state, txid=txid,
                                      source_id=tx.claim.source_id)
            if tx.state != allowed_from:
                raise TransactionStateError(f"cannot append {event} to transaction {txid}: it is {tx.state}")
            spec: dict[str, Any] = {"event": event, "transaction_id": txid, "intent_sha256": tx.intent_sha256}
            if reason:
                spec["reason"] = reason
            return PlannedAppend([spec], event.lower(), event, transaction_id=txid,
                                 source_id=tx.claim.source_id)

        return self._cas.mutate(plan)

    def commit(self, transaction_id: str) -> TransitionResult:
        """PREPARED → COMMITTED (the reference is confirmed durable). Idempotent."""
        return self._transition(transaction_id, "COMMITTED", "PREPARED",
                                {"COMMITTED": "already_committed", "RELEASED": "already_released"})

    def abort(self, transaction_id: str, reason: str = "publication_rejected") -> TransitionResult:
        """PREPARED → ABORTED. Only when nothing was and nothing will ever be published:
        a typed rejection from the publisher, or a sealed absence at the owner."""
        return self._transition(transaction_id, "ABORTED", "PREPARED",
                                {"ABORTED": "already_aborted"}, reason)

    def release(self, transaction_id: str) -> TransitionResult:
        """COMMITTED → RELEASED (the reference was removed). Idempotent."""
        return self._transition(transaction_id, "RELEASED", "COMMITTED", {"RELEASED": "already_released"})

    def publish_reference(self, claim: ArtifactRetentionClaim, publisher: Callable[[], object],
                          transaction_id: str | None = None) -> TransitionResult:
        """PREPARED (durable) → ``publisher()`` → COMMITTED.

        Only :class:`ArtifactPublicationRejected` from the publisher aborts (and is
        re-raised); any other exception propagates and leaves the transaction PREPARED —
        the write may have landed — for :mod:`s3spill.leases.reconcile` to settle. An existing
        transaction id is never re-published: a committed one is a no-op, a pending one
        must be reconciled first.
        """
        txid = transaction_id or new_transaction_id()
        prepared = self.prepare(claim, txid)
        if prepared.outcome != "prepared":
            if prepared.state == "COMMITTED":
                return prepared
            if prepared.state == "PREPARED":
                raise TransactionStateError(
                    f"transaction {txid} is already PREPARED from an earlier attempt; reconcile it "
                    "with the owner instead of publishing again")
            raise TransactionStateError(f"transaction {txid} is {prepared.state}; use a new transaction id")
        failpoint(FP_AFTER_PREPARED)
        try:
            publisher()
        except ArtifactPublicationRejected:
            self.abort(txid, "publication_rejected")
            raise
        failpoint(FP_BEFORE_COMMITTED)
        committed = self.commit(txid)
        failpoint(FP_AFTER_COMMITTED)
        return committed

    def remove_reference(self, transaction_id: str, remover: Callable[[], object]) -> TransitionResult:
        """``remover()`` first; RELEASED only after it succeeded (else the lease stays COMMITTED)."""
        tx = self.transaction(check_transaction_id(transaction_id))
        if tx is None:
            raise TransactionStateError(f"unknown transaction {transaction_id}")
        if tx.state == "RELEASED":
            return self._cas.noop("already_released", "RELEASED", txid=transaction_id)
        if tx.state != "COMMITTED":
            raise TransactionStateError(f"cannot remove the reference of {transaction_id}: it is {tx.state}"
                                        + ("; reconcile it first" if tx.state == "PREPARED" else ""))
        remover()
        failpoint(FP_AFTER_REMOVER)
        return self.release(transaction_id)

    # -- GC's batched fence (one CAS for many artifacts of the session) ------------------

    def condemn_batch(self, items: Sequence[CondemnItem], plan_id: str, *,
                      active_within: timedelta | None = None,
                      takeover: Mapping[str, str] | None = None) -> dict[str, CondemnVerdict]:
        """Condemn many artifacts in one CAS; a verdict per source id, decided in that CAS.

        Verdicts (see :data:`CondemnVerdict`): ``condemned`` (fenced by
        ``plan_id``, also when it already was), ``claimed`` (a pending or unexpired claim
        protects it; nothing appended), ``active`` (``last_active`` is within
        ``active_within``: nothing is condemned at all), ``deleted`` (already DELETED),
        ``held`` (another plan's condemnation stands). ``takeover`` maps a source id to the
        plan whose leftover condemnation this one adopts — LIFTED for the old plan and
        CONDEMNED for the new in the same write, so two GC runs never both think they
        own it; if that condemnation changed meanwhile, the verdict is ``held``.
        """
        for item in items:
            if SourceId.parse(item.source_id).session_hash != self.session_hash:
                raise SourceIdError(f"source id {item.source_id} does not belong to this session")
        verdicts: dict[str, CondemnVerdict] = {}
        self._cas.mutate(condemnation_planner(self._cas, items, plan_id, verdicts, clock=self.clock,
                                              active_within=active_within, takeover=takeover))
        return dict(verdicts)

    def finish_condemnations(self, deleted: Sequence[str], lifted: Sequence[str], plan_id: str, *,
                             reason: str = "race_detected") -> dict[str, str]:
        """DELETED / LIFTED for many of ``plan_id``'s condemnations in one CAS.

        Idempotent: an artifact already in that state says ``already_deleted`` /
        ``already_lifted``; one no longer condemned by ``plan_id`` (taken over by a later
        run) says ``not_condemned`` and is left alone.
        """
        results: dict[str, str] = {}
        self._cas.mutate(finish_planner(self._cas, deleted, lifted, plan_id, results, reason=reason))
        return dict(results)

    # -- liveness ------------------------------------------------------------------------

    def touch(self, min_interval: float | timedelta = 60.0) -> bool:
        """Refresh ``last_active`` at most once per ``min_interval``; True if it wrote.

        Not a chained record: liveness is a hint GC reads (a session active within its
        ``session_ttl`` keeps everything), so it does not need, or get, a place in the
        history. Callers on the context path should fail open on errors.
        """
        interval = min_interval if isinstance(min_interval, timedelta) else timedelta(seconds=min_interval)
        now = self.clock()
        if self._last_active_seen is not None and now - self._last_active_seen < interval:
            return False

        def build(manifest: JournalManifest | None,
                  fold: JournalFold | None) -> ManifestCandidate | TransitionResult:
            if manifest is not None and manifest.last_active is not None \
                    and now - manifest.last_active < interval:
                self._last_active_seen = manifest.last_active
                return TransitionResult("already_active", None, False, manifest.generation)
            if manifest is None:
                new = JournalManifest(
                    session_hash=self.session_hash, journal_id=secrets.token_hex(16), generation=1,
                    write_id=secrets.token_hex(16), created_at=now, updated_at=now, last_active=now,
                    next_sequence=0, head_hash=GENESIS_HASH)
            else:
                new = manifest.model_copy(update={"generation": manifest.generation + 1,
                                                  "write_id": secrets.token_hex(16),
                                                  "updated_at": now, "last_active": now})
            return ManifestCandidate(new, None, TransitionResult("touched", None, True, new.generation))

        result = self._cas.swap(build, verify=False)
        if result.changed:
            self._last_active_seen = now
        return result.changed
