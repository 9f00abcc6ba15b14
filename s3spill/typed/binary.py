"""What the model sees of a binary output: one short notice, never the bytes themselves.

Why: decoded as text, 5 MB of random bytes are 30,000 characters of U+FFFD and control
characters (ESC sequences included) that say nothing and cost a lot; what helps is what
``file`` and ``sha256sum`` would say — the kind, the size, the digest — and the first bytes
as a hexdump, plus how to read further (by byte offset, as a hexdump). The rows are
rendered by the caller (the artifacts layer's hexdump, so notice and reads agree); they
are plain ASCII by construction and are checked again here.

The notice fits the same budget as a text preview: rows are dropped before anything else,
and a notice that still does not fit is clipped with the fixed marker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from s3spill.context.budget import ContextBudget
from s3spill.context.pointer import clip, one_line
from s3spill.context.policy import READ_TOOL

#: Bytes shown as a hexdump in the notice (4 rows of 16).
NOTICE_BYTES = 64
_ASCII_ROW = re.compile(r"^[\x20-\x7e]*$")


@dataclass(frozen=True)
class BinaryFacts:
    """What the notice says; ``source_id`` None means nothing was stored (``reason`` says why)."""

    tool: str
    description: str
    total_bytes: int
    rows: tuple[str, ...]
    source_id: str | None = None
    sha256: str | None = None
    mime: str | None = None
    call_id: str | None = None
    exit_code: int | None = None
    read_tool: str = READ_TOOL
    #: Why a too-large output could not be saved (degraded), None otherwise.
    reason: str | None = None
    #: The rows are the whole output (a small one, shown in full as hex).
    whole: bool = False
    #: How reading on is spelled: a tool call, or ``s3spill read`` flags.
    style: Literal["tools", "cli"] = "tools"


def _who(facts: BinaryFacts) -> str:
    extras = []
    if facts.call_id:
        extras.append(f"call {one_line(facts.call_id, 64)}")
    if facts.exit_code is not None:
        extras.append(f"exit code {facts.exit_code}")
    return one_line(facts.tool, 64) + (f" ({', '.join(extras)})" if extras else "")


def _notice(facts: BinaryFacts, rows: tuple[str, ...]) -> str:
    kind = one_line(facts.description, 160)
    if facts.mime and facts.mime not in kind:
        kind += f" ({one_line(facts.mime, 80)})"
    parts = [f"{kind}, {facts.total_bytes:,} bytes"]
    if facts.sha256:
        parts.append(f"SHA-256 {facts.sha256}")
    if facts.source_id is not None:
        parts.append(f'stored as source_id="{one_line(facts.source_id, 200)}"')
    head = f"[s3spill] Binary output of {_who(facts)}, not shown as text: {', '.join(parts)}."
    lines = [head]
    if facts.source_id is None and facts.reason is not None:
        lines.append(f"The full output could NOT be saved ({one_line(facts.reason, 200)}); only "
                     "its first bytes are known here. If you need it, re-run the command writing "
                     "the output to a file, and inspect that file instead.")
    elif facts.source_id is None and not facts.whole:
        lines.append("It was not stored (this tool's results are never copied); only its first "
                     "bytes are shown.")
    if rows:
        shown = "all of it" if facts.whole and len(rows) * 16 >= facts.total_bytes else (
            f"first {min(facts.total_bytes, 16 * len(rows)):,} bytes")
        lines.append(f"Hexdump ({shown}):")
        lines.extend(row for row in rows if _ASCII_ROW.match(row))
    if facts.source_id is not None:
        read = one_line(facts.read_tool, 64)
        how = ("`s3spill read <source_id> --byte-offset <n> --bytes <count>`" if facts.style == "cli"
               else f"{read}(source_id, byte_offset=<n>, bytes=<count>)")
        lines.append(f"Read it as a hexdump with {how} - each page says where to continue. Do not "
                     "re-run the command: its full output is already stored.")
    return "\n".join(lines)


def render_binary(facts: BinaryFacts, budget: ContextBudget) -> tuple[str, bool]:
    """The notice with as many hexdump rows as fit ``budget``, and whether the token budget
    held (False: only the hard cap did, or the notice was clipped to it). Never raises: if
    rendering fails, a fixed notice states the same facts (the context side fails open)."""
    try:
        return _fitted(facts, budget)
    except Exception:  # noqa: BLE001 - a notice must never break the agent's turn
        where = (f'stored as source_id="{facts.source_id}"' if facts.source_id is not None
                 else "the full output could NOT be saved")
        text = (f"[s3spill] Binary output of {one_line(facts.tool, 64)}, not shown as text: "
                f"{facts.total_bytes} bytes, {where}.")
        return clip(text, budget.max_chars), False


def _fitted(facts: BinaryFacts, budget: ContextBudget) -> tuple[str, bool]:
    rows = facts.rows
    for fitting in (budget, budget.chars_only()):
        for keep in range(len(rows), -1, -1):
            text = _notice(facts, rows[:keep])
            if fitting.fits(text):
                return text, fitting is budget
    return clip(_notice(facts, ()), budget.max_chars), False


def whole_fits(facts: BinaryFacts, budget: ContextBudget) -> bool:
    """Does the notice with every row (the whole output as hex) fit ``budget``?"""
    return budget.fits(_notice(facts, facts.rows))
