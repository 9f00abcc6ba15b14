"""What the model is shown of a stored (or unstorable) output, one implementation per kind.

A spill reads its output once; every chunk goes to the store and to one :class:`Preview`,
chosen once from the output's detected kind (:func:`choose_preview`): plain text keeps
head, tail and the salient lines; a structured output (JSON, NDJSON, CSV, TSV) is cut
between its elements; a binary one is shown as a hexdump notice, never as text; a log
whose compressed view differs shows that view. The job does not branch on the kind: it
pushes, then asks the preview for the pointer (stored) or the degraded notice (not).

Every preview renders through :class:`PreviewHost`, the few things of the call it needs
(policy, masking, exit status, the budget, how a result is built), so it never sees the
upload or the stream.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol

from s3spill.context.budget import ContextBudget
from s3spill.context.logcompress import CompressedLog
from s3spill.context.pointer import (
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
from s3spill.fleet.cap import CapFacts
from s3spill.log import get_logger
from s3spill.models import ArtifactReference
from s3spill.spill.result import Mode, SpillResult, pointer_mode
from s3spill.spill.secrets import SecretMask
from s3spill.spill.sink import SpillSink
from s3spill.spill.upload import describe_error
from s3spill.typed.binary import NOTICE_BYTES, BinaryFacts, render_binary
from s3spill.typed.bytepage import hexdump
from s3spill.typed.cuts import snap
from s3spill.typed.detect import Detection
from s3spill.typed.recordpage import total_records
from s3spill.typed.structured import StructureScanner, render_structured, type_note

__all__ = ["BinaryPreview", "LogPreview", "Preview", "PreviewHost", "StructuredPreview",
           "TextPreview", "choose_preview"]

log = get_logger("s3spill.spill.spiller")


class PreviewHost(Protocol):
    """What a preview needs of its spill call (:class:`~s3spill.spill.job.SpillJob`)."""

    policy: SpillPolicy
    rule: ToolPolicy
    mask: SecretMask
    sink: SpillSink
    tool: str
    call_id: str | None
    exit_code: int | None
    note: str | None
    detected: Detection
    capped: CapFacts | None
    #: The caller's share of the hard cap (a turn budget), when it set one.
    max_chars: int | None

    def budget(self) -> ContextBudget: ...

    def notes(self, view: RetainedText | None, *, stored: bool, narrow: bool = True) -> tuple[str, ...]: ...

    def result(self, text: str, mode: Mode, total: int, omitted: int, *,
               artifact: ArtifactReference | None = None, reason: str | None = None) -> SpillResult: ...

    def from_rendered(self, rendered: RenderedContext, retained: RetainedText, *,
                      artifact: ArtifactReference | None = None,
                      reason: str | None = None) -> SpillResult: ...


class Preview(Protocol):
    """One output's preview: fed every chunk once, then asked for what the model sees."""

    retainer: TextRetainer

    def push(self, chunk: bytes) -> None: ...

    def pointer(self, ref: ArtifactReference) -> SpillResult:
        """The model's text for the stored output ``ref``, as a result."""

    def degraded(self, reason: str) -> SpillResult:
        """The model's text when the output could not be stored, as a result."""


class TextPreview:
    """Plain text: head and tail retained, plus the salient lines between them."""

    def __init__(self, host: PreviewHost, retainer: TextRetainer, *, salient: bool = True) -> None:
        self.host = host
        self.retainer = retainer
        p = host.policy
        self.scanner = SalientScanner(
            skip_bytes=host.rule.smallest_head(), max_lines=p.salient_lines,
            max_line_bytes=p.salient_line_bytes, max_scan_bytes=p.salient_scan_bytes,
            view=host.mask.line) if salient and p.salient_lines else None

    def push(self, chunk: bytes) -> None:
        self.retainer.push(chunk)
        if self.scanner is not None:
            self.scanner.push(chunk)

    def _salient(self) -> list[Any]:
        return self.host.mask.salient(self.scanner.finish()) if self.scanner is not None else []

    def _retained(self) -> RetainedText:
        return self.host.mask.retained(self.retainer.finish())

    def _facts(self, ref: ArtifactReference, retained: RetainedText, notes: tuple[str, ...],
               view: CompressedLog | None = None) -> PointerFacts:
        h = self.host
        capped = h.capped is not None
        return PointerFacts(
            source_id=ref.source_id, tool=h.tool, sha256=ref.sha256,
            summary=summarize(retained, h.tool, h.exit_code, h.policy.summary_chars),
            call_id=h.call_id, exit_code=h.exit_code,
            total_bytes=retained.total_bytes if capped else ref.size_bytes,
            stored_bytes=ref.size_bytes if capped else None,
            line_count=retained.line_count if capped else ref.line_count,
            read_tool=h.policy.read_tool, grep_tool=h.policy.grep_tool,
            view=view.describe() if view is not None else None, note=h.note,
            style=h.policy.pointer_style, type_note=_type_note(h.detected), notes=notes,
        )

    def pointer(self, ref: ArtifactReference) -> SpillResult:
        """The pointer to a stored output: head, salient lines, tail, within the budget."""
        h = self.host
        retained = self._retained()
        ref = h.mask.reference(ref, retained)
        notes = h.notes(retained, stored=True)
        facts = self._facts(ref, retained, notes)
        rendered = self._pointer_body(facts, ref, retained) or self._render_text(facts, retained, notes)
        return h.from_rendered(rendered, retained, artifact=ref)

    def _pointer_body(self, facts: PointerFacts, ref: ArtifactReference,
                      retained: RetainedText) -> RenderedContext | None:
        """A kind's own rendering, or None for the text one."""
        return None

    def _render_text(self, facts: PointerFacts, shown: RetainedText, notes: tuple[str, ...], *,
                     exact_notes: bool = True) -> RenderedContext:
        h = self.host
        head, tail = h.rule.preview(h.exit_code)
        salient = self._salient()
        rendered = render_pointer(facts, shown, head_bytes=head, tail_bytes=tail, budget=h.budget(),
                                  salient=salient)
        if exact_notes and (exact := h.notes(rendered.shown, stored=True, narrow=False)) != notes:
            facts = dataclasses.replace(facts, notes=exact)  # the notice names what it shows
            rendered = render_pointer(facts, shown, head_bytes=head, tail_bytes=tail, budget=h.budget(),
                                      salient=salient)
        if rendered.mode == "clipped" and h.max_chars is not None:
            # The caller's share cannot hold the notice: the smallest pointer, never a clipped locator.
            rendered = render_pointer(facts, shown, head_bytes=0, tail_bytes=0, budget=h.policy.budget())
        return rendered

    def degraded(self, reason: str) -> SpillResult:
        """Not stored: the bounded head and tail, and a notice saying the output is not saved."""
        h = self.host
        retained = self._retained()
        try:
            facts = DegradedFacts(tool=h.tool, reason=reason, call_id=h.call_id,
                                  exit_code=h.exit_code, note=h.note,
                                  notes=h.notes(retained, stored=False))
            head, tail = h.rule.preview(h.exit_code)
            shown, head, tail = self._degraded_view(retained, head, tail)
            rendered = render_degraded(facts, shown, head_bytes=head, tail_bytes=tail,
                                       budget=h.budget(), salient=self._salient())
        except Exception as exc:  # noqa: BLE001 - the renderer itself failed: fixed marker
            log.warning("spill.render_failed", tool=h.tool, error=describe_error(exc))
            return self._last_resort(retained, reason)
        return h.from_rendered(rendered, retained, reason=reason)

    def _degraded_view(self, retained: RetainedText, head: int,
                       tail: int) -> tuple[RetainedText, int, int]:
        return retained, head, tail

    def _last_resort(self, retained: RetainedText, reason: str) -> SpillResult:
        h = self.host
        cap = h.policy.hard_cap_chars
        bare = reason[len("not saved:"):].strip() if reason.lower().startswith("not saved:") else reason
        note = f"\n[s3spill] The full output could NOT be saved ({bare[:200]})."
        text = (clip(retained.head_text, max(0, cap - len(note))) + note)[:cap]
        shown = len(text.encode("utf-8", "replace"))
        return h.result(text, "degraded_hard_cap", retained.total_bytes,
                        retained.total_bytes - min(shown, len(retained.head)), reason=reason)


class LogPreview(TextPreview):
    """A log whose compressed view drops lines: that view is shown, the full text stored."""

    def __init__(self, host: PreviewHost, retainer: TextRetainer, view: CompressedLog) -> None:
        super().__init__(host, retainer, salient=False)
        self.view = view

    def pointer(self, ref: ArtifactReference) -> SpillResult:
        h = self.host
        retained = self._retained()
        ref = h.mask.reference(ref, retained)
        # The view, not the retained head and tail, is what is shown: its masks are counted
        # first, and only they go into the note.
        shown = RetainedText.of(h.mask.log_view(self.view))
        notes = h.notes(None, stored=True)
        facts = self._facts(ref, retained, notes, self.view)
        rendered = self._render_text(facts, shown, notes, exact_notes=False)
        # The view is not a slice of the output: count what it leaves out.
        omitted = max(0, retained.total_bytes - rendered.shown.kept_bytes)
        return h.result(rendered.text, pointer_mode(rendered), retained.total_bytes, omitted,
                        artifact=ref)


class StructuredPreview(TextPreview):
    """JSON, NDJSON, CSV, TSV: the preview is cut between elements, with an outline."""

    def __init__(self, host: PreviewHost, retainer: TextRetainer) -> None:
        super().__init__(host, retainer, salient=False)
        self.structure = StructureScanner(host.detected)

    def push(self, chunk: bytes) -> None:
        self.retainer.push(chunk)
        self.structure.push(chunk)

    def _pointer_body(self, facts: PointerFacts, ref: ArtifactReference,
                      retained: RetainedText) -> RenderedContext | None:
        h = self.host
        head, tail = h.rule.preview(h.exit_code)
        try:
            return render_structured(facts, retained, h.detected.kind, head_bytes=head,
                                     tail_bytes=tail, budget=h.budget(),
                                     note=self._note(retained, ref))
        except Exception as exc:  # noqa: BLE001 - the typed preview is extra: show it as text
            log.warning("spill.typed_preview_failed", tool=h.tool, error=describe_error(exc))
            return None

    def _note(self, retained: RetainedText, ref: ArtifactReference) -> Callable[[RetainedText | None], str]:
        h = self.host
        outline = self.structure.outline()
        kind = h.detected.kind
        records: int | None = None
        if kind == "ndjson":
            records = retained.line_count
        elif kind in ("csv", "tsv"):
            # Counted once, by the writer's record table (the index), not a second time here.
            index = h.sink.artifacts.written_index(ref)
            records = total_records(index) if index is not None and index.chunk_records else None

        def note(view: RetainedText | None) -> str:
            return type_note(h.detected, view, read_tool=h.policy.read_tool, outline=outline,
                             total_records=records, record_pages=kind in ("csv", "tsv"),
                             style=h.policy.pointer_style)

        return note

    def _degraded_view(self, retained: RetainedText, head: int,
                       tail: int) -> tuple[RetainedText, int, int]:
        shown = snap(retained.narrow(head, tail), self.host.detected.kind)
        return shown, len(shown.head), len(shown.tail)


class BinaryPreview(TextPreview):
    """Binary data: a notice with the first bytes as hex, never the bytes as text."""

    def __init__(self, host: PreviewHost, retainer: TextRetainer) -> None:
        super().__init__(host, retainer, salient=False)

    def _notice(self, head: bytes, total: int, **extra: Any) -> BinaryFacts:
        return binary_facts(self.host, head, total, **extra)

    def pointer(self, ref: ArtifactReference) -> SpillResult:
        h = self.host
        retained = self.retainer.finish()  # a binary notice shows hex only, never text
        notice = self._notice(retained.head[:NOTICE_BYTES], ref.size_bytes, sha256=ref.sha256,
                              source_id=ref.source_id)
        text, held = render_binary(notice, h.budget())
        return h.result(text, "pointer" if held else "pointer_hard_cap", ref.size_bytes,
                        ref.size_bytes, artifact=ref)

    def degraded(self, reason: str) -> SpillResult:
        h = self.host
        retained = self.retainer.finish()
        notice = self._notice(retained.head[:NOTICE_BYTES], retained.total_bytes, reason=reason)
        text, held = render_binary(notice, h.budget())
        return h.result(text, "degraded" if held else "degraded_hard_cap", retained.total_bytes,
                        retained.total_bytes, reason=reason)


def binary_facts(host: PreviewHost, head: bytes, total: int, **extra: Any) -> BinaryFacts:
    """The facts of a binary notice (also for an output too small to store)."""
    return BinaryFacts(tool=host.tool, description=host.detected.description, total_bytes=total,
                       rows=tuple(hexdump(head)), mime=host.detected.mime, call_id=host.call_id,
                       exit_code=host.exit_code, read_tool=host.policy.read_tool,
                       style=host.policy.pointer_style, **extra)


def choose_preview(host: PreviewHost, retainer: TextRetainer,
                   view: CompressedLog | None = None) -> Preview:
    """The one preview of this output, by its detected kind (a log view wins over the kind)."""
    if view is not None:
        return LogPreview(host, retainer, view)
    if host.detected.kind == "binary":
        return BinaryPreview(host, retainer)
    if host.detected.structured:
        return StructuredPreview(host, retainer)
    return TextPreview(host, retainer)


def _type_note(detected: Detection) -> str | None:
    if detected.kind == "text":
        return None
    return f"Type: {detected.description} (detected from the first bytes)."
