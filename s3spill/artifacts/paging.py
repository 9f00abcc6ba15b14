"""One page of an artifact: locate it through the index, assemble it from verified chunks.

:func:`build_page` is pure given a ``fetch(k)`` that returns chunk ``k`` *already
verified* against the index (the artifact store supplies it). It fetches only the chunks
the page touches: the chunk holding the line's start (unless the index alone locates it)
and those covering the page's own bytes — at most the page's bytes plus two chunks.

Conventions, all visible in the rendered page:

* ``offset`` is 0-based (lines to skip); shown line numbers are 1-based, so a page
  that ends after line 2000 says ``continue with offset=2000``.
* ``char_offset`` counts units of the line (code points; an undecodable byte is one).
* Every page states what comes next: ``EOF``, the next ``offset``, or — when a line is
  longer than the budget — ``offset=N, char_offset=M`` to continue the same line.
* The whole rendered page (header, rows, footer) never exceeds ``max_chars``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from s3spill.artifacts.pagefill import LEGEND as LEGEND
from s3spill.artifacts.pagefill import MIN_BODY_CHARS as MIN_BODY_CHARS
from s3spill.artifacts.pagefill import MIN_CUT_CHARS as MIN_CUT_CHARS
from s3spill.artifacts.pagefill import ROW as _ROW_FORMAT
from s3spill.artifacts.pagefill import fill as _fill
from s3spill.artifacts.pagefill import footer as _footer
from s3spill.artifacts.pagefill import frame_reserve as frame_reserve
from s3spill.artifacts.pagefill import header as _header
from s3spill.artifacts.pagefill import row as _row
from s3spill.artifacts.plain import PlainRecord
from s3spill.context.read_args import ArgStyle
from s3spill.context.read_limits import DEFAULT_LIMIT as DEFAULT_LIMIT
from s3spill.context.read_limits import DEFAULT_MAX_CHARS as DEFAULT_MAX_CHARS
from s3spill.textview import unescape

TYPE_CHECKING = False
if TYPE_CHECKING:
    from s3spill.artifacts.pagefill import Line, PageIndex

_ROW = re.compile(r"^ *(\d+)(!?)\t(.*)$", re.DOTALL)

Fetch = Callable[[int], bytes]


@dataclass(frozen=True, slots=True)
class PageLine:
    """One shown segment of one line.

    A slotted dataclass, not a pydantic model: a page holds up to thousands of them and is
    built on every read, so constructing them must cost next to nothing.
    """

    number: int  #: 1-based line number
    char_start: int  #: unit offset of this segment within its line
    text: str  #: display form (see :mod:`s3spill.textview`)
    escaped: bool
    complete: bool  #: the segment reaches the end of its line
    newline: bool  #: a newline byte follows the segment in the artifact

    def raw(self) -> bytes:
        return unescape(self.text, self.escaped) + (b"\n" if self.newline else b"")

    def render(self) -> str:
        return _row(self.number, self.escaped, self.text)


@dataclass(frozen=True, slots=True)
class Page(PlainRecord):
    """A window of lines, with everything needed to continue or to stop.

    A plain record (:mod:`.plain`), built only by :func:`build_page` and the live reader
    from verified chunks: a read process imports no pydantic.
    """

    source_id: str
    offset: int
    char_offset: int
    total_lines: int
    size_bytes: int
    lines: tuple[PageLine, ...]
    eof: bool
    next_offset: int | None
    next_char_offset: int | None
    byte_start: int
    byte_end: int
    max_chars: int

    def raw(self) -> bytes:
        """The exact artifact bytes this page covers (``byte_start`` to ``byte_end``)."""
        return b"".join(line.raw() for line in self.lines)

    def render(self, style: ArgStyle = "call") -> str:
        """The page as text; ``style`` spells the footer's arguments for the reader's
        surface: ``offset=N`` for a tool call, ``--offset N`` for the CLI."""
        rows = [self.header()]
        rows += [_ROW_FORMAT % (line.number, "!" if line.escaped else "", line.text)
                 for line in self.lines]  # PageLine.render of each, in one comprehension (issue 35)
        if any(line.escaped for line in self.lines):
            rows.append(LEGEND)
        rows += (self.footer(style), "")  # "" for the last newline: no copy of the page to add it
        return "\n".join(rows)

    def header(self) -> str:
        span = (self.lines[0].number, self.lines[-1].number) if self.lines else None
        return _header(self.source_id, span, self.total_lines, self.char_offset, self.size_bytes)

    def footer(self, style: ArgStyle = "call") -> str:
        last_newline = self.lines[-1].newline if self.lines else None
        return _footer(style, eof=self.eof, last_newline=last_newline, total_lines=self.total_lines,
                               next_offset=self.next_offset, next_char_offset=self.next_char_offset)


def unrender(page_text: str) -> bytes:
    """Exact bytes behind a rendered page: the rows, with the newlines the footer implies."""
    rows = page_text.split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    footer = rows[-1] if rows else ""
    segments: list[bytes] = []
    for row in rows[1:-1]:
        m = _ROW.match(row)
        if m:
            segments.append(unescape(m.group(3), m.group(2) == "!"))
    open_end = " is cut at char " in footer or "no newline at end" in footer
    out = bytearray()
    for i, seg in enumerate(segments):
        out += seg
        if not (open_end and i == len(segments) - 1):
            out += b"\n"
    return bytes(out)


_FIELDS = ("number", "char_start", "text", "escaped", "complete", "newline")
_SET_NUMBER, _SET_START, _SET_TEXT, _SET_ESCAPED, _SET_COMPLETE, _SET_NEWLINE = (
    getattr(PageLine, name).__set__ for name in _FIELDS)


def _page_lines(lines: list[Line]) -> tuple[PageLine, ...]:
    """``PageLine(*line)`` of each line, each field set through its slot: a frozen dataclass's
    ``__init__`` sets each field with ``object.__setattr__``, which was 2-3 ms of a 2,000-line
    page (issue 35). What is built is the same record (tests/artifacts/test_page_batch.py)."""
    new = object.__new__
    out = []
    for number, start, text, escaped, complete, newline in lines:
        line = new(PageLine)
        _SET_NUMBER(line, number)
        _SET_START(line, start)
        _SET_TEXT(line, text)
        _SET_ESCAPED(line, escaped)
        _SET_COMPLETE(line, complete)
        _SET_NEWLINE(line, newline)
        out.append(line)
    return tuple(out)


def build_page(
    index: PageIndex, fetch: Fetch, source_id: str, *, offset: int = 0,
    limit: int = DEFAULT_LIMIT, char_offset: int = 0, max_chars: int = DEFAULT_MAX_CHARS,
) -> Page:
    """The page :func:`~s3spill.artifacts.pagefill.fill` finds, as a :class:`Page`."""
    lines, eof, nxt, start, nbytes = _fill(index, fetch, source_id, offset=offset, limit=limit,
                                          char_offset=char_offset, max_chars=max_chars)
    return Page(
        source_id=source_id, offset=offset, char_offset=char_offset, total_lines=index.line_count,
        size_bytes=index.size_bytes, lines=_page_lines(lines), eof=eof,
        next_offset=None if nxt is None else nxt[0], next_char_offset=None if nxt is None else nxt[1],
        byte_start=start, byte_end=start + nbytes, max_chars=max_chars,
    )
