"""``grep`` over an artifact: a regex streamed over verified chunks, with bounded memory.

A *match* is a line, as with ``grep``: a line that contains at least one match of the
pattern counts once, carries its 1-based line number, the byte offset of the line and of
its first match, and the match's ``char_offset`` in the line (hand it to ``read_page`` to
read around it). Only the first ``max_matches`` lines are kept; every later matching line
is still counted, so a capped result states exactly how many were omitted.

Memory stays bounded whatever the content: a line longer than ``long_line`` bytes is
searched in windows of that size overlapping by ``overlap`` characters (in a window, a byte
that is not UTF-8 is searched as ``\\xHH`` but a backslash as one), and only a short
excerpt of any line is kept. The one price is exactness: in such a line a match longer than
the overlap could straddle two windows and be missed, so when a windowed line had no match
the result says its count is a lower bound (``exact=False``) instead of pretending; and in
such a line the offsets given are those of *a* match, normally but not always the first.

Patterns come from a model, so they run on RE2 (``google-re2``), whose matching time is
linear in the input whatever the pattern: ``(a+)+$`` cannot backtrack for minutes. RE2
refuses what would need backtracking — backreferences (``\\1``), lookarounds
(``(?=``, ``(?!``, ``(?<=``, ``(?<!``) and possessive or atomic groups — and spells the
end of text ``\\z`` (Python's ``\\Z`` is accepted and rewritten). A line is searched as
it is shown (:mod:`s3spill.textview`): a valid UTF-8 line as its raw bytes (UTF-8 mode), a
line holding bytes that are not UTF-8 in its escaped display form, where such a byte is the
four characters ``\\xHH`` and a backslash is two; so grep finds what ``read`` shows, and a
count equals a per-line search over that display form. Offsets still point at the raw
line (the byte and the character where the matched display text starts). A compiled
program is capped at :data:`MAX_PROGRAM_BYTES` and one search at
:data:`TIME_BUDGET_SECONDS`; past the budget the search stops with :class:`InvalidRequest`
rather than hold a worker (or an MCP server) indefinitely.
"""

from __future__ import annotations

import codecs
import re
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import re2
from pydantic import BaseModel, ConfigDict

from s3spill.context.read_args import ArgStyle, spell_args
from s3spill.errors import IntegrityError, InvalidRequest
from s3spill.textview import escape, show_line

DEFAULT_MAX_MATCHES = 100
MAX_CONTEXT = 20
MAX_PATTERN_CHARS = 1000
EXCERPT_CHARS = 240
EXCERPT_LEAD = 60
LONG_LINE_BYTES = 4 * 1024 * 1024
OVERLAP_CHARS = 64 * 1024  # bytes, despite the name (kept for callers)
#: RE2 memory for one compiled pattern; a pattern needing more is refused.
MAX_PROGRAM_BYTES = 8 * 1024 * 1024
#: Wall-clock budget of one grep (RE2 is linear, so only a huge artifact gets near it).
TIME_BUDGET_SECONDS = 60.0


class GrepLine(BaseModel):
    """An excerpt of one line (display form, see :mod:`s3spill.textview`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    number: int
    char_start: int
    text: str
    escaped: bool
    truncated: bool


class GrepMatch(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    line_number: int
    line_byte_offset: int
    byte_offset: int
    char_offset: int
    line: GrepLine
    before: tuple[GrepLine, ...] = ()
    after: tuple[GrepLine, ...] = ()
    #: CSV/TSV: the 1-based record holding the match (a record may span lines).
    record_number: int | None = None


class GrepResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    source_id: str
    pattern: str
    context: int
    max_matches: int
    matches: tuple[GrepMatch, ...]
    total_matches: int
    omitted: int
    #: False when ``total_matches``/``omitted`` are lower bounds (see module docstring).
    exact: bool
    lines_scanned: int
    bytes_scanned: int

    def render(self, style: ArgStyle = "call") -> str:
        """The matches as text; ``style`` spells the footer's arguments for the reader's
        surface (``max_matches`` for a tool call, ``--max-matches`` for the CLI)."""
        rows = [f"[{self.source_id} | grep {self.pattern!r} | {self.lines_scanned:,} lines]"]
        shown: set[int] = set()
        hits = {m.line_number: m.line for m in self.matches}
        records = {m.line_number: m.record_number for m in self.matches if m.record_number}
        last = 0
        for m in self.matches:
            group = [hits.get(ln.number, ln) for ln in (*m.before, m.line, *m.after)]
            group = [ln for ln in group if ln.number not in shown]
            if group and last and group[0].number > last + 1:
                rows.append("--")
            for ln in group:
                mark = ":" if ln.number in hits else "-"
                flag = "!" if ln.escaped else ""
                lead = "…" if ln.char_start else ""
                tail = "…" if ln.truncated and (ln.char_start or len(ln.text)) else ""
                record = f"[record {records[ln.number]:,}] " if ln.number in records else ""
                rows.append(f"{ln.number:>6}{mark}{flag}\t{record}{lead}{ln.text}{tail}")
                shown.add(ln.number)
                last = max(last, ln.number)
        rows.append(self.footer(style))
        return "\n".join(rows) + "\n"

    def footer(self, style: ArgStyle = "call") -> str:
        if not self.total_matches:
            return "[no matching lines]" if self.exact else (
                "[no matching lines found; lines over 4 MiB were searched in windows and a"
                " very long match could be missed]")
        n = len(self.matches)
        if self.omitted == 0 and self.exact:
            plural = "s" if n != 1 else ""
            return f"[{n:,} matching line{plural}; read around one with {spell_args(style, offset='LINE-1')}]"
        count = f"{self.omitted:,} more omitted" if self.exact else (
            f"at least {self.omitted:,} more omitted (a lower bound: lines over 4 MiB were"
            " searched in windows)")
        return (f"[{n:,} of {self.total_matches:,}{'' if self.exact else '+'} matching lines"
                f" shown; {count}; narrow the pattern or raise "
                f"{'--max-matches' if style == 'cli' else 'max_matches'}]")


class Pattern:
    """A model-supplied pattern compiled for RE2, searched over bytes (see module docstring)."""

    def __init__(self, pattern: str, *, ignore_case: bool = False, multiline: bool = False) -> None:
        self.pattern = pattern
        self.ignore_case = ignore_case
        options = re2.Options()
        options.max_mem = MAX_PROGRAM_BYTES
        options.log_errors = False
        options.case_sensitive = not ignore_case
        options.never_capture = True  # only the whole match's start is used
        # Python's \Z is RE2's \z; other escapes mean the same in both.
        source = re.sub(r"(?<!\\)((?:\\\\)*)\\Z", r"\1\\z", pattern)
        try:
            self._regex: Any = re2.compile(f"(?m){source}" if multiline else source, options)
        except re2.error as exc:
            why = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(
                exc.args[0], bytes) else str(exc)
            raise InvalidRequest(f"invalid regular expression {pattern[:80]!r}: {why} (RE2 syntax: "
                                 "no backreferences or lookarounds)") from None

        # The wrapper's search builds a match object per call (two extension calls and a
        # generator); grep calls it once per candidate line, so go to RE2's Match directly
        # when this version of google-re2 exposes it (it does since 1.0), else the wrapper.
        self._match: Any = getattr(self._regex, "_regexp", None)
        self._anchor: Any = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
        if not callable(getattr(self._match, "Match", None)) or self._anchor is None:
            self._match = None

    def search(self, data: bytes, pos: int = 0) -> tuple[int, int] | None:
        """Byte span of the leftmost match at or after ``pos``."""
        if self._match is not None:
            start, end = self._match.Match(self._anchor, data, pos, len(data))[0]
            return None if start < 0 else (start, end)
        return self.search_portable(data, pos)

    def search_portable(self, data: bytes, pos: int = 0) -> tuple[int, int] | None:
        """The same through google-re2's public API (the fallback, and the tests' reference)."""
        m = self._regex.search(data, pos)
        return None if m is None else (m.start(), m.end())

    def for_blocks(self) -> Pattern:
        return Pattern(self.pattern, ignore_case=self.ignore_case, multiline=True)


def compile_pattern(pattern: str, *, ignore_case: bool = False) -> Pattern:
    if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidRequest(f"pattern must be 1-{MAX_PATTERN_CHARS} characters")
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest("pattern must be valid UTF-8 text") from None
    return Pattern(pattern, ignore_case=ignore_case)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _units(raw: bytes) -> int:
    """Characters (units) of ``raw`` as the index counts them (surrogateescape decoding)."""
    return len(raw) if raw.isascii() else len(_text(raw))


def _boundary(data: bytes, i: int) -> int:
    """``i`` moved forward past UTF-8 continuation bytes (at most 3): a character edge."""
    for _ in range(3):
        if i < len(data) and 0x80 <= data[i] <= 0xBF:
            i += 1
    return i


def _excerpt(number: int, text: str, col: int = 0) -> GrepLine:
    start = max(0, col - EXCERPT_LEAD) if len(text) > EXCERPT_CHARS else 0
    piece = text[start : start + EXCERPT_CHARS]
    shown, escaped = escape(piece)
    return GrepLine(number=number, char_start=start, text=shown, escaped=escaped,
                    truncated=start > 0 or start + len(piece) < len(text))


@dataclass
class _Open:
    """A kept match still collecting lines of after-context."""

    match: GrepMatch
    after: list[GrepLine]
    want: int


class _LongLine:
    """Windowed search through one line too long to hold (see module docstring)."""

    def __init__(self, pattern: Pattern, long_line: int, overlap: int) -> None:
        self.pattern = pattern
        self.dec = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self.tail = b""
        self.tail_units = 0  # characters of the line before ``tail`` (tail starts on an edge)
        self.fed = 0  # bytes of the line seen so far
        self.head = ""  # the line's first characters, for excerpts and context
        self.found: tuple[int, int, GrepLine] | None = None  # (byte off, char off, excerpt)
        self.overlap = overlap
        self.windows = 0

    def feed(self, data: bytes, final: bool) -> None:
        if len(self.head) < EXCERPT_CHARS:
            self.head += self.dec.decode(data[: 4 * EXCERPT_CHARS], final=final)[
                : EXCERPT_CHARS - len(self.head)]
        window_start = self.fed - len(self.tail)
        self.fed += len(data)
        if self.found is None:
            self._search(self.tail + data, window_start, final)

    def _search(self, window: bytes, window_start: int, final: bool) -> None:
        """Search one window. Later windows start one byte early and search from 1, so
        ``^``/``\\A`` and ``\\b`` see the real preceding text; a match must end at least
        ``overlap`` bytes before an artificial window end, so ``$``/``\\z`` do not see it
        either — the next window, which repeats the last ``2 * overlap`` bytes, gets such
        matches instead."""
        self.windows += 1
        start = 1 if self.tail else 0
        if _first_invalid(window, 0) is None:
            span = self.pattern.search(window, start)
        else:  # search what is shown: a byte that is not UTF-8 as \xHH
            span = self.pattern.search(_escape_bytes(window),
                                       len(_escape_bytes(window[:start])) if start else 0)
            if span is not None:
                span = (_raw_position(window, span[0], doubled=False)[0],
                        _raw_position(window, span[1], doubled=False)[0])
        if span is not None and (final or span[1] <= len(window) - self.overlap):
            before = _text(window[: span[0]])
            lo = max(0, len(before) - EXCERPT_LEAD)
            piece = (before[lo:] + _text(window[span[0] : span[0] + 4 * EXCERPT_CHARS]))
            shown, escaped = escape(piece[:EXCERPT_CHARS])
            self.found = (window_start + span[0], self.tail_units + len(before), GrepLine(
                number=0, char_start=self.tail_units + lo, text=shown, escaped=escaped,
                truncated=True))
            return
        cut = _boundary(window, max(0, len(window) - 2 * self.overlap))
        self.tail_units += _units(window[:cut])
        self.tail = window[cut:]

    def excerpt(self, number: int) -> GrepLine:
        shown, escaped = escape(self.head)
        return GrepLine(number=number, char_start=0, text=shown, escaped=escaped, truncated=True)


class Grep:
    """Feed verified chunks in order, then :meth:`result`."""

    def __init__(self, source_id: str, pattern: Pattern, *, context: int = 0,
                 max_matches: int = DEFAULT_MAX_MATCHES, long_line: int = LONG_LINE_BYTES,
                 overlap: int = OVERLAP_CHARS, budget: float = TIME_BUDGET_SECONDS) -> None:
        if not 0 <= context <= MAX_CONTEXT:
            raise InvalidRequest(f"context must be 0-{MAX_CONTEXT}")
        if max_matches < 1:
            raise InvalidRequest("max_matches must be >= 1")
        self.source_id, self.pattern = source_id, pattern
        self.context, self.max_matches = context, max_matches
        self.long_line, self.overlap = long_line, overlap
        self.matches: list[GrepMatch] = []
        self.kept = 0
        self.total = 0
        self.inexact_lines = 0
        self.line_no = 0  # 0-based index of the line being read
        self.line_start = 0
        self.carry = b""
        self.long: _LongLine | None = None
        self.before: deque[tuple[int, str]] = deque(maxlen=context)
        self.open: list[_Open] = []
        self.bytes = 0
        #: The pattern for whole-block candidate search, when block and per-line matching
        #: agree (see :func:`_block_pattern`); None means line by line.
        self.fast = _block_pattern(pattern)
        self.budget = budget
        self.started = time.monotonic()

    def feed(self, chunk: bytes) -> None:
        self._feed(chunk)
        if time.monotonic() - self.started > self.budget:
            raise InvalidRequest(
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
            self.long = _LongLine(self.pattern, self.long_line, self.overlap)
            self.long.feed(self.carry, final=False)
            self.carry = b""

    def result(self, *, expected_lines: int | None = None) -> GrepResult:
        if self.long is not None:
            self.long.feed(b"", final=True)
            self._finish_long(None)
        elif self.carry:
            self._line(self.carry, newline=False)
            self.carry = b""
        if expected_lines is not None and self.line_no != expected_lines:
            raise IntegrityError(f"{self.source_id}: line count disagrees with its index")
        matches = [o.match.model_copy(update={"after": tuple(o.after)}) for o in self.open]
        done = {m.line_number for m in matches}
        kept = [m for m in self.matches if m.line_number not in done] + matches
        kept.sort(key=lambda m: m.line_number)
        return GrepResult(
            source_id=self.source_id, pattern=self.pattern.pattern, context=self.context,
            max_matches=self.max_matches, matches=tuple(kept), total_matches=self.total,
            omitted=self.total - len(kept), exact=self.inexact_lines == 0,
            lines_scanned=self.line_no, bytes_scanned=self.bytes,
        )

    # -- per line ---------------------------------------------------------------------

    def _block(self, raw: bytes) -> None:
        """Complete lines (``raw`` ends with a newline); a line that is not valid UTF-8 is
        searched alone in its display form, the valid runs between such lines as blocks."""
        pos, n = 0, len(raw)
        while pos < n:
            bad = _first_invalid(raw, pos)
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
                self.before.append((first + i, _prefix(line)))
        self.line_no += lines
        self.line_start += end - pos

    def _line(self, raw: bytes, newline: bool = True, found: int | None = None,
              valid: bool = False) -> None:
        """One line; ``found`` is where a match starts when the caller already knows;
        ``valid``: the caller knows it is valid UTF-8 (searched as raw bytes then)."""
        number = self.line_no + 1
        if self.open:
            self._after(lambda: _excerpt(number, _text(raw)))
        col: int | None = None
        shown, escaped = ("", False) if valid or found is not None else show_line(raw)
        if found is None and escaped:
            span = self.pattern.search(shown.encode("utf-8"))
            if span is not None:
                found, col = _raw_position(raw, span[0], doubled=True)
        elif found is None:
            span = self.pattern.search(raw)
            found = None if span is None else span[0]
        if found is not None:
            self.total += 1
            if self.kept < self.max_matches:
                text = _text(raw)
                col = _units(raw[:found]) if col is None else col
                self._keep(number, self.line_start + found, col, _excerpt(number, text, col))
        if self.context:
            self.before.append((number, _prefix(raw)))
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
                byte, col, excerpt = long.found
                self._keep(number, self.line_start + byte, col,
                           excerpt.model_copy(update={"number": number}))
        elif long.windows > 1:
            self.inexact_lines += 1
        if self.context:
            self.before.append((number, long.head))
        self.line_start += long.fed + (1 if newline_at is not None else 0)
        self.line_no += 1

    def _keep(self, number: int, byte: int, col: int, line: GrepLine) -> None:
        self.kept += 1
        before = tuple(_excerpt(n, t) for n, t in self.before)
        match = GrepMatch(line_number=number, line_byte_offset=self.line_start, byte_offset=byte,
                          char_offset=col, line=line, before=before)
        if self.context:
            self.open.append(_Open(match, [], self.context))
        else:
            self.matches.append(match)

    def _after(self, make: Callable[[], GrepLine]) -> None:
        line = make()
        still: list[_Open] = []
        for o in self.open:
            o.after.append(line)
            if len(o.after) >= o.want:
                self.matches.append(o.match.model_copy(update={"after": tuple(o.after)}))
            else:
                still.append(o)
        self.open = still


def _first_invalid(raw: bytes, pos: int) -> int | None:
    """Index of the first byte at or after ``pos`` that is not valid UTF-8, or None."""
    try:
        codecs.utf_8_decode(memoryview(raw)[pos:], "strict", True)
    except UnicodeDecodeError as exc:
        return pos + exc.start
    return None


def _raw_position(raw: bytes, shown_bytes: int, *, doubled: bool) -> tuple[int, int]:
    """(byte, character) of ``raw`` where its display form's first ``shown_bytes`` bytes end.

    ``doubled``: backslashes show as two (a whole escaped line) or as one (a window of a
    line too long to hold). A match that starts inside an escape (``xff`` of ``\\xff``)
    points at that byte."""
    seen = byte = 0
    for i, ch in enumerate(_text(raw)):
        bad = 0xDC80 <= ord(ch) <= 0xDCFF
        size = 1 if bad else len(ch.encode("utf-8"))
        width = 4 if bad else 2 if doubled and ch == "\\" else size
        if seen + width > shown_bytes:
            return byte, i
        seen += width
        byte += size
    return byte, len(_text(raw))


_BAD_UNIT = re.compile("[\udc80-\udcff]")


def _escape_bytes(raw: bytes) -> bytes:
    """Bytes that are not UTF-8 as ``\\xHH``, the rest as it is (a long line's window)."""
    text = _BAD_UNIT.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", _text(raw))
    return text.encode("utf-8")


def _prefix(raw: bytes) -> str:
    """The first ``EXCERPT_CHARS + 1`` characters of a line, decoding only what that needs."""
    return _text(raw[: 4 * (EXCERPT_CHARS + 2)])[: EXCERPT_CHARS + 1]


_LINE_SENSITIVE = re.compile(r"\(\?[<=!aiLmsuxU-]|\\[AZz]")


def _block_pattern(pattern: Pattern) -> Pattern | None:
    """The pattern for searching many lines at once, or None when that could miss a match.

    Searching a block finds every line whose own search would match, as long as nothing in
    the pattern can tell a line's edges from a newline: lookarounds, inline flags and
    ``\\A``/``\\Z`` can, so those patterns go line by line. A block match that spans lines is
    only a candidate: its first line is searched again on its own.
    """
    if _LINE_SENSITIVE.search(pattern.pattern):
        return None
    return pattern.for_blocks()


def grep_chunks(chunks: Iterable[bytes], source_id: str, pattern: Pattern, *,
                context: int = 0, max_matches: int = DEFAULT_MAX_MATCHES,
                expected_lines: int | None = None) -> GrepResult:
    g = Grep(source_id, pattern, context=context, max_matches=max_matches)
    for chunk in chunks:
        g.feed(chunk)
    return g.result(expected_lines=expected_lines)
