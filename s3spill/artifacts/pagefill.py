"""The page algorithm of :mod:`.paging`, on plain tuples: locate, decode, fill to the budget.

Why apart from :mod:`.paging`: the CLI's fast read (:mod:`s3spill.cli.read_fast`) builds
a page in a process of its own, and the records of :mod:`.paging` are dataclasses, whose
import (``dataclasses`` pulls in ``inspect``) was a third of what such a process spent
over the interpreter's start (issue 35). Both build every page with :func:`fill` and
render it with :func:`header`, :func:`row` and :func:`footer`, so the fast path and the
library print the same bytes by construction. This module imports only the standard
library's ``codecs``, and :mod:`s3spill.textview` and :mod:`s3spill.errors`.

A line of a page is a tuple ``(number, char_start, text, escaped, complete, newline)``:
the fields of :class:`~s3spill.artifacts.paging.PageLine`, in its order.
"""

from __future__ import annotations

import codecs

from s3spill.context.read_args import spell_args
from s3spill.context.read_limits import DEFAULT_LIMIT, DEFAULT_MAX_CHARS
from s3spill.textview import cost, escape, fit, grapheme_cut, has_bad_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Protocol, TypeAlias

    from s3spill.context.read_args import ArgStyle
    from s3spill.errors import IntegrityError, InvalidRequest

    class PageIndex(Protocol):
        """What a page needs of an index (an :class:`~s3spill.artifacts.index.ArtifactIndex`
        has it all; the fast read builds a smaller one from the same checked fields)."""

        @property
        def line_count(self) -> int: ...
        @property
        def size_bytes(self) -> int: ...
        @property
        def chunk_size(self) -> int: ...
        @property
        def chunk_count(self) -> int: ...
        @property
        def chunk_carry(self) -> tuple[int, ...]: ...
        @property
        def chunk_lastline_units(self) -> tuple[int, ...]: ...
        @property
        def newlines_before(self) -> tuple[int, ...]: ...
        @property
        def units_before(self) -> tuple[int, ...]: ...

    Fetch: TypeAlias = Callable[[int], bytes]
    #: (number, char_start, text, escaped, complete, newline)
    Line: TypeAlias = tuple[int, int, str, bool, bool, bool]
    #: (lines, eof, (next offset, next char offset) or None, byte start, bytes covered)
    Filled: TypeAlias = tuple[list[Line], bool, "tuple[int, int] | None", int, int]

__all__ = ["LEGEND", "MIN_BODY_CHARS", "MIN_CUT_CHARS", "ROW", "fill", "footer", "frame_reserve", "header",
           "row", "rows"]

MIN_BODY_CHARS = 64
#: Below this many characters left, a line that does not fit starts the next page instead.
MIN_CUT_CHARS = 200
LEGEND = ("[lines marked ! contain bytes that are not UTF-8, shown as \\xHH;"
          " on those lines a backslash is shown as \\\\]")
#: Bytes counted at a time by :func:`_nth_newline` before it looks for single newlines.
_COUNT_BLOCK = 16384
#: Bytes decoded at a time for a page (the incremental decoder joins the pieces exactly).
_DECODE_PIECE = 64 * 1024
#: Lines still wanted for :meth:`_PageFill._take_many` to take them at once (fewer: one by one).
_BATCH_MIN = 8


def _invalid(message: str) -> InvalidRequest:
    """A refused page (:mod:`s3spill.errors` loads only then: ~0.5 ms of a fresh fast read)."""
    from s3spill.errors import InvalidRequest

    return InvalidRequest(message)


def _damaged(message: str) -> IntegrityError:
    """Stored text that disagrees with its index (the errors load only then, as for :func:`_invalid`)."""
    from s3spill.errors import IntegrityError

    return IntegrityError(message)


def decode_units(data: bytes) -> str:
    """Decode bytes that start and end on unit boundaries."""
    return data.decode("utf-8", "surrogateescape")


def encode_units(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


#: A rendered row: the line's number right-aligned in 6, ``!`` when escaped, a tab, its text
#: (``%`` formats a row in ~2/3 of an f-string's time; :func:`row`, :func:`rows` and
#: ``Page.render`` all spell it with this).
ROW = "%6d%s\t%s"


def row(number: int, escaped: bool, text: str) -> str:
    """One line of a rendered page: its number (``!`` when escaped), a tab, its text."""
    return ROW % (number, "!" if escaped else "", text)


def rows(lines: list[Line]) -> list[str]:
    """:func:`row` of each line, in one comprehension (``%`` formats a row in ~2/3 of an
    f-string's time, and the call per line was a tenth of a 2,000-line page; issue 35)."""
    return [ROW % (n, "!" if e else "", t) for n, _, t, e, _, _ in lines]


def header(source_id: str, span: tuple[int, int] | None, total_lines: int, char_offset: int,
           size_bytes: int) -> str:
    """A page's first line; ``span``: the first and last line numbers shown (None: none)."""
    if span is None:
        return f"[{source_id} | empty | {size_bytes:,} bytes]"
    first, last = span
    start = f", line {first} from char {char_offset}" if char_offset else ""
    return (f"[{source_id} | lines {first}-{last} of {total_lines:,}{start}"
            f" | {size_bytes:,} bytes]")


def footer(style: ArgStyle, *, eof: bool, last_newline: bool | None, total_lines: int,
           next_offset: int | None, next_char_offset: int | None) -> str:
    """A page's last line: EOF, or how to continue; ``last_newline``: whether a newline
    follows the last line shown (None: no line shown)."""
    if eof:
        if last_newline is None:
            return "[EOF: the artifact is empty]"
        tail = "; no newline at end" if not last_newline else ""
        return f"[EOF: line {total_lines} is the last line{tail}]"
    if next_char_offset:
        return (f"[line {next_offset + 1 if next_offset is not None else 0} is cut"
                f" at char {next_char_offset}; continue with"
                f" {spell_args(style, offset=next_offset, char_offset=next_char_offset)}]")
    return (f"[more lines follow; continue with "
            f"{spell_args(style, offset=next_offset, char_offset=0)}]")


def fill(index: PageIndex, fetch: Fetch, source_id: str, *, offset: int = 0,
         limit: int = DEFAULT_LIMIT, char_offset: int = 0, max_chars: int = DEFAULT_MAX_CHARS) -> Filled:
    """The page at ``offset``/``char_offset``: whole lines while they fit, then at most one cut
    line (``fetch(k)``: chunk ``k``, already verified); InvalidRequest for a page no page of
    this artifact can answer."""
    body_budget = _body_budget(index, source_id, offset, char_offset, limit, max_chars)
    if index.line_count == 0:
        return _PageFill(index, source_id, offset, char_offset, max_chars, 0, body_budget).page(True, None)
    chunks = _ChunkCache(index, fetch)
    start = _locate(index, chunks, offset, char_offset, source_id)
    page = _PageFill(index, source_id, offset, char_offset, max_chars, start, body_budget)
    return page.run(_TextReader(index, chunks, start), limit)


def frame_reserve(source_id: str, index: PageIndex) -> int:
    """Characters that header, legend and footer can take at most, for this artifact."""
    t, u = max(index.line_count, 1), index.units_before[-1]
    header = (f"[{source_id} | lines {t}-{t} of {t:,}, line {t} from char {u}"
              f" | {index.size_bytes:,} bytes]")
    footers = (f"[line {t} is cut at char {u}; continue with offset={t}, char_offset={u}]",
               f"[line {t} is cut at char {u}; continue with --offset {t} --char-offset {u}]",
               f"[EOF: line {t} is the last line; no newline at end]",
               f"[more lines follow; continue with --offset {t} --char-offset 0]")
    return len(header) + len(LEGEND) + max(map(len, footers)) + 4


def _body_budget(index: PageIndex, source_id: str, offset: int, char_offset: int, limit: int,
                 max_chars: int) -> int:
    """Characters left for the lines once the frame is paid, after refusing a request that
    no page of this artifact can answer."""
    if offset < 0 or char_offset < 0 or limit < 1:
        raise _invalid("offset and char_offset must be >= 0 and limit >= 1")
    body_budget = max_chars - frame_reserve(source_id, index)
    if body_budget < MIN_BODY_CHARS:
        raise _invalid(f"max_chars={max_chars} is too small for a page of {source_id}")
    total = index.line_count
    if total == 0 and (offset or char_offset):
        raise _invalid(f"{source_id} is empty: only offset=0, char_offset=0 can be read")
    if total and offset >= total:
        raise _invalid(
            f"offset {offset} is beyond the end of {source_id}: it has {total} lines"
            f" (offsets 0-{total - 1})"
        )
    return body_budget


class _PageFill:
    """One page being filled: whole lines while they fit, then at most one cut line."""

    def __init__(self, index: PageIndex, source_id: str, offset: int, char_offset: int,
                 max_chars: int, start: int, body_budget: int) -> None:
        self.index, self.source_id = index, source_id
        self.offset, self.char_offset, self.max_chars = offset, char_offset, max_chars
        self.start, self.body_budget = start, body_budget
        self.lines: list[Line] = []
        self.remaining = body_budget
        self.nbytes = 0  # artifact bytes the page covers so far
        self.line_no, self.char_pos = offset, char_offset

    def page(self, eof: bool, nxt: tuple[int, int] | None) -> Filled:
        return self.lines, eof, nxt, self.start, self.nbytes

    def run(self, reader: _TextReader, limit: int) -> Filled:
        while True:
            if limit - len(self.lines) >= _BATCH_MIN and self._take_many(reader, limit):
                return self.page(False, (self.line_no, 0))
            text, terminated, newline = reader.peek_line(self.body_budget)
            prefix = max(6, len(str(self.line_no + 1))) + 3
            spent = prefix + cost(text)
            if not (terminated and spent <= self.remaining):
                return self._end(text, prefix, fits_fresh=terminated and spent <= self.body_budget)
            if self._take_whole(reader, text, newline, spent):
                return self.page(True, None)
            if len(self.lines) == limit:
                return self.page(False, (self.line_no, 0))

    def _take_many(self, reader: _TextReader, limit: int) -> bool:
        """Take at once the whole lines the reader holds that :meth:`run` would take one by one:
        each newline-terminated, fitting the budget left, up to ``limit`` and short of the
        artifact's last line (left to :meth:`_take_whole`, which checks the end). True when
        the page is full. One split, one cost and one byte count for the lot: the per-line
        walk was most of a 2,000-line page (issue 35)."""
        buf, pos = reader.buffered()
        end = buf.rfind("\n", pos, pos + self.remaining + 1)  # a line past that cannot fit
        room = min(limit - len(self.lines), self.index.line_count - 1 - self.line_no)
        if end < 0 or room <= 0:
            return False
        texts = buf[pos:end].split("\n", room)[:room]
        region = buf[pos:end] if len(texts) < room else "\n".join(texts)
        first = self.line_no + 1
        plain = region.isascii() or not has_bad_bytes(region)
        if plain and "\\" not in region:
            costs = list(map(len, texts))
        elif plain:
            costs = [len(t) + t.count("\\") for t in texts]
        else:
            costs = [cost(t) for t in texts]
        wide = first + len(texts) > 1_000_000  # numbers of 7 digits or more: a wider prefix
        remaining, k = self.remaining, 0
        for c in costs:
            spent = c + (max(6, len(str(first + k))) + 3 if wide else 9)
            if spent > remaining:
                break
            remaining -= spent
            k += 1
        if not k:
            return False
        taken = texts[:k]
        numbers = range(first, first + k)
        if plain:
            new = [(n, 0, t, False, True, True) for n, t in zip(numbers, taken, strict=True)]
        else:
            new = [(n, 0, *escape(t), True, True) for n, t in zip(numbers, taken, strict=True)]
        if self.char_pos:
            new[0] = (first, self.char_pos, *new[0][2:])
        self.lines += new
        used = sum(map(len, taken)) + k  # characters, the newlines included
        self.nbytes += used if region.isascii() else len(encode_units(buf[pos : pos + used]))
        reader.consume(used)
        self.remaining = remaining
        self.line_no, self.char_pos = self.line_no + k, 0
        return len(self.lines) == limit

    def _take_whole(self, reader: _TextReader, text: str, newline: bool, spent: int) -> bool:
        """Add a whole line; True when it was the artifact's last (checked against the index)."""
        shown, escaped = escape(text)
        self.lines.append((self.line_no + 1, self.char_pos, shown, escaped, True, newline))
        self.nbytes += (len(text) if text.isascii() else len(encode_units(text))) + newline
        reader.consume(len(text) + (1 if newline else 0))
        self.remaining -= spent
        if self.line_no == self.index.line_count - 1:
            if newline and not reader.at_end():
                raise _damaged(f"{self.source_id}: content continues past its last line")
            return True
        if not newline:
            raise _damaged(f"{self.source_id}: content ends before its line count")
        self.line_no, self.char_pos = self.line_no + 1, 0
        return False

    def _end(self, text: str, prefix: int, *, fits_fresh: bool) -> Filled:
        """A line that does not fit: the next page starts with it when it would fit there (or
        too little room is left to cut it usefully), else as much of it as fits is shown."""
        if self.lines and (fits_fresh or self.remaining - prefix < MIN_CUT_CHARS):
            return self.page(False, (self.line_no, self.char_pos))
        k = max(1, grapheme_cut(text, fit(text, self.remaining - prefix)))
        shown, escaped = escape(text[:k])
        self.lines.append((self.line_no + 1, self.char_pos, shown, escaped, False, False))
        self.nbytes += len(encode_units(text[:k]))
        return self.page(False, (self.line_no, self.char_pos + k))


class _ChunkCache:
    """The verified chunks fetched for one page, each fetched at most once."""

    def __init__(self, index: PageIndex, fetch: Fetch) -> None:
        self.index = index
        self._fetch = fetch
        self._got: dict[int, bytes] = {}

    def __call__(self, k: int) -> bytes:
        if k not in self._got:
            self._got[k] = self._fetch(k)
        return self._got[k]


def _bisect(table: tuple[int, ...], x: int, *, right: bool) -> int:
    """:func:`bisect.bisect_left` (``right``: ``bisect_right``) of a sorted table: one or two
    searches a page, where ``bisect`` and its C module are ~1 ms of a fresh read's imports."""
    lo, hi = 0, len(table)
    while lo < hi:
        mid = (lo + hi) // 2
        if table[mid] < x or (right and table[mid] == x):
            lo = mid + 1
        else:
            hi = mid
    return lo


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


def _locate(index: PageIndex, chunk: _ChunkCache, offset: int, char_offset: int,
            source_id: str) -> int:
    """Byte position where the page starts (always a unit boundary)."""
    c = index.chunk_size
    nb, ub = index.newlines_before, index.units_before
    s0: int | None = 0
    u0 = 0
    j = 0
    if offset > 0:
        j = _bisect(nb, offset, right=False) - 1  # chunk holding the offset-th newline
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
    beyond = _invalid(f"char_offset {char_offset} is beyond the end of line {offset + 1}"
                            f" of {source_id}")
    if u >= ub[-1]:
        raise beyond
    t = _bisect(ub, u, right=True) - 1
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

    def __init__(self, index: PageIndex, chunk: _ChunkCache, start: int) -> None:
        self._pieces = self._decode(index, chunk, start)
        self._buf = ""
        self._pos = 0
        self._eof = False

    @staticmethod
    def _decode(index: PageIndex, chunk: _ChunkCache, start: int) -> Iterator[str]:
        """The text from ``start`` on, :data:`_DECODE_PIECE` bytes at a time: a page takes
        a few dozen KB of a 1 MiB chunk, and decoding the rest was a third of a fresh page."""
        c = index.chunk_size
        decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        k = start // c
        data, pos = chunk(k), start - k * c
        while True:
            last = k + 1 >= index.chunk_count
            while len(data) - pos > _DECODE_PIECE:
                yield decoder.decode(data[pos : pos + _DECODE_PIECE])
                pos += _DECODE_PIECE
            yield decoder.decode(data[pos:], final=last)
            if last:
                return
            k += 1
            data, pos = chunk(k), 0

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

    def buffered(self) -> tuple[str, int]:
        """The decoded text held and the position of the current line in it."""
        return self._buf, self._pos

    def consume(self, n: int) -> None:
        self._pos += n

    def at_end(self) -> bool:
        return self._pos >= len(self._buf) and (self._eof or not self._more_nonempty())

    def _more_nonempty(self) -> bool:
        while self._more():
            if self._pos < len(self._buf):
                return True
        return False
