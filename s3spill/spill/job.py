"""One call of :meth:`Spiller.externalize`: buffer, decide, stream, then point or degrade.

The state of a call (the buffered prefix, the retainer, the salient-line scanner, the
upload) lives here and dies with the call, so a :class:`~s3spill.spill.spiller.Spiller`
can serve concurrent calls of one session. The order of events is what keeps the
promises of the Spiller: the exit status is asked for only once the output has
ended; the upload is told "end of stream" only after the whole output was read
without error (otherwise it is abandoned, so a truncated artifact never completes);
and a result is pointed to only if the upload was accepted before the deadline.

What the model is shown of a stored output is one :class:`~s3spill.spill.preview.Preview`,
chosen once by the output's kind; this call feeds it every chunk it stores and asks it
for the pointer or the degraded notice. Only an output too small to store (inline,
clipped) is rendered here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from s3spill.context.budget import ContextBudget
from s3spill.context.logcompress import CompressedLog, compress_log
from s3spill.context.pointer import CLIPPED_MARKER, RenderedContext
from s3spill.context.policy import SpillPolicy, ToolPolicy
from s3spill.context.retention import RetainedText, TextRetainer
from s3spill.context.utf8 import safe_head_cut
from s3spill.fleet.cap import CapFacts, StoreCap
from s3spill.log import get_logger
from s3spill.models import ArtifactReference
from s3spill.spill.preview import Preview, TextPreview, binary_facts, choose_preview
from s3spill.spill.result import Mode, SpillResult, degraded_mode, pointer_mode
from s3spill.spill.secrets import SecretMask
from s3spill.spill.sink import SpillSink
from s3spill.spill.source import CHUNK_BYTES, Output, ReadFailure, iter_output
from s3spill.spill.upload import BoundedUpload, describe_error
from s3spill.telemetry.metrics import observe_fleet
from s3spill.textview import show
from s3spill.typed.binary import NOTICE_BYTES, render_binary, whole_fits
from s3spill.typed.detect import TEXT, Detection, detect

__all__ = ["CallId", "ExitCode", "Note", "SpillJob"]

log = get_logger("s3spill.spill.spiller")
_T = TypeVar("_T")

#: An exit status, or a callable that returns it once the output has ended.
ExitCode = int | Callable[[], int | None] | None
#: A sentence for the notice about how the output was captured, or a callable asked at its end.
Note = str | Callable[[], str | None] | None
#: The tool call's id, or a callable that returns it once the output has ended (a hook that
#: streams a payload's string learns the id from the fields after it).
CallId = str | Callable[[], str | None] | None

def _inline_limit(policy: SpillPolicy, rule: ToolPolicy) -> int:
    """Bytes after which an output is certainly over a threshold (a char is <= 4 bytes)."""
    return min(rule.inline_limit_bytes, 4 * policy.hard_cap_chars)


class SpillJob:
    """One call of :meth:`Spiller.externalize`; its state lives and dies with the call."""

    def __init__(self, sink: SpillSink, policy: SpillPolicy, output: Output, tool: str,
                 call_id: CallId, exit_code: ExitCode, spillable: bool, label: str | None,
                 force: bool, max_chars: int | None = None, note: Note = None) -> None:
        self.sink = sink
        self.policy = policy
        self.output = output
        self.tool = tool
        self._call_id = call_id
        self.call_id: str | None = None if callable(call_id) else call_id
        self._exit_code = exit_code
        self.exit_code: int | None = None
        self.spillable = spillable
        self.label = label
        self.force = force
        self.max_chars = max_chars
        self._note = note
        self.note: str | None = None
        self.rule = self.policy.for_tool(tool)
        self.read = ReadFailure()
        self.chunks: Iterator[bytes] = iter(())
        self.mask = SecretMask(policy.secrets)
        self.retainer = TextRetainer(self.mask.retention(self.rule.retention()))
        #: What the model will be shown; plain text until the spill knows the output's kind.
        self.preview: Preview = TextPreview(self, self.retainer, salient=False)
        self.buffer: bytearray | None = None
        #: The buffered prefix is the whole output (the stream ended within the limit).
        self.complete = False
        self.detected: Detection = TEXT
        self.cap = StoreCap(policy.stored_cap(tool), policy.capped_tail_bytes)
        self.capped: CapFacts | None = None

    def ended(self) -> None:
        """The output is fully read: now the exit status can be known."""
        self.exit_code = self._exit_code = self._settle(self._exit_code, "spill.exit_code_failed")
        self.call_id = self._call_id = self._settle(self._call_id, "spill.call_id_failed")
        self.note = self._note = self._settle(self._note, "spill.note_failed")

    def _settle(self, value: _T | Callable[[], _T | None] | None, event: str) -> _T | None:
        """``value``, or what calling it gives; a failing call is logged and gives ``None``.

        An unknown exit status or a missing note must never break the agent's turn.
        """
        if not callable(value):
            return value
        try:
            return value()
        except Exception as exc:  # noqa: BLE001 - see above: fail open, say so in the log
            log.warning(event, tool=self.tool, error=describe_error(exc))
            return None

    def result(self, text: str, mode: Mode, total: int, omitted: int, *,
               artifact: ArtifactReference | None = None, reason: str | None = None) -> SpillResult:
        return SpillResult(
            context_text=text, artifact=artifact, spilled=artifact is not None, total_bytes=total,
            omitted=max(0, omitted), degraded_reason=reason, mode=mode, tool=self.tool,
            call_id=self.call_id, exit_code=self.exit_code, note=self.note, masked=self.mask.counts,
            masked_at_rest=bool(self.mask.at_rest),
            stored_bytes=artifact.size_bytes if artifact is not None and self.capped else None,
        )

    def run(self) -> SpillResult:
        try:
            self.chunks = self.read.guard(iter_output(self.output))
            return self._run()
        except Exception as exc:  # noqa: BLE001 - last line of fail-open: never break the turn
            log.warning("spill.failed", tool=self.tool, error=describe_error(exc))
            self._retain_prefix()
            for chunk in self.chunks:  # consume the rest once; keep head and tail
                self.retainer.push(chunk)
            self.ended()
            return self._degraded(f"internal error: {describe_error(exc)}")

    def _retain_prefix(self) -> None:
        """Move the buffered prefix into the preview, once."""
        if self.buffer is None:
            return
        prefix, self.buffer = self.buffer, None
        self.preview.push(bytes(prefix))

    def _run(self) -> SpillResult:
        """Buffer up to the inline limit; what ends within it may stay inline, the rest is spilled."""
        complete = self._buffer_prefix()
        if self.read.error is not None:
            self._retain_prefix()
            self.ended()
            return self._degraded(f"reading the output failed: {describe_error(self.read.error)}")
        if not complete:
            if not self.spillable:
                buffer = self.buffer or bytearray()
                total = len(buffer) + sum(len(chunk) for chunk in self.chunks)
                self.ended()
                return self._clipped(bytes(buffer), total)
            return self._spill()
        self.ended()
        return self._small(bytes(self.buffer or b""))

    def _buffer_prefix(self) -> bool:
        """Read into ``self.buffer`` up to the inline limit; True when the output ended within it."""
        limit = _inline_limit(self.policy, self.rule)
        if self.rule.log_compress and self.spillable:
            limit = max(limit, self.policy.log_compress_max_bytes)
        buffer = self.buffer = bytearray()
        self.complete = True
        for chunk in self.chunks:
            buffer += chunk
            if len(buffer) > limit:
                self.complete = False
                break
        return self.complete

    def _small(self, data: bytes) -> SpillResult:
        """An output that ended within the inline limit: inline, unless over a threshold."""
        if not isinstance(self.output, str):
            self.detected = detect(data, complete=True)
            if self.detected.kind == "binary":
                return self._small_binary(data)
        text = self.output if isinstance(self.output, str) else show(data)
        if not self.spillable:
            return self._inline(text, data)
        over = self.force or self.policy.should_externalize(text, self.tool)
        if self.rule.log_compress:
            view = compress_log(text, display=self.mask.whole(text))
            if view.changed:  # lines are dropped from view: store the full text, point to it
                return self._spill(view=view, fallback=None if over else text)
        if not over:
            return self._inline(text, data)
        return self._spill()

    # -- not stored --------------------------------------------------------------------

    def _small_binary(self, data: bytes) -> SpillResult:
        """A binary output under every threshold: all of it as a hexdump if that fits, else
        stored (a tool result the model cannot read raw is never pasted raw)."""
        facts = binary_facts(self, data, len(data), sha256=hashlib.sha256(data).hexdigest(),
                             whole=True)
        budget = self.budget()
        if not self.force and whole_fits(facts, budget) and not self.policy.should_externalize(
                render_binary(facts, budget)[0], self.tool):
            return self.result(render_binary(facts, budget)[0], "inline", len(data), 0)
        if self.spillable:
            return self._spill()
        text, _ = render_binary(binary_facts(self, data[:NOTICE_BYTES], len(data)), budget)
        return self.result(text, "clipped", len(data), len(data))

    def _inline(self, text: str, data: bytes) -> SpillResult:
        text = self.mask.text(text)
        if len(text) <= self.policy.hard_cap_chars:
            return self.result(text, "inline", len(data), 0)
        return self._clipped(data, len(data))

    def _clipped(self, data: bytes, total: int) -> SpillResult:
        """Never copied (``spillable=False``): a prefix and the fixed clipped marker.

        Cut in bytes, so the omitted count is exact even for invalid UTF-8; a byte that is
        not UTF-8 shows as four characters (``\\xHH``), so the cut moves back until the
        display form fits the hard cap. A binary output gets the binary notice (its first
        bytes as hex) instead.
        """
        if not isinstance(self.output, str):
            self.detected = detect(data)
            if self.detected.kind == "binary":
                text, _ = render_binary(binary_facts(self, data[:NOTICE_BYTES], total),
                                        self.budget())
                return self.result(text, "clipped", total, total)
        cap = self.policy.hard_cap_chars
        room = max(0, cap - len(CLIPPED_MARKER))
        cut = safe_head_cut(data, room)
        text = show(data[:cut])
        while len(text) > room:
            cut = safe_head_cut(data, max(0, cut - max(1, (len(text) - room) // 4)))
            text = show(data[:cut])
        text = show(self.mask.prefix(data, cut))[:room]  # a mask keeps UTF-8 lengths, not always chars
        return self.result(text + CLIPPED_MARKER, "clipped", total, total - cut)

    # -- stored ------------------------------------------------------------------------

    def _spill(self, view: CompressedLog | None = None, fallback: str | None = None) -> SpillResult:
        """Store the output while retaining its head and tail; then point, or degrade.

        ``view`` is a log-compressed preview to show instead of head/tail; ``fallback``
        is the whole output when it would have been inline anyway (compression was the
        only reason to store it), returned as it is if the store fails.
        """
        refusal = self.sink.refusal()
        if refusal is not None:
            return self._refused(refusal, fallback)
        self.detected = detect(self.buffer or b"", complete=self.complete)
        self.preview = choose_preview(self, self.retainer, view)

        # A call id known only at the end is read by the writer once the stream has ended.
        call_id = (lambda: self.call_id) if callable(self._call_id) else self.call_id
        upload = self.sink.open(self.tool, call_id, self.label, self.detected)
        started = time.monotonic()
        if self.buffer is not None and self.mask.stream is not None:
            self.buffer = bytearray(self.mask.feed(bytes(self.buffer)))
        prefix = bytes(self.buffer or b"")
        self._retain_prefix()
        for start in range(0, len(prefix), CHUNK_BYTES):
            if not self._store(upload, prefix[start : start + CHUNK_BYTES]):
                break
        del prefix
        for chunk in self.chunks:
            self._consume(self.mask.feed(chunk), upload)
        if self.read.error is None:
            self._consume(self.mask.rest(), upload)
        total = self.retainer.total_bytes
        self.ended()
        if self.read.error is not None:
            upload.abandon(f"reading the output failed: {describe_error(self.read.error)}")
            stored = total
        else:
            stored = self._store_rest(upload, total)
        ref = self.sink.finish(upload, stored)
        reason = upload.reason
        if ref is not None and ref.size_bytes != stored:
            reason, ref = f"the store recorded {ref.size_bytes} bytes of {stored}", None
        if ref is None:
            reason = reason or "unknown failure"
            if fallback is not None:
                log.warning("spill.degraded", tool=self.tool, session_hash=self.sink.session_hash,
                            bytes=total, reason=reason, shown="inline")
                return self.result(self.mask.text(fallback), "inline", total, 0, reason=reason)
            return self._degraded(reason, waited=time.monotonic() - started)
        return self.preview.pointer(ref)

    def _refused(self, refusal: str, fallback: str | None) -> SpillResult:
        """Nothing may be stored (a quota, a purge): the bounded preview, honestly marked."""
        self._retain_prefix()
        for chunk in self.chunks:
            self.retainer.push(chunk)
        self.ended()
        if fallback is not None:
            return self.result(self.mask.text(fallback), "inline", self.retainer.total_bytes, 0,
                               reason=refusal)
        return self._degraded(refusal)

    def _store_rest(self, upload: BoundedUpload[ArtifactReference], total: int) -> int:
        """The end of a stream read without error: the cap's marker and tail; the stored size."""
        rest, self.capped = self.cap.finish(total, self.retainer.finish().total_newlines)
        for start in range(0, len(rest), CHUNK_BYTES):
            upload.feed(rest[start : start + CHUNK_BYTES])
        if self.capped is None:
            return total
        log.warning("spill.capped", tool=self.tool, session_hash=self.sink.session_hash,
                    bytes=total, cap=self.capped.cap, omitted=self.capped.omitted_bytes)
        observe_fleet("capped", self.tool)
        observe_fleet("capped_bytes", self.tool, self.capped.omitted_bytes)
        return self.capped.head_bytes + len(rest)

    def _consume(self, chunk: bytes, upload: BoundedUpload[ArtifactReference]) -> None:
        if not chunk:
            return
        self.preview.push(chunk)
        if not upload.failed:
            self._store(upload, chunk)

    def _store(self, upload: BoundedUpload[ArtifactReference], chunk: bytes) -> bool:
        """Hand the part of ``chunk`` that the cap lets through to the store."""
        part = self.cap.take(chunk)
        return upload.feed(part) if part else True

    def budget(self) -> ContextBudget:
        """The policy's budget, its hard cap narrowed to the caller's ``max_chars``."""
        budget = self.policy.budget()
        if self.max_chars is None or self.max_chars >= budget.max_chars:
            return budget
        return dataclasses.replace(budget, max_chars=max(0, self.max_chars))

    def notes(self, view: RetainedText | None, *, stored: bool, narrow: bool = True) -> tuple[str, ...]:
        """The notice's notes on masking and the cap; masking counts what ``view`` shows
        (``narrow``: of it, the part this exit code's preview keeps; None: no retained
        text is shown, only what the mask counted as shown, e.g. a log-compressed view)."""
        if narrow and view is not None:
            view = view.narrow(*self.rule.preview(self.exit_code))
        capped = StoreCap.note(self.capped) if self.capped and stored else None
        return tuple(n for n in (self.mask.sentence(stored=stored, view=view), capped) if n)

    def _degraded(self, reason: str, waited: float | None = None) -> SpillResult:
        """Not saved: what the preview keeps, honestly marked; never a pointer."""
        log.warning("spill.degraded", tool=self.tool, session_hash=self.sink.session_hash,
                    bytes=self.retainer.total_bytes, reason=reason,
                    waited=None if waited is None else round(waited, 3))
        return self.preview.degraded(reason)

    def from_rendered(self, rendered: RenderedContext, retained: RetainedText, *,
                       artifact: ArtifactReference | None = None, reason: str | None = None) -> SpillResult:
        mode = pointer_mode(rendered) if artifact is not None else degraded_mode(rendered)
        return self.result(rendered.text, mode, retained.total_bytes, rendered.shown.omitted_bytes,
                           artifact=artifact, reason=reason)

