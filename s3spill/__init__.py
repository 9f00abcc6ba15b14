"""s3spill: spill oversized tool output to immutable, checksummed objects.

The model's context gets a bounded head/tail preview plus a pointer it can page
through; the full output lives in S3 (or a local directory), protected by a lease
journal from a garbage collector that deletes only what nothing references.

This is the headline API: the entry points a harness wires in, the records it
handles, and the exceptions a caller most often catches (the root
:class:`S3SpillError` catches all of them). Everything else stays importable from its
subpackage: every exception from :mod:`s3spill.errors`, the pure context helpers from
:mod:`s3spill.context`, paging and search from :mod:`s3spill.artifacts`, live output
from :mod:`s3spill.live`, reconciliation from :mod:`s3spill.leases`.

Names are imported lazily (PEP 562): ``import s3spill`` costs next to nothing (a hook
runs on every tool call of a harness), and a process that uses one corner
(``s3spill read``) never imports boto3, GC or the agent layer. The ``TYPE_CHECKING``
imports below are the one list (sorted by module, as isort keeps them): type checkers
read them, and the first lookup of a name reads the same lines from this file
(``__all__`` too).
"""

from __future__ import annotations

#: The package's version (:mod:`s3spill._version`), loaded on first use by :func:`__getattr__`.
__version__: str
TYPE_CHECKING = False  # not imported from typing (~2 ms): the CLI fast paths skip that import

if TYPE_CHECKING:
    from s3spill.agent.aio import AsyncAgentTools as AsyncAgentTools
    from s3spill.agent.tools import AgentTools as AgentTools
    from s3spill.agent.tools import ToolOutcome as ToolOutcome
    from s3spill.artifacts.store import ArtifactStore as ArtifactStore
    from s3spill.config import LiveConfig as LiveConfig
    from s3spill.config import TransferConfig as TransferConfig
    from s3spill.context.budget import TurnResult as TurnResult
    from s3spill.context.policy import SpillPolicy as SpillPolicy
    from s3spill.context.policy import ToolPolicy as ToolPolicy
    from s3spill.errors import ConfigError as ConfigError
    from s3spill.errors import IntegrityError as IntegrityError
    from s3spill.errors import InvalidRequest as InvalidRequest
    from s3spill.errors import JournalError as JournalError
    from s3spill.errors import NotFound as NotFound
    from s3spill.errors import S3SpillError as S3SpillError
    from s3spill.errors import StoreError as StoreError
    from s3spill.errors import StoreUnavailable as StoreUnavailable
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
    from s3spill.spill.aio import AsyncSpiller as AsyncSpiller
    from s3spill.spill.aio import aexternalize as aexternalize
    from s3spill.spill.spiller import Spiller as Spiller
    from s3spill.spill.spiller import SpillResult as SpillResult
    from s3spill.store import ObjectStore as ObjectStore
    from s3spill.store import open_store as open_store

_exports: dict[str, str] | None = None


def _read_exports() -> dict[str, str]:
    """Name -> defining module, from this file's ``TYPE_CHECKING`` block (the one list)."""
    global _exports
    if _exports is None:
        found: dict[str, str] = {}
        with open(__file__, encoding="utf-8") as f:
            for line in f:
                words = line.split()
                if len(words) == 6 and words[0] == "from" and words[2] == "import" and (
                        words[3] == words[5] and words[4] == "as" and words[1] != "s3spill._version"):
                    found[words[3]] = words[1]
        _exports = found
    return _exports


def __getattr__(name: str) -> object:
    if name == "__version__":  # its module loads on first use too: ~0.2 ms of every hook, run and read
        from s3spill._version import __version__

        globals()[name] = __version__
        return __version__
    if name == "__all__":
        return sorted(_read_exports())
    from s3spill.lazy_exports import load

    return load(globals(), _read_exports(), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_read_exports()) | {"__version__"})
