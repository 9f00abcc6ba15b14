"""What the grep engine keeps while it searches, and the text a result is rendered as, without dataclasses.

Why apart from :mod:`.result`: ``s3spill grep`` is a process of its own on every search a
model makes, and the records of :mod:`.result` are dataclasses, whose import (it pulls in
``inspect``, ``ast``, ``dis`` and ``tokenize``) cost a grep process ~8 ms, as much as the
plain-Python grep's whole work (issue 35). The engine (:mod:`.engine`, :mod:`.long_line`)
keeps its excerpts and matches as the two small slotted classes below, with the fields
of :class:`~.result.GrepLine` and :class:`~.result.GrepMatch` under the same names;
:meth:`~.engine.Grep.result` turns them into those records, and :meth:`~.engine.Grep.text`
renders them straight away. Both renderings are :func:`render_rows` and
:func:`footer_line`, which :meth:`~.result.GrepResult.render` calls too, so a result and
the CLI's fast grep print the same bytes by construction.
"""

from __future__ import annotations

from s3spill.artifacts.grep.shown import text
from s3spill.context.read_args import spell_args
from s3spill.textview import escape

TYPE_CHECKING = False  # not from typing (~2 ms): the CLI's fast grep imports this module
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Protocol

    from s3spill.context.read_args import ArgStyle

    class LineLike(Protocol):
        """An excerpt's fields (:class:`Excerpt` or :class:`~.result.GrepLine`)."""

        @property
        def number(self) -> int: ...
        @property
        def char_start(self) -> int: ...
        @property
        def text(self) -> str: ...
        @property
        def escaped(self) -> bool: ...
        @property
        def truncated(self) -> bool: ...

    class MatchLike(Protocol):
        """A match's fields (:class:`Found` or :class:`~.result.GrepMatch`)."""

        @property
        def line_number(self) -> int: ...
        @property
        def line(self) -> LineLike: ...
        @property
        def before(self) -> Sequence[LineLike]: ...
        @property
        def after(self) -> Sequence[LineLike]: ...
        @property
        def record_number(self) -> int | None: ...

__all__ = ["EXCERPT_CHARS", "EXCERPT_LEAD", "Excerpt", "Found", "excerpt", "footer_line", "prefix",
           "render_rows"]

EXCERPT_CHARS = 240
EXCERPT_LEAD = 60


class Excerpt:
    """An excerpt of one line (display form): :class:`~.result.GrepLine`'s fields."""

    __slots__ = ("char_start", "escaped", "number", "text", "truncated")

    def __init__(self, number: int, char_start: int, text: str, escaped: bool, truncated: bool) -> None:
        self.number, self.char_start, self.text = number, char_start, text
        self.escaped, self.truncated = escaped, truncated

    def numbered(self, number: int) -> Excerpt:
        """The same excerpt as line ``number``'s."""
        return Excerpt(number, self.char_start, self.text, self.escaped, self.truncated)


class Found:
    """A kept match: :class:`~.result.GrepMatch`'s fields (no record number: the reader adds it)."""

    __slots__ = ("after", "before", "byte_offset", "char_offset", "line", "line_byte_offset", "line_number")

    record_number = None

    def __init__(self, line_number: int, line_byte_offset: int, byte_offset: int, char_offset: int,
                 line: Excerpt, before: tuple[Excerpt, ...] = (), after: tuple[Excerpt, ...] = ()) -> None:
        self.line_number, self.line_byte_offset, self.byte_offset = line_number, line_byte_offset, byte_offset
        self.char_offset, self.line, self.before, self.after = char_offset, line, before, after

    def with_after(self, after: tuple[Excerpt, ...]) -> Found:
        return Found(self.line_number, self.line_byte_offset, self.byte_offset, self.char_offset, self.line,
                     self.before, after)


def excerpt(number: int, line: str, col: int = 0) -> Excerpt:
    """The excerpt of ``line`` kept for a match at character ``col`` (or its start)."""
    start = max(0, col - EXCERPT_LEAD) if len(line) > EXCERPT_CHARS else 0
    piece = line[start : start + EXCERPT_CHARS]
    shown, escaped = escape(piece)
    return Excerpt(number, start, shown, escaped, start > 0 or start + len(piece) < len(line))


def prefix(raw: bytes) -> str:
    """The first ``EXCERPT_CHARS + 1`` characters of a line, decoding only what that needs."""
    return text(raw[: 4 * (EXCERPT_CHARS + 2)])[: EXCERPT_CHARS + 1]


def render_rows(source_id: str, pattern: str, lines_scanned: int, matches: Iterable[MatchLike]) -> list[str]:
    """The header and the match groups of a result's text (the footer is :func:`footer_line`)."""
    matches = tuple(matches)
    rows = [f"[{source_id} | grep {pattern!r} | {lines_scanned:,} lines]"]
    shown: set[int] = set()
    hits = {m.line_number: m.line for m in matches}
    records = {m.line_number: m.record_number for m in matches if m.record_number}
    last = 0
    for m in matches:
        group = [hits.get(ln.number, ln) for ln in (*m.before, m.line, *m.after)]
        group = [ln for ln in group if ln.number not in shown]
        if group and last and group[0].number > last + 1:
            rows.append("--")
        for ln in group:
            mark = ":" if ln.number in hits else "-"
            flag = "!" if ln.escaped else ""
            lead = "…" if ln.char_start else ""
            tail = "…" if ln.truncated and (ln.char_start or len(ln.text)) else ""
            record = f"[record {records[ln.number]:,}] " if ln.number in records else ""
            rows.append(f"{ln.number:>6}{mark}{flag}\t{record}{lead}{ln.text}{tail}")
            shown.add(ln.number)
            last = max(last, ln.number)
    return rows


def footer_line(shown: int, total: int, omitted: int, exact: bool, style: ArgStyle = "call") -> str:
    """A result's last line: how many matched, how many are shown, what to do next."""
    if not total:
        return "[no matching lines]" if exact else (
            "[no matching lines found; lines over 4 MiB were searched in windows and a"
            " very long match could be missed]")
    if omitted == 0 and exact:
        plural = "s" if shown != 1 else ""
        return f"[{shown:,} matching line{plural}; read around one with {spell_args(style, offset='LINE-1')}]"
    count = f"{omitted:,} more omitted" if exact else (
        f"at least {omitted:,} more omitted (a lower bound: lines over 4 MiB were"
        " searched in windows)")
    return (f"[{shown:,} of {total:,}{'' if exact else '+'} matching lines"
            f" shown; {count}; narrow the pattern or raise "
            f"{'--max-matches' if style == 'cli' else 'max_matches'}]")
