"""s3spill: spill oversized tool output to immutable, checksummed objects.

The model's context gets a bounded head/tail preview plus a pointer it can page
through; the full output lives in S3 (or a local directory), protected by a lease
journal from a garbage collector that deletes only what nothing references.

This is the headline API: the entry points a harness wires in, the records it
handles, and every exception it may need to catch. Everything else stays importable
from its subpackage (the pure context helpers from :mod:`s3spill.context`, paging and
search from :mod:`s3spill.artifacts`, reconciliation from :mod:`s3spill.leases`).

Names are imported lazily (PEP 562): ``import s3spill`` costs next to nothing, and a
process that uses one corner (``s3spill read``) never imports boto3, GC or the agent
layer. :data:`_EXPORTS` is the one list; ``__all__`` and the lazy lookup derive from
it. Type checkers see the ``TYPE_CHECKING`` imports below, which a test keeps equal to
:data:`_EXPORTS`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from s3spill._version import __version__ as __version__

if TYPE_CHECKING:
    from s3spill.agent.aio import AsyncAgentTools as AsyncAgentTools
    from s3spill.agent.aio import AsyncSpiller as AsyncSpiller
    from s3spill.agent.aio import aexternalize as aexternalize
    from s3spill.agent.tools import AgentTools as AgentTools
    from s3spill.agent.tools import ToolOutcome as ToolOutcome
    from s3spill.artifacts.store import ArtifactStore as ArtifactStore
    from s3spill.config import LiveConfig as LiveConfig
    from s3spill.config import TransferConfig as TransferConfig
    from s3spill.context.budget import TurnResult as TurnResult
    from s3spill.context.policy import SpillPolicy as SpillPolicy
    from s3spill.context.policy import ToolPolicy as ToolPolicy
    from s3spill.errors import AlreadyExists as AlreadyExists
    from s3spill.errors import ArtifactCondemned as ArtifactCondemned
    from s3spill.errors import ArtifactErased as ArtifactErased
    from s3spill.errors import ArtifactExpired as ArtifactExpired
    from s3spill.errors import ArtifactNotFound as ArtifactNotFound
    from s3spill.errors import ArtifactPublicationRejected as ArtifactPublicationRejected
    from s3spill.errors import ArtifactReferenced as ArtifactReferenced
    from s3spill.errors import BucketNotFound as BucketNotFound
    from s3spill.errors import CleanupRefused as CleanupRefused
    from s3spill.errors import ConditionalConflict as ConditionalConflict
    from s3spill.errors import ConfigError as ConfigError
    from s3spill.errors import DanglingReference as DanglingReference
    from s3spill.errors import GcLockLost as GcLockLost
    from s3spill.errors import GcRunLocked as GcRunLocked
    from s3spill.errors import IntegrityError as IntegrityError
    from s3spill.errors import InvalidKey as InvalidKey
    from s3spill.errors import InvalidRequest as InvalidRequest
    from s3spill.errors import JournalContention as JournalContention
    from s3spill.errors import JournalCorrupt as JournalCorrupt
    from s3spill.errors import JournalError as JournalError
    from s3spill.errors import LiveFenced as LiveFenced
    from s3spill.errors import NotFound as NotFound
    from s3spill.errors import PolicyError as PolicyError
    from s3spill.errors import PreconditionFailed as PreconditionFailed
    from s3spill.errors import S3SpillError as S3SpillError
    from s3spill.errors import SessionErased as SessionErased
    from s3spill.errors import SourceIdError as SourceIdError
    from s3spill.errors import StoreCapabilityError as StoreCapabilityError
    from s3spill.errors import StoreError as StoreError
    from s3spill.errors import StoreUnavailable as StoreUnavailable
    from s3spill.errors import StreamNotReplayable as StreamNotReplayable
    from s3spill.errors import TransactionStateError as TransactionStateError
    from s3spill.errors import UnsupportedOperation as UnsupportedOperation
    from s3spill.fleet.purge import purge_session as purge_session
    from s3spill.fleet.quota import Quota as Quota
    from s3spill.gc.apply import apply_cleanup as apply_cleanup
    from s3spill.gc.models import CleanupPolicy as CleanupPolicy
    from s3spill.gc.models import CleanupReport as CleanupReport
    from s3spill.gc.models import CleanupScope as CleanupScope
    from s3spill.gc.plan import plan_cleanup as plan_cleanup
    from s3spill.gc.planfile import CleanupPlan as CleanupPlan
    from s3spill.keys import LiveId as LiveId
    from s3spill.keys import SourceId as SourceId
    from s3spill.leases.journal import LeaseJournal as LeaseJournal
    from s3spill.leases.journal import new_transaction_id as new_transaction_id
    from s3spill.leases.owner import ArtifactReferenceOwner as ArtifactReferenceOwner
    from s3spill.leases.owner import S3ReferenceOwner as S3ReferenceOwner
    from s3spill.leases.references import publish_memory_reference as publish_memory_reference
    from s3spill.leases.references import remove_memory_reference as remove_memory_reference
    from s3spill.live.run import LiveHandle as LiveHandle
    from s3spill.models import ArtifactMemoryReference as ArtifactMemoryReference
    from s3spill.models import ArtifactReference as ArtifactReference
    from s3spill.models import ArtifactRetentionClaim as ArtifactRetentionClaim
    from s3spill.spill.spiller import Spiller as Spiller
    from s3spill.spill.spiller import SpillResult as SpillResult
    from s3spill.store import ObjectStore as ObjectStore
    from s3spill.store import open_store as open_store

#: The headline API, the one list: public name -> the module that defines it
#: (imported on first use). Kept sorted by name; ``__all__`` is its keys.
_EXPORTS: dict[str, str] = {
    "AgentTools": "s3spill.agent.tools",
    "AlreadyExists": "s3spill.errors",
    "ArtifactCondemned": "s3spill.errors",
    "ArtifactErased": "s3spill.errors",
    "ArtifactExpired": "s3spill.errors",
    "ArtifactMemoryReference": "s3spill.models",
    "ArtifactNotFound": "s3spill.errors",
    "ArtifactPublicationRejected": "s3spill.errors",
    "ArtifactReference": "s3spill.models",
    "ArtifactReferenceOwner": "s3spill.leases.owner",
    "ArtifactReferenced": "s3spill.errors",
    "ArtifactRetentionClaim": "s3spill.models",
    "ArtifactStore": "s3spill.artifacts.store",
    "AsyncAgentTools": "s3spill.agent.aio",
    "AsyncSpiller": "s3spill.agent.aio",
    "BucketNotFound": "s3spill.errors",
    "CleanupPlan": "s3spill.gc.planfile",
    "CleanupPolicy": "s3spill.gc.models",
    "CleanupRefused": "s3spill.errors",
    "CleanupReport": "s3spill.gc.models",
    "CleanupScope": "s3spill.gc.models",
    "ConditionalConflict": "s3spill.errors",
    "ConfigError": "s3spill.errors",
    "DanglingReference": "s3spill.errors",
    "GcLockLost": "s3spill.errors",
    "GcRunLocked": "s3spill.errors",
    "IntegrityError": "s3spill.errors",
    "InvalidKey": "s3spill.errors",
    "InvalidRequest": "s3spill.errors",
    "JournalContention": "s3spill.errors",
    "JournalCorrupt": "s3spill.errors",
    "JournalError": "s3spill.errors",
    "LeaseJournal": "s3spill.leases.journal",
    "LiveConfig": "s3spill.config",
    "LiveFenced": "s3spill.errors",
    "LiveHandle": "s3spill.live.run",
    "LiveId": "s3spill.keys",
    "NotFound": "s3spill.errors",
    "ObjectStore": "s3spill.store",
    "PolicyError": "s3spill.errors",
    "PreconditionFailed": "s3spill.errors",
    "Quota": "s3spill.fleet.quota",
    "S3ReferenceOwner": "s3spill.leases.owner",
    "S3SpillError": "s3spill.errors",
    "SessionErased": "s3spill.errors",
    "SourceId": "s3spill.keys",
    "SourceIdError": "s3spill.errors",
    "SpillPolicy": "s3spill.context.policy",
    "SpillResult": "s3spill.spill.spiller",
    "Spiller": "s3spill.spill.spiller",
    "StoreCapabilityError": "s3spill.errors",
    "StoreError": "s3spill.errors",
    "StoreUnavailable": "s3spill.errors",
    "StreamNotReplayable": "s3spill.errors",
    "ToolOutcome": "s3spill.agent.tools",
    "ToolPolicy": "s3spill.context.policy",
    "TransactionStateError": "s3spill.errors",
    "TransferConfig": "s3spill.config",
    "TurnResult": "s3spill.context.budget",
    "UnsupportedOperation": "s3spill.errors",
    "aexternalize": "s3spill.agent.aio",
    "apply_cleanup": "s3spill.gc.apply",
    "new_transaction_id": "s3spill.leases.journal",
    "open_store": "s3spill.store",
    "plan_cleanup": "s3spill.gc.plan",
    "publish_memory_reference": "s3spill.leases.references",
    "purge_session": "s3spill.fleet.purge",
    "remove_memory_reference": "s3spill.leases.references",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 's3spill' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
