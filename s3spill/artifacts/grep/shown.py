"""Raw bytes and the display form grep searches: offsets from one to the other.

A line that is not valid UTF-8 is searched as :mod:`s3spill.textview` shows it (a byte that
is not UTF-8 as ``\\xHH``), but every offset grep reports points into the raw line; these
helpers convert, decoding with ``surrogateescape`` so that a character index is the one the
artifact's index counts.
"""

from __future__ import annotations

import codecs


def text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def units(raw: bytes) -> int:
    """Characters (units) of ``raw`` as the index counts them (surrogateescape decoding)."""
    return len(raw) if raw.isascii() else len(text(raw))


def boundary(data: bytes, i: int) -> int:
    """``i`` moved forward past UTF-8 continuation bytes (at most 3): a character edge."""
    for _ in range(3):
        if i < len(data) and 0x80 <= data[i] <= 0xBF:
            i += 1
    return i


def first_invalid(raw: bytes, pos: int) -> int | None:
    """Index of the first byte at or after ``pos`` that is not valid UTF-8, or None."""
    if not pos and raw.isascii():
        return None  # ASCII is UTF-8: no decode (a fresh process's 1 MiB string costs ~1 ms)
    try:
        codecs.utf_8_decode(memoryview(raw)[pos:], "strict", True)
    except UnicodeDecodeError as exc:
        return pos + exc.start
    return None


def raw_position(raw: bytes, shown_bytes: int, *, doubled: bool) -> tuple[int, int]:
    """(byte, character) of ``raw`` where its display form's first ``shown_bytes`` bytes end.

    ``doubled``: backslashes show as two (a whole escaped line) or as one (a window of a
    line too long to hold). A match that starts inside an escape (``xff`` of ``\\xff``)
    points at that byte."""
    seen = byte = 0
    for i, ch in enumerate(text(raw)):
        bad = 0xDC80 <= ord(ch) <= 0xDCFF
        size = 1 if bad else len(ch.encode("utf-8"))
        width = 4 if bad else 2 if doubled and ch == "\\" else size
        if seen + width > shown_bytes:
            return byte, i
        seen += width
        byte += size
    return byte, len(text(raw))


#: A byte that is not UTF-8, as ``text`` decodes it (compiled on first use, by ``re``'s cache: a
#: CLI grep of a text artifact never needs it, and textview spells the same pattern).
_BAD_UNIT = "[\udc80-\udcff]"


def escape_bytes(raw: bytes) -> bytes:
    """Bytes that are not UTF-8 as ``\\xHH``, the rest as it is (a long line's window)."""
    import re  # here: a CLI grep of valid UTF-8 never loads it (~4 ms with enum)

    shown = re.sub(_BAD_UNIT, lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text(raw))
    return shown.encode("utf-8")
