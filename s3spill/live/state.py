"""The state object of a live artifact: which segments are committed, and how the run stands.

A live artifact is a running command's output made readable while it runs, on objects
that are never appended to or overwritten: immutable *segments* (create-once, one zstd
frame or raw bytes each, SHA-256 listed here) and this one small state object, changed
only by compare-and-swap (``If-Match``). A segment exists for readers only once a state
lists it, so a writer killed between the two loses that segment and nothing else, and a
reader never sees a torn one.

Why every segment carries its absolute ``byte_start`` and ``line_start``: past the size
cap the middle of the output is dropped (the head and the newest window stay), and the
numbers a reader quotes must stay the numbers of the real output.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from s3spill import keys
from s3spill.artifacts.index import Codec
from s3spill.models import Record

LiveStatus = Literal["running", "exited", "killed", "lost"]
TERMINAL: frozenset[str] = frozenset({"exited", "killed", "lost"})
#: Longest command line kept for display (it is the harness's, not the model's, text).
COMMAND_CHARS = 256


class LiveSegment(BaseModel):
    """One committed segment: where its bytes sit in the output, and how to verify them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int = Field(ge=0)
    byte_start: int = Field(ge=0)
    line_start: int = Field(ge=0)  #: newline bytes before this segment in the whole output
    size: int = Field(ge=1)
    newlines: int = Field(ge=0)
    stored: int = Field(ge=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    last_byte_newline: bool

    @property
    def byte_end(self) -> int:
        return self.byte_start + self.size


class LiveTable(BaseModel):
    """A run of older segments (level 1) or tables (level n: of level n - 1) moved out of
    the state into one immutable object.

    Why: the state is rewritten every second and read by every reader, so it must stay
    small however long the output — and a quiet dev server cuts a segment per line for
    weeks. Levels keep the state at ``O(table_segments * log(segments))`` entries; a read
    of old lines fetches one table per level. A table is always contiguous and never
    straddles the end of the head (the size cap drops whole tables after the head).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: int = Field(default=1, ge=1, le=8)
    first_seq: int = Field(ge=0)
    last_seq: int = Field(ge=0)
    count: int = Field(ge=1)  #: segments it stands for, at any depth
    byte_start: int = Field(ge=0)
    byte_end: int = Field(ge=1)
    line_start: int = Field(ge=0)
    newlines: int = Field(ge=0)
    last_byte_newline: bool
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")  #: of the table object's bytes
    stored: int = Field(ge=1)

    @property
    def size(self) -> int:
        return self.byte_end - self.byte_start


class LiveTableBody(Record):
    """The table object: what it stands for, exactly as the state (or its parent) listed them."""

    kind: Literal["live_table"] = "live_table"
    level: int = Field(default=1, ge=1, le=8)
    segments: tuple[LiveSegment, ...] = ()
    tables: tuple[LiveTable, ...] = ()

    @model_validator(mode="after")
    def _one_level(self) -> LiveTableBody:
        if self.level == 1 and (self.tables or not self.segments):
            raise ValueError("a level 1 table lists segments")
        if self.level > 1 and (self.segments or not self.tables
                               or any(t.level != self.level - 1 for t in self.tables)):
            raise ValueError(f"a level {self.level} table lists level {self.level - 1} tables")
        return self

    @property
    def children(self) -> tuple[LiveSegment, ...] | tuple[LiveTable, ...]:
        return self.segments or self.tables

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()


def table_of(children: tuple[Span, ...], body: bytes, level: int) -> LiveTable:
    first, last = children[0], children[-1]
    return LiveTable(
        level=level, first_seq=first.first_seq if isinstance(first, LiveTable) else first.seq,
        last_seq=last.last_seq if isinstance(last, LiveTable) else last.seq,
        count=sum(c.count if isinstance(c, LiveTable) else 1 for c in children),
        byte_start=first.byte_start, byte_end=last.byte_end, line_start=first.line_start,
        newlines=sum(c.newlines for c in children), last_byte_newline=last.last_byte_newline,
        sha256=hashlib.sha256(body).hexdigest(), stored=len(body))


Span = LiveSegment | LiveTable


class LiveTruncation(BaseModel):
    """What the size cap dropped, exactly: the middle of the output, between head and window."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dropped_bytes: int = Field(ge=0)
    dropped_lines: int = Field(ge=0)  #: newline bytes dropped
    dropped_segments: int = Field(ge=0)


class LiveState(Record):
    """The CAS-guarded record of one live artifact (``live/<name>/state.json``)."""

    kind: Literal["live_state"] = "live_state"
    session_hash: str = Field(pattern=r"^[0-9a-f]{32}$")
    name: str
    tool: str
    label: str | None = None
    command: str | None = None
    codec: Codec
    created_at: datetime
    heartbeat: datetime
    #: The writer's heartbeat cadence: a reader never calls a state lost before three of
    #: them passed, whatever its own ``lost_after``.
    heartbeat_interval: float = Field(default=5.0, gt=0)
    #: Bumped by every write; with ``writer`` it decides whether an unknown outcome landed.
    version: int = Field(ge=0)
    writer: str
    host: str
    supervisor_pid: int | None = None
    command_pid: int | None = None
    #: The command's process group as :mod:`s3spill.live.group` identifies it (its leader's
    #: start time and the boot), so ``stop`` can end it safely after the supervisor died.
    command_start: int | None = Field(default=None, ge=0)
    boot_id: str | None = Field(default=None, max_length=64)
    status: LiveStatus = "running"
    exit_code: int | None = None
    signal: int | None = None
    stop_requested: bool = False
    #: Why the output may end early (its stream failed), in words for the reader.
    note: str | None = Field(default=None, max_length=300)
    #: Older committed segments, listed in immutable tables (oldest first)...
    tables: tuple[LiveTable, ...] = ()
    #: ...and the newest ones, inline.
    segments: tuple[LiveSegment, ...] = ()
    #: Everything the command produced so far (dropped bytes included).
    total_bytes: int = Field(default=0, ge=0)
    total_newlines: int = Field(default=0, ge=0)
    truncated: LiveTruncation | None = None
    #: Set once the output is an ordinary committed artifact (its source id).
    final_source_id: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> LiveState:
        keys.check_session_hash(self.session_hash)
        keys.check_artifact_name(self.name)
        prev_end, prev_seq = 0, -1
        for span in self.spans:
            first = span.first_seq if isinstance(span, LiveTable) else span.seq
            last = span.last_seq if isinstance(span, LiveTable) else span.seq
            if first <= prev_seq or span.byte_start < prev_end or last < first:
                raise ValueError("segments out of order")
            prev_end, prev_seq = span.byte_end, last
        if prev_end > self.total_bytes:
            raise ValueError("segments reach past the output's size")
        if self.final_source_id is not None and self.status not in TERMINAL:
            raise ValueError("a running output has no final artifact")
        return self

    # -- derived ---------------------------------------------------------------------------

    @property
    def live_id(self) -> keys.LiveId:
        return keys.LiveId(self.session_hash, self.name)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def spans(self) -> tuple[Span, ...]:
        """Tables, then inline segments: the committed output in order, as the state lists it."""
        return (*self.tables, *self.segments)

    @property
    def ends_with_newline(self) -> bool:
        spans = self.spans
        return bool(spans) and spans[-1].last_byte_newline

    @property
    def committed_bytes(self) -> int:
        """End of the committed output (the last segment's end): what a reader can see."""
        spans = self.spans
        return spans[-1].byte_end if spans else 0

    @property
    def line_count(self) -> int:
        """Lines of the committed output, counted like an artifact's (a last partial line counts)."""
        spans = self.spans
        if not spans:
            return 0
        last = spans[-1]
        return last.line_start + last.newlines + (0 if last.last_byte_newline else 1)

    @property
    def kept_bytes(self) -> int:
        return sum(s.size for s in self.spans)

    def lost_at(self, lost_after: float) -> datetime:
        return self.heartbeat + timedelta(seconds=max(lost_after, 3 * self.heartbeat_interval))

    def effective_status(self, now: datetime, lost_after: float) -> LiveStatus:
        """``lost`` for a running state whose heartbeat is older than ``lost_after``."""
        if self.status == "running" and now >= self.lost_at(lost_after):
            return "lost"
        return self.status

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()
