"""What an agent harness calls after every tool call: decide what the model sees.

:meth:`Spiller.externalize` reads a tool's output exactly once. Up to the tool's
threshold it only buffers (it cannot know before); an output that stays under every
budget comes back inline and is not stored. Past the threshold, the buffered prefix
and the rest of the stream go, chunk by chunk, both to a :class:`TextRetainer`
(head and tail for the preview) and to the artifact store (the full text), so memory
stays bounded whatever the size. The model gets the pointer rendered by
:mod:`s3spill.context.pointer`: head, gap, tail, and a notice with the locator.

It fails open, honestly (sources 001 and the issue's "Degradation"): when the store
fails, stalls, or misses the deadline, the result is the hard-capped head/tail with a
notice that the full output could NOT be saved — never a locator that does not exist
— and a warning in the log. No exception reaches the caller. The added latency is
bounded: the store may stall the stream for at most ``store_deadline`` seconds, and
once the output has ended we wait at most ``store_deadline`` plus the time the upload
needs at ``min_upload_rate`` (see :mod:`s3spill.spill_upload` for how a blocking
boto3 call is left behind without pointing at what it may still write).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Literal, Protocol

from s3spill.artifacts import ArtifactStore
from s3spill.context.blocks import Block
from s3spill.context.budget import TurnBudgetReport, TurnResult, enforce_turn_budget
from s3spill.context.policy import SpillPolicy
from s3spill.journal import LeaseJournal
from s3spill.keys import session_hash
from s3spill.log import get_logger
from s3spill.models import ArtifactReference
from s3spill.spill_blocks import BlocksResult, externalize_blocks
from s3spill.spill_job import ExitCode, SpillJob, SpillResult
from s3spill.spill_source import Output
from s3spill.spill_upload import BoundedUpload, describe_error
from s3spill.store.base import ObjectStore

__all__ = ["SpillResult", "Spiller"]

log = get_logger("s3spill.spiller")

MiB = 1024 * 1024

class _NotStored(Exception):
    """The per-turn callback's way of saying "keep this one inline"."""


class LivenessMark(Protocol):
    """What the Spiller needs of the lease journal: a rate-limited ``last_active`` mark."""

    def touch(self, min_interval: float = ...) -> bool: ...


class Spiller:
    """Externalize tool output for one session; thread-safe, one instance per session.

    ``store`` is an :class:`~s3spill.store.base.ObjectStore` or an already built
    :class:`~s3spill.artifacts.ArtifactStore`. ``journal`` is the session's lease
    journal (anything with ``touch``; by default the session's
    :class:`~s3spill.journal.LeaseJournal` in the same store, ``None`` for none):
    after a successful spill its ``last_active`` is refreshed at most once per
    ``touch_interval`` seconds, on the upload thread, off the caller's path — GC keeps
    everything of a session active within its TTL, so a live session's fresh artifacts
    are safe before any claim on them is published.
    """

    def __init__(
        self,
        store: ObjectStore | ArtifactStore,
        session_id: str,
        policy: SpillPolicy | None = None,
        *,
        journal: LivenessMark | Literal["auto"] | None = "auto",
        touch_interval: float = 60.0,
        min_upload_rate: float = 32 * MiB,
        queue_depth: int = 4,
    ) -> None:
        if isinstance(store, ObjectStore):
            store = ArtifactStore(store, getattr(store, "config", None), session_id=session_id)
        self.artifacts = store
        if journal == "auto":
            journal = LeaseJournal(store.store, session_id, store.config)
        self.session_id = session_id
        self.session_hash = session_hash(session_id)
        self.policy = policy or SpillPolicy()
        self.journal = journal
        self.touch_interval = touch_interval
        self.min_upload_rate = min_upload_rate
        self.queue_depth = queue_depth
        self._touch_lock = threading.Lock()
        self._last_touch: float | None = None
        self._uploads: list[BoundedUpload[ArtifactReference]] = []
        self._uploads_lock = threading.Lock()

    # -- public ----------------------------------------------------------------------

    def externalize(
        self,
        output: Output,
        tool: str,
        call_id: str | None = None,
        exit_code: ExitCode = None,
        spillable: bool = True,
        *,
        label: str | None = None,
        force: bool = False,
    ) -> SpillResult:
        """The context text for one tool result; stores the full output when it is too large.

        ``output`` is consumed exactly once. ``exit_code`` may be a callable, asked
        once the output has ended (a running command's status is known only then; a
        non-zero one makes the preview favour the tail). ``spillable=False`` (e.g. a
        paged file read that is already on disk) is never copied: it is returned
        inline, clipped to the hard cap. ``force`` stores a spillable output even under
        its threshold (the per-turn budget uses it). Never raises for store or stream
        failures.
        """
        job = SpillJob(self, output, tool, call_id, exit_code, spillable, label, force)
        return job.run()

    def enforce_turn_budget(
        self,
        results: Sequence[TurnResult],
        per_result: int = 100_000,
        turn_total: int = 200_000,
        context_window: int | None = None,
    ) -> TurnBudgetReport:
        """:func:`~s3spill.context.budget.enforce_turn_budget` with this Spiller spilling.

        Largest first; a result that is not ``spillable`` (a paged file read) or is
        already ``spilled`` (its content is a pointer) is never copied. A result the
        store could not take stays inline (listed in ``failed``): an over-budget turn
        beats a lost result. Each replaced result carries its :class:`SpillResult` in
        ``extra``.
        """
        candidates = [replace(r, spillable=r.spillable and not r.spilled) for r in results]

        def spill(result: TurnResult) -> TurnResult:
            out = self.externalize(result.content, result.tool, result.call_id, result.exit_code,
                                   force=True)
            if not out.spilled:
                raise _NotStored(out.degraded_reason or "not stored")
            return replace(result, content=out.context_text, extra=out)

        report = enforce_turn_budget(candidates, per_result, turn_total, context_window, spill=spill)
        restored = [replace(new, spillable=old.spillable) for new, old in zip(report.results, results,
                                                                               strict=True)]
        return replace(report, results=restored)

    def externalize_blocks(self, blocks: Sequence[Block], tool: str, call_id: str | None = None,
                           exit_code: int | None = None) -> BlocksResult:
        """The same for a result made of text and image blocks (see :mod:`s3spill.spill_blocks`).

        Images are priced with the policy's ``image_pricer``; an omitted image is stored
        as its own artifact and named in the notice by locator.
        """
        return externalize_blocks(self, blocks, tool, call_id, exit_code)

    def store_blob(self, chunks: Iterable[bytes], tool: str, call_id: str | None = None,
                   label: str | None = None) -> tuple[ArtifactReference | None, str | None]:
        """Store chunks already in hand as one artifact, within the deadline: (reference, reason)."""

        def write(stream: Iterator[bytes]) -> ArtifactReference:
            return self.artifacts.write(self.session_id, stream, tool, call_id=call_id, label=label)

        upload: BoundedUpload[ArtifactReference] = BoundedUpload(
            write, stall_timeout=self.policy.store_deadline, depth=self.queue_depth)
        total = 0
        try:
            for chunk in chunks:
                total += len(chunk)
                if not upload.feed(chunk):
                    break
        except Exception as exc:  # noqa: BLE001 - a failing source must not complete the upload
            upload.abandon(f"reading the output failed: {describe_error(exc)}")
        ref = upload.finish(self.deadline_for(total), after=self.after_spill)
        if ref is not None:
            self.track(upload)
        return ref, upload.reason

    def deadline_for(self, total_bytes: int) -> float:
        """Seconds we wait for the store once the output has ended."""
        return self.policy.store_deadline + total_bytes / self.min_upload_rate

    def close(self, timeout: float | None = None) -> None:
        """Wait (bounded) for follow-up work of accepted uploads, e.g. the liveness mark.

        Abandoned uploads are not waited for: their threads are daemons and nothing
        will ever point at what they may still write.
        """
        limit = self.policy.store_deadline if timeout is None else timeout
        end = time.monotonic() + limit
        with self._uploads_lock:
            uploads, self._uploads = self._uploads, []
        for upload in uploads:
            upload.join(max(0.0, end - time.monotonic()))

    def __enter__(self) -> Spiller:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals used by _Job --------------------------------------------------------

    def track(self, upload: BoundedUpload[ArtifactReference]) -> None:
        with self._uploads_lock:
            self._uploads = [u for u in self._uploads if not u.join(0)]
            self._uploads.append(upload)

    def after_spill(self, ref: ArtifactReference) -> None:
        """Runs on the upload thread after a spill was accepted: the liveness mark."""
        if self.journal is None:
            return
        now = time.monotonic()
        with self._touch_lock:
            if self._last_touch is not None and now - self._last_touch < self.touch_interval:
                return
            self._last_touch = now
        try:
            self.journal.touch(self.touch_interval)
        except Exception as exc:  # noqa: BLE001 - liveness is a hint; never fail a spill on it
            with self._touch_lock:
                self._last_touch = None
            log.warning("spill.touch_failed", session_hash=self.session_hash, error=describe_error(exc))
