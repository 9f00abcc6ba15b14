"""The per-turn budget with the real Spiller spilling: largest first, never a file read."""

from __future__ import annotations

import logging

import pytest

from s3spill.context.budget import TurnResult
from s3spill.spill.spiller import Spiller, SpillResult
from s3spill.store.base import ObjectStore
from s3spill.testing import Fault, FaultyStore

SESSION = "session-turn"


def _text(n: int, tag: str) -> str:
    line = f"{tag} result line with some words in it\n"
    return (line * (n // len(line) + 1))[:n]


def test_only_the_largest_result_is_spilled(store: ObjectStore) -> None:
    """60k + 30k + 30k + a 30k file read against a 100k turn: only the 60k result is stored."""
    results = [
        TurnResult(_text(30_000, "a"), tool="search", call_id="a"),
        TurnResult(_text(60_000, "b"), tool="search", call_id="b"),
        TurnResult(_text(30_000, "c"), tool="web_fetch", call_id="c"),
        TurnResult(_text(30_000, "file"), tool="read", call_id="d", spillable=False),
    ]
    with Spiller(store, SESSION) as spiller:
        report = spiller.enforce_turn_budget(results, turn_total=100_000)
    assert report.spilled == [1] and report.failed == []
    assert report.within_budget and report.total_after <= 100_000
    spilled = report.results[1]
    assert isinstance(spilled.extra, SpillResult) and spilled.extra.artifact is not None
    assert spilled.extra.artifact.source_id in spilled.content and spilled.spilled
    assert [r.content for i, r in enumerate(report.results) if i != 1] == \
        [r.content for i, r in enumerate(results) if i != 1]
    assert report.results[3].spillable is False


def test_a_result_that_is_already_a_pointer_is_not_spilled_again(store: ObjectStore) -> None:
    """A result marked spilled is never stored a second time, however large."""
    results = [TurnResult(_text(150_000, "p"), tool="search", spilled=True),
               TurnResult(_text(80_000, "q"), tool="search")]
    with Spiller(store, SESSION) as spiller:
        report = spiller.enforce_turn_budget(results, turn_total=100_000)
    assert report.spilled == [1]
    assert report.results[0].content == results[0].content and report.results[0].spillable


def test_a_small_result_is_stored_when_the_turn_needs_it(store: ObjectStore) -> None:
    """Under its own threshold but over the turn budget: stored anyway, largest first."""
    results = [TurnResult(_text(20_000, "s"), tool="bash"), TurnResult(_text(25_000, "t"), tool="search")]
    with Spiller(store, SESSION) as spiller:
        report = spiller.enforce_turn_budget(results, turn_total=30_000)
    assert report.spilled == [1] and report.total_after <= 30_000


def test_when_the_store_fails_the_results_stay_inline(local_store: ObjectStore) -> None:
    """Fail open: nothing stored, every result kept as it was, the failures listed."""
    store = FaultyStore(local_store, [Fault("*", "unavailable", times=10**9)])
    results = [TurnResult(_text(60_000, "x"), tool="search"), TurnResult(_text(50_000, "y"), tool="search")]
    report = Spiller(store, SESSION).enforce_turn_budget(results, turn_total=50_000)
    assert report.spilled == [] and sorted(report.failed) == [0, 1]
    assert [r.content for r in report.results] == [r.content for r in results]


def test_eight_bash_results_bring_the_turn_within_budget(store: ObjectStore) -> None:
    """8 x 30,000-char bash results against the 200,000 default: every replacement shrinks, the turn fits."""
    results = [TurnResult(_text(30_000, f"r{i}"), tool="bash", call_id=f"c{i}") for i in range(8)]
    with Spiller(store, SESSION) as spiller:
        report = spiller.enforce_turn_budget(results)
    assert report.total_before == 240_000
    assert report.within_budget and report.total_after <= 200_000 and report.why_over is None
    assert report.spilled and report.failed == [] and report.not_smaller == []
    for i in report.spilled:
        new, old = report.results[i], results[i]
        assert new.size < old.size
        assert isinstance(new.extra, SpillResult) and new.extra.artifact is not None
        assert new.extra.artifact.source_id in new.content and new.locator is not None
    assert all(report.results[i].content == results[i].content
               for i in range(8) if i not in report.spilled)


def test_bash_results_and_a_file_read_fit_a_100k_turn(store: ObjectStore) -> None:
    """60k + 30k + 30k bash results and a 30k file read against 100k: the turn ends within it."""
    results = [TurnResult(_text(60_000, "g"), tool="bash"), TurnResult(_text(30_000, "h"), tool="bash"),
               TurnResult(_text(30_000, "i"), tool="bash"),
               TurnResult(_text(30_000, "f"), tool="read", spillable=False)]
    with Spiller(store, SESSION) as spiller:
        report = spiller.enforce_turn_budget(results, turn_total=100_000)
    assert report.total_before == 150_000
    assert report.spilled == [0] and report.within_budget and report.total_after <= 100_000
    assert report.results[1:] == results[1:]


def test_a_pointer_larger_than_its_result_is_not_used(store: ObjectStore,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """Results smaller than the smallest pointer stay verbatim; the report and the log say why it is over."""
    results = [TurnResult(_text(300, "x"), tool="bash"), TurnResult(_text(250, "y"), tool="search")]
    with caplog.at_level(logging.WARNING), Spiller(store, SESSION) as spiller:
        report = spiller.enforce_turn_budget(results, turn_total=400)
    assert "spill.turn_over_budget" in caplog.text
    assert [r.content for r in report.results] == [r.content for r in results]
    assert report.spilled == [] and sorted(report.not_smaller) == [0, 1]
    assert not report.within_budget and report.over_by == 150
    assert report.why_over is not None and "would not get smaller" in report.why_over


def test_the_emergency_trim_cuts_a_pointer_but_keeps_its_locator(store: ObjectStore) -> None:
    """Over the window even after spilling: the largest pointer is cut to 24,000 chars, locator kept."""
    with Spiller(store, SESSION) as first:
        big = first.externalize(_text(400_000, "z"), "search")
    pointer = TurnResult("p" * 90_000, tool="search", spilled=True, extra=big)
    read = TurnResult(_text(40_000, "f"), tool="read", spillable=False)
    with Spiller(store, SESSION) as spiller:
        report = spiller.enforce_turn_budget([pointer, read], context_window=25_000)
    assert report.window_chars == 100_000 and report.trimmed == [0]
    cut = report.results[0]
    assert cut.trimmed and cut.size <= 24_000 and big.artifact is not None
    assert f'read_artifact(source_id="{big.artifact.source_id}")' in cut.content
    assert report.results[1] == read and report.total_after <= 100_000
