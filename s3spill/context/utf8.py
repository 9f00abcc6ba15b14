"""UTF-8 at byte level: cuts that never split a character, counts of lines, and str to bytes.

Everything we keep of a tool's output is counted and cut in bytes (budgets, caps, chunk
edges), yet what the model sees must be whole characters; these helpers are the one
place that decides where a byte cut may fall, in O(1) per cut.
"""

from __future__ import annotations

import codecs

__all__ = ["line_count", "safe_head_cut", "safe_tail_start", "to_bytes"]


def _is_continuation(byte: int) -> bool:
    return 0x80 <= byte <= 0xBF


def _sequence_length(lead: int) -> int:
    """Length a lead byte announces; 1 for ASCII and for bytes that cannot lead."""
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 1


def safe_head_cut(data: bytes | bytearray | memoryview, limit: int) -> int:
    """Largest cut ``<= limit`` that does not split a sequence announced before it.

    ``data`` may be just a prefix of the stream (the retainer's head buffer): only
    the last three bytes before ``limit`` are inspected, so a cut costs O(1). Bytes
    that cannot start a sequence are single units and never move the cut.
    """
    limit = max(0, min(limit, len(data)))
    for back in range(1, 4):
        pos = limit - back
        if pos < 0:
            return limit
        byte = data[pos]
        if _is_continuation(byte):
            continue
        return pos if _sequence_length(byte) > back else limit
    return limit


def safe_tail_start(data: bytes | bytearray | memoryview, start: int) -> int:
    """Smallest start ``>= start`` that is not a continuation byte (skips at most three).

    In valid UTF-8 a continuation byte is always inside a sequence, so skipping
    past it is exactly "never start inside a character"; in invalid input the
    skipped bytes were not a character anyway and are counted as omitted.
    """
    start = max(0, min(start, len(data)))
    end = min(len(data), start + 3)
    while start < end and _is_continuation(data[start]):
        start += 1
    return start


#: The encode error handler of :func:`to_bytes` (registered with :mod:`codecs`).
LONE_SURROGATES = "s3spill-lone-surrogates"


def _lone_surrogates(exc: UnicodeError) -> tuple[bytes, int]:
    """Each lone surrogate in the failing run: U+DC80..U+DCFF is the byte it stands for
    (Python's surrogateescape: how a Python program holds bytes that are not UTF-8), any
    other is its WTF-8 bytes (three bytes, invalid UTF-8, shown as ``\\xHH`` escapes)."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = bytearray()
    for char in exc.object[exc.start : exc.end]:
        code = ord(char)
        out += bytes((code - 0xDC00,)) if 0xDC80 <= code <= 0xDCFF else char.encode("utf-8", "surrogatepass")
    return bytes(out), exc.end


codecs.register_error(LONE_SURROGATES, _lone_surrogates)


def to_bytes(text: str) -> bytes:
    """UTF-8 bytes of a str; a lone surrogate is a byte or its WTF-8 (:func:`_lone_surrogates`).

    So a result that arrived as invalid UTF-8 (decoded by surrogateescape) is stored as the
    bytes received, and one that carried a JSON escape like ``\\udce9`` as the byte it means.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", LONE_SURROGATES)


def line_count(total_bytes: int, newlines: int, ends_with_newline: bool) -> int:
    """Number of lines: newlines, plus one for a non-empty unterminated last line."""
    if total_bytes == 0:
        return 0
    return newlines + (0 if ends_with_newline else 1)
