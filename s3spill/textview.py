"""How tool output is shown to a model so that what it sees maps back to exact bytes.

Tool output is not always UTF-8. A page must still be readable, and reading every page
by following the footers must give back the original bytes exactly. It is one decoding
everywhere the model looks — a spill preview, an inline result, a page, a grep excerpt —
and grep matches against it, so a line shown as ``caf\xe9`` is found by ``caf\\xe9``
and by ``.``. (A bottom-layer module: the context side and the artifact side both use it.)
The rule:

* A line segment that is valid UTF-8 is shown **verbatim** (CR, tabs and backslashes
  included); nothing is escaped, so ordinary output reads naturally.
* A segment holding any byte that is not valid UTF-8 is marked ``!`` after its line
  number and shown **escaped**: each such byte as ``\\xHH`` (lower-case hex, always
  ``80``–``ff``), and each literal backslash as ``\\\\``. Everything else stays verbatim.

:func:`unescape` inverts a segment exactly. Costs are counted in rendered characters
(a bad byte costs 4, a backslash conservatively 2), so a page never exceeds its budget.

Cuts inside a line fall on unit boundaries (never inside a UTF-8 sequence) and, where
cheap, not inside a grapheme cluster: a cut is moved back over combining marks, variation
selectors, emoji modifiers and zero-width joiners.
"""

from __future__ import annotations

#: Patterns compiled on first use, through ``re``'s own cache, and ``re`` itself imported only
#: by a call that searches with one: a page read or grep whose text is all valid UTF-8
#: (``isascii``, else a strict encode, answers first) never imports ``re`` (~4 ms of a fresh
#: process with ``enum``, issue 35) nor compiles them (~0.7 ms).
_BAD = "[\udc80-\udcff]"
_ESCAPE = r"\\\\|\\x([89a-f][0-9a-f])"
_MAX_GRAPHEME_BACKOFF = 16


def has_bad_bytes(text: str) -> bool:
    """Does ``text`` hold a byte that is not UTF-8 (a ``surrogateescape`` unit)?"""
    if text.isascii() or _surrogate_free(text):
        return False
    import re

    return re.search(_BAD, text) is not None


def _surrogate_free(text: str) -> bool:
    """No surrogate at all in ``text``, so none of :data:`_BAD`: its strict UTF-8 encoding, which
    refuses every surrogate, succeeds (~3x faster than the search, and no ``re`` to import)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escape(text: str) -> tuple[str, bool]:
    """Display form of a decoded segment and whether it is escaped."""
    if text.isascii() or not has_bad_bytes(text):  # isascii is O(1) on a str: no search
        return text, False
    import re

    out = text.replace("\\", "\\\\")
    out = re.sub(_BAD, lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", out)
    return out, True


def show(raw: bytes) -> str:
    """The display form of raw output, line by line: valid lines verbatim, others escaped."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return "\n".join(show_line(line)[0] for line in raw.split(b"\n"))


def show_line(raw: bytes) -> tuple[str, bool]:
    """One line (no newline) in display form, and whether it is escaped."""
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return escape(raw.decode("utf-8", "surrogateescape"))


def unescape(shown: str, escaped: bool) -> bytes:
    """Exact bytes behind a displayed segment (the inverse of :func:`escape`)."""
    if not escaped:
        return shown.encode("utf-8")
    import re

    out = bytearray()
    pos = 0
    for m in re.finditer(_ESCAPE, shown):
        out += shown[pos : m.start()].encode("utf-8")
        out += b"\\" if m.group(1) is None else bytes([int(m.group(1), 16)])
        pos = m.end()
    out += shown[pos:].encode("utf-8")
    return bytes(out)


def cost(text: str) -> int:
    """Upper bound on the rendered length of ``text``."""
    n = len(text) + text.count("\\")
    if not text.isascii() and not _surrogate_free(text):
        import re

        n += 3 * len(re.findall(_BAD, text))
    return n


def fit(text: str, budget: int) -> int:
    """Largest ``k`` with ``cost(text[:k]) <= budget`` (a unit boundary by construction)."""
    if cost(text) <= budget:
        return len(text)
    if text.isascii() and "\\" not in text:
        return max(0, budget)
    spent = 0
    for i, ch in enumerate(text):
        c = 2 if ch == "\\" else 4 if 0xDC80 <= ord(ch) <= 0xDCFF else 1
        if spent + c > budget:
            return i
        spent += c
    return len(text)


#: Below U+0300 (the first combining mark) no character is combining or a mark: the Unicode
#: database is not asked there, nor imported by a process that never cuts past such a one
#: (``unicodedata`` is an extension module a page read or grep otherwise loads for nothing;
#: tests/test_textview.py checks the range against the database).
_FIRST_MARK = 0x300


def _extends(ch: str) -> bool:
    """True for characters that attach to the one before them."""
    o = ord(ch)
    if o == 0x200D or 0xFE00 <= o <= 0xFE0F or 0x1F3FB <= o <= 0x1F3FF or 0xE0020 <= o <= 0xE007F:
        return True
    if o < _FIRST_MARK:
        return False
    import unicodedata

    return unicodedata.combining(ch) != 0 or unicodedata.category(ch) in ("Mn", "Me", "Mc")


def grapheme_cut(text: str, k: int) -> int:
    """Move a cut at ``k`` back to a grapheme edge when that is cheap; never below 1."""
    if k <= 0 or k >= len(text):
        return k
    cut = k
    for _ in range(_MAX_GRAPHEME_BACKOFF):
        if cut > 1 and _joined(text, cut):
            cut -= 1
        else:
            break
    return k if _joined(text, cut) else cut


def _joined(text: str, i: int) -> bool:
    """True when a cut before ``text[i]`` would split a grapheme cluster."""
    return _extends(text[i]) or text[i - 1] == "\u200d"
