"""Per-turn budget: one tool call under its threshold each is not enough (docs/design-notes.md).

Ten 30 KB results are each fine and together blow the window. So there are two
limits, per result and per turn, and spilling goes largest first: spilling one big
result usually brings the whole turn back in budget and leaves the smaller results
verbatim, where the model can read them. The function is pure: spilling is a callback
(the Spiller plugs in there), and results that must not be copied (a paged file read
is already a view of something on disk) are never handed to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

#: Characters per token used to turn a context window (tokens) into character budgets.
CHARS_PER_TOKEN = 4
PER_RESULT_SHARE = 0.15
TURN_SHARE = 0.30


@dataclass(frozen=True)
class TurnResult:
    """One tool result of a turn, as the budget sees it."""

    content: str
    tool: str = "tool"
    call_id: str | None = None
    exit_code: int | None = None
    #: False for results that are views of something already stored (paged file
    #: reads): they are never copied, they limit themselves.
    spillable: bool = True
    #: Set by the budget when the content was replaced by a spill callback.
    spilled: bool = False
    #: Whatever the caller wants to carry along (e.g. the Spiller's result).
    extra: Any = None

    @property
    def size(self) -> int:
        return len(self.content)


#: Replace a result by its spilled form (a pointer); called only for spillable results.
SpillCallback = Callable[[TurnResult], TurnResult | str]


@dataclass(frozen=True)
class TurnBudgetReport:
    """What the budget did: the new results (same order) and the arithmetic."""

    results: list[TurnResult]
    spilled: list[int]  # indexes into ``results``
    failed: list[int]  # indexes whose spill callback raised (left inline)
    total_before: int
    total_after: int
    per_result: int
    turn_total: int

    @property
    def within_budget(self) -> bool:
        return self.total_after <= self.turn_total and all(
            r.size <= self.per_result for r in self.results if r.spillable
        )


def scaled_budgets(per_result: int, turn_total: int, context_window: int | None) -> tuple[int, int]:
    """With a context window (tokens), budgets shrink to 15% / 30% of it, never grow."""
    if context_window is None:
        return per_result, turn_total
    if context_window <= 0:
        raise ValueError("context_window must be positive")
    window_chars = context_window * CHARS_PER_TOKEN
    return (
        min(per_result, int(window_chars * PER_RESULT_SHARE)),
        min(turn_total, int(window_chars * TURN_SHARE)),
    )


def enforce_turn_budget(
    results: Sequence[TurnResult],
    per_result: int = 100_000,
    turn_total: int = 200_000,
    context_window: int | None = None,
    *,
    spill: SpillCallback,
) -> TurnBudgetReport:
    """Spill largest-first until every result is within ``per_result`` and the turn within
    ``turn_total`` (characters); stop as soon as both hold.

    Non-spillable results count towards the total but are never passed to ``spill``.
    A callback that raises leaves that result as it was (the context side fails
    open: an over-budget turn beats a lost result), is listed in ``failed``, and the
    next candidate is tried; the callback is where logging belongs.
    """
    per, turn = scaled_budgets(per_result, turn_total, context_window)
    out = list(results)
    total_before = sum(r.size for r in out)
    total = total_before
    spilled: list[int] = []
    failed: list[int] = []
    order = sorted((i for i, r in enumerate(out) if r.spillable), key=lambda i: -out[i].size)
    for i in order:
        current = out[i]
        if current.size <= per and total <= turn:
            break
        try:
            replaced = spill(current)
        except Exception:  # noqa: BLE001 - fail open: keep the result inline, try the next one
            failed.append(i)
            continue
        new = replace(current, content=replaced, spilled=True) if isinstance(replaced, str) \
            else replace(replaced, spilled=True)
        total += new.size - current.size
        out[i] = new
        spilled.append(i)
    return TurnBudgetReport(out, spilled, failed, total_before, total, per, turn)
