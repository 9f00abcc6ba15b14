"""A usage part's bytes: the fact lines first, then the shown rows; zstd, or plain NDJSON.

The layout that lets ``stats`` read only the facts of a part (their length is in the key)
and the web view and compaction join the shown text back by id; split from the recorder,
which decides when a part is written and where. Readers: :mod:`s3spill.usage.source`.
"""

from __future__ import annotations

from typing import Any

from s3spill.usage.events import Event

__all__ = ["PART_LEVEL", "compressor", "part_body", "zstd_part"]


def _lines(events: list[Event]) -> tuple[bytes, bytes]:
    """The fact lines and the shown rows of ``events`` (see :func:`part_body`)."""
    facts, shown = [], []
    for event in events:
        fact, row = event.encode()
        facts.append(fact)
        if row is not None:
            shown.append(row)
    return b"".join(facts), b"".join(shown)


def part_body(events: list[Event]) -> tuple[bytes, int]:
    """One part's NDJSON and the byte length of its leading fact lines (uncompressed; what
    :func:`zstd_part` compresses, and the layout parts had before it).

    Why the shown texts come last, one ``{"id", "shown"}`` row each: they are nearly all of
    a part's bytes (a page the model read is kilobytes, its facts a few hundred bytes) and
    ``stats`` needs none of them, so it reads only the facts of each part — their length is
    in the key, which a listing returns — and never parses the text. Readers that want the
    text (the web view, compaction) join the rows back by id. Raises ``TypeError`` for an
    event orjson cannot write (see :meth:`UsageRecorder._encodable`, which drops it instead).
    """
    head, shown = _lines(events)
    return head + shown, len(head)


#: zstd level of a part: 1 stores a part of pointers, pages and grep results in 1/20-1/30 of
#: its NDJSON (benchmarks/usage_bench.py overhead); higher levels gain little for more CPU.
PART_LEVEL = 1


def zstd_part(events: list[Event], reuse: Any = None) -> tuple[bytes, int]:
    """One part as written: two zstd frames — the fact lines, then the shown rows — and the
    first frame's byte length (named in the key, :func:`keys.usage_part_key` ``zstd=True``).

    Why compressed: the shown text repeats itself (pointer notices, page after page of
    one output), and on the local store every byte of a part is hashed, written, and
    fsynced; at 1/20-1/30 of the bytes the write saves more than the compression costs. Why two
    frames: ``stats`` still reads only ``[0, n)`` — now the facts' frame — and decompresses
    that alone; the object as a whole is a valid ``.ndjson.zst`` of the plain layout (zstd
    streams may hold many frames), which DuckDB, Athena, Trino and Spark read as it is.
    ``reuse``: a ``zstandard.ZstdCompressor`` (:func:`compressor`) to reuse, one thread at a time.
    """
    cctx = reuse if reuse is not None else compressor()
    head, shown = _lines(events)
    first = cctx.compress(head)
    return (first + cctx.compress(shown) if shown else first), len(first)


def compressor() -> Any:
    """A compressor of parts (``zstandard`` imported only when a part is compressed)."""
    import zstandard  # the artifact path has imported it already; a hook's CLI may not need it

    return zstandard.ZstdCompressor(level=PART_LEVEL)
