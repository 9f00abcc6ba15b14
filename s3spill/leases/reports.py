"""What the journal reports to its callers: results, views, aggregated claims, verify reports.

None of these carry keys, paths or reference content — only transaction ids, source
ids, digests, states and generations — so they can go to logs, JSON reports and the
CLI as they are. The verify report's orphan-segment scan (:func:`scan_orphan_segments`)
is the one part that reads the store: it lists and reads the session's segment objects
the verified history does not reference.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from s3spill import keys
from s3spill.errors import NotFound
from s3spill.leases.records import (
    CondemnationView,
    JournalFold,
    JournalManifest,
    JournalSegment,
    TxView,
    compute_record_hash,
)
from s3spill.store.base import ObjectStore


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, datetime):
        return obj.isoformat()
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


@dataclass(frozen=True)
class TransitionResult:
    """The outcome of one journal call: ``changed`` says whether this call wrote."""

    outcome: str
    state: str | None
    changed: bool
    generation: int
    transaction_id: str | None = None
    source_id: str | None = None
    sequence: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AggregatedClaim:
    """All live and pending claims on one artifact (source id + full digest) together."""

    source_id: str
    sha256: str
    reference_count: int
    #: ``None`` means indefinitely (a pending transaction, or a claim without expiry).
    retain_until: datetime | None
    pending: bool
    transaction_ids: tuple[str, ...]

    def protects(self, at: datetime) -> bool:
        return self.pending or self.retain_until is None or self.retain_until > at

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))  # type: ignore[no-any-return]


def aggregate_claims(transactions: tuple[TxView, ...]) -> list[AggregatedClaim]:
    groups: dict[tuple[str, str], list[TxView]] = {}
    for tx in transactions:
        groups.setdefault((tx.claim.source_id, tx.claim.sha256), []).append(tx)
    out = []
    for (source_id, sha256), txs in sorted(groups.items()):
        pending = any(t.state == "PREPARED" for t in txs)
        untils = [t.claim.retain_until for t in txs]
        until = None if pending or any(u is None for u in untils) else max(u for u in untils if u)
        out.append(AggregatedClaim(
            source_id=source_id, sha256=sha256,
            reference_count=sum(t.claim.reference_count for t in txs), retain_until=until,
            pending=pending, transaction_ids=tuple(sorted(t.transaction_id for t in txs)),
        ))
    return out


@dataclass(frozen=True)
class JournalView:
    """A verified snapshot of one session's journal."""

    session_hash: str
    exists: bool
    generation: int
    journal_id: str | None
    last_active: datetime | None
    next_sequence: int
    head_hash: str
    transactions: tuple[TxView, ...]
    pending_transaction_ids: tuple[str, ...]
    condemned: tuple[CondemnationView, ...]
    segments: int
    recent_records: int
    manifest_bytes: int
    #: Every transaction the history names, terminal ones included (owner-slot checks).
    known_transaction_ids: frozenset[str] = frozenset()

    def claims(self) -> list[AggregatedClaim]:
        return aggregate_claims(self.transactions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_hash": self.session_hash, "exists": self.exists, "generation": self.generation,
            "last_active": self.last_active.isoformat() if self.last_active else None,
            "records": self.next_sequence, "head_hash": self.head_hash,
            "segments": self.segments, "recent_records": self.recent_records,
            "manifest_bytes": self.manifest_bytes,
            "transactions": [t.model_dump(mode="json") for t in self.transactions],
            "pending_transaction_ids": list(self.pending_transaction_ids),
            "condemned": [c.model_dump(mode="json") for c in self.condemned],
            "claims": [c.to_dict() for c in self.claims()],
        }


@dataclass(frozen=True)
class OrphanSegment:
    """A segment object the manifest does not reference: harmless, reported."""

    first_sequence: int
    last_sequence: int
    #: ``consistent`` (same records as the chain: a lost compaction race),
    #: ``superseded`` (a level 0 segment merged into a referenced one),
    #: ``other_incarnation`` (an older manifest's history), or ``conflicting``.
    status: str


@dataclass(frozen=True)
class VerifyReport:
    session_hash: str
    exists: bool
    generation: int
    records: int
    segments: int
    transactions: int
    live: int
    pending: int
    condemned: int
    head_hash: str
    manifest_bytes: int
    orphan_segments: tuple[OrphanSegment, ...]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _segment_range(key: str) -> tuple[int, int] | None:
    leaf = key.rsplit("/", 1)[-1].removesuffix(".json")
    parts = leaf.split("-")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def scan_orphan_segments(store: ObjectStore, shash: str, manifest: JournalManifest | None,
                         fold: JournalFold, referenced: set[str],
                         merged: list[tuple[int, int]]) -> Iterator[OrphanSegment]:
    """Classify segment objects the verified history does not reference (``referenced``:
    their keys). Never raises on them: recovery uses only referenced segments, so an
    orphan cannot change the view. One inside the range of a referenced merged segment
    (``merged``) is ``superseded`` — its records were verified there — and is not read."""
    prefix = keys.session_prefix(shash) + "journal/segments/"
    for info in store.list(prefix):
        if info.key in referenced:
            continue
        span = _segment_range(info.key) or (-1, -1)
        if any(first <= span[0] and span[1] <= last for first, last in merged):
            yield OrphanSegment(span[0], span[1], "superseded")
            continue
        yield OrphanSegment(span[0], span[1], _classify(store, info.key, manifest, fold))


def _classify(store: ObjectStore, key: str, manifest: JournalManifest | None, fold: JournalFold) -> str:
    try:
        body = store.get(key)
        segment = JournalSegment.model_validate_json(body)
    except (NotFound, ValidationError, ValueError):
        return "conflicting"
    if manifest is None or segment.journal_id != manifest.journal_id:
        return "other_incarnation"
    name_digest = key.rsplit("-", 1)[-1].removesuffix(".json")
    if not hashlib.sha256(body).hexdigest().startswith(name_digest):
        return "conflicting"
    for raw in segment.records:
        seq = raw.get("sequence")
        if not isinstance(seq, int) or not 0 <= seq < fold.next_sequence:
            return "conflicting"
        if compute_record_hash(raw) != fold.hashes[seq]:
            return "conflicting"
    return "consistent"
