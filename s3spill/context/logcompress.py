"""Importance-based compression of test and build logs (opt-in per tool; docs/design-notes.md).

Most of a test log is noise (hundreds of "✓ passed" lines, progress, downloads);
the signal is the error and failure lines, the summary, and the stack traces next to
them. Lines are classed as

* **anchor** - error, failure, warning, assertion or summary lines: always kept,
  with ``context`` lines either side;
* **trace** - stack frames and code frames: a run of them is kept whole when it
  touches, or follows within ``bridge`` lines, something kept (a stack is only
  useful complete);
* **noise** - everything else: runs of ``min_fold`` or more become
  ``… [N lines omitted]``.

Consecutive near-duplicates (equal once digits and hex are normalised) collapse to
``<first line> ×N``. The result is a no-op when the input is short or the saving is
under ``min_saving`` (reshuffling a log for a 3% gain is not worth it), and when
it has no anchor at all (folding everything would hide more than a head/tail preview). Compression
only decides what the model sees; the Spiller still stores the full text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

ANCHOR = re.compile(
    r"""(?ix)
      \b(?:errors?|err!|fail|failed|failures?|failing|fatal|panic(?:ked)?|exception
          |traceback|critical|abort(?:ed)?|segmentation\ fault|warn|warnings?|deprecated)\b
    | \w+(?:error|exception)\b          # AssertionError, TypeError, IOException
    | \bassert                          # assert, assertion
    | ^\s*E\s{2,}\S                     # pytest's "E   assert x == y"
    | [✗✘×✖]                            # failed-test and problem markers
    | ^\s*[-+]\s+(?:expected|received)\b  # assertion diff headers
    | \bexpected\b.+\b(?:to\ (?:be|equal|have|contain)|received|but\ got|got)\b
    | \b\d+\s+(?:passed|failed|skipped|problems?|errors?|warnings?|pending|todo)\b
    | ^\s*(?:test\ files|tests|test\ suites|suites|snapshots|duration|ran\ \d+\ tests?
          |summary|totals?|build\ (?:success|failure|failed))\b
    | ^(?:ok|failed)\b
    """
)

TRACE = re.compile(
    r"""(?x)
      ^\s+at\s+\S                       # JS / Java frames
    | ^\s*❯\s+\S+:\d+                   # vitest frames
    | ^\s*File\s+".*",\s+line\s+\d+     # Python frames
    | ^\s*>?\s*\d+\s*\|                 # code frames: "  42|  expect(x)" / "> 42 | x"
    | ^\s+\|\s*[\^~]+                   # caret under a code frame
    | ^\s+\.\.\.\s+\d+\s+more           # Java "... 5 more"
    | ^\s*\#\d+\s+0x[0-9a-fA-F]+        # native backtraces
    | ^\s+\d+:\s+0x[0-9a-fA-F]+         # Rust backtraces
    | ^Caused\ by:
    """
)

_HEX = re.compile(r"0x[0-9a-fA-F]+|\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{7,}\b")
_DIGITS = re.compile(r"\d+")


def normalise(line: str) -> str:
    """The near-duplicate key: hex and digit runs replaced, surrounding blanks ignored."""
    return _DIGITS.sub("#", _HEX.sub("#", line)).strip()


@dataclass(frozen=True)
class CompressedLog:
    """The view to show and how much it saved; ``changed`` is False for a no-op."""

    text: str
    changed: bool
    original_lines: int
    shown_lines: int
    original_chars: int
    #: Saving the compression would have achieved (kept for reporting when refused).
    attempted_saving: float = 0.0
    #: The input's lines (0-based) that :attr:`text` shows, in order (all of them for a no-op).
    shown: tuple[int, ...] | None = None

    @property
    def saving(self) -> float:
        """Fraction of characters saved (0.0 for a no-op)."""
        if not self.original_chars:
            return 0.0
        return 1 - len(self.text) / self.original_chars

    def describe(self) -> str:
        """A short label for the pointer, e.g. ``log-compressed view (394 → 31 lines)``."""
        return f"log-compressed view ({self.original_lines} → {self.shown_lines} lines)"


@dataclass
class _Group:
    first: int  # index of the first line
    count: int
    kind: int  # 2 anchor, 1 trace, 0 noise


def _python_code_line(prev: str, line: str) -> bool:
    return bool(line.startswith("    ") and line.strip() and re.match(r'^\s*File\s+".*",\s+line', prev))


def compress_log(
    text: str,
    *,
    display: str | None = None,
    context: int = 2,
    bridge: int = 6,
    min_fold: int = 3,
    min_lines: int = 40,
    min_saving: float = 0.15,
) -> CompressedLog:
    """Compress ``text`` or return it unchanged (short input, or saving < ``min_saving``).

    ``display``: the text to show, line for line the same as ``text`` (the same text with
    its secrets masked, in the whole of its context): lines are classed on ``text`` and
    shown from ``display``. Why: a fold cuts the text between lines, and a secret that
    spans lines (a private key block) is no longer recognisable in the lines it leaves.
    """
    lines = text.split("\n")
    trailing = len(lines) > 1 and lines[-1] == ""
    if trailing:
        lines.pop()
    total = len(lines)
    shown_lines = lines
    if display is not None:
        shown_lines = display.split("\n")[:total]
        if len(shown_lines) != total:
            raise ValueError("display must have the lines of text")
    every = tuple(range(total))
    unchanged = CompressedLog(display if display is not None else text, False, total, total, len(text),
                              shown=every)
    if total < min_lines:
        return unchanged

    groups = _group(lines, _kinds(lines))
    if not any(group.kind == 2 for group in groups):
        return unchanged  # no signal to keep: a head/tail preview serves better than a fold
    out, shown = _fold(shown_lines, groups, _select(groups, context, bridge), min_fold)
    body = "\n".join(out) + ("\n" if trailing else "")
    saving = 1 - len(body) / len(text)
    if saving >= min_saving:
        return CompressedLog(body, True, total, len(out), len(text), saving, shown=tuple(shown))
    return replace(unchanged, attempted_saving=saving)


def _kinds(lines: list[str]) -> list[int]:
    """Each line's class: 2 anchor, 1 trace (a Python frame's code line too), 0 noise."""
    kinds = []
    for i, line in enumerate(lines):
        if ANCHOR.search(line):
            kinds.append(2)
        elif TRACE.search(line) or (i and _python_code_line(lines[i - 1], line)):
            kinds.append(1)
        else:
            kinds.append(0)
    return kinds


def _group(lines: list[str], kinds: list[int]) -> list[_Group]:
    """Consecutive near-duplicates as one group of the strongest kind (blank lines never group)."""
    groups: list[_Group] = []
    key_prev: str | None = None
    for i, line in enumerate(lines):
        key = normalise(line) if line.strip() else None
        if groups and key is not None and key == key_prev:
            groups[-1].count += 1
            groups[-1].kind = max(groups[-1].kind, kinds[i])
        else:
            groups.append(_Group(i, 1, kinds[i]))
        key_prev = key
    return groups


def _fold(lines: list[str], groups: list[_Group], keep: list[bool],
          min_fold: int) -> tuple[list[str], list[int]]:
    """The kept groups as lines; a run of unkept ones becomes one omission line when it
    hides at least ``min_fold`` lines, else is shown as it is. Also the input lines shown."""
    out: list[str] = []
    shown: list[int] = []
    run: list[int] = []

    def show(group: _Group) -> None:
        out.append(_show(lines, group))
        shown.append(group.first)

    def flush() -> None:
        hidden = sum(groups[g].count for g in run)
        if hidden >= min_fold:
            out.append(f"… [{hidden} lines omitted]")
        else:
            for g in run:
                show(groups[g])
        run.clear()

    for g, group in enumerate(groups):
        if keep[g]:
            flush()
            show(group)
        else:
            run.append(g)
    flush()
    return out, shown


def _show(lines: list[str], group: _Group) -> str:
    line = lines[group.first]
    return f"{line} ×{group.count}" if group.count > 1 else line


def _select(groups: list[_Group], context: int, bridge: int) -> list[bool]:
    n = len(groups)
    keep = [False] * n
    for g, group in enumerate(groups):
        if group.kind == 2:
            for j in range(max(0, g - context), min(n, g + context + 1)):
                keep[j] = True
    # Trace runs: kept whole when they touch a kept group or follow one within `bridge`.
    g = 0
    while g < n:
        if groups[g].kind != 1:
            g += 1
            continue
        end = g
        while end + 1 < n and groups[end + 1].kind == 1:
            end += 1
        touches = any(keep[g : end + 1]) or (g > 0 and keep[g - 1]) or (end + 1 < n and keep[end + 1])
        lead = next((j for j in range(g - 1, max(-1, g - bridge - 2), -1) if keep[j]), None)
        start = g if touches else (lead + 1 if lead is not None else None)
        if start is not None:
            for j in range(start, end + 1):
                keep[j] = True
        g = end + 1
    return keep
