"""UTF-8 at byte level: cuts that never split a character, counts of lines, and str to bytes.

Everything we keep of a tool's output is counted and cut in bytes (budgets, caps, chunk
edges), yet what the model sees must be whole characters; these helpers are the one
place that decides where a byte cut may fall, in O(1) per cut.
"""

from __future__ import annotations

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


def to_bytes(text: str) -> bytes:
    """UTF-8 bytes of a str, round-tripping bytes smuggled in as lone surrogates."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return text.encode("utf-8", "surrogatepass")


def line_count(total_bytes: int, newlines: int, ends_with_newline: bool) -> int:
    """Number of lines: newlines, plus one for a non-empty unterminated last line."""
    if total_bytes == 0:
        return 0
    return newlines + (0 if ends_with_newline else 1)
