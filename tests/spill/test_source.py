"""Tool output turned into byte chunks: bounded, read once, copied only where it must be."""

from __future__ import annotations

from s3spill.spill.source import iter_output


def test_a_bytes_chunk_within_the_size_is_handed_on_as_it_is() -> None:
    """A ``bytes`` piece no longer than the chunk size is passed on itself (no copy), a
    longer one is sliced to the size, and an empty one gives nothing."""
    small, big = b"x" * 4, b"y" * 10
    got = list(iter_output(iter([small, b"", big]), chunk_size=4))
    assert got[0] is small
    assert got[1:] == [b"yyyy", b"yyyy", b"yy"]


def test_a_mutable_chunk_is_copied() -> None:
    """A ``bytearray`` or ``memoryview`` piece is copied into ``bytes``: changing it after it
    was handed on does not change what was handed on."""
    data = bytearray(b"abcd")
    got = list(iter_output(iter([data, memoryview(data)]), chunk_size=8))
    data[0] = 0x7A
    assert got == [b"abcd", b"abcd"] and all(type(chunk) is bytes for chunk in got)
