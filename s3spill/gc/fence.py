"""What GC reads from, and writes to, a session's lease journal — and nothing more.

Why a narrow adapter: GC must decide on exactly the facts that fence it (active
claims by artifact, the session's last activity, GC's own condemnations) and on
nothing it could misread. Keeping that projection here means the planner and the
applier never touch the journal's record format, and a journal that fails
verification surfaces as one typed error that GC turns into "retain everything".

GC's writes go in batches — one compare-and-swap condemns up to
:data:`BATCH` artifacts of a session, one more records what became of them — so the
journal costs a handful of requests per session, not per artifact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, Protocol

from s3spill.config import TransferConfig
from s3spill.keys import SourceId
from s3spill.leases.evidence import HistoryEvidence
from s3spill.leases.journal import CondemnItem, CondemnVerdict, LeaseJournal
from s3spill.store.base import ObjectStore

#: Artifacts condemned (or finished) per journal write: one manifest write (about 60 KiB
#: at most) per 128 artifacts. Each write is a segment and a manifest, each made durable
#: (on the local store: four fsyncs; on S3: two PUTs), so a session of up to 128 artifacts
#: to delete costs one write to fence them and one to record what became of them.
BATCH = 128


@dataclass(frozen=True)
class ClaimFact:
    """One claim that protects (or once protected) an artifact, by artifact name."""

    name: str
    sha256: str
    state: Literal["pending", "committed"]
    retain_until: datetime | None = None


@dataclass(frozen=True)
class CondemnFact:
    """An artifact GC condemns, or condemned and has neither deleted nor lifted yet.

    The journal records the artifact's identity (name and full SHA-256) and the run;
    the ETag, size and version are known only to the run that read them, so a later
    run resuming an interrupted condemnation revalidates on the digest alone and
    deletes the version it finds then.
    """

    name: str
    sha256: str
    run_id: str
    etag: str | None = None
    size: int | None = None
    version_id: str | None = None


@dataclass(frozen=True)
class SessionFacts:
    """The journal's view of one session, as far as GC is concerned."""

    #: Active claims (pending, or committed and not expired) by artifact name.
    claims: dict[str, list[ClaimFact]] = field(default_factory=dict)
    #: Committed claims whose ``retain_until`` has passed: they no longer protect, but
    #: the orphan TTL then counts from their expiry.
    expired_claims: dict[str, list[ClaimFact]] = field(default_factory=dict)
    last_active: datetime | None = None
    #: Condemnations without DELETED or LIFTED (an interrupted or concurrent run).
    condemned: dict[str, CondemnFact] = field(default_factory=dict)
    #: False when the session has no manifest at all (no journal has ever been written).
    exists: bool = False
    #: Where the verified history ends, and every transaction it names (terminal ones
    #: too): checked against owner slots and segments (:mod:`s3spill.leases.evidence`).
    next_sequence: int = 0
    known_transactions: frozenset[str] = frozenset()


class GcLedger(Protocol):
    """GC's handle on one session's journal: read the facts, append GC's own records by CAS."""

    def facts(self) -> SessionFacts:
        """Re-read, fold and verify; raises :class:`JournalError` when it cannot be trusted."""

    def condemn(self, items: Sequence[CondemnFact], *, run_id: str, active_within: timedelta,
                takeover: dict[str, str]) -> dict[str, CondemnVerdict]:
        """Condemn each unclaimed item under ``run_id``; ``takeover`` adopts another run's."""

    def finish(self, deleted: Sequence[str], lifted: Sequence[str], *, run_id: str, reason: str) -> None:
        """Append DELETED for ``deleted`` and LIFTED for ``lifted`` (artifact names)."""


LedgerFactory = Callable[[ObjectStore, str, Callable[[], datetime]], GcLedger]


class JournalLedger:
    """:class:`GcLedger` over the session's :class:`~s3spill.leases.journal.LeaseJournal`."""

    def __init__(self, store: ObjectStore, shash: str, clock: Callable[[], datetime],
                 config: TransferConfig | None = None) -> None:
        self.shash = shash
        self.clock = clock
        self.journal = LeaseJournal(store, config=config, session_hash=shash, clock=clock)
        #: Records one GC write adds: the journal moves a whole batch into a segment on
        #: its next write, so batches larger than its window do not make the manifest grow.
        self.batch_records = BATCH
        self._sha: dict[str, str] = {}

    def _source_id(self, name: str, sha256: str) -> str:
        return str(SourceId(self.shash, name, sha256[:16]))

    def facts(self) -> SessionFacts:
        fold, manifest = self.journal.folded()
        now = self.clock()
        claims: dict[str, list[ClaimFact]] = {}
        expired: dict[str, list[ClaimFact]] = {}
        live = fold.live
        for txid in sorted(live):  # the order of the journal's view (JournalView.transactions)
            tx = live[txid]
            claim = tx.claim
            name = SourceId.parse(claim.source_id).name
            pending = tx.state == "PREPARED"
            until = claim.retain_until
            fact = ClaimFact(name, claim.sha256, "pending" if pending else "committed", until)
            target = claims if pending or until is None or until > now else expired
            target.setdefault(name, []).append(fact)
        condemned = {}
        for source_id, c in sorted(fold.artifacts.items()):
            if c.state != "CONDEMNED":
                continue
            name = SourceId.parse(source_id).name
            condemned[name] = CondemnFact(name=name, sha256=c.sha256, run_id=c.plan_id, etag=c.etag,
                                          size=c.size, version_id=c.version_id)
            self._sha[name] = c.sha256
        return SessionFacts(claims=claims, expired_claims=expired,
                            last_active=manifest.last_active if manifest is not None else None,
                            condemned=condemned, exists=manifest is not None,
                            next_sequence=fold.next_sequence, known_transactions=frozenset(fold.txs))

    def _chunks(self, items: Sequence[CondemnFact], takeover: dict[str, str]) -> list[list[CondemnFact]]:
        chunks: list[list[CondemnFact]] = [[]]
        used = 0
        for item in items:
            cost = 2 if item.name in takeover else 1  # a takeover appends LIFTED + CONDEMNED
            if used + cost > self.batch_records and chunks[-1]:
                chunks.append([])
                used = 0
            chunks[-1].append(item)
            used += cost
        return [c for c in chunks if c]

    def condemn(self, items: Sequence[CondemnFact], *, run_id: str, active_within: timedelta,
                takeover: dict[str, str]) -> dict[str, CondemnVerdict]:
        out: dict[str, CondemnVerdict] = {}
        for chunk in self._chunks(items, takeover):
            by_source: dict[str, str] = {}
            batch: list[CondemnItem] = []
            for i in chunk:
                self._sha[i.name] = i.sha256
                source_id = self._source_id(i.name, i.sha256)
                by_source[source_id] = i.name
                batch.append(CondemnItem(source_id, i.sha256, i.etag, i.size, i.version_id))
            verdicts = self.journal.condemn_batch(
                batch, run_id, active_within=active_within,
                takeover={self._source_id(i.name, i.sha256): takeover[i.name]
                          for i in chunk if i.name in takeover},
            )
            for source_id, verdict in verdicts.items():
                out[by_source[source_id]] = verdict
        return out

    def finish(self, deleted: Sequence[str], lifted: Sequence[str], *, run_id: str, reason: str) -> None:
        pairs = [(n, "DELETED") for n in deleted] + [(n, "LIFTED") for n in lifted]
        for start in range(0, len(pairs), self.batch_records):
            chunk = pairs[start : start + self.batch_records]
            self.journal.finish_condemnations(
                [self._source_id(n, self._sha[n]) for n, e in chunk if e == "DELETED"],
                [self._source_id(n, self._sha[n]) for n, e in chunk if e == "LIFTED"],
                run_id, reason=reason)


#: Why a session without a manifest keeps young artifacts (``retained_no_manifest``): routine
#: (a writer killed before its first liveness mark), not evidence of lost history.
NO_MANIFEST_REASON = ("no journal manifest yet, and no owner slot or history segment: a session "
                      "that never marked itself active (e.g. killed before its first liveness "
                      "mark); kept while younger than session_ttl")


def journal_doubts(facts: SessionFacts, evidence: HistoryEvidence) -> list[str]:
    """Why the journal GC just read may not be the session's whole history (empty: none)."""
    return evidence.doubts(exists=facts.exists, next_sequence=facts.next_sequence,
                           known_transactions=facts.known_transactions)


def open_ledger(store: ObjectStore, shash: str, clock: Callable[[], datetime]) -> GcLedger:
    """The lease journal of one session, opened by its hash (GC never knows session ids)."""
    return JournalLedger(store, shash, clock)


def read_session_facts(store: ObjectStore, shash: str, clock: Callable[[], datetime]) -> SessionFacts:
    """Fold and verify the session's journal; :class:`JournalError` if it cannot be trusted."""
    return JournalLedger(store, shash, clock).facts()
