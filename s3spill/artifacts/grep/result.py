"""What grep returns: the kept matches with their line excerpts, and their rendering.

A match keeps only an excerpt of its line (:data:`EXCERPT_CHARS` characters around the
match, in display form), so a result stays small whatever the lines; :meth:`GrepResult.render`
spells the footer's next step for the reader's surface (a tool call or the CLI).
They are plain records (:mod:`s3spill.artifacts.plain`): a grep process imports no pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass

from s3spill.artifacts.grep.shown import text
from s3spill.artifacts.plain import PlainRecord
from s3spill.context.read_args import ArgStyle, spell_args
from s3spill.textview import escape

EXCERPT_CHARS = 240
EXCERPT_LEAD = 60


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
        rows = [f"[{self.source_id} | grep {self.pattern!r} | {self.lines_scanned:,} lines]"]
        shown: set[int] = set()
        hits = {m.line_number: m.line for m in self.matches}
        records = {m.line_number: m.record_number for m in self.matches if m.record_number}
        last = 0
        for m in self.matches:
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
        rows.append(self.footer(style))
        return "\n".join(rows) + "\n"

    def footer(self, style: ArgStyle = "call") -> str:
        if not self.total_matches:
            return "[no matching lines]" if self.exact else (
                "[no matching lines found; lines over 4 MiB were searched in windows and a"
                " very long match could be missed]")
        n = len(self.matches)
        if self.omitted == 0 and self.exact:
            plural = "s" if n != 1 else ""
            return f"[{n:,} matching line{plural}; read around one with {spell_args(style, offset='LINE-1')}]"
        count = f"{self.omitted:,} more omitted" if self.exact else (
            f"at least {self.omitted:,} more omitted (a lower bound: lines over 4 MiB were"
            " searched in windows)")
        return (f"[{n:,} of {self.total_matches:,}{'' if self.exact else '+'} matching lines"
                f" shown; {count}; narrow the pattern or raise "
                f"{'--max-matches' if style == 'cli' else 'max_matches'}]")


def excerpt(number: int, line: str, col: int = 0) -> GrepLine:
    """The excerpt of ``line`` kept for a match at character ``col`` (or its start)."""
    start = max(0, col - EXCERPT_LEAD) if len(line) > EXCERPT_CHARS else 0
    piece = line[start : start + EXCERPT_CHARS]
    shown, escaped = escape(piece)
    return GrepLine(number=number, char_start=start, text=shown, escaped=escaped,
                    truncated=start > 0 or start + len(piece) < len(line))


def prefix(raw: bytes) -> str:
    """The first ``EXCERPT_CHARS + 1`` characters of a line, decoding only what that needs."""
    return text(raw[: 4 * (EXCERPT_CHARS + 2)])[: EXCERPT_CHARS + 1]
