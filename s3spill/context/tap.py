"""The context side of one pass over a tool's output, for the Spiller to drive.

The Spiller reads the output once and hands every chunk both to the artifact store
and to an :class:`OutputTap`; the tap keeps what the context needs (head and tail,
salient lines, and the whole output only while it is small enough to be inline or
log-compressed), in memory bounded by the policy whatever the output's size. After
the stream ends, the module-level functions turn the tap's result into the text the
model sees: inline, a pointer to the stored artifact, or the degraded variant when
the store failed. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from s3spill.context.logcompress import compress_log
from s3spill.context.pointer import (
    DegradedFacts,
    PointerFacts,
    RenderedContext,
    render_degraded,
    render_pointer,
    summarize,
)
from s3spill.context.policy import SpillPolicy, ToolPolicy
from s3spill.context.retention import RetainedText, TextRetainer, to_bytes
from s3spill.context.salient import SalientLine, SalientScanner


@dataclass(frozen=True)
class TapResult:
    """What the tap kept. ``full`` is the whole output, or None once it grew too big."""

    retained: RetainedText
    salient: tuple[SalientLine, ...]
    full: bytes | None

    @property
    def total_bytes(self) -> int:
        return self.retained.total_bytes

    @property
    def line_count(self) -> int:
        return self.retained.line_count


class OutputTap:
    """Feed it the same chunks as the store; memory stays bounded by the policy."""

    def __init__(self, policy: SpillPolicy, tool: str | None) -> None:
        self.policy = policy
        self.tool = tool
        self.rule: ToolPolicy = policy.for_tool(tool)
        self._retainer = TextRetainer(self.rule.retention())
        self._scanner = SalientScanner(
            skip_bytes=self.rule.smallest_head(),
            max_lines=policy.salient_lines,
            max_line_bytes=policy.salient_line_bytes,
            max_scan_bytes=policy.salient_scan_bytes,
        )
        #: Past this size the output cannot be inline (a character is at most 4 bytes).
        self.inline_cap = min(self.rule.inline_limit_bytes, 4 * policy.hard_cap_chars)
        keep = self.inline_cap
        if self.rule.log_compress:
            keep = max(keep, policy.log_compress_max_bytes)
        self._keep_cap = keep
        self._full: bytearray | None = bytearray()

    @property
    def total_bytes(self) -> int:
        return self._retainer.total_bytes

    @property
    def may_be_inline(self) -> bool:
        """False once the output is certainly over the inline limit: start storing it."""
        return self.total_bytes <= self.inline_cap

    def push(self, chunk: bytes | bytearray | memoryview | str) -> None:
        data = to_bytes(chunk) if isinstance(chunk, str) else chunk
        self._retainer.push(data)
        if self.policy.salient_lines:
            self._scanner.push(data)
        if self._full is not None:
            if len(self._full) + len(data) <= self._keep_cap:
                self._full += data
            else:
                self._full = None  # too big to keep whole: the retainer's preview will do

    def finish(self) -> TapResult:
        full = bytes(self._full) if self._full is not None else None
        return TapResult(self._retainer.finish(), tuple(self._scanner.finish()), full)


def inline_text(policy: SpillPolicy, tool: str | None, result: TapResult) -> str | None:
    """The output itself when it may stay in the context, else None (spill it)."""
    if result.full is None or result.total_bytes > min(
        policy.for_tool(tool).inline_limit_bytes, 4 * policy.hard_cap_chars
    ):
        return None
    text = result.full.decode("utf-8", "replace")
    return None if policy.should_externalize(text, tool) else text


def _compressed_view(rule: ToolPolicy, result: TapResult) -> tuple[RetainedText, str] | None:
    if not rule.log_compress or result.full is None:
        return None
    compressed = compress_log(result.full.decode("utf-8", "replace"))
    if not compressed.changed:
        return None
    return RetainedText.of(compressed.text), compressed.describe()


def render_spilled(
    policy: SpillPolicy,
    tool: str,
    result: TapResult,
    *,
    source_id: str,
    sha256: str,
    exit_code: int | None = None,
    call_id: str | None = None,
    summary: str | None = None,
) -> RenderedContext:
    """The pointer for an output that is stored in full as ``source_id``.

    For a ``log_compress`` tool whose output was small enough to keep whole, the
    preview is the compressed view (the stored artifact is still the full output).
    """
    rule = policy.for_tool(tool)
    head, tail = rule.preview(exit_code)
    facts = PointerFacts(
        source_id=source_id,
        tool=tool,
        sha256=sha256,
        summary=summary or summarize(result.retained, tool, exit_code, policy.summary_chars),
        call_id=call_id,
        exit_code=exit_code,
        total_bytes=result.total_bytes,
        line_count=result.line_count,
        read_tool=policy.read_tool,
        grep_tool=policy.grep_tool,
    )
    view = _compressed_view(rule, result)
    if view is not None:
        retained, label = view
        facts = replace(facts, view=label)
        return render_pointer(facts, retained, head_bytes=head, tail_bytes=tail, budget=policy.budget())
    return render_pointer(
        facts, result.retained, head_bytes=head, tail_bytes=tail, budget=policy.budget(),
        salient=result.salient,
    )


def render_unsaved(
    policy: SpillPolicy,
    tool: str,
    result: TapResult,
    *,
    reason: str,
    exit_code: int | None = None,
    call_id: str | None = None,
) -> RenderedContext:
    """The degraded text when the store failed: bounded, honest, no locator."""
    head, tail = policy.for_tool(tool).preview(exit_code)
    return render_degraded(
        DegradedFacts(tool, reason, call_id, exit_code), result.retained,
        head_bytes=head, tail_bytes=tail, budget=policy.budget(), salient=result.salient,
    )
