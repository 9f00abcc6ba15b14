"""A page decodes its text a piece at a time; any piece size gives the same page."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.artifacts import pagefill
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import TransferConfig
from s3spill.store.local import LocalStore
from tests.examples import examples

PARTS = [b"a", b"\n", b"\xc3\xa9", b"\xe4\xb8\xad", b"\xf0\x9f\x98\x80", b"\xff", b"\xc3", b"\\", b"x" * 50,
         b"\t", b"\r\n", b"\xe2\x80"]


@settings(max_examples=examples(suite=15, thorough=60), deadline=None)
@given(st.lists(st.sampled_from(PARTS), max_size=400), st.integers(min_value=0, max_value=40),
       st.integers(min_value=1, max_value=9), st.sampled_from([0, 3, 17]))
def test_any_piece_size_reads_the_same_page(parts: list[bytes], offset: int, piece: int,
                                            char_offset: int) -> None:
    """Multi-byte characters and bad bytes split between pieces (and chunks) decode as one text."""
    data = b"".join(parts)
    with tempfile.TemporaryDirectory() as tmp:
        arts = ArtifactStore(LocalStore(Path(tmp)), TransferConfig(index_chunk_size=64), session_id="p")
        sid = arts.write("p", [data], "t").source_id
        lines = arts.index(sid).line_count
        if offset >= max(lines, 1):
            offset = 0
        pages = []
        for size in (1 << 20, piece):
            old, pagefill._DECODE_PIECE = pagefill._DECODE_PIECE, size
            try:
                arts._chunks.clear()
                try:
                    page = arts.read_page(sid, offset=offset, limit=7, char_offset=char_offset, max_chars=600)
                    pages.append(page.render("cli"))
                except Exception as exc:
                    pages.append(f"{type(exc).__name__}: {exc}")
            finally:
                pagefill._DECODE_PIECE = old
        assert pages[0] == pages[1]
