"""s3spill: spill oversized tool output to immutable, checksummed objects.

The model's context gets a bounded head/tail preview plus a pointer it can page
through; the full output lives in S3 (or a local directory), protected by a lease
journal from a garbage collector that deletes only what nothing references.
"""

from s3spill.config import TransferConfig
from s3spill.context.budget import (
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
    ContextBudget,
    TokenCounter,
    default_token_counter,
    estimate_tokens,
)
from s3spill.errors import (
    AlreadyExists,
    ArtifactCondemned,
    ArtifactPublicationRejected,
    CleanupRefused,
    ConditionalConflict,
    ConfigError,
    IntegrityError,
    InvalidKey,
    JournalContention,
    JournalCorrupt,
    JournalError,
    NotFound,
    PreconditionFailed,
    S3SpillError,
    SourceIdError,
    StoreError,
    StoreUnavailable,
    TransactionStateError,
    UnsupportedOperation,
)
from s3spill.keys import SourceId
from s3spill.models import (
    ArtifactMemoryReference,
    ArtifactReference,
    ArtifactRetentionClaim,
)
from s3spill.store import ObjectInfo, ObjectStore, PutResult, StoreCapabilities, open_store

__version__ = "0.1.0"

__all__ = [
    "AlreadyExists",
    "ArtifactCondemned",
    "ArtifactMemoryReference",
    "ArtifactPublicationRejected",
    "ArtifactReference",
    "ArtifactRetentionClaim",
    "CleanupRefused",
    "CompressedLog",
    "ConditionalConflict",
    "ConfigError",
    "ContextBudget",
    "DegradedFacts",
    "IntegrityError",
    "InvalidKey",
    "ItemRetainer",
    "ItemStrategy",
    "JournalContention",
    "JournalCorrupt",
    "JournalError",
    "NotFound",
    "ObjectInfo",
    "ObjectStore",
    "Omitted",
    "PointerFacts",
    "PreconditionFailed",
    "PushDecision",
    "PutResult",
    "RenderedContext",
    "RetainedItems",
    "RetainedText",
    "RetentionNotice",
    "S3SpillError",
    "SalientLine",
    "SalientScanner",
    "SourceId",
    "SourceIdError",
    "SpillPolicy",
    "StoreCapabilities",
    "StoreError",
    "StoreUnavailable",
    "TextRetainer",
    "TextStrategy",
    "TokenCounter",
    "ToolPolicy",
    "TransactionStateError",
    "TransferConfig",
    "TurnBudgetReport",
    "TurnResult",
    "UnsupportedOperation",
    "compress_log",
    "default_token_counter",
    "describe_omitted",
    "enforce_turn_budget",
    "estimate_tokens",
    "format_retention_notice",
    "open_store",
    "render_degraded",
    "render_pointer",
    "summarize",
]
