"""Turning whatever a tool returned into bounded byte chunks, read exactly once.

A tool result arrives as a ``str``, ``bytes``, a file object (binary or text) or an
iterator of chunks; the Spiller must not care which, must not read anything twice
(a pipe cannot be rewound), and must never hold more than one chunk of it at a time
beyond what the caller already holds. Oversized chunks are sliced, so a caller that
yields 100 MB at once does not make the upload queue hold 100 MB per slot.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO, Any, Union

from s3spill.context.utf8 import to_bytes

#: Largest chunk handed on; also the read size for file objects.
CHUNK_BYTES = 1024 * 1024

Output = Union[str, bytes, bytearray, memoryview, IO[bytes], IO[str], Iterable[bytes | str]]  # noqa: UP007


def _slices(data: bytes | bytearray | memoryview, size: int) -> Iterator[bytes]:
    if type(data) is bytes and len(data) <= size:  # immutable and small enough: as it is, no copy
        if data:
            yield data
        return
    view = memoryview(data).cast("B")
    for start in range(0, len(view), size):
        yield bytes(view[start : start + size])


def _as_bytes(piece: Any) -> bytes | bytearray | memoryview:
    if isinstance(piece, str):
        return to_bytes(piece)
    if isinstance(piece, (bytes, bytearray, memoryview)):
        return piece
    raise TypeError(f"tool output chunks must be str or bytes, not {type(piece).__name__}")


def iter_output(output: Output, chunk_size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Yield ``output`` as non-empty byte chunks of at most ``chunk_size`` bytes."""
    if isinstance(output, (str, bytes, bytearray, memoryview)):
        yield from _slices(_as_bytes(output), chunk_size)
        return
    read = getattr(output, "read", None)
    if callable(read):
        while True:
            piece = read(chunk_size)
            if not piece:
                return
            yield from _slices(_as_bytes(piece), chunk_size)
    for piece in output:
        if piece:
            yield from _slices(_as_bytes(piece), chunk_size)


class ReadFailure:
    """What went wrong while reading the output (the stream then ends early)."""

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def guard(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """Pass chunks on; an exception from the source ends the stream and is kept."""
        try:
            yield from chunks
        except Exception as exc:  # noqa: BLE001 - a broken tool stream must not break the turn
            self.error = exc
