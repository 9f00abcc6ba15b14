"""Paged reads: following the footers gives back the exact bytes, whatever the content."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from s3spill.artifacts.store import ArtifactStore
from s3spill.config import TransferConfig
from s3spill.errors import InvalidRequest
from s3spill.store import ObjectStore
from tests.artifacts.conftest import AWKWARD_BYTES
from tests.artifacts.inspect_store import read_all
from tests.examples import examples

#: And: a word, text that looks escaped, a combining mark, ZWJ, an emoji sequence, tab, ANSI.
PIECES = [*AWKWARD_BYTES, b"word ", b"\\x80", b"e\xcc\x81", b"\xe2\x80\x8d",
          b"\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", b"\t", b"\x1b[0m"]
content = st.one_of(
    st.binary(max_size=2000),
    st.lists(st.sampled_from(PIECES), max_size=800).map(b"".join),
)
EMOJI_LINE = ("x" * 9 + "😀") * 6001  # a 60,010-character single line with emoji
_sessions = itertools.count()


@settings(
    max_examples=examples(suite=20, thorough=80), deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    data=content,
    chunk=st.sampled_from([16, 37, 64, 4096]),
    max_chars=st.integers(700, 2500),
    limit=st.integers(1, 40),
)
@example(data=b"", chunk=16, max_chars=700, limit=1)
@example(data=b"a\r\nb\r\n", chunk=16, max_chars=700, limit=1)
@example(data=b"no trailing newline", chunk=16, max_chars=700, limit=5)
@example(data=b"\n\n\n", chunk=16, max_chars=700, limit=2)
@example(data=EMOJI_LINE.encode(), chunk=1024 * 1024, max_chars=40_000, limit=2000)
def test_following_footers_reconstructs_exact_bytes(
    store: ObjectStore, data: bytes, chunk: int, max_chars: int, limit: int
) -> None:
    """Pages read by following footers, raw or rendered, concatenate to the original bytes."""
    session = f"s{next(_sessions)}"
    arts = ArtifactStore(store, TransferConfig(index_chunk_size=chunk), session_id=session)
    ref = arts.write(session, iter([data[i : i + 999] for i in range(0, len(data), 999)]), "t")
    raw, shown, _ = read_all(arts, ref.source_id, max_chars=max_chars, limit=limit)
    assert raw == data
    assert shown == data


def test_long_emoji_line_is_cut_on_code_points_and_continued(store: ObjectStore) -> None:
    """A 60,010-character line takes two pages; the footer names offset and char_offset exactly."""
    arts = ArtifactStore(store, session_id="S")
    data = EMOJI_LINE.encode()
    ref = arts.write("S", data, "bash")
    first = arts.read_page(ref.source_id)
    assert not first.eof and first.next_offset == 0 and first.next_char_offset
    cut = first.next_char_offset
    assert first.lines[0].text == EMOJI_LINE[:cut]
    assert f"continue with offset=0, char_offset={cut}]" in first.render()
    second = arts.read_page(ref.source_id, offset=0, char_offset=cut)
    assert second.eof and second.lines[0].text == EMOJI_LINE[cut:]
    assert "no newline at end" in second.render()


def test_jumping_anywhere_returns_the_matching_slice(store: ObjectStore) -> None:
    """Any (offset, char_offset) inside the content starts the page at exactly that unit."""
    data = b"".join(
        b"%d:" % i + ("é😀\\" * (i % 7)).encode() + b"\xff" * (i % 3) + b"\n" for i in range(300)
    )
    arts = ArtifactStore(store, TransferConfig(index_chunk_size=64), session_id="S")
    ref = arts.write("S", data, "t")
    lines = data.split(b"\n")[:-1]
    for offset in range(0, 300, 7):
        text = lines[offset].decode("utf-8", "surrogateescape")
        for char_offset in {0, 1, len(text) // 2, len(text) - 1}:
            page = arts.read_page(
                ref.source_id, offset=offset, char_offset=char_offset, limit=2, max_chars=700
            )
            start = sum(len(x) + 1 for x in lines[:offset]) + len(
                text[:char_offset].encode("utf-8", "surrogateescape")
            )
            assert page.byte_start == start
            assert data[start : start + len(page.raw())] == page.raw()


def test_offsets_past_the_end_are_clear_errors(store: ObjectStore) -> None:
    """No inverted ranges: offset past the last line or char_offset past the line end is refused."""
    arts = ArtifactStore(store, session_id="S")
    ref = arts.write("S", b"one\ntwo\n", "t")
    last = arts.read_page(ref.source_id, offset=1)
    assert last.eof and [ln.number for ln in last.lines] == [2]
    assert "[EOF: line 2 is the last line]" in last.render()
    with pytest.raises(InvalidRequest, match=r"offset 2 is beyond the end .* 2 lines"):
        arts.read_page(ref.source_id, offset=2)
    with pytest.raises(InvalidRequest, match="char_offset 3 is beyond the end of line 1"):
        arts.read_page(ref.source_id, offset=0, char_offset=3)
    with pytest.raises(InvalidRequest):
        arts.read_page(ref.source_id, limit=0)
    empty = arts.write("S", b"", "t")
    page = arts.read_page(empty.source_id)
    assert page.eof and page.lines == () and "[EOF: the artifact is empty]" in page.render()
    with pytest.raises(InvalidRequest):
        arts.read_page(empty.source_id, offset=1)


def test_limit_and_budget_bound_every_page(store: ObjectStore) -> None:
    """A page holds at most `limit` lines and its rendering at most `max_chars` characters."""
    arts = ArtifactStore(store, session_id="S")
    ref = arts.write("S", b"".join(b"line %d\n" % i for i in range(10_000)), "t")
    page = arts.read_page(ref.source_id, offset=10, limit=50)
    assert [ln.number for ln in page.lines] == list(range(11, 61))
    assert page.next_offset == 60 and "continue with offset=60, char_offset=0" in page.render()
    small = arts.read_page(ref.source_id, limit=2000, max_chars=1000)
    assert len(small.render()) <= 1000 and small.lines[-1].complete
