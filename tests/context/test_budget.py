"""Per-turn budget: largest first, never copy a paged read, scale to the window."""

from __future__ import annotations

import pytest

from s3spill.context.budget import TurnResult, enforce_turn_budget, scaled_budgets


def pointer_for(result: TurnResult) -> str:
    return f"[pointer to {result.tool} output, {result.size} chars]" + " " * 2000


def test_four_result_turn_spills_only_the_largest() -> None:
    """60k + 30k + 30k + a 30k non-spillable read against a 100k turn: only the 60k result spills."""
    results = [
        TurnResult("g" * 60_000, tool="run_shell", call_id="git-log"),
        TurnResult("r" * 30_000, tool="run_shell", call_id="grep"),
        TurnResult("l" * 30_000, tool="run_shell", call_id="ls"),
        TurnResult("f" * 30_000, tool="read_file", call_id="read", spillable=False),
    ]
    calls: list[str | None] = []

    def spill(result: TurnResult) -> str:
        calls.append(result.call_id)
        return pointer_for(result)

    report = enforce_turn_budget(results, turn_total=100_000, spill=spill)
    assert calls == ["git-log"]
    assert report.spilled == [0]
    assert [r.spilled for r in report.results] == [True, False, False, False]
    assert report.results[1:] == results[1:]
    assert report.total_before == 150_000
    assert report.total_after == 90_000 + len(pointer_for(results[0]))
    assert report.within_budget


def test_a_result_over_the_per_result_limit_spills_even_when_the_turn_fits() -> None:
    """One result over per_result is spilled though the turn total is fine."""
    results = [TurnResult("a" * 120_000), TurnResult("b" * 10)]
    report = enforce_turn_budget(results, spill=lambda r: "ptr")
    assert report.spilled == [0] and report.results[0].content == "ptr"


def test_non_spillable_results_are_never_copied() -> None:
    """A paged file read is never handed to the spill callback, however large."""
    results = [TurnResult("x" * 500_000, tool="read_file", spillable=False), TurnResult("y" * 50)]
    seen: list[TurnResult] = []
    report = enforce_turn_budget(results, spill=lambda r: seen.append(r) or "ptr")
    assert all(r.spillable for r in seen)
    assert report.results[0] is results[0]
    assert not report.within_budget  # honest: the turn is over, but a read limits itself


def test_context_window_scales_the_budgets_down() -> None:
    """With a 32k-token window the budgets become 15% / 30% of it (in characters), never larger."""
    assert scaled_budgets(100_000, 200_000, 32_000) == (19_200, 38_400)
    assert scaled_budgets(100_000, 200_000, 2_000_000) == (100_000, 200_000)
    results = [TurnResult("a" * 25_000), TurnResult("b" * 15_000), TurnResult("c" * 100)]
    report = enforce_turn_budget(results, context_window=32_000, spill=lambda r: "ptr")
    assert report.spilled == [0]
    assert (report.per_result, report.turn_total) == (19_200, 38_400)
    with pytest.raises(ValueError):
        scaled_budgets(1, 1, 0)


def test_spilling_stops_as_soon_as_both_limits_hold() -> None:
    """Largest first, and no further spill once the turn is within budget."""
    results = [TurnResult("a" * n) for n in (40_000, 90_000, 70_000, 50_000)]
    report = enforce_turn_budget(results, turn_total=150_000, spill=lambda r: "p")
    # 250k: spilling the 90k leaves 160,001 (still over), the 70k brings it to 90,002.
    assert report.spilled == [1, 2]
    assert report.total_after == 90_002
    assert [r.content for r in report.results][::3] == ["a" * 40_000, "a" * 50_000]


def test_a_failing_spill_callback_fails_open() -> None:
    """If spilling one result raises, it stays inline and the next largest is tried."""

    def spill(result: TurnResult) -> TurnResult:
        if result.call_id == "bad":
            raise RuntimeError("store down")
        return TurnResult("ptr", result.tool, result.call_id)

    results = [TurnResult("a" * 90_000, call_id="bad"), TurnResult("b" * 80_000, call_id="ok")]
    report = enforce_turn_budget(results, turn_total=100_000, spill=spill)
    assert report.failed == [0] and report.spilled == [1]
    assert report.results[0] is results[0]
    assert report.results[1].content == "ptr" and report.results[1].spilled


def test_the_callback_is_told_how_small_the_replacement_must_be() -> None:
    """Each candidate carries max_chars: what the turn still needs from it, never more than per_result."""
    seen: list[int | None] = []

    def spill(result: TurnResult) -> str:
        seen.append(result.max_chars)
        return "p" * (result.max_chars or 0)

    results = [TurnResult("a" * 60_000), TurnResult("b" * 30_000), TurnResult("c" * 30_000)]
    report = enforce_turn_budget(results, turn_total=100_000, spill=spill)
    assert seen == [40_000] and report.total_after == 100_000 and report.within_budget
    assert report.results[0].max_chars is None


def test_a_replacement_that_does_not_shrink_keeps_the_original() -> None:
    """A pointer as large as the result is dropped, listed in not_smaller, and the next candidate is tried."""
    results = [TurnResult("a" * 5_000), TurnResult("b" * 4_000)]
    report = enforce_turn_budget(results, turn_total=5_000, spill=lambda r: "p" * 5_000)
    assert report.not_smaller == [0, 1] and report.spilled == []
    assert report.results == results and report.over_by == 4_000


def test_emergency_trim_only_touches_results_with_a_locator() -> None:
    """Over the window after spilling: the largest result with a locator is cut to 24,000 chars naming it."""
    results = [TurnResult("r" * 90_000, tool="read", spillable=False, locator="notes.txt lines 1-9000"),
               TurnResult("s" * 60_000, tool="read", spillable=False)]
    report = enforce_turn_budget(results, context_window=30_000, spill=lambda r: "ptr")
    assert report.trimmed == [0] and report.results[1] == results[1]
    cut = report.results[0]
    assert cut.trimmed and cut.size == 24_000 and "notes.txt lines 1-9000" in cut.content
    shown = len(cut.content) - len(cut.content.lstrip("r"))
    assert f"{90_000 - shown} of its 90000 characters are not shown" in cut.content
    assert report.total_after == 84_000
