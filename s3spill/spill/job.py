"""One call of :meth:`Spiller.externalize`: buffer, decide, stream, then point or degrade.

The state of a call (the buffered prefix, the retainer, the salient-line scanner, the
upload) lives here and dies with the call, so a :class:`~s3spill.spill.spiller.Spiller`
can serve concurrent calls of one session. The order of events is what keeps the
promises of the Spiller: the exit status is asked for only once the output has
ended; the upload is told "end of stream" only after the whole output was read
without error (otherwise it is abandoned, so a truncated artifact never completes);
and a result is pointed to only if the upload was accepted before the deadline.

Why over 400 lines: the output's kind (:mod:`s3spill.typed.detect`) changes steps of this
one call — a binary output gets a notice instead of a preview at the inline, clipped,
pointer and degraded steps, a structured one a preview cut between its elements — and
those branches need the call's state (buffer, retainer, upload, exit status) that the
pure renderers in ``context/`` deliberately do not see.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal, TypeVar

from pydantic import Field

from s3spill.context.budget import ContextBudget
from s3spill.context.logcompress import CompressedLog, compress_log
from s3spill.context.pointer import (
    CLIPPED_MARKER,
    DegradedFacts,
    PointerFacts,
    RenderedContext,
    clip,
    render_degraded,
    render_pointer,
    summarize,
)
from s3spill.context.policy import SpillPolicy, ToolPolicy
from s3spill.context.retention import RetainedText, TextRetainer
from s3spill.context.salient import SalientScanner
from s3spill.context.utf8 import safe_head_cut
from s3spill.fleet.cap import CapFacts, StoreCap
from s3spill.log import get_logger
from s3spill.models import ArtifactReference, Record
from s3spill.spill.secrets import SecretMask
from s3spill.spill.sink import SpillSink
from s3spill.spill.source import CHUNK_BYTES, Output, ReadFailure, iter_output
from s3spill.spill.upload import BoundedUpload, describe_error
from s3spill.telemetry.metrics import observe_fleet
from s3spill.textview import show
from s3spill.typed.binary import NOTICE_BYTES, BinaryFacts, render_binary, whole_fits
from s3spill.typed.bytepage import hexdump
from s3spill.typed.cuts import snap
from s3spill.typed.detect import TEXT, Detection, detect
from s3spill.typed.recordpage import total_records
from s3spill.typed.structured import StructureScanner, render_structured, type_note

__all__ = ["ExitCode", "Mode", "Note", "SpillJob", "SpillResult"]

log = get_logger("s3spill.spill.spiller")
_T = TypeVar("_T")

#: An exit status, or a callable that returns it once the output has ended.
ExitCode = int | Callable[[], int | None] | None
#: A sentence for the notice about how the output was captured, or a callable asked at its end.
Note = str | Callable[[], str | None] | None

Mode = Literal["inline", "clipped", "pointer", "pointer_hard_cap", "degraded", "degraded_hard_cap"]


class SpillResult(Record):
    """What the model sees of one tool result, and where the rest went (if anywhere)."""

    kind: Literal["spill_result"] = "spill_result"
    #: The model-facing text; within the policy's budget (hard cap always, tokens when set).
    context_text: str
    #: The stored full output; None when inline, clipped or degraded.
    artifact: ArtifactReference | None = None
    spilled: bool
    #: Bytes of the whole output (UTF-8 for text).
    total_bytes: int = Field(ge=0)
    #: Bytes of the output the context text does not show verbatim.
    omitted: int = Field(ge=0)
    #: Why the output could not be saved; set only when it was too large and the store failed.
    degraded_reason: str | None = None
    mode: Mode
    tool: str
    call_id: str | None = None
    exit_code: int | None = None
    #: How the output was captured, when that needs saying (e.g. a background process kept the
    #: pipe open); the pointer's notice says it too.
    note: str | None = None
    #: Secrets masked, by kind (s3spill.context.secrets); empty when none were found.
    masked: dict[str, int] = Field(default_factory=dict)
    #: True when they were masked in the stored copy too (policy ``secrets="at_rest"``).
    masked_at_rest: bool = False
    #: Bytes of the stored copy when it is truncated (over the policy's ``max_stored_bytes``).
    stored_bytes: int | None = Field(default=None, ge=0)


def _inline_limit(policy: SpillPolicy, rule: ToolPolicy) -> int:
    """Bytes after which an output is certainly over a threshold (a char is <= 4 bytes)."""
    return min(rule.inline_limit_bytes, 4 * policy.hard_cap_chars)


class SpillJob:
    """One call of :meth:`Spiller.externalize`; its state lives and dies with the call."""

    def __init__(self, sink: SpillSink, policy: SpillPolicy, output: Output, tool: str,
                 call_id: str | None, exit_code: ExitCode, spillable: bool, label: str | None,
                 force: bool, max_chars: int | None = None, note: Note = None) -> None:
        self.sink = sink
        self.policy = policy
        self.output = output
        self.tool = tool
        self.call_id = call_id
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
        self.scanner: SalientScanner | None = None
        self.structure: StructureScanner | None = None
        self.buffer: bytearray | None = None
        #: The buffered prefix is the whole output (the stream ended within the limit).
        self.complete = False
        self.detected: Detection = TEXT
        self.cap = StoreCap(policy.stored_cap(tool), policy.capped_tail_bytes)
        self.capped: CapFacts | None = None

    def ended(self) -> None:
        """The output is fully read: now the exit status can be known."""
        self.exit_code = self._exit_code = self._settle(self._exit_code, "spill.exit_code_failed")
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
        """Move the buffered prefix into the retainer (and the scanner), once."""
        if self.buffer is None:
            return
        prefix, self.buffer = self.buffer, None
        self.retainer.push(prefix)
        if self.scanner is not None:
            self.scanner.push(prefix)
        if self.structure is not None:
            self.structure.push(bytes(prefix))

    def _run(self) -> SpillResult:
        limit = _inline_limit(self.policy, self.rule)
        if self.rule.log_compress and self.spillable:
            limit = max(limit, self.policy.log_compress_max_bytes)
        buffer = self.buffer = bytearray()
        complete = True
        for chunk in self.chunks:
            buffer += chunk
            if len(buffer) > limit:
                complete = False
                break
        self.complete = complete
        if self.read.error is not None:
            self._retain_prefix()
            self.ended()
            return self._degraded(f"reading the output failed: {describe_error(self.read.error)}")
        if not complete:
            if not self.spillable:
                total = len(buffer) + sum(len(chunk) for chunk in self.chunks)
                self.ended()
                return self._clipped(bytes(buffer), total)
            return self._spill()
        self.ended()
        data = bytes(buffer)
        if not isinstance(self.output, str):
            self.detected = detect(data, complete=True)
            if self.detected.kind == "binary":
                return self._small_binary(data)
        text = self.output if isinstance(self.output, str) else show(data)
        if not self.spillable:
            return self._inline(text, data)
        over = self.force or self.policy.should_externalize(text, self.tool)
        if self.rule.log_compress:
            view = compress_log(text)
            if view.changed:  # lines are dropped from view: store the full text, point to it
                return self._spill(view=view, fallback=None if over else text)
        if not over:
            return self._inline(text, data)
        return self._spill()

    # -- not stored --------------------------------------------------------------------

    def _binary_facts(self, head: bytes, total: int, **extra: Any) -> BinaryFacts:
        return BinaryFacts(tool=self.tool, description=self.detected.description, total_bytes=total,
                           rows=tuple(hexdump(head)), mime=self.detected.mime, call_id=self.call_id,
                           exit_code=self.exit_code, read_tool=self.policy.read_tool,
                           style=self.policy.pointer_style, **extra)

    def _small_binary(self, data: bytes) -> SpillResult:
        """A binary output under every threshold: all of it as a hexdump if that fits, else
        stored (a tool result the model cannot read raw is never pasted raw)."""
        facts = self._binary_facts(data, len(data), sha256=hashlib.sha256(data).hexdigest(),
                                   whole=True)
        budget = self._budget()
        if whole_fits(facts, budget) and not self.policy.should_externalize(
                render_binary(facts, budget)[0], self.tool):
            return self.result(render_binary(facts, budget)[0], "inline", len(data), 0)
        if self.spillable:
            return self._spill()
        text, _ = render_binary(self._binary_facts(data[:NOTICE_BYTES], len(data)), budget)
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
                text, _ = render_binary(self._binary_facts(data[:NOTICE_BYTES], total),
                                        self._budget())
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
        if self.detected.structured and view is None:
            self.structure = StructureScanner(self.detected)
        elif self.policy.salient_lines and view is None and self.detected.kind != "binary":
            self.scanner = SalientScanner(skip_bytes=self.rule.smallest_head(),
                                          max_lines=self.policy.salient_lines,
                                          max_line_bytes=self.policy.salient_line_bytes,
                                          max_scan_bytes=self.policy.salient_scan_bytes,
                                          view=self.mask.line)

        upload = self.sink.open(self.tool, self.call_id, self.label, self.detected)
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
        return self._pointer(ref, view)

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
        self.retainer.push(chunk)
        if self.scanner is not None:
            self.scanner.push(chunk)
        if self.structure is not None:
            self.structure.push(chunk)
        if not upload.failed:
            self._store(upload, chunk)

    def _store(self, upload: BoundedUpload[ArtifactReference], chunk: bytes) -> bool:
        """Hand the part of ``chunk`` that the cap lets through to the store."""
        part = self.cap.take(chunk)
        return upload.feed(part) if part else True

    def _budget(self) -> ContextBudget:
        """The policy's budget, its hard cap narrowed to the caller's ``max_chars``."""
        budget = self.policy.budget()
        if self.max_chars is None or self.max_chars >= budget.max_chars:
            return budget
        return dataclasses.replace(budget, max_chars=max(0, self.max_chars))

    def _salient(self) -> list[Any]:
        return self.mask.salient(self.scanner.finish()) if self.scanner is not None else []

    def _pointer(self, ref: ArtifactReference, view: CompressedLog | None = None) -> SpillResult:
        retained = self.retainer.finish()
        if self.detected.kind != "binary":  # a binary notice shows hex only, never text
            retained = self.mask.retained(retained)
            ref = self.mask.reference(ref, retained)
        notes = self._notes(retained, stored=True)
        capped = self.capped is not None
        if self.detected.kind == "binary":
            notice = self._binary_facts(retained.head[:NOTICE_BYTES], ref.size_bytes,
                                        sha256=ref.sha256, source_id=ref.source_id)
            text, held = render_binary(notice, self._budget())
            return self.result(text, "pointer" if held else "pointer_hard_cap", ref.size_bytes,
                               ref.size_bytes, artifact=ref)
        facts = PointerFacts(
            source_id=ref.source_id, tool=self.tool, sha256=ref.sha256,
            summary=summarize(retained, self.tool, self.exit_code, self.policy.summary_chars),
            call_id=self.call_id, exit_code=self.exit_code,
            total_bytes=retained.total_bytes if capped else ref.size_bytes,
            stored_bytes=ref.size_bytes if capped else None,
            line_count=retained.line_count if capped else ref.line_count,
            read_tool=self.policy.read_tool, grep_tool=self.policy.grep_tool,
            view=view.describe() if view is not None else None, note=self.note,
            style=self.policy.pointer_style, type_note=self._type_note(), notes=notes,
        )
        head, tail = self.rule.preview(self.exit_code)
        if self.structure is not None:
            try:
                rendered = render_structured(facts, retained, self.detected.kind, head_bytes=head,
                                             tail_bytes=tail, budget=self._budget(),
                                             note=self._structured_note(retained, ref))
                return self._from_rendered(rendered, retained, artifact=ref)
            except Exception as exc:  # noqa: BLE001 - the typed preview is extra: show it as text
                log.warning("spill.typed_preview_failed", tool=self.tool, error=describe_error(exc))
        shown = RetainedText.of(self.mask.text(view.text)) if view is not None else retained
        salient = self._salient()
        rendered = render_pointer(facts, shown, head_bytes=head, tail_bytes=tail,
                                  budget=self._budget(), salient=salient)
        if view is None and (exact := self._notes(rendered.shown, stored=True, narrow=False)) != notes:
            facts = dataclasses.replace(facts, notes=exact)  # the notice names what it shows
            rendered = render_pointer(facts, shown, head_bytes=head, tail_bytes=tail,
                                      budget=self._budget(), salient=salient)
        if rendered.mode == "clipped" and self.max_chars is not None:
            # The caller's share cannot hold the notice: the smallest pointer, never a clipped locator.
            rendered = render_pointer(facts, shown, head_bytes=0, tail_bytes=0, budget=self.policy.budget())
        if view is not None:  # the view is not a slice of the output: count what it leaves out
            omitted = max(0, retained.total_bytes - rendered.shown.kept_bytes)
            return self.result(rendered.text, _pointer_mode(rendered), retained.total_bytes, omitted,
                               artifact=ref)
        return self._from_rendered(rendered, retained, artifact=ref)

    def _notes(self, view: RetainedText, *, stored: bool, narrow: bool = True) -> tuple[str, ...]:
        """The notice's notes on masking and the cap; masking counts what ``view`` shows
        (``narrow``: of it, the part this exit code's preview keeps)."""
        if narrow:
            view = view.narrow(*self.rule.preview(self.exit_code))
        capped = StoreCap.note(self.capped) if self.capped and stored else None
        return tuple(n for n in (self.mask.sentence(stored=stored, view=view), capped) if n)

    def _structured_note(self, retained: RetainedText,
                         ref: ArtifactReference) -> Callable[[RetainedText | None], str]:
        structure = self.structure
        assert structure is not None
        outline = structure.outline()
        records: int | None = None
        if self.detected.kind == "ndjson":
            records = retained.line_count
        elif self.detected.kind in ("csv", "tsv"):
            # Counted once, by the writer's record table (the index), not a second time here.
            index = self.sink.artifacts.written_index(ref)
            records = total_records(index) if index is not None and index.chunk_records else None

        def note(view: RetainedText | None) -> str:
            return type_note(self.detected, view, read_tool=self.policy.read_tool, outline=outline,
                             total_records=records,
                             record_pages=self.detected.kind in ("csv", "tsv"),
                             style=self.policy.pointer_style)

        return note

    def _type_note(self) -> str | None:
        if self.detected.kind == "text":
            return None
        return f"Type: {self.detected.description} (detected from the first bytes)."

    def _degraded(self, reason: str, waited: float | None = None) -> SpillResult:
        retained = self.retainer.finish()
        if self.detected.kind != "binary":
            retained = self.mask.retained(retained)
        log.warning("spill.degraded", tool=self.tool, session_hash=self.sink.session_hash,
                    bytes=retained.total_bytes, reason=reason,
                    waited=None if waited is None else round(waited, 3))
        if self.detected.kind == "binary":
            notice = self._binary_facts(retained.head[:NOTICE_BYTES], retained.total_bytes,
                                        reason=reason)
            text, held = render_binary(notice, self._budget())
            return self.result(text, "degraded" if held else "degraded_hard_cap",
                               retained.total_bytes, retained.total_bytes, reason=reason)
        try:
            facts = DegradedFacts(tool=self.tool, reason=reason, call_id=self.call_id,
                                  exit_code=self.exit_code, note=self.note,
                                  notes=self._notes(retained, stored=False))
            head, tail = self.rule.preview(self.exit_code)
            shown = retained
            if self.structure is not None:  # JSON/records: cut between elements here too
                shown = snap(retained.narrow(head, tail), self.detected.kind)
                head, tail = len(shown.head), len(shown.tail)
            rendered = render_degraded(facts, shown, head_bytes=head, tail_bytes=tail,
                                       budget=self._budget(), salient=self._salient())
        except Exception as exc:  # noqa: BLE001 - the renderer itself failed: fixed marker
            log.warning("spill.render_failed", tool=self.tool, error=describe_error(exc))
            return self._last_resort(retained, reason)
        return self._from_rendered(rendered, retained, reason=reason)

    def _last_resort(self, retained: RetainedText, reason: str) -> SpillResult:
        bare = reason[len("not saved:"):].strip() if reason.lower().startswith("not saved:") else reason
        note = f"\n[s3spill] The full output could NOT be saved ({bare[:200]})."
        text = clip(retained.head_text, max(0, self.policy.hard_cap_chars - len(note)))
        text = (text + note)[: self.policy.hard_cap_chars]
        shown = len(text.encode("utf-8", "replace"))
        return self.result(text, "degraded_hard_cap", retained.total_bytes,
                           retained.total_bytes - min(shown, len(retained.head)), reason=reason)

    def _from_rendered(self, rendered: RenderedContext, retained: RetainedText, *,
                       artifact: ArtifactReference | None = None, reason: str | None = None) -> SpillResult:
        mode = _pointer_mode(rendered) if artifact is not None else _degraded_mode(rendered)
        return self.result(rendered.text, mode, retained.total_bytes, rendered.shown.omitted_bytes,
                           artifact=artifact, reason=reason)


def _pointer_mode(rendered: RenderedContext) -> Mode:
    return "pointer" if rendered.mode == "pointer" else "pointer_hard_cap"


def _degraded_mode(rendered: RenderedContext) -> Mode:
    return "degraded" if rendered.mode == "degraded" else "degraded_hard_cap"
