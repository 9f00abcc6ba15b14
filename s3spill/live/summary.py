"""What a read or grep of a live output says about its run: the summary line and footers.

Why apart from :mod:`.reader` (which fetches and pages segments): the same summary —
running with its heartbeat, exited, killed or lost; how much is committed; what the size
cap dropped; the ``since`` that reads only what is new — ends every live page and grep
and is listed by ``list_artifacts`` and ``s3spill ls`` for commands still running.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from s3spill.artifacts.grep.result import GrepResult
from s3spill.artifacts.paging import Page
from s3spill.config import LiveConfig
from s3spill.context.read_args import ArgStyle, spell_args
from s3spill.live.state import LiveState


class LiveSummary(BaseModel):
    """How a live output stands, as the footer of every read and grep of it says."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    live_id: str
    status: str
    exit_code: int | None
    signal: int | None
    heartbeat: datetime
    heartbeat_age: float
    committed_bytes: int
    total_bytes: int
    line_count: int
    truncated: bool
    dropped_bytes: int
    dropped_lines: int
    final_source_id: str | None
    note: str | None = None
    #: Pass as ``since`` to read only what comes after what this answer covered.
    next_since: int

    def line(self, style: ArgStyle = "call") -> str:
        if self.status == "running":
            run = f"running, heartbeat {self.heartbeat_age:.0f}s ago"
        elif self.status == "exited":
            run = f"exited with code {self.exit_code}"
        elif self.status == "killed":
            run = f"killed (signal {self.signal})" if self.signal else "killed"
        else:
            run = (f"lost: no heartbeat for {self.heartbeat_age:.0f}s (its writer died; what is"
                   " committed is kept)")
        cut = (f" | truncated: {self.dropped_bytes:,} bytes ({self.dropped_lines:,} lines) in the"
               " middle dropped by the size cap" if self.truncated else "")
        so_far = "so far " if self.status == "running" else ""
        done = f" | stored as {self.final_source_id}" if self.final_source_id else ""
        if self.note:
            done += f" | {self.note}"
        new = (f" | new output from here: {spell_args(style, since=self.next_since)}"
               if self.status == "running" else "")
        return (f"[{self.live_id}: {run} | {so_far}{self.committed_bytes:,} bytes,"
                f" {self.line_count:,} lines committed{cut}{done}{new}]")


def summarize(state: LiveState, config: LiveConfig, next_since: int,
              now: datetime | None = None) -> LiveSummary:
    now = now or datetime.now(UTC)
    t = state.truncated
    return LiveSummary(
        live_id=str(state.live_id), status=state.effective_status(now, config.lost_after),
        exit_code=state.exit_code, signal=state.signal, heartbeat=state.heartbeat,
        heartbeat_age=max(0.0, (now - state.heartbeat).total_seconds()),
        committed_bytes=state.committed_bytes, total_bytes=state.total_bytes,
        line_count=state.line_count, truncated=t is not None,
        dropped_bytes=t.dropped_bytes if t else 0, dropped_lines=t.dropped_lines if t else 0,
        final_source_id=state.final_source_id, note=state.note, next_since=next_since)


def _with_live(plain_json: str, live: LiveSummary) -> str:
    """A plain record's JSON with the (pydantic) summary as its last field, ``live``."""
    return f'{plain_json[:-1]},"live":{live.model_dump_json()}}}'


@dataclass(frozen=True)
class LivePage(Page):
    """A :class:`Page` of a live output, with the live footer."""

    live: LiveSummary

    def model_dump_json(self) -> str:
        return _with_live(Page(**{name: getattr(self, name) for name in Page.field_names()})
                          .model_dump_json(), self.live)

    def footer(self, style: ArgStyle = "call") -> str:
        running = self.live.status == "running"
        if self.eof and running:
            if self.lines:
                base = (f"[end of the output so far: line {self.total_lines:,}; the command is"
                        " still running]")
            elif self.total_lines:
                base = (f"[nothing after line {self.total_lines:,} yet; the command is still"
                        " running]")
            else:
                base = "[no output yet; the command is still running]"
        elif self.eof and not self.lines:
            base = "[no new output]" if self.byte_start else super().footer(style)
        else:
            base = super().footer(style)
        return f"{base}\n{self.live.line(style)}"


@dataclass(frozen=True)
class LiveGrepResult(GrepResult):
    """A :class:`GrepResult` over the committed part of a live output."""

    live: LiveSummary

    def model_dump_json(self) -> str:
        plain = GrepResult(**{name: getattr(self, name) for name in GrepResult.field_names()})
        return _with_live(plain.model_dump_json(), self.live)

    def footer(self, style: ArgStyle = "call") -> str:
        return f"{super().footer(style)}\n{self.live.line(style)}"
