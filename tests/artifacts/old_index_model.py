"""The artifact index as a pydantic model, as it was before issue 35: the reference the hand checks
of :mod:`s3spill.artifacts.index_fields` are compared with (``test_index_checks.py``).

Copied from ``s3spill/artifacts/index.py`` at 9545136 (fields and validator only).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Codec = Literal["identity", "zstd"]
OutputKind = Literal["text", "binary", "json", "ndjson", "csv", "tsv"]
MAX_DESCRIPTION_CHARS = 200


class OldArtifactIndex(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1, 2] = 2
    kind: Literal["artifact_index"] = "artifact_index"
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
    def _consistent(self) -> OldArtifactIndex:
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

