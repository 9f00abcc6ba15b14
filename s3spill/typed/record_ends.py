"""Where the records of a CSV/TSV artifact end, chunk by chunk, counted as the body is written.

Why at write time: a record of a CSV may span lines (a quoted field holds newlines), so its
line number says nothing about its record number, and finding record 9,000,000 would mean
parsing everything before it. The writer already sees every chunk once; counting the
newlines *outside* double quotes there (split on ``"``, join the unquoted parts, count —
C speed) gives, per chunk, how many records end in it and whether it starts inside a
quoted field. A record read then locates its chunk by bisection and scans one chunk, as a
line read does with the newline table.
"""

from __future__ import annotations


def record_ends(data: bytes, quoted: bool) -> int:
    """Newlines outside double quotes in ``data``, which starts inside quotes if ``quoted``."""
    if b'"' not in data:
        return 0 if quoted else data.count(b"\n")
    parts = data.split(b'"')
    return b"".join(parts[1 if quoted else 0 :: 2]).count(b"\n")


def record_end_positions(data: bytes, quoted: bool) -> list[int]:
    """Positions just after each newline outside quotes (``data`` starts quoted if ``quoted``)."""
    out: list[int] = []
    pos = 0
    for part in data.split(b'"'):
        if not quoted:
            start = 0
            while (nl := part.find(b"\n", start)) >= 0:
                out.append(pos + nl + 1)
                start = nl + 1
        pos += len(part) + 1
        quoted = not quoted
    return out


class RecordTable:
    """Per chunk: records that end in it, and whether it starts inside a quoted field."""

    def __init__(self) -> None:
        self.ends: list[int] = []
        self.quoted: list[bool] = []
        self._inside = False

    def push(self, chunk: bytes) -> None:
        self.quoted.append(self._inside)
        self.ends.append(record_ends(chunk, self._inside))
        if chunk.count(b'"') % 2:
            self._inside = not self._inside
