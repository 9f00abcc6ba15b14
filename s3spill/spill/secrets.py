"""What one spill masks of the secrets in a tool's output, and the sentence that says so.

The policy's ``secrets`` setting decides where credentials are masked
(:mod:`s3spill.context.secrets`): ``preview`` masks what the model is shown — the inline
text, the retained head and tail, quoted error lines, summaries — and stores the output
as it was; ``at_rest`` masks the stream itself before the retainer, the error-line
scanner and the store see it, so the stored copy, its SHA-256 and everything shown
describe the masked text. Masking keeps byte lengths, so every size, line number and
omitted count the pointer states stays exact either way.

Why a margin: the preview cuts the output (the head's end, the tail's start), and a
piece of a secret is no longer recognisable on its own. In ``preview`` mode the retainer
keeps :data:`MARGIN` more bytes on each side than any preview shows; they are masked
whole and then cut away, so every piece of a secret at a seam is masked. The notice
counts only the secrets that reach into what it shows.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from s3spill.artifacts.index_builder import build_stats, make_summary
from s3spill.context.logcompress import CompressedLog
from s3spill.context.retention import RetainedText, TextStrategy
from s3spill.context.salient import SalientLine
from s3spill.context.secrets import describe_counts, mask_window, redact_text
from s3spill.context.secrets.masking import Span
from s3spill.log import get_logger
from s3spill.models import ArtifactReference
from s3spill.spill.maskworker import OffloadRedactor

__all__ = ["MARGIN", "SecretMask"]

log = get_logger("s3spill.spill.spiller")

SecretsMode = Literal["off", "preview", "at_rest"]
#: Bytes retained beyond each preview edge so a secret cut there is seen whole.
MARGIN = 64 * 1024


def _inside(spans: Sequence[Span], lo: int, hi: int) -> Counter[str]:
    return Counter(kind for s, e, kind in spans if s < hi and e > lo)


class SecretMask:
    """The masking of one spill: counts what it masked, in the preview and at rest."""

    def __init__(self, mode: SecretsMode) -> None:
        self.mode = mode
        self.shown: Counter[str] = Counter()
        #: ``at_rest``: masked in a worker process when one is ready (the same bytes).
        self.stream = OffloadRedactor() if mode == "at_rest" else None
        #: True once the whole stored stream went through :attr:`stream` (then what the
        #: retainer and the scanner kept is masked already).
        self.streamed = False
        self._capacity: TextStrategy | None = None
        self._head_spans: tuple[Span, ...] = ()
        self._tail_spans: tuple[Span, ...] = ()
        self._tail_len = 0
        self._unmasked_head = b""
        #: The lines each secret of a log-compressed output covers (:meth:`whole`).
        self._log_spans: list[tuple[int, int, str]] | None = None

    def retention(self, strategy: TextStrategy) -> TextStrategy:
        """What the retainer keeps: ``strategy`` plus the margins (``preview`` mode)."""
        if self.mode != "preview":
            return strategy
        self._capacity = strategy
        return TextStrategy.head_tail(strategy.head_bytes + MARGIN, strategy.tail_bytes + MARGIN)

    def text(self, text: str, *, cut_end: bool = False) -> str:
        """``text`` (whole: an inline result, a log view) as the model may see it."""
        if self.mode == "off" or not text:
            return text
        masked, counts = redact_text(text, cut_end=cut_end)
        self.shown.update(counts)
        return masked

    def whole(self, text: str) -> str | None:
        """``text`` (a whole output, for a log-compressed view) masked in its whole context,
        line for line; None when nothing in it is masked. :meth:`log_view` then counts what
        the view shows of it."""
        self._log_spans = []
        if self.mode == "off" or not text:
            return None
        try:
            raw, errors = text.encode("utf-8", "surrogateescape"), "surrogateescape"
        except UnicodeEncodeError:
            raw, errors = text.encode("utf-8", "surrogatepass"), "surrogatepass"
        done = mask_window(raw)
        if not done.spans:
            return None
        newlines = [m.start() for m in re.finditer(b"\n", raw)]
        # The lines each secret covers (line n starts after the n-th newline).
        line_of = functools.partial(bisect.bisect_left, newlines)
        self._log_spans = [(line_of(s), line_of(max(s, e - 1)), kind) for s, e, kind in done.spans]
        return done.data.decode("utf-8", errors)

    def log_view(self, view: CompressedLog) -> str:
        """The log-compressed view as the model may see it, counting the secrets it shows."""
        if self._log_spans is None or view.shown is None:  # not made from :meth:`whole`
            return self.text(view.text)
        shown = view.shown
        for first, last, kind in self._log_spans:
            at = bisect.bisect_left(shown, first)
            if at < len(shown) and shown[at] <= last:
                self.shown[kind] += 1
        return view.text

    def prefix(self, data: bytes, cut: int) -> bytes:
        """``data[:cut]`` masked as it reads in ``data`` (a clipped result's shown part)."""
        if self.mode == "off" or self.streamed:
            return data[:cut]
        done = mask_window(data[:cut], after=data[cut:cut + MARGIN])
        self.shown.update(done.counts)
        return done.data

    def line(self, line: bytes) -> bytes:
        """A whole stored line, masked, before a quote is cut out of it (salient lines)."""
        if self.mode != "preview" or not line:
            return line
        done = mask_window(line)
        self.shown.update(done.counts)
        return done.data

    def retained(self, retained: RetainedText) -> RetainedText:
        """Head and tail masked with their margins, then cut to what previews may show."""
        if self.mode == "off" or self.streamed:
            return retained
        self._unmasked_head = retained.head
        if retained.complete:  # one text: masked whole, then maybe split by the narrowing
            whole = mask_window(retained.head + retained.tail)
            cut = len(retained.head)
            masked = replace(retained, head=whole.data[:cut], tail=whole.data[cut:])
            head_spans, tail_spans, tail_at = whole.spans, whole.spans, 0
        else:
            head = mask_window(retained.head)
            tail = mask_window(retained.tail, headless=True)
            masked = replace(retained, head=head.data, tail=tail.data)
            head_spans, tail_spans = head.spans, tail.spans
            tail_at = len(retained.head) + retained.omitted_bytes
        if self._capacity is not None:
            masked = masked.narrow(self._capacity.head_bytes, self._capacity.tail_bytes)
        shift = retained.total_bytes - len(masked.tail) - tail_at  # where the tail starts, in its spans
        self._head_spans = head_spans
        self._tail_spans = tuple((s - shift, e - shift, k) for s, e, k in tail_spans)
        self._tail_len = len(masked.tail)
        return masked

    def shown_in(self, view: RetainedText) -> Counter[str]:
        """The secrets masked in ``view`` (the part of the retained text a preview shows)."""
        tail_from = self._tail_len - len(view.tail)
        return _inside(self._head_spans, 0, len(view.head)) + _inside(self._tail_spans, tail_from,
                                                                      self._tail_len)

    def salient(self, lines: Sequence[SalientLine]) -> list[SalientLine]:
        """Quoted lines were masked whole as they were found (:meth:`line`)."""
        return list(lines)

    def reference(self, ref: ArtifactReference, retained: RetainedText) -> ArtifactReference:
        """The reference handed to the harness (and its memory): its summary, a first line
        cut to 200 characters, made from the masked head, whose margin holds the rest."""
        if self.mode == "off" or self.streamed:
            return ref
        if len(self._unmasked_head) >= min(retained.total_bytes, 8 * 1024) and self._unmasked_head:
            head = mask_window(self._unmasked_head).data
            first = build_stats(head, max(16, len(head))).first_line  # IndexBuilder needs >= 16
            summary = make_summary(first, ref.size_bytes, ref.line_count)
        else:
            summary = redact_text(ref.summary, cut_end=True)[0]
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

    def sentence(self, *, stored: bool, view: RetainedText | None = None) -> str | None:
        """The notice's line about masking, naming what was masked in what it shows
        (``view``: the part of the retained text shown); None when nothing was."""
        if self.at_rest and stored:
            log.info("spill.secrets_masked", where="at_rest", kinds=dict(self.at_rest))
            return (f"Secrets were masked before storing ({describe_counts(self.at_rest)}): the "
                    "stored text and its SHA-256 are those of the masked text.")
        shown = self.shown + self.at_rest + (self.shown_in(view) if view is not None else Counter())
        if not shown:
            return None
        log.info("spill.secrets_masked", where="preview", kinds=dict(shown))
        where = "; pages and search results mask them too" if stored else ""
        return f"Secrets were masked in this preview ({describe_counts(shown)}){where}."
