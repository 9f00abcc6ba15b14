"""Persisted and exchanged records shared across layers.

Every record that is written to a store or handed across a process boundary is a
frozen pydantic model with a ``schema_version``, so an old reader refuses a newer
record loudly instead of misreading it. Records never carry object keys or local
paths: the physical location is always re-derived from the trusted store root.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from s3spill.keys import SourceId


def utcnow() -> datetime:
    return datetime.now(UTC)


class Record(BaseModel):
    """Base of every versioned record: frozen, no unknown fields, a schema version."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1


class SourceFields(Record):
    """The source fields shared with the memory layer (id, type, title, capture time)."""

    source_id: str
    source_type: Literal["tool_output"] = "tool_output"
    title: str
    captured_at: datetime


class ArtifactMemoryReference(Record):
    """The thin reference a memory system may keep: no content, no preview, no key or path."""

    kind: Literal["artifact_memory_reference"] = "artifact_memory_reference"
    summary: str = Field(max_length=500)
    source_id: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    tool: str
    source: SourceFields


class ArtifactReference(Record):
    """Everything known about one stored tool output, minus its bytes and its key."""

    kind: Literal["artifact_reference"] = "artifact_reference"
    source_id: str
    session_hash: str
    name: str
    size_bytes: int = Field(ge=0)
    line_count: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    tool: str
    call_id: str | None = None
    label: str | None = None
    created_at: datetime
    summary: str = Field(max_length=500)

    @field_validator("source_id")
    @classmethod
    def _source_id_parses(cls, value: str) -> str:
        SourceId.parse(value)
        return value

    @property
    def parsed_source_id(self) -> SourceId:
        return SourceId.parse(self.source_id)

    def for_memory(self) -> ArtifactMemoryReference:
        """The memory-safe projection: summary and identity only, never content."""
        return ArtifactMemoryReference(
            summary=self.summary,
            source_id=self.source_id,
            sha256=self.sha256,
            tool=self.tool,
            source=SourceFields(
                source_id=self.source_id,
                title=self.label or f"{self.tool} output",
                captured_at=self.created_at,
            ),
        )


class ArtifactRetentionClaim(Record):
    """A path-free lease on one artifact: who it is (source id + full digest), how long."""

    kind: Literal["artifact_retention_claim"] = "artifact_retention_claim"
    source_id: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    reference_count: int = Field(default=1, ge=1)
    retain_until: datetime | None = None

    @field_validator("source_id")
    @classmethod
    def _source_id_parses(cls, value: str) -> str:
        SourceId.parse(value)
        return value

    @classmethod
    def from_memory_reference(
        cls, ref: ArtifactMemoryReference, *, reference_count: int = 1,
        retain_until: datetime | None = None,
    ) -> ArtifactRetentionClaim:
        return cls(
            source_id=ref.source_id, sha256=ref.sha256,
            reference_count=reference_count, retain_until=retain_until,
        )
