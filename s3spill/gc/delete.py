"""Deleting one object GC condemned: revalidate it against the plan's snapshot, then delete conditionally.

Kept apart from :mod:`s3spill.gc.apply` (which decides *what* may go, session by session)
because this is the one place that talks DELETE to the store: which delete the store can
be trusted with, what "still the same object" means, and the three outcomes of a delete
(gone, refused, unknown) that decide whether a condemnation is finished, lifted or kept.
"""

from __future__ import annotations

from collections.abc import Callable

from s3spill.errors import (
    CleanupRefused,
    IntegrityError,
    NotFound,
    PreconditionFailed,
    StoreError,
    UnsupportedOperation,
)
from s3spill.gc.fence import CondemnFact
from s3spill.gc.key_cache import index_key
from s3spill.gc.metered_store import MeteredStore
from s3spill.gc.models import ApplyOutcome, DeleteMethod, ObjectSnapshot
from s3spill.log import get_logger
from s3spill.store.base import ObjectInfo, StoreCapabilities
from s3spill.store.commit import defers_digest

__all__ = ["ConditionalDeleter", "choose_delete_method", "snapshot_mismatch"]

log = get_logger("s3spill.gc")

#: Re-judges an object's age on its fresh HEAD: why it must stay, or ``None``.
AgeCheck = Callable[[ObjectInfo], "str | None"]


def choose_delete_method(caps: StoreCapabilities, *, force_unverified: bool = False) -> DeleteMethod:
    """The safest delete this store honours; refuse when none can be trusted.

    ``If-Match`` deletes first (AWS S3); else a version-pinned delete on a versioned
    bucket (MinIO ignores conditional deletes but deletes exactly one version);
    batched conditional DeleteObjects is not used yet. With neither, a replaced
    object could be deleted, so apply refuses unless ``force_unverified``.
    """
    if caps.conditional_delete:
        return "if_match"
    if caps.versioning and caps.versioned_delete:
        return "version_pinned"
    if force_unverified:
        log.warning("gc.apply.UNVERIFIED_DELETES", reason="store honours neither conditional nor "
                    "versioned deletes; an object replaced between HEAD and DELETE would be lost")
        return "unconditional"
    raise CleanupRefused(
        "the store honours neither conditional deletes (If-Match on DeleteObject) nor "
        "version-pinned deletes (bucket versioning is off): a replaced artifact could be deleted. "
        "Enable bucket versioning, or pass --force-unverified-deletes if you accept that risk"
    )


def snapshot_mismatch(snap: ObjectSnapshot | CondemnFact, head: ObjectInfo,
                      method: DeleteMethod, *, committed: bool = False) -> str | None:
    """Why ``head`` is not the object the snapshot describes, or ``None``.

    ``committed``: the plan read the digest from the body's commit record, which pins the
    ETag compared here, so a listing (which carries no metadata) is enough.
    """
    if snap.etag is not None and head.etag != snap.etag:
        return "ETag changed"
    if snap.size is not None and head.size != snap.size:
        return "size changed"
    # A body that keeps its digest in its commit record (s3spill.store.commit) reports none
    # itself; the ETag compared above pins it to the body whose digest the plan read.
    if (snap.sha256 is not None and not committed and not defers_digest(head)
            and head.sha256 != snap.sha256):
        return "SHA-256 changed"
    if method == "version_pinned" and snap.version_id and head.version_id != snap.version_id:
        return "version changed"
    return None


class ConditionalDeleter:
    """HEAD, compare, re-judge, delete with the chosen method; each deletion takes a slot first.

    ``take_slot`` counts one deletion against ``max_deletions`` (shared by the run's threads)
    and answers False once the limit is reached.
    """

    def __init__(self, store: MeteredStore, method: DeleteMethod, take_slot: Callable[[], bool],
                 max_deletions: int | None) -> None:
        self.store = store
        self.method = method
        self.take_slot = take_slot
        self.max_deletions = max_deletions

    def delete(self, key: str, etag: str, version_id: str | None) -> None:
        if self.method == "version_pinned":
            if not version_id:
                raise PreconditionFailed("no version id to pin the delete to", key=key)
            self.store.delete_version(key, version_id)
        elif self.method == "unconditional":
            # The operator accepted the risk: a store that refuses If-Match on DELETE (501)
            # or ignores it must get a plain delete, or "force" would delete nothing.
            self.store.delete_unconditional(key)
        else:
            self.store.delete_if_match(key, etag)

    def delete_index(self, entry_index: ObjectSnapshot | None) -> None:
        """Best effort: a sidecar left behind is an orphan index the next plan deletes."""
        if entry_index is None:
            return
        try:
            version = entry_index.version_id
            if self.method == "version_pinned" and not version:
                head = self.store.head(entry_index.key)
                if head.etag != entry_index.etag:
                    return
                version = head.version_id
            self.delete(entry_index.key, entry_index.etag, version)
        except StoreError as exc:
            log.info("gc.apply.index_left", error=type(exc).__name__)

    def index_snapshot(self, shash: str, name: str) -> ObjectSnapshot | None:
        """The sidecar as it is now (a leftover condemnation has no plan line to name it)."""
        key = index_key(shash, name)
        try:
            head = self.store.head(key)
        except StoreError:
            return None
        return ObjectSnapshot(key=key, etag=head.etag, version_id=head.version_id, size=head.size,
                              last_modified=head.last_modified)

    def revalidate_and_delete(self, snap: ObjectSnapshot | CondemnFact, key: str,
                              young: AgeCheck | None = None, *, listed: ObjectInfo | None = None,
                              record_digest: Callable[[str], str | None] | None = None,
                              ) -> tuple[ApplyOutcome, str, bool]:
        """HEAD, compare, re-judge its age, delete. Returns (outcome, reason, delete_was_attempted).

        ``listed``: the object as a listing taken after the condemnation shows it, for a
        snapshot whose digest the plan read from the commit record (``committed``). Then
        no HEAD is sent: the listing gives the ETag, size and age to judge, and the
        ``If-Match`` delete on that ETag fails if the object changed since. An object the
        listing does not show is HEADed after all (a missing object is never assumed).

        ``record_digest`` (for a plan whose digests are not authenticated): reads the digest
        the commit record gives the body with an ETag; a body whose digest lives there must
        have the one the snapshot names, or it is not deleted.
        """
        checked = self.revalidate(snap, key, young, listed=listed, record_digest=record_digest)
        if isinstance(checked, tuple):
            return checked
        return self._delete_validated(key, checked)

    def revalidate(self, snap: ObjectSnapshot | CondemnFact, key: str, young: AgeCheck | None = None, *,
                   listed: ObjectInfo | None = None,
                   record_digest: Callable[[str], str | None] | None = None,
                   ) -> tuple[ApplyOutcome, str, bool] | ObjectInfo:
        """:meth:`revalidate_and_delete` up to the delete: the object to delete (its deletion
        slot taken), or the outcome that keeps it (nothing attempted)."""
        committed = listed is not None and self.method == "if_match"
        if committed:
            assert listed is not None
            head = listed
        else:
            try:
                head = self.store.head(key)
            except NotFound:
                return "already_missing", "object already gone", False
            except StoreError as exc:
                return "retained_error", f"HEAD failed: {type(exc).__name__}", False
        changed = snapshot_mismatch(snap, head, self.method, committed=committed)
        if changed:
            return "race_detected", f"{changed} since the plan", False
        if record_digest is not None and (committed or defers_digest(head)):
            try:
                recorded = record_digest(head.etag)
            except (StoreError, IntegrityError) as exc:  # a damaged record: kept, and the run goes on
                return "retained_error", f"commit record unreadable: {type(exc).__name__}", False
            if recorded != snap.sha256:
                return "race_detected", "its commit record names another digest than the plan", False
        why = young(head) if young is not None else None
        if why:
            return "retained_recent", why, False
        if not self.take_slot():
            return "retained_limit", f"max_deletions={self.max_deletions} reached", False
        return head

    def delete_validated_many(self, validated: list[tuple[str, ObjectInfo]]
                              ) -> list[tuple[ApplyOutcome, str, bool]]:
        """Delete each ``(key, validated HEAD)`` as :meth:`revalidate_and_delete` would; the
        outcome of each, in order. ``If-Match`` deletes go to the store as one batch
        (:meth:`~s3spill.store.base.ObjectStore.delete_many_if_match`: the same conditional
        delete per key, each outcome its own); the other methods, one by one."""
        if self.method != "if_match":
            return [self._delete_validated(key, head) for key, head in validated]
        errors = self.store.delete_many_if_match([(key, head.etag) for key, head in validated])
        return [_delete_outcome(errors[key]) for key, _ in validated]

    def delete_indexes(self, snapshots: list[ObjectSnapshot]) -> None:
        """:meth:`delete_index` of each sidecar (best effort), in one batch where deletes are ``If-Match``."""
        if self.method != "if_match":
            for snap in snapshots:
                self.delete_index(snap)
            return
        for key, error in self.store.delete_many_if_match([(s.key, s.etag) for s in snapshots]).items():
            if error is not None:
                log.info("gc.apply.index_left", error=type(error).__name__, key=key)

    def _delete_validated(self, key: str, head: ObjectInfo) -> tuple[ApplyOutcome, str, bool]:
        try:
            # The etag of the validated HEAD: equal to the snapshot's when it has one.
            self.delete(key, head.etag, head.version_id)
        except StoreError as exc:
            return _delete_outcome(exc)
        return _delete_outcome(None)


def _delete_outcome(error: StoreError | None) -> tuple[ApplyOutcome, str, bool]:
    """What one delete's answer means: (outcome, reason, delete_was_attempted)."""
    if error is None:
        return "deleted", "", True
    if isinstance(error, NotFound):
        return "already_missing", "object vanished before the delete", True
    if isinstance(error, PreconditionFailed):
        return "race_detected", f"conditional delete refused: {error}", True
    if isinstance(error, UnsupportedOperation):
        # A definite refusal (501 NotImplemented): nothing was deleted, so the
        # condemnation is lifted, never left "unknown" for ever.
        return "retained_error", f"the store refused the delete as not implemented: {error}", False
    return "retained_error", f"delete outcome unknown: {type(error).__name__}", True
