"""A spooled document held as compressed frames reads back byte for byte, and its long
strings decode to what ``json.loads`` of the whole document gives, wherever reads and
frames fall."""

from __future__ import annotations

import json
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.context.utf8 import to_bytes
from s3spill.spill.held import Held
from s3spill.spill.json_spool import Spool

#: Pieces of a JSON string body as a harness may send them: every JSON escape, surrogate
#: pairs, lone surrogates (high, low, and U+DC80..U+DCFF, which the store keeps as one byte),
#: multi-byte characters, and runs of escaped backslashes before a ``u`` or a quote.
BODY = st.lists(st.sampled_from([b"a", b"line\\n", b"\\\\", b'\\"', b"\\/", b"\\b", b"\\f", b"\\r", b"\\t",
                                 b"\\u00e9", b"\\u0000", b"\\u001b[0m", b"\\udce9", b"\\ud800", b"\\udfff",
                                 b"\\ud83d\\ude00", b"\\\\ud83d", b"\\\\\\\\u", b"\\\\\\\"", b"\xc3\xa9",
                                 b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"x" * 9]), max_size=200)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=3000), compressible=st.booleans(), writes=st.integers(1, 700),
       frame=st.integers(1, 300), limit=st.sampled_from([10, 200, 1 << 20]))
def test_held_bytes_read_back_from_every_offset(data: bytes, compressible: bool, writes: int,
                                               frame: int, limit: int) -> None:
    """Written in any pieces, in memory or moved to the file (over the limit, or poorly
    compressed), every read from every offset is the document's bytes there."""
    doc = data * 3 if compressible else data + os.urandom(len(data))
    held = Held(limit, frame)
    for n in range(0, len(doc), writes):
        held.write(doc[n:n + writes])
    held.flush()
    assert held.size == len(doc)
    for offset in range(0, len(doc) + 1, max(1, len(doc) // 97)):
        for n in (1, frame, 2 * frame + 3, len(doc)):
            assert held.pread(n, offset) == doc[offset:offset + n]
    held.close()


def test_a_document_that_does_not_compress_goes_to_the_file_and_one_that_does_stays() -> None:
    """Random bytes leave memory after the first frames; a log stays held, in far fewer bytes."""
    noise, log = Held(1 << 20, 1000), Held(1 << 20, 1000)
    noise.write(os.urandom(10_000))
    log.write(b"step 1: ok\n" * 1000)
    assert noise.file is not None and log.file is None


@settings(max_examples=300, deadline=None)
@given(body=BODY, cut=st.integers(1, 60), piece=st.integers(7, 50), frame=st.integers(1, 90))
def test_a_held_long_string_decodes_to_what_json_loads_gives(body: list[bytes], cut: int, piece: int,
                                                             frame: int) -> None:
    """Fed in any pieces, held in frames of any size and decoded ``piece`` bytes at a time
    (so a read boundary falls inside every escape, pair and character somewhere), the hook's
    long string is ``json.loads``'s string and stores the same bytes."""
    raw = b"x" * 41 + b"".join(body)
    doc = b'{"hook_event_name": "PostToolUse", "tool_response": {"stdout": "' + raw + b'", "stderr": ""}}'
    want = json.loads(doc)["tool_response"]["stdout"]
    spool = Spool(long_bytes=40, piece=piece, held=1 << 20, frame=frame)
    for n in range(0, len(doc), cut):
        spool.feed(doc[n:n + cut])
    spool.finish()
    (long,) = spool.longs().values()
    pieces = list(long.pieces())
    assert "".join(pieces) == want
    assert b"".join(to_bytes(p) for p in pieces) == to_bytes(want)
    spool.close()
