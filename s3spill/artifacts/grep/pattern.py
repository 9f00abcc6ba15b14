"""A model-supplied grep pattern: its limits and its RE2 compile.

Patterns come from a model, so they run on RE2 (``google-re2``), whose matching time is
linear in the input whatever the pattern: ``(a+)+$`` cannot backtrack for minutes. RE2
refuses what would need backtracking — backreferences (``\\1``), lookarounds
(``(?=``, ``(?!``, ``(?<=``, ``(?<!``) and possessive or atomic groups — and spells the
end of text ``\\z`` (Python's ``\\Z`` is accepted and rewritten). A compiled program is
capped at :data:`MAX_PROGRAM_BYTES`; a pattern needing more is refused with
:class:`InvalidRequest`.
"""

from __future__ import annotations

import re

import re2

from s3spill.errors import InvalidRequest

TYPE_CHECKING = False  # not from typing (~2 ms): the CLI's fast grep compiles with this module
if TYPE_CHECKING:
    from typing import Any

MAX_PATTERN_CHARS = 1000
#: RE2 memory for one compiled pattern; a pattern needing more is refused.
MAX_PROGRAM_BYTES = 8 * 1024 * 1024


class Pattern:
    """A model-supplied pattern compiled for RE2, searched over bytes (see module docstring)."""

    def __init__(self, pattern: str, *, ignore_case: bool = False, multiline: bool = False) -> None:
        self.pattern = pattern
        self.ignore_case = ignore_case
        options = re2.Options()
        options.max_mem = MAX_PROGRAM_BYTES
        options.log_errors = False
        options.case_sensitive = not ignore_case
        options.never_capture = True  # only the whole match's start is used
        # Python's \Z is RE2's \z; other escapes mean the same in both.
        source = re.sub(r"(?<!\\)((?:\\\\)*)\\Z", r"\1\\z", pattern)
        try:
            self._regex: Any = re2.compile(f"(?m){source}" if multiline else source, options)
        except re2.error as exc:
            why = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(
                exc.args[0], bytes) else str(exc)
            raise InvalidRequest(f"invalid regular expression {pattern[:80]!r}: {why} (RE2 syntax: "
                                 "no backreferences or lookarounds)") from None

        # The wrapper's search builds a match object per call (two extension calls and a
        # generator); grep calls it once per candidate line, so go to RE2's Match directly
        # when this version of google-re2 exposes it (it does since 1.0), else the wrapper.
        self._match: Any = getattr(self._regex, "_regexp", None)
        self._anchor: Any = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
        if not callable(getattr(self._match, "Match", None)) or self._anchor is None:
            self._match = None

    def search(self, data: bytes, pos: int = 0) -> tuple[int, int] | None:
        """Byte span of the leftmost match at or after ``pos``."""
        if self._match is not None:
            start, end = self._match.Match(self._anchor, data, pos, len(data))[0]
            return None if start < 0 else (start, end)
        return self.search_portable(data, pos)

    def search_portable(self, data: bytes, pos: int = 0) -> tuple[int, int] | None:
        """The same through google-re2's public API (the fallback, and the tests' reference)."""
        m = self._regex.search(data, pos)
        return None if m is None else (m.start(), m.end())

    def for_blocks(self) -> Pattern:
        return Pattern(self.pattern, ignore_case=self.ignore_case, multiline=True)


def compile_pattern(pattern: str, *, ignore_case: bool = False) -> Pattern:
    if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidRequest(f"pattern must be 1-{MAX_PATTERN_CHARS} characters")
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest("pattern must be valid UTF-8 text") from None
    return Pattern(pattern, ignore_case=ignore_case)


_LINE_SENSITIVE = re.compile(r"\(\?[<=!aiLmsuxU-]|\\[AZz]")


def block_pattern(pattern: Pattern) -> Pattern | None:
    """The pattern for searching many lines at once, or None when that could miss a match.

    Searching a block finds every line whose own search would match, as long as nothing in
    the pattern can tell a line's edges from a newline: lookarounds, inline flags and
    ``\\A``/``\\Z`` can, so those patterns go line by line. A block match that spans lines is
    only a candidate: its first line is searched again on its own.
    """
    if _LINE_SENSITIVE.search(pattern.pattern):
        return None
    return pattern.for_blocks()
