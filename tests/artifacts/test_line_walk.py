"""The page's line walk finds the n-th newline where splitting the chunk finds it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.artifacts import pagefill as paging


def _by_split(data: bytes, n: int) -> int:
    rest = data.split(b"\n", n)[-1]
    return len(data) - len(rest) - 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"\n", b"bc", b"\n\n", b"x" * 300]), max_size=300),
       st.integers(min_value=0, max_value=400), st.integers(min_value=4, max_value=64))
def test_nth_newline_matches_a_split(parts: list[bytes], n: int, block: int) -> None:
    """Any data, any n >= 0 (none, within, past the last newline), any counting block size."""
    data = b"".join(parts)
    old, paging._COUNT_BLOCK = paging._COUNT_BLOCK, block
    try:
        assert paging._nth_newline(data, n) == _by_split(data, n)
    finally:
        paging._COUNT_BLOCK = old


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=50), max_size=40), st.integers(min_value=-2, max_value=52))
def test_its_bisect_is_the_standard_librarys(values: list[int], x: int) -> None:
    """The page's own binary search over a sorted table, repeats included, left and right."""
    import bisect

    table = tuple(sorted(values))
    assert paging._bisect(table, x, right=False) == bisect.bisect_left(table, x)
    assert paging._bisect(table, x, right=True) == bisect.bisect_right(table, x)
