"""Spill policy defaults, token counting and salient-line scanning."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from s3spill.context.budget import ContextBudget
from s3spill.context.policy import KiB, SpillPolicy, ToolPolicy
from s3spill.context.salient import ERROR_ANCHOR, SalientScanner
from s3spill.context.tokens import default_token_counter, estimate_tokens


def test_documented_defaults() -> None:
    """Shell tools: 30,000 characters, head 6 KiB + tail 24 KiB; others: 50 KiB, head 2 KiB."""
    policy = SpillPolicy()
    shell = policy.for_tool("Bash")
    assert (shell.threshold, shell.threshold_unit) == (30_000, "chars")
    assert shell.preview(None) == (6 * KiB, 24 * KiB)
    other = policy.for_tool("web_fetch")
    assert (other.threshold, other.threshold_unit) == (50 * KiB, "bytes")
    assert other.preview(0) == (2 * KiB, 0)
    assert policy.max_inline_tokens is None and policy.hard_cap_chars == 100_000


def test_thresholds_count_characters_for_shell_and_bytes_for_others() -> None:
    """30,000 'é' are 60,000 bytes but only 30,000 characters: inline for bash, spilled for others."""
    policy = SpillPolicy()
    text = "é" * 30_000
    assert not policy.should_externalize(text, "bash")
    assert policy.should_externalize(text + "x", "bash")
    assert policy.should_externalize(text, "web_fetch")
    assert not policy.should_externalize("x" * 50 * KiB, "web_fetch")
    assert policy.for_tool("bash").exceeds(("é" * 30_001).encode())
    assert policy.for_tool("bash").inline_limit_bytes == 120_000


def test_per_tool_overrides_win() -> None:
    """A rule configured for a tool name beats the shell/default split, exact name first."""
    policy = SpillPolicy(tools={"pytest": ToolPolicy(threshold=1_000, tail_bytes=4 * KiB, log_compress=True)})
    assert policy.for_tool("pytest").threshold == 1_000
    assert policy.for_tool("PyTest").log_compress is True
    assert policy.for_tool("bash").threshold == 30_000


def test_failure_preview_favours_the_tail_and_the_retainer_keeps_both() -> None:
    """A non-zero exit shifts the preview tailwards; the retention strategy covers both previews."""
    rule = SpillPolicy().for_tool("bash")
    assert rule.preview(1) == (3840, 26880)
    assert rule.preview(0) == rule.preview(None) == (6 * KiB, 24 * KiB)
    strategy = rule.retention()
    assert (strategy.head_bytes, strategy.tail_bytes) == (6 * KiB, 26880)
    assert rule.smallest_head() == 3840
    explicit = ToolPolicy(threshold=10, head_bytes=100, tail_bytes=100, failure_head_bytes=0,
                          failure_tail_bytes=500)
    assert explicit.preview(2) == (0, 500)


def test_token_budget_and_hard_cap_both_trigger_a_spill() -> None:
    """Under the tool threshold an output still spills when it is over the token budget or the cap."""
    policy = SpillPolicy(max_inline_tokens=100, token_counter=lambda s: len(s.split()))
    assert policy.should_externalize("word " * 101, "bash")
    assert not policy.should_externalize("word " * 100, "bash")
    capped = SpillPolicy(hard_cap_chars=5_000, tools={"x": ToolPolicy(threshold=10**9)})
    assert capped.should_externalize("a" * 5_001, "x")
    assert capped.budget().max_chars == 5_000
    assert "token_counter" not in capped.model_dump()


def test_policy_refuses_unsafe_values() -> None:
    """A hard cap too small for any notice, or a tool name that is not an identifier, is refused."""
    with pytest.raises(ValidationError):
        SpillPolicy(hard_cap_chars=100)
    with pytest.raises(ValidationError):
        SpillPolicy(read_tool="read; rm -rf /")
    with pytest.raises(ValidationError):
        SpillPolicy(unknown_knob=1)  # type: ignore[call-arg]


def test_token_estimate_is_fast_and_leans_high() -> None:
    """The default estimate prices 3 UTF-8 bytes per token, so CJK text is not under-priced."""
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 2
    assert estimate_tokens("日本語") == 3
    counter = default_token_counter()
    assert counter("hello world") > 0
    budget = ContextBudget(10, max_tokens=2)
    assert budget.fits("abcdef") and not budget.fits("abcdefg") and not budget.fits("a" * 11)


def _reference(data: bytes, skip: int, limit: int) -> list[tuple[int, int, int]]:
    out = []
    offset = 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        if offset >= skip and line and ERROR_ANCHOR.search(line) and len(out) < limit:
            out.append((number, offset, offset + len(line)))
        offset += len(line) + 1
    return out


words = st.sampled_from(["ok", "error", "FAILED", "fine", "passed", "Traceback", "é", "😀", "x=1", "warn"])
lines_st = st.lists(st.lists(words, max_size=6).map(" ".join), max_size=60)


@settings(max_examples=200, deadline=None)
@given(lines_st, st.lists(st.integers(0, 5000), max_size=10), st.integers(0, 300), st.integers(0, 6))
def test_salient_scanner_matches_a_line_by_line_reference(
    lines: list[str], cuts: list[int], skip: int, limit: int
) -> None:
    """Whatever the chunking, the scanner finds the first error lines with exact numbers and offsets."""
    data = "\n".join(lines).encode()
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    scanner = SalientScanner(skip_bytes=skip, max_lines=limit)
    for a, b in itertools.pairwise(points):
        scanner.push(data[a:b])
    found = scanner.finish()
    assert [(s.number, s.start, s.end) for s in found] == _reference(data, skip, limit)
    for s in found:
        assert s.text == data[s.start : s.end].decode()


def test_salient_scanner_quotes_around_a_match_deep_in_a_long_line() -> None:
    """A match far into a very long line is quoted around the match, not from the line's start."""
    data = b"a" * 10_000 + b" Error: disk full " + b"b" * 10_000 + b"\n"
    scanner = SalientScanner(max_line_bytes=100)
    scanner.push(data)
    (line,) = scanner.finish()
    assert line.number == 1 and "Error: disk full" in line.text and len(line.text) <= 102
