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
    status: LiveStatus = "running"
    exit_code: int | None = None
    signal: int | None = None
    stop_requested: bool = False
    #: Why the output may end early (its stream failed), in words for the reader.
    note: str | None = Field(default=None, max_length=300)
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
        prev_end = 0
        for i, seg in enumerate(self.segments):
            if i and (seg.seq <= self.segments[i - 1].seq or seg.byte_start < prev_end):
                raise ValueError("segments out of order")
            prev_end = seg.byte_end
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
    def ends_with_newline(self) -> bool:
        return bool(self.segments) and self.segments[-1].last_byte_newline

    @property
    def committed_bytes(self) -> int:
        """End of the committed output (the last segment's end): what a reader can see."""
        return self.segments[-1].byte_end if self.segments else 0

    @property
    def line_count(self) -> int:
        """Lines of the committed output, counted like an artifact's (a last partial line counts)."""
        if not self.segments:
            return 0
        last = self.segments[-1]
        newlines = last.line_start + last.newlines
        return newlines + (0 if last.last_byte_newline else 1)

    @property
    def kept_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    def lost_at(self, lost_after: float) -> datetime:
        return self.heartbeat + timedelta(seconds=max(lost_after, 3 * self.heartbeat_interval))

    def effective_status(self, now: datetime, lost_after: float) -> LiveStatus:
        """``lost`` for a running state whose heartbeat is older than ``lost_after``."""
        if self.status == "running" and now >= self.lost_at(lost_after):
            return "lost"
        return self.status

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()
