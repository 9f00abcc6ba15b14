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

Everything here is pure: no I/O. The index is built in one pass over the content by
:class:`~s3spill.artifacts.index_builder.IndexBuilder` (a write's job: a read loads only
this module, and no pydantic, see :class:`ArtifactIndex`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, Literal

import orjson

from s3spill.artifacts.chunks import check_chunk
from s3spill.artifacts.chunks import decompress_frame as decompress_frame
from s3spill.artifacts.index_fields import (
    FIELDS,
    IndexInvalid,
    check_consistent,
    check_names,
    check_values,
    parse_fields,
)
from s3spill.artifacts.pagefill import decode_units as decode_units
from s3spill.artifacts.pagefill import encode_units as encode_units

#: Metadata key on the artifact object that pins its index (hex SHA-256 of the index bytes).
META_INDEX_SHA256 = "s3spill-index-sha256"
Codec = Literal["identity", "zstd"]
#: What the output is, as detected when it was stored (``s3spill.typed.detect``; the
#: artifacts layer does not import the context layer, so the names are repeated here and a
#: test keeps the two lists equal). Indexes written before detection read as ``text``.
OutputKind = Literal["text", "binary", "json", "ndjson", "csv", "tsv"]
MAX_DESCRIPTION_CHARS = 200
#: Fields that construction may convert (a list to a tuple, an ISO string to a datetime).
_CONVERTED = ("created_at", "chunk_sha256", "chunk_newlines", "chunk_units", "chunk_carry",
              "chunk_lastline_units", "chunk_stored", "chunk_records", "chunk_quoted")


def unit_len(ch: str) -> int:
    """Bytes behind one decoded unit (a surrogate-escaped byte is one byte)."""
    o = ord(ch)
    if o < 0x80 or 0xDC80 <= o <= 0xDCFF:
        return 1
    return 2 if o < 0x800 else 3 if o < 0x10000 else 4


@dataclass(frozen=True, kw_only=True)
class ArtifactIndex:
    """The immutable sidecar of one artifact, pinned by digest from the artifact's metadata.

    A plain frozen dataclass, not a pydantic model (issue 35: a page read is a process of
    its own); it is untrusted storage input all the same, so construction checks every
    field as the model did (:mod:`.index_fields`) and then that the fields agree
    (:meth:`_consistent`). Not slotted: the derived tables are cached on the instance.
    """

    schema_version: Literal[1, 2] = 2
    kind: Literal["artifact_index"] = "artifact_index"
    session_hash: str
    name: str
    size_bytes: int
    line_count: int
    ends_with_newline: bool
    sha256: str
    created_at: datetime
    tool: str
    call_id: str | None = None
    label: str | None = None
    summary: str
    chunk_size: int
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
    output_description: str | None = None
    #: CSV/TSV only (:mod:`s3spill.typed.record_ends`): records ending in each chunk, and
    #: whether each chunk starts inside a quoted field.
    chunk_records: tuple[int, ...] = ()
    chunk_quoted: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        values = check_values({name: getattr(self, name) for name in FIELDS})
        for name in _CONVERTED:
            if values[name] is not getattr(self, name):
                object.__setattr__(self, name, values[name])
        self._consistent()

    @classmethod
    def model_validate(cls, data: dict[str, Any]) -> ArtifactIndex:
        """The index these fields describe (as the model's ``model_validate``); IndexInvalid if
        a field is unknown, missing, of the wrong type or out of bounds, or the fields disagree."""
        if type(data) is not dict:
            raise IndexInvalid("the index is not a JSON object")
        check_names(data)
        return cls(**data)

    @classmethod
    def model_validate_json(cls, raw: bytes | str) -> ArtifactIndex:
        """The index stored as ``raw`` (JSON); IndexInvalid (a ValueError) when it is not one."""
        return cls.model_validate(parse_fields(raw))

    def model_dump(self) -> dict[str, Any]:
        """Every field, by name (tables as tuples, ``created_at`` a datetime)."""
        return {name: getattr(self, name) for name in FIELDS}

    def _consistent(self) -> None:
        """The fields agree: frame table, chunk tables, line count, unit bookkeeping."""
        check_consistent(self.model_dump())

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
        """The stored JSON: what the pydantic model wrote, byte for byte (fields in order,
        compact; ``created_at`` ISO 8601 with ``Z`` for UTC), without the output kind of a
        plain text artifact and the record table of one that has none."""
        fields = self.model_dump()
        fields["created_at"] = _iso(self.created_at)
        if self.output_kind == "text" and self.output_description is None:
            del fields["output_kind"], fields["output_description"]
        if not self.chunk_records:
            del fields["chunk_records"], fields["chunk_quoted"]
        return orjson.dumps(fields)

    @cached_property
    def records_before(self) -> tuple[int, ...]:
        """``records_before[k]``: CSV/TSV records that end in chunks ``< k`` (length n + 1)."""
        return _prefix_sums(self.chunk_records)

    def verify_chunk(self, k: int, data: bytes, source: str) -> bytes:
        """Return ``data`` if it is exactly chunk ``k``; raise :class:`IntegrityError` otherwise."""
        return check_chunk(data, k, self.chunk_range(k), self.chunk_sha256[k], self.chunk_newlines[k], source)


def _iso(when: datetime) -> str:
    """A datetime as pydantic serialized it: ISO 8601, a zero UTC offset as ``Z``."""
    text = when.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _prefix_sums(values: tuple[int, ...]) -> tuple[int, ...]:
    out = [0]
    for v in values:
        out.append(out[-1] + v)
    return tuple(out)
