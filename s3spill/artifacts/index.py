"""The sidecar index of an artifact: what makes a page read cost O(page), not O(artifact).

An artifact is cut into fixed-size chunks (``TransferConfig.index_chunk_size``, 1 MiB by
default). Per chunk the index records

* ``sha256`` — a reader verifies every chunk it fetches before using a byte of it;
* ``newlines`` — prefix sums locate the chunk holding the start of any line, then the
  reader scans inside that one chunk (line starts "every chunk", plus in-chunk scanning);
* ``units``, ``carry`` and ``lastline_units`` — the same for *characters*, so that
  ``char_offset`` deep inside a gigabyte-long single line is also found by fetching one
  chunk, not by decoding everything before it.

A *unit* is what a page counts as one character: a code point of valid UTF-8, or one byte
that is not valid UTF-8 (exactly Python's ``surrogateescape`` decoding). Chunk edges may
split a multi-byte character; ``carry`` is how many bytes at the start of a chunk still
belong to a unit that began in the previous chunk, so decoding may restart at
``chunk_start + carry`` with a fresh decoder. A newline byte is always a unit of its own,
so line starts are unit boundaries.

Version 2 (this writer) adds storage and commit fields. The body is stored as one
*frame* per chunk — the raw bytes (``codec="identity"``) or an independent zstd frame
(``codec="zstd"``, the default for text) — and ``chunk_stored`` gives each frame's length,
so a reader still fetches exactly the frames a page needs and verifies the *raw* bytes
against ``chunk_sha256`` after decompressing. The index is written after the body, as
its commit record, so it also pins the body's ETag (``body_etag``). Version 1 indexes
(raw body, index written first and pinned by the body's metadata) still parse and read.

Everything here is pure: no I/O. :class:`IndexBuilder` is fed the content once, chunk by
chunk, with memory bounded by one index chunk; it also computes the full SHA-256, size,
line count and the first non-empty line for the deterministic summary.
"""

from __future__ import annotations

import codecs
import hashlib
import re
import unicodedata
from collections.abc import Callable
from datetime import datetime
from functools import cached_property
from typing import Literal

from pydantic import Field, model_validator

from s3spill.errors import IntegrityError
from s3spill.models import Record
from s3spill.typed.record_ends import RecordTable

#: Metadata key on the artifact object that pins its index (hex SHA-256 of the index bytes).
META_INDEX_SHA256 = "s3spill-index-sha256"
#: Longest first line kept for the summary, and longest tool/call id/label stored.
SUMMARY_LINE_CHARS = 200
MAX_FIELD_CHARS = 256
_SUMMARY_CAPTURE_BYTES = 4 * SUMMARY_LINE_CHARS
_NON_SPACE = re.compile(rb"[^ \t\r\n\f\v]")
Codec = Literal["identity", "zstd"]
#: What the output is, as detected when it was stored (``s3spill.typed.detect``; the
#: artifacts layer does not import the context layer, so the names are repeated here and a
#: test keeps the two lists equal). Indexes written before detection read as ``text``.
OutputKind = Literal["text", "binary", "json", "ndjson", "csv", "tsv"]
MAX_DESCRIPTION_CHARS = 200


def unit_len(ch: str) -> int:
    """Bytes behind one decoded unit (a surrogate-escaped byte is one byte)."""
    o = ord(ch)
    if o < 0x80 or 0xDC80 <= o <= 0xDCFF:
        return 1
    return 2 if o < 0x800 else 3 if o < 0x10000 else 4


def decode_units(data: bytes) -> str:
    """Decode bytes that start and end on unit boundaries."""
    return data.decode("utf-8", "surrogateescape")


def encode_units(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


class ArtifactIndex(Record):
    """The immutable sidecar of one artifact, pinned by digest from the artifact's metadata."""

    kind: Literal["artifact_index"] = "artifact_index"
    schema_version: Literal[1, 2] = 2  # type: ignore[assignment]
    session_hash: str = Field(pattern=r"^[0-9a-f]{32}$")
    name: str
    size_bytes: int = Field(ge=0)
    line_count: int = Field(ge=0)
    ends_with_newline: bool
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    created_at: datetime
    tool: str
    call_id: str | None = None
    label: str | None = None
    summary: str = Field(max_length=500)
    chunk_size: int = Field(ge=16)
    chunk_sha256: tuple[str, ...]
    chunk_newlines: tuple[int, ...]
    chunk_units: tuple[int, ...]
    chunk_carry: tuple[int, ...]
    chunk_lastline_units: tuple[int, ...]
    #: v2: how the body stores each chunk, each frame's stored length, the body's ETag.
    codec: Codec = "identity"
    chunk_stored: tuple[int, ...] = ()
    body_etag: str | None = None
    #: The detected kind of output and a short description ("PNG image ..., 20x10"); absent
    #: from a text artifact's index, so an index of plain text is what older readers know.
    output_kind: OutputKind = "text"
    output_description: str | None = Field(default=None, max_length=MAX_DESCRIPTION_CHARS)
    #: CSV/TSV only (:mod:`s3spill.typed.record_ends`): records ending in each chunk, and
    #: whether each chunk starts inside a quoted field.
    chunk_records: tuple[int, ...] = ()
    chunk_quoted: tuple[bool, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> ArtifactIndex:
        n = -(-self.size_bytes // self.chunk_size)
        if self.schema_version == 1:
            if self.codec != "identity" or self.chunk_stored or self.body_etag is not None:
                raise ValueError("a version 1 index has no storage or commit fields")
        elif len(self.chunk_stored) != n or any(s < 1 for s in self.chunk_stored) or (
                self.codec == "identity" and self.chunk_stored != tuple(
                    min(self.chunk_size, self.size_bytes - k * self.chunk_size)
                    for k in range(n))) or not self.body_etag:
            raise ValueError("frame table or body ETag disagrees with the artifact")
        arrays = (self.chunk_sha256, self.chunk_newlines, self.chunk_units,
                  self.chunk_carry, self.chunk_lastline_units)
        if any(len(a) != n for a in arrays) or ((self.chunk_records or self.chunk_quoted) and (
                len(self.chunk_records) != n or len(self.chunk_quoted) != n)):
            raise ValueError("chunk arrays do not match the artifact size")
        newlines = sum(self.chunk_newlines)
        partial = 0 if self.size_bytes == 0 or self.ends_with_newline else 1
        empty_with_newline = self.size_bytes == 0 and self.ends_with_newline
        if self.line_count != newlines + partial or empty_with_newline:
            raise ValueError("line count disagrees with the chunk newline counts")
        if any(not 0 <= c <= 3 for c in self.chunk_carry) or any(
            u < -1 for u in self.chunk_lastline_units
        ):
            raise ValueError("bad unit bookkeeping")
        return self

    # -- derived tables (not persisted) -------------------------------------------------

    @cached_property
    def newlines_before(self) -> tuple[int, ...]:
        """``newlines_before[k]``: newline bytes in chunks ``< k`` (length n + 1)."""
        return _prefix_sums(self.chunk_newlines)

    @cached_property
    def units_before(self) -> tuple[int, ...]:
        """``units_before[k]``: units that start in chunks ``< k`` (length n + 1)."""
        return _prefix_sums(self.chunk_units)

    @cached_property
    def stored_before(self) -> tuple[int, ...]:
        """``stored_before[k]``: stored bytes of frames ``< k`` (length n + 1)."""
        if self.schema_version == 1:
            return tuple(min(k * self.chunk_size, self.size_bytes)
                         for k in range(self.chunk_count + 1))
        return _prefix_sums(self.chunk_stored)

    @property
    def stored_size(self) -> int:
        """Size of the body object (compressed frames, or the raw bytes)."""
        return self.stored_before[-1]

    @property
    def chunk_count(self) -> int:
        return len(self.chunk_sha256)

    def chunk_range(self, k: int) -> tuple[int, int]:
        start = k * self.chunk_size
        return start, min(start + self.chunk_size, self.size_bytes)

    def stored_range(self, k: int) -> tuple[int, int]:
        """Where chunk ``k``'s frame sits in the body object."""
        return self.stored_before[k], self.stored_before[k + 1]

    def decode_chunk(self, k: int, frame: bytes, source: str) -> bytes:
        """The raw chunk ``k`` from its stored frame, verified; :class:`IntegrityError` if not."""
        if self.codec == "zstd":
            frame = decompress_frame(frame, self.chunk_range(k), k, source)
        return self.verify_chunk(k, frame, source)

    def to_bytes(self) -> bytes:
        exclude = set()
        if self.output_kind == "text" and self.output_description is None:
            exclude |= {"output_kind", "output_description"}
        if not self.chunk_records:
            exclude |= {"chunk_records", "chunk_quoted"}
        return self.model_dump_json(exclude=exclude or None).encode()

    @cached_property
    def records_before(self) -> tuple[int, ...]:
        """``records_before[k]``: CSV/TSV records that end in chunks ``< k`` (length n + 1)."""
        return _prefix_sums(self.chunk_records)

    def verify_chunk(self, k: int, data: bytes, source: str) -> bytes:
        """Return ``data`` if it is exactly chunk ``k``; raise :class:`IntegrityError` otherwise."""
        start, end = self.chunk_range(k)
        if len(data) != end - start or hashlib.sha256(data).hexdigest() != self.chunk_sha256[k]:
            raise IntegrityError(
                f"{source}: chunk {k} (bytes {start}-{end}) does not match its index"
            )
        if data.count(b"\n") != self.chunk_newlines[k]:
            raise IntegrityError(f"{source}: chunk {k} disagrees with its index's line table")
        return data


def decompress_frame(frame: bytes, raw_range: tuple[int, int], k: int, source: str) -> bytes:
    """One zstd frame back to its raw chunk; a damaged frame is an IntegrityError."""
    import zstandard  # lazy: a CLI read of an uncompressed artifact never needs it

    want = raw_range[1] - raw_range[0]
    try:
        raw = zstandard.ZstdDecompressor().decompress(frame, max_output_size=want)
    except zstandard.ZstdError:
        raise IntegrityError(f"{source}: chunk {k} is not a valid compressed frame") from None
    return raw


def _prefix_sums(values: tuple[int, ...]) -> tuple[int, ...]:
    out = [0]
    for v in values:
        out.append(out[-1] + v)
    return tuple(out)


class ContentStats(Record):
    """What one pass over the content yields, before the artifact has a name."""

    kind: Literal["content_stats"] = "content_stats"
    size_bytes: int
    line_count: int
    ends_with_newline: bool
    sha256: str
    first_line: str
    chunk_size: int
    chunk_sha256: tuple[str, ...]
    chunk_newlines: tuple[int, ...]
    chunk_units: tuple[int, ...]
    chunk_carry: tuple[int, ...]
    chunk_lastline_units: tuple[int, ...]
    codec: Codec = "identity"
    chunk_stored: tuple[int, ...] = ()
    chunk_records: tuple[int, ...] = ()
    chunk_quoted: tuple[bool, ...] = ()

    def to_index(
        self, *, session_hash: str, name: str, created_at: datetime, tool: str,
        call_id: str | None, label: str | None, body_etag: str,
        output_kind: OutputKind = "text", output_description: str | None = None,
    ) -> ArtifactIndex:
        description = None if output_description is None else _clean_line(
            output_description.encode("utf-8", "replace"))[:MAX_DESCRIPTION_CHARS]
        first = self.first_line
        if output_kind == "binary":  # its "first line" is bytes, not words
            first = description or "binary data"
        return ArtifactIndex(
            session_hash=session_hash, name=name, created_at=created_at,
            tool=_bounded(tool) or "tool", call_id=_bounded(call_id), label=_bounded(label),
            summary=make_summary(first, self.size_bytes, self.line_count),
            body_etag=body_etag, output_kind=output_kind, output_description=description,
            **self.model_dump(exclude={"kind", "schema_version", "first_line"}),
        )


def _bounded(value: str | None) -> str | None:
    return None if value is None else value[:MAX_FIELD_CHARS]


def make_summary(first_line: str, size_bytes: int, line_count: int) -> str:
    """Deterministic and bounded: the first non-empty line plus the size. No model call."""
    size = f"{size_bytes:,} bytes, {line_count:,} line{'s' if line_count != 1 else ''}"
    return f"{first_line} ({size})" if first_line else f"(no text) ({size})"


def _clean_line(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    text = "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c for c in text)
    text = " ".join(text.split())
    if len(text) > SUMMARY_LINE_CHARS:
        text = text[: SUMMARY_LINE_CHARS - 1] + "…"
    return text


class IndexBuilder:
    """Incremental, single pass, memory bounded by one chunk: feed bytes, then ``finish()``.

    With ``on_chunk``, each complete chunk is handed to it (with its number) instead of
    being hashed here: the caller hashes it (and compresses it) on a worker thread and
    reports back through :meth:`set_chunk` before :meth:`finish`.
    """

    def __init__(self, chunk_size: int,
                 on_chunk: Callable[[int, bytes], None] | None = None,
                 records: RecordTable | None = None) -> None:
        if chunk_size < 16:
            raise ValueError("index chunk size must be at least 16 bytes")
        self.chunk_size = chunk_size
        self._buf = bytearray()
        self._sha = hashlib.sha256()
        self._size = 0
        self._last = b""
        self._dec = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self._on_chunk = on_chunk
        self._records = records
        self._sha_list: list[str] = []
        self._stored: list[int] = []
        self._newlines: list[int] = []
        self._units: list[int] = []
        self._carry: list[int] = []
        self._lastline: list[int] = []
        self._first: bytearray | None = None  # capture of the first non-empty line
        self._first_done = False
        self._finished = False

    def feed(self, data: bytes) -> None:
        if self._finished:
            raise ValueError("builder already finished")
        if not data:
            return
        self._sha.update(data)
        self._size += len(data)
        self._last = data[-1:]
        self._scan_first_line(data)
        c = self.chunk_size
        if not self._buf and len(data) == c:  # the usual case: whole chunks, no copying
            self._chunk(bytes(data))
            return
        self._buf += data
        if len(self._buf) >= c:
            view = memoryview(self._buf)
            cut = len(self._buf) - len(self._buf) % c
            for start in range(0, cut, c):
                self._chunk(bytes(view[start : start + c]))
            view.release()
            del self._buf[:cut]

    def flush(self) -> None:
        """Cut the last, partial chunk (no more bytes will come)."""
        if self._buf:
            self._chunk(bytes(self._buf))
            self._buf.clear()

    def set_chunk(self, k: int, sha256: str, stored: int) -> None:
        """Record chunk ``k``'s raw digest and stored frame length (``on_chunk`` mode)."""
        self._sha_list[k] = sha256
        while len(self._stored) <= k:
            self._stored.append(0)
        self._stored[k] = stored

    def finish(self, codec: Codec = "identity") -> ContentStats:
        if self._finished:
            raise ValueError("builder already finished")
        self.flush()
        if any(not s for s in self._sha_list):
            raise ValueError("a chunk was never reported back")
        pending = self._dec.getstate()[0]
        self._walk(self._dec.decode(b"", final=True), self._size - len(pending))
        self._finished = True
        newlines = sum(self._newlines)
        ends_nl = self._last == b"\n"
        first = _clean_line(bytes(self._first)) if self._first is not None else ""
        return ContentStats(
            size_bytes=self._size,
            line_count=newlines + (0 if self._size == 0 or ends_nl else 1),
            ends_with_newline=ends_nl, sha256=self._sha.hexdigest(), first_line=first,
            chunk_size=self.chunk_size, chunk_sha256=tuple(self._sha_list),
            chunk_newlines=tuple(self._newlines), chunk_units=tuple(self._units),
            chunk_carry=tuple(self._carry), chunk_lastline_units=tuple(self._lastline),
            chunk_records=tuple(self._records.ends) if self._records is not None else (),
            chunk_quoted=tuple(self._records.quoted) if self._records is not None else (),
            codec=codec, chunk_stored=tuple(self._stored) if self._on_chunk else tuple(
                min(self.chunk_size, self._size - k * self.chunk_size)
                for k in range(len(self._sha_list))),
        )

    def _chunk(self, data: bytes) -> None:
        k = len(self._sha_list)
        start = k * self.chunk_size
        if self._on_chunk is not None:
            self._sha_list.append("")
            self._on_chunk(k, data)
        else:
            self._sha_list.append(hashlib.sha256(data).hexdigest())
        self._newlines.append(data.count(b"\n"))
        if self._records is not None:
            self._records.push(data)
        self._units.append(0)
        self._carry.append(0)
        pending = len(self._dec.getstate()[0])
        if not pending and data.isascii():  # fast path: one unit per byte, nothing carried
            self._units[k] = len(data)
            nl = data.rfind(b"\n")
            self._lastline.append(nl + 1 if nl >= 0 else -1)
            return
        out = self._dec.decode(data)
        walked = self._walk(out, start - pending, stop=start)
        own = out[walked:]  # units that start inside this chunk and are complete
        self._units[k] += len(own)
        if data.rfind(b"\n") >= 0:
            self._lastline.append(own.rfind("\n") + 1)
        else:
            self._lastline.append(-1)

    def _walk(self, out: str, pos: int, stop: int | None = None) -> int:
        """Assign the leading units of ``out`` (starting at byte ``pos``) to their chunks.

        Only units that start before ``stop`` are walked (they were pending across a chunk
        edge); returns how many were walked. At most three: a pending prefix is < 4 bytes.
        """
        c = self.chunk_size
        i = 0
        while i < len(out) and (stop is None or pos < stop):
            blen = unit_len(out[i])
            self._units[pos // c] += 1
            last = (pos + blen - 1) // c
            if last != pos // c:
                self._carry[last] = pos + blen - last * c
            pos += blen
            i += 1
        return i

    def _scan_first_line(self, data: bytes) -> None:
        if self._first_done:
            return
        if self._first is None:
            m = _NON_SPACE.search(data)
            if m is None:
                return
            self._first = bytearray()
            data = data[m.start() :]
        end = data.find(b"\n")
        room = _SUMMARY_CAPTURE_BYTES - len(self._first)
        piece = data[: end if end >= 0 else len(data)][:room]
        self._first += piece
        if end >= 0 or len(self._first) >= _SUMMARY_CAPTURE_BYTES:
            self._first_done = True


def build_stats(data: bytes, chunk_size: int) -> ContentStats:
    """Convenience for whole-bytes callers and tests."""
    builder = IndexBuilder(chunk_size)
    builder.feed(data)
    return builder.finish()
