"""The grep engine: verified chunks streamed through a pattern, with bounded memory.

Chunks arrive in order; complete lines are searched a block at a time when the pattern
allows it (:func:`~s3spill.artifacts.grep.pattern.block_pattern`), else line by line, and
only the first ``max_matches`` matching lines are kept (every later one is still counted).
Memory stays bounded whatever the content: a line longer than ``long_line`` bytes goes to
:mod:`.long_line`'s windows, and only a short excerpt of any line is kept; when a windowed
line had no match the result says its count is a lower bound (``exact=False``) instead of
pretending. One search is capped at :data:`TIME_BUDGET_SECONDS`; past the budget it stops
with :class:`InvalidRequest` rather than hold a worker (or an MCP server) indefinitely.
"""

from __future__ import annotations

import time

from s3spill.artifacts.grep.found import Excerpt, Found, excerpt, footer_line, prefix, render_rows
from s3spill.artifacts.grep.long_line import LongLine
from s3spill.artifacts.grep.pattern import Pattern, block_pattern, refused
from s3spill.artifacts.grep.shown import first_invalid, raw_position, text, units
from s3spill.context.read_limits import DEFAULT_MAX_MATCHES as DEFAULT_MAX_MATCHES
from s3spill.textview import show_line

TYPE_CHECKING = False  # not from typing, nor dataclasses (~8 ms): the CLI's fast grep runs this engine
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from s3spill.artifacts.grep.result import GrepResult
    from s3spill.context.read_args import ArgStyle
    from s3spill.errors import IntegrityError

MAX_CONTEXT = 20
LONG_LINE_BYTES = 4 * 1024 * 1024
OVERLAP_CHARS = 64 * 1024  # bytes, despite the name (kept for callers)
#: Wall-clock budget of one grep (RE2 is linear, so only a huge artifact gets near it).
TIME_BUDGET_SECONDS = 60.0


class _Open:
    """A kept match still collecting lines of after-context."""

    __slots__ = ("after", "match", "want")

    def __init__(self, match: Found, after: list[Excerpt], want: int) -> None:
        self.match, self.after, self.want = match, after, want


class Grep:
    """Feed verified chunks in order, then :meth:`result`."""

    def __init__(self, source_id: str, pattern: Pattern, *, context: int = 0,
                 max_matches: int = DEFAULT_MAX_MATCHES, long_line: int = LONG_LINE_BYTES,
                 overlap: int = OVERLAP_CHARS, budget: float = TIME_BUDGET_SECONDS) -> None:
        if not 0 <= context <= MAX_CONTEXT:
            raise refused(f"context must be 0-{MAX_CONTEXT}")
        if max_matches < 1:
            raise refused("max_matches must be >= 1")
        self.source_id, self.pattern = source_id, pattern
        self.context, self.max_matches = context, max_matches
        self.long_line, self.overlap = long_line, overlap
        self.matches: list[Found] = []
        self.kept = 0
        self.total = 0
        self.inexact_lines = 0
        self.line_no = 0  # 0-based index of the line being read
        self.line_start = 0
        self.carry = b""
        self.long: LongLine | None = None
        #: The last ``context`` lines read (number, excerpt), oldest first (:meth:`_remember`).
        self.before: list[tuple[int, str]] = []
        self.open: list[_Open] = []
        self.bytes = 0
        #: The pattern for whole-block candidate search, when block and per-line matching
        #: agree (see :func:`block_pattern`); None means line by line.
        self.fast = block_pattern(pattern)
        self.budget = budget
        self.started = time.monotonic()

    def feed(self, chunk: bytes) -> None:
        self._feed(chunk)
        if time.monotonic() - self.started > self.budget:
            raise refused(
                f"grep stopped after {self.budget:g} s ({self.bytes:,} bytes, {self.line_no:,} lines"
                " scanned): narrow the pattern or read pages instead")

    def _feed(self, chunk: bytes) -> None:
        self.bytes += len(chunk)
        if self.long is not None:
            j = chunk.find(b"\n")
            if j < 0:
                self.long.feed(chunk, final=False)
                return
            self.long.feed(chunk[:j], final=True)
            self._finish_long(j)
            chunk = chunk[j + 1 :]
        cut = chunk.rfind(b"\n") + 1
        if cut:
            self._block(self.carry + chunk[:cut] if self.carry else chunk[:cut])
            self.carry = chunk[cut:]
        else:
            self.carry += chunk
        if len(self.carry) > self.long_line:
            self.long = LongLine(self.pattern, self.long_line, self.overlap)
            self.long.feed(self.carry, final=False)
            self.carry = b""

    def result(self, *, expected_lines: int | None = None) -> GrepResult:
        from s3spill.artifacts.grep.result import GrepResult, grep_match

        kept = self._end(expected_lines)
        return GrepResult(
            source_id=self.source_id, pattern=self.pattern.pattern, context=self.context,
            max_matches=self.max_matches, matches=tuple(grep_match(m) for m in kept),
            total_matches=self.total,
            omitted=self.total - len(kept), exact=self.inexact_lines == 0,
            lines_scanned=self.line_no, bytes_scanned=self.bytes,
        )

    def text(self, style: ArgStyle = "call", *, expected_lines: int | None = None) -> tuple[str, int]:
        """What ``result(...).render(style)`` is, and the total count of matching lines, made
        without the result's records (and their ``dataclasses`` import)."""
        kept = self._end(expected_lines)
        rows = render_rows(self.source_id, self.pattern.pattern, self.line_no, kept)
        omitted, exact = self.total - len(kept), self.inexact_lines == 0
        rows.append(footer_line(len(kept), self.total, omitted, exact, style))
        return "\n".join(rows) + "\n", self.total

    def _end(self, expected_lines: int | None) -> list[Found]:
        """The last line searched, the line count checked; the kept matches in line order."""
        if self.long is not None:
            self.long.feed(b"", final=True)
            self._finish_long(None)
        elif self.carry:
            self._line(self.carry, newline=False)
            self.carry = b""
        if expected_lines is not None and self.line_no != expected_lines:
            raise _damaged(f"{self.source_id}: line count disagrees with its index")
        matches = [o.match.with_after(tuple(o.after)) for o in self.open]
        done = {m.line_number for m in matches}
        kept = [m for m in self.matches if m.line_number not in done] + matches
        kept.sort(key=lambda m: m.line_number)
        return kept

    # -- per line ---------------------------------------------------------------------

    def _block(self, raw: bytes) -> None:
        """Complete lines (``raw`` ends with a newline); a line that is not valid UTF-8 is
        searched alone in its display form, the valid runs between such lines as blocks."""
        pos, n = 0, len(raw)
        while pos < n:
            bad = first_invalid(raw, pos)
            if bad is None:
                self._valid_block(raw[pos:] if pos else raw)
                return
            start = max(pos, raw.rfind(b"\n", pos, bad) + 1)
            end = raw.index(b"\n", bad)
            if start > pos:
                self._valid_block(raw[pos:start])
            self._line(raw[start:end])
            pos = end + 1

    def _valid_block(self, raw: bytes) -> None:
        """Complete valid UTF-8 lines: a regex pass over the whole block finds candidate
        lines; only those (and after-context) are handled line by line."""
        pos, n = 0, len(raw)
        while pos < n:
            if self.open or self.fast is None:
                end = raw.index(b"\n", pos)
                self._line(raw[pos:end], valid=True)
                pos = end + 1
                continue
            span = self.fast.search(raw, pos)
            if span is not None and span[0] >= n:
                span = None  # an empty match after the last newline: no line is there
            start = n if span is None else max(pos, raw.rfind(b"\n", pos, span[0]) + 1)
            self._skip(raw, pos, start)
            if span is None:
                return
            end = raw.index(b"\n", start)
            # A block match inside one line is that line's own leftmost match: with (?m),
            # ^, $ and \b see a newline as they see a line edge, and RE2 has no lookarounds.
            inside = span is not None and span[1] <= end
            self._line(raw[start:end], found=(span[0] - start) if inside else None, valid=True)
            pos = end + 1

    def _skip(self, raw: bytes, pos: int, end: int) -> None:
        """Lines ``raw[pos:end]`` are known not to match: count them, remember context."""
        if end <= pos:
            return
        lines = raw.count(b"\n", pos, end)
        if self.context:
            tail = raw[pos : end - 1].rsplit(b"\n", self.context)[-min(lines, self.context):]
            first = self.line_no + lines - len(tail) + 1
            for i, line in enumerate(tail):
                self._remember(first + i, prefix(line))
        self.line_no += lines
        self.line_start += end - pos

    def _line(self, raw: bytes, newline: bool = True, found: int | None = None,
              valid: bool = False) -> None:
        """One line; ``found`` is where a match starts when the caller already knows;
        ``valid``: the caller knows it is valid UTF-8 (searched as raw bytes then)."""
        number = self.line_no + 1
        if self.open:
            self._after(lambda: excerpt(number, text(raw)))
        col: int | None = None
        shown, escaped = ("", False) if valid or found is not None else show_line(raw)
        if found is None and escaped:
            span = self.pattern.search(shown.encode("utf-8"))
            if span is not None:
                found, col = raw_position(raw, span[0], doubled=True)
        elif found is None:
            span = self.pattern.search(raw)
            found = None if span is None else span[0]
        if found is not None:
            self.total += 1
            if self.kept < self.max_matches:
                col = units(raw[:found]) if col is None else col
                self._keep(number, self.line_start + found, col, excerpt(number, text(raw), col))
        if self.context:
            self._remember(number, prefix(raw))
        self.line_start += len(raw) + int(newline)
        self.line_no += 1

    def _finish_long(self, newline_at: int | None) -> None:
        long = self.long
        assert long is not None
        self.long = None
        number = self.line_no + 1
        if self.open:
            self._after(lambda: long.excerpt(number))
        if long.found is not None:
            self.total += 1
            if self.kept < self.max_matches:
                byte, col, line = long.found
                self._keep(number, self.line_start + byte, col, line.numbered(number))
        elif long.windows > 1:
            self.inexact_lines += 1
        if self.context:
            self._remember(number, long.head)
        self.line_start += long.fed + (1 if newline_at is not None else 0)
        self.line_no += 1

    def _remember(self, number: int, shown: str) -> None:
        """Keep line ``number`` as before-context, the oldest dropped past ``context`` lines (a
        list of at most 21, not ``collections.deque(maxlen=...)``: ``collections`` is ~3 ms of
        a CLI grep's imports that nothing else there needs)."""
        self.before.append((number, shown))
        if len(self.before) > self.context:
            del self.before[0]

    def _keep(self, number: int, byte: int, col: int, line: Excerpt) -> None:
        self.kept += 1
        before = tuple(excerpt(n, t) for n, t in self.before)
        match = Found(number, self.line_start, byte, col, line, before)
        if self.context:
            self.open.append(_Open(match, [], self.context))
        else:
            self.matches.append(match)

    def _after(self, make: Callable[[], Excerpt]) -> None:
        line = make()
        still: list[_Open] = []
        for o in self.open:
            o.after.append(line)
            if len(o.after) >= o.want:
                self.matches.append(o.match.with_after(tuple(o.after)))
            else:
                still.append(o)
        self.open = still


def grep_chunks(chunks: Iterable[bytes], source_id: str, pattern: Pattern, *,
                context: int = 0, max_matches: int = DEFAULT_MAX_MATCHES,
                expected_lines: int | None = None) -> GrepResult:
    g = Grep(source_id, pattern, context=context, max_matches=max_matches)
    for chunk in chunks:
        g.feed(chunk)
    return g.result(expected_lines=expected_lines)


def grep_text(chunks: Iterable[bytes], source_id: str, pattern: Pattern, *, style: ArgStyle = "call",
              context: int = 0, max_matches: int = DEFAULT_MAX_MATCHES,
              expected_lines: int | None = None) -> tuple[str, int]:
    """``grep_chunks(...).render(style)`` and the total count of matching lines, without the
    result's records (:meth:`Grep.text`)."""
    g = Grep(source_id, pattern, context=context, max_matches=max_matches)
    for chunk in chunks:
        g.feed(chunk)
    return g.text(style, expected_lines=expected_lines)


def _damaged(message: str) -> IntegrityError:
    """An artifact that disagrees with its index (:mod:`s3spill.errors` loads only then)."""
    from s3spill.errors import IntegrityError

    return IntegrityError(message)
