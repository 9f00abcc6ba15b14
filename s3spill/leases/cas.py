"""The compare-and-swap engine the lease journal writes through: one session's manifest, changed only by CAS.

:class:`~s3spill.leases.journal.LeaseJournal` *uses* one :class:`ManifestCas` (and the
:class:`~s3spill.leases.chain.ManifestReader` under it); the journal decides what to
append (an :data:`AppendPlanner` returning a :class:`PlannedAppend`), the engine builds
the next manifest from the verified state (a :class:`ManifestCandidate`: the records
applied to the fold, old records moved into a segment when the manifest grows past its
bound) and writes it with the three-outcome discipline described in
:mod:`s3spill.leases.journal`: won (adopt), lost (re-read, re-plan), unknown (re-read and
look for our write id or records; never apply twice).

Every ``journal_merge_segments`` level 0 segments, the writer cutting the last one
writes it merged with the rest of the run (records the reader verified), linked past the
run; the run's objects stay behind, unreferenced. A write never reads a segment, and nothing
is rewritten in place or deleted but a segment this write created before its CAS met a
purge's tombstone. A segment is a create, not a CAS: it is written on a guessed state only
while that is fresh (:data:`GUESS_TTL`, shorter than a purge waits before its final sweep);
a writer stalled longer re-reads first and, the session purged meanwhile, writes nothing.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from s3spill import keys
from s3spill.config import TransferConfig
from s3spill.errors import (
    AlreadyExists,
    ConditionalConflict,
    ConfigError,
    JournalContention,
    JournalCorrupt,
    NotFound,
    PreconditionFailed,
    S3SpillError,
    SessionErased,
    StoreUnavailable,
    TransactionStateError,
)
from s3spill.failpoints import declare, failpoint
from s3spill.leases.chain import ManifestReader
from s3spill.leases.journal_fold import JournalFold
from s3spill.leases.journal_format import JournalManifest, JournalSegment, SegmentRef, corrupt, records_body
from s3spill.leases.journal_record import iso_datetime
from s3spill.leases.journal_record import new_record as build_record
from s3spill.leases.reports import TransitionResult
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore, PutResult
from s3spill.store.conditional_writes import require_conditional_writes

__all__ = ["AppendDecision", "AppendPlanner", "CandidateBuilder", "ManifestCandidate", "ManifestCas",
           "PlannedAppend"]

log = get_logger("s3spill.leases.journal")

FP_BEFORE_CAS = declare("journal.before_cas", "manifest read and change planned; CAS not sent")
FP_BEFORE_SEGMENT = declare("journal.before_segment_write", "manifest read, segment planned; not written")
FP_AFTER_SEGMENT = declare("journal.after_segment_write", "history segment written; manifest CAS not sent")

_JSON = "application/json"
#: Seconds a verified state may be reused for a write that creates a segment (a CAS needs no
#: bound); :data:`s3spill.fleet.purge.SETTLE_SECONDS` is longer.
GUESS_TTL = 2.0


@dataclass
class PlannedAppend:
    """What a transition decided to append: record specs, and the result to report once it is won."""

    specs: list[dict[str, Any]]
    outcome: str
    state: str | None
    transaction_id: str | None = None
    source_id: str | None = None


@dataclass
class ManifestCandidate:
    """The next manifest, built on the verified state, with all a won write must adopt.

    ``fold`` has the new records applied tentatively (``None``: a write that needs no fold,
    such as ``touch``); ``segment`` is the history segment to write first, if the manifest
    outgrew its bound; ``records`` are the (sequence, hash) pairs an unknown outcome is
    recognised by.
    """

    manifest: JournalManifest
    fold: JournalFold | None
    result: TransitionResult
    segment: tuple[str, bytes] | None = None
    records: list[tuple[int, str]] = field(default_factory=list)
    segment_ref: SegmentRef | None = None
    #: The level 0 run's records once this write is won (see ManifestReader.run).
    run: list[dict[str, Any]] | None = None

    def undo(self) -> None:
        """The write did not (or may not have) landed: forget its tentative fold changes."""
        if self.fold is not None:
            self.fold.rollback()


class _CutsSegment(Exception):
    """Internal: a guessed write would cut a segment, so it is not built (see ``_attempt``)."""


class _Retry(Exception):
    """Internal: this attempt lost or could not tell; tenacity backs off and retries."""

    def __init__(self, cause: Exception, *, unknown: bool) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.unknown = unknown


#: What a planner answers: the records to append, or the result of a no-op.
AppendDecision = PlannedAppend | TransitionResult
#: Decides, from the verified manifest and fold, what to append — or a no-op/refusal result.
AppendPlanner = Callable[[JournalManifest | None, JournalFold], AppendDecision]
#: Builds the next manifest from what was read (the fold is ``None`` when not verified).
CandidateBuilder = Callable[[JournalManifest | None, JournalFold | None],
                            "ManifestCandidate | TransitionResult"]


class ManifestCas:
    """Conditional writes of one session's manifest, built on what ``chain`` verified."""

    def __init__(self, chain: ManifestReader, config: TransferConfig, clock: Callable[[], datetime]) -> None:
        if config.journal_segment_records > config.journal_max_recent_records - 4:
            raise ConfigError("journal_segment_records must be at most journal_max_recent_records - 4")
        self.chain = chain
        self.config = config
        self.clock = clock
        self.stats = chain.stats
        #: Try the first CAS on the state this process last saw, without re-reading;
        #: switched off as soon as that loses (someone else is writing), back on after
        #: an uncontended write, void once the reader forgot its state. A stale guess only
        #: costs a failed conditional write.
        self._optimistic = False
        self._optimistic_epoch = -1
        #: Set (per thread) while a write is built on the guessed state.
        self._guess = threading.local()
        self._last_body = b""
        #: Segments the current :meth:`swap` created (key, ETag): undone if it ends sealed.
        self._created: list[tuple[str, str]] = []
        #: When the guessed state was last the store's: before the read or the CAS that made it so.
        self._verified_at = float("-inf")
        self._sent_at = float("-inf")

    def _fresh(self) -> bool:  # may a guessed write create a segment?
        return time.monotonic() - self._verified_at <= GUESS_TTL

    @property
    def store(self) -> ObjectStore:
        return self.chain.store

    @property
    def key(self) -> str:
        return self.chain.key

    @property
    def session_hash(self) -> str:
        return self.chain.session_hash

    def _guessing(self) -> bool:
        return self._optimistic and self._optimistic_epoch == self.chain.resets

    def swap(self, build: CandidateBuilder, *, verify: bool = True) -> TransitionResult:
        # A store that ignores If-None-Match / If-Match would make every CAS below "win"
        # and silently drop concurrent records: refuse it (probed once per store object).
        require_conditional_writes(self.store, purpose="the lease journal")
        attempted: dict[str, ManifestCandidate] = {}
        cfg = self.config
        backoff = wait_random_exponential(multiplier=cfg.backoff_base, max=cfg.backoff_max)
        guessed = self._guessing() and self.chain.manifest is not None and self.chain.etag is not None \
            and (self.chain.fold is not None or not verify)

        def wait(state: RetryCallState) -> float:
            # A lost guess is not contention we saw yet: re-read at once.
            return 0.0 if guessed and state.attempt_number == 1 else float(backoff(state))

        retrying = Retrying(
            stop=stop_after_attempt(cfg.journal_cas_attempts) | stop_after_delay(cfg.deadline),
            wait=wait, retry=retry_if_exception_type(_Retry), reraise=True,
        )
        self._created = []
        try:
            for attempt in retrying:
                with attempt:
                    first = attempt.retry_state.attempt_number == 1
                    result = self._attempt(build, attempted, verify, guess=guessed and first)
                    self._optimistic, self._optimistic_epoch = first, self.chain.resets
                    return result
        except SessionErased:
            self._undo_created()
            raise
        except _Retry as exc:
            if exc.unknown:
                raise StoreUnavailable(f"journal write for session {self.session_hash} has an unknown "
                                       f"outcome after retries: {exc.cause}", key=self.key) from exc.cause
            raise JournalContention(f"journal of session {self.session_hash}: compare-and-swap lost "
                                    f"{cfg.journal_cas_attempts} times to concurrent writers") from exc.cause
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(self, build: CandidateBuilder, attempted: dict[str, ManifestCandidate], verify: bool,
                  guess: bool = False) -> TransitionResult:
        if guess:
            # Only a write may be decided on the guessed state (the CAS then checks it);
            # a no-op or a refusal is decided again on what the store holds now.
            manifest, etag, fold = self.chain.manifest, self.chain.etag, self.chain.fold
            self._guess.active = True
            try:
                built = build(manifest, fold)
            except (S3SpillError, ValueError, _CutsSegment):
                built = None
            finally:
                self._guess.active = False
            if isinstance(built, ManifestCandidate) and built.segment is not None and not self._fresh():
                # A segment is a create, not a CAS: it would land whatever the manifest is
                # now (a purge's tombstone, say). On a state older than GUESS_TTL, re-read.
                built.undo()
                built = None
            if not isinstance(built, ManifestCandidate):
                return self._attempt(build, attempted, verify)
        else:
            try:
                started = time.monotonic()
                manifest, etag = self.chain.read()
                fold = self.chain.sync(manifest, etag) if verify else None
                self._verified_at = started
                if attempted and manifest is not None:
                    landed = self._landed(manifest, fold, attempted)
                    if landed is not None:
                        return landed
                built = build(manifest, fold)
            except StoreUnavailable as exc:
                raise _Retry(exc, unknown=bool(attempted)) from exc
            if isinstance(built, TransitionResult):
                return built
        try:
            put = self._write(built, manifest, etag, attempted)
        except BaseException:
            built.undo()
            raise
        if built.fold is not None:
            built.fold.commit()
            self._verified_at = self._sent_at
        self.stats.writes += 1
        if built.segment_ref is not None:
            self.chain.segment_keys.add(self.chain.segment_key(built.segment_ref))
        self.chain.adopt(built.manifest, built.fold, put.etag, built.run)
        self.chain.manifest_bytes = len(self._last_body)
        return built.result

    def _write(self, built: ManifestCandidate, manifest: JournalManifest | None, etag: str | None,
               attempted: dict[str, ManifestCandidate]) -> PutResult:
        """Segment (if any), then the conditional manifest write; raises _Retry unless won."""
        if built.segment is not None:
            try:  # idempotent (content-addressed): an unknown outcome is simply written again
                self._write_segment(*built.segment)
            except StoreUnavailable as exc:
                raise _Retry(exc, unknown=bool(attempted)) from exc
        failpoint(FP_BEFORE_CAS)
        body = self._last_body = built.manifest.body()
        self._sent_at = time.monotonic()
        try:
            if manifest is None:
                put = self.store.put_if_absent(self.key, body, content_type=_JSON)
            else:
                assert etag is not None
                put = self.store.put_if_match(self.key, body, etag, content_type=_JSON)
        except (AlreadyExists, PreconditionFailed, ConditionalConflict) as exc:
            self.stats.lost += 1
            self._optimistic = False
            log.debug("journal.cas_lost", session=self.session_hash, generation=built.manifest.generation)
            raise _Retry(exc, unknown=bool(attempted)) from exc
        except StoreUnavailable as exc:
            self.stats.ambiguous += 1
            attempted[built.manifest.write_id] = built
            log.info("journal.cas_unknown", session=self.session_hash, generation=built.manifest.generation)
            raise _Retry(exc, unknown=True) from exc
        return put

    def _landed(self, manifest: JournalManifest, fold: JournalFold | None,
                attempted: dict[str, ManifestCandidate]) -> TransitionResult | None:
        """Did an attempt whose outcome was unknown land? Find its write id or its records."""
        for built in attempted.values():
            found = manifest.write_id == built.manifest.write_id
            if not found and fold is not None and built.records:
                found = all(seq < fold.next_sequence and fold.hashes[seq] == h for seq, h in built.records)
            if found:
                self.stats.writes += 1
                log.info("journal.cas_unknown_resolved", session=self.session_hash, landed=True)
                return built.result
        return None

    def _write_segment(self, key: str, body: bytes) -> None:
        failpoint(FP_BEFORE_SEGMENT)
        try:
            put = self.store.put_if_absent(key, body, content_type=_JSON)
            self._created.append((key, put.etag))
            self.stats.segments_written += 1
        except AlreadyExists:
            # Content-addressed: the same range compacted by another writer. Make sure.
            if hashlib.sha256(self.store.get(key)).hexdigest() != hashlib.sha256(body).hexdigest():
                raise corrupt(self.session_hash, "segment_mismatch",
                              "a segment key holds content that is not the journal's") from None
        failpoint(FP_AFTER_SEGMENT)

    def _undo_created(self) -> None:
        """Sealed (purged) during this write: delete the segments it created, each by its ETag
        (a role that may not delete leaves them to GC, which erases a sealed session's objects)."""
        for key, etag in self._created:
            try:
                self.store.delete_if_match(key, etag)
            except (NotFound, PreconditionFailed):
                continue
            except S3SpillError as exc:
                log.warning("journal.late_segment_left", session=self.session_hash, key=key,
                            error=type(exc).__name__)
                continue
            log.info("journal.late_segment_removed", session=self.session_hash, key=key)
        self._created = []

    def mutate(self, plan: AppendPlanner) -> TransitionResult:
        def build(manifest: JournalManifest | None,
                  fold: JournalFold | None) -> ManifestCandidate | TransitionResult:
            assert fold is not None
            decision = plan(manifest, fold)
            if isinstance(decision, TransitionResult):
                return decision
            return self._build(manifest, fold, decision)

        return self.swap(build)

    def _build(self, manifest: JournalManifest | None, fold: JournalFold,
               write: PlannedAppend) -> ManifestCandidate:
        if getattr(self._guess, "active", False) and not self._fresh() \
                and self._cuts_segment(manifest, fold, len(write.specs)):
            # It would be dropped unsent (no segment on a stale guess): skip building
            # it (records, hashes, fold: a GC batch's worth), and re-read at once.
            raise _CutsSegment
        fold.begin()  # applied in place, undone unless the write is won (see _attempt)
        try:
            return self._build_on(manifest, fold, write)
        except BaseException:
            fold.rollback()
            raise

    def _cuts_segment(self, manifest: JournalManifest | None, fold: JournalFold, appended: int) -> bool:
        """Whether appending ``appended`` records moves some into a segment (``_build_on``'s test)."""
        return (manifest is not None and bool(manifest.records)
                and len(manifest.records) + appended > self.config.journal_max_recent_records
                and manifest.records[0]["sequence"] < fold.next_sequence)

    def _build_on(self, manifest: JournalManifest | None, new: JournalFold,
                  write: PlannedAppend) -> ManifestCandidate:
        now = self.clock()
        at = iso_datetime(now)  # once for all of this write's records
        old_next = new.next_sequence
        records = list(manifest.records) if manifest else []
        written: list[tuple[int, str]] = []
        for spec in write.specs:
            raw, model = build_record(session_hash=self.session_hash, sequence=new.next_sequence,
                                      prev_hash=new.head_hash, at=at, **spec)
            try:
                new.apply(raw, "new record", model)
            except JournalCorrupt as exc:  # our own record broke a rule: refuse, don't write
                raise TransactionStateError(f"refused {spec['event']}: {exc}") from None
            records.append(raw)
            written.append((raw["sequence"], raw["record_hash"]))
        journal_id = manifest.journal_id if manifest else secrets.token_hex(16)
        v2 = manifest is not None and manifest.schema_version == 2
        tip = manifest.tip if manifest else None
        chained = manifest.chain_segments if manifest and v2 else 0
        merged = manifest.merged if manifest and v2 else None
        unmerged = manifest.run_segments if manifest and v2 else 0
        run = self.chain.run if manifest is not None else []
        segment: tuple[str, bytes] | None = None
        cfg = self.config
        if len(records) > cfg.journal_max_recent_records and records[0]["sequence"] < old_next:
            # Only records already durable in the manifest we read move out: a segment must
            # never hold a record whose own CAS may still lose. A big batch (GC) moves out
            # whole on the next write, so the manifest never keeps growing.
            durable = sum(1 for r in records if r["sequence"] < old_next)
            move = max(cfg.journal_segment_records, len(records) - cfg.journal_max_recent_records)
            chunk = records[: min(move, durable)]
            records = records[len(chunk):]
            level, prev = 0, tip
            run_next = run[-1]["sequence"] + 1 if run else self.chain.run_start(manifest)
            if (run is not None and unmerged + 1 >= cfg.journal_merge_segments
                    and chunk[0]["sequence"] == run_next):
                # LSM-style: the run's last segment is written merged with the run (records this
                # process verified), linked past it; the run's objects stay behind, unreferenced.
                chunk, level, prev = [*run, *chunk], 1, merged
            first, last = chunk[0]["sequence"], chunk[-1]["sequence"]
            seg_body = records_body(JournalSegment(
                session_hash=self.session_hash, journal_id=journal_id, first_sequence=first,
                last_sequence=last, prev_hash=chunk[0]["prev_hash"], prev_segment=prev, level=level,
                records=[],
            ), chunk)
            digest = hashlib.sha256(seg_body).hexdigest()
            tip = SegmentRef(first_sequence=first, last_sequence=last, sha256=digest,
                             last_record_hash=chunk[-1]["record_hash"])
            segment = (keys.segment_key(self.session_hash, first, last, digest), seg_body)
            if level:
                chained, merged, unmerged, run = chained - unmerged + 1, tip, 0, []
            else:
                chained, unmerged = chained + 1, unmerged + 1
                run = [*run, *chunk] if run is not None else None
        generation = manifest.generation + 1 if manifest else 1
        new_manifest = JournalManifest(  # version 2; a version 1 index is kept as legacy
            session_hash=self.session_hash, journal_id=journal_id, generation=generation,
            write_id=secrets.token_hex(16), created_at=manifest.created_at if manifest else now,
            updated_at=now, last_active=manifest.last_active if manifest else None,
            next_sequence=new.next_sequence, head_hash=new.head_hash,
            legacy_segments=manifest.index if manifest else [], segments=[tip] if tip else [],
            chain_segments=chained, merged=merged, run_segments=unmerged,
            records=records, pending_transaction_ids=new.pending_ids(),
        )
        result = TransitionResult(
            outcome=write.outcome, state=write.state, changed=True, generation=generation,
            transaction_id=write.transaction_id, source_id=write.source_id,
            sequence=written[-1][0] if written else None,
        )
        return ManifestCandidate(new_manifest, new, result, segment, written, tip if segment else None, run)

    def noop(self, outcome: str, state: str | None, *, txid: str | None = None,
              source_id: str | None = None) -> TransitionResult:
        return TransitionResult(outcome=outcome, state=state, changed=False, generation=self.chain.generation,
                                transaction_id=txid, source_id=source_id)
