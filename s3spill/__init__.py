"""s3spill: spill oversized tool output to immutable, checksummed objects.

The model's context gets a bounded head/tail preview plus a pointer it can page
through; the full output lives in S3 (or a local directory), protected by a lease
journal from a garbage collector that deletes only what nothing references.
"""

from s3spill._version import __version__ as __version__
from s3spill.agent.tools import AgentTools, ToolOutcome
from s3spill.artifacts.index import ArtifactIndex
from s3spill.artifacts.paging import Page, PageLine
from s3spill.artifacts.search import GrepMatch, GrepResult
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import TransferConfig
from s3spill.context.blocks import (
    BlockPlan,
    ImageBlock,
    TextBlock,
    default_image_price,
    full_text_chunks,
    plan_blocks,
    render_blocks,
)
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
    ArtifactReferenced,
    CleanupRefused,
    ConditionalConflict,
    ConfigError,
    DanglingReference,
    IntegrityError,
    InvalidKey,
    InvalidRequest,
    JournalContention,
    JournalCorrupt,
    JournalError,
    NotFound,
    PreconditionFailed,
    S3SpillError,
    SourceIdError,
    StoreCapabilityError,
    StoreError,
    StoreUnavailable,
    TransactionStateError,
    UnsupportedOperation,
)
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.doc import CleanupPlan
from s3spill.gc.models import CleanupPolicy, CleanupReport, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.keys import SourceId
from s3spill.leases.journal import LeaseJournal, new_transaction_id
from s3spill.leases.owner import ArtifactReferenceOwner, OwnerObservation, S3ReferenceOwner
from s3spill.leases.reconcile import ReconciliationReport, reconcile_pending, reconcile_reference
from s3spill.leases.references import publish_memory_reference, remove_memory_reference
from s3spill.models import (
    ArtifactMemoryReference,
    ArtifactReference,
    ArtifactRetentionClaim,
)
from s3spill.spill.spiller import Spiller, SpillResult
from s3spill.store import ObjectInfo, ObjectStore, PutResult, StoreCapabilities, open_store

__all__ = [
    "AgentTools",
    "AlreadyExists",
    "ArtifactCondemned",
    "ArtifactIndex",
    "ArtifactMemoryReference",
    "ArtifactPublicationRejected",
    "ArtifactReference",
    "ArtifactReferenceOwner",
    "ArtifactReferenced",
    "ArtifactRetentionClaim",
    "ArtifactStore",
    "BlockPlan",
    "CleanupPlan",
    "CleanupPolicy",
    "CleanupRefused",
    "CleanupReport",
    "CleanupScope",
    "CompressedLog",
    "ConditionalConflict",
    "ConfigError",
    "ContextBudget",
    "DanglingReference",
    "DegradedFacts",
    "GrepMatch",
    "GrepResult",
    "ImageBlock",
    "IntegrityError",
    "InvalidKey",
    "InvalidRequest",
    "ItemRetainer",
    "ItemStrategy",
    "JournalContention",
    "JournalCorrupt",
    "JournalError",
    "LeaseJournal",
    "NotFound",
    "ObjectInfo",
    "ObjectStore",
    "Omitted",
    "OwnerObservation",
    "Page",
    "PageLine",
    "PointerFacts",
    "PreconditionFailed",
    "PushDecision",
    "PutResult",
    "ReconciliationReport",
    "RenderedContext",
    "RetainedItems",
    "RetainedText",
    "RetentionNotice",
    "S3ReferenceOwner",
    "S3SpillError",
    "SalientLine",
    "SalientScanner",
    "SourceId",
    "SourceIdError",
    "SpillPolicy",
    "SpillResult",
    "Spiller",
    "StoreCapabilities",
    "StoreCapabilityError",
    "StoreError",
    "StoreUnavailable",
    "TextBlock",
    "TextRetainer",
    "TextStrategy",
    "TokenCounter",
    "ToolOutcome",
    "ToolPolicy",
    "TransactionStateError",
    "TransferConfig",
    "TurnBudgetReport",
    "TurnResult",
    "UnsupportedOperation",
    "apply_cleanup",
    "compress_log",
    "default_image_price",
    "default_token_counter",
    "describe_omitted",
    "enforce_turn_budget",
    "estimate_tokens",
    "format_retention_notice",
    "full_text_chunks",
    "new_transaction_id",
    "open_store",
    "plan_blocks",
    "plan_cleanup",
    "publish_memory_reference",
    "reconcile_pending",
    "reconcile_reference",
    "remove_memory_reference",
    "render_blocks",
    "render_degraded",
    "render_pointer",
    "summarize",
]
