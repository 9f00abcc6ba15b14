"""Salient lines: the first error/failure lines of the part a preview leaves out.

A head/tail preview hides the middle of a long output, and the middle is exactly
where an early root-cause error sits (docs/design-notes.md, "Externalization as paging": "line 40000: ERROR").
:class:`SalientScanner` watches the stream as it goes by and remembers the first few
lines that look like an error, with their 1-based line numbers and byte offsets, so
the pointer can quote them and the model can page straight to them.

The scan is one regex search per chunk (C speed) plus a few ``bytes.find`` calls per
match, and it stops for good once it has its lines; memory is bounded by
``max_lines * max_line_bytes`` plus one capped partial line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from s3spill.context.utf8 import safe_head_cut
from s3spill.textview import show

#: Lines worth quoting from an omitted middle: errors and failures, not warnings
#: (they are too common to be salient) and not summaries (they live in the tail).
ERROR_ANCHOR = re.compile(
    rb"(?i)error|exception|traceback|\bfail(?:ed|ure|ures|ing)?\b|\bfatal\b|\bpanic|\bassert",
)


#: Lower-case literals, one of which every :data:`ERROR_ANCHOR` match contains. The
#: case-insensitive regex runs at a few MB/s; ``bytes.find`` on a lower-cased copy runs
#: at memory speed, so the scanner looks for these first and runs the regex only on
#: the lines that contain one (a 1 GiB log without errors must not cost minutes).
ANCHOR_WORDS: tuple[bytes, ...] = (b"error", b"exception", b"traceback", b"fail", b"fatal", b"panic",
                                   b"assert")


class _Finder:
    """``pattern.search`` over one chunk, prefiltered by literal words when they are known."""

    def __init__(self, data: bytes, pattern: re.Pattern[bytes], words: tuple[bytes, ...] | None) -> None:
        self.data = data
        self.pattern = pattern
        self.words = words
        self.low = data.lower() if words else b""
        self.next: dict[bytes, int] = {}

    def _candidate(self, pos: int) -> int:
        """Smallest position >= pos where some word starts; -1 if none."""
        best = -1
        for word in self.words or ():
            at = self.next.get(word)
            if at is None or 0 <= at < pos:  # -1 stays: the word does not occur again
                at = self.next[word] = self.low.find(word, pos)
            if at >= 0 and (best < 0 or at < best):
                best = at
        return best

    def search(self, pos: int, end: int) -> re.Match[bytes] | None:
        if not self.words:
            return self.pattern.search(self.data, pos, end)
        while pos < end:
            at = self._candidate(pos)
            if at < 0 or at >= end:
                return None
            line_start = max(pos, self.data.rfind(b"\n", 0, at) + 1)
            line_end = self.data.find(b"\n", at, end)
            line_end = end if line_end < 0 else line_end
            found = self.pattern.search(self.data, line_start, line_end)
            if found is not None:
                return found
            pos = line_end + 1
        return None


@dataclass(frozen=True)
class SalientLine:
    """One quoted line: where it is (1-based line, byte span) and a capped excerpt."""

    number: int
    start: int
    end: int
    text: str


class SalientScanner:
    """Find the first ``max_lines`` anchor lines that start at or after ``skip_bytes``.

    Set ``skip_bytes`` to the smallest head a preview may keep: lines inside the head
    are visible anyway. Lines that end up inside the preview's tail are dropped by
    the renderer, which knows the final cut; keeping the *first* matches makes that
    safe, because every later match is then in the tail too.
    """

    def __init__(
        self,
        *,
        skip_bytes: int = 0,
        max_lines: int = 5,
        max_line_bytes: int = 240,
        pattern: re.Pattern[bytes] = ERROR_ANCHOR,
        max_scan_bytes: int | None = None,
        view: Callable[[bytes], bytes] | None = None,
    ) -> None:
        #: Applied to a line (same length) before a quote is cut from it: the secret mask
        #: sees the whole line, so a quote cut inside a secret shows no piece of it.
        self.view = view
        self.skip_bytes = max(0, skip_bytes)
        #: Stop looking this many bytes past ``skip_bytes`` (bounds the added latency
        #: on huge outputs; the scan runs at tens of MB/s, hashing at hundreds).
        self.max_scan_bytes = max_scan_bytes
        self.max_lines = max(0, max_lines)
        self.cap = max(16, max_line_bytes)
        self.pattern = pattern
        #: Literal prefilter; only valid for the default pattern (see ANCHOR_WORDS).
        self.words = ANCHOR_WORDS if pattern is ERROR_ANCHOR else None
        self._found: list[SalientLine] = []
        self._offset = 0  # bytes consumed
        self._newlines = 0  # newlines consumed
        self._carry = bytearray()  # first `cap` bytes of the current partial line
        self._carry_len = 0  # true length of the current partial line
        self._carry_start = 0
        self._carry_newlines = 0

    @property
    def done(self) -> bool:
        if len(self._found) >= self.max_lines:
            return True
        return self.max_scan_bytes is not None and self._offset >= self.skip_bytes + self.max_scan_bytes

    def push(self, chunk: bytes | bytearray | memoryview) -> None:
        if self.done or not chunk:
            return
        data = bytes(chunk) if not isinstance(chunk, bytes) else chunk
        base = self._offset
        self._offset += len(data)
        first_nl = data.find(b"\n")
        if first_nl < 0:
            room = self.cap - len(self._carry)
            if room > 0:
                self._carry += data[:room]
            self._carry_len += len(data)
            return
        # The line that was partial so far ends in this chunk.
        line_start, line_end = self._carry_start, base + first_nl
        number = self._carry_newlines + 1
        if len(self._carry) == self._carry_len:  # the carry is the whole line so far
            self._consider(bytes(self._carry) + data[:first_nl], line_start, line_end, number, None)
        elif (found := self.pattern.search(self._carry)) is not None:
            self._consider(bytes(self._carry), line_start, line_end, number, found.start())
        elif (found := _Finder(data[:first_nl], self.pattern, self.words).search(0, first_nl)) is not None:
            lo = max(0, found.start() - self.cap // 4)
            self._consider(data[lo:first_nl], line_start, line_end, number, found.start() - lo, cut=True)
        # Whole lines inside this chunk.
        last_nl = data.rfind(b"\n")
        nl_before = self._carry_newlines + 1  # newlines before data[first_nl + 1]
        pos = max(first_nl + 1, self.skip_bytes - base)
        counted_to, counted = first_nl + 1, nl_before
        finder = _Finder(data, self.pattern, self.words)
        while not self.done and pos < last_nl:
            match = finder.search(pos, last_nl)
            if match is None:
                break
            start = data.rfind(b"\n", 0, match.start()) + 1
            end = data.find(b"\n", match.start())
            counted += data.count(b"\n", counted_to, start)
            counted_to = start
            self._consider(data[start:end], base + start, base + end, counted + 1, match.start() - start)
            pos = end + 1
        self._newlines = self._carry_newlines + 1 + data.count(b"\n", first_nl + 1)
        self._carry = bytearray(data[last_nl + 1 : last_nl + 1 + self.cap])
        self._carry_len = len(data) - last_nl - 1
        self._carry_start = base + last_nl + 1
        self._carry_newlines = self._newlines

    def _consider(
        self, line: bytes, start: int, end: int, number: int, at: int | None, cut: bool = False
    ) -> None:
        if self.done or start < self.skip_bytes:
            return
        if at is None:
            found = _Finder(line, self.pattern, self.words).search(0, len(line))
            if found is None:
                return
            at = found.start()
        if self.view is not None:
            line = self.view(line)
        if at + 16 > self.cap:  # the match is deep in a long line: quote around it
            lo = max(0, at - self.cap // 4)
            for _ in range(3):  # start on a character, not inside one
                if lo < len(line) and 0x80 <= line[lo] <= 0xBF:
                    lo += 1
            piece, lead = line[lo:], "…"
        else:
            piece, lead = line, "…" if cut else ""
        # Shown as everywhere else (s3spill.textview): a byte that is not UTF-8 as \xHH.
        text = lead + show(piece[: safe_head_cut(piece, self.cap)]).rstrip("\r")
        if end - start > self.cap:
            text += "…"
        self._found.append(SalientLine(number, start, end, text))

    def finish(self) -> list[SalientLine]:
        """The lines found; the last (unterminated) line is considered too."""
        if self._carry and not self.done:
            line = bytes(self._carry)
            self._consider(line, self._carry_start, self._offset, self._carry_newlines + 1, None)
            self._carry = bytearray()
        return list(self._found)
