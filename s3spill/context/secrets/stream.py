"""Masking a byte stream as it goes to the store (``secrets="at_rest"``), in bounded memory.

Why a carry: a secret must be seen whole by the detector, so the last partial line is held
back until its newline arrives (a line longer than :data:`MAX_LINE_BYTES` is scanned in
overlapping pieces). Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter

from s3spill.context.secrets.detector import SecretDetector, default_detector
from s3spill.context.secrets.masking import MAX_LINE_BYTES, OVERLAP, LineMasker

__all__ = ["StreamRedactor"]


class StreamRedactor:
    """Mask a byte stream chunk by chunk, in bounded memory; output length = input length.

    Holds back the last partial line (up to :data:`MAX_LINE_BYTES`; a longer line is
    scanned in overlapping pieces), so a secret is always seen whole.
    """

    def __init__(self, detector: SecretDetector | None = None, max_line: int = MAX_LINE_BYTES) -> None:
        self._masker = LineMasker(detector or default_detector())
        self._carry = b""
        self._max_line = max(max_line, 2 * OVERLAP)

    @property
    def counts(self) -> Counter[str]:
        return self._masker.counts

    def push(self, chunk: bytes) -> bytes:
        """The masked bytes that are final now (maybe fewer than pushed; never more in total)."""
        data = self._carry + chunk if self._carry else chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) <= self._max_line:
            self._carry = data
            return b""
        if cut == 0:
            masked = self._masker.process(data)  # scan all of it, emit all but the overlap
            cut = len(data) - OVERLAP
            self._carry = masked[cut:]
            return masked[:cut]
        self._carry = data[cut:]
        return self._masker.process(data[:cut] if cut < len(data) else data)

    def finish(self) -> bytes:
        """The rest (the last line, masked)."""
        rest, self._carry = self._carry, b""
        return self._masker.process(rest) if rest else b""
