"""The memory owner's side of a reference: publication slots fenced by the store.

The journal can only say what it *intended*; whether a memory reference actually
exists is the owner's to answer. Reconciliation therefore needs an owner that can
(a) report what it holds for a transaction id, with a generation, and (b) turn an
observed absence into a *permanent* one — otherwise "not found" could be read lag or a
write still in flight, and GC would delete evidence a late reference then points to.

:class:`S3ReferenceOwner` is the built-in owner for memory references kept in the same
bucket. One slot object per transaction id (the id is hashed into the key), and every
state change is conditional on the slot:

* publish  = create-if-absent of the reference        (a slot is written once…)
* remove   = replace-if-match with a removed tombstone  (…then only ever tombstoned)
* seal     = create-if-absent of a sealed tombstone     (an absence made permanent)

So a late or replayed publish fails on any tombstone, a slot is never freed for reuse,
and the slot's ETag is the owner generation a reconciler fences on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import Field, ValidationError

from s3spill import keys
from s3spill.errors import (
    AlreadyExists,
    ArtifactPublicationRejected,
    IntegrityError,
    NotFound,
    PreconditionFailed,
    StoreError,
)
from s3spill.failpoints import declare, failpoint
from s3spill.models import ArtifactMemoryReference, ArtifactRetentionClaim, Record, utcnow
from s3spill.store.base import ObjectStore
from s3spill.store.conditional_writes import require_conditional_writes

FP_AFTER_PUBLISH = declare("owner.after_publish_write", "reference slot written; publisher not returned")
FP_AFTER_REMOVE = declare("owner.after_remove_write", "removed tombstone written; remover not returned")
FP_AFTER_SEAL = declare("owner.after_seal_write", "sealed tombstone written; seal not returned")

ObservationStatus = Literal["published", "absent", "sealed", "removed", "unknown"]
SealOutcome = Literal["sealed", "already_sealed", "stale"]
_JSON = "application/json"


class OwnerTransaction(Protocol):
    """What an owner needs to know about a transaction (the journal's TxView fits)."""

    @property
    def transaction_id(self) -> str: ...

    @property
    def claim(self) -> ArtifactRetentionClaim: ...


@dataclass(frozen=True)
class OwnerObservation:
    """What the owner holds for one transaction id, and at which generation.

    ``absent`` is an *unsealed* absence (a late write could still land); ``sealed`` is
    an absence the owner has made permanent. No content, no keys.
    """

    transaction_id: str
    status: ObservationStatus
    generation: str | None = None
    source_id: str | None = None
    sha256: str | None = None

    def matches(self, claim: ArtifactRetentionClaim) -> bool:
        return self.source_id == claim.source_id and self.sha256 == claim.sha256

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ArtifactReferenceOwner(Protocol):
    """The trusted boundary a memory adapter implements for reconciliation.

    ``seal_absent`` must be atomic on the owner side (a conditional create, a row lock,
    a transaction): after it returns ``sealed`` or ``already_sealed`` no publication for
    that transaction id can ever become visible. It returns ``stale`` if the slot
    changed since ``observed_generation``.
    """

    def observe(self, transaction: OwnerTransaction) -> OwnerObservation: ...

    def seal_absent(self, transaction: OwnerTransaction, observed_generation: str | None) -> SealOutcome: ...


class OwnerSlot(Record):
    """The body of a publication slot: a reference, or a tombstone that keeps it taken."""

    kind: Literal["owner_slot"] = "owner_slot"
    state: Literal["published", "removed", "sealed"]
    session_hash: str = Field(pattern=r"^[0-9a-f]{32}$")
    transaction_id: str
    source_id: str | None = None
    sha256: str | None = None
    reference: ArtifactMemoryReference | None = None
    at: datetime
    #: The sequence of the transaction's PREPARED record, when the publisher knew it: a
    #: manifest whose history ends before it was rolled back (see :mod:`.evidence`).
    journal_sequence: int | None = Field(default=None, ge=0)


class S3ReferenceOwner:
    """Memory references in the bucket, one create-once slot per transaction id."""

    def __init__(self, store: ObjectStore, session_id: str | None = None, *,
                 session_hash: str | None = None) -> None:
        if (session_id is None) == (session_hash is None):
            raise ValueError("give exactly one of session_id and session_hash")
        self.store = store
        self.session_hash = (keys.session_hash(session_id) if session_id is not None
                             else keys.check_session_hash(str(session_hash)))

    def _key(self, transaction_id: str) -> str:
        return keys.owner_slot_key(self.session_hash, transaction_id)

    def _read(self, transaction_id: str) -> tuple[OwnerSlot, str] | None:
        key = self._key(transaction_id)
        try:
            info = self.store.head(key)
            body = self.store.get(key)
        except NotFound:
            return None
        try:
            slot = OwnerSlot.model_validate_json(body)
        except ValidationError:
            raise IntegrityError("publication slot is not a valid slot record") from None
        if slot.transaction_id != transaction_id or slot.session_hash != self.session_hash:
            raise IntegrityError("publication slot belongs to another transaction")
        return slot, info.etag

    def _body(self, state: Literal["published", "removed", "sealed"], transaction_id: str,
              reference: ArtifactMemoryReference | None = None,
              identity: tuple[str | None, str | None] = (None, None),
              journal_sequence: int | None = None) -> bytes:
        source_id, sha256 = (reference.source_id, reference.sha256) if reference else identity
        return OwnerSlot(state=state, session_hash=self.session_hash, transaction_id=transaction_id,
                         source_id=source_id, sha256=sha256, reference=reference,
                         at=utcnow(), journal_sequence=journal_sequence,
                         ).model_dump_json(exclude_none=True).encode()

    # -- the memory side ---------------------------------------------------------------

    def publish(self, transaction_id: str, reference: ArtifactMemoryReference, *,
                journal_sequence: int | None = None) -> str:
        """Create the slot with the reference; the slot's ETag on success.

        ``journal_sequence`` (the PREPARED record's sequence) is stored in the slot so a
        rolled-back manifest is visible to GC and ``journal verify``.

        Raises :class:`ArtifactPublicationRejected` when a tombstone holds the slot (the
        reference was not written and never will be); a slot holding *another*
        reference raises :class:`IntegrityError` instead, which keeps the lease pending.
        """
        require_conditional_writes(self.store, purpose="the reference owner")
        try:
            put = self.store.put_if_absent(self._key(transaction_id), self._body(
                "published", transaction_id, reference, journal_sequence=journal_sequence),
                content_type=_JSON)
        except AlreadyExists:
            current = self._read(transaction_id)
            if current is None:
                raise IntegrityError("publication slot vanished; slots are never freed") from None
            slot, etag = current
            if slot.state == "published" and (slot.source_id, slot.sha256) == (reference.source_id,
                                                                                reference.sha256):
                return etag  # our own earlier write: publishing is idempotent per transaction id
            if slot.state in ("sealed", "removed"):
                raise ArtifactPublicationRejected(
                    f"publication slot of {transaction_id} is {slot.state}; nothing was written") from None
            raise IntegrityError(f"publication slot of {transaction_id} holds another reference") from None
        failpoint(FP_AFTER_PUBLISH)
        return put.etag

    def remove(self, transaction_id: str, attempts: int = 8) -> None:
        """Replace the reference with a removed tombstone (idempotent; seals a never-used slot)."""
        require_conditional_writes(self.store, purpose="the reference owner")
        for _ in range(attempts):
            current = self._read(transaction_id)
            try:
                if current is None:
                    self.store.put_if_absent(self._key(transaction_id),
                                             self._body("removed", transaction_id), content_type=_JSON)
                elif current[0].state == "published":
                    slot, etag = current
                    self.store.put_if_match(self._key(transaction_id), self._body(
                        "removed", transaction_id, identity=(slot.source_id, slot.sha256),
                        journal_sequence=slot.journal_sequence), etag, content_type=_JSON)
                else:
                    return  # removed or sealed: nothing is, or will be, published
            except (AlreadyExists, PreconditionFailed):
                continue  # the slot moved under us: look again
            failpoint(FP_AFTER_REMOVE)
            return
        raise StoreError(f"publication slot of {transaction_id} kept changing during removal")

    def get_reference(self, transaction_id: str) -> ArtifactMemoryReference | None:
        current = self._read(transaction_id)
        return current[0].reference if current and current[0].state == "published" else None

    # -- the reconciliation boundary ---------------------------------------------------

    def observe(self, transaction: OwnerTransaction) -> OwnerObservation:
        txid = transaction.transaction_id
        try:
            current = self._read(txid)
        except (StoreError, IntegrityError, OSError):
            return OwnerObservation(txid, "unknown")
        if current is None:
            return OwnerObservation(txid, "absent")
        slot, etag = current
        return OwnerObservation(txid, slot.state, etag, slot.source_id, slot.sha256)

    def seal_absent(self, transaction: OwnerTransaction, observed_generation: str | None) -> SealOutcome:
        txid = transaction.transaction_id
        if observed_generation is not None:
            return "stale"  # the slot existed when observed: not an absence to seal
        require_conditional_writes(self.store, purpose="the reference owner")
        try:
            self.store.put_if_absent(self._key(txid), self._body("sealed", txid), content_type=_JSON)
        except AlreadyExists:
            current = self._read(txid)
            return "already_sealed" if current is not None and current[0].state == "sealed" else "stale"
        failpoint(FP_AFTER_SEAL)
        return "sealed"
