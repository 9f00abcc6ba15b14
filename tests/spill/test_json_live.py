"""A long string taken over from a paused spool decodes as the spooled one does, piece for piece."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from s3spill.context.utf8 import to_bytes
from s3spill.spill.json_live import LiveString, utf8_chunks
from s3spill.spill.json_spool import Spool
from tests.examples import examples

#: Pieces of a hook's string body: every JSON escape, surrogate pairs, lone surrogates (high,
#: low, U+DC80..U+DCFF), multi-byte characters, encoded surrogates (json.loads of bytes takes
#: them, orjson does not), and runs of escaped backslashes before a ``u`` or a quote.
BODY = st.lists(st.sampled_from([
    b"a", b"line\\n", b"\\\\", b'\\"', b"\\/", b"\\b", b"\\f", b"\\r", b"\\t", b"\\u00e9", b"\\u0000",
    b"\\u001b[0m", b"\\udce9", b"\\ud800", b"\\udfff", b"\\ud83d\\ude00", b"\\\\ud83d", b"\\\\\\\\u",
    b"\\\\\\\"", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xed\xa0\x80", b"x" * 9]),
    min_size=1, max_size=200)


class Trickle(io.RawIOBase):
    """A stream that hands out at most ``most`` bytes a read, as a pipe may."""

    def __init__(self, data: bytes, most: int) -> None:
        self.data, self.most, self.at = data, most, 0

    def read(self, n: int = -1) -> bytes:
        n = self.most if n < 0 else min(n, self.most)
        piece = self.data[self.at:self.at + n]
        self.at += len(piece)
        return piece


class TrickleInto(Trickle):
    """The same stream with ``readinto`` (as stdin's), handing out at most ``most`` bytes a call."""

    def readinto(self, view: Any) -> int:
        piece = self.read(len(view))
        view[:len(piece)] = piece
        return len(piece)


def _doc(raw: bytes, after: bytes) -> bytes:
    return (b'{"hook_event_name": "PostToolUse", "tool_response": {"a": "x", "stdout": "' + raw
            + b'", "stderr": "' + after + b'"}, "tool_use_id": "toolu_1"}')


def _paused(doc: bytes, cut: int, piece: int, into: bool = False) -> tuple[Spool, Trickle]:
    """A spool of ``doc`` fed ``cut`` bytes at a time, paused at its first long string."""
    spool = Spool(long_bytes=40, piece=piece, on_long=lambda skeleton: skeleton.endswith(b'"stdout": '))
    stream = (TrickleInto if into else Trickle)(doc, cut)
    while not spool.paused:
        got = stream.read(cut)
        assert got, "never paused"
        spool.feed(got)
    return spool, stream


@settings(max_examples=examples(suite=75, thorough=300), deadline=None)
@given(body=BODY, after=BODY, cut=st.integers(1, 70), piece=st.integers(7, 50), read=st.integers(1, 90),
       into=st.booleans())
# Found by hypothesis in wave 11: ``\\\\u``, ``a`` and a raw lone surrogate, a piece ending there.
@example(body=[b"a"], after=[b"a", b"a", b"\\ud83d\\ude00", b"\\\\\\\\u", b"a", b"\xed\xa0\x80", b"a"],
         cut=1, piece=8, read=1, into=False)
def test_a_string_taken_over_is_decoded_in_the_spooled_string_s_pieces(
        body: list[bytes], after: list[bytes], cut: int, piece: int, read: int, into: bool) -> None:
    """Read from a stream in any pieces, by ``read`` or ``readinto`` (every escape, pair and
    character cut somewhere), the string taken over gives exactly the pieces the spooled one
    gives, the document's rest is spooled as before (a later long string in the file), the
    skeleton holds the string's placeholder where it was, and the document is not given
    whole with a hole in it."""
    raw = b"y" * 120 + b"".join(body)  # long past the piece it turns long in: the scan pauses
    later = b"z" * 41 + b"".join(after)
    doc = _doc(raw, later)
    whole = Spool(long_bytes=40, piece=piece)
    whole.feed(doc)
    whole.finish()
    assert whole.scanned is not None
    want = [list(long.pieces()) for long in whole.longs().values()]

    spool, stream = _paused(doc, cut, piece, into)
    stream.most = read
    checked: list[bool] = []
    live = LiveString(spool, stream, "LIVE", lambda: checked.append(True), piece=piece, read=read)
    got = list(live.pieces())
    assert got == want[0] and live.complete and checked == [True]
    assert live.body_bytes == len(raw)
    assert [list(long.pieces()) for long in spool.longs().values()] == want[1:]
    assert spool.scanned is not None
    skeleton = json.loads(spool.scanned[0])
    assert skeleton["tool_response"]["stdout"] == "LIVE" and skeleton["tool_use_id"] == "toolu_1"
    if spool.holes:  # the body read from the stream is not in the file
        with pytest.raises(ValueError, match="taken over"):
            spool.raw()


@settings(max_examples=150, deadline=None)
@given(body=BODY, cut=st.integers(1, 70), piece=st.integers(7, 50), read=st.integers(1, 90),
       size=st.integers(1, 120), into=st.booleans())
def test_the_chunks_are_the_utf8_of_the_pieces_cut_to_the_chunk_size(
        body: list[bytes], cut: int, piece: int, read: int, size: int, into: bool) -> None:
    """The chunks of a string taken over join to the UTF-8 the spooled string's pieces are
    stored as (lone surrogates as to_bytes writes them), every one of them but the last has
    exactly the chunk size, and the document is finished as its pieces finish it."""
    raw = b"y" * 120 + b"".join(body)
    doc = _doc(raw, b"")
    whole = Spool(long_bytes=40, piece=piece)
    whole.feed(doc)
    whole.finish()
    want = b"".join(to_bytes(text) for text in next(iter(whole.longs().values())).pieces())
    spool, stream = _paused(doc, cut, piece, into)
    stream.most = read
    checked: list[bool] = []
    live = LiveString(spool, stream, "LIVE", lambda: checked.append(True), piece=piece, read=read)
    got = list(live.chunks(size))
    assert b"".join(got) == want and all(len(chunk) == size for chunk in got[:-1])
    assert 0 < len(got[-1]) <= size and live.complete and checked == [True]


def test_utf8_chunks_cut_any_texts_to_the_size() -> None:
    """Texts shorter and longer than the chunk size, empty ones and a lone surrogate come out
    as their UTF-8 in chunks of exactly the size but the last; no text, no chunk."""
    texts = ["ab", "", "c" * 9, "\udce9\u20ac", "de"]
    got = list(utf8_chunks(iter(texts), 4))
    assert b"".join(got) == b"".join(to_bytes(text) for text in texts)
    assert [len(chunk) for chunk in got] == [4, 4, 4, 4, 1]
    assert list(utf8_chunks(iter([]), 4)) == [] and list(utf8_chunks(iter([""]), 4)) == []


def test_a_document_that_ends_inside_the_string_stops_its_pieces() -> None:
    """A payload cut off inside the string taken over is no JSON: the pieces raise, nothing
    is called done, and the error is kept."""
    doc = _doc(b"y" * 100, b"")[:130]
    spool, stream = _paused(doc, 50, 16)
    live = LiveString(spool, stream, "LIVE", lambda: pytest.fail("done on a cut document"), piece=16, read=16)
    with pytest.raises(ValueError, match="ends inside a string"):
        list(live.pieces())
    assert not live.complete and isinstance(live.error, ValueError)


def test_a_bad_escape_in_the_string_raises_as_json_loads_does() -> None:
    """A piece that is not JSON raises json.loads' own error, and the rest can be drained."""
    doc = _doc(b"y" * 60 + b"\\q" + b"y" * 60, b"")
    spool, stream = _paused(doc, 50, 16)
    live = LiveString(spool, stream, "LIVE", lambda: None, piece=16, read=16)
    with pytest.raises(json.JSONDecodeError, match="Invalid \\\\escape"):
        list(live.pieces())
    live.drain()
    assert stream.at == len(doc)
