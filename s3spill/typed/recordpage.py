"""One page of a CSV/TSV artifact by *record*: the header on top, records whole, exact counts.

Why not lines: a quoted field may hold newlines, so a line page can end inside a record
and a record's number is not its line's. A record page starts at a record (located through
the index's record table, one chunk scanned), shows each record whole — its embedded
newlines as continuation rows marked ``+`` — repeats the header (record 1) on every page
that does not start with it, and says which ``record_offset`` continues. Bytes that are not
UTF-8 are shown as on line pages (``!`` rows, ``\\xHH``; :mod:`s3spill.textview`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from s3spill.context.read_args import ArgStyle, spell_args
from s3spill.context.read_limits import DEFAULT_RECORDS as DEFAULT_RECORDS
from s3spill.errors import InvalidRequest
from s3spill.textview import escape, unescape
from s3spill.typed.chunked import ChunkedOutput, Fetch
from s3spill.typed.record_ends import record_end_positions

_HEADER_LINE = len("[header (record 1), repeated:]") + 1



class RecordRow(BaseModel):
    """One record as shown: its 1-based number, its lines (display form), whether it is cut."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    number: int
    lines: tuple[str, ...]
    escaped: bool
    cut: bool
    #: A cut record: the line (0-based, as line pages count) and the char in it where the
    #: part not shown starts, so a line read continues exactly there.
    rest_offset: int | None = None
    rest_char_offset: int | None = None

    def render(self) -> list[str]:
        mark = "!" if self.escaped else ""
        first = f"{self.number:>6}{mark}\t{self.lines[0]}"
        return [first, *(f"{'+':>6}{mark}\t{line}" for line in self.lines[1:])]

    def cut_note(self, style: ArgStyle) -> str:
        """The line under a cut record: where its rest is read (a line read, char by char)."""
        where = spell_args(style, offset=self.rest_offset, char_offset=self.rest_char_offset)
        return f"[this record is longer than a page and is cut; read the rest with {where}]"

    def cost(self) -> int:
        """Characters the record takes on a page, its newlines included."""
        return sum(len(line) + 1 for line in self.render())

    def raw(self) -> bytes:
        """The record's bytes without its terminator (a cut record: the part shown)."""
        return b"\n".join(unescape(line, self.escaped) for line in self.lines)


class RecordPage(BaseModel):
    """A window of records, the header, and where to continue."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source_id: str
    kind: str
    record_offset: int
    total_records: int
    header: RecordRow | None
    rows: tuple[RecordRow, ...]
    eof: bool
    next_record_offset: int | None
    size_bytes: int

    def render(self, style: ArgStyle = "call") -> str:
        """The records; ``style`` spells the footer's arguments for the reader's surface."""
        label = self.kind.upper()
        if self.rows:
            span = f"records {self.rows[0].number:,}-{self.rows[-1].number:,} of {self.total_records:,}"
        else:
            span = "no records"
        out = [f"[{self.source_id} | {span} | {label}, {self.size_bytes:,} bytes]"]
        if self.header is not None:
            out += ["[header (record 1), repeated:]", *self.header.render()]
        for row in self.rows:
            out += row.render()
            if row.cut:
                out.append(row.cut_note(style))
        if self.eof:
            out.append(f"[EOF: record {self.total_records:,} is the last record]")
        else:
            out.append("[more records follow; continue with "
                       f"{spell_args(style, record_offset=self.next_record_offset)}]")
        return "\n".join(out) + "\n"


def total_records(index: ChunkedOutput) -> int:
    ends = index.records_before[-1] if index.chunk_records else 0
    return ends + (0 if index.size_bytes == 0 or index.ends_with_newline else 1)


def record_at(index: ChunkedOutput, fetch: Fetch, byte: int) -> int:
    """The 1-based number of the record holding byte ``byte`` (one chunk is scanned)."""
    k = min(byte // index.chunk_size, index.chunk_count - 1)
    local = byte - k * index.chunk_size
    ends = record_end_positions(fetch(k)[:local], index.chunk_quoted[k])
    return index.records_before[k] + len(ends) + 1


def _record_start(index: ChunkedOutput, fetch: Fetch, skip: int) -> int:
    """Byte where record ``skip`` (0-based) starts: just after the ``skip``-th record end."""
    if skip == 0:
        return 0
    before = index.records_before
    k = bisect_left(before, skip) - 1  # the chunk holding the skip-th record end
    ends = record_end_positions(fetch(k), index.chunk_quoted[k])
    return k * index.chunk_size + ends[skip - before[k] - 1]


def _row(number: int, raw: bytes, budget: int, cut: bool, first_line: int = 0) -> RecordRow:
    """Record ``number`` as shown; cut to at most ``budget`` characters of page (prefixes,
    escapes and newlines counted), and then told where its rest starts."""
    body = raw[:-1] if raw.endswith(b"\n") else raw
    if body.endswith(b"\r"):
        body = body[:-1]
    text = body.decode("utf-8", "surrogateescape")
    keep = len(text)
    while True:
        row = _shown(number, text[:keep], cut or keep < len(text))
        if row.cost() <= budget or keep <= 1:
            break
        keep = max(1, keep - (row.cost() - budget))  # escapes shrink by more than one each
    if not row.cut:
        return row
    shown = text[:keep]
    start = shown.rfind("\n") + 1
    return row.model_copy(update={"rest_offset": first_line + shown.count("\n"),
                                  "rest_char_offset": keep - start})


def _shown(number: int, text: str, cut: bool) -> RecordRow:
    pieces = [escape(line) for line in text.split("\n")]
    escaped = any(flag for _, flag in pieces)
    # One mark per record: when any line is escaped, every line's backslashes are doubled.
    lines = tuple(shown if flag or not escaped else shown.replace("\\", "\\\\")
                  for shown, flag in pieces)
    return RecordRow(number=number, lines=lines, escaped=escaped, cut=cut)


def _records_from(index: ChunkedOutput, fetch: Fetch, start: int, limit: int,
                  max_bytes: int) -> tuple[list[bytes], bool]:
    """Up to ``limit`` raw records from byte ``start`` (each with its terminator), and whether
    the last one was cut at ``max_bytes`` (a record longer than a page)."""
    c = index.chunk_size
    k = start // c
    buf = bytearray(fetch(k)[start - k * c :])
    out: list[bytes] = []
    while True:
        ends = record_end_positions(bytes(buf), False)
        taken = 0
        for end in ends:
            out.append(bytes(buf[taken:end]))
            taken = end
            if len(out) == limit:
                return out, False
        del buf[:taken]
        k += 1
        if k >= index.chunk_count:
            if buf:
                out.append(bytes(buf))
            return out, False
        if len(buf) > max_bytes:
            out.append(bytes(buf[:max_bytes]))
            return out, True
        buf += fetch(k)


def _frame(source_id: str, index: ChunkedOutput, total: int) -> int:
    """The most characters a page's frame can take: its first line and its last (every
    number at its widest, either argument style), newlines included."""
    widest = f"{total:,}"
    first = f"[{source_id} | records {widest}-{widest} of {widest} | {index.output_kind.upper()}, "\
            f"{index.size_bytes:,} bytes]"
    last = max(len(f"[EOF: record {widest} is the last record]"),
               *(len(f"[more records follow; continue with {spell_args(style, record_offset=total)}]")
                 for style in ("call", "cli")))
    return len(first) + 1 + last + 1


def _cut_note_chars(index: ChunkedOutput) -> int:
    """The most characters the note under a cut record can take (both styles, widest numbers)."""
    widest = max(index.line_count, index.size_bytes)
    return max(len(RecordRow(number=1, lines=("",), escaped=False, cut=True, rest_offset=widest,
                             rest_char_offset=widest).cut_note(style)) for style in ("call", "cli")) + 1


def _line_of(index: ChunkedOutput, fetch: Fetch, byte: int) -> int:
    """The 0-based line holding byte ``byte`` (the newlines before it; one chunk is scanned)."""
    if byte >= index.size_bytes:
        return index.line_count
    k = byte // index.chunk_size
    return index.newlines_before[k] + fetch(k)[: byte - k * index.chunk_size].count(b"\n")


def _fit(raws: list[bytes], record_offset: int, cut_last: bool, budget: int,
         first_line: Callable[[], int]) -> list[RecordRow]:
    """The records that fit whole in ``budget`` (the cut note's room already taken off); a
    first record larger than a page is cut there and says where its rest starts."""
    rows: list[RecordRow] = []
    for i, raw in enumerate(raws):
        number = record_offset + i + 1
        row = _row(number, raw, budget, cut_last and i == len(raws) - 1)
        if rows and row.cut:
            break  # starts the next page, whole (or cut there if it is larger than a page)
        if row.cut:
            return [_row(number, raw, budget, True, first_line())]
        rows.append(row)
        budget -= row.cost()
    return rows


def build_record_page(index: ChunkedOutput, fetch: Fetch, source_id: str, *, record_offset: int = 0,
                      limit: int = DEFAULT_RECORDS, max_chars: int = 40_000) -> RecordPage:
    """Records from ``record_offset`` (records to skip; the header is record 0 to skip).

    The page, header and footer included, is at most ``max_chars`` characters: each row is
    measured as rendered, and the frame is reserved at its widest.
    """
    if index.output_kind not in ("csv", "tsv") or not index.chunk_records:
        raise InvalidRequest(f"{source_id} is not a CSV/TSV artifact: read it by line (offset=)")
    if record_offset < 0 or limit < 1:
        raise InvalidRequest("record_offset must be >= 0 and limit >= 1")
    total = total_records(index)
    if record_offset >= max(total, 1):
        raise InvalidRequest(f"record_offset {record_offset} is beyond the end of {source_id}: it has"
                             f" {total} records (record_offset 0-{max(total - 1, 0)})")
    cut_note = _cut_note_chars(index)
    budget = max_chars - _frame(source_id, index, total)
    if budget - cut_note < 120:
        raise InvalidRequest(f"max_chars={max_chars} is too small for a record page")
    header = None
    if record_offset > 0:
        first, cut = _records_from(index, fetch, 0, 1, budget // 2)
        header = _row(1, first[0], budget // 2 - _HEADER_LINE, cut)
        budget -= _HEADER_LINE + header.cost()
    start = _record_start(index, fetch, record_offset)
    raws, cut_last = _records_from(index, fetch, start, limit, max(budget, 1) * 4)
    rows = _fit(raws, record_offset, cut_last, budget - cut_note,
                lambda: _line_of(index, fetch, start))
    end = record_offset + len(rows)
    eof = end >= total and not (rows and rows[-1].cut)
    return RecordPage(source_id=source_id, kind=index.output_kind, record_offset=record_offset,
                      total_records=total, header=header, rows=tuple(rows), eof=eof,
                      next_record_offset=None if eof else end,
                      size_bytes=index.size_bytes)
