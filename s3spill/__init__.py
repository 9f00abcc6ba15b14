"""s3spill: spill oversized tool output to immutable, checksummed objects.

The model's context gets a bounded head/tail preview plus a pointer it can page
through; the full output lives in S3 (or a local directory), protected by a lease
journal from a garbage collector that deletes only what nothing references.

Names are imported lazily (PEP 562): ``import s3spill`` costs next to nothing, and a
process that uses one corner (``s3spill read``) never imports boto3, GC or the agent
layer. Type checkers see the ordinary imports below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from s3spill._version import __version__ as __version__
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
    StreamNotReplayable,
    TransactionStateError,
    UnsupportedOperation,
)

if TYPE_CHECKING:
    from s3spill.agent.aio import AsyncAgentTools, AsyncSpiller, aexternalize
    from s3spill.agent.tools import AgentTools, ToolOutcome
    from s3spill.artifacts.index import ArtifactIndex
    from s3spill.artifacts.paging import Page, PageLine
    from s3spill.artifacts.search import GrepMatch, GrepResult
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.config import TransferConfig
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
    from s3spill.gc.apply import apply_cleanup
    from s3spill.gc.models import CleanupPolicy, CleanupReport, CleanupScope
    from s3spill.gc.plan import plan_cleanup
    from s3spill.gc.planfile import CleanupPlan
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

#: Public name -> the module that defines it (imported on first use).
_LAZY: dict[str, str] = {
    "AsyncAgentTools": "s3spill.agent.aio",
    "AsyncSpiller": "s3spill.agent.aio",
    "aexternalize": "s3spill.agent.aio",
    "AgentTools": "s3spill.agent.tools",
    "ToolOutcome": "s3spill.agent.tools",
    "ArtifactIndex": "s3spill.artifacts.index",
    "Page": "s3spill.artifacts.paging",
    "PageLine": "s3spill.artifacts.paging",
    "GrepMatch": "s3spill.artifacts.search",
    "GrepResult": "s3spill.artifacts.search",
    "ArtifactStore": "s3spill.artifacts.store",
    "TransferConfig": "s3spill.config",
    "BlockPlan": "s3spill.context.block_plan",
    "ImageBlock": "s3spill.context.block_plan",
    "TextBlock": "s3spill.context.block_plan",
    "default_image_price": "s3spill.context.block_plan",
    "full_text_chunks": "s3spill.context.block_plan",
    "plan_blocks": "s3spill.context.block_plan",
    "render_blocks": "s3spill.context.block_plan",
    "TurnBudgetReport": "s3spill.context.budget",
    "TurnResult": "s3spill.context.budget",
    "enforce_turn_budget": "s3spill.context.budget",
    "CompressedLog": "s3spill.context.logcompress",
    "compress_log": "s3spill.context.logcompress",
    "DegradedFacts": "s3spill.context.pointer",
    "PointerFacts": "s3spill.context.pointer",
    "RenderedContext": "s3spill.context.pointer",
    "render_degraded": "s3spill.context.pointer",
    "render_pointer": "s3spill.context.pointer",
    "summarize": "s3spill.context.pointer",
    "SpillPolicy": "s3spill.context.policy",
    "ToolPolicy": "s3spill.context.policy",
    "ItemRetainer": "s3spill.context.retention",
    "ItemStrategy": "s3spill.context.retention",
    "Omitted": "s3spill.context.retention",
    "PushDecision": "s3spill.context.retention",
    "RetainedItems": "s3spill.context.retention",
    "RetainedText": "s3spill.context.retention",
    "RetentionNotice": "s3spill.context.retention",
    "TextRetainer": "s3spill.context.retention",
    "TextStrategy": "s3spill.context.retention",
    "describe_omitted": "s3spill.context.retention",
    "format_retention_notice": "s3spill.context.retention",
    "SalientLine": "s3spill.context.salient",
    "SalientScanner": "s3spill.context.salient",
    "ContextBudget": "s3spill.context.tokens",
    "TokenCounter": "s3spill.context.tokens",
    "default_token_counter": "s3spill.context.tokens",
    "estimate_tokens": "s3spill.context.tokens",
    "apply_cleanup": "s3spill.gc.apply",
    "CleanupPlan": "s3spill.gc.planfile",
    "CleanupPolicy": "s3spill.gc.models",
    "CleanupReport": "s3spill.gc.models",
    "CleanupScope": "s3spill.gc.models",
    "plan_cleanup": "s3spill.gc.plan",
    "SourceId": "s3spill.keys",
    "LeaseJournal": "s3spill.leases.journal",
    "new_transaction_id": "s3spill.leases.journal",
    "ArtifactReferenceOwner": "s3spill.leases.owner",
    "OwnerObservation": "s3spill.leases.owner",
    "S3ReferenceOwner": "s3spill.leases.owner",
    "ReconciliationReport": "s3spill.leases.reconcile",
    "reconcile_pending": "s3spill.leases.reconcile",
    "reconcile_reference": "s3spill.leases.reconcile",
    "publish_memory_reference": "s3spill.leases.references",
    "remove_memory_reference": "s3spill.leases.references",
    "ArtifactMemoryReference": "s3spill.models",
    "ArtifactReference": "s3spill.models",
    "ArtifactRetentionClaim": "s3spill.models",
    "Spiller": "s3spill.spill.spiller",
    "SpillResult": "s3spill.spill.spiller",
    "ObjectInfo": "s3spill.store",
    "ObjectStore": "s3spill.store",
    "PutResult": "s3spill.store",
    "StoreCapabilities": "s3spill.store",
    "open_store": "s3spill.store",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 's3spill' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
    "AsyncAgentTools",
    "AsyncSpiller",
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
    "StreamNotReplayable",
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
    "aexternalize",
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

