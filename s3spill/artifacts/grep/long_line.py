"""Windowed search through one line too long to hold in memory.

A line longer than ``long_line`` bytes is searched in windows of that size overlapping by
``overlap`` bytes (in a window, a byte that is not UTF-8 is searched as ``\\xHH`` but a
backslash as one), and only a short excerpt of it is kept. The one price is exactness: a
match longer than the overlap could straddle two windows and be missed, so the engine
marks a windowed line without a match as a lower bound; and the offsets given are those of
*a* match, normally but not always the first.
"""

from __future__ import annotations

import codecs

from s3spill.artifacts.grep.found import EXCERPT_CHARS, EXCERPT_LEAD, Excerpt
from s3spill.artifacts.grep.shown import boundary, escape_bytes, first_invalid, raw_position, text, units
from s3spill.textview import escape

TYPE_CHECKING = False
if TYPE_CHECKING:
    from s3spill.artifacts.grep.pattern import Pattern


class LongLine:
    """Windowed search through one line too long to hold (see module docstring)."""

    def __init__(self, pattern: Pattern, long_line: int, overlap: int) -> None:
        self.pattern = pattern
        self.dec = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self.tail = b""
        self.tail_units = 0  # characters of the line before ``tail`` (tail starts on an edge)
        self.fed = 0  # bytes of the line seen so far
        self.head = ""  # the line's first characters, for excerpts and context
        self.found: tuple[int, int, Excerpt] | None = None  # (byte off, char off, excerpt)
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
        if first_invalid(window, 0) is None:
            span = self.pattern.search(window, start)
        else:  # search what is shown: a byte that is not UTF-8 as \xHH
            span = self.pattern.search(escape_bytes(window),
                                       len(escape_bytes(window[:start])) if start else 0)
            if span is not None:
                span = (raw_position(window, span[0], doubled=False)[0],
                        raw_position(window, span[1], doubled=False)[0])
        if span is not None and (final or span[1] <= len(window) - self.overlap):
            before = text(window[: span[0]])
            lo = max(0, len(before) - EXCERPT_LEAD)
            piece = (before[lo:] + text(window[span[0] : span[0] + 4 * EXCERPT_CHARS]))
            shown, escaped = escape(piece[:EXCERPT_CHARS])
            self.found = (window_start + span[0], self.tail_units + len(before),
                          Excerpt(0, self.tail_units + lo, shown, escaped, True))
            return
        cut = boundary(window, max(0, len(window) - 2 * self.overlap))
        self.tail_units += units(window[:cut])
        self.tail = window[cut:]

    def excerpt(self, number: int) -> Excerpt:
        shown, escaped = escape(self.head)
        return Excerpt(number, 0, shown, escaped, True)
