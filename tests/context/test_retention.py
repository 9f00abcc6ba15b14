"""Retention primitives: exact counts, UTF-8 safe cuts, bounded memory."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.context.retention import (
    ItemRetainer,
    Omitted,
    PushDecision,
    RetainedText,
    RetentionNotice,
    TextRetainer,
    TextStrategy,
    describe_omitted,
    format_retention_notice,
)
from s3spill.context.utf8 import line_count, safe_head_cut, safe_tail_start
from tests.examples import examples

limits = st.integers(min_value=0, max_value=40)


@st.composite
def text_strategies(draw: st.DrawFn) -> TextStrategy:
    kind = draw(st.sampled_from(["head", "tail", "headTail"]))
    if kind == "head":
        return TextStrategy.head(draw(limits))
    if kind == "tail":
        return TextStrategy.tail(draw(limits))
    return TextStrategy.head_tail(draw(limits), draw(limits))


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def retain(data: bytes, strategy: TextStrategy, cuts: list[int]) -> RetainedText:
    retainer = TextRetainer(strategy)
    for chunk in split(data, cuts):
        retainer.push(chunk)
    return retainer.finish()


def check_invariants(data: bytes, res: RetainedText) -> None:
    assert res.total_bytes == len(data)
    assert data.startswith(res.head)
    assert data.endswith(res.tail)
    assert len(res.head) + len(res.tail) <= len(data)  # no overlap, no duplicated byte
    assert res.kept_bytes + res.omitted_bytes == res.total_bytes
    assert res.omitted == Omitted.exact(len(data) - len(res.head) - len(res.tail))
    assert res.line_count == line_count(len(data), data.count(b"\n"), data.endswith(b"\n"))
    if res.truncated:
        first, last = res.gap_lines
        lines = _nl_lines(data)
        window = b"".join(lines[first - 1 : last])
        gap = data[len(res.head) : len(data) - len(res.tail)]
        assert gap in window
        # The range is tight: its first line holds the first omitted byte, its last the last.
        before = b"".join(lines[: first - 1])
        assert len(before) <= len(res.head) < len(before) + len(lines[first - 1])
        upto = b"".join(lines[:last])
        assert len(upto) - len(lines[last - 1]) < len(data) - len(res.tail) <= len(upto)


def _nl_lines(data: bytes) -> list[bytes]:
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    return out + ([parts[-1]] if parts[-1] else [])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120), text_strategies(), st.lists(st.integers(0, 10_000), max_size=8))
def test_retained_text_is_valid_utf8_and_counts_are_exact(
    text: str, strategy: TextStrategy, cuts: list[int]
) -> None:
    """Whatever the chunking, retained bytes decode strictly and kept + omitted equals the total."""
    data = text.encode("utf-8")
    res = retain(data, strategy, cuts)
    check_invariants(data, res)
    res.head.decode("utf-8")  # strict: raises on a split character
    res.tail.decode("utf-8")
    assert res.complete == (len(data) <= strategy.head_bytes + strategy.tail_bytes)
    if res.truncated:
        # A UTF-8 safe cut gives up at most three bytes of each window, never more.
        assert strategy.head_bytes - 3 <= len(res.head) <= strategy.head_bytes
        assert strategy.tail_bytes - 3 <= len(res.tail) <= strategy.tail_bytes


@settings(max_examples=examples(suite=75, thorough=300), deadline=None)
@given(st.binary(max_size=120), text_strategies(), st.lists(st.integers(0, 10_000), max_size=8))
def test_arbitrary_bytes_keep_exact_counts_and_no_overlap(
    data: bytes, strategy: TextStrategy, cuts: list[int]
) -> None:
    """Invalid UTF-8 never breaks the accounting: prefix, suffix, no overlap, exact gap lines."""
    check_invariants(data, retain(data, strategy, cuts))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120), limits, limits, limits, limits)
def test_narrowing_keeps_a_non_overlapping_prefix_and_suffix(
    text: str, h1: int, t1: int, h2: int, t2: int
) -> None:
    """Narrowing a result again stays UTF-8 safe and exact, including splitting a complete one."""
    data = text.encode("utf-8")
    res = retain(data, TextStrategy.head_tail(h1, t1), [7, 13]).narrow(h2, t2)
    check_invariants(data, res)
    res.head.decode("utf-8")
    res.tail.decode("utf-8")
    assert len(res.head) <= max(h2, 0) or res.complete
    assert len(res.tail) <= t2 or res.complete


@pytest.mark.parametrize("char", ["é", "€", "😀"])
def test_every_cut_position_inside_a_character_backs_off(char: str) -> None:
    """Cutting at each byte of a 2-, 3- and 4-byte character never splits it."""
    encoded = char.encode()
    data = b"ab" + encoded + b"cd"
    for limit in range(len(data) + 1):
        cut = safe_head_cut(data, limit)
        data[:cut].decode("utf-8")
        assert cut == limit or (2 < limit < 2 + len(encoded) and cut == 2)
        start = safe_tail_start(data, limit)
        data[start:].decode("utf-8")
        assert start == limit or (2 < limit < 2 + len(encoded) and start == 2 + len(encoded))


def test_invalid_lead_bytes_never_move_a_cut_far() -> None:
    """Stray continuation bytes and impossible leads are single units, not a reason to drop data."""
    assert safe_head_cut(b"ab\xff\xfe", 4) == 4
    assert safe_head_cut(b"\x80\x80\x80\x80\x80", 5) == 5
    assert safe_tail_start(b"\x80\x80\x80\x80\x80", 0) == 3


def test_head_tail_keeps_both_ends_of_a_long_stream() -> None:
    """headTail keeps the first and last bytes and counts the middle exactly."""
    data = b"".join(b"line %06d\n" % i for i in range(10_000))
    res = retain(data, TextStrategy.head_tail(1000, 2000), list(range(0, len(data), 4097)))
    assert res.head == data[:1000]
    assert res.tail == data[-2000:]
    assert res.omitted == Omitted.exact(len(data) - 3000)
    assert res.line_count == 10_000
    # 12-byte lines: the head holds 83 whole lines and part of line 84; the tail starts
    # inside line 9834 (2000 = 166 * 12 + 8).
    assert res.gap_lines == (84, 9834)


def test_memory_stays_bounded_whatever_the_stream_length() -> None:
    """Pushing 8 MiB in mixed chunk sizes never buffers more than the limits (plus one window)."""
    retainer = TextRetainer(TextStrategy.head_tail(6 * 1024, 24 * 1024))
    bound = 6 * 1024 + 2 * (24 * 1024 + 1)
    chunk = bytes(range(256)) * 4096  # 1 MiB
    sizes = [1, 10, 4096, 65_536, 1 << 20, 333]
    pushed = 0
    while pushed < 8 << 20:
        for size in sizes:
            retainer.push(chunk[:size])
            pushed += size
            assert retainer.buffered_bytes <= bound
    res = retainer.finish()
    assert res.total_bytes == pushed
    assert 6 * 1024 - 3 <= len(res.head) <= 6 * 1024  # a trailing lead byte may be cut
    assert 24 * 1024 - 3 <= len(res.tail) <= 24 * 1024


def test_push_decisions_report_kept_and_truncated() -> None:
    """Each push says whether its chunk is retained and whether anything is lost yet."""
    head = TextRetainer(TextStrategy.head(5))
    assert head.push(b"abc") == PushDecision(kept=True, truncated=False)
    assert head.push(b"def") == PushDecision(kept=False, truncated=True)
    tail = TextRetainer(TextStrategy.tail(4))
    assert tail.push(b"abc") == PushDecision(kept=True, truncated=False)
    assert tail.push(b"defgh") == PushDecision(kept=False, truncated=True)
    assert tail.push(b"ij") == PushDecision(kept=True, truncated=True)
    assert tail.finish().tail == b"ghij"


def test_str_chunks_and_finish_are_accepted_once() -> None:
    """str chunks are UTF-8 encoded; pushing after finish is a programming error."""
    retainer = TextRetainer(TextStrategy.head(100))
    retainer.push("héllo")
    assert retainer.finish().text == "héllo"
    with pytest.raises(RuntimeError):
        retainer.push("more")


def test_item_retainer_keeps_a_head_and_counts_the_rest() -> None:
    """ItemRetainer keeps the first N items and reports exactly how many were dropped."""
    retainer: ItemRetainer[str] = ItemRetainer(3)
    decisions = [retainer.push(f"match {i}") for i in range(10)]
    assert decisions[2] == PushDecision(kept=True, truncated=False)
    assert decisions[3] == PushDecision(kept=False, truncated=True)
    res = retainer.finish()
    assert res.items == ["match 0", "match 1", "match 2"]
    assert (res.seen, res.kept, res.omitted, res.truncated) == (10, 3, Omitted.exact(7), True)
    empty: ItemRetainer[int] = ItemRetainer(0)
    assert empty.extend([]) == PushDecision(kept=True, truncated=False)
    assert empty.finish().omitted == Omitted.none()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers()), st.integers(0, 20))
def test_item_counts_are_exact(items: list[int], limit: int) -> None:
    """kept + omitted equals the number of items pushed, and kept items are the first ones."""
    retainer: ItemRetainer[int] = ItemRetainer(limit)
    retainer.extend(items)
    res = retainer.finish()
    assert res.items == items[:limit]
    assert res.kept + res.omitted.amount == len(items) == res.seen


def test_notices_are_neutral_and_tools_word_their_own_hint() -> None:
    """The shared helper states the omission; the tool's formatter adds its own recovery hint."""
    retainer: ItemRetainer[str] = ItemRetainer(2)
    retainer.extend(["a", "b", "c", "d"])
    notice = retainer.notice("grep")
    assert notice == RetentionNotice("grep", "head", "items", 2, 2, Omitted.exact(2))
    text = format_retention_notice(
        notice, lambda n: f"Results capped at {n.kept}. Narrow the pattern, path, or include."
    )
    assert text == "(grep: Omitted 2 items. Results capped at 2. Narrow the pattern, path, or include.)"
    assert format_retention_notice(RetentionNotice("x", "head", "bytes", 5, 5)) == ""
    assert describe_omitted(Omitted.unknown(), "bytes") == "Omitted an unknown number of bytes."
    assert describe_omitted(Omitted.exact(1), "lines") == "Omitted 1 line."
    text_notice = TextRetainer(TextStrategy.head_tail(2, 2))
    text_notice.push(b"abcdefgh")
    assert text_notice.notice("bash").omitted == Omitted.exact(4)


def test_omitted_refuses_inconsistent_values() -> None:
    """An exact omission needs a count; unknown refuses to pretend it has one."""
    with pytest.raises(ValueError):
        Omitted("exact")
    with pytest.raises(ValueError):
        Omitted("none", 3)
    with pytest.raises(ValueError):
        _ = Omitted.unknown().amount
    assert Omitted.exact(0) == Omitted.none()
