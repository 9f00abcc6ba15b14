"""Where a spill's bytes go: the artifact store, within a deadline, then a liveness mark.

Why a separate object: a text spill (:mod:`s3spill.spill.job`) and a block spill
(:mod:`s3spill.spill.block_spill`) both need "store this stream, give up after the deadline,
remember the accepted upload, mark the session alive" — and nothing else of the
:class:`~s3spill.spill.spiller.Spiller`. Giving them this sink instead of the Spiller
keeps the dependency one-way (Spiller → job/blocks → sink) and the Spiller's public
surface to what a harness calls.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator

from s3spill.artifacts.store import ArtifactStore
from s3spill.errors import SessionErased, StoreCapabilityError
from s3spill.fleet.quota import QuotaGuard
from s3spill.fleet.seal import ERASED_REASON, ErasureCheck
from s3spill.keys import session_hash
from s3spill.leases.liveness import LivenessMark
from s3spill.log import get_logger
from s3spill.models import ArtifactReference
from s3spill.spill.upload import BoundedUpload, describe_error
from s3spill.typed.detect import Detection, detect

__all__ = ["SpillSink"]

log = get_logger("s3spill.spill.spiller")


class SpillSink:
    """Store streams as artifacts of one session within a deadline; thread-safe."""

    def __init__(self, artifacts: ArtifactStore, session_id: str, *, store_deadline: float,
                 journal: LivenessMark | None, touch_interval: float, min_upload_rate: float,
                 queue_depth: int, quota: QuotaGuard | None = None) -> None:
        self.artifacts = artifacts
        self.session_id = session_id
        self.session_hash = session_hash(session_id)
        self.store_deadline = store_deadline
        self.journal = journal
        self.touch_interval = touch_interval
        self.min_upload_rate = min_upload_rate
        self.queue_depth = queue_depth
        self.quota = quota
        self.erasure = ErasureCheck(artifacts.store, self.session_hash)
        self._touch_lock = threading.Lock()
        self._last_touch: float | None = None
        self._uploads: list[BoundedUpload[ArtifactReference]] = []
        self._uploads_lock = threading.Lock()
        self.last_error: BaseException | None = None

    def open(self, tool: str, call_id: str | Callable[[], str | None] | None = None, label: str | None = None,
             detected: Detection | None = None) -> BoundedUpload[ArtifactReference]:
        """An upload the caller feeds; it stalls the caller at most ``store_deadline``.

        ``detected`` is the output's kind, recorded in the index (plain text when None);
        ``call_id`` may be a callable, asked once the stream has ended.
        """
        kind = detected.kind if detected is not None else "text"
        description = detected.description if detected is not None and kind != "text" else None

        def write(stream: Iterator[bytes]) -> ArtifactReference:
            if self.erasure.before_write():  # sealed: create nothing of the session
                raise SessionErased(ERASED_REASON)
            ref = self.artifacts.write(self.session_id, stream, tool, call_id=call_id, label=label,
                                       output_kind=kind, output_description=description)
            # On the writer's thread, so a late write (the caller gave up on it) is checked too.
            if self.erasure.after_write(ref):
                raise SessionErased(ERASED_REASON)
            return ref

        return BoundedUpload(write, stall_timeout=self.store_deadline, depth=self.queue_depth)

    def finish(self, upload: BoundedUpload[ArtifactReference], total_bytes: int) -> ArtifactReference | None:
        """The stored reference, or None if the store did not accept it before the deadline."""
        ref = upload.finish(self.deadline_for(total_bytes), after=self._after_spill)
        #: Why the last spill was not stored, when its writer raised (the CLI's ``spill``, which
        #: must not fail open, re-raises it); None after a stored one.
        self.last_error = upload.error if ref is None else None
        if ref is not None:
            with self._uploads_lock:
                self._uploads = [u for u in self._uploads if not u.join(0)]
                self._uploads.append(upload)
        return ref

    def store_blob(self, chunks: Iterable[bytes], tool: str, call_id: str | None = None,
                   label: str | None = None) -> tuple[ArtifactReference | None, str | None]:
        """Store chunks already in hand as one artifact, within the deadline: (reference, reason).

        The kind is detected from the first chunk, so an image block is stored as the
        image it is (binary, its format and size in the index), not as text.
        """
        source = iter(chunks)
        try:
            first = next(source, b"")
        except Exception as exc:  # noqa: BLE001 - a failing source: nothing to store
            return None, f"reading the output failed: {describe_error(exc)}"
        upload = self.open(tool, call_id, label, detect(first))
        total = 0
        try:
            for chunk in itertools.chain((first,), source):
                total += len(chunk)
                if not upload.feed(chunk):
                    break
        except Exception as exc:  # noqa: BLE001 - a failing source must not complete the upload
            upload.abandon(f"reading the output failed: {describe_error(exc)}")
        ref = self.finish(upload, total)
        return ref, upload.reason

    def deadline_for(self, total_bytes: int) -> float:
        """Seconds we wait for the store once the output has ended."""
        return self.store_deadline + total_bytes / self.min_upload_rate

    def close(self, timeout: float | None = None) -> None:
        """Wait (bounded) for follow-up work of accepted uploads, e.g. the liveness mark.

        Abandoned uploads are not waited for: their threads are daemons and nothing
        will ever point at what they may still write.
        """
        limit = self.store_deadline if timeout is None else timeout
        end = time.monotonic() + limit
        with self._uploads_lock:
            uploads, self._uploads = self._uploads, []
        for upload in uploads:
            upload.join(max(0.0, end - time.monotonic()))

    def refusal(self) -> str | None:
        """Why nothing may be stored now (purged, a quota reached), or None; makes no request."""
        if self.erasure.erased:
            return ERASED_REASON
        return self.quota.refusal() if self.quota is not None else None

    def _after_spill(self, ref: ArtifactReference) -> None:
        """Runs on the upload thread after a spill was accepted: quota counters, liveness."""
        if self.quota is not None:
            self.quota.record(ref)
        if self.journal is None:
            return
        now = time.monotonic()
        with self._touch_lock:
            if self._last_touch is not None and now - self._last_touch < self.touch_interval:
                return
            self._last_touch = now
        try:
            self.journal.touch(self.touch_interval)
        except StoreCapabilityError as exc:
            # Never retried: the store ignores conditional writes, so the journal (and with
            # it leases and GC's liveness) cannot work here. Spilling goes on; say so once.
            with self._touch_lock:
                first, self.journal = self.journal is not None, None
            if not first:
                return
            log.warning("spill.STORE_IGNORES_CONDITIONAL_WRITES", session_hash=self.session_hash,
                        missing=exc.missing, detail="artifacts are still written, but the lease "
                        "journal is disabled for this session: references cannot be protected "
                        "from GC on this store (run `s3spill doctor`)")
        except Exception as exc:  # noqa: BLE001 - liveness is a hint; never fail a spill on it
            with self._touch_lock:
                self._last_touch = None
            log.warning("spill.touch_failed", session_hash=self.session_hash, error=describe_error(exc))
