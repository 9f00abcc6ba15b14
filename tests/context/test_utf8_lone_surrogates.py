"""str to bytes for text that is not all Unicode scalars: the mapping docs/harnesses.md states."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from s3spill.context.utf8 import to_bytes


@given(st.binary(max_size=200))
def test_bytes_decoded_with_surrogateescape_come_back_as_received(raw: bytes) -> None:
    """Any bytes, valid UTF-8 or not, decoded as Python decodes them for such a server, encode
    back to themselves."""
    assert to_bytes(raw.decode("utf-8", "surrogateescape")) == raw


def test_each_lone_surrogate_is_mapped_on_its_own() -> None:
    """U+DC80..U+DCFF is its byte, any other lone surrogate its WTF-8 bytes, in one string."""
    assert to_bytes("caf\udce9 x\ud800y \udfff") == b"caf\xe9 x\xed\xa0\x80y \xed\xbf\xbf"
    assert to_bytes("\udc7f\udc80") == b"\xed\xb1\xbf\x80"
    assert to_bytes("plain ✓") == "plain ✓".encode()
