"""The context side: what the model sees of a tool's output (pure, no I/O).

Retention primitives, the spill policy, the model-facing pointer, per-turn budgets
and log compression live here; the Spiller (above this layer) streams output once
through a :class:`TextRetainer` while the same chunks go to the artifact store, and
then asks this package for the text to put in the model's context.
"""

from s3spill.context.block_plan import (
    BlockPlan,
    ImageBlock,
    TextBlock,
    default_image_price,
    full_text_chunks,
    plan_blocks,
    render_blocks,
)
from s3spill.context.budget import (
    ContextBudget,
    TurnBudgetReport,
    TurnResult,
    enforce_turn_budget,
)
from s3spill.context.logcompress import (
    CompressedLog,
    compress_log,
)
from s3spill.context.pointer import (
    DegradedFacts,
    PointerFacts,
    RenderedContext,
    render_degraded,
    render_pointer,
    summarize,
)
from s3spill.context.policy import (
    SpillPolicy,
    ToolPolicy,
)
from s3spill.context.retention import (
    ItemRetainer,
    ItemStrategy,
    Omitted,
    PushDecision,
    RetainedItems,
    RetainedText,
    RetentionNotice,
    TextRetainer,
    TextStrategy,
    describe_omitted,
    format_retention_notice,
)
from s3spill.context.salient import (
    SalientLine,
    SalientScanner,
)
from s3spill.context.tokens import (
    TokenCounter,
    default_token_counter,
    estimate_tokens,
)

__all__ = [
    "BlockPlan",
    "CompressedLog",
    "ContextBudget",
    "DegradedFacts",
    "ImageBlock",
    "ItemRetainer",
    "ItemStrategy",
    "Omitted",
    "PointerFacts",
    "PushDecision",
    "RenderedContext",
    "RetainedItems",
    "RetainedText",
    "RetentionNotice",
    "SalientLine",
    "SalientScanner",
    "SpillPolicy",
    "TextBlock",
    "TextRetainer",
    "TextStrategy",
    "TokenCounter",
    "ToolPolicy",
    "TurnBudgetReport",
    "TurnResult",
    "compress_log",
    "default_image_price",
    "default_token_counter",
    "describe_omitted",
    "enforce_turn_budget",
    "estimate_tokens",
    "format_retention_notice",
    "full_text_chunks",
    "plan_blocks",
    "render_blocks",
    "render_degraded",
    "render_pointer",
    "summarize",
]
