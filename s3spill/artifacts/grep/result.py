"""What grep returns: the kept matches with their line excerpts, and their rendering.

A match keeps only an excerpt of its line (:data:`EXCERPT_CHARS` characters around the
match, in display form), so a result stays small whatever the lines; :meth:`GrepResult.render`
spells the footer's next step for the reader's surface (a tool call or the CLI).
They are plain records (:mod:`s3spill.artifacts.plain`): a grep process imports no pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass

from s3spill.artifacts.grep.found import EXCERPT_CHARS as EXCERPT_CHARS
from s3spill.artifacts.grep.found import EXCERPT_LEAD as EXCERPT_LEAD
from s3spill.artifacts.grep.found import Excerpt, Found, footer_line, render_rows
from s3spill.artifacts.grep.found import excerpt as _excerpt
from s3spill.artifacts.grep.found import prefix as prefix
from s3spill.artifacts.plain import PlainRecord
from s3spill.context.read_args import ArgStyle


@dataclass(frozen=True, slots=True)
class GrepLine(PlainRecord):
    """An excerpt of one line (display form, see :mod:`s3spill.textview`)."""

    number: int
    char_start: int
    text: str
    escaped: bool
    truncated: bool


@dataclass(frozen=True, slots=True)
class GrepMatch(PlainRecord):

    line_number: int
    line_byte_offset: int
    byte_offset: int
    char_offset: int
    line: GrepLine
    before: tuple[GrepLine, ...] = ()
    after: tuple[GrepLine, ...] = ()
    #: CSV/TSV: the 1-based record holding the match (a record may span lines).
    record_number: int | None = None


@dataclass(frozen=True)
class GrepResult(PlainRecord):
    """Not slotted: :class:`~s3spill.live.summary.LiveGrepResult` extends :meth:`footer`
    with ``super()``, which a slotted dataclass's methods cannot call (Python < 3.14)."""

    source_id: str
    pattern: str
    context: int
    max_matches: int
    matches: tuple[GrepMatch, ...]
    total_matches: int
    omitted: int
    #: False when ``total_matches``/``omitted`` are lower bounds (see module docstring).
    exact: bool
    lines_scanned: int
    bytes_scanned: int

    def render(self, style: ArgStyle = "call") -> str:
        """The matches as text; ``style`` spells the footer's arguments for the reader's
        surface (``max_matches`` for a tool call, ``--max-matches`` for the CLI)."""
        rows = render_rows(self.source_id, self.pattern, self.lines_scanned, self.matches)
        rows.append(self.footer(style))
        return "\n".join(rows) + "\n"

    def footer(self, style: ArgStyle = "call") -> str:
        return footer_line(len(self.matches), self.total_matches, self.omitted, self.exact, style)


def excerpt(number: int, line: str, col: int = 0) -> GrepLine:
    """The excerpt of ``line`` kept for a match at character ``col`` (or its start)."""
    return grep_line(_excerpt(number, line, col))


def grep_line(kept: Excerpt) -> GrepLine:
    """The record of an excerpt the engine kept."""
    return GrepLine(number=kept.number, char_start=kept.char_start, text=kept.text, escaped=kept.escaped,
                    truncated=kept.truncated)


def grep_match(kept: Found) -> GrepMatch:
    """The record of a match the engine kept."""
    return GrepMatch(line_number=kept.line_number, line_byte_offset=kept.line_byte_offset,
                     byte_offset=kept.byte_offset, char_offset=kept.char_offset, line=grep_line(kept.line),
                     before=tuple(grep_line(b) for b in kept.before),
                     after=tuple(grep_line(a) for a in kept.after))
