"""The writer of a live artifact: a running command's output cut into immutable segments.

Protocol (the state object is described in :mod:`s3spill.live.state`):

1. **Open**: create the state with ``put_if_absent`` (status ``running``, no segment).
2. **Segment**: bytes collect in a buffer bounded by ``segment_bytes``; a segment is cut
   when it is full or ``segment_interval`` after its first byte, whichever comes first,
   and created once under a content-addressed key (one zstd frame, or the raw bytes).
3. **Commit** by compare-and-swap of the state, listing the new segments; a reader sees a
   segment from here on. Size-triggered cuts are batched into one CAS per interval, so a
   fast command costs one state write per second, plus its segments. While the command is
   quiet, the state is rewritten every ``heartbeat_interval`` (the heartbeat).
4. **Cap**: past ``max_bytes`` kept, the oldest segments after the head are dropped from
   the state (then deleted), and the state says ``truncated`` with exact counts.
5. **Finish**: the last bytes are cut, the state turns terminal (exit code or signal),
   the committed segments are streamed into an ordinary artifact (so every read, grep,
   reference and GC path works on it unchanged), the state names that artifact, and the
   segments are deleted. See :mod:`s3spill.live.finish`.

Each conditional write has three outcomes. A lost CAS re-reads the state: a foreign
``stop_requested`` is adopted and retried; a foreign status (someone declared the writer
``lost`` and took over) raises :class:`~s3spill.errors.LiveFenced`. An unknown outcome
(a transient store failure) is decided by reading back ``writer`` and ``version``.

A SIGKILL at any step loses at most the bytes not yet in a committed segment: a stored
but unlisted segment is invisible (and deleted by the finisher), a state is replaced
whole or not at all.

Over ~400 lines: cutting, table compaction, the cap and the CAS all change one in-memory
view of the state (and the ETags of what this writer created, which a drop must delete),
and splitting them would pass that view between modules on every step.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from s3spill import keys
from s3spill.artifacts.index import Codec
from s3spill.config import LiveConfig, TransferConfig
from s3spill.errors import (
    AlreadyExists,
    IntegrityError,
    LiveFenced,
    NotFound,
    PreconditionFailed,
    StoreError,
)
from s3spill.failpoints import declare, failpoint
from s3spill.live.group import ProcessGroup
from s3spill.live.segments import GAP_RESERVE, read_state, segment_key, table_key
from s3spill.live.state import (
    COMMAND_CHARS,
    LiveSegment,
    LiveState,
    LiveTable,
    LiveTableBody,
    LiveTruncation,
    Span,
    table_of,
)
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore

log = get_logger("s3spill.artifacts.live")

AFTER_SEGMENT = declare("live.after_segment", "a live segment is stored; no state lists it yet")
AFTER_STATE_CAS = declare("live.after_state_cas", "a live state write (segments, heartbeat) landed")
#: Attempts at one state write before the error reaches the caller (each re-reads first).
CAS_ATTEMPTS = 20
_JSON = "application/json"

Clock = Callable[[], float]


def _now() -> datetime:
    return datetime.now(UTC)


def _level(span: Span) -> int:
    return span.level if isinstance(span, LiveTable) else 0


class LiveWriter:
    """Single-threaded: one pump calls :meth:`feed`, :meth:`tick` and :meth:`close`."""

    def __init__(self, store: ObjectStore, session_id: str, tool: str, *,
                 label: str | None = None, command: str | None = None,
                 config: LiveConfig | None = None, transfer: TransferConfig | None = None,
                 clock: Clock = time.monotonic) -> None:
        self.store = store
        self.session_id = session_id
        self.shash = keys.session_hash(session_id)
        self.tool = tool
        self.label = label
        self.command = command[:COMMAND_CHARS] if command else None
        self.config = config or LiveConfig()
        self.transfer = transfer or getattr(store, "config", None) or TransferConfig()
        self.codec: Codec = "identity" if self.transfer.artifact_compression == "none" else "zstd"
        self.writer = secrets.token_hex(8)
        self._clock = clock
        self._buf = bytearray()
        self._buf_since: float | None = None
        self._pending: list[LiveSegment] = []  # stored, not yet in the state
        self._etags: dict[int, str] = {}
        self._seq = 0
        self._bytes = 0
        self._newlines = 0
        self._state: LiveState | None = None
        self._etag = ""
        self._last_state = 0.0
        self._cctx: Any = None
        self._dropped: list[Span] = []
        #: Tables this writer made, by (level, first seq): what they list (to delete it if the
        #: cap drops them) and their ETags.
        self._tables: dict[tuple[int, int], tuple[LiveTable, tuple[Span, ...], str]] = {}
        #: Requests made (segment PUTs, state writes, reads, deletes), for the benchmarks.
        self.requests = 0

    # -- public ------------------------------------------------------------------------

    @property
    def state(self) -> LiveState:
        if self._state is None:
            raise RuntimeError("the live artifact is not open")
        return self._state

    @property
    def live_id(self) -> keys.LiveId:
        return self.state.live_id

    @property
    def stop_requested(self) -> bool:
        return self._state is not None and self._state.stop_requested

    def open(self, *, command_pid: int | None = None) -> keys.LiveId:
        """Create the state (a fresh name each attempt); returns the live id to hand out."""
        now = _now()
        for _ in range(8):
            name = keys.new_artifact_name(self.tool, now)
            state = LiveState(
                session_hash=self.shash, name=name, tool=self.tool, label=self.label,
                command=self.command, codec=self.codec, created_at=now, heartbeat=now,
                heartbeat_interval=self.config.heartbeat_interval, version=0,
                writer=self.writer, host=socket.gethostname()[:255],
                supervisor_pid=os.getpid(), command_pid=command_pid)
            try:
                put = self.store.put_if_absent(keys.live_state_key(self.shash, name),
                                               state.to_bytes(), content_type=_JSON)
            except AlreadyExists:
                continue
            self.requests += 1
            self._state, self._etag, self._last_state = state, put.etag, self._clock()
            log.info("live.opened", live_id=str(state.live_id), tool=self.tool)
            return state.live_id
        raise AlreadyExists("no free live artifact name after 8 attempts")

    def set_command_pid(self, pid: int | None, group: ProcessGroup | None = None) -> None:
        """Record the command's pid and process group (known only after the state exists)."""
        update: dict[str, object] = {"command_pid": pid}
        if group is not None:
            update.update(command_start=group.leader_start, boot_id=group.boot_id)
        self._cas(lambda s: update)

    def feed(self, data: bytes) -> None:
        """Take bytes of output; cuts full segments, commits them at most once per interval."""
        if not data:
            return
        if self._buf_since is None:
            self._buf_since = self._clock()
        self._buf += data
        size = self.config.segment_bytes
        while len(self._buf) >= size:
            self._cut(size)
        if self._pending and self._clock() - self._last_state >= self.config.segment_interval:
            self._commit()

    def tick(self) -> None:
        """Time-driven work: cut a segment that is due, commit, or write the heartbeat."""
        now = self._clock()
        aged = bool(self._buf) and self._buf_since is not None and (
            now - self._buf_since >= self.config.segment_interval)
        if aged:
            self._cut(len(self._buf))
        # A time cut is committed at once (its bytes waited a whole interval already; a
        # buffer ages at most once per interval); size cuts wait for the next interval.
        if aged or (self._pending and now - self._last_state >= self.config.segment_interval) or (
                now - self._last_state >= self.config.heartbeat_interval):
            self._commit()

    def wait_hint(self) -> float:
        """Seconds until :meth:`tick` has work (what the pump may block on its queue)."""
        now = self._clock()
        due = [self._last_state + self.config.heartbeat_interval]
        if self._buf_since is not None and self._buf:
            due.append(self._buf_since + self.config.segment_interval)
        if self._pending:
            due.append(self._last_state + self.config.segment_interval)
        return max(0.0, min(due) - now)

    def close(self, status: str, *, exit_code: int | None = None, signal: int | None = None,
              note: str | None = None) -> LiveState:
        """Cut what is left and turn the state terminal (``exited``/``killed``)."""
        if self._buf:
            self._cut(len(self._buf))
        pending = self._take_pending()
        self._cas(lambda s: self._with_segments(s, pending) | {
            "status": status, "exit_code": exit_code, "signal": signal, "note": note})
        log.info("live.closed", live_id=str(self.live_id), status=status, exit_code=exit_code,
                 bytes=self._bytes)
        return self.state

    # -- segments ----------------------------------------------------------------------

    def _cut(self, n: int) -> None:
        data = bytes(self._buf[:n])
        del self._buf[:n]
        self._buf_since = self._clock() if self._buf else None
        sha = hashlib.sha256(data).hexdigest()
        body = data
        if self.codec == "zstd":
            if self._cctx is None:
                import zstandard  # lazy, as for artifact bodies

                self._cctx = zstandard.ZstdCompressor(level=self.transfer.compression_level)
            body = self._cctx.compress(data)
        seg = LiveSegment(seq=self._seq, byte_start=self._bytes, line_start=self._newlines,
                          size=len(data), newlines=data.count(b"\n"), stored=len(body),
                          sha256=sha, last_byte_newline=data[-1:] == b"\n")
        key = segment_key(self.state, seg)
        self._put_segment(key, body, seg)
        self._seq += 1
        self._bytes += seg.size
        self._newlines += seg.newlines
        self._pending.append(seg)
        failpoint(AFTER_SEGMENT)

    def _put_segment(self, key: str, body: bytes, seg: LiveSegment) -> None:
        self._etags[seg.seq] = self._put_once(key, body, "application/zstd"
                                              if self.codec == "zstd" else "application/octet-stream")

    def _put_once(self, key: str, body: bytes, content_type: str) -> str:
        """Create a content-addressed object; its ETag. Retries until the store takes it."""
        delay = self.transfer.backoff_base
        while True:
            try:
                self.requests += 1
                return self.store.put_if_absent(key, body, content_type=content_type).etag
            except AlreadyExists:
                # Content-addressed and ours alone (a fresh name): a retry of our own write
                # that landed. Keep it only if it is exactly these bytes.
                self.requests += 2
                if self.store.get(key) != body:
                    raise IntegrityError(f"{key}: a different object holds this key") from None
                return self.store.head(key).etag
            except StoreError as exc:
                # Backpressure, not loss: the pump stops reading, the command blocks on its pipe.
                log.warning("live.put_retry", key=key, error=type(exc).__name__)
                time.sleep(delay)
                delay = min(delay * 2, max(self.transfer.backoff_max, 5.0))

    def _table(self, run: tuple[Span, ...], level: int) -> LiveTable:
        """The table object for ``run`` (created once, whatever the CAS retries)."""
        first = run[0]
        ident = (level, first.first_seq if isinstance(first, LiveTable) else first.seq)
        made = self._tables.get(ident)
        if made is not None and made[1] == run:
            return made[0]
        if level == 1:
            body = LiveTableBody(segments=tuple(s for s in run if isinstance(s, LiveSegment)))
        else:
            body = LiveTableBody(level=level, tables=tuple(s for s in run if isinstance(s, LiveTable)))
        raw = body.to_bytes()
        table = table_of(run, raw, level)
        etag = self._put_once(table_key(self.state, table), raw, _JSON)
        self._tables[ident] = (table, run, etag)
        return table

    def _compact(self, spans: list[Span]) -> list[Span]:
        """While a level holds ``2 * table_segments`` spans (segments are level 0), move its
        oldest run of up to ``table_segments`` into one table of the next level. A run never
        crosses a gap or the end of the head; a span that no run can take stays where it is."""
        k = self.config.table_segments
        for level in range(8):
            while True:
                idx = [i for i, s in enumerate(spans) if _level(s) == level]
                if len(idx) < 2 * k:
                    break
                run = None
                for i0 in idx:
                    j = 1
                    while (j < k and i0 + j < len(spans) and _level(spans[i0 + j]) == level
                           and not self._break(spans[i0 + j - 1], spans[i0 + j])):
                        j += 1
                    if j >= 2:
                        run = (i0, j)
                        break
                if run is None:
                    break
                i0, j = run
                spans[i0:i0 + j] = [self._table(tuple(spans[i0:i0 + j]), level + 1)]
        return spans

    def _break(self, a: Span, b: Span) -> bool:
        """Whether a table may not hold both ``a`` and ``b``: a gap, or the end of the head."""
        head = self.config.head_bytes
        return b.byte_start != a.byte_end or a.byte_end <= head < b.byte_end

    def _take_pending(self) -> list[LiveSegment]:
        pending, self._pending = self._pending, []
        return pending

    def _with_segments(self, state: LiveState, new: list[LiveSegment]) -> dict[str, Any]:
        """The state's spans with ``new`` appended, compacted into tables, cut to the size cap."""
        self._dropped = []
        have = {x.seq for x in state.segments}
        spans = self._compact([*state.tables, *state.segments,
                               *(s for s in new if s.seq not in have)])
        truncated = state.truncated
        kept = sum(s.size for s in spans)
        budget = self.config.max_bytes - GAP_RESERVE  # the final copy's marker fits
        # Once a cut has been made the final copy carries its marker, so the kept spans must
        # leave room for it from then on, not only at the cut itself.
        if kept > self.config.max_bytes or (truncated is not None and kept > budget):
            head_n = 0  # the head: spans wholly within head_bytes (tables never straddle it)
            while head_n < len(spans) and spans[head_n].byte_end <= self.config.head_bytes:
                head_n += 1
            drop: list[Span] = []
            while kept > budget and head_n < len(spans) - 1:
                gone = spans.pop(head_n)
                kept -= gone.size
                drop.append(gone)
            if drop:
                old = truncated or LiveTruncation(dropped_bytes=0, dropped_lines=0,
                                                  dropped_segments=0)
                truncated = LiveTruncation(
                    dropped_bytes=old.dropped_bytes + sum(s.size for s in drop),
                    dropped_lines=old.dropped_lines + sum(s.newlines for s in drop),
                    dropped_segments=old.dropped_segments + sum(
                        s.count if isinstance(s, LiveTable) else 1 for s in drop))
                self._dropped = drop
        return {"tables": tuple(s for s in spans if isinstance(s, LiveTable)),
                "segments": tuple(s for s in spans if isinstance(s, LiveSegment)),
                "truncated": truncated, "total_bytes": self._bytes,
                "total_newlines": self._newlines}

    def _commit(self) -> None:
        pending = self._take_pending()
        self._cas(lambda s: self._with_segments(s, pending))
        for span in self._dropped:
            self._delete_span(span)
        self._dropped = []

    def _delete_span(self, span: Span) -> None:
        """A dropped segment or table no state lists any more: delete it and, for a table,
        everything it lists (ours, conditionally)."""
        doomed: list[tuple[str, str | None]] = []

        def collect(s: Span) -> None:
            if isinstance(s, LiveTable):
                made = self._tables.pop((s.level, s.first_seq), None)
                if made is None:
                    return
                doomed.append((table_key(self.state, s), made[2]))
                for child in made[1]:
                    collect(child)
            else:
                doomed.append((segment_key(self.state, s), self._etags.pop(s.seq, None)))

        collect(span)
        for key, etag in doomed:
            if etag is None:
                continue
            try:
                self.requests += 1
                self.store.delete_if_match(key, etag)
            except StoreError as exc:
                log.warning("live.drop_delete_failed", key=key, error=type(exc).__name__)

    # -- the state CAS -----------------------------------------------------------------

    def _cas(self, change: Callable[[LiveState], dict[str, Any]]) -> None:
        """Write ``state + change(state)`` with If-Match; re-read and re-apply on a loss."""
        key = keys.live_state_key(self.shash, self.state.name)
        for attempt in range(CAS_ATTEMPTS):
            base = self.state
            fields = base.model_dump() | change(base) | {
                "version": base.version + 1, "heartbeat": _now(), "writer": self.writer}
            new = LiveState.model_validate(fields)
            try:
                self.requests += 1
                put = self.store.put_if_match(key, new.to_bytes(), self._etag, content_type=_JSON)
            except PreconditionFailed:
                self._adopt(new, landed_ok=False)
                continue
            except StoreError as exc:
                log.warning("live.state_unknown", attempt=attempt, error=type(exc).__name__)
                time.sleep(min(self.transfer.backoff_max, self.transfer.backoff_base * 2 ** attempt))
                if self._adopt(new, landed_ok=True):
                    break
                continue
            self._state, self._etag = new, put.etag
            break
        else:
            raise StoreError(f"{self.live_id}: the live state could not be written after "
                             f"{CAS_ATTEMPTS} attempts")
        self._last_state = self._clock()
        failpoint(AFTER_STATE_CAS)

    def _adopt(self, attempted: LiveState, *, landed_ok: bool) -> bool:
        """Re-read after a lost or unknown write; True when ``attempted`` is what landed."""
        try:
            self.requests += 2
            current, etag = read_state(self.store, self.live_id)
        except NotFound:
            raise LiveFenced(f"{self.live_id}: the live state is gone") from None
        if landed_ok and current.writer == self.writer and current.version == attempted.version:
            self._state, self._etag = attempted, etag
            return True
        mine = self.state
        foreign_ok = (current.status == mine.status and current.segments == mine.segments
                      and current.tables == mine.tables
                      and current.final_source_id == mine.final_source_id)
        if not foreign_ok:
            raise LiveFenced(f"{self.live_id}: another process took over this output"
                             f" (its state says {current.status})")
        # Only a stop request (or our own earlier write) changed it: keep our view, theirs on top.
        self._state = mine.model_copy(update={
            "version": max(current.version, mine.version),
            "stop_requested": current.stop_requested or mine.stop_requested})
        self._etag = etag
        return False
