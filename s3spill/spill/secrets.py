"""What one spill masks of the secrets in a tool's output, and the sentence that says so.

The policy's ``secrets`` setting decides where credentials are masked
(:mod:`s3spill.context.secrets`): ``preview`` masks what the model is shown — the inline
text, the retained head and tail, quoted error lines, summaries — and stores the output
as it was; ``at_rest`` masks the stream itself before the retainer, the error-line
scanner and the store see it, so the stored copy, its SHA-256 and everything shown
describe the masked text. Masking keeps byte lengths, so every size, line number and
omitted count the pointer states stays exact either way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from s3spill.context.retention import RetainedText
from s3spill.context.salient import SalientLine
from s3spill.context.secrets import StreamRedactor, describe_counts, redact_bytes, redact_text
from s3spill.log import get_logger
from s3spill.models import ArtifactReference

__all__ = ["SecretMask"]

log = get_logger("s3spill.spill.spiller")

SecretsMode = Literal["off", "preview", "at_rest"]


class SecretMask:
    """The masking of one spill: counts what it masked, in the preview and at rest."""

    def __init__(self, mode: SecretsMode) -> None:
        self.mode = mode
        self.shown: Counter[str] = Counter()
        self.stream = StreamRedactor() if mode == "at_rest" else None
        #: True once the whole stored stream went through :attr:`stream` (then what the
        #: retainer and the scanner kept is masked already).
        self.streamed = False

    def text(self, text: str, *, cut_end: bool = False) -> str:
        """``text`` as the model may see it."""
        if self.mode == "off" or not text:
            return text
        masked, counts = redact_text(text, cut_end=cut_end)
        self.shown.update(counts)
        return masked

    def retained(self, retained: RetainedText) -> RetainedText:
        """Head and tail masked (a cut secret at either seam too); sizes unchanged."""
        if self.mode == "off" or self.streamed:
            return retained
        head = redact_bytes(retained.head, cut_end=retained.truncated)
        tail = redact_bytes(retained.tail, headless=True, cut_start=True) if retained.tail else None
        self.shown.update(head.counts)
        if tail is not None:
            self.shown.update(tail.counts)
        if not head.counts and (tail is None or not tail.counts):
            return retained
        return replace(retained, head=head.data, tail=tail.data if tail is not None else retained.tail)

    def salient(self, lines: Sequence[SalientLine]) -> list[SalientLine]:
        if self.mode == "off" or self.streamed:
            return list(lines)
        return [replace(s, text=self.text(s.text, cut_end=True)) for s in lines]

    def reference(self, ref: ArtifactReference) -> ArtifactReference:
        """The reference handed to the harness (and its memory): no secret in its summary."""
        summary = self.text(ref.summary, cut_end=True) if not self.streamed else ref.summary
        return ref if summary == ref.summary else ref.model_copy(update={"summary": summary})

    def feed(self, chunk: bytes) -> bytes:
        """A chunk on its way to the store: masked at rest, as it is otherwise."""
        return chunk if self.stream is None else self.stream.push(chunk)

    def rest(self) -> bytes:
        """The end of the masked stream (the stream was read to its end)."""
        if self.stream is None:
            return b""
        self.streamed = True
        return self.stream.finish()

    @property
    def at_rest(self) -> Counter[str]:
        return self.stream.counts if self.stream is not None else Counter()

    @property
    def counts(self) -> dict[str, int]:
        """Everything masked, by kind (at rest and in the preview)."""
        return dict(self.at_rest + self.shown)

    def sentence(self, *, stored: bool) -> str | None:
        """The notice's line about masking; None when nothing was masked."""
        if self.at_rest and stored:
            log.info("spill.secrets_masked", where="at_rest", kinds=dict(self.at_rest))
            return (f"Secrets were masked before storing ({describe_counts(self.at_rest)}): the "
                    "stored text and its SHA-256 are those of the masked text.")
        shown = self.shown + self.at_rest
        if not shown:
            return None
        log.info("spill.secrets_masked", where="preview", kinds=dict(shown))
        where = "; pages and search results mask them too" if stored else ""
        return f"Secrets were masked in this preview ({describe_counts(shown)}){where}."
