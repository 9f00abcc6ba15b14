"""The one fold that turns a session's journal records into state, checking each on the way.

Why apart from :mod:`.journal_format` (the persisted shapes and the record hash): the shapes
say what a record is; the fold says what a history of them means — session, sequence,
chain link, hash, shape and the transaction/condemnation state machine, checked one
record at a time — and is what the journal, the chain walker, CAS and GC run. Pure: no
I/O, so GC and the CLI can fold and check a journal without being able to write one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from s3spill.errors import JournalCorrupt
from s3spill.keys import SourceId
from s3spill.leases.journal_format import (
    GENESIS_HASH,
    TX_EVENTS,
    ArtifactEvent,
    CondemnationView,
    JournalManifest,
    TxEvent,
    TxView,
    compute_record_hash,
    corrupt,
    intent_hash,
)
from s3spill.leases.journal_record import JournalRecord, RecordInvalid, check_record
from s3spill.models import ArtifactRetentionClaim


@dataclass(frozen=True, slots=True)
class TxState:
    """A transaction inside the fold: the same fields as :class:`TxView`, minus the model
    overhead (a journal folds tens of thousands of these; only live ones become views)."""

    transaction_id: str
    state: TxEvent
    claim: ArtifactRetentionClaim
    intent_sha256: str
    prepared_sequence: int
    updated_sequence: int

    def view(self) -> TxView:
        return TxView.model_construct(
            transaction_id=self.transaction_id, state=self.state, claim=self.claim,
            intent_sha256=self.intent_sha256, prepared_sequence=self.prepared_sequence,
            updated_sequence=self.updated_sequence)


@dataclass(frozen=True, slots=True)
class ArtifactState:
    """GC's fence on one artifact inside the fold: the fields of :class:`CondemnationView`,
    which only the condemned ones become (:meth:`JournalFold.condemned_view`)."""

    source_id: str
    sha256: str
    plan_id: str
    state: ArtifactEvent
    sequence: int
    etag: str | None = None
    size: int | None = None
    version_id: str | None = None

    def view(self) -> CondemnationView:
        return CondemnationView.model_construct(
            source_id=self.source_id, sha256=self.sha256, plan_id=self.plan_id, state=self.state,
            sequence=self.sequence, etag=self.etag, size=self.size, version_id=self.version_id)


class _Label:
    """``<where>: record <n>``, formatted only if an error message needs it."""

    __slots__ = ("sequence", "where")

    def __init__(self, where: str, sequence: int) -> None:
        self.where, self.sequence = where, sequence

    def __str__(self) -> str:
        return f"{self.where}: record {self.sequence}"

    def __format__(self, spec: str) -> str:
        return str(self)


@dataclass
class JournalFold:
    """Everything the whole history implies, built one verified record at a time.

    ``apply`` is the only way in: it checks session, sequence, chain link, hash, shape
    and the state machine, and raises :class:`JournalCorrupt` naming what broke. A fold
    is only ever advanced for good with records durable in some manifest: writers (and
    incremental reads) apply tentatively between :meth:`begin` and :meth:`commit`, and
    :meth:`rollback` undoes exactly what they applied. An undo log instead of a copy is
    what keeps a write's cost independent of the history and of the live claims.
    """

    session_hash: str
    next_sequence: int = 0
    head_hash: str = GENESIS_HASH
    hashes: list[str] = field(default_factory=list)
    txs: dict[str, TxState] = field(default_factory=dict)
    live: dict[str, TxState] = field(default_factory=dict)
    artifacts: dict[str, ArtifactState] = field(default_factory=dict)
    live_by_source: dict[str, set[str]] = field(default_factory=dict)
    pending: set[str] = field(default_factory=set)
    _views: dict[str, TxView] | None = None
    _undo: list[Callable[[], None]] | None = None
    _saved: tuple[int, str] = (0, GENESIS_HASH)

    # -- tentative application ---------------------------------------------------------

    def begin(self) -> None:
        """Start recording undo steps (a fold has at most one open tentative change)."""
        if self._undo is not None:
            raise AssertionError("a tentative change is already open on this fold")
        self._undo = []
        self._saved = (self.next_sequence, self.head_hash)

    def commit(self) -> None:
        """Keep what was applied since :meth:`begin`."""
        self._undo = None

    def rollback(self) -> None:
        """Undo everything applied since :meth:`begin` (newest first)."""
        undo, self._undo = self._undo, None
        if undo is None:
            return
        for step in reversed(undo):
            step()
        self.next_sequence, self.head_hash = self._saved
        del self.hashes[self.next_sequence:]
        self._views = None

    def _put(self, d: dict[str, Any], key: str, value: Any) -> None:
        if self._undo is not None:
            if key in d:
                old = d[key]
                self._undo.append(lambda: d.__setitem__(key, old))
            else:
                self._undo.append(lambda: d.__delitem__(key))
        d[key] = value

    def _pop(self, d: dict[str, Any], key: str) -> None:
        old = d.pop(key)
        if self._undo is not None:
            self._undo.append(lambda: d.__setitem__(key, old))

    def _add(self, s: set[str], item: str) -> None:
        if item not in s:
            s.add(item)
            if self._undo is not None:
                self._undo.append(lambda: s.discard(item))

    def _discard(self, s: set[str], item: str) -> None:
        if item in s:
            s.discard(item)
            if self._undo is not None:
                self._undo.append(lambda: s.add(item))

    def live_views(self) -> dict[str, TxView]:
        """The live transactions as the manifest stores them (built lazily, then cached)."""
        if self._views is None:
            self._views = {t: self.live[t].view() for t in sorted(self.live)}
        return self._views

    def _bad(self, reason: str, message: str) -> JournalCorrupt:
        return corrupt(self.session_hash, reason, message)

    # -- reading records ---------------------------------------------------------------

    def check_known(self, raw: Any, where: str) -> None:
        """A record below ``next_sequence`` seen again: it must hash to what was applied."""
        seq = raw.get("sequence") if isinstance(raw, dict) else None
        if not isinstance(seq, int) or not 0 <= seq < self.next_sequence:
            raise self._bad("unparseable", f"{where}: record without a valid sequence")
        if compute_record_hash(raw) != self.hashes[seq] or raw.get("record_hash") != self.hashes[seq]:
            raise self._bad("hash_mismatch", f"{where}: record {seq} differs from the history "
                            "already verified (the record was rewritten)")

    def apply(self, raw: Any, where: str, built: JournalRecord | None = None) -> JournalRecord:
        """Check ``raw`` (placement, hash, fields, shape) and fold it in. ``built``: the record
        as :func:`~s3spill.leases.journal_record.new_record` built and checked it from ``raw``
        a moment ago, hash included, so neither is done twice."""
        if not isinstance(raw, dict):
            raise self._bad("unparseable", f"{where}: a record is not a JSON object")
        if (raw.get("session_hash") != self.session_hash or raw.get("sequence") != self.next_sequence
                or raw.get("prev_hash") != self.head_hash):
            self._misplaced(raw, where)
        if built is not None:
            rec = built
        else:
            if compute_record_hash(raw) != raw.get("record_hash"):
                raise self._bad("hash_mismatch", f"{where}: record {raw.get('sequence')}: content does not "
                                "match its SHA-256 (the record was altered)")
            try:
                rec = check_record(raw)
            except RecordInvalid as exc:
                raise self._bad("unparseable", f"{where}: record {raw.get('sequence')} is not a valid "
                                f"record: {exc}") from None
        self._transition(rec, raw, _Label(where, rec.sequence))
        self.hashes.append(rec.record_hash)
        self.head_hash = rec.record_hash
        self.next_sequence += 1
        return rec

    def _misplaced(self, raw: dict[str, Any], where: str) -> None:
        label = f"{where}: record {raw.get('sequence', '?')}"
        if raw.get("session_hash") != self.session_hash:
            raise self._bad("foreign_record", f"{label} belongs to another session "
                            f"({str(raw.get('session_hash'))[:32]!r})")
        if raw.get("sequence") != self.next_sequence:
            raise self._bad("sequence_gap", f"{label}: expected sequence {self.next_sequence}, "
                            f"found {raw.get('sequence')!r} (records are missing or reordered)")
        raise self._bad("chain_break", f"{label} does not link to its predecessor (hash chain broken)")

    # -- the state machine -------------------------------------------------------------

    def _transition(self, rec: JournalRecord, raw: dict[str, Any], label: _Label) -> None:
        if rec.event in TX_EVENTS:
            self._tx_transition(rec, raw, label)
        else:
            self._artifact_transition(rec, label)

    def _tx_transition(self, rec: JournalRecord, raw: dict[str, Any], label: _Label) -> None:
        txid = rec.transaction_id
        assert txid is not None and rec.intent_sha256 is not None
        existing = self.txs.get(txid)
        if rec.event == "PREPARED":
            assert rec.claim is not None
            if intent_hash(raw["claim"]) != rec.intent_sha256:
                raise self._bad("rewritten_intent", f"{label}: the claim of {txid} does not match "
                                "its intent digest (intent rewritten)")
            # the claim's own validator parsed the id: field 1 is its session hash
            if rec.claim.source_id.split(":", 2)[1] != self.session_hash:
                raise self._bad("foreign_record", f"{label}: claim of {txid} names another session")
            if existing is not None:
                reason = ("rewritten_intent" if existing.intent_sha256 != rec.intent_sha256
                          else "invalid_transition")
                raise self._bad(reason, f"{label}: {txid} prepared twice")
            art = self.artifacts.get(rec.claim.source_id)
            if art is not None and art.state in ("CONDEMNED", "DELETED"):
                raise self._bad("invalid_transition", f"{label}: {txid} prepared on a "
                                f"{art.state.lower()} artifact")
            state = TxState(txid, "PREPARED", rec.claim, rec.intent_sha256, rec.sequence, rec.sequence)
            self._put(self.txs, txid, state)
            self._put(self.live, txid, state)
            self._add(self.pending, txid)
            self._views = None
            holders = self.live_by_source.get(rec.claim.source_id)
            if holders is None:
                holders = set()
                self._put(self.live_by_source, rec.claim.source_id, holders)
            self._add(holders, txid)
            return
        if existing is None:
            raise self._bad("invalid_transition", f"{label}: {rec.event} for unknown transaction {txid}")
        if existing.intent_sha256 != rec.intent_sha256:
            raise self._bad("rewritten_intent", f"{label}: {rec.event} of {txid} carries another "
                            "intent than its PREPARED record (intent rewritten)")
        allowed = {"COMMITTED": "PREPARED", "ABORTED": "PREPARED", "RELEASED": "COMMITTED"}
        if existing.state != allowed[rec.event]:
            raise self._bad("invalid_transition", f"{label}: {rec.event} after {existing.state} "
                            f"for {txid}")
        event: TxEvent = "COMMITTED" if rec.event == "COMMITTED" else (
            "ABORTED" if rec.event == "ABORTED" else "RELEASED")
        new = TxState(txid, event, existing.claim, existing.intent_sha256, existing.prepared_sequence,
                      rec.sequence)
        self._put(self.txs, txid, new)
        self._discard(self.pending, txid)
        self._views = None
        if rec.event == "COMMITTED":
            self._put(self.live, txid, new)
        else:
            self._pop(self.live, txid)
            holders = self.live_by_source[existing.claim.source_id]
            self._discard(holders, txid)
            if not holders:
                self._pop(self.live_by_source, existing.claim.source_id)

    def _artifact_transition(self, rec: JournalRecord, label: _Label) -> None:
        assert rec.source_id is not None and rec.sha256 is not None and rec.plan_id is not None
        if SourceId.parse(rec.source_id).session_hash != self.session_hash:
            raise self._bad("foreign_record", f"{label}: {rec.event} names another session's artifact")
        current = self.artifacts.get(rec.source_id)
        if rec.event == "CONDEMNED":
            if current is not None and current.state != "LIFTED":
                raise self._bad("invalid_transition", f"{label}: CONDEMNED while {current.state}")
            if self.protecting(rec.source_id, rec.at):
                raise self._bad("invalid_transition", f"{label}: CONDEMNED while a claim protects "
                                "the artifact")
        elif current is None or current.state != "CONDEMNED" or current.plan_id != rec.plan_id:
            raise self._bad("invalid_transition", f"{label}: {rec.event} without a CONDEMNED "
                            f"record of plan {rec.plan_id}")
        snapshot = current if rec.event != "CONDEMNED" and current is not None else rec
        event: ArtifactEvent = "CONDEMNED" if rec.event == "CONDEMNED" else (
            "DELETED" if rec.event == "DELETED" else "LIFTED")
        self._put(self.artifacts, rec.source_id, ArtifactState(
            rec.source_id, rec.sha256, rec.plan_id, event, rec.sequence, snapshot.etag, snapshot.size,
            snapshot.version_id))

    # -- questions ---------------------------------------------------------------------

    def protecting(self, source_id: str, at: datetime) -> list[TxState]:
        """Claims that protect ``source_id`` at ``at``: any PREPARED, any unexpired COMMITTED."""
        out = []
        for txid in sorted(self.live_by_source.get(source_id, ())):
            tx = self.live[txid]
            until = tx.claim.retain_until
            if tx.state == "PREPARED" or until is None or until > at:
                out.append(tx)
        return out

    def pending_ids(self) -> list[str]:
        return sorted(self.pending)

    def condemned_view(self) -> dict[str, CondemnationView]:
        return {k: v.view() for k, v in sorted(self.artifacts.items()) if v.state == "CONDEMNED"}

    def check_view(self, manifest: JournalManifest) -> None:
        """The manifest's stored view must be exactly what the history folds to."""
        if manifest.next_sequence != self.next_sequence or manifest.head_hash != self.head_hash:
            raise self._bad("chain_break", "the manifest's chain head does not match its records")
        if manifest.pending_transaction_ids != self.pending_ids():
            raise self._bad("view_mismatch", "the manifest's pending transaction ids disagree "
                            "with its history")
        if manifest.schema_version == 2:
            return  # nothing else to compare: the claims are only in the history
        views = self.live_views()
        if manifest.transactions != views:
            names = sorted(set(manifest.transactions) | set(views))
            name = next((n for n in names if manifest.transactions.get(n) != views.get(n)), "?")
            raise self._bad("view_mismatch", f"the manifest's claim view disagrees with its history "
                            f"at transaction {name} (view edited or intent rewritten)")
        if manifest.condemned != self.condemned_view():
            raise self._bad("view_mismatch", "the manifest's condemned artifacts disagree with "
                            "its history")
