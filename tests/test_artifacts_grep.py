"""grep over verified chunks: line numbers, byte offsets, context, and exact omitted counts."""

from __future__ import annotations

import re

import pytest

from s3spill.artifacts import ArtifactStore
from s3spill.config import TransferConfig
from s3spill.errors import InvalidRequest
from s3spill.search import Grep
from s3spill.store import ObjectStore


def test_capped_grep_states_the_exact_omitted_count(store: ObjectStore) -> None:
    """A few MB with 50,000 matching lines and max_matches=50: 50 shown, 49,950 omitted, exactly."""
    data = b"".join(
        b"%07d ERROR boom\n" % i if i % 2 == 0 else b"%07d fine\n" % i for i in range(100_000)
    )
    arts = ArtifactStore(store, TransferConfig(index_chunk_size=64 * 1024), session_id="S")
    ref = arts.write("S", data, "bash")
    result = arts.grep(ref.source_id, r"ERROR \w+", max_matches=50)
    assert len(result.matches) == 50 and result.total_matches == 50_000
    assert result.omitted == 49_950 and result.exact
    assert "50 of 50,000 matching lines shown; 49,950 more omitted" in result.render()
    m = result.matches[3]
    assert m.line_number == 7 and m.char_offset == 8
    assert data[m.line_byte_offset : m.byte_offset] == b"0000006 "
    assert data[m.byte_offset :].startswith(b"ERROR boom")


def test_context_lines_and_offsets_point_into_the_artifact(store: ObjectStore) -> None:
    """Context lines surround each match; the match's offsets lead read_page straight to it."""
    data = b"a\nb\nc needle \xc3\xa9\nd\ne\n\xff needle\n"
    arts = ArtifactStore(store, TransferConfig(index_chunk_size=16), session_id="S")
    ref = arts.write("S", data, "t")
    result = arts.grep(ref.source_id, "needle", context=1)
    assert [m.line_number for m in result.matches] == [3, 6]
    assert [ln.number for ln in result.matches[0].before] == [2]
    assert [ln.number for ln in result.matches[0].after] == [4]
    assert [ln.number for ln in result.matches[1].after] == []
    assert result.matches[1].line.escaped and result.matches[1].line.text == "\\xff needle"
    page = arts.read_page(
        ref.source_id, offset=2, char_offset=result.matches[0].char_offset, limit=1
    )
    assert page.lines[0].text == "needle é"
    rendered = result.render()
    assert "     3:\tc needle é" in rendered and "     6:!\t\\xff needle" in rendered


def test_no_match_and_bad_patterns(store: ObjectStore) -> None:
    """No match is an empty exact result; an invalid regex is a clear InvalidRequest."""
    arts = ArtifactStore(store, session_id="S")
    ref = arts.write("S", b"x\ny\n", "t")
    none = arts.grep(ref.source_id, "zzz")
    assert none.total_matches == 0 and none.exact and "[no matching lines]" in none.render()
    with pytest.raises(InvalidRequest, match="invalid regular expression"):
        arts.grep(ref.source_id, "(")
    with pytest.raises(InvalidRequest):
        arts.grep(ref.source_id, "x", max_matches=0)


def test_long_lines_are_searched_in_bounded_windows() -> None:
    """Over-long lines are searched in windows with exact offsets; a miss makes counts a bound."""
    line = b"x" * 5000 + b"NEEDLE" + b"y" * 5000
    data = b"short NEEDLE\n" + line + b"\n" + b"z" * 9000 + b"\n" + b"tail NEEDLE"
    g = Grep("artifact:t", re.compile("NEEDLE"), long_line=1000, overlap=100)
    for i in range(0, len(data), 333):
        g.feed(data[i : i + 333])
    result = g.result(expected_lines=4)
    assert [m.line_number for m in result.matches] == [1, 2, 4]
    long_match = result.matches[1]
    assert data[long_match.byte_offset :].startswith(b"NEEDLE") and long_match.char_offset == 5000
    assert not result.exact  # the 9000-byte line without a match was only windowed
    assert "lower bound" in result.render()
