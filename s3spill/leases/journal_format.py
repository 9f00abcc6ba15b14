"""The lease journal's persisted shapes and the one fold that turns records into state.

Kept apart from :mod:`s3spill.leases.journal` (which does I/O and compare-and-swap) so that the
verification rules are pure, small and testable on their own, and so that GC and the
CLI can fold and check a journal without being able to write one.

Hashing: a record's ``record_hash`` is the SHA-256 of the canonical JSON (sorted keys,
no whitespace) of the record *as stored*, minus the hash field itself. Hashing the
stored JSON object rather than a re-serialised model means a reader checks exactly
the bytes a writer committed to, independent of how a later pydantic version prints a
datetime. Every record names its predecessor's hash, so the chain commits to the whole
history: editing, dropping or reordering any record is detected at the next one.

Over ~400 lines because the persisted shapes (both versions) and the fold that checks
them are one contract; splitting them would put the rules away from what they guard.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import orjson
from pydantic import Field, ValidationError, model_validator

from s3spill.errors import JournalCorrupt
from s3spill.keys import SourceId
from s3spill.models import ArtifactRetentionClaim, Record

GENESIS_HASH = "0" * 64
HEX64 = r"^[0-9a-f]{64}$"
HEX32 = r"^[0-9a-f]{32}$"
#: Transaction ids are caller-chosen and stable across retries; never part of a key.
TXID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$"
PLAN_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$"

TxEvent = Literal["PREPARED", "COMMITTED", "ABORTED", "RELEASED"]
ArtifactEvent = Literal["CONDEMNED", "DELETED", "LIFTED"]
Event = Literal["PREPARED", "COMMITTED", "ABORTED", "RELEASED", "CONDEMNED", "DELETED", "LIFTED"]
TX_EVENTS = frozenset({"PREPARED", "COMMITTED", "ABORTED", "RELEASED"})
LIVE_STATES = frozenset({"PREPARED", "COMMITTED"})


def canonical_json(obj: Any) -> bytes:
    """The one serialisation used for hashing and for every journal object's body:
    compact UTF-8 JSON with sorted keys (orjson; no floats ever occur in a record)."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def compute_record_hash(raw: Mapping[str, Any]) -> str:
    body = {k: v for k, v in raw.items() if k != "record_hash"}
    return hashlib.sha256(b"s3spill-journal-record\0" + canonical_json(body)).hexdigest()


def claim_json(claim: ArtifactRetentionClaim) -> dict[str, Any]:
    """A claim exactly as a PREPARED record stores it (``None`` fields left out)."""
    return claim.model_dump(mode="json", exclude_none=True)


def intent_hash(stored_claim: Mapping[str, Any]) -> str:
    """Digest of a claim as stored in its PREPARED record: the transaction's fixed intent."""
    return hashlib.sha256(b"s3spill-intent\0" + canonical_json(dict(stored_claim))).hexdigest()


class JournalRecord(Record):
    """One chained journal event. Transaction events carry the intent digest; the
    PREPARED one also carries the claim itself. GC's events name an artifact and a plan."""

    kind: Literal["journal_record"] = "journal_record"
    session_hash: str = Field(pattern=HEX32)
    sequence: int = Field(ge=0)
    prev_hash: str = Field(pattern=HEX64)
    event: Event
    at: datetime
    transaction_id: str | None = Field(default=None, pattern=TXID_PATTERN)
    claim: ArtifactRetentionClaim | None = None
    intent_sha256: str | None = Field(default=None, pattern=HEX64)
    source_id: str | None = None
    sha256: str | None = Field(default=None, pattern=HEX64)
    plan_id: str | None = Field(default=None, pattern=PLAN_PATTERN)
    #: CONDEMNED only: the object snapshot GC validated, so an interrupted run can finish.
    etag: str | None = Field(default=None, max_length=200)
    size: int | None = Field(default=None, ge=0)
    version_id: str | None = Field(default=None, max_length=1024)
    reason: str | None = Field(default=None, max_length=200)
    record_hash: str = Field(pattern=HEX64)

    @model_validator(mode="after")
    def _shape(self) -> JournalRecord:
        if self.event in TX_EVENTS:
            if self.transaction_id is None or self.intent_sha256 is None:
                raise ValueError(f"{self.event} needs transaction_id and intent_sha256")
            if (self.claim is None) != (self.event != "PREPARED"):
                raise ValueError("exactly the PREPARED record carries the claim")
            if self.source_id is not None or self.sha256 is not None or self.plan_id is not None:
                raise ValueError(f"{self.event} names no artifact or plan")
            if self.etag is not None or self.size is not None or self.version_id is not None:
                raise ValueError(f"{self.event} carries no object snapshot")
        else:
            if self.source_id is None or self.sha256 is None or self.plan_id is None:
                raise ValueError(f"{self.event} needs source_id, sha256 and plan_id")
            if self.transaction_id is not None or self.claim is not None or self.intent_sha256 is not None:
                raise ValueError(f"{self.event} names no transaction")
            if self.event != "CONDEMNED" and (self.etag, self.size, self.version_id) != (None, None, None):
                raise ValueError("only CONDEMNED carries an object snapshot")
            SourceId.parse(self.source_id)
        return self


def build_record(
    *, session_hash: str, sequence: int, prev_hash: str, event: Event, at: datetime,
    **fields: Any,
) -> tuple[dict[str, Any], JournalRecord]:
    """Build the stored JSON object of a new record, hash included (validated on the way),
    and the record as a model (the fold takes it instead of validating the JSON again)."""
    draft = JournalRecord(
        session_hash=session_hash, sequence=sequence, prev_hash=prev_hash, event=event, at=at,
        record_hash=GENESIS_HASH, **fields,
    )
    raw = draft.model_dump(mode="json", exclude_none=True)
    raw["record_hash"] = compute_record_hash(raw)
    return raw, draft.model_copy(update={"record_hash": raw["record_hash"]})


class TxView(Record):
    """The folded state of one transaction (the manifest keeps only the live ones)."""

    transaction_id: str
    state: TxEvent
    claim: ArtifactRetentionClaim
    intent_sha256: str
    prepared_sequence: int
    updated_sequence: int


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


class CondemnationView(Record):
    """GC's fence on one artifact (the manifest keeps only the CONDEMNED ones)."""

    source_id: str
    sha256: str
    plan_id: str
    state: ArtifactEvent
    sequence: int
    etag: str | None = None
    size: int | None = None
    version_id: str | None = None


class SegmentRef(Record):
    """Where a contiguous run of older records lives, and the digest that vouches for it."""

    first_sequence: int = Field(ge=0)
    last_sequence: int = Field(ge=0)
    sha256: str = Field(pattern=HEX64)
    last_record_hash: str = Field(pattern=HEX64)


class JournalSegment(Record):
    """An immutable history segment: records ``first..last`` exactly as they were stored.

    Version 2 names the segment before it (``prev_segment``): the segments form a chain
    that the manifest reaches through its newest link only, so the manifest does not grow
    with the history. Version 1 segments (indexed by a list in a version 1 manifest) have none.
    """

    schema_version: Literal[1, 2] = 2  # type: ignore[assignment]
    kind: Literal["lease_journal_segment"] = "lease_journal_segment"
    session_hash: str = Field(pattern=HEX32)
    journal_id: str = Field(pattern=HEX32)
    first_sequence: int = Field(ge=0)
    last_sequence: int = Field(ge=0)
    prev_hash: str = Field(pattern=HEX64)
    prev_segment: SegmentRef | None = None
    #: 0: cut from the manifest's window; 1: a merge of a run of level 0 segments (whose
    #: objects stay behind, unreferenced: ``verify`` reports them as superseded).
    level: int = Field(default=0, ge=0, le=1)
    records: list[dict[str, Any]]


class JournalManifest(Record):
    """The per-session manifest: chain head, pending set, recent records, segment pointers.

    ``generation`` grows by exactly one per write; ``write_id`` is fresh per write so an
    ambiguous write is recognised on read-back. ``journal_id`` changes only if the
    manifest is ever recreated, which makes segments of an older incarnation inert.

    Version 2 (written by every write since) keeps only what a compare-and-swap needs,
    so its size does not depend on the history or on the number of live claims: the
    claims live in the history (PREPARED records, in create-once segments) and every
    reader folds them. ``segments`` holds at most the newest segment; older ones are
    reached through each segment's ``prev_segment``. ``legacy_segments`` is the frozen
    index of a version 1 journal migrated on its first version 2 write.

    Version 1 (still read) carried the whole claim view (``transactions``,
    ``condemned``) and the full segment index in ``segments``.
    """

    schema_version: Literal[1, 2] = 2  # type: ignore[assignment]
    kind: Literal["lease_journal_manifest"] = "lease_journal_manifest"
    session_hash: str = Field(pattern=HEX32)
    journal_id: str = Field(pattern=HEX32)
    generation: int = Field(ge=1)
    write_id: str = Field(pattern=HEX32)
    created_at: datetime
    updated_at: datetime
    last_active: datetime | None = None
    next_sequence: int = Field(ge=0)
    head_hash: str = Field(pattern=HEX64)
    legacy_segments: list[SegmentRef] = Field(default_factory=list)
    segments: list[SegmentRef] = Field(default_factory=list)
    #: Version 2 chain bookkeeping: its length, its newest merged (level 1) segment and
    #: how many level 0 segments follow that one (merged once there are enough).
    chain_segments: int = Field(default=0, ge=0)
    merged: SegmentRef | None = None
    run_segments: int = Field(default=0, ge=0)
    records: list[dict[str, Any]] = Field(default_factory=list)
    transactions: dict[str, TxView] = Field(default_factory=dict)
    pending_transaction_ids: list[str] = Field(default_factory=list)
    condemned: dict[str, CondemnationView] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _shape(self) -> JournalManifest:
        if self.schema_version == 1 and self.legacy_segments:
            raise ValueError("a version 1 manifest has no legacy segments")
        if self.schema_version == 2 and (self.transactions or self.condemned or len(self.segments) > 1):
            raise ValueError("a version 2 manifest carries no claim view and at most one segment")
        return self

    @property
    def index(self) -> list[SegmentRef]:
        """Segments listed in the manifest itself (all of them in version 1)."""
        return self.segments if self.schema_version == 1 else self.legacy_segments

    @property
    def segment_count(self) -> int:
        """Segments the history is spread over (verified when the chain is walked)."""
        if self.schema_version == 1:
            return len(self.segments)
        return len(self.legacy_segments) + self.chain_segments

    @property
    def tip(self) -> SegmentRef | None:
        """The newest segment of the version 2 chain, if any."""
        return self.segments[-1] if self.schema_version == 2 and self.segments else None

    def body(self) -> bytes:
        return canonical_json(self.model_dump(mode="json"))


def corrupt(shash: str, reason: str, message: str) -> JournalCorrupt:
    return JournalCorrupt(f"journal of session {shash} is corrupt: {message}", reason=reason,
                          session_hash=shash)


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
    artifacts: dict[str, CondemnationView] = field(default_factory=dict)
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

    def apply(self, raw: Any, where: str, validated: JournalRecord | None = None) -> JournalRecord:
        if not isinstance(raw, dict):
            raise self._bad("unparseable", f"{where}: a record is not a JSON object")
        if (raw.get("session_hash") != self.session_hash or raw.get("sequence") != self.next_sequence
                or raw.get("prev_hash") != self.head_hash):
            self._misplaced(raw, where)
        if compute_record_hash(raw) != raw.get("record_hash"):
            raise self._bad("hash_mismatch", f"{where}: record {raw.get('sequence')}: content does not "
                            "match its SHA-256 (the record was altered)")
        try:
            rec = validated if validated is not None else JournalRecord.model_validate(raw)
        except ValidationError as exc:
            raise self._bad("unparseable", f"{where}: record {raw.get('sequence')} is not a valid "
                            f"record: {exc.errors()[0].get('msg', 'invalid')}") from None
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
        self._put(self.artifacts, rec.source_id, CondemnationView(
            source_id=rec.source_id, sha256=rec.sha256, plan_id=rec.plan_id, state=rec.event,
            sequence=rec.sequence, etag=snapshot.etag, size=snapshot.size, version_id=snapshot.version_id))

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
        return {k: v for k, v in sorted(self.artifacts.items()) if v.state == "CONDEMNED"}

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
