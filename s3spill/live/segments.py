"""Reading a live artifact's objects back: its state (with the ETag a CAS needs) and its
segments, each verified against the digest the state lists before a byte is used.

Shared by the writer (which re-reads the state after a lost or unknown CAS), the readers
(pages and grep while the command runs) and the finisher (which streams the committed
segments into an ordinary artifact).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator

from pydantic import ValidationError

from s3spill import keys
from s3spill.artifacts.index import decompress_frame
from s3spill.errors import IntegrityError, NotFound
from s3spill.live.state import (
    LiveSegment,
    LiveState,
    LiveTable,
    LiveTableBody,
    Span,
    table_of,
)
from s3spill.store.base import ObjectStore

#: Inserted in the finished artifact where the size cap dropped the middle of the output.
GAP_MARKER = ("[s3spill: {bytes:,} bytes ({lines:,} lines) of this output were dropped here by"
              " the live size cap; the head above and the newest output below are complete]\n")
#: Room the cap keeps for the marker (and the newline before it) in the final copy, so
#: that the copy, marker included, is never over ``max_bytes``.
GAP_RESERVE = len(GAP_MARKER.format(bytes=10**19, lines=10**19).encode()) + 1


def read_state(store: ObjectStore, live: keys.LiveId) -> tuple[LiveState, str]:
    """The state and its ETag: HEAD first, so the body is never older than the ETag a CAS uses."""
    key = keys.live_state_key(live.session_hash, live.name)
    try:
        etag = store.head(key).etag
        raw = store.get(key)
    except NotFound:
        raise NotFound(f"no live output {live} was ever started in this store", key=key,
                       hint="check the live id and --store; `s3spill ls` lists this session's "
                       "live outputs") from None
    try:
        state = LiveState.model_validate_json(raw)
    except ValidationError:
        raise IntegrityError(f"{live}: the live state does not parse") from None
    if state.session_hash != live.session_hash or state.name != live.name:
        raise IntegrityError(f"{live}: the live state describes another output")
    return state, etag


def segment_key(state: LiveState, seg: LiveSegment) -> str:
    return keys.live_segment_key(state.session_hash, state.name, seg.seq, seg.sha256)


def fetch_segment(store: ObjectStore, state: LiveState, seg: LiveSegment) -> bytes:
    """Segment ``seg``'s raw bytes, verified (size, SHA-256, newline count)."""
    sid = str(state.live_id)
    try:
        frame = store.get(segment_key(state, seg))
    except NotFound:
        raise NotFound(f"{sid}: segment {seg.seq} is gone (the output finished or was cut by"
                       " its size cap meanwhile; read again)", key=segment_key(state, seg)) from None
    if len(frame) != seg.stored:
        raise IntegrityError(f"{sid}: segment {seg.seq} has {len(frame)} stored bytes, its state"
                             f" says {seg.stored}")
    try:
        raw = (decompress_frame(frame, (seg.byte_start, seg.byte_end), seg.seq, sid)
               if state.codec == "zstd" else frame)
    except IntegrityError:
        raise IntegrityError(f"{sid}: segment {seg.seq} is not a valid compressed frame") from None
    if (len(raw) != seg.size or hashlib.sha256(raw).hexdigest() != seg.sha256
            or raw.count(b"\n") != seg.newlines or (raw[-1:] == b"\n") != seg.last_byte_newline):
        raise IntegrityError(f"{sid}: segment {seg.seq} (bytes {seg.byte_start}-{seg.byte_end})"
                             " does not match its state")
    return raw


def table_key(state: LiveState, table: LiveTable) -> str:
    return keys.live_table_key(state.session_hash, state.name, table.first_seq, table.last_seq,
                               table.sha256)


def load_table(store: ObjectStore, state: LiveState, table: LiveTable
               ) -> tuple[LiveSegment, ...] | tuple[LiveTable, ...]:
    """What a table lists (segments, or tables one level down), verified against the digest
    and ranges its parent gives it."""
    sid = str(state.live_id)
    key = table_key(state, table)
    name = f"segment table {table.first_seq}-{table.last_seq}"
    try:
        raw = store.get(key)
    except NotFound:
        raise NotFound(f"{sid}: {name} is gone (the output finished or was cut by its size cap"
                       " meanwhile; read again)", key=key) from None
    if len(raw) != table.stored or hashlib.sha256(raw).hexdigest() != table.sha256:
        raise IntegrityError(f"{sid}: {name} does not match its state")
    try:
        body = LiveTableBody.model_validate_json(raw)
    except ValidationError:
        raise IntegrityError(f"{sid}: {name} does not parse") from None
    children = body.children
    end = table.byte_start
    for child in children:
        if child.byte_start != end:
            raise IntegrityError(f"{sid}: {name} is not contiguous")
        end = child.byte_end
    again = table_of(children, raw, body.level)
    if again != table:
        raise IntegrityError(f"{sid}: {name} describes other segments")
    return children


def iter_segments(store: ObjectStore, state: LiveState,
                  before: Callable[[Span], bool] | None = None) -> Iterator[LiveSegment]:
    """The committed segments in order, tables fetched as reached.

    ``before(span)`` says a span lies wholly before where the caller starts: such spans
    are skipped without fetching them, at every level, until the first one that does not
    — so a read of line N fetches one table per level, not every table before it.
    """
    skipping = before is not None

    def walk(span: Span) -> Iterator[LiveSegment]:
        nonlocal skipping
        if skipping and before is not None and before(span):
            return
        if isinstance(span, LiveTable):
            for child in load_table(store, state, span):
                yield from walk(child)
        else:
            skipping = False
            yield span

    for span in state.spans:
        yield from walk(span)


def iter_committed(store: ObjectStore, state: LiveState, *, gap_marker: bool = False
                   ) -> Iterator[bytes]:
    """Every committed segment in order, verified; with ``gap_marker``, the truncation
    marker where the size cap dropped bytes (on a line of its own)."""
    prev_end = 0
    last = b"\n"
    for seg in iter_segments(store, state):
        if seg.byte_start != prev_end and gap_marker:
            dropped = [s for s in (state.truncated,) if s is not None]
            lines = dropped[0].dropped_lines if dropped else 0
            marker = GAP_MARKER.format(bytes=seg.byte_start - prev_end, lines=lines)
            yield (b"" if last == b"\n" else b"\n") + marker.encode()
        data = fetch_segment(store, state, seg)
        last = data[-1:]
        prev_end = seg.byte_end
        yield data
