"""Shared data of the artifact tests."""

from __future__ import annotations

#: Byte pieces that trip decoders and line splitting when joined at random: ASCII, the line
#: ends, a backslash, whole 3- and 4-byte UTF-8, a cut sequence, a lone continuation byte,
#: a byte never valid in UTF-8, and an encoded surrogate.
AWKWARD_BYTES = [
    b"a",
    b"\n",
    b"\r\n",
    b"\\",
    b"\xe2\x82\xac",
    b"\xf0\x9f\x98\x80",
    b"\xe2\x82",
    b"\x80",
    b"\xff",
    b"\xed\xa0\x80",
]
