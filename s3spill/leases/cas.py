"""The verified compare-and-swap engine under :class:`~s3spill.leases.journal.LeaseJournal`.

Reads the manifest (HEAD then GET, so the body is never older than the ETag a CAS is
conditioned on), verifies it against what this process already verified (the first
read folds the whole history, later reads only what is new), builds the next manifest
from a plan, moves old records into a segment when the manifest grows past its bound,
and writes with the three-outcome discipline described in :mod:`s3spill.leases.journal`.

Segments form a chain from the manifest's newest link back to the start (version 2).
Every ``journal_merge_segments`` level 0 segments, the writer cutting the last one
writes it merged with the rest of the run (LSM-style: records this process already
verified, kept as ``_run``), linked past the run; the run's objects stay behind,
unreferenced. So a fresh reader fetches about one object per 256 records, a write
never reads a segment, and nothing is ever deleted or rewritten in place. Over ~400
lines: the walk (full, incremental, across a merge) and the write path share state
that only makes sense together.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError
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
    StoreUnavailable,
    TransactionStateError,
)
from s3spill.failpoints import declare, failpoint
from s3spill.leases.records import (
    JournalFold,
    JournalManifest,
    JournalRecord,
    JournalSegment,
    SegmentRef,
    build_record,
    canonical_json,
    corrupt,
)
from s3spill.leases.reports import TransitionResult
from s3spill.log import get_logger
from s3spill.models import utcnow
from s3spill.store.base import ObjectStore, PutResult
from s3spill.store.conditional_writes import require_conditional_writes

log = get_logger("s3spill.leases.journal")


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic collector while folding: a long history allocates tens of thousands
    of acyclic objects, and the collector would re-walk all of them (~30% of verify time).
    Reference counting still frees everything; the collector resumes right after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class _SegmentRecords(BaseModel):
    """A segment body seen only for its records, validated in one pass."""

    model_config = ConfigDict(extra="ignore")

    records: list[JournalRecord]

FP_BEFORE_CAS = declare("journal.before_cas", "manifest read and change planned; CAS not sent")
FP_AFTER_SEGMENT = declare("journal.after_segment_write", "history segment written; manifest CAS not sent")

_JSON = "application/json"


@dataclass
class JournalStats:
    """What this instance did: successful writes, lost CAS races, unknown outcomes, reads."""

    writes: int = 0
    lost: int = 0
    ambiguous: int = 0
    reads: int = 0
    segments_written: int = 0


@dataclass
class Write:
    specs: list[dict[str, Any]]
    outcome: str
    state: str | None
    transaction_id: str | None = None
    source_id: str | None = None


@dataclass
class Built:
    manifest: JournalManifest
    fold: JournalFold | None
    result: TransitionResult
    segment: tuple[str, bytes] | None = None
    records: list[tuple[int, str]] = field(default_factory=list)
    segment_ref: SegmentRef | None = None
    #: The level 0 run's records once this write is won (see ManifestCas._run).
    run: list[dict[str, Any]] | None = None

    def undo(self) -> None:
        """The write did not (or may not have) landed: forget its tentative fold changes."""
        if self.fold is not None:
            self.fold.rollback()


@dataclass
class _Walked:
    """What a walk verified: the segments it read, and the level 0 run's records (or None)."""

    segments: list[tuple[SegmentRef, JournalSegment]]
    run: list[dict[str, Any]] | None


class _Retry(Exception):
    """Internal: this attempt lost or could not tell; tenacity backs off and retries."""

    def __init__(self, cause: Exception, *, unknown: bool) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.unknown = unknown


Plan = Callable[[JournalManifest | None, JournalFold], "Write | TransitionResult"]
Builder = Callable[[JournalManifest | None, JournalFold | None], "Built | TransitionResult"]

class ManifestCas:
    """One session's manifest: verified reads and conditional writes."""

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
        if self.config.journal_segment_records > self.config.journal_max_recent_records - 4:
            raise ConfigError("journal_segment_records must be at most journal_max_recent_records - 4")
        self.clock = clock
        self.key = keys.manifest_key(self.session_hash)
        self.stats = JournalStats()
        self._reset()

    def _reset(self) -> None:
        self._fold: JournalFold | None = None
        self._journal_id: str | None = None
        self._generation = 0
        self._write_id: str | None = None
        #: The segments this process verified: the index listed in the manifest (all of a
        #: version 1 journal, the frozen legacy part of a version 2 one), the newest link
        #: of the version 2 chain, and (from the last full walk) every referenced key and
        #: the ranges of merged segments.
        self._index: list[SegmentRef] = []
        self._tip: SegmentRef | None = None
        self._segment_keys: set[str] = set()
        self._merged_ranges: list[tuple[int, int]] = []
        #: Records of the chain's level 0 run (after ``merged``), as stored: what the writer
        #: that cuts the run's last segment merges. ``None``: not known (no merge then).
        self._run: list[dict[str, Any]] | None = []
        self._manifest: JournalManifest | None = None
        self._etag: str | None = None
        self._manifest_bytes = 0
        #: Try the first CAS on the state this process last saw, without re-reading;
        #: switched off as soon as that loses (someone else is writing), back on after
        #: an uncontended write. A stale guess only costs a failed conditional write.
        self._optimistic = False

    def _read(self) -> tuple[JournalManifest | None, str | None]:
        """HEAD then GET: the body is at least as new as the ETag, so a CAS on a stale
        ETag fails instead of overwriting a state we did not see."""
        self.stats.reads += 1
        try:
            info = self.store.head(self.key)
            body = self.store.get(self.key)
        except NotFound:
            return None, None
        try:
            manifest = JournalManifest.model_validate_json(body)
        except ValidationError as exc:
            raise corrupt(self.session_hash, "unparseable",
                          f"the manifest is not a valid manifest ({exc.errors()[0].get('msg')})") from None
        if manifest.session_hash != self.session_hash:
            raise corrupt(self.session_hash, "foreign_record", "the manifest belongs to another session")
        self._manifest_bytes = len(body)
        return manifest, info.etag

    def _sync(self, manifest: JournalManifest | None, etag: str | None) -> JournalFold:
        """Verify ``manifest`` against what this process already verified and adopt it."""
        if manifest is None:
            if self._fold is not None:
                log.info("journal.manifest_gone", session=self.session_hash)
            self._reset()
            return JournalFold(self.session_hash)
        if self._fold is not None and manifest.journal_id == self._journal_id:
            if manifest.generation == self._generation:
                if manifest.write_id != self._write_id:
                    raise corrupt(self.session_hash, "generation",
                                  f"two different manifests carry generation {manifest.generation}")
                self._etag = etag
                return self._fold
            if manifest.generation < self._generation:
                raise corrupt(self.session_hash, "generation", f"the manifest went back from generation "
                              f"{self._generation} to {manifest.generation}")
            fold = self._fold
            fold.begin()  # verified in place; undone if anything new fails to verify
            try:
                walked = self._walk(manifest, fold, incremental=True)
            except BaseException:
                fold.rollback()
                raise
            fold.commit()
        else:
            fold = JournalFold(self.session_hash)
            walked = self._walk(manifest, fold, incremental=False)
            self._index, self._segment_keys, self._merged_ranges = [], set(), []
        for ref, head in walked.segments:
            self._segment_keys.add(self._segment_key(ref))
            if head.level == 1:
                self._merged_ranges.append((ref.first_sequence, ref.last_sequence))
        self._adopt(manifest, fold, etag, walked.run)
        return fold

    def _adopt(self, manifest: JournalManifest, fold: JournalFold | None, etag: str | None,
               run: list[dict[str, Any]] | None) -> None:
        """Trust ``manifest`` (and ``fold``, its state; ``run``, its level 0 run's records)."""
        if fold is None:
            return  # written without a fold (touch): verified on the next read, not trusted now
        self._etag = etag
        self._fold = fold
        if len(manifest.index) != len(self._index):
            self._index = list(manifest.index)
        self._tip = manifest.tip
        self._run = run
        self._journal_id = manifest.journal_id
        self._generation = manifest.generation
        self._write_id = manifest.write_id
        self._manifest = manifest

    def _segment_key(self, ref: SegmentRef) -> str:
        return keys.segment_key(self.session_hash, ref.first_sequence, ref.last_sequence, ref.sha256)

    @staticmethod
    def _run_start(manifest: JournalManifest | None) -> int:
        """The first sequence of the chain's level 0 run."""
        if manifest is None:
            return 0
        if manifest.merged is not None:
            return manifest.merged.last_sequence + 1
        return manifest.index[-1].last_sequence + 1 if manifest.index else 0

    def _walk(self, manifest: JournalManifest, fold: JournalFold, *, incremental: bool) -> _Walked:
        """Apply every record of ``manifest`` not yet in ``fold``; re-check the ones that are."""
        with _no_cyclic_gc():
            return self._walk_records(manifest, fold, incremental)

    def _walk_records(self, manifest: JournalManifest, fold: JournalFold, incremental: bool) -> _Walked:
        known_index, known_tip = (self._index, self._tip) if incremental else ([], None)
        known_merged = self._manifest.merged if incremental and self._manifest is not None else None
        known = len(known_index)
        index = manifest.index
        if index[:known] != known_index or (manifest.schema_version == 1 and known_tip is not None):
            raise corrupt(self.session_hash, "segment_mismatch", "the manifest's segment index was rewritten")
        if known_tip is not None:
            expected = known_tip.last_sequence + 1
        else:
            expected = index[known - 1].last_sequence + 1 if known else 0
        walked: list[tuple[SegmentRef, JournalSegment]] = []
        loaded = [(ref, *self._load_segment(manifest, ref)) for ref in index[known:]]
        chain = self._chain(manifest, known_tip)
        run = list(self._run) if incremental and self._run is not None else ([] if not incremental else None)
        for n, (ref, raws, typed, head) in enumerate(loaded + chain):
            covering = (n == len(loaded) and known_tip is not None
                        and ref.first_sequence <= known_tip.last_sequence < ref.last_sequence)
            if (ref.first_sequence != expected and not covering) or ref.last_sequence < ref.first_sequence:
                raise corrupt(self.session_hash, "sequence_gap", f"segment {ref.first_sequence}-"
                              f"{ref.last_sequence} does not follow sequence {expected - 1}")
            where = f"segment {ref.first_sequence}-{ref.last_sequence}"
            expected = self._feed(fold, raws, ref.first_sequence, where, typed)
            if fold.hashes[ref.last_sequence] != ref.last_record_hash:
                raise corrupt(self.session_hash, "chain_break", f"{where} ends on another record than "
                              "the manifest says")
            walked.append((ref, head))
            if n >= len(loaded):  # a chain segment: part of the run unless it is merged
                if ref == manifest.merged:
                    run = []
                elif run is not None:
                    run.extend(raws)
        self._feed(fold, manifest.records, expected, "manifest")
        fold.check_view(manifest)
        self._check_chain(manifest, [r for r, _ in walked[len(loaded):]], incremental, known_merged)
        start, end = self._run_start(manifest), manifest.tip.last_sequence + 1 if manifest.tip else 0
        if run is not None and not (run[0]["sequence"] == start and run[-1]["sequence"] + 1 == end
                                    if run else end <= start):
            run = None  # not the run this manifest describes: this process will not merge it
        return _Walked(walked, run)

    def _check_chain(self, manifest: JournalManifest, chain: list[SegmentRef], incremental: bool,
                     known_merged: SegmentRef | None) -> None:
        """The manifest's chain bookkeeping must describe the chain that was walked: it
        steers what the next writer merges, so a wrong pointer would be built upon."""
        merged = manifest.merged
        if merged is not None and merged not in chain and not (incremental and merged == known_merged):
            raise corrupt(self.session_hash, "segment_mismatch", "the manifest's merged segment is not "
                          "in its segment chain")
        if incremental:
            return
        after = chain[chain.index(merged) + 1:] if merged is not None else chain
        if manifest.schema_version == 2 and (len(chain), len(after)) != (manifest.chain_segments,
                                                                          manifest.run_segments):
            raise corrupt(self.session_hash, "segment_mismatch", f"the manifest counts "
                          f"{manifest.chain_segments} chained segments, {manifest.run_segments} unmerged; "
                          f"the chain has {len(chain)}, {len(after)}")

    def _chain(self, manifest: JournalManifest, known: SegmentRef | None
               ) -> list[tuple[SegmentRef, list[dict[str, Any]], list[JournalRecord] | None, JournalSegment]]:
        """The version 2 segments this process has not verified yet, oldest first: walked
        back from the manifest's newest link to the one verified last, to a merged segment
        that covers it, or to the chain's start."""
        out = []
        ref = manifest.tip
        reached = known is None
        while ref is not None and ref != known:
            covers = known is not None and ref.first_sequence <= known.last_sequence < ref.last_sequence
            if known is not None and ref.last_sequence <= known.last_sequence:
                break
            raws, typed, head = self._load_segment(manifest, ref)
            out.append((ref, raws, typed, head))
            if covers:
                reached = True
                break
            prev = head.prev_segment
            if prev is not None and prev.last_sequence >= ref.first_sequence:
                raise corrupt(self.session_hash, "sequence_gap", f"segment {ref.first_sequence}-"
                              f"{ref.last_sequence} links to a segment that does not precede it")
            ref = prev
        if ref == known:
            reached = True
        if not reached:
            assert known is not None
            raise corrupt(self.session_hash, "segment_mismatch", "the segment chain no longer contains "
                          f"segment {known.first_sequence}-{known.last_sequence} (history rewritten)")
        out.reverse()
        return out

    def _feed(self, fold: JournalFold, records: list[dict[str, Any]], expected: int, where: str,
              typed: list[JournalRecord] | None = None) -> int:
        for i, raw in enumerate(records):
            if raw.get("sequence") != expected:
                raise corrupt(self.session_hash, "sequence_gap", f"{where}: expected sequence "
                              f"{expected}, found {raw.get('sequence')!r} (records missing or reordered)")
            if expected < fold.next_sequence:
                fold.check_known(raw, where)
            else:
                fold.apply(raw, where, typed[i] if typed is not None else None)
            expected += 1
        return expected

    def _load_segment(self, manifest: JournalManifest, ref: SegmentRef
                      ) -> tuple[list[dict[str, Any]], list[JournalRecord] | None, JournalSegment]:
        """The segment's records as stored (for hashing) and, when they all validate, as
        models — validated in one pass, which is most of what verifying a segment costs —
        and the segment it links back to."""
        where = f"segment {ref.first_sequence}-{ref.last_sequence}"
        key = self._segment_key(ref)
        try:
            body = self.store.get(key)
        except NotFound:
            raise corrupt(self.session_hash, "segment_missing", f"{where} referenced by the manifest "
                          "is missing (history lost)") from None
        if hashlib.sha256(body).hexdigest() != ref.sha256:
            raise corrupt(self.session_hash, "segment_mismatch", f"{where} does not match the digest "
                          "the manifest recorded for it")
        try:
            doc = orjson.loads(body)
            head = JournalSegment.model_validate({**doc, "records": []})
            raws = doc["records"]
            if not isinstance(raws, list):
                raise TypeError("records is not a list")
        except (ValueError, TypeError, KeyError):  # ValidationError is a ValueError
            raise corrupt(self.session_hash, "unparseable", f"{where} is not a valid segment") from None
        if (head.session_hash != self.session_hash or head.journal_id != manifest.journal_id
                or head.first_sequence != ref.first_sequence or head.last_sequence != ref.last_sequence
                or len(raws) != ref.last_sequence - ref.first_sequence + 1):
            raise corrupt(self.session_hash, "segment_mismatch",
                          f"{where} describes another range or journal")
        try:  # from the bytes: pydantic's JSON path is faster than validating the dicts
            typed: list[JournalRecord] | None = _SegmentRecords.model_validate_json(body).records
        except ValidationError:
            typed = None  # let the fold find and name the bad record, one by one
        return raws, typed, head

    # -- the CAS loop --------------------------------------------------------------------

    def _cas(self, build: Builder, *, verify: bool = True) -> TransitionResult:
        # A store that ignores If-None-Match / If-Match would make every CAS below "win"
        # and silently drop concurrent records: refuse it (probed once per store object).
        require_conditional_writes(self.store, purpose="the lease journal")
        attempted: dict[str, Built] = {}
        cfg = self.config
        backoff = wait_random_exponential(multiplier=cfg.backoff_base, max=cfg.backoff_max)
        guessed = self._optimistic and self._manifest is not None and self._etag is not None \
            and (self._fold is not None or not verify)

        def wait(state: RetryCallState) -> float:
            # A lost guess is not contention we saw yet: re-read at once.
            return 0.0 if guessed and state.attempt_number == 1 else float(backoff(state))

        retrying = Retrying(
            stop=stop_after_attempt(cfg.journal_cas_attempts) | stop_after_delay(cfg.deadline),
            wait=wait, retry=retry_if_exception_type(_Retry), reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    first = attempt.retry_state.attempt_number == 1
                    result = self._cas_once(build, attempted, verify, guess=guessed and first)
                    self._optimistic = first
                    return result
        except _Retry as exc:
            if exc.unknown:
                raise StoreUnavailable(f"journal write for session {self.session_hash} has an unknown "
                                       f"outcome after retries: {exc.cause}", key=self.key) from exc.cause
            raise JournalContention(f"journal of session {self.session_hash}: compare-and-swap lost "
                                    f"{cfg.journal_cas_attempts} times to concurrent writers") from exc.cause
        raise AssertionError("unreachable")  # pragma: no cover

    def _cas_once(self, build: Builder, attempted: dict[str, Built], verify: bool,
                  guess: bool = False) -> TransitionResult:
        if guess:
            # Only a write may be decided on the guessed state (the CAS then checks it);
            # a no-op or a refusal is decided again on what the store holds now.
            manifest, etag, fold = self._manifest, self._etag, self._fold
            try:
                built = build(manifest, fold)
            except (S3SpillError, ValueError):
                built = None
            if not isinstance(built, Built):
                return self._cas_once(build, attempted, verify)
        else:
            try:
                manifest, etag = self._read()
                fold = self._sync(manifest, etag) if verify else None
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
        self.stats.writes += 1
        if built.segment_ref is not None:
            self._segment_keys.add(self._segment_key(built.segment_ref))
        self._adopt(built.manifest, built.fold, put.etag, built.run)
        self._manifest_bytes = len(self._last_body)
        return built.result

    def _write(self, built: Built, manifest: JournalManifest | None, etag: str | None,
               attempted: dict[str, Built]) -> PutResult:
        """Segment (if any), then the conditional manifest write; raises _Retry unless won."""
        if built.segment is not None:
            try:  # idempotent (content-addressed): an unknown outcome is simply written again
                self._write_segment(*built.segment)
            except StoreUnavailable as exc:
                raise _Retry(exc, unknown=bool(attempted)) from exc
        failpoint(FP_BEFORE_CAS)
        body = self._last_body = built.manifest.body()
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
                attempted: dict[str, Built]) -> TransitionResult | None:
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
        try:
            self.store.put_if_absent(key, body, content_type=_JSON)
            self.stats.segments_written += 1
        except AlreadyExists:
            # Content-addressed: the same range compacted by another writer. Make sure.
            if hashlib.sha256(self.store.get(key)).hexdigest() != hashlib.sha256(body).hexdigest():
                raise corrupt(self.session_hash, "segment_mismatch",
                              "a segment key holds content that is not the journal's") from None
        failpoint(FP_AFTER_SEGMENT)

    def _mutate(self, plan: Plan) -> TransitionResult:
        def build(manifest: JournalManifest | None, fold: JournalFold | None) -> Built | TransitionResult:
            assert fold is not None
            decision = plan(manifest, fold)
            if isinstance(decision, TransitionResult):
                return decision
            return self._build(manifest, fold, decision)

        return self._cas(build)

    def _build(self, manifest: JournalManifest | None, fold: JournalFold, write: Write) -> Built:
        fold.begin()  # applied in place, undone unless the write is won (see _cas_once)
        try:
            return self._build_on(manifest, fold, write)
        except BaseException:
            fold.rollback()
            raise

    def _build_on(self, manifest: JournalManifest | None, new: JournalFold, write: Write) -> Built:
        now = self.clock()
        old_next = new.next_sequence
        records = list(manifest.records) if manifest else []
        written: list[tuple[int, str]] = []
        for spec in write.specs:
            raw, model = build_record(session_hash=self.session_hash, sequence=new.next_sequence,
                                      prev_hash=new.head_hash, at=now, **spec)
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
        run = self._run if manifest is not None else []
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
            run_next = run[-1]["sequence"] + 1 if run else self._run_start(manifest)
            if (run is not None and unmerged + 1 >= cfg.journal_merge_segments
                    and chunk[0]["sequence"] == run_next):
                # LSM-style: the run's last segment is written merged with the run (records this
                # process verified), linked past it; the run's objects stay behind, unreferenced.
                chunk, level, prev = [*run, *chunk], 1, merged
            first, last = chunk[0]["sequence"], chunk[-1]["sequence"]
            seg_body = canonical_json(JournalSegment(
                session_hash=self.session_hash, journal_id=journal_id, first_sequence=first,
                last_sequence=last, prev_hash=chunk[0]["prev_hash"], prev_segment=prev, level=level,
                records=chunk,
            ).model_dump(mode="json"))
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
        return Built(new_manifest, new, result, segment, written, tip if segment else None, run)

    def _noop(self, outcome: str, state: str | None, *, txid: str | None = None,
              source_id: str | None = None) -> TransitionResult:
        return TransitionResult(outcome=outcome, state=state, changed=False, generation=self._generation,
                                transaction_id=txid, source_id=source_id)

    # -- reading -------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """The manifest generation this process last verified (0: none yet)."""
        return self._generation

    def refresh(self) -> JournalFold:
        """Read and verify the current manifest (incrementally); the verified fold."""
        manifest, etag = self._read()
        return self._sync(manifest, etag)

