"""The journal record as a pydantic model, as it was before issue 35's third GC wave: the
reference the hand checks of :mod:`s3spill.leases.journal_record` are compared with
(``test_record_checks.py``), and the writer of "old" journals there.

Copied from ``s3spill/leases/journal_format.py`` at 4832dba (the model, its validator and
``build_record``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from s3spill.keys import SourceId
from s3spill.leases.journal_format import (
    GENESIS_HASH,
    HEX32,
    HEX64,
    PLAN_PATTERN,
    TX_EVENTS,
    TXID_PATTERN,
    Event,
    compute_record_hash,
)
from s3spill.models import ArtifactRetentionClaim, Record


class OldJournalRecord(Record):
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
    etag: str | None = Field(default=None, max_length=200)
    size: int | None = Field(default=None, ge=0)
    version_id: str | None = Field(default=None, max_length=1024)
    reason: str | None = Field(default=None, max_length=200)
    record_hash: str = Field(pattern=HEX64)

    @model_validator(mode="after")
    def _shape(self) -> OldJournalRecord:
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


def old_build_record(
    *, session_hash: str, sequence: int, prev_hash: str, event: Event, at: datetime,
    **fields: Any,
) -> tuple[dict[str, Any], OldJournalRecord]:
    """Build the stored JSON object of a new record, hash included (validated on the way),
    and the record as a model (the fold takes it instead of validating the JSON again)."""
    draft = OldJournalRecord(
        session_hash=session_hash, sequence=sequence, prev_hash=prev_hash, event=event, at=at,
        record_hash=GENESIS_HASH, **fields,
    )
    raw = draft.model_dump(mode="json", exclude_none=True)
    raw["record_hash"] = compute_record_hash(raw)
    return raw, draft.model_copy(update={"record_hash": raw["record_hash"]})
