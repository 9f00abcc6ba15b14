"""The sidecar index: one incremental pass agrees with a brute-force reading of the bytes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.artifacts.index import ArtifactIndex, unit_len
from s3spill.artifacts.index_builder import ContentStats, IndexBuilder, build_stats, make_summary
from tests.artifacts.conftest import AWKWARD_BYTES

PIECES = [*AWKWARD_BYTES, b"\xf0\x9f\x98"]  # and a 4-byte sequence cut after 3
content = st.one_of(
    st.binary(max_size=300),
    st.lists(st.sampled_from(PIECES), max_size=200).map(b"".join),
)


def brute(data: bytes, c: int) -> tuple[list[int], list[int], list[int]]:
    text = data.decode("utf-8", "surrogateescape")
    starts, pos = [], 0
    for ch in text:
        starts.append(pos)
        pos += unit_len(ch)
    n = -(-len(data) // c)
    units, carry, lastline = [0] * n, [0] * n, [-1] * n
    for s, ch in zip(starts, text, strict=True):
        units[s // c] += 1
        e = s + unit_len(ch)
        if (e - 1) // c != s // c:
            carry[(e - 1) // c] = e - ((e - 1) // c) * c
    for k in range(n):
        nl = data.rfind(b"\n", k * c, min((k + 1) * c, len(data)))
        if nl >= 0:
            lastline[k] = sum(1 for s in starts if k * c + carry[k] <= s <= nl)
    return units, carry, lastline


def _index(stats: ContentStats, tool: str) -> ArtifactIndex:
    """The index of an artifact ``n`` of a zero session hash, built from ``stats``."""
    return stats.to_index(session_hash="0" * 32, name="n", created_at=datetime.now(UTC), tool=tool,
                          call_id=None, label=None, body_etag='"etag"')


@settings(max_examples=300, deadline=None)
@given(
    data=content,
    c=st.sampled_from([16, 17, 31, 64]),
    cuts=st.lists(st.integers(1, 50), max_size=30),
)
def test_builder_matches_brute_force(data: bytes, c: int, cuts: list[int]) -> None:
    """However the input is fed, the chunk tables equal a brute-force decoding of the whole."""
    builder = IndexBuilder(c)
    pos = 0
    for n in cuts:
        builder.feed(data[pos : pos + n])
        pos += n
    builder.feed(data[pos:])
    stats = builder.finish()
    units, carry, lastline = brute(data, c)
    assert list(stats.chunk_units) == units
    assert list(stats.chunk_carry) == carry
    assert list(stats.chunk_lastline_units) == lastline
    assert stats.size_bytes == len(data)
    parts = data.split(b"\n")
    assert stats.line_count == len(parts) - (1 if data.endswith(b"\n") or not data else 0)
    index = _index(stats, "bash")
    assert ArtifactIndex.model_validate_json(index.to_bytes()) == index


def test_summary_is_first_non_empty_line_plus_size() -> None:
    """The summary is deterministic, bounded, and needs no model."""
    stats = build_stats(b"\n\n   \n  $ make test\x1b[31m failed\n" + b"x" * 10_000, 16)
    assert stats.first_line == "$ make test [31m failed"
    assert make_summary("", 0, 0) == "(no text) (0 bytes, 0 lines)"
    long = build_stats(b"y" * 100_000, 1024)
    assert len(make_summary(long.first_line, long.size_bytes, long.line_count)) <= 500


def test_inconsistent_index_is_refused() -> None:
    """An index whose tables disagree with its totals does not validate."""
    stats = build_stats(b"a\nb\n", 16)
    index = _index(stats, "t")
    bad = index.model_dump()
    bad["line_count"] = 3
    with pytest.raises(ValueError, match="line count"):
        ArtifactIndex.model_validate(bad)
