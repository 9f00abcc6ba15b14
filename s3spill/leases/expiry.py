"""Telling "expired" from "not found": only the session's journal knows that GC deleted it.

A missing artifact has three possible stories: the id was never written (mistyped or
made up), something other than GC deleted it, or GC deleted it after its TTL. Only the
last is "expired, re-running the command is fine", and only GC's DELETED record in the
session's journal proves it; saying "expired" for the others would send the model to
re-run a command for an output that never existed, or hide a deletion GC did not make.
"""

from __future__ import annotations

from s3spill.config import TransferConfig
from s3spill.errors import ArtifactExpired, ArtifactNotFound, JournalError, StoreError
from s3spill.leases.journal import LeaseJournal
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore

log = get_logger("s3spill.leases.expiry")


def explain_missing(store: ObjectStore, session_id: str, exc: ArtifactNotFound,
                    config: TransferConfig | None = None) -> ArtifactNotFound:
    """:class:`ArtifactExpired` when the journal records that GC deleted the artifact, else ``exc``.

    A journal that cannot be read changes nothing: the answer stays "not found", which
    is true, rather than a guess at "expired".
    """
    source_id = exc.source_id
    if isinstance(exc, ArtifactExpired) or source_id is None:
        return exc
    try:
        deleted = LeaseJournal(store, session_id, config).deleted_by_gc(source_id)
    except (JournalError, StoreError) as err:
        log.info("expiry.journal_unreadable", error=type(err).__name__)
        return exc
    if not deleted:
        return exc
    return ArtifactExpired(
        f"{source_id} is no longer stored: GC deleted it after its TTL (the session's journal "
        "records it); re-running the command that produced it is fine", key=exc.key,
        source_id=source_id)
