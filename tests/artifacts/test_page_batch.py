"""A page takes the whole lines it holds at once; the line-by-line walk gives the same page."""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.artifacts import pagefill, paging
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import TransferConfig
from s3spill.context.secrets.masking import mask_view
from s3spill.store.local import LocalStore
from tests.examples import examples

#: Pieces of a line: ASCII, multi-byte characters, bad and cut bytes, backslashes, CR, marks, joiners.
PARTS = [b"a", b"\xc3\xa9", b"\xe4\xb8\xad", b"\xf0\x9f\x98\x80", b"\xff", b"\xc3", b"\\", b"x" * 50,
         b"y" * 300, b"ab", b"0123456789", b"\t", b"\r\n", b"\r", b"\xe2\x80", b"\xcc\x81", b"\x00",
         b"\x1b[0m", b"\xed\xa0\x80", b"\xe2\x80\x8d"]


@contextmanager
def _one_by_one() -> Iterator[None]:
    """The page algorithm as it was: every line through ``_take_whole``."""
    old, pagefill._BATCH_MIN = pagefill._BATCH_MIN, 1 << 62
    try:
        yield
    finally:
        pagefill._BATCH_MIN = old


def _outcome(arts: ArtifactStore, sid: str, **where: int) -> object:
    """Everything a page says (its text, its bytes and span), or the error it raises."""
    arts._chunks.clear()
    try:
        page = arts.read_page(sid, **where)
    except Exception as exc:  # the refusal is part of the behaviour compared
        return f"{type(exc).__name__}: {exc}"
    return (page.render("cli"), page.render("call"), page.raw(), page.byte_start, page.byte_end,
            page.next_offset, page.next_char_offset, page.eof, page.lines)


@settings(max_examples=examples(suite=40, thorough=150), deadline=None)
@given(st.lists(st.lists(st.sampled_from(PARTS), max_size=5), max_size=300), st.booleans(),
       st.integers(min_value=0, max_value=60), st.sampled_from([0, 0, 1, 3, 17, 120]),
       st.sampled_from([1, 7, 8, 9, 40, 2000]), st.sampled_from([350, 600, 1000, 1500, 3000, 40_000]),
       st.sampled_from([64, 4096, 1 << 20, 1 << 20]), st.booleans())
def test_batched_page_is_the_line_by_line_page(lines: list[list[bytes]], last_newline: bool, offset: int,
                                               char_offset: int, limit: int, max_chars: int, chunk: int,
                                               masked: bool) -> None:
    """Long lines, cut lines, char offsets, budgets, non-ASCII, CR/CRLF and bad bytes: same page."""
    data = b"\n".join(b"".join(parts) for parts in lines) + (b"\n" if last_newline and lines else b"")
    with tempfile.TemporaryDirectory() as tmp:
        arts = ArtifactStore(LocalStore(Path(tmp)), TransferConfig(index_chunk_size=chunk), session_id="p",
                             view=mask_view if masked else None)
        sid = str(arts.write("p", [data], "t").source_id)
        lines = arts.index(sid).line_count
        offset = offset % max(lines, 1)
        where = {"offset": offset, "char_offset": char_offset, "limit": limit, "max_chars": max_chars}
        batched = _outcome(arts, sid, **where)
        with _one_by_one():
            assert _outcome(arts, sid, **where) == batched


@pytest.mark.parametrize("offset", [999_990, 999_998])
def test_seven_digit_line_numbers_page_the_same(offset: int) -> None:
    """Past line 999,999 a row's number is wider: the batched page pays for it as the walk does."""
    data = b"ab\n" * 1_000_010
    with tempfile.TemporaryDirectory() as tmp:
        arts = ArtifactStore(LocalStore(Path(tmp)), session_id="p")
        sid = str(arts.write("p", [data], "t").source_id)
        for max_chars in (400, 500, 40_000):
            where = {"offset": offset, "char_offset": 0, "limit": 2000, "max_chars": max_chars}
            batched = _outcome(arts, sid, **where)
            with _one_by_one():
                assert _outcome(arts, sid, **where) == batched


@given(st.lists(st.tuples(st.integers(min_value=1), st.integers(min_value=0), st.text(), st.booleans(),
                          st.booleans(), st.booleans()), max_size=20))
def test_page_lines_are_the_records_init_builds(lines: list[tuple[int, int, str, bool, bool, bool]]) -> None:
    """A page's lines set through their slots are the PageLines ``__init__`` builds, and as frozen."""
    assert tuple(f.name for f in dataclasses.fields(paging.PageLine)) == paging._FIELDS
    built = paging._page_lines(lines)
    assert built == tuple(paging.PageLine(*line) for line in lines)
    assert [dataclasses.astuple(line) for line in built] == lines
    old_rows = [f"{n:>6}{'!' if e else ''}\t{t}" for n, _, t, e, _, _ in lines]  # the f-string rows were
    assert [line.render() for line in built] == old_rows
    assert pagefill.rows(lines) == old_rows
    page = paging.Page(source_id="artifact:x", offset=0, char_offset=0, total_lines=len(lines), size_bytes=1,
                       lines=built, eof=False, next_offset=1, next_char_offset=0, byte_start=0, byte_end=1,
                       max_chars=1000)
    legend = [pagefill.LEGEND] if any(e for _, _, _, e, _, _ in lines) else []
    assert page.render("cli") == "\n".join([page.header(), *old_rows, *legend, page.footer("cli")]) + "\n"
    for line in built:
        with pytest.raises(dataclasses.FrozenInstanceError):
            line.text = "changed"  # type: ignore[misc]
