"""The context side: what the model sees of a tool's output (pure, no I/O).

Retention primitives, the spill policy, the model-facing pointer, per-turn budgets
and log compression live here; the Spiller (above this layer) streams output once
through a :class:`TextRetainer` while the same chunks go to the artifact store, and
then asks this package for the text to put in the model's context.

Names are imported on first use (PEP 562), as in :mod:`s3spill`: importing one pure
helper (``s3spill.context.secrets.triggers``) must not load the policy's pydantic models or every
renderer; a hook or ``s3spill run`` of a small output pays only for what it uses.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not imported from typing: the fast paths skip that import
if TYPE_CHECKING:
    from s3spill.context.block_plan import BlockPlan as BlockPlan
    from s3spill.context.block_plan import ImageBlock as ImageBlock
    from s3spill.context.block_plan import TextBlock as TextBlock
    from s3spill.context.block_plan import default_image_price as default_image_price
    from s3spill.context.block_plan import full_text_chunks as full_text_chunks
    from s3spill.context.block_plan import plan_blocks as plan_blocks
    from s3spill.context.block_plan import render_blocks as render_blocks
    from s3spill.context.budget import ContextBudget as ContextBudget
    from s3spill.context.budget import TurnBudgetReport as TurnBudgetReport
    from s3spill.context.budget import TurnResult as TurnResult
    from s3spill.context.budget import enforce_turn_budget as enforce_turn_budget
    from s3spill.context.logcompress import CompressedLog as CompressedLog
    from s3spill.context.logcompress import compress_log as compress_log
    from s3spill.context.pointer import DegradedFacts as DegradedFacts
    from s3spill.context.pointer import PointerFacts as PointerFacts
    from s3spill.context.pointer import RenderedContext as RenderedContext
    from s3spill.context.pointer import render_degraded as render_degraded
    from s3spill.context.pointer import render_pointer as render_pointer
    from s3spill.context.pointer import summarize as summarize
    from s3spill.context.policy import SpillPolicy as SpillPolicy
    from s3spill.context.policy import ToolPolicy as ToolPolicy
    from s3spill.context.retention import ItemRetainer as ItemRetainer
    from s3spill.context.retention import ItemStrategy as ItemStrategy
    from s3spill.context.retention import Omitted as Omitted
    from s3spill.context.retention import PushDecision as PushDecision
    from s3spill.context.retention import RetainedItems as RetainedItems
    from s3spill.context.retention import RetainedText as RetainedText
    from s3spill.context.retention import RetentionNotice as RetentionNotice
    from s3spill.context.retention import TextRetainer as TextRetainer
    from s3spill.context.retention import TextStrategy as TextStrategy
    from s3spill.context.retention import describe_omitted as describe_omitted
    from s3spill.context.retention import format_retention_notice as format_retention_notice
    from s3spill.context.salient import SalientLine as SalientLine
    from s3spill.context.salient import SalientScanner as SalientScanner
    from s3spill.context.tokens import TokenCounter as TokenCounter
    from s3spill.context.tokens import default_token_counter as default_token_counter
    from s3spill.context.tokens import estimate_tokens as estimate_tokens

#: Public name -> the module that defines it (imported on first use).
_EXPORTS: dict[str, str] = {
    "BlockPlan": "s3spill.context.block_plan",
    "CompressedLog": "s3spill.context.logcompress",
    "ContextBudget": "s3spill.context.budget",
    "DegradedFacts": "s3spill.context.pointer",
    "ImageBlock": "s3spill.context.block_plan",
    "ItemRetainer": "s3spill.context.retention",
    "ItemStrategy": "s3spill.context.retention",
    "Omitted": "s3spill.context.retention",
    "PointerFacts": "s3spill.context.pointer",
    "PushDecision": "s3spill.context.retention",
    "RenderedContext": "s3spill.context.pointer",
    "RetainedItems": "s3spill.context.retention",
    "RetainedText": "s3spill.context.retention",
    "RetentionNotice": "s3spill.context.retention",
    "SalientLine": "s3spill.context.salient",
    "SalientScanner": "s3spill.context.salient",
    "SpillPolicy": "s3spill.context.policy",
    "TextBlock": "s3spill.context.block_plan",
    "TextRetainer": "s3spill.context.retention",
    "TextStrategy": "s3spill.context.retention",
    "TokenCounter": "s3spill.context.tokens",
    "ToolPolicy": "s3spill.context.policy",
    "TurnBudgetReport": "s3spill.context.budget",
    "TurnResult": "s3spill.context.budget",
    "compress_log": "s3spill.context.logcompress",
    "default_image_price": "s3spill.context.block_plan",
    "default_token_counter": "s3spill.context.tokens",
    "describe_omitted": "s3spill.context.retention",
    "enforce_turn_budget": "s3spill.context.budget",
    "estimate_tokens": "s3spill.context.tokens",
    "format_retention_notice": "s3spill.context.retention",
    "full_text_chunks": "s3spill.context.block_plan",
    "plan_blocks": "s3spill.context.block_plan",
    "render_blocks": "s3spill.context.block_plan",
    "render_degraded": "s3spill.context.pointer",
    "render_pointer": "s3spill.context.pointer",
    "summarize": "s3spill.context.pointer",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> object:
    from s3spill.lazy_exports import load

    return load(globals(), _EXPORTS, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
