"""A spooled JSON line reads as the proxy's whole-line parser reads it: same strings, same bytes."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.context.utf8 import to_bytes
from s3spill.proxy.wire import MALFORMED, encode, parse
from s3spill.spill.json_spool import Spool
from tests.examples import examples

#: Pieces of a JSON string body as a server may write them: plain text, escapes (lone
#: surrogates included), multi-byte characters and bytes that are not UTF-8.
BODY = st.lists(st.sampled_from([b"a", b"line\\n", b"\\\\", b'\\"', b"\\u00e9", b"\\udce9", b"\\ud800",
                                 b"\\ud83d\\ude00", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80",
                                 b"\xe9", b"\xff", b"\xed\xa0\x80", b"\xe2\x82"]), max_size=300)


def _spooled(line: bytes, cut: int) -> Spool:
    spool = Spool(long_bytes=40, piece=17, lenient=True)
    for n in range(0, len(line), cut):
        spool.feed(line[n:n + cut])
    spool.finish()
    return spool


@settings(max_examples=examples(suite=75, thorough=300), deadline=None)
@given(body=BODY, cut=st.integers(1, 50))
def test_a_long_string_decodes_piece_by_piece_to_what_the_whole_line_gives(body: list[bytes],
                                                                          cut: int) -> None:
    """Fed in any pieces and decoded 17 bytes at a time, the long string is the whole-line
    parser's string (surrogateescape for bad bytes), hence the same stored bytes."""
    raw = b"".join(body)
    line = b'{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "' + raw + b'"}]}}\n'
    want = parse(line)
    spool = _spooled(line, cut)
    assert spool.scanned is not None
    skeleton = parse(spool.scanned[0])
    text = skeleton["result"]["content"][0]["text"]
    longs = spool.longs()
    got = "".join(longs[text].pieces()) if text in longs else text
    assert got == want["result"]["content"][0]["text"]
    assert to_bytes(got) == to_bytes(want["result"]["content"][0]["text"])
    assert spool.materialized(skeleton) == want


@settings(max_examples=200, deadline=None)
@given(body=BODY, key=st.booleans())
def test_a_message_sent_on_from_its_spool_is_the_upstream_s_json(body: list[bytes], key: bool) -> None:
    """The skeleton's JSON with each placeholder replaced by the file's bytes parses as the
    line did (long strings as keys too), and its long strings are the upstream's bytes."""
    raw = b"".join(body)
    member = b'"' + raw + b'": 1' if key else b'"k": "' + raw + b'"'
    line = b'{"id": 3, "result": {' + member + b', "small": "x"}}\n'
    spool = _spooled(line, 64)
    assert spool.scanned is not None
    skeleton = parse(spool.scanned[0])
    out = b"".join(spool.expand(encode({**skeleton, "id": 9})))
    if spool.longs():
        assert parse(out) == {**parse(line), "id": 9} and raw in out
    else:  # nothing spooled: the message is what encoding the parsed line gives
        assert out == encode({**parse(line), "id": 9})


def test_a_line_that_ends_inside_a_string_is_not_json() -> None:
    """A spool cut off mid-string has no skeleton (the relay drops it as malformed)."""
    spool = _spooled(b'{"id": 1, "result": "' + b"x" * 100, 10)
    assert spool.scanned is None


#: Pieces of a body of which some are not JSON: escapes it has not, a short ``\u``, raw
#: control characters, and an escaped backslash before letters that would be bad escapes.
BAD_BODY = st.lists(st.sampled_from([b"a", b"line\\n", b"\\\\", b"\\\\q", b"\\\\\\\\u", b"\\u00e9", b"\\q",
                                     b"\\u12", b"\\u00G0", b"\x01", b"\n", b"\t", b"\\x41", b"\xe9"]),
                    max_size=200)


@settings(max_examples=300, deadline=None)
@given(body=BAD_BODY, piece=st.integers(7, 40))
def test_a_long_string_is_well_formed_exactly_when_the_whole_line_parses(body: list[bytes],
                                                                         piece: int) -> None:
    """Checked in pieces of any size without decoding, a long string is well formed exactly
    when the proxy's parser of the whole line accepts it."""
    line = b'{"id": 7, "result": {"text": "' + b"x" * 41 + b"".join(body) + b'"}}\n'
    spool = Spool(long_bytes=40, piece=piece, lenient=True)
    spool.feed(line)
    spool.finish()
    assert spool.scanned is not None
    (long,) = spool.longs().values()
    assert long.well_formed() == (parse(line) is not MALFORMED)


#: Pieces of a hook's string body: every JSON escape, surrogate pairs, lone surrogates (high,
#: low, U+DC80..U+DCFF, which the store keeps as one byte), multi-byte characters, and runs
#: of escaped backslashes before a ``u`` or a quote.
HOOK_BODY = st.lists(st.sampled_from([
    b"a", b"line\\n", b"\\\\", b'\\"', b"\\/", b"\\b", b"\\f", b"\\r", b"\\t", b"\\u00e9", b"\\u0000",
    b"\\u001b[0m", b"\\udce9", b"\\ud800", b"\\udfff", b"\\ud83d\\ude00", b"\\\\ud83d", b"\\\\\\\\u",
    b"\\\\\\\"", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"x" * 9]), max_size=200)


@settings(max_examples=examples(suite=75, thorough=300), deadline=None)
@given(body=HOOK_BODY, cut=st.integers(1, 60), piece=st.integers(7, 50))
def test_a_hook_long_string_decodes_to_what_json_loads_gives(body: list[bytes], cut: int, piece: int) -> None:
    """The hook's strict reading (``json.loads`` of bytes): fed in any pieces and decoded
    ``piece`` bytes at a time, so that a read boundary falls inside every escape, pair and
    character somewhere, the long string is the whole document's and stores the same bytes."""
    raw = b"x" * 41 + b"".join(body)
    doc = b'{"hook_event_name": "PostToolUse", "tool_response": {"stdout": "' + raw + b'", "stderr": ""}}'
    want = json.loads(doc)["tool_response"]["stdout"]
    spool = Spool(long_bytes=40, piece=piece)
    for n in range(0, len(doc), cut):
        spool.feed(doc[n:n + cut])
    spool.finish()
    (long,) = spool.longs().values()
    pieces = list(long.pieces())
    assert "".join(pieces) == want
    assert b"".join(to_bytes(p) for p in pieces) == to_bytes(want)
    spool.close()


def test_a_raw_lone_surrogate_after_an_escaped_backslash_and_u_decodes_at_every_cut() -> None:
    """A piece that ends in ``\\\\ua`` and a raw lone high surrogate is no ``\\uXXXX`` escape cut in
    two: at every piece size the string decodes to what ``json.loads`` of the bytes gives
    (hypothesis found the piece refused, or ``ua`` repeated, when the last six bytes began ``\\u``)."""
    for body in (b"\\\\ua\xed\xa0\x80a", b"\\\\\\\\ua\xed\xa0\x80a", b"\\\\ud800\xed\xa0\x80\\udc00"):
        raw = b"x" * 41 + body * 3
        doc = b'{"tool_response": {"stdout": "' + raw + b'"}}'
        want = json.loads(doc)["tool_response"]["stdout"]
        for piece in range(7, 60):
            spool = Spool(long_bytes=40, piece=piece)
            spool.feed(doc)
            spool.finish()
            (long,) = spool.longs().values()
            assert "".join(long.pieces()) == want, (body, piece)
            spool.close()
