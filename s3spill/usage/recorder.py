"""Appending usage events to create-once objects, in batches, off the caller's path.

Why batches: an object per tool call would cost a PUT per call and leave millions of tiny
objects; a long-lived process (MCP server, proxy, ``ui``) queues events and a background
thread writes one zstd NDJSON object per session and day when :attr:`max_events` are queued or
the oldest is :attr:`max_age` seconds old. A one-shot process (a hook, the CLI) writes its
events one small object per call, at once (``batch=False``: no thread; the process is about to
exit, and a write it does not wait for would be lost).

Why it can never hurt a tool call: :meth:`UsageRecorder.record` only appends to a bounded
queue (a full queue drops and counts); writing happens on the recorder's thread, and any
failure there is logged and counted as lost — usage is evidence for tuning, not a record
anything depends on. Keys are fresh (a timestamp and 6 random bytes), so a write never
replaces anything; a taken name is retried under a new one.

A purge seals the session before it lists what to delete; like a live writer
(:mod:`s3spill.fleet.seal`), the recorder checks the seal after each write and deletes
what it just wrote if the session was erased meanwhile, then drops the session's events.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from s3spill import keys
from s3spill.errors import AlreadyExists, NotFound, PreconditionFailed, S3SpillError
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore
from s3spill.telemetry import observe_event, observe_events
from s3spill.usage.events import Event, EventMaker
from s3spill.usage.parts import PART_LEVEL, compressor, part_body, zstd_part

__all__ = ["PART_LEVEL", "UsageRecorder", "UsageSink", "close_all", "part_body", "record_answer",
           "usage_recorder", "zstd_part"]

log = get_logger("s3spill.usage")

#: ``S3SPILL_USAGE=off`` turns usage records off for the process.
ENV = "S3SPILL_USAGE"
#: Seconds a deferred event waits at most to be built (and counted in the metrics).
BUILD_EVERY = 1.0


class UsageSink(Protocol):
    """All that the spill and read paths need: append one event, never raising."""

    def record(self, event: Event | None) -> None: ...

    def defer(self, make: Callable[..., Event | None], *args: Any) -> None:
        """Append the event ``make(*args)`` builds, later and on another thread if the sink can."""
        ...


@functools.lru_cache(maxsize=1024)
def _hash_of(session_id: str) -> str:
    return keys.session_hash(session_id)


def _session_hash(session_id: str) -> str:
    """A session's hash, once per session (a SHA-256 on every read and grep otherwise); only
    for a plain ``str`` (a subclass such as ``HashedSession`` may compare as it likes)."""
    return _hash_of(session_id) if type(session_id) is str else keys.session_hash(session_id)


def record_answer(usage: UsageSink, make: EventMaker, session_id: str, source_id: str, via: str,
                  text: str, data: dict[str, Any] | None) -> None:
    """The event of one read or grep answer (what the model was shown), built later; never raises."""
    try:
        usage.defer(_answer_event, make, _session_hash(session_id), source_id, via, text,
                    dict(data or {}), time.time())
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the answer stands
        log.warning("usage.event_failed", error=type(exc).__name__)


def _answer_event(make: EventMaker, shash: str, source_id: str, via: str, text: str,
                  data: dict[str, Any], at: float) -> Event | None:
    return make(shash, source_id, via, text, data, at=at)


class UsageRecorder:
    """Queue events for one store and write them as create-once zstd NDJSON objects.

    The bounds of a batch: a part is written once ``max_events`` are queued or its oldest
    event is ``max_age`` old, each noticed by the writer within ``build_every`` seconds (it
    builds deferred events at that pace), so an event waits at most ``max_age +
    build_every``; at most ``max_queued`` events wait in all (past that they are dropped and
    counted); :meth:`close` writes what is queued, and an event deferred after it is written
    at once, on the caller's thread.
    """

    def __init__(self, store: ObjectStore, *, batch: bool = True, max_events: int = 1000,
                 max_age: float = 30.0, max_queued: int = 100_000, build_every: float = BUILD_EVERY) -> None:
        self.store = store
        self.batch = batch
        self.max_events = max_events
        self.max_age = max_age
        self.max_queued = max_queued
        self.build_every = build_every
        #: Built events by (session hash, day), and how many (under ``_lock``).
        self._parts: dict[tuple[str, str], list[Event]] = {}
        self._count = 0
        #: Events not built yet (:meth:`defer`): (maker, args), built by the writer every build_every s.
        self._made: deque[tuple[Callable[..., Event | None], tuple[Any, ...]]] = deque()
        self._oldest = 0.0
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._erased: set[str] = set()
        self._zstd: Any = None  # the writer's compressor (made at the first write; under _write_lock)
        #: Counters (also exported as metrics): events written, objects written, lost, dropped.
        self.written = 0
        self.objects = 0
        self.lost = 0
        self.dropped = 0

    # -- the caller's side: O(1), never raises -------------------------------------------

    def record(self, event: Event | None) -> None:
        if event is None:
            return
        observe_event(event.op, event.tool, event.raw_bytes, event.shown_bytes, event.spilled,
                      event.stored_bytes, load=self.batch)  # a one-shot process exposes no metrics
        with self._lock:
            queued = len(self._made) + self._count
            if self._closed or queued >= self.max_queued or event.session in self._erased:
                self.dropped += 1
                return
            self._queue(event)
            full = queued + 1 >= self.max_events
            start = self.batch and self._thread is None
            if start:
                self._thread = threading.Thread(target=self._run, name="s3spill-usage", daemon=True)
        if not self.batch:  # one-shot process: one small object per call, now
            self.flush()
            return
        if start and self._thread is not None:
            self._thread.start()
        if full:
            self._wake.set()

    def _queue(self, event: Event) -> None:
        """Add one built event (under ``_lock``)."""
        group = (event.session, event.day)
        part = self._parts.get(group)
        if part is None:
            part = self._parts[group] = []
        part.append(event)
        if not self._count:
            self._oldest = time.monotonic()
        self._count += 1

    def defer(self, make: Callable[..., Event | None], *args: Any) -> None:
        """Queue ``make`` and its arguments; the writer thread builds the event (and counts it
        in the metrics).

        Why so little here: this runs right after a spill, on a cold cache — the spill's
        compression and hashing have just evicted the interpreter's working set — so every
        object it allocates or touches costs several times what it does in a loop; building
        events in a loop on the writer's thread costs a fraction of that
        (benchmarks/usage_bench.py overhead). ``make`` must be given the call's time itself.

        No lock: a deque's append is atomic, and the writer only ever pops from the left
        (:meth:`_build`), so nothing appended here can be missed. The bound reads lengths that
        may be a moment old: a bound off by the events of one instant. :meth:`close` may run
        between the bound and the append; the check after the append sees it, and writes the
        event now rather than leave it in a queue nobody flushes again.
        """
        if not self.batch:
            try:
                self.record(make(*args))
            except Exception as exc:  # noqa: BLE001 - whatever went wrong, the call stands
                log.warning("usage.event_failed", error=type(exc).__name__)
            return
        made = self._made
        queued = len(made) + self._count
        if queued >= self.max_queued:
            self._drop()
            return
        made.append((make, args))
        if self._thread is None:
            self._start()
        if self._closed:
            self._late()
        elif queued + 1 == self.max_events:
            self._wake.set()

    def _drop(self) -> None:
        with self._lock:
            self.dropped += 1

    def _late(self) -> None:
        """An event deferred while or after :meth:`close` flushed: written now (fail open)."""
        try:
            self.flush()
        except Exception as exc:  # noqa: BLE001 - losing usage never fails anything
            log.warning("usage.lost_at_exit", error=type(exc).__name__)

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None or self._closed:
                return
            thread = self._thread = threading.Thread(target=self._run, name="s3spill-usage", daemon=True)
        thread.start()

    def _build(self) -> None:
        """Build the deferred events (writer's side); a maker that fails loses its event only.

        Serialising waits for the flush: in the benchmark's back-to-back spills, work done
        here runs beside the spill on the other core and costs about twice what the same
        work costs at the flush (benchmarks/usage_bench.py overhead, measured both ways).
        """
        made = self._made
        built: list[Event] = []
        for _ in range(len(made)):
            try:
                make, args = made.popleft()  # a flush on another thread may be building too
            except IndexError:
                break
            try:
                event = make(*args)
            except Exception as exc:  # noqa: BLE001 - losing usage never fails anything
                self._lose(exc)
                continue
            if event is not None:
                built.append(event)
        if not built:
            return
        observe_events(built, load=self.batch)
        with self._lock:
            erased = self._erased
            for event in built:
                if event.session not in erased:
                    self._queue(event)

    def _lose(self, exc: BaseException) -> None:
        with self._lock:
            self.lost += 1
        log.warning("usage.event_failed", error=type(exc).__name__)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._made) + self._count

    # -- the writer's side ---------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._lock:
                closed = self._closed
                wait = self.max_age - (time.monotonic() - self._oldest) if self._count else self.max_age
                if self._made:  # the metrics lag the calls by at most build_every
                    wait = min(wait, self.build_every)
            if closed:
                return
            self._wake.wait(max(wait, 0.01))
            self._wake.clear()
            self._build()
            with self._lock:
                due = bool(self._count) and (self._count + len(self._made) >= self.max_events
                                             or time.monotonic() - self._oldest >= self.max_age)
            if due:
                self.flush()

    def flush(self) -> int:
        """Write everything queued now, on this thread; returns the events written."""
        with self._write_lock:
            self._build()
            with self._lock:
                parts, self._parts, self._count = self._parts, {}, 0
            written = 0
            for (shash, day), part in parts.items():
                written += self._write(shash, day, part)
            return written

    def _write(self, shash: str, day: str, part: list[Event]) -> int:
        """Write one part: zstd from a batching recorder; plain NDJSON (``-f<n>.ndjson``) from
        a one-shot one, whose part is one event: compressing a few KB saves next to nothing
        and would cost a hook or a CLI read zstandard's import (several ms) before it exits."""
        try:
            body, facts = self._body(part)
        except TypeError:  # rare: find the events that cannot be written, write the rest
            part = self._encodable(part)
            if not part:
                return 0
            body, facts = self._body(part)
        events = len(part)
        try:
            for _ in range(3):
                key = keys.usage_part_key(shash, day, facts=facts, zstd=self.batch)
                try:
                    put = self.store.put_if_absent(
                        key, body, content_type="application/zstd" if self.batch else "application/x-ndjson")
                    break
                except AlreadyExists:
                    continue
            else:
                raise AlreadyExists("no free usage object name after 3 attempts")
            if self._undo_if_erased(shash, key, put.etag):
                return 0
        except (S3SpillError, OSError, ValueError) as exc:
            self.lost += events
            log.warning("usage.lost", session_hash=shash, events=events, error=type(exc).__name__,
                        detail=str(exc)[:200])
            return 0
        self.written += events
        self.objects += 1
        return events

    def _body(self, part: list[Event]) -> tuple[bytes, int]:
        if not self.batch:
            return part_body(part)
        if self._zstd is None:
            self._zstd = compressor()
        return zstd_part(part, self._zstd)

    def _encodable(self, events: list[Event]) -> list[Event]:
        """``events`` less any orjson cannot write (a shown text with a lone surrogate has no
        UTF-8 form): each is lost alone, not its whole part."""
        kept = []
        for event in events:
            try:
                event.encode()
            except TypeError as exc:
                self._lose(exc)
                continue
            kept.append(event)
        return kept

    def _undo_if_erased(self, shash: str, key: str, etag: str) -> bool:
        """After a write: a purge's seal means the object must go again (True)."""
        try:
            self.store.head(keys.erasure_key(shash))
        except NotFound:
            return False
        with self._lock:
            self._erased.add(shash)
            for part_key in [k for k in self._parts if k[0] == shash]:  # queued meanwhile: dropped too
                dropped = len(self._parts.pop(part_key))
                self._count -= dropped
                self.dropped += dropped
        with contextlib.suppress(NotFound, PreconditionFailed):
            self.store.delete_if_match(key, etag)
        log.info("usage.erased_session", session_hash=shash)
        return True

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread and write what is queued (bounded by ``timeout`` for the thread)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        try:
            self.flush()
        except Exception as exc:  # noqa: BLE001 - fail open at exit whatever went wrong
            log.warning("usage.lost_at_exit", error=type(exc).__name__)


_recorders: dict[int, tuple[ObjectStore, UsageRecorder]] = {}
_registry_lock = threading.Lock()


def usage_recorder(store: ObjectStore, *, batch: bool = True) -> UsageRecorder | None:
    """The process's recorder for ``store`` (one per store object), or None when turned off.

    Closed (its queue written) at interpreter exit, so a one-shot process leaves exactly
    one small object per session and day it touched.
    """
    if os.environ.get(ENV, "on").lower() in ("off", "0", "false", "no"):
        return None
    with _registry_lock:
        found = _recorders.get(id(store))
        if found is None or found[0] is not store or found[1].closed:
            found = (store, UsageRecorder(store, batch=batch))
            _recorders[id(store)] = found
        return found[1]


def recorders() -> Iterable[UsageRecorder]:
    with _registry_lock:
        return [r for _, r in _recorders.values()]


@atexit.register
def close_all() -> None:
    """Write every recorder's queue (interpreter exit, or a test's teardown)."""
    for recorder in recorders():
        recorder.close(timeout=2.0)
