"""The built-in memory flow: a memory reference published through the bucket owner.

Glue, deliberately thin: the claim comes from the reference, the publisher and remover
are the :class:`~s3spill.leases.owner.S3ReferenceOwner`'s conditional writes, and the journal
does the ordering (PREPARED → publish → COMMITTED; remove → RELEASED).
"""

from __future__ import annotations

from datetime import datetime

from s3spill import keys
from s3spill.errors import DanglingReference, NotFound, SourceIdError
from s3spill.leases.journal import LeaseJournal, new_transaction_id
from s3spill.leases.owner import S3ReferenceOwner
from s3spill.leases.reports import TransitionResult
from s3spill.models import ArtifactMemoryReference, ArtifactRetentionClaim, SourceFields
from s3spill.store.base import ObjectStore
from s3spill.store.commit import content_info


def publish_memory_reference(
    journal: LeaseJournal, owner: S3ReferenceOwner, reference: ArtifactMemoryReference, *,
    transaction_id: str | None = None, retain_until: datetime | None = None, reference_count: int = 1,
) -> TransitionResult:
    """Publish ``reference`` under a lease; keep the returned transaction id to remove it."""
    claim = ArtifactRetentionClaim.from_memory_reference(
        reference, reference_count=reference_count, retain_until=retain_until)
    txid = transaction_id or new_transaction_id()
    return journal.publish_reference(claim, lambda: owner.publish(
        txid, reference, journal_sequence=journal.prepared_sequence(txid)), txid)


def remove_memory_reference(journal: LeaseJournal, owner: S3ReferenceOwner,
                            transaction_id: str) -> TransitionResult:
    """Tombstone the reference at the owner, then release the lease."""
    return journal.remove_reference(transaction_id, lambda: owner.remove(transaction_id))


def memory_reference_for(store: ObjectStore, source_id: str) -> ArtifactMemoryReference:
    """Build the thin reference for a stored artifact from its HEAD (never from user input).

    The digest is the one the store reports for the object; the tool is the one the
    artifact's name records (the name is derived by the artifact store, never supplied).
    """
    sid = keys.SourceId.parse(source_id)
    try:
        info = content_info(store, store.head(keys.artifact_key(sid.session_hash, sid.name)))
    except NotFound:
        raise DanglingReference(f"artifact {sid} does not exist") from None
    if info.sha256 is None:
        raise DanglingReference(f"the store reports no SHA-256 for {sid}")
    if not info.sha256.startswith(sid.sha256_prefix):
        raise SourceIdError(f"artifact {sid} has another digest than its source id says")
    tool = sid.name.split("-", 2)[-1]
    summary = f"{tool} output, {info.size} bytes"
    return ArtifactMemoryReference(
        summary=summary, source_id=str(sid), sha256=info.sha256, tool=tool,
        source=SourceFields(source_id=str(sid), title=f"{tool} output", captured_at=info.last_modified),
    )
