"""Leases: what keeps a referenced artifact alive.

``journal`` (with ``cas``, ``records`` and ``view``) is the per-session manifest changed
only by compare-and-swap; ``owner`` is the memory system's publication slot per
transaction; ``references`` publishes and removes a memory reference across both;
``reconcile`` resolves transactions left PREPARED by a crash.
"""

from s3spill.leases.journal import LeaseJournal, new_transaction_id
from s3spill.leases.owner import ArtifactReferenceOwner, OwnerObservation, S3ReferenceOwner

__all__ = [
    "ArtifactReferenceOwner",
    "LeaseJournal",
    "OwnerObservation",
    "S3ReferenceOwner",
    "new_transaction_id",
]
