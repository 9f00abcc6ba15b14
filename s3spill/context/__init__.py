"""The context side: what the model sees of a tool's output (pure, no I/O).

Retention primitives, the spill policy, the model-facing pointer, per-turn budgets
and log compression live here; the Spiller (above this layer) streams output once
through a :class:`TextRetainer` while the same chunks go to the artifact store, and
then asks this package for the text to put in the model's context.
"""

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

__all__ = [
    "ItemRetainer",
    "ItemStrategy",
    "Omitted",
    "PushDecision",
    "RetainedItems",
    "RetainedText",
    "RetentionNotice",
    "TextRetainer",
    "TextStrategy",
    "describe_omitted",
    "format_retention_notice",
]
