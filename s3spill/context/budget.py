"""Per-turn budget: one tool call under its threshold each is not enough (docs/design-notes.md).

Ten 30 KB results are each fine and together blow the window. So there are two
limits, per result and per turn, and spilling goes largest first: spilling one big
result usually brings the whole turn back in budget and leaves the smaller results
verbatim, where the model can read them. The function is pure: spilling is a callback
(the Spiller plugs in there), and results that must not be copied (a paged file read
is already a view of something on disk) are never handed to it.

A replacement must shrink the turn, or spilling is pointless: each candidate is handed
to the callback with ``max_chars`` set to what the turn still needs from it (a shell
result's usual 30 KiB preview would otherwise make a 30,000-character result *larger*),
and a replacement that is not smaller than the original is dropped for the original.
When the context window would still overflow, the seed's last resort applies: the
largest remaining results that name a ``locator`` are cut to a fixed size (lossy, but
never a dead end: the cut says where the whole result is).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from s3spill.context.tokens import TokenCounter, estimate_tokens

#: Characters per token used to turn a context window (tokens) into character budgets.
CHARS_PER_TOKEN = 4
PER_RESULT_SHARE = 0.15
TURN_SHARE = 0.30
#: Size of a result cut by the emergency trim (docs/design-notes.md, per-turn budgets).
EMERGENCY_TRIM_CHARS = 24_000



@dataclass(frozen=True)
class ContextBudget:
    """How much one piece of context text may take.

    ``max_chars`` is the hard cap and always holds. ``max_tokens`` is the optional
    soft budget priced by ``count_tokens``; when even the smallest notice cannot fit
    it, renderers fall back to the hard cap alone.
    """

    max_chars: int
    max_tokens: int | None = None
    count_tokens: TokenCounter = estimate_tokens

    def __post_init__(self) -> None:
        if self.max_chars < 0 or (self.max_tokens is not None and self.max_tokens < 0):
            raise ValueError("budgets must be >= 0")

    def fits(self, text: str) -> bool:
        if len(text) > self.max_chars:
            return False
        return self.max_tokens is None or self.count_tokens(text) <= self.max_tokens

    def chars_only(self) -> ContextBudget:
        """The same hard cap without the token budget (the fallback)."""
        return ContextBudget(self.max_chars, None, self.count_tokens)


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
    #: Where the whole result can be read again (e.g. ``read_artifact(source_id="…")`` or a
    #: file path); only a result with one may be cut by the emergency trim.
    locator: str | None = None
    #: Set by the budget on the result it hands to the spill callback: the most
    #: characters the replacement should take for the turn to fit.
    max_chars: int | None = None
    #: Set by the budget when the emergency trim cut the content.
    trimmed: bool = False

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
    #: Indexes whose replacement was not smaller than the original (original kept).
    not_smaller: list[int] = field(default_factory=list)
    #: Indexes cut by the emergency trim (the context window would have overflowed).
    trimmed: list[int] = field(default_factory=list)
    #: The window in characters the emergency trim protected (None: no window given).
    window_chars: int | None = None

    @property
    def within_budget(self) -> bool:
        return self.total_after <= self.turn_total and all(
            r.size <= self.per_result for r in self.results if r.spillable
        )

    @property
    def over_by(self) -> int:
        """Characters over ``turn_total`` after spilling (0 within it)."""
        return max(0, self.total_after - self.turn_total)

    @property
    def why_over(self) -> str | None:
        """Why the turn is still over budget, in words for a log line; None when it is not."""
        if self.within_budget:
            return None
        reasons = []
        fixed = sum(r.size for r in self.results if not r.spillable)
        if fixed:
            reasons.append(f"{fixed} characters are results that must not be copied (paged reads)")
        if self.failed:
            reasons.append(f"{len(self.failed)} result(s) could not be stored and stay inline")
        if self.not_smaller:
            reasons.append(f"{len(self.not_smaller)} result(s) would not get smaller as a pointer")
        pointers = sum(self.results[i].size for i in self.spilled)
        if pointers:
            reasons.append(f"{len(self.spilled)} pointer(s) take {pointers} characters")
        return f"{self.over_by} characters over the turn budget of {self.turn_total}: " + "; ".join(reasons)


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
    history_chars: int = 0,
) -> TurnBudgetReport:
    """Spill largest-first until every result is within ``per_result`` and the turn within
    ``turn_total`` (characters); stop as soon as both hold.

    Each candidate reaches ``spill`` with ``max_chars`` set to the most its replacement
    may take: what the turn still needs (never more than ``per_result``, always less
    than the result). A replacement that is not smaller is dropped (listed in
    ``not_smaller``). Non-spillable results count towards the total but are never
    passed to ``spill``. A callback that raises leaves that result as it was (the
    context side fails open: an over-budget turn beats a lost result), is listed in
    ``failed``, and the next candidate is tried; the callback is where logging belongs.

    With a ``context_window`` (tokens), if the turn plus ``history_chars`` (the rest of
    the request) would still not fit the window, the largest remaining results that
    carry a ``locator`` are cut to :data:`EMERGENCY_TRIM_CHARS`, the cut naming the
    locator (listed in ``trimmed``).
    """
    per, turn = scaled_budgets(per_result, turn_total, context_window)
    out = list(results)
    total_before = sum(r.size for r in out)
    total = total_before
    spilled: list[int] = []
    failed: list[int] = []
    not_smaller: list[int] = []
    order = sorted((i for i, r in enumerate(out) if r.spillable), key=lambda i: -out[i].size)
    for i in order:
        current = out[i]
        excess = total - turn
        if current.size <= per and excess <= 0:
            break
        target = per if excess <= 0 else min(per, max(0, current.size - excess))
        try:
            replaced = spill(replace(current, max_chars=target))
        except Exception:  # noqa: BLE001 - fail open: keep the result inline, try the next one
            failed.append(i)
            continue
        new = replace(current, content=replaced, spilled=True) if isinstance(replaced, str) \
            else replace(replaced, spilled=True, max_chars=None)
        if new.size >= current.size:  # a pointer larger than the result helps nobody
            not_smaller.append(i)
            continue
        total += new.size - current.size
        out[i] = new
        spilled.append(i)
    trimmed: list[int] = []
    window = context_window * CHARS_PER_TOKEN if context_window is not None else None
    if window is not None:
        total = _emergency_trim(out, total, window - history_chars, trimmed)
    return TurnBudgetReport(out, spilled, failed, total_before, total, per, turn, not_smaller, trimmed,
                            window)


def emergency_trim(result: TurnResult, size: int = EMERGENCY_TRIM_CHARS) -> TurnResult:
    """``result`` cut to ``size`` characters: its head, then a marker naming its locator."""
    if result.locator is None:
        raise ValueError("only a result with a locator may be trimmed (no dead ends)")
    if result.size <= size:
        return result
    marker = (f"\n[s3spill] Emergency trim: the context window is nearly full, so this result "
              f"is cut here; {{dropped}} of its {result.size} characters are not shown. The whole "
              f"result is at {result.locator[:400]} - read it from there in pages.")
    keep = max(0, size - len(marker.format(dropped=result.size)))
    text = result.content[:keep] + marker.format(dropped=result.size - keep)
    return replace(result, content=text, trimmed=True)


def _emergency_trim(out: list[TurnResult], total: int, room: int, trimmed: list[int]) -> int:
    """Cut the largest results with a locator until ``total`` fits ``room``; the new total."""
    order = sorted((i for i, r in enumerate(out) if r.locator is not None), key=lambda i: -out[i].size)
    for i in order:
        if total <= room or out[i].size <= EMERGENCY_TRIM_CHARS:
            break
        cut = emergency_trim(out[i])
        total += cut.size - out[i].size
        out[i] = cut
        trimmed.append(i)
    return total
