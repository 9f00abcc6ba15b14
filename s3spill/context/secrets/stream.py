"""Masking a byte stream as it goes to the store (``secrets="at_rest"``), in bounded memory.

Why a carry: a secret must be seen whole by the detector, so the last partial line is held
back until its newline arrives (a line longer than :data:`MAX_LINE_BYTES` is scanned in
overlapping pieces). Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from s3spill.context.secrets.detector import SecretDetector, default_detector
from s3spill.context.secrets.masking import MAX_LINE_BYTES, OVERLAP, LineMasker

__all__ = ["StreamRedactor", "StreamState"]


@dataclass(frozen=True)
class StreamState:
    """Everything a :class:`StreamRedactor` carries between chunks: a stream masked partly
    by one redactor goes on in another (another process's) exactly as in the first."""

    #: The unmasked bytes held back (the last partial line, a long line's overlap).
    carry: bytes = b""
    #: The masks already found in :attr:`carry` (same length, or empty).
    carry_masked: bytes = b""
    in_key: bool = False
    key_lines: int = 0
    counts: dict[str, int] = field(default_factory=dict)


class StreamRedactor:
    """Mask a byte stream chunk by chunk, in bounded memory; output length = input length.

    Holds back the last partial line (up to :data:`MAX_LINE_BYTES`), so a secret is always
    seen whole. A longer line is scanned in pieces that overlap by :data:`OVERLAP` bytes:
    the overlap is carried *unmasked* (with the masks found in it so far kept aside), so
    a secret that the end of one piece cut is seen whole at the start of the next, and a
    mask already made there is never undone.
    """

    def __init__(self, detector: SecretDetector | None = None, max_line: int = MAX_LINE_BYTES) -> None:
        # A chunk of 1 MiB or more starts the Hyperscan build (SecretDetector.candidates):
        # a small output stored at rest never pays for it.
        self._masker = LineMasker(detector or default_detector())
        self._carry = b""
        #: The masks already found in the carry of a long line (same length, or empty).
        self._carry_masked = b""
        self._max_line = max(max_line, 2 * OVERLAP)
        #: False when the bytes the last :meth:`push` or :meth:`finish` returned are the
        #: unmasked bytes they stand for (True also when unsure).
        self.changed = False

    def state(self) -> StreamState:
        """What this redactor carries now."""
        m = self._masker
        return StreamState(self._carry, self._carry_masked, m.in_key, m.key_lines, dict(m.counts))

    @classmethod
    def resume(cls, state: StreamState, detector: SecretDetector | None = None) -> StreamRedactor:
        """A redactor that goes on from ``state`` (another redactor's :meth:`state`)."""
        redactor = cls(detector)
        redactor._carry, redactor._carry_masked = state.carry, state.carry_masked
        m = redactor._masker
        m.in_key, m.key_lines = state.in_key, state.key_lines
        m.counts.update(state.counts)
        return redactor

    @property
    def counts(self) -> Counter[str]:
        return self._masker.counts

    def _process(self, data: bytes) -> bytes:
        seen = len(self._carry_masked)
        masked = self._masker.process(data, count_from=seen)
        self.changed = masked is not data  # LineMasker returns the text itself when it masked nothing
        if seen:
            self.changed = self.changed or self._carry_masked != data[:seen]
            masked = _union(data[:seen], self._carry_masked, masked[:seen]) + masked[seen:]
            self._carry_masked = b""
        return masked

    def push(self, chunk: bytes) -> bytes:
        """The masked bytes that are final now (maybe fewer than pushed; never more in total).

        One copy of a chunk at most (0.4 ms per MiB here, a tenth of the spill's own
        cost): the carry and the chunk's whole lines are joined once, and a chunk that
        ends a line with no carry before it is scanned and returned as it is.
        """
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:  # no line ends in this chunk
            data = self._carry + chunk if self._carry else chunk
            if len(data) <= self._max_line:
                self._carry, self.changed = data, False
                return b""
            masked = self._process(data)  # scan all of it, emit all but the overlap
            cut = len(data) - OVERLAP
            self._carry, self._carry_masked = data[cut:], masked[cut:]
            return masked[:cut]
        whole = (chunk if not self._carry and cut == len(chunk)
                 else b"".join((self._carry, memoryview(chunk)[:cut])))
        self._carry = chunk[cut:]
        return self._process(whole)

    def finish(self) -> bytes:
        """The rest (the last line, masked)."""
        rest, self._carry, self.changed = self._carry, b"", False
        return self._process(rest) if rest else b""


def _union(raw: bytes, first: bytes, second: bytes) -> bytes:
    """Both maskings of ``raw`` at once: a byte either pass changed stays changed."""
    if first == raw:
        return second
    if second == raw:
        return first
    return bytes(a if a != r else b for r, a, b in zip(raw, first, second, strict=True))
