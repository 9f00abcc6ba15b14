"""Apply for a purged session: re-check its seal, then delete what the plan found in it.

Why apart from :mod:`.apply_session`'s journal path: a purged session has no journal
(its manifest key holds the purge's tombstone, so no record can be added and no
condemnation either): the seal is the fence. Each object goes by ``If-Match`` on the
ETag just read, so a rewrite in between is deleted as it is now, and one already gone
is ``already_missing``.
"""

from __future__ import annotations

from collections.abc import Callable

from s3spill import keys
from s3spill.errors import NotFound, PreconditionFailed, StoreError
from s3spill.gc.models import ApplyOutcome
from s3spill.gc.planfile import PlanEntry
from s3spill.gc.tally import Tally
from s3spill.leases.erased import read_tombstone
from s3spill.store.base import ObjectStore


def erase_session(store: ObjectStore, shash: str, others: list[PlanEntry], erase: list[PlanEntry],
                  tally: Tally, dry_run: bool, take_slot: Callable[[], bool],
                  max_deletions: int | None) -> None:
    """Tally the entries the plan keeps; delete the ``planned_erase`` ones if still sealed."""
    for e in others:
        tally.add(e.status, e)
    with tally.lock:
        tally.sessions += 1
    if not sealed(store, shash):
        for e in erase:
            tally.add("retained_unverifiable", e, "planned as purged, but no tombstone now")
        return
    for e in erase:
        if dry_run:
            tally.add("dry_run", e, "dry run: nothing deleted")
        elif not take_slot():
            tally.add("retained_limit", e, f"max_deletions={max_deletions} reached")
        else:
            tally.add(*erase_object(store, e))


def sealed(store: ObjectStore, shash: str) -> bool:
    """Is the session's manifest key the purge's tombstone (read now)?"""
    try:
        return read_tombstone(store.get(keys.manifest_key(shash))) is not None
    except StoreError:
        return False


def erase_object(store: ObjectStore, e: PlanEntry) -> tuple[ApplyOutcome, PlanEntry, str]:
    """Delete one object of a purged session (``If-Match``; a rewritten one as it is now)."""
    assert e.key is not None and e.snapshot is not None
    etag = e.snapshot.etag
    for _ in range(4):
        try:
            store.delete_if_match(e.key, etag)
            return "deleted", e, "erased: its session was purged"
        except NotFound:
            return "already_missing", e, "gone already"
        except PreconditionFailed:
            try:
                etag = store.head(e.key).etag  # rewritten since the plan: erasable all the same
            except NotFound:
                return "already_missing", e, "gone already"
        except StoreError as exc:
            return "retained_error", e, f"delete failed: {type(exc).__name__}"
    return "retained_error", e, "kept changing"
