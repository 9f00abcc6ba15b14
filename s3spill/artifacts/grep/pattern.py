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

from s3spill.context.secrets.re2_light import binding

TYPE_CHECKING = False  # not from typing (~2 ms): the CLI's fast grep compiles with this module
if TYPE_CHECKING:
    from typing import Any

    from s3spill.errors import InvalidRequest

MAX_PATTERN_CHARS = 1000
#: RE2 memory for one compiled pattern; a pattern needing more is refused.
MAX_PROGRAM_BYTES = 8 * 1024 * 1024


class Pattern:
    """A model-supplied pattern compiled for RE2, searched over bytes (see module docstring)."""

    def __init__(self, pattern: str, *, ignore_case: bool = False, multiline: bool = False) -> None:
        self.pattern = pattern
        self.ignore_case = ignore_case
        # Python's \Z is RE2's \z; other escapes mean the same in both.
        source = _end_of_text(pattern) if "\\Z" in pattern else pattern
        self._source = f"(?m){source}" if multiline else source
        # RE2's binding, as google-re2's ``re2.compile`` builds the expression (UTF-8, these
        # options, the rest at their defaults), without the package's ``__init__`` in a
        # process that has not loaded it (:mod:`s3spill.context.secrets.re2_light`: a CLI
        # grep); and its Match, not the wrapper's search, which builds a match object per
        # call (two extension calls and a generator) where grep calls it per candidate line.
        re2 = binding()
        self._match: Any = re2.RE2(self._source.encode("utf-8"), self._options(re2.RE2.Options()))
        if not self._match.ok():
            why = self._match.error()
            why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
            raise refused(f"invalid regular expression {pattern[:80]!r}: {why} (RE2 syntax: "
                           "no backreferences or lookarounds)")
        self._anchor: Any = re2.RE2.Anchor.UNANCHORED

    def _options(self, options: Any) -> Any:
        options.max_mem = MAX_PROGRAM_BYTES
        options.log_errors = False
        options.case_sensitive = not self.ignore_case
        options.never_capture = True  # only the whole match's start is used
        return options

    def search(self, data: bytes, pos: int = 0) -> tuple[int, int] | None:
        """Byte span of the leftmost match at or after ``pos``."""
        start, end = self._match.Match(self._anchor, data, pos, len(data))[0]
        return None if start < 0 else (start, end)

    def search_portable(self, data: bytes, pos: int = 0) -> tuple[int, int] | None:
        """The same through google-re2's public API (the tests' reference)."""
        import re2

        m = re2.compile(self._source, self._options(re2.Options())).search(data, pos)
        return None if m is None else (m.start(), m.end())

    def for_blocks(self) -> Pattern:
        return Pattern(self.pattern, ignore_case=self.ignore_case, multiline=True)


def _end_of_text(pattern: str) -> str:
    """``pattern`` with each ``\\Z`` that is not an escaped backslash's ``Z`` spelled ``\\z``
    (``re`` loads here: a CLI grep of another pattern never imports it, ~4 ms with enum)."""
    import re

    return re.sub(r"(?<!\\)((?:\\\\)*)\\Z", r"\1\\z", pattern)


def compile_pattern(pattern: str, *, ignore_case: bool = False) -> Pattern:
    if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN_CHARS:
        raise refused(f"pattern must be 1-{MAX_PATTERN_CHARS} characters")
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise refused("pattern must be valid UTF-8 text") from None
    return Pattern(pattern, ignore_case=ignore_case)


def refused(message: str) -> InvalidRequest:
    """A refused grep request (:mod:`s3spill.errors`, ~0.75 ms of a CLI grep's imports, loads
    only then; the engine refuses with it too)."""
    from s3spill.errors import InvalidRequest

    return InvalidRequest(message)


#: What tells a line's edges from a newline: a lookaround or an inline flag (``(?`` and one of
#: ``<=!aiLmsuxU-``), or ``\A``, ``\Z``, ``\z``; each looked for as it stands (the regular
#: expression ``\(\?[<=!aiLmsuxU-]|\\[AZz]`` they spell, without its compile in a CLI grep).
_LINE_SENSITIVE = (*(f"(?{c}" for c in "<=!aiLmsuxU-"), "\\A", "\\Z", "\\z")


def block_pattern(pattern: Pattern) -> Pattern | None:
    """The pattern for searching many lines at once, or None when that could miss a match.

    Searching a block finds every line whose own search would match, as long as nothing in
    the pattern can tell a line's edges from a newline: lookarounds, inline flags and
    ``\\A``/``\\Z`` can, so those patterns go line by line. A block match that spans lines is
    only a candidate: its first line is searched again on its own.
    """
    if any(marker in pattern.pattern for marker in _LINE_SENSITIVE):
        return None
    return pattern.for_blocks()
