"""A binary artifact read as a hexdump, by byte offset: never a raw byte on anyone's screen.

Why a hexdump and not lines: a binary output has no lines worth counting (random bytes
hold a "newline" every 256 bytes) and its bytes, printed, are control sequences that move a
terminal's cursor or end up as U+FFFD in a model's context. Each row shows 16 bytes as
``xxd``/``hexdump -C`` do — the offset, the bytes in hex, and the printable ASCII among
them (everything else is ``.``) — so a row is plain ASCII whatever the content, and
:func:`unhexdump` gives back the exact bytes of a rendered page.

Like a text page, a byte page fetches only the verified chunks it covers, never exceeds
``max_chars`` (header and footer included), and says where to continue.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from s3spill.context.read_args import ArgStyle, spell_args
from s3spill.context.read_limits import DEFAULT_BYTES as DEFAULT_BYTES
from s3spill.context.read_limits import MAX_BYTES as MAX_BYTES
from s3spill.errors import InvalidRequest
from s3spill.typed.chunked import ChunkedOutput, Fetch

ROW_BYTES = 16
_PRINTABLE = bytes(b if 0x20 <= b < 0x7F else 0x2E for b in range(256))
_ROW_START = re.compile(r"^[0-9a-f]{8,}  ")



def hexdump_row(data: bytes, offset: int) -> str:
    """One row: offset, up to 16 bytes in hex (two groups of 8), their ASCII."""
    cells = [f"{b:02x}" for b in data[:ROW_BYTES]]
    left, right = " ".join(cells[:8]), " ".join(cells[8:])
    text = data[:ROW_BYTES].translate(_PRINTABLE).decode("ascii")
    return f"{offset:08x}  {left:<23}  {right:<23}  |{text}|"


def hexdump(data: bytes, offset: int = 0) -> list[str]:
    """Rows for ``data``, which starts at byte ``offset`` of its artifact."""
    return [hexdump_row(data[i : i + ROW_BYTES], offset + i) for i in range(0, len(data), ROW_BYTES)]


def unhexdump(text: str) -> bytes:
    """The exact bytes behind the rows of a rendered hexdump (other lines are ignored)."""
    out = bytearray()
    for line in text.splitlines():
        if not _ROW_START.match(line) or "|" not in line:
            continue
        hexpart = line.split("  ", 1)[1][:48]  # two groups of 8 cells: fixed width
        out += bytes.fromhex(hexpart.replace(" ", ""))
    return bytes(out)


class BytePage(BaseModel):
    """A window of bytes of a binary artifact, with where to continue."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_bytes="hex")

    source_id: str
    byte_offset: int
    size_bytes: int
    description: str
    data: bytes
    eof: bool
    next_byte_offset: int | None
    max_chars: int

    def header(self) -> str:
        end = self.byte_offset + len(self.data)
        span = f"bytes {self.byte_offset:,}-{max(end - 1, self.byte_offset):,}" if self.data else "no bytes"
        return f"[{self.source_id} | {span} of {self.size_bytes:,} | {self.description}]"

    def footer(self, style: ArgStyle = "call") -> str:
        if self.eof:
            if not self.size_bytes:
                return "[EOF: the artifact is empty]"
            return f"[EOF: byte {self.size_bytes - 1:,} is the last byte]"
        return (f"[more bytes follow; continue with "
                f"{spell_args(style, byte_offset=self.next_byte_offset)}]")

    def render(self, style: ArgStyle = "call") -> str:
        """The hexdump; ``style`` spells the footer's arguments for the reader's surface."""
        rows = [self.header(), *hexdump(self.data, self.byte_offset), self.footer(style)]
        return "\n".join(rows) + "\n"


def _reserve(source_id: str, index: ChunkedOutput, description: str) -> int:
    n = index.size_bytes
    header = f"[{source_id} | bytes {n:,}-{n:,} of {n:,} | {description}]"
    footer = f"[more bytes follow; continue with byte_offset={n}]"
    return len(header) + len(footer) + 3


def build_byte_page(index: ChunkedOutput, fetch: Fetch, source_id: str, *, byte_offset: int = 0,
                    nbytes: int = DEFAULT_BYTES, max_chars: int = 40_000) -> BytePage:
    """The bytes ``[byte_offset, byte_offset + nbytes)`` (fewer if the budget says so), verified."""
    if byte_offset < 0 or not 1 <= nbytes <= MAX_BYTES:
        raise InvalidRequest(f"byte_offset must be >= 0 and bytes 1-{MAX_BYTES}")
    size = index.size_bytes
    if byte_offset > size or (byte_offset == size and size):
        raise InvalidRequest(f"byte_offset {byte_offset} is beyond the end of {source_id}: it has"
                             f" {size} bytes (offsets 0-{max(size - 1, 0)})")
    description = index.output_description or ("binary data" if index.output_kind == "binary"
                                               else f"{index.output_kind} shown as bytes")
    row_chars = len(hexdump_row(bytes(ROW_BYTES), index.size_bytes)) + 1
    rows = (max_chars - _reserve(source_id, index, description)) // row_chars
    if rows < 1:
        raise InvalidRequest(f"max_chars={max_chars} is too small for a byte page of {source_id}")
    want = min(nbytes, rows * ROW_BYTES, size - byte_offset)
    data = bytearray()
    c = index.chunk_size
    pos = byte_offset
    while len(data) < want:
        k = pos // c
        chunk = fetch(k)
        local = pos - k * c
        piece = chunk[local : local + want - len(data)]
        data += piece
        pos += len(piece)
    end = byte_offset + len(data)
    return BytePage(source_id=source_id, byte_offset=byte_offset, size_bytes=size,
                    description=description, data=bytes(data), eof=end >= size,
                    next_byte_offset=None if end >= size else end, max_chars=max_chars)
