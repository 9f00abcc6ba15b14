"""The lease journal's persisted shapes and the one fold that turns records into state.

Kept apart from :mod:`s3spill.leases.journal` (which does I/O and compare-and-swap) so that the
verification rules are pure, small and testable on their own, and so that GC and the
CLI can fold and check a journal without being able to write one.

A record's fields are checked by hand (:mod:`s3spill.leases.journal_record`), the
manifest's and the segment's by their models here.

Hashing: a record's ``record_hash`` is the SHA-256 of the canonical JSON (sorted keys,
no whitespace) of the record *as stored*, minus the hash field itself. Hashing the
stored JSON object rather than a re-serialised model means a reader checks exactly
the bytes a writer committed to, independent of how a later pydantic version prints a
datetime. Every record names its predecessor's hash, so the chain commits to the whole
history: editing, dropping or reordering any record is detected at the next one.

The fold that checks a history against these shapes and turns it into state is
:mod:`s3spill.leases.journal_fold`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

import orjson
from pydantic import Field, model_validator

from s3spill.errors import JournalCorrupt
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
    body = dict(raw)  # a copy less the hash field (half the cost of filtering every key)
    body.pop("record_hash", None)
    return hashlib.sha256(b"s3spill-journal-record\0" + canonical_json(body)).hexdigest()


def claim_json(claim: ArtifactRetentionClaim) -> dict[str, Any]:
    """A claim exactly as a PREPARED record stores it (``None`` fields left out)."""
    return claim.model_dump(mode="json", exclude_none=True)


def intent_hash(stored_claim: Mapping[str, Any]) -> str:
    """Digest of a claim as stored in its PREPARED record: the transaction's fixed intent."""
    return hashlib.sha256(b"s3spill-intent\0" + canonical_json(dict(stored_claim))).hexdigest()


class TxView(Record):
    """The folded state of one transaction (the manifest keeps only the live ones)."""

    transaction_id: str
    state: TxEvent
    claim: ArtifactRetentionClaim
    intent_sha256: str
    prepared_sequence: int
    updated_sequence: int


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
        """The manifest's stored bytes: its canonical JSON (see :func:`records_body`)."""
        return records_body(self, self.records)


def records_body(doc: JournalManifest | JournalSegment, records: list[dict[str, Any]]) -> bytes:
    """The canonical JSON of ``doc`` with ``records`` as its records: the bytes of
    ``canonical_json(doc.model_dump(mode="json"))`` with those records, without pydantic
    serialising each one (its ``Any`` values are typed one by one: nine tenths of a GC
    write's segment). The records are stored JSON objects already, so they go as they are."""
    out = doc.model_dump(mode="json", exclude={"records"})
    out["records"] = records
    return canonical_json(out)


def corrupt(shash: str, reason: str, message: str) -> JournalCorrupt:
    return JournalCorrupt(f"journal of session {shash} is corrupt: {message}", reason=reason,
                          session_hash=shash)
