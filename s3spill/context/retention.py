"""Bounded retention of tool output: what was kept, and exactly how much was not.

Two retainers, because items and text have different resource shapes
(docs/design-notes.md, "Retention library"): :class:`ItemRetainer` counts logical units (paths, grep
matches, search results) and :class:`TextRetainer` counts bytes of a stream and never
cuts inside a UTF-8 sequence. Both are pure (no I/O, no logging) and hold memory bounded
by their limits whatever the input length, so a caller can push a 1 GiB stream through a
retainer while the same chunks go to the artifact store.

Wording is not ours: a retainer reports a neutral :class:`RetentionNotice`, and each
tool turns it into its own hint through :func:`format_retention_notice`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Generic, Literal, TypeVar

from s3spill.context.utf8 import line_count, safe_head_cut, safe_tail_start, to_bytes
from s3spill.textview import show

T = TypeVar("T")

Strategy = Literal["head", "tail", "headTail"]
Unit = Literal["items", "bytes", "chars", "lines"]


@dataclass(frozen=True)
class Omitted:
    """How much was left out: ``none``, an ``exact`` count, or ``unknown``.

    The retainers only ever answer ``none`` or ``exact``; ``unknown`` exists for
    callers that drop content they never counted (a provider that stopped early).
    """

    kind: Literal["none", "exact", "unknown"]
    count: int | None = None

    def __post_init__(self) -> None:
        if self.kind == "exact":
            if self.count is None or self.count < 0:
                raise ValueError("an exact omission needs a non-negative count")
        elif self.count is not None:
            raise ValueError(f"a {self.kind!r} omission carries no count")

    @classmethod
    def none(cls) -> Omitted:
        return cls("none")

    @classmethod
    def exact(cls, count: int) -> Omitted:
        """``exact(0)`` normalises to ``none`` so equality means the same thing."""
        return cls("none") if count == 0 else cls("exact", count)

    @classmethod
    def unknown(cls) -> Omitted:
        return cls("unknown")

    @property
    def amount(self) -> int:
        """The count, 0 for ``none``; refuses ``unknown`` rather than guessing."""
        if self.kind == "unknown":
            raise ValueError("the omitted amount is unknown")
        return self.count or 0


@dataclass(frozen=True)
class PushDecision:
    """The answer to one ``push``.

    ``kept``: the pushed unit/chunk is wholly retained *as of this push* (for
    ``tail`` and ``headTail`` a later push may still evict it). ``truncated``: the
    accumulated result has already lost something.
    """

    kept: bool
    truncated: bool


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class RetainedItems(Generic[T]):
    """Final result of an :class:`ItemRetainer`."""

    items: list[T]
    truncated: bool
    seen: int
    kept: int
    omitted: Omitted


@dataclass(frozen=True)
class RetainedText:
    """Final result of a :class:`TextRetainer`: a prefix and a suffix of the stream.

    ``head`` is a prefix and ``tail`` a suffix of the original bytes; they never
    overlap (``len(head) + len(tail) <= total_bytes``). When nothing was omitted the
    whole stream is in ``head`` and ``tail`` is empty, so decoding never splits a
    character at an internal seam. Byte-level fields are exact; ``head_text`` and
    ``tail_text`` are the display form of :mod:`s3spill.textview` (a line with bytes that
    are not UTF-8 shows them as ``\\xHH``, as a page read and grep do).
    ``gap_ends_with_newline`` says whether the last omitted byte is a newline, which
    is what makes the gap's line range exact. ``line_edges``: a narrowing moves its cuts
    to line edges where lines are short; a view already cut at element edges (JSON,
    records: :func:`s3spill.typed.cuts.snap`) clears it, so a later narrowing keeps them.
    """

    head: bytes
    tail: bytes
    total_bytes: int
    total_newlines: int
    ends_with_newline: bool
    gap_ends_with_newline: bool = False
    line_edges: bool = True

    def __post_init__(self) -> None:
        if len(self.head) + len(self.tail) > self.total_bytes:
            raise ValueError("head and tail overlap")

    @property
    def kept_bytes(self) -> int:
        return len(self.head) + len(self.tail)

    @property
    def omitted_bytes(self) -> int:
        return self.total_bytes - self.kept_bytes

    @property
    def omitted(self) -> Omitted:
        return Omitted.exact(self.omitted_bytes)

    @property
    def truncated(self) -> bool:
        return self.kept_bytes < self.total_bytes

    @property
    def complete(self) -> bool:
        """True when ``head + tail`` is the whole stream."""
        return not self.truncated

    @property
    def head_text(self) -> str:
        return show(self.head)

    @property
    def tail_text(self) -> str:
        return show(self.tail)

    @property
    def text(self) -> str:
        """Head and tail joined with nothing between: callers add their own gap marker."""
        return self.head_text + self.tail_text

    @property
    def line_count(self) -> int:
        """Lines in the whole stream; a final line without a newline still counts."""
        return line_count(self.total_bytes, self.total_newlines, self.ends_with_newline)

    @property
    def tail_first_line(self) -> int:
        """1-based line on which the tail starts."""
        return self.total_newlines - self.tail.count(b"\n") + 1

    @property
    def gap_lines(self) -> tuple[int, int]:
        """1-based first and last line holding omitted bytes (inclusive).

        The end lines may be shared with the head or the tail; reading this range
        by line therefore returns every omitted byte. ``(0, 0)`` when nothing is omitted.
        """
        if not self.truncated:
            return (0, 0)
        first = self.head.count(b"\n") + 1
        last = self.tail_first_line - (1 if self.gap_ends_with_newline else 0)
        return (first, max(first, last))

    def narrow(self, head_bytes: int, tail_bytes: int) -> RetainedText:
        """Keep at most ``head_bytes`` of the prefix and ``tail_bytes`` of the suffix.

        Cuts are UTF-8 safe and fall between lines where the lines are short (see
        :func:`line_head_cut`), and the result stays a prefix/suffix pair of the same
        stream, so omitted counts remain exact. Narrowing a complete result splits it.
        """
        head_bytes = max(0, head_bytes)
        tail_bytes = max(0, tail_bytes)
        if self.complete:
            whole = self.head + self.tail
            if len(whole) <= head_bytes + tail_bytes:
                return self
            cut = self._head_edge(whole, safe_head_cut(whole, head_bytes))
            start = self._tail_edge(whole, safe_tail_start(whole, max(cut, len(whole) - tail_bytes)),
                                    floor=cut)
            return replace(
                self, head=whole[:cut], tail=whole[start:],
                gap_ends_with_newline=start > cut and whole[start - 1] == 0x0A,
            )
        head = self.head[: self._head_edge(self.head, safe_head_cut(self.head, head_bytes))]
        start = self._tail_edge(self.tail, safe_tail_start(self.tail, max(0, len(self.tail) - tail_bytes)))
        gap_nl = self.tail[start - 1] == 0x0A if start > 0 else self.gap_ends_with_newline
        return replace(self, head=head, tail=self.tail[start:], gap_ends_with_newline=gap_nl)

    def _head_edge(self, data: bytes, cut: int) -> int:
        return line_head_cut(data, cut) if self.line_edges else cut

    def _tail_edge(self, data: bytes, start: int, floor: int = 0) -> int:
        return line_tail_start(data, start, floor) if self.line_edges else start

    @classmethod
    def of(cls, data: bytes | bytearray | str) -> RetainedText:
        """A complete result for data already in memory."""
        raw = to_bytes(data) if isinstance(data, str) else bytes(data)
        return cls(raw, b"", len(raw), raw.count(b"\n"), raw.endswith(b"\n"))


# --------------------------------------------------------------------------- retainers


@dataclass(frozen=True)
class ItemStrategy:
    """Item retention keeps a head window only; more kinds wait for a user."""

    max_items: int
    kind: Literal["head"] = "head"

    def __post_init__(self) -> None:
        if self.max_items < 0:
            raise ValueError("max_items must be >= 0")


class ItemRetainer(Generic[T]):
    """Keep the first ``max_items`` units and count every unit pushed after them."""

    def __init__(self, strategy: ItemStrategy | int) -> None:
        self.strategy = strategy if isinstance(strategy, ItemStrategy) else ItemStrategy(strategy)
        self._items: list[T] = []
        self._seen = 0

    def push(self, item: T) -> PushDecision:
        self._seen += 1
        if len(self._items) < self.strategy.max_items:
            self._items.append(item)
            return PushDecision(kept=True, truncated=False)
        return PushDecision(kept=False, truncated=True)

    def extend(self, items: Iterable[T]) -> PushDecision:
        """Push each item; the decision is that of the last one (all kept if empty)."""
        decision = PushDecision(kept=True, truncated=self._seen > len(self._items))
        for item in items:
            decision = self.push(item)
        return decision

    def finish(self) -> RetainedItems[T]:
        kept = len(self._items)
        return RetainedItems(
            items=list(self._items),
            truncated=self._seen > kept,
            seen=self._seen,
            kept=kept,
            omitted=Omitted.exact(self._seen - kept),
        )

    def notice(self, scope: str) -> RetentionNotice:
        res = self.finish()
        return RetentionNotice(scope, "head", "items", self.strategy.max_items, res.kept, res.omitted)


@dataclass(frozen=True)
class TextStrategy:
    """``head`` (first bytes), ``tail`` (last bytes) or ``headTail`` (both, middle omitted)."""

    kind: Strategy
    head_bytes: int = 0
    tail_bytes: int = 0

    def __post_init__(self) -> None:
        if self.head_bytes < 0 or self.tail_bytes < 0:
            raise ValueError("byte limits must be >= 0")
        if self.kind == "head" and self.tail_bytes:
            raise ValueError("a head strategy keeps no tail")
        if self.kind == "tail" and self.head_bytes:
            raise ValueError("a tail strategy keeps no head")

    @classmethod
    def head(cls, max_bytes: int) -> TextStrategy:
        return cls("head", head_bytes=max_bytes)

    @classmethod
    def tail(cls, max_bytes: int) -> TextStrategy:
        return cls("tail", tail_bytes=max_bytes)

    @classmethod
    def head_tail(cls, head_bytes: int, tail_bytes: int) -> TextStrategy:
        return cls("headTail", head_bytes=head_bytes, tail_bytes=tail_bytes)

    @property
    def limit(self) -> int | tuple[int, int]:
        if self.kind == "head":
            return self.head_bytes
        if self.kind == "tail":
            return self.tail_bytes
        return (self.head_bytes, self.tail_bytes)


class TextRetainer:
    """Retain a prefix and/or suffix of a byte stream in memory bounded by the limits.

    Push chunks in order, then call :meth:`finish`. The head buffer never exceeds
    ``head_bytes``; the tail window is trimmed whenever it grows past twice
    ``tail_bytes`` (plus one byte of look-behind that makes the gap's line range
    exact), so peak memory is about ``head_bytes + 2 * tail_bytes`` whatever the
    stream length or chunk sizes. Newlines are counted on the way (a C-speed
    ``bytes.count``) so a gap can be described in lines as well as bytes.
    """

    def __init__(self, strategy: TextStrategy) -> None:
        self.strategy = strategy
        self._head = bytearray()
        self._tail = bytearray()  # last tail_bytes + 1 bytes after the head (at least)
        self._total = 0
        self._newlines = 0
        self._last = -1
        self._finished = False

    @property
    def total_bytes(self) -> int:
        return self._total

    @property
    def buffered_bytes(self) -> int:
        """Bytes held right now; stays under ``head_bytes + 2 * (tail_bytes + 1)``."""
        return len(self._head) + len(self._tail)

    def push(self, chunk: bytes | bytearray | memoryview | str) -> PushDecision:
        if self._finished:
            raise RuntimeError("push after finish")
        if isinstance(chunk, str):
            chunk = to_bytes(chunk)
        data = memoryview(chunk).cast("B")
        size = len(data)
        if size == 0:
            return PushDecision(kept=True, truncated=self._truncated_so_far())
        self._total += size
        counted = chunk if isinstance(chunk, bytes | bytearray) else data.tobytes()
        self._newlines += counted.count(b"\n")
        self._last = data[-1]
        taken = max(0, min(self.strategy.head_bytes - len(self._head), size))
        if taken:
            self._head += data[:taken]
        rest = data[taken:]
        window = self.strategy.tail_bytes + 1
        if len(rest) >= window:
            self._tail = bytearray(rest[len(rest) - window:])
        elif len(rest):
            self._tail += rest
            if len(self._tail) > 2 * window:
                del self._tail[: len(self._tail) - window]
        kept = len(rest) <= self.strategy.tail_bytes
        return PushDecision(kept=kept, truncated=self._truncated_so_far())

    def _truncated_so_far(self) -> bool:
        return self._total > self.strategy.head_bytes + self.strategy.tail_bytes

    def finish(self) -> RetainedText:
        """The retained prefix/suffix; idempotent, and no push is accepted after it."""
        self._finished = True
        total = self._total
        head = bytes(self._head)
        beyond = total - len(head)
        keep = min(beyond, self.strategy.tail_bytes)
        tail = bytes(self._tail[len(self._tail) - keep:]) if keep else b""
        ends_nl = self._last == 0x0A
        if beyond == keep:
            # Nothing omitted: one contiguous piece, so no seam can split a character.
            return RetainedText(head + tail, b"", total, self._newlines, ends_nl)
        head = head[: safe_head_cut(head, len(head))]
        window = bytes(self._tail[len(self._tail) - keep - 1:])  # one byte of look-behind
        start = safe_tail_start(window, 1)
        tail = window[start:]
        return RetainedText(head, tail, total, self._newlines, ends_nl, window[start - 1] == 0x0A)

    def notice(self, scope: str, result: RetainedText | None = None) -> RetentionNotice:
        res = result if result is not None else self.finish()
        s = self.strategy
        return RetentionNotice(scope, s.kind, "bytes", s.limit, res.kept_bytes, res.omitted)


# --------------------------------------------------------------------------- notices


@dataclass(frozen=True)
class RetentionNotice:
    """Neutral facts about one retention; a tool words the hint."""

    scope: str
    strategy: Strategy
    unit: Unit
    limit: int | tuple[int, int]
    kept: int
    omitted: Omitted = field(default_factory=Omitted.none)


def describe_omitted(omitted: Omitted, unit: Unit) -> str:
    """``Omitted 1494 bytes.`` / ``Omitted an unknown number of items.`` / ``Nothing omitted.``"""
    if omitted.kind == "none":
        return "Nothing omitted."
    if omitted.kind == "unknown":
        return f"Omitted an unknown number of {unit}."
    count = omitted.amount
    noun = unit[:-1] if count == 1 else unit
    return f"Omitted {count} {noun}."


NoticeFormatter = Callable[[RetentionNotice], str]


def format_retention_notice(notice: RetentionNotice, hint: NoticeFormatter | None = None) -> str:
    """The shared omission sentence, followed by the tool's own hint when one is given.

    Returns ``""`` when nothing was omitted: a footer about nothing is noise.
    """
    if notice.omitted.kind == "none":
        return ""
    base = f"({notice.scope}: {describe_omitted(notice.omitted, notice.unit)}"
    extra = hint(notice).strip() if hint else ""
    return f"{base} {extra})" if extra else f"{base})"


def line_head_cut(data: bytes, cut: int) -> int:
    """``cut``, moved back to just after the last newline before it when the line it would
    split is short (under a quarter of what is kept): short lines are shown whole (``seq``'s
    line 1451 is "1451", never "1"), and one long line (minified JSON) is still cut."""
    newline = data.rfind(b"\n", 0, cut)
    return newline + 1 if newline >= 0 and cut - newline - 1 < cut // 4 else cut


def line_tail_start(data: bytes, start: int, floor: int = 0) -> int:
    """``start``, moved on to the next line's start when the piece of line it would begin
    with is short (under a quarter of what is kept), as :func:`line_head_cut` does."""
    if start <= floor or data[start - 1] == 0x0A:
        return start
    newline = data.find(b"\n", start)
    kept = len(data) - start
    return newline + 1 if 0 <= newline < len(data) - 1 and newline - start < kept // 4 else start
