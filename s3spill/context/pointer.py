"""The model-facing text for an externalized output: preview, gap marker, notice.

One template (tested verbatim)::

    <head>
    [… 2066000 bytes omitted (the rest of line 40, lines 41–38999, the start of line 39000) …]
    <tail>
    [s3spill] Full output of bash (call c-7, exit code 3): 2097212 bytes, 40001 lines,
    SHA-256 0123456789abcdef, stored as source_id="<source id>".
    Summary: <one line>
    Page it with read_artifact(source_id, offset=<lines to skip>, limit=<number of lines>)
    - line N is at offset=N-1; add char_offset=<n> ... - or search it with
    grep_artifact(source_id, ...).
    Do not re-run the command: its full output is already stored.

The context text starts with the output's first bytes and its tail section ends with the
output's last bytes; the gap names a line cut by the head or the tail as such (see
:func:`gap_where`), and ``PointerFacts.style`` spells the reading hints as tool calls or as
``s3spill read``/``s3spill grep`` commands; the notice says where the rest is, how big it is, how to page and
search it, and not to re-run the command (docs/design-notes.md).

Budgeting follows docs/design-notes.md, "Hard cap and soft budget": before cutting, the
worst-case notice (every number at its widest, every salient line) is priced and
reserved, and only what is left goes to head and tail, so the final text, notice
included, never exceeds the budget. If the token budget cannot hold even the worst-case
notice, we fall back to the hard character cap alone; if that cannot hold it either, the
text is clipped with a fixed marker. The renderer takes plain data only (no store, no
I/O).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from s3spill.context.budget import ContextBudget
from s3spill.context.policy import GREP_TOOL, READ_TOOL
from s3spill.context.quoting import no_ids, quote_lines, quoted_string
from s3spill.context.retention import Omitted, RetainedText
from s3spill.context.salient import SalientLine

CLIPPED_MARKER = "\n<response clipped: the rest of this output is not shown>"
_SCALE_STEPS = 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")

Mode = Literal["pointer", "pointer_hard_cap", "degraded", "degraded_hard_cap", "clipped"]


@dataclass(frozen=True)
class PointerFacts:
    """What the notice says about the stored output; plain data, no store types.

    ``total_bytes``/``line_count`` describe the *stored* output; they default to
    the previewed stream's. ``view`` names a preview that is not the raw output
    (e.g. a log-compressed view), whose gap is then counted in the view's bytes.
    """

    source_id: str
    tool: str
    sha256: str
    summary: str
    call_id: str | None = None
    exit_code: int | None = None
    total_bytes: int | None = None
    line_count: int | None = None
    read_tool: str = READ_TOOL
    grep_tool: str = GREP_TOOL
    view: str | None = None
    #: One sentence about how the output was captured (e.g. a background process kept it open).
    note: str | None = None
    #: ``tools``: reading back is a call of ``read_tool``/``grep_tool``; ``cli``: a command.
    style: Literal["tools", "cli"] = "tools"
    #: What kind of output this is and how else it can be read (s3spill.typed.detect);
    #: one or more lines put after the summary, None for plain text.
    type_note: str | None = None
    #: Sentences on what the stored copy or the preview differs in (secrets masked, a
    #: truncated copy), one line each after the note.
    notes: tuple[str, ...] = ()
    #: Size of the stored copy when it differs from ``total_bytes`` (a capped copy): the
    #: digest is then that copy's, and the notice says so.
    stored_bytes: int | None = None


@dataclass(frozen=True)
class DegradedFacts:
    """What the degraded notice says: no locator, because nothing was saved."""

    tool: str
    reason: str
    call_id: str | None = None
    exit_code: int | None = None
    note: str | None = None
    notes: tuple[str, ...] = ()


def _notes(notes: tuple[str, ...]) -> str:
    return "".join(f"{one_line(note, 400)}\n" for note in notes)


@dataclass(frozen=True)
class RenderedContext:
    """The text for the model and what it shows of the output."""

    text: str
    mode: Mode
    shown: RetainedText
    salient: tuple[SalientLine, ...] = ()

    @property
    def omitted(self) -> Omitted:
        return self.shown.omitted


def one_line(text: str, limit: int) -> str:
    """Collapse control characters and cap the length: untrusted strings in a notice."""
    flat = _CONTROL.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)] + "…"


def summarize(retained: RetainedText, tool: str, exit_code: int | None = None, limit: int = 160) -> str:
    """A deterministic one-line summary: first non-empty line (and last, on failure).

    No model call, so it works offline and costs nothing; a caller with
    a task-aware summariser can pass its own, it is capped the same way.
    """
    first = next((ln for ln in retained.head_text.splitlines() if ln.strip()), "")
    body = quoted_string(one_line(first, limit)) if first else "(empty)"
    if exit_code:
        source = retained.tail_text or retained.head_text
        last = next((ln for ln in reversed(source.splitlines()) if ln.strip()), "")
        if last and last != first:
            body += f" … {quoted_string(one_line(last, limit))}"
    prefix = f"{one_line(tool, 40)}" + (f" exit {exit_code}" if exit_code is not None else "")
    return one_line(f"{prefix}: {body}", limit)


# --------------------------------------------------------------------------- template


def _who(tool: str, call_id: str | None, exit_code: int | None) -> str:
    extras = []
    if call_id:
        extras.append(f"call {one_line(call_id, 64)}")
    if exit_code is not None:
        extras.append(f"exit code {exit_code}")
    return one_line(tool, 64) + (f" ({', '.join(extras)})" if extras else "")


def _gap_block(view: RetainedText, salient: Sequence[SalientLine], labelled: str | None,
               worst: bool) -> str:
    """The gap marker, exact unless ``worst`` (then every number is at its widest)."""
    if not worst and not view.truncated:
        return ""
    if worst:
        omitted = view.total_bytes
        n = view.line_count
        where = f"the rest of line {n}, lines {n}–{n}, the start of line {n}"
    else:
        omitted = view.omitted_bytes
        where = gap_where(view)
    if labelled:
        head = f"[… {omitted} bytes of the {labelled} omitted"
    else:
        head = f"[… {omitted} bytes omitted ({where})"
    if not salient:
        return head + " …]\n"
    quoted = "".join(f"\n  line {s.number}: {one_line(no_ids(s.text), 2_000)}" for s in salient)
    return head + "; error lines among them:" + quoted + "\n…]\n"


def _note_line(note: str | None) -> str:
    return f"Note: {one_line(note, 300)}.\n" if note else ""


def gap_where(view: RetainedText) -> str:
    """Which lines the gap holds, exact about the partial lines at its ends.

    A head that ends mid-line shows only the start of its last line, and a tail that starts
    mid-line only the end of its first; saying "lines 67–543213" for that gap would claim
    67 and 543213 are omitted whole. So: ``lines 68–543212``, with ``the rest of line 67``
    and ``the start of line 543213`` when those are cut (or ``the middle of line 67`` when
    both cuts fall in one line). Reading the lines named returns every omitted byte.
    """
    first, last = view.gap_lines
    head_cut = bool(view.head) and not view.head.endswith(b"\n")
    tail_cut = bool(view.tail) and not view.gap_ends_with_newline
    if head_cut and tail_cut and first == last:
        return f"the middle of line {first}"
    parts = [f"the rest of line {first}"] if head_cut else []
    lo, hi = first + int(head_cut), last - int(tail_cut)
    if lo == hi:
        parts.append(f"line {lo}")
    elif lo < hi:
        parts.append(f"lines {lo}–{hi}")
    if tail_cut:
        parts.append(f"the start of line {last}")
    return ", ".join(parts)


def pointer_footer(facts: PointerFacts, view: RetainedText) -> str:
    """The notice after the tail: locator, size, digest, summary, how to read, do not re-run."""
    sid = one_line(facts.source_id, 200)
    total = facts.total_bytes if facts.total_bytes is not None else view.total_bytes
    lines = facts.line_count if facts.line_count is not None else view.line_count
    read, grep = one_line(facts.read_tool, 64), one_line(facts.grep_tool, 64)
    view_note = ""
    if facts.view:
        view_note = f"The preview above is a {one_line(facts.view, 120)}; the stored output is complete.\n"
    if facts.style == "cli":
        how = ("Page it with `s3spill read <source_id> --offset <lines to skip> --limit <number of "
               "lines>` - line N is at --offset N-1; add --char-offset <n> to continue a very long "
               "line - or search it with `s3spill grep <source_id> '<regex>'`. ")
    else:
        how = (f"Page it with {read}(source_id, offset=<lines to skip>, limit=<number of lines>) - "
               f"line N is at offset=N-1; add char_offset=<n> to continue a very long line - or "
               f'search it with {grep}(source_id, pattern="<regex>"). ')
    if facts.stored_bytes is not None and facts.stored_bytes != total:  # a capped copy
        size = (f"{total} bytes, {lines} lines; the stored copy: {facts.stored_bytes} bytes, "
                f"SHA-256 {facts.sha256[:16]}, ")
    else:
        size = f"{total} bytes, {lines} lines, SHA-256 {facts.sha256[:16]}, "
    return (
        f"[s3spill] Full output of {_who(facts.tool, facts.call_id, facts.exit_code)}: "
        f'{size}stored as source_id="{sid}".\n'
        f"Summary: {one_line(facts.summary, 500)}\n"
        f"{type_lines(facts.type_note)}"
        f"{view_note}{_note_line(facts.note)}{_notes(facts.notes)}"
        f"{how}"
        f"Do not re-run the command: its full output is already stored."
    )


def type_lines(note: str | None) -> str:
    """The type note, each line made safe (no control characters) and bounded."""
    if not note:
        return ""
    return "".join(one_line(line, 600) + "\n" for line in note.splitlines()[:12] if line.strip())


def degraded_footer(facts: DegradedFacts, view: RetainedText) -> str:
    """The notice when nothing could be stored: no locator, the reason, what is shown."""
    total = view.total_bytes
    return (
        f"[s3spill] The output of {_who(facts.tool, facts.call_id, facts.exit_code)} was too large "
        f"for the context and the full output could NOT be saved "
        f"({one_line(_bare(facts.reason), 200)}).\n"
        f"{_note_line(facts.note)}{_notes(facts.notes)}"
        f"Only the part shown above is available: {total} bytes, {view.line_count} lines in total. "
        f"If you need the omitted part, re-run the command with narrower output."
    )


def _bare(reason: str) -> str:
    """A refusal's reason without its own "not saved:" (the sentence says that already)."""
    return reason[len("not saved:"):].strip() if reason.lower().startswith("not saved:") else reason


def _sep(text: str) -> str:
    return "\n" if text and not text.endswith("\n") else ""


def _compose(view: RetainedText, gap: str, footer: str) -> str:
    head, tail = quote_lines(view.head_text), quote_lines(view.tail_text)
    if not view.truncated:  # the whole output is shown: no gap marker
        return head + _sep(head) + footer
    return head + _sep(head) + gap + tail + _sep(tail) + footer


# --------------------------------------------------------------------------- fitting

#: The notice after the tail; its numbers describe the whole output, not the cut.
Footer = Callable[[RetainedText], str]


def _in_gap(view: RetainedText, line: SalientLine) -> bool:
    return line.start >= len(view.head) and line.end <= view.total_bytes - len(view.tail)


def _fit(
    base: RetainedText,
    shares: tuple[int, int],
    salient: Sequence[SalientLine],
    footer: Footer,
    label: str | None,
    budget: ContextBudget,
) -> tuple[str, RetainedText, tuple[SalientLine, ...]] | None:
    """The largest preview (same head:tail shares) whose text fits ``budget``, or None.

    The worst-case notice is reserved first; ``None`` means even it does not fit.
    """
    quoted = _quotable(base, salient, footer, label, budget)
    if quoted is None:
        return None
    chosen, room = quoted

    def attempt(k: int) -> tuple[str, RetainedText] | None:
        view = base.narrow(*_sizes(base, shares, k))
        gap = _gap_block(view, [s for s in chosen if _in_gap(view, s)], label, worst=False)
        text = _compose(view, gap, footer(view))
        return (text, view) if budget.fits(text) else None

    # bytes >= characters, so the whole preview is a safe first guess when it is that small
    best = attempt(_SCALE_STEPS) if base.kept_bytes <= room else None
    if best is None:
        best = _largest_fitting(attempt)
        if best is None:
            return None
    text, view = best
    return text, view, tuple(s for s in chosen if _in_gap(view, s))


def _quotable(base: RetainedText, salient: Sequence[SalientLine], footer: Footer,
              label: str | None, budget: ContextBudget) -> tuple[tuple[SalientLine, ...], int] | None:
    """The salient lines of the gap to quote, and the characters left for the preview once
    their worst-case block and the footer are reserved; None when not even the footer fits."""
    lines = [s for s in salient if _in_gap(base, s)]
    # Quoted lines may take at most a fifth of the character budget.
    while lines and len(_gap_block(base, lines, label, worst=True)) > budget.max_chars // 5:
        lines.pop()
    while True:
        reserved = _gap_block(base, lines, label, worst=True) + footer(base) + "\n\n"
        if budget.fits(reserved):
            return tuple(lines), budget.max_chars - len(reserved)
        if not lines:
            return None
        lines.pop()


def _sizes(base: RetainedText, shares: tuple[int, int], k: int) -> tuple[int, int]:
    """Head and tail bytes of the preview at scale ``k`` of ``_SCALE_STEPS``."""
    if not base.complete:
        return (len(base.head) * k // _SCALE_STEPS, len(base.tail) * k // _SCALE_STEPS)
    # A complete preview is all head; split it in the tool's head:tail shares.
    keep = base.total_bytes * k // _SCALE_STEPS
    head_share, tail_share = shares
    head = keep * head_share // (head_share + tail_share) if head_share + tail_share else 0
    return (head, keep - head)


def _largest_fitting(
    attempt: Callable[[int], tuple[str, RetainedText] | None],
) -> tuple[str, RetainedText] | None:
    """The attempt at the largest scale below ``_SCALE_STEPS`` that fits (text grows with the
    scale, so a binary search), or None when not even scale 0 fits."""
    best = attempt(0)
    if best is None:
        return None
    lo, hi = 0, _SCALE_STEPS - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        got = attempt(mid)
        if got is not None:
            lo, best = mid, got
        else:
            hi = mid - 1
    return best


def clip(text: str, max_chars: int) -> str:
    """The last resort: a prefix plus a fixed marker, never longer than ``max_chars``."""
    if len(text) <= max_chars:
        return text
    if max_chars <= len(CLIPPED_MARKER):
        return CLIPPED_MARKER[:max_chars]
    return text[: max_chars - len(CLIPPED_MARKER)] + CLIPPED_MARKER


def _render(
    retained: RetainedText,
    preview: tuple[int, int],
    footer: Footer,
    label: str | None,
    budget: ContextBudget,
    salient: Sequence[SalientLine],
    primary: Mode,
) -> RenderedContext:
    base = retained.narrow(*preview)
    fitted = _fit(base, preview, salient, footer, label, budget)
    mode: Mode = primary
    if fitted is None and budget.max_tokens is not None:
        # Even the worst-case notice is over the token budget: the hard cap decides.
        fitted = _fit(base, preview, salient, footer, label, budget.chars_only())
        mode = "pointer_hard_cap" if primary == "pointer" else "degraded_hard_cap"
    if fitted is not None:
        text, view, shown = fitted
        return RenderedContext(text, mode, view, shown)
    empty = base.narrow(0, 0)
    return RenderedContext(clip(footer(empty), budget.max_chars), "clipped", empty, ())


def render_pointer(
    facts: PointerFacts,
    retained: RetainedText,
    *,
    head_bytes: int,
    tail_bytes: int,
    budget: ContextBudget,
    salient: Sequence[SalientLine] = (),
) -> RenderedContext:
    """Preview + gap marker + notice with the locator, within ``budget``.

    ``retained`` is the stream's retained prefix/suffix (or a complete text);
    ``head_bytes``/``tail_bytes`` the preview wanted (already chosen for the exit
    code); ``salient`` lines are quoted if they fall in the final gap.
    """

    def footer(view: RetainedText) -> str:
        return pointer_footer(facts, view)

    label = facts.view
    return _render(retained, (head_bytes, tail_bytes), footer, label, budget, salient, "pointer")


def render_degraded(
    facts: DegradedFacts,
    retained: RetainedText,
    *,
    head_bytes: int,
    tail_bytes: int,
    budget: ContextBudget,
    salient: Sequence[SalientLine] = (),
) -> RenderedContext:
    """Hard-capped head/tail saying the full output could NOT be saved; never a locator."""

    def footer(view: RetainedText) -> str:
        return degraded_footer(facts, view)

    return _render(retained, (head_bytes, tail_bytes), footer, None, budget, salient, "degraded")
