"""A manifest's and a segment's stored bytes are exactly what their models dumped before."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from s3spill.leases.journal_format import (
    GENESIS_HASH,
    CondemnationView,
    JournalManifest,
    JournalSegment,
    SegmentRef,
    TxView,
    canonical_json,
    claim_json,
    intent_hash,
    records_body,
)
from s3spill.leases.journal_record import new_record
from tests.leases.test_record_checks import AT, CLAIM, SHASH, SID, SPECS


def _records() -> list[dict[str, Any]]:
    """Every kind of record, chained, as the writer stores them."""
    out: list[dict[str, Any]] = []
    prev = GENESIS_HASH
    for n, spec in enumerate(SPECS * 3):
        raw, _ = new_record(session_hash=SHASH, sequence=n, prev_hash=prev, at=AT + timedelta(seconds=n),
                            **spec)
        prev = raw["record_hash"]
        out.append(raw)
    return out


REF = SegmentRef(first_sequence=0, last_sequence=9, sha256="a" * 64, last_record_hash="b" * 64)


@pytest.mark.parametrize("prev", [None, REF])
@pytest.mark.parametrize("level", [0, 1])
def test_a_segment_is_stored_as_its_model_dumped_it(prev: SegmentRef | None, level: int) -> None:
    """Header and records, byte for byte (the segment's digest, its key and the chain's link)."""
    records = _records()
    fields: dict[str, Any] = {"session_hash": SHASH, "journal_id": "c" * 32, "first_sequence": 0,
                              "last_sequence": len(records) - 1, "prev_hash": GENESIS_HASH,
                              "prev_segment": prev, "level": level}
    before = canonical_json(JournalSegment(**fields, records=records).model_dump(mode="json"))
    assert records_body(JournalSegment(**fields, records=[]), records) == before


@pytest.mark.parametrize("shape", ["v2", "v2-first", "v1"])
def test_a_manifest_is_stored_as_its_model_dumped_it(shape: str) -> None:
    """Every field of a version 2 manifest (and of a version 1 one, with its claim view), byte for byte."""
    records = _records()
    fields: dict[str, Any] = {"session_hash": SHASH, "journal_id": "c" * 32, "generation": 7,
                              "write_id": "d" * 32, "created_at": AT, "updated_at": AT + timedelta(hours=1),
                              "next_sequence": len(records), "head_hash": records[-1]["record_hash"],
                              "records": records, "pending_transaction_ids": ["tx-1", "tx-2"]}
    if shape == "v2":
        fields.update(last_active=AT, legacy_segments=[REF], segments=[REF], chain_segments=3, merged=REF,
                      run_segments=2)
    elif shape == "v1":
        intent = intent_hash(claim_json(CLAIM))
        fields.update(schema_version=1, segments=[REF, REF], transactions={"tx-1": TxView(
            transaction_id="tx-1", state="COMMITTED", claim=CLAIM, intent_sha256=intent,
            prepared_sequence=0, updated_sequence=2)}, condemned={SID: CondemnationView(
                source_id=SID, sha256="a" * 64, plan_id="gc-run:1", state="CONDEMNED", sequence=5,
                etag='"e"', size=0)})
    manifest = JournalManifest(**fields)
    assert manifest.body() == canonical_json(manifest.model_dump(mode="json"))
    assert JournalManifest.model_validate_json(manifest.body()) == manifest
