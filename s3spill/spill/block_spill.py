"""Tool results made of text and image blocks: plan, store what is omitted, render.

Why images are stored one by one: an image omitted from the context must stay
reachable on its own (the model may want to look at exactly that screenshot), so
each omitted image becomes its own artifact and the notice names it by locator. The
full text (text blocks, with one reference line per image) is then stored like any
tool output and pointed to. The order matters: image locators go into the stored
text, so the images are stored first; the plan reserved the worst-case notice
(every locator at its longest) so the real notice always fits.

Failing open, as everywhere on the context side: an image that could not be stored
is named as "could NOT be saved"; if the full text cannot be stored, the notice has no
text locator and says so; no exception reaches the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from s3spill.context.block_plan import (
    Block,
    ImageBlock,
    TextBlock,
    binary_kind,
    default_image_price,
    full_text_chunks,
    plan_blocks,
    render_blocks,
    render_blocks_degraded,
)
from s3spill.context.budget import ContextBudget
from s3spill.context.pointer import CLIPPED_MARKER, DegradedFacts, PointerFacts, summarize
from s3spill.context.policy import SpillPolicy
from s3spill.context.retention import RetainedText
from s3spill.context.secrets import redact_text
from s3spill.context.utf8 import to_bytes
from s3spill.log import get_logger
from s3spill.models import ArtifactReference
from s3spill.spill.job import ExitCode
from s3spill.spill.result import SpillResult
from s3spill.spill.sink import SpillSink
from s3spill.spill.source import Output, iter_output

__all__ = ["BlocksResult", "externalize_blocks"]

log = get_logger("s3spill.spill.spiller")

#: Worst-case identity used to reserve the notice before anything is stored.
_WORST_SOURCE_ID = "artifact:" + "f" * 191
_WORST_COUNT = 10**12 - 1


@dataclass(frozen=True)
class BlocksResult:
    """What the model sees of a block result, and where the omitted parts went."""

    blocks: list[Block]
    #: The stored full text (text blocks plus one line per image); None if inline or not saved.
    artifact: ArtifactReference | None
    #: Omitted image index -> its own artifact (None: it could NOT be saved).
    images: dict[int, ArtifactReference | None] = field(default_factory=dict)
    degraded_reason: str | None = None

    @property
    def spilled(self) -> bool:
        return self.artifact is not None

    @property
    def text(self) -> str:
        """The text blocks of the result, joined (what the model reads besides the images)."""
        return "".join(b.text for b in self.blocks if isinstance(b, TextBlock))


def _text_stats(blocks: Sequence[Block]) -> RetainedText:
    return RetainedText.of(b"".join(to_bytes(b.text) for b in blocks if isinstance(b, TextBlock)))


class Externalize(Protocol):
    """The Spiller's text path, for a result whose notice alone fills the hard cap."""

    def __call__(self, output: Output, tool: str, call_id: str | None = None,
                 exit_code: ExitCode = None, spillable: bool = True, *, label: str | None = None,
                 force: bool = False) -> SpillResult: ...


def externalize_blocks(sink: SpillSink, policy: SpillPolicy, externalize: Externalize,
                       blocks: Sequence[Block], tool: str, call_id: str | None = None,
                       exit_code: int | None = None) -> BlocksResult:
    """Keep blocks from the start and the end within the budget; store the rest."""
    if policy.secrets != "off":  # text blocks are shown (and stored) masked; images as they are
        blocks = [TextBlock(redact_text(b.text)[0]) if isinstance(b, TextBlock) else b for b in blocks]
    price = policy.image_pricer or default_image_price
    text = _text_stats(blocks)
    summary = summarize(text, tool, exit_code, policy.summary_chars)
    worst = PointerFacts(source_id=_WORST_SOURCE_ID, tool=tool, sha256="f" * 64, summary=summary,
                         call_id=call_id, exit_code=exit_code, total_bytes=_WORST_COUNT,
                         line_count=_WORST_COUNT, read_tool=policy.read_tool, grep_tool=policy.grep_tool)
    budget = policy.budget()
    try:  # over the token budget the plan falls back to the hard cap by itself
        plan = plan_blocks(blocks, budget, worst, price_image=price)
    except ValueError:  # the notice alone is over the hard cap
        return _text_only(sink, externalize, blocks, tool, call_id, exit_code)
    if plan.inline:
        return BlocksResult(list(blocks), None)

    images: dict[int, ArtifactReference | None] = {}
    for index, image in plan.omitted_images:
        ref, reason = sink.store_blob(iter_output(image.data), tool, call_id, label=_label(index, image))
        if ref is None:
            log.warning("spill.image_not_saved", tool=tool, index=index, reason=reason)
        images[index] = ref
    locators = {i: (r.source_id if r is not None else None) for i, r in images.items()}
    ref, reason = sink.store_blob(full_text_chunks(blocks, locators), tool, call_id)
    if ref is not None:
        facts = PointerFacts(source_id=ref.source_id, tool=tool, sha256=ref.sha256, summary=summary,
                             call_id=call_id, exit_code=exit_code, total_bytes=ref.size_bytes,
                             line_count=ref.line_count, read_tool=policy.read_tool,
                             grep_tool=policy.grep_tool)
        out = render_blocks(plan, facts, locators)
        return BlocksResult(_within(out, budget), ref, images)
    reason = reason or "unknown failure"
    log.warning("spill.degraded", tool=tool, session_hash=sink.session_hash, reason=reason)
    degraded = DegradedFacts(tool=tool, reason=reason, call_id=call_id, exit_code=exit_code)
    out = render_blocks_degraded(plan, degraded, locators, text)
    return BlocksResult(_within(out, budget), None, images, reason)


def _label(index: int, block: ImageBlock) -> str:
    return f"{binary_kind(block.media_type)} #{index + 1} ({block.media_type})"


def _within(blocks: list[Block], budget: ContextBudget) -> list[Block]:
    """Belt and braces: clip the last text block if the rendering ever overshoots the cap."""
    chars = sum(len(b.text) for b in blocks if isinstance(b, TextBlock))
    if chars <= budget.max_chars:
        return blocks
    over = chars - budget.max_chars + len(CLIPPED_MARKER)
    out = list(blocks)
    for i in range(len(out) - 1, -1, -1):
        block = out[i]
        if isinstance(block, TextBlock) and len(block.text) >= over:
            out[i] = TextBlock(block.text[: len(block.text) - over] + CLIPPED_MARKER)
            return out
    return [TextBlock(CLIPPED_MARKER[: budget.max_chars])]


def _text_only(sink: SpillSink, externalize: Externalize, blocks: Sequence[Block], tool: str,
               call_id: str | None, exit_code: int | None) -> BlocksResult:
    """Not even the notice fits beside the blocks: store every image, point at the text.

    The stored text names every image's locator, so everything stays reachable from
    the one pointer the hard cap can hold.
    """
    images: dict[int, ArtifactReference | None] = {}
    for index, block in enumerate(blocks):
        if isinstance(block, ImageBlock):
            images[index], _ = sink.store_blob(iter_output(block.data), tool, call_id,
                                               label=_label(index, block))
    locators = {i: (r.source_id if r is not None else None) for i, r in images.items()}
    result = externalize(full_text_chunks(blocks, locators), tool, call_id, exit_code, force=True)
    return BlocksResult([TextBlock(result.context_text)], result.artifact, images, result.degraded_reason)
