"""The salient scanner's literal prefilter finds exactly what the plain regex finds."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.context.salient import SalientLine, SalientScanner

WORDS = ["error", "Error", "ERROR", "failed", "failover", "detail", "FATAL", "panic:", "assert",
         "Traceback", "exception", "ok", "x", " ", "\n", "\n", "é", "PASS"]


def _scan(data: bytes, cuts: list[int], *, prefilter: bool, skip: int) -> list[SalientLine]:
    scanner = SalientScanner(skip_bytes=skip, max_lines=4, max_line_bytes=40)
    if not prefilter:
        scanner.words = None
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    for lo, hi in pairwise(points):
        scanner.push(data[lo:hi])
    return scanner.finish()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=120), st.lists(st.integers(0, 5000), max_size=6),
       st.integers(0, 200))
def test_prefilter_matches_the_regex(words: list[str], cuts: list[int], skip: int) -> None:
    """Same lines, numbers, offsets and excerpts with and without the prefilter, for any chunking."""
    data = "".join(words).encode()
    assert _scan(data, cuts, prefilter=True, skip=skip) == _scan(data, cuts, prefilter=False, skip=skip)


def test_prefilter_skips_words_that_are_not_anchors() -> None:
    """'failover' and 'detail' contain a prefilter word but are not error lines."""
    data = b"detail\nfailover\nall good\nbuild FAILED\n"
    scanner = SalientScanner()
    scanner.push(data)
    assert [(s.number, s.text) for s in scanner.finish()] == [(4, "build FAILED")]
