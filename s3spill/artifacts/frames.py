"""The write side of an artifact body: raw chunks in, stored frames out, index stats kept.

Why a pipeline: every raw byte must be hashed twice — into the full-content SHA-256 (the
source id, the reference) and into its chunk's SHA-256 (what a page read verifies) — and,
for text, compressed. Done in a row on one thread that is three passes; here the full
digest and the index bookkeeping run on the caller's thread while a small pool hashes
and compresses whole chunks (hashlib and zstandard release the GIL), and frames come
out in order, a bounded number in flight. Each byte is hashed once per digest, the
body is never spooled, and memory is bounded by ``2 * max_concurrency`` chunks.

Frames are independent (one zstd frame per index chunk, or the raw chunk for
``identity``), so a reader can decode any chunk alone.
"""

from __future__ import annotations

import hashlib
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from s3spill.artifacts.index import Codec
from s3spill.artifacts.index_builder import ContentStats, IndexBuilder
from s3spill.config import TransferConfig
from s3spill.typed.record_ends import RecordTable

#: Bytes looked at to decide whether an output is text (``auto`` compression).
SNIFF_BYTES = 64 * 1024


def choose_codec(config: TransferConfig, first: bytes) -> Codec:
    """``zstd`` for text (no NUL byte in the first bytes) under ``auto``; the knob otherwise."""
    if config.artifact_compression == "none":
        return "identity"
    if config.artifact_compression == "zstd":
        return "zstd"
    return "identity" if b"\0" in first[:SNIFF_BYTES] else "zstd"


class FrameEncoder:
    """Feed raw chunks once through :meth:`frames`; then :meth:`stats` is the index's content."""

    def __init__(self, config: TransferConfig, codec: Codec, *, records: bool = False) -> None:
        self.codec = codec
        self.level = config.compression_level
        self.workers = config.max_concurrency
        self._local = threading.local()
        self._pending: deque[tuple[int, Future[tuple[str, bytes]]]] = deque()
        self._pool: ThreadPoolExecutor | None = None
        self._builder = IndexBuilder(config.index_chunk_size, on_chunk=self._submit,
                                     records=RecordTable() if records else None)
        self._stats: ContentStats | None = None
        self.stored = 0

    def _work(self, data: bytes) -> tuple[str, bytes]:
        digest = hashlib.sha256(data).hexdigest()
        if self.codec == "identity":
            return digest, data
        cctx: Any = getattr(self._local, "cctx", None)
        if cctx is None:
            import zstandard  # lazy: readers of raw artifacts never import it

            cctx = self._local.cctx = zstandard.ZstdCompressor(level=self.level)
        frame: bytes = cctx.compress(data)
        return digest, frame

    def _submit(self, k: int, data: bytes) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.workers,
                                            thread_name_prefix="s3spill-frame")
        self._pending.append((k, self._pool.submit(self._work, data)))

    def _collect(self) -> bytes:
        k, future = self._pending.popleft()
        digest, frame = future.result()
        self._builder.set_chunk(k, digest, len(frame))
        self.stored += len(frame)
        return frame

    def frames(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """Yield the stored frames of ``chunks`` in order, each exactly once."""
        limit = 2 * self.workers
        try:
            for chunk in chunks:
                self._builder.feed(chunk)
                while len(self._pending) > limit:
                    yield self._collect()
                while self._pending and self._pending[0][1].done():
                    yield self._collect()
            self._builder.flush()
            while self._pending:
                yield self._collect()
            self._stats = self._builder.finish(self.codec)
        finally:
            for _, future in self._pending:
                future.cancel()
            if self._pool is not None:
                self._pool.shutdown(wait=True)

    def stats(self) -> ContentStats:
        """What the whole pass measured; only after :meth:`frames` ran to its end."""
        if self._stats is None:
            raise RuntimeError("the frames were not all produced")
        return self._stats
