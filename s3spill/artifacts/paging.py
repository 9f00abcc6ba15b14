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

import codecs
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from s3spill.artifacts.index import ArtifactIndex, decode_units, encode_units
from s3spill.artifacts.plain import PlainRecord
from s3spill.context.read_args import ArgStyle, spell_args
from s3spill.context.read_limits import DEFAULT_LIMIT as DEFAULT_LIMIT
from s3spill.context.read_limits import DEFAULT_MAX_CHARS as DEFAULT_MAX_CHARS
from s3spill.errors import IntegrityError, InvalidRequest
from s3spill.textview import cost, escape, fit, grapheme_cut, unescape

MIN_BODY_CHARS = 64
#: Below this many characters left, a line that does not fit starts the next page instead.
MIN_CUT_CHARS = 200
LEGEND = ("[lines marked ! contain bytes that are not UTF-8, shown as \\xHH;"
          " on those lines a backslash is shown as \\\\]")
#: Bytes counted at a time by :func:`_nth_newline` before it looks for single newlines.
_COUNT_BLOCK = 16384
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
        return f"{self.number:>6}{'!' if self.escaped else ''}\t{self.text}"


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
        rows = [self.header()] + [line.render() for line in self.lines]
        if any(line.escaped for line in self.lines):
            rows.append(LEGEND)
        rows.append(self.footer(style))
        return "\n".join(rows) + "\n"

    def header(self) -> str:
        if not self.lines:
            return f"[{self.source_id} | empty | {self.size_bytes:,} bytes]"
        first, last = self.lines[0].number, self.lines[-1].number
        start = f", line {first} from char {self.char_offset}" if self.char_offset else ""
        return (f"[{self.source_id} | lines {first}-{last} of {self.total_lines:,}{start}"
                f" | {self.size_bytes:,} bytes]")

    def footer(self, style: ArgStyle = "call") -> str:
        if self.eof:
            if not self.lines:
                return "[EOF: the artifact is empty]"
            tail = "; no newline at end" if not self.lines[-1].newline else ""
            return f"[EOF: line {self.total_lines} is the last line{tail}]"
        if self.next_char_offset:
            return (f"[line {self.next_offset + 1 if self.next_offset is not None else 0} is cut"
                    f" at char {self.next_char_offset}; continue with"
                    f" {spell_args(style, offset=self.next_offset, char_offset=self.next_char_offset)}]")
        return (f"[more lines follow; continue with "
                f"{spell_args(style, offset=self.next_offset, char_offset=0)}]")


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


def frame_reserve(source_id: str, index: ArtifactIndex) -> int:
    """Characters that header, legend and footer can take at most, for this artifact."""
    t, u = max(index.line_count, 1), index.units_before[-1]
    header = (f"[{source_id} | lines {t}-{t} of {t:,}, line {t} from char {u}"
              f" | {index.size_bytes:,} bytes]")
    footers = (f"[line {t} is cut at char {u}; continue with offset={t}, char_offset={u}]",
               f"[line {t} is cut at char {u}; continue with --offset {t} --char-offset {u}]",
               f"[EOF: line {t} is the last line; no newline at end]",
               f"[more lines follow; continue with --offset {t} --char-offset 0]")
    return len(header) + len(LEGEND) + max(map(len, footers)) + 4


def build_page(
    index: ArtifactIndex, fetch: Fetch, source_id: str, *, offset: int = 0,
    limit: int = DEFAULT_LIMIT, char_offset: int = 0, max_chars: int = DEFAULT_MAX_CHARS,
) -> Page:
    body_budget = _body_budget(index, source_id, offset, char_offset, limit, max_chars)
    if index.line_count == 0:
        return _PageFill(index, source_id, offset, char_offset, max_chars, 0, body_budget).page(True, None)
    chunks = _ChunkCache(index, fetch)
    start = _locate(index, chunks, offset, char_offset, source_id)
    fill = _PageFill(index, source_id, offset, char_offset, max_chars, start, body_budget)
    return fill.run(_TextReader(index, chunks, start), limit)


def _body_budget(index: ArtifactIndex, source_id: str, offset: int, char_offset: int, limit: int,
                 max_chars: int) -> int:
    """Characters left for the lines once the frame is paid, after refusing a request that
    no page of this artifact can answer."""
    if offset < 0 or char_offset < 0 or limit < 1:
        raise InvalidRequest("offset and char_offset must be >= 0 and limit >= 1")
    body_budget = max_chars - frame_reserve(source_id, index)
    if body_budget < MIN_BODY_CHARS:
        raise InvalidRequest(f"max_chars={max_chars} is too small for a page of {source_id}")
    total = index.line_count
    if total == 0 and (offset or char_offset):
        raise InvalidRequest(f"{source_id} is empty: only offset=0, char_offset=0 can be read")
    if total and offset >= total:
        raise InvalidRequest(
            f"offset {offset} is beyond the end of {source_id}: it has {total} lines"
            f" (offsets 0-{total - 1})"
        )
    return body_budget


class _PageFill:
    """One page being filled: whole lines while they fit, then at most one cut line."""

    def __init__(self, index: ArtifactIndex, source_id: str, offset: int, char_offset: int,
                 max_chars: int, start: int, body_budget: int) -> None:
        self.index, self.source_id = index, source_id
        self.offset, self.char_offset, self.max_chars = offset, char_offset, max_chars
        self.start, self.body_budget = start, body_budget
        self.lines: list[PageLine] = []
        self.remaining = body_budget
        self.nbytes = 0  # artifact bytes the page covers so far
        self.line_no, self.char_pos = offset, char_offset

    def page(self, eof: bool, nxt: tuple[int, int] | None) -> Page:
        return Page(
            source_id=self.source_id, offset=self.offset, char_offset=self.char_offset,
            total_lines=self.index.line_count, size_bytes=self.index.size_bytes,
            lines=tuple(self.lines), eof=eof,
            next_offset=None if nxt is None else nxt[0],
            next_char_offset=None if nxt is None else nxt[1],
            byte_start=self.start, byte_end=self.start + self.nbytes, max_chars=self.max_chars,
        )

    def run(self, reader: _TextReader, limit: int) -> Page:
        while True:
            text, terminated, newline = reader.peek_line(self.body_budget)
            prefix = max(6, len(str(self.line_no + 1))) + 3
            spent = prefix + cost(text)
            if not (terminated and spent <= self.remaining):
                return self._end(text, prefix, fits_fresh=terminated and spent <= self.body_budget)
            if self._take_whole(reader, text, newline, spent):
                return self.page(True, None)
            if len(self.lines) == limit:
                return self.page(False, (self.line_no, 0))

    def _take_whole(self, reader: _TextReader, text: str, newline: bool, spent: int) -> bool:
        """Add a whole line; True when it was the artifact's last (checked against the index)."""
        shown, escaped = escape(text)
        self.lines.append(PageLine(self.line_no + 1, self.char_pos, shown, escaped, True, newline))
        self.nbytes += (len(text) if text.isascii() else len(encode_units(text))) + newline
        reader.consume(len(text) + (1 if newline else 0))
        self.remaining -= spent
        if self.line_no == self.index.line_count - 1:
            if newline and not reader.at_end():
                raise IntegrityError(f"{self.source_id}: content continues past its last line")
            return True
        if not newline:
            raise IntegrityError(f"{self.source_id}: content ends before its line count")
        self.line_no, self.char_pos = self.line_no + 1, 0
        return False

    def _end(self, text: str, prefix: int, *, fits_fresh: bool) -> Page:
        """A line that does not fit: the next page starts with it when it would fit there (or
        too little room is left to cut it usefully), else as much of it as fits is shown."""
        if self.lines and (fits_fresh or self.remaining - prefix < MIN_CUT_CHARS):
            return self.page(False, (self.line_no, self.char_pos))
        k = max(1, grapheme_cut(text, fit(text, self.remaining - prefix)))
        shown, escaped = escape(text[:k])
        self.lines.append(PageLine(self.line_no + 1, self.char_pos, shown, escaped, False, False))
        self.nbytes += len(encode_units(text[:k]))
        return self.page(False, (self.line_no, self.char_pos + k))


class _ChunkCache:
    """The verified chunks fetched for one page, each fetched at most once."""

    def __init__(self, index: ArtifactIndex, fetch: Fetch) -> None:
        self.index = index
        self._fetch = fetch
        self._got: dict[int, bytes] = {}

    def __call__(self, k: int) -> bytes:
        if k not in self._got:
            self._got[k] = self._fetch(k)
        return self._got[k]


def _nth_newline(data: bytes, n: int) -> int:
    """Position of the ``n``-th (1-based) newline in ``data`` (the last one, or -1, if it has
    fewer). Counted a block at a time in C, then found in the block that holds it: no list
    of the lines before it is built (a split was half of a fresh page's line walk)."""
    if n <= 0:
        return -1
    start, size = 0, len(data)
    while start < size:
        end = min(start + _COUNT_BLOCK, size)
        found = data.count(b"\n", start, end)
        if found >= n:
            break
        n -= found
        start = end
    else:
        return data.rfind(b"\n")
    pos = start - 1
    for _ in range(n):
        pos = data.find(b"\n", pos + 1)
    return pos


def _locate(index: ArtifactIndex, chunk: _ChunkCache, offset: int, char_offset: int,
            source_id: str) -> int:
    """Byte position where the page starts (always a unit boundary)."""
    c = index.chunk_size
    nb, ub = index.newlines_before, index.units_before
    s0: int | None = 0
    u0 = 0
    j = 0
    if offset > 0:
        j = bisect_left(nb, offset) - 1  # chunk holding the offset-th newline
        spans = nb[j + 1] == offset  # ...and it is that chunk's last newline
        if char_offset and spans:
            s0, u0 = None, ub[j] + index.chunk_lastline_units[j]
        else:
            data = chunk(j)
            s0 = j * c + _nth_newline(data, offset - nb[j]) + 1
            if char_offset:
                u0 = ub[j] + len(decode_units(data[index.chunk_carry[j] : s0 - j * c]))
    if not char_offset:
        assert s0 is not None
        return s0
    u = u0 + char_offset
    beyond = InvalidRequest(f"char_offset {char_offset} is beyond the end of line {offset + 1}"
                            f" of {source_id}")
    if u >= ub[-1]:
        raise beyond
    t = bisect_right(ub, u) - 1
    data = chunk(t)
    carry = index.chunk_carry[t]
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    text = decoder.decode(data[carry:], final=t == index.chunk_count - 1)
    r = u - ub[t]
    head = encode_units(text[:r]) if r <= len(text) else encode_units(text)
    p = t * c + carry + len(head) + max(0, r - len(text))
    local = p - t * c
    if nb[t] + data[:local].count(b"\n") != offset or data[local : local + 1] == b"\n":
        raise beyond
    return p


class _TextReader:
    """Decoded text from a unit boundary onward, pulled one verified chunk at a time."""

    def __init__(self, index: ArtifactIndex, chunk: _ChunkCache, start: int) -> None:
        self._pieces = self._decode(index, chunk, start)
        self._buf = ""
        self._pos = 0
        self._eof = False

    @staticmethod
    def _decode(index: ArtifactIndex, chunk: _ChunkCache, start: int) -> Iterator[str]:
        c = index.chunk_size
        decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        k = start // c
        data = chunk(k)[start - k * c :]
        while True:
            k += 1
            last = k >= index.chunk_count
            yield decoder.decode(data, final=last)
            if last:
                return
            data = chunk(k)

    def _more(self) -> bool:
        for piece in self._pieces:
            self._buf = self._buf[self._pos :] + piece
            self._pos = 0
            return True
        self._eof = True
        return False

    def peek_line(self, scan_limit: int) -> tuple[str, bool, bool]:
        """The current line's text: (text, terminated, followed by newline).

        Stops scanning an unterminated line once its cost exceeds ``scan_limit``.
        """
        while True:
            j = self._buf.find("\n", self._pos)
            if j >= 0:
                return self._buf[self._pos : j], True, True
            rest = self._buf[self._pos :]
            if self._eof:
                return rest, True, False
            if cost(rest) > scan_limit:
                return rest, False, False
            self._more()

    def consume(self, n: int) -> None:
        self._pos += n

    def at_end(self) -> bool:
        return self._pos >= len(self._buf) and (self._eof or not self._more_nonempty())

    def _more_nonempty(self) -> bool:
        while self._more():
            if self._pos < len(self._buf):
                return True
        return False
