"""Masking a byte stream as it goes to the store (``secrets="at_rest"``), in bounded memory.

Why a carry: a secret must be seen whole by the detector, so the last partial line is held
back until its newline arrives (a line longer than :data:`MAX_LINE_BYTES` is scanned in
overlapping pieces). Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor

from s3spill.context.secrets.detector import SecretDetector, default_detector
from s3spill.context.secrets.masking import MAX_LINE_BYTES, OVERLAP, LineMasker

__all__ = ["AheadRedactor", "StreamRedactor"]


class StreamRedactor:
    """Mask a byte stream chunk by chunk, in bounded memory; output length = input length.

    Holds back the last partial line (up to :data:`MAX_LINE_BYTES`), so a secret is always
    seen whole. A longer line is scanned in pieces that overlap by :data:`OVERLAP` bytes:
    the overlap is carried *unmasked* (with the masks found in it so far kept aside), so
    a secret that the end of one piece cut is seen whole at the start of the next, and a
    mask already made there is never undone.
    """

    def __init__(self, detector: SecretDetector | None = None, max_line: int = MAX_LINE_BYTES) -> None:
        self._masker = LineMasker(detector or default_detector())
        self._carry = b""
        #: The masks already found in the carry of a long line (same length, or empty).
        self._carry_masked = b""
        self._max_line = max(max_line, 2 * OVERLAP)

    @property
    def counts(self) -> Counter[str]:
        return self._masker.counts

    def _process(self, data: bytes) -> bytes:
        seen = len(self._carry_masked)
        masked = self._masker.process(data, count_from=seen)
        if seen:
            masked = _union(data[:seen], self._carry_masked, masked[:seen]) + masked[seen:]
            self._carry_masked = b""
        return masked

    def push(self, chunk: bytes) -> bytes:
        """The masked bytes that are final now (maybe fewer than pushed; never more in total)."""
        data = self._carry + chunk if self._carry else chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) <= self._max_line:
            self._carry = data
            return b""
        if cut == 0:
            masked = self._process(data)  # scan all of it, emit all but the overlap
            cut = len(data) - OVERLAP
            self._carry, self._carry_masked = data[cut:], masked[cut:]
            return masked[:cut]
        whole = data[:cut] if cut < len(data) else data
        self._carry = data[cut:]
        return self._process(whole)

    def finish(self) -> bytes:
        """The rest (the last line, masked)."""
        rest, self._carry = self._carry, b""
        return self._process(rest) if rest else b""


class AheadRedactor:
    """A :class:`StreamRedactor` on a thread of its own, one chunk ahead of its caller.

    Why: the caller (the Spiller's reading thread) has work of its own per chunk (the
    preview's head and tail, the cap, handing chunks to the writer), and the trigger pass
    runs with the GIL released; so while the caller handles chunk n, chunk n+1 is scanned.
    One worker, so chunks are masked in order; the output is the same bytes in the same
    order as :class:`StreamRedactor`'s, each call returning the previous chunk's part.
    """

    def __init__(self, detector: SecretDetector | None = None, max_line: int = MAX_LINE_BYTES) -> None:
        self._inner = StreamRedactor(detector, max_line)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="s3spill-mask")
        self._pending: Future[bytes] | None = None

    @property
    def counts(self) -> Counter[str]:
        """What was masked so far (complete once :meth:`finish` returned)."""
        return self._inner.counts

    def push(self, chunk: bytes) -> bytes:
        """The masked bytes of the chunks before this one that are final now."""
        previous, self._pending = self._pending, self._pool.submit(self._inner.push, chunk)
        return previous.result() if previous is not None else b""

    def finish(self) -> bytes:
        """The rest: the last chunk's part and the last line, masked; the thread ends."""
        try:
            pending, self._pending = self._pending, None
            return (pending.result() if pending is not None else b"") + self._inner.finish()
        finally:
            self.close()

    def close(self) -> None:
        """End the worker (a stream given up on before its end)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def _union(raw: bytes, first: bytes, second: bytes) -> bytes:
    """Both maskings of ``raw`` at once: a byte either pass changed stays changed."""
    if first == raw:
        return second
    if second == raw:
        return first
    return bytes(a if a != r else b for r, a, b in zip(raw, first, second, strict=True))
