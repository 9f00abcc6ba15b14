"""What a per-kind page needs to know of the artifact it pages: its chunk table.

The typed pages (hexdump, CSV records) locate a byte or a record by chunk and fetch only
that chunk; they need the sizes and per-chunk counts the artifact's index holds, not the
index model itself, so this layer stays below :mod:`s3spill.artifacts`, whose
:class:`~s3spill.artifacts.index.ArtifactIndex` satisfies the protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["ChunkedOutput", "Fetch"]

#: Chunk ``k``'s verified bytes.
Fetch = Callable[[int], bytes]


class ChunkedOutput(Protocol):
    """The sizes and per-chunk record counts of one stored output."""

    @property
    def size_bytes(self) -> int: ...
    @property
    def chunk_size(self) -> int: ...
    @property
    def chunk_count(self) -> int: ...
    @property
    def ends_with_newline(self) -> bool: ...
    @property
    def output_kind(self) -> str: ...
    @property
    def output_description(self) -> str | None: ...
    @property
    def chunk_records(self) -> tuple[int, ...]: ...
    @property
    def chunk_quoted(self) -> tuple[bool, ...]: ...
    @property
    def records_before(self) -> tuple[int, ...]: ...
    @property
    def line_count(self) -> int: ...
    @property
    def newlines_before(self) -> tuple[int, ...]: ...
