"""A cap on the stored size of one output: keep its head and its newest tail, count the rest.

Why: one runaway command (``yes``, a log loop, ``cat`` of a disk image) must not become a
multi-terabyte object. Past the cap the spill still reads the whole output (the preview
and every count stay exact), but the store gets only the first bytes, a one-line marker
that says what is missing, and the last :attr:`StoreCap.tail_bytes`. The head goes to the
store as it arrives; the tail is a window of the newest chunks (references, never
copies), so memory stays at about two tail windows whatever the output's size.

The stored copy is a different text from the output past the marker: its line numbers
are shifted by the lines left out. :meth:`StoreCap.note` says so, with the numbers.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from s3spill.context.utf8 import safe_head_cut

__all__ = ["CapFacts", "StoreCap"]

#: Bytes kept free under the cap for the marker line (it is far shorter).
MARKER_RESERVE = 512


@dataclass(frozen=True)
class CapFacts:
    """What a capped stored copy holds of the output: exact, in bytes and lines."""

    cap: int
    total_bytes: int
    head_bytes: int
    tail_bytes: int
    omitted_bytes: int
    #: 1-based output lines with omitted bytes (inclusive), and the marker's stored line.
    first_line: int
    last_line: int
    marker_line: int
    #: Output line n after the gap is stored line n - shift.
    shift: int


class StoreCap:
    """Decides, chunk by chunk, what of an output goes to the store under ``cap`` bytes."""

    def __init__(self, cap: int, tail_bytes: int) -> None:
        self.cap = cap
        self.tail_bytes = max(0, min(tail_bytes, cap // 2))
        self.head_room = max(0, cap - self.tail_bytes - MARKER_RESERVE)
        self.fed = 0
        self.head_newlines = 0
        self.head_ends_nl = True
        self._window: deque[bytes] = deque()
        self._window_bytes = 0
        self.dropped_bytes = 0
        self.dropped_newlines = 0
        self.last_dropped = b""
        self.peak_buffered = 0

    def take(self, chunk: bytes) -> bytes:
        """The part of ``chunk`` to store now (the head); the rest waits in the tail window."""
        if self.fed < self.head_room:
            room = self.head_room - self.fed
            if len(chunk) <= room:
                self._count_head(chunk)
                return chunk
            cut = safe_head_cut(chunk, room)
            head, chunk = chunk[:cut], chunk[cut:]
            self._count_head(head)
            self.head_room = self.fed  # the head is closed, even if the cut fell short
            self._hold(chunk)
            return head
        self._hold(chunk)
        return b""

    def _count_head(self, data: bytes) -> None:
        # No newline count here: the retainer counts the whole stream already, and the head's
        # share is derived at the end, only for an output that was capped.
        if data:
            self.fed += len(data)
            self.head_ends_nl = data.endswith(b"\n")

    def _hold(self, chunk: bytes) -> None:
        if not chunk:
            return
        self._window.append(chunk)
        self._window_bytes += len(chunk)
        # Drop the oldest chunk once the output is certainly over the cap without it and
        # the rest still covers the tail.
        while (self._window and self.fed + self._window_bytes - len(self._window[0]) > self.cap
               and self._window_bytes - len(self._window[0]) >= self.tail_bytes + MARKER_RESERVE):
            old = self._window.popleft()
            self._window_bytes -= len(old)
            self.dropped_bytes += len(old)
            self.dropped_newlines += old.count(b"\n")  # only an output over the cap pays this
            self.last_dropped = old[-1:]
        self.peak_buffered = max(self.peak_buffered, self._window_bytes)

    def finish(self, total_bytes: int, total_newlines: int) -> tuple[bytes, CapFacts | None]:
        """What is left to store (the marker and the tail), and the facts when capped."""
        rest = b"".join(self._window)
        self._window.clear()
        if not self.dropped_bytes and self.fed + len(rest) <= self.cap:
            return rest, None
        start = len(rest) - self.tail_bytes
        newline = rest.find(b"\n", start, min(len(rest), start + 4096))
        start = newline + 1 if 0 <= newline < len(rest) - 1 else start
        while start < len(rest) and 0x80 <= rest[start] <= 0xBF:  # never start mid-character
            start += 1
        self.dropped_bytes += start
        self.dropped_newlines += rest.count(b"\n", 0, start)
        tail = rest[start:]
        tail_newlines = tail.count(b"\n")
        self.head_newlines = total_newlines - self.dropped_newlines - tail_newlines
        first = self.head_newlines + 1
        if start:
            self.last_dropped = rest[start - 1:start]
        last = first + self.dropped_newlines - (1 if self.last_dropped == b"\n" else 0)
        lead = b"" if self.head_ends_nl else b"\n"
        marker = (lead + (f"[s3spill: {self.dropped_bytes:,} bytes of this output (lines {first}-"
                          f"{max(first, last)}) are not stored: it was larger than the "
                          f"{self.cap:,}-byte cap for one stored output; its last "
                          f"{len(tail):,} bytes follow]\n").encode())
        marker_line = self.head_newlines + (1 if lead else 0) + 1
        stored_newlines_before_tail = self.head_newlines + marker.count(b"\n")
        output_newlines_before_tail = total_newlines - tail_newlines
        facts = CapFacts(cap=self.cap, total_bytes=total_bytes, head_bytes=self.fed, tail_bytes=len(tail),
                         omitted_bytes=self.dropped_bytes, first_line=first, last_line=max(first, last),
                         marker_line=marker_line,
                         shift=output_newlines_before_tail - stored_newlines_before_tail)
        return marker + tail, facts

    @staticmethod
    def note(facts: CapFacts) -> str:
        """The pointer's sentence on a capped copy."""
        return (f"The stored copy is truncated (over the {facts.cap:,}-byte cap per stored output): "
                f"it holds the first {facts.head_bytes:,} and the last {facts.tail_bytes:,} bytes; "
                f"the {facts.omitted_bytes:,} bytes of lines {facts.first_line}-{facts.last_line} are "
                f"not stored (a marker at stored line {facts.marker_line} says so), and output line "
                f"n after them is stored line {_minus(facts.shift)}.")


def _minus(shift: int) -> str:
    """``n-3``, ``n+2`` or ``n``: the stored line of output line n (never ``n--2``)."""
    return f"n-{shift}" if shift > 0 else f"n+{-shift}" if shift < 0 else "n"
