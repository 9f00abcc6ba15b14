"""Verified reads of one session's lease journal: the manifest, then its segment chain.

Reads the manifest (HEAD then GET, so the body is never older than the ETag a CAS is
conditioned on) and verifies it against what this process already verified: the first
read folds the whole history, later reads only what is new. Segments form a chain from
the manifest's newest link back to the start (version 2); every
``journal_merge_segments`` level 0 segments, a writer writes the last one merged with
the rest of the run (LSM-style), linked past the run, so a fresh reader fetches about one
object per 256 records. What a reader verified (the fold, the chain's tip, the level 0
run's records) is what :class:`~s3spill.leases.cas.ManifestCas` builds the next manifest
on, which is why both share one :class:`ManifestReader`.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import ValidationError

from s3spill import keys
from s3spill.errors import NotFound, SessionErased
from s3spill.leases.erased import read_tombstone
from s3spill.leases.journal_fold import JournalFold
from s3spill.leases.journal_format import (
    JournalManifest,
    JournalSegment,
    SegmentRef,
    compute_record_hash,
    corrupt,
)
from s3spill.leases.reports import OrphanSegment
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore

__all__ = ["JournalStats", "ManifestReader", "paused_cyclic_gc", "scan_orphan_segments"]

log = get_logger("s3spill.leases.journal")


@contextlib.contextmanager
def paused_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic collector while folding: a long history allocates tens of thousands
    of acyclic objects, and the collector would re-walk all of them (~30% of verify time).
    Reference counting still frees everything; the collector resumes right after (nested or
    on several threads: only the pause that found it running resumes it). GC's plan and
    apply pause it for their whole run (:mod:`s3spill.gc.plan`, :mod:`s3spill.gc.apply`)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class JournalStats:
    """What this instance did: successful writes, lost CAS races, unknown outcomes, reads."""

    writes: int = 0
    lost: int = 0
    ambiguous: int = 0
    reads: int = 0
    segments_written: int = 0


@dataclass
class _Walked:
    """What a walk verified: the segments it read, and the level 0 run's records (or None)."""

    segments: list[tuple[SegmentRef, JournalSegment]]
    run: list[dict[str, Any]] | None


class ManifestReader:
    """One session's manifest and segment chain as this process verified them."""

    def __init__(self, store: ObjectStore, session_hash: str, stats: JournalStats) -> None:
        self.store = store
        self.session_hash = session_hash
        self.key = keys.manifest_key(session_hash)
        self.stats = stats
        #: How often :meth:`reset` forgot everything (a writer's guesses are void after one).
        self.resets = 0
        self.reset()

    def reset(self) -> None:
        """Forget what was verified: the next read folds the whole history again."""
        self.resets += 1
        self.fold: JournalFold | None = None
        self.journal_id: str | None = None
        #: The manifest generation this process last verified (0: none yet).
        self.generation = 0
        self.write_id: str | None = None
        #: The segments this process verified: the index listed in the manifest (all of a
        #: version 1 journal, the frozen legacy part of a version 2 one), the newest link
        #: of the version 2 chain, and (from the last full walk) every referenced key and
        #: the ranges of merged segments.
        self.index: list[SegmentRef] = []
        self.tip: SegmentRef | None = None
        self.segment_keys: set[str] = set()
        self.merged_ranges: list[tuple[int, int]] = []
        #: Records of the chain's level 0 run (after ``merged``), as stored: what the writer
        #: that cuts the run's last segment merges. ``None``: not known (no merge then).
        self.run: list[dict[str, Any]] | None = []
        self.manifest: JournalManifest | None = None
        self.etag: str | None = None
        self.manifest_bytes = 0

    def refresh(self) -> JournalFold:
        """Read and verify the current manifest (incrementally); the verified fold."""
        manifest, etag = self.read()
        return self.sync(manifest, etag)

    def read(self) -> tuple[JournalManifest | None, str | None]:
        """HEAD then GET: the body is at least as new as the ETag, so a CAS on a stale
        ETag fails instead of overwriting a state we did not see."""
        self.stats.reads += 1
        try:
            info = self.store.head(self.key)
            body = self.store.get(self.key)
        except NotFound:
            return None, None
        if read_tombstone(body) is not None:
            raise SessionErased(f"session {self.session_hash} was erased on request (purged); its "
                                "journal takes no more records")
        try:
            manifest = JournalManifest.model_validate_json(body)
        except ValidationError as exc:
            raise corrupt(self.session_hash, "unparseable",
                          f"the manifest is not a valid manifest ({exc.errors()[0].get('msg')})") from None
        if manifest.session_hash != self.session_hash:
            raise corrupt(self.session_hash, "foreign_record", "the manifest belongs to another session")
        self.manifest_bytes = len(body)
        return manifest, info.etag

    def sync(self, manifest: JournalManifest | None, etag: str | None) -> JournalFold:
        """Verify ``manifest`` against what this process already verified and adopt it."""
        if manifest is None:
            if self.fold is not None:
                log.info("journal.manifest_gone", session=self.session_hash)
            self.reset()
            return JournalFold(self.session_hash)
        if self.fold is not None and manifest.journal_id == self.journal_id:
            if manifest.generation == self.generation:
                if manifest.write_id != self.write_id:
                    raise corrupt(self.session_hash, "generation",
                                  f"two different manifests carry generation {manifest.generation}")
                self.etag = etag
                return self.fold
            if manifest.generation < self.generation:
                raise corrupt(self.session_hash, "generation", f"the manifest went back from generation "
                              f"{self.generation} to {manifest.generation}")
            fold = self.fold
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
            self.index, self.segment_keys, self.merged_ranges = [], set(), []
        for ref, head in walked.segments:
            self.segment_keys.add(self.segment_key(ref))
            if head.level == 1:
                self.merged_ranges.append((ref.first_sequence, ref.last_sequence))
        self.adopt(manifest, fold, etag, walked.run)
        return fold

    def adopt(self, manifest: JournalManifest, fold: JournalFold | None, etag: str | None,
              run: list[dict[str, Any]] | None) -> None:
        """Trust ``manifest`` (and ``fold``, its state; ``run``, its level 0 run's records)."""
        if fold is None:
            return  # written without a fold (touch): verified on the next read, not trusted now
        self.etag = etag
        self.fold = fold
        if len(manifest.index) != len(self.index):
            self.index = list(manifest.index)
        self.tip = manifest.tip
        self.run = run
        self.journal_id = manifest.journal_id
        self.generation = manifest.generation
        self.write_id = manifest.write_id
        self.manifest = manifest

    def segment_key(self, ref: SegmentRef) -> str:
        return keys.segment_key(self.session_hash, ref.first_sequence, ref.last_sequence, ref.sha256)

    @staticmethod
    def run_start(manifest: JournalManifest | None) -> int:
        """The first sequence of the chain's level 0 run."""
        if manifest is None:
            return 0
        if manifest.merged is not None:
            return manifest.merged.last_sequence + 1
        return manifest.index[-1].last_sequence + 1 if manifest.index else 0

    def _walk(self, manifest: JournalManifest, fold: JournalFold, *, incremental: bool) -> _Walked:
        """Apply every record of ``manifest`` not yet in ``fold``; re-check the ones that are."""
        with paused_cyclic_gc():
            return self._walk_records(manifest, fold, incremental)

    def _walk_records(self, manifest: JournalManifest, fold: JournalFold, incremental: bool) -> _Walked:
        known_index, known_tip = (self.index, self.tip) if incremental else ([], None)
        known_merged = self.manifest.merged if incremental and self.manifest is not None else None
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
        run = list(self.run) if incremental and self.run is not None else ([] if not incremental else None)
        for n, (ref, raws, head) in enumerate(loaded + chain):
            covering = (n == len(loaded) and known_tip is not None
                        and ref.first_sequence <= known_tip.last_sequence < ref.last_sequence)
            if (ref.first_sequence != expected and not covering) or ref.last_sequence < ref.first_sequence:
                raise corrupt(self.session_hash, "sequence_gap", f"segment {ref.first_sequence}-"
                              f"{ref.last_sequence} does not follow sequence {expected - 1}")
            where = f"segment {ref.first_sequence}-{ref.last_sequence}"
            expected = self._feed(fold, raws, ref.first_sequence, where)
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
        start, end = self.run_start(manifest), manifest.tip.last_sequence + 1 if manifest.tip else 0
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
               ) -> list[tuple[SegmentRef, list[dict[str, Any]], JournalSegment]]:
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
            raws, head = self._load_segment(manifest, ref)
            out.append((ref, raws, head))
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

    def _feed(self, fold: JournalFold, records: list[dict[str, Any]], expected: int, where: str) -> int:
        for raw in records:
            if raw.get("sequence") != expected:
                raise corrupt(self.session_hash, "sequence_gap", f"{where}: expected sequence "
                              f"{expected}, found {raw.get('sequence')!r} (records missing or reordered)")
            if expected < fold.next_sequence:
                fold.check_known(raw, where)
            else:
                fold.apply(raw, where)
            expected += 1
        return expected

    def _load_segment(self, manifest: JournalManifest, ref: SegmentRef
                      ) -> tuple[list[dict[str, Any]], JournalSegment]:
        """The segment's records as stored (the fold checks and hashes each) and the segment
        it links back to."""
        where = f"segment {ref.first_sequence}-{ref.last_sequence}"
        key = self.segment_key(ref)
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
        return raws, head

    # -- the CAS loop --------------------------------------------------------------------


# -- segments the verified chain does not reference (journal verify) ----------------


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
