"""A write to the artifact store that the caller can stop waiting for.

Why a worker thread fed by a bounded queue: a blocking boto3 call (retries, backoff,
a dead endpoint's connect timeouts) cannot be cancelled from outside, but the caller
can stop *waiting* for it. The Spiller keeps reading the tool's output on its own
thread (so the preview is always complete) and hands chunks to the writer through a
queue of a few chunks, which bounds memory; if the writer stops taking chunks for
``stall_timeout`` seconds, fails, or does not finish within the final wait, the
upload is *abandoned*:

* the chunk iterator the writer is consuming raises :class:`UploadAbandoned` the next
  time it is pulled, so a writer that is still streaming never completes the object
  with a truncated body (the end-of-stream marker is only sent after the whole output
  was read without error);
* a result that arrives after abandonment is recorded as ``late`` and never returned,
  so nothing ever points at an artifact the caller gave up on. Such an artifact holds
  the complete output but has no claim; GC's orphan rules collect it.

The decision "result or abandoned" is taken under one lock, so it is race-free.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from s3spill.log import get_logger

T = TypeVar("T")

log = get_logger("s3spill.spill.upload")

_END = object()
_POLL = 0.25


class UploadAbandoned(Exception):
    """Raised inside the writer's chunk iterator once the caller stopped waiting."""


class BoundedUpload(Generic[T]):
    """Run ``write(chunks)`` on a daemon thread; feed it; wait for it at most so long."""

    def __init__(self, write: Callable[[Iterator[bytes]], T], *, stall_timeout: float,
                 depth: int = 4, name: str = "s3spill-upload") -> None:
        self.stall_timeout = stall_timeout
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, depth))
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._abandoned = False
        self._result: T | None = None
        self._error: BaseException | None = None
        self.reason: str | None = None
        self.late: T | None = None
        self._after: Callable[[T], None] | None = None
        self._thread = threading.Thread(target=self._run, args=(write,), name=name, daemon=True)
        self._thread.start()

    # -- writer side -----------------------------------------------------------------

    def _chunks(self) -> Iterator[bytes]:
        while True:
            try:
                item = self._queue.get(timeout=_POLL)
            except queue.Empty:
                if self._abandoned:
                    raise UploadAbandoned(self.reason or "abandoned") from None
                continue
            if self._abandoned:
                raise UploadAbandoned(self.reason or "abandoned")
            if item is _END:
                return
            assert isinstance(item, bytes)
            yield item

    def _run(self, write: Callable[[Iterator[bytes]], T]) -> None:
        try:
            result = write(self._chunks())
        except BaseException as exc:  # noqa: BLE001 - reported to the caller, never raised here
            with self._lock:
                self._error = exc
            self._done.set()
            return
        with self._lock:
            if self._abandoned:
                self.late = result
            else:
                self._result = result
            after = self._after if not self._abandoned else None
        self._done.set()
        if after is not None:
            try:
                after(result)
            except Exception as exc:  # noqa: BLE001 - follow-up work must never surface
                log.warning("upload.after_failed", error=type(exc).__name__)

    # -- caller side -----------------------------------------------------------------

    @property
    def failed(self) -> bool:
        """The upload can no longer produce a result (abandoned or the writer failed)."""
        return self._abandoned or self._error is not None

    @property
    def error(self) -> BaseException | None:
        """What the writer raised, if it failed (a caller that must not fail open re-raises it)."""
        return self._error

    def abandon(self, reason: str) -> None:
        """Stop waiting for good; a result arriving after this is never returned."""
        with self._lock:
            if self._result is not None or self._abandoned:
                return
            self._abandoned = True
            self.reason = reason
        while True:  # free the queued chunks now; the writer will not need them
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break

    def _put(self, item: object) -> bool:
        give_up = time.monotonic() + self.stall_timeout
        while not self.failed:
            if self._done.is_set():
                self._note_early_end()
                return False
            try:
                self._queue.put(item, timeout=max(0.0, min(_POLL, give_up - time.monotonic())))
                return True
            except queue.Full:
                if time.monotonic() >= give_up:
                    self.abandon(f"the store took no data for {self.stall_timeout:g} s")
                    return False
        return False

    def _note_early_end(self) -> None:
        with self._lock:
            if self._error is None and not self._abandoned and self._result is None:
                self._error = RuntimeError("the writer returned before the output ended")

    def feed(self, chunk: bytes) -> bool:
        """Hand one chunk to the writer; False once the upload is over (stop feeding)."""
        return self._put(chunk)

    def finish(self, wait: float, after: Callable[[T], None] | None = None) -> T | None:
        """Mark the end of the output and wait up to ``wait`` s for the result.

        Returns the result, or None with :attr:`reason` saying why (the upload is then
        abandoned). ``after`` runs on the writer's thread once a result is accepted
        (follow-up work that must not add latency, e.g. a liveness mark).
        """
        with self._lock:
            self._after = after
        if self.failed or not self._put(_END):
            return self._outcome()
        self._done.wait(max(0.0, wait))
        if not self._done.is_set():
            self.abandon(f"the store did not finish within {wait:.1f} s")
        return self._outcome()

    def _outcome(self) -> T | None:
        with self._lock:
            if self._result is not None:
                return self._result
            if self._error is not None and not self._abandoned:
                self._abandoned = True
                self.reason = describe_error(self._error)
            return None

    def join(self, timeout: float) -> bool:
        """Wait for the writer thread (and its follow-up work); True if it ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()


def describe_error(exc: BaseException) -> str:
    """One line for a log and a notice: the class and a capped message, no content."""
    text = " ".join(str(exc).split())
    if len(text) > 160:
        text = text[:159] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
