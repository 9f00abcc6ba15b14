"""A spooled document held in memory as zstd frames while they stay small, else in a file.

Why: writing a 200 MB hook payload to a temporary file cost a fresh hook process ~1.1 s
of CPU (the page cache of a new file), more than the whole rest of the hook; reading it
back was cheap. A log of that size compresses ~25x at zstd level 1 in ~0.2 s, so the
document is kept as frames of :data:`FRAME` bytes in memory, up to :data:`HELD_BYTES` of
frames; past that, or when the first frames show the bytes do not compress (under 2x),
everything held so far goes to an unlinked temporary file and the rest follows it there,
as before. The memory bound holds either way.
"""

from __future__ import annotations

import bisect
import os
import tempfile
from typing import IO

import zstandard

__all__ = ["FRAME", "HELD_BYTES", "Held"]

#: Bytes compressed as one frame (a read decompresses the frames it overlaps).
FRAME = 1 << 20
#: Compressed frames held in memory at most before the document moves to a file.
HELD_BYTES = 40 << 20
#: Frames looked at before deciding the document compresses well enough to hold.
_PROBE = 4


class Held:
    """The document's bytes, appended with :meth:`write`, read back with :meth:`pread`."""

    def __init__(self, limit: int = HELD_BYTES, frame: int = FRAME) -> None:
        self.limit, self.frame = limit, frame
        self.file: IO[bytes] | None = None
        self.size = 0
        #: Every frame, one after the other, in one buffer: a frame of its own (zstd's output,
        #: allocated at its bound and shrunk) pinned a hole of ~1 MiB of heap each (+47 MiB
        #: RSS for 47 frames of a few KB).
        self._blob = bytearray()
        self._at: list[int] = []  # where each frame is in the blob
        self._starts: list[int] = []  # where each frame's bytes are in the document
        self._pending = bytearray()
        self._compress = zstandard.ZstdCompressor(level=1).compress
        self._decompress = zstandard.ZstdDecompressor().decompress
        self._cached: tuple[int, memoryview] = (-1, memoryview(b""))

    def write(self, data: bytes) -> None:
        if self.file is not None:
            self.size += len(data)
            self.file.write(data)
            return
        view = memoryview(data)
        if self._pending:
            take = min(len(view), self.frame - len(self._pending))
            self._pending += view[:take]
            self.size, view = self.size + take, view[take:]
            if len(self._pending) == self.frame:
                self._seal(self._pending)
        while len(view) >= self.frame and self.file is None:
            self.size += self.frame
            self._seal(view[:self.frame])
            view = view[self.frame:]
        if self.file is not None:
            self.size += len(view)
            self.file.write(view)
        else:
            self.size += len(view)
            self._pending += view

    def flush(self) -> None:
        if self.file is None and self._pending:
            self._seal(self._pending)
        if self.file is not None:
            self.file.flush()

    def _seal(self, raw: bytes | bytearray | memoryview) -> None:
        """``raw`` (the document's last bytes, ending at :attr:`size`) as a frame."""
        self._starts.append(self.size - len(raw))
        self._at.append(len(self._blob))
        self._blob += self._compress(raw)
        if raw is self._pending:
            self._pending = bytearray()
        frames = len(self._at)
        poor = frames == _PROBE and 2 * len(self._blob) > _PROBE * self.frame
        if poor or len(self._blob) > self.limit:
            self._to_file()

    def _to_file(self) -> None:
        """Everything held so far into an unlinked file, where the rest goes too."""
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the document
        for k in range(len(self._at)):
            self.file.write(self._frame(k))
        self.file.write(self._pending)
        self._blob, self._at, self._starts, self._pending = bytearray(), [], [], bytearray()
        self._cached = (-1, memoryview(b""))

    def pread(self, n: int, offset: int) -> bytes:
        """Up to ``n`` bytes from ``offset`` (fewer only at the end)."""
        buf = bytearray(max(0, min(n, self.size - offset)))
        got = self.preadinto(memoryview(buf), offset)
        return bytes(buf[:got])

    def preadinto(self, view: memoryview, offset: int) -> int:
        """Fill ``view`` from ``offset`` (one copy from the frames); the bytes put there."""
        if self.file is not None:
            self.file.flush()
            return os.preadv(self.file.fileno(), [view], offset)
        at, end = 0, min(offset + len(view), self.size)
        k = bisect.bisect_right(self._starts, offset) - 1
        while offset < end and 0 <= k < len(self._at):
            raw, start = self._frame(k), self._starts[k]
            take = min(end, start + len(raw)) - offset
            view[at:at + take] = raw[offset - start:offset - start + take]
            at, offset, k = at + take, offset + take, k + 1
        if offset < end:  # the tail not sealed yet
            base = self.size - len(self._pending)
            take = end - offset
            view[at:at + take] = self._pending[offset - base:offset - base + take]
            at += take
        return at

    def _frame(self, k: int) -> memoryview:
        """Frame ``k`` decompressed (the last one is kept: reads go forward, overlapping one)."""
        if self._cached[0] != k:
            stop = self._at[k + 1] if k + 1 < len(self._at) else len(self._blob)
            with memoryview(self._blob) as blob:  # released at once: the blob may still grow
                self._cached = (k, memoryview(self._decompress(blob[self._at[k]:stop])))
        return self._cached[1]

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
        self._blob, self._at, self._starts, self._pending = bytearray(), [], [], bytearray()
