"""What the journal reports to its callers: results, views, aggregated claims, verify reports.

None of these carry keys, paths or reference content — only transaction ids, source
ids, digests, states and generations — so they can go to logs, JSON reports and the
CLI as they are. Pure: the verify report's orphan-segment scan, which reads the store,
is :func:`s3spill.leases.chain.scan_orphan_segments`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from s3spill.leases.journal_format import (
    CondemnationView,
    TxView,
)


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
