"""Erasure on request: delete everything of one session, fenced so nothing comes back.

Not garbage collection, though it deletes: GC keeps what a reference protects and never
deletes protocol state; a user's deletion request (or a leaked secret) needs the opposite:
every artifact, referenced or not, its index, the journal's segments, the usage counter,
and the content of the manifest and of every owner slot. The order is what makes it stick:

1. **Seal the store** — create the audit record ``v1/erasures/<session>.json`` (state
   ``sealing``). A live writer checks it after each write and deletes what it wrote
   (:mod:`s3spill.fleet.seal`); readers then say "erased on request", not "expired".
2. **Seal the journal** — replace the manifest, by compare-and-swap on the state just
   verified, with a content-free tombstone (:mod:`s3spill.leases.erased`): no record can
   be added and the manifest can never be created again. Because the swap is conditional
   on the verified state, the transaction ids read from it are *all* there will ever be.
3. **Seal the owner slots** — every slot of those transactions (and any other slot found
   under the session's owner prefix) becomes a sealed tombstone (create-if-absent, or
   replace-if-match a published one, which erases its reference): a stalled publisher's
   create-once write now fails.
4. **Delete** every other object of the session (indexes before bodies, conditionally on
   the ETag just read), then — once longer than a writer reuses a "not sealed" answer has
   passed since the seal — list again and delete what a writer added meanwhile;
   with ``all_versions``, every noncurrent version and delete marker too.
5. **Record** what was deleted — keys, sizes, ETags, SHA-256 where known, who asked and
   why, never any content — in the audit record (state ``erased``).

A purge is idempotent: run again, it finds the seals in place and deletes what is left.
It refuses to run without ``confirm=True`` (``--yes-erase-everything``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, Literal

import orjson
from pydantic import Field, ValidationError

from s3spill import keys
from s3spill.errors import (
    AlreadyExists,
    CleanupRefused,
    ConfigError,
    IntegrityError,
    JournalError,
    NotFound,
    PreconditionFailed,
    SessionErased,
    StoreError,
    UnsupportedOperation,
)
from s3spill.fleet.seal import CHECK_TTL
from s3spill.leases.cas import GUESS_TTL
from s3spill.leases.erased import ErasedSession
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.owner import OwnerSlot
from s3spill.log import get_logger
from s3spill.models import Record, utcnow
from s3spill.store.base import ObjectInfo, ObjectStore

__all__ = ["ErasedObject", "ErasureRecord", "purge_session"]

log = get_logger("s3spill.fleet.purge")

_JSON = "application/json"
_ATTEMPTS = 16
#: Seconds between the seal and the final sweep: longer than a live writer reuses a "not
#: sealed" answer (:data:`s3spill.fleet.seal.CHECK_TTL`) or the journal a verified state for a
#: segment write (:data:`s3spill.leases.cas.GUESS_TTL`), with a second to spare.
SETTLE_SECONDS = max(CHECK_TTL, GUESS_TTL) + 1.0


class ErasedObject(Record):
    """One object version a purge deleted (or sealed): identity and size, never content."""

    key: str
    kind: str
    size: int = Field(ge=0)
    etag: str | None = None
    sha256: str | None = None
    version_id: str | None = None
    action: Literal["deleted", "sealed", "swept", "version_deleted"] = "deleted"


class ErasureRecord(Record):
    """The audit record of a purge, kept in the store at ``v1/erasures/<session_hash>.json``."""

    kind: Literal["erasure_record"] = "erasure_record"
    session_hash: str = Field(pattern=r"^[0-9a-f]{32}$")
    state: Literal["sealing", "erased"]
    requested_by: str = Field(min_length=1, max_length=256)
    reason: str | None = Field(default=None, max_length=500)
    started_at: datetime
    finished_at: datetime | None = None
    all_versions: bool = False
    runs: int = Field(default=1, ge=1)
    objects: list[ErasedObject] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(f"{o.action}:{o.kind}" for o in self.objects))

    @property
    def bytes_deleted(self) -> int:
        return sum(o.size for o in self.objects if o.action != "sealed")

    @property
    def ok(self) -> bool:
        return self.state == "erased" and not self.failures

    def render(self) -> str:
        """The report for a terminal, in the shape of GC's: totals by kind, then failures."""
        lines = [f"purge of session {self.session_hash} (requested by {self.requested_by}): {self.state}"
                 f"{', run ' + str(self.runs) if self.runs > 1 else ''}"]
        for name, n in sorted(self.counts.items()):
            lines.append(f"  {name:<28} {n:>8}")
        lines.append(f"  bytes deleted                {self.bytes_deleted:>8,}")
        lines.extend(f"  FAILED: {f}" for f in self.failures)
        lines.append(f"audit record: {keys.erasure_key(self.session_hash)}")
        return "\n".join(lines)


class _Purge:
    def __init__(self, store: ObjectStore, shash: str, record: ErasureRecord,
                 clock: Callable[[], datetime]) -> None:
        self.store = store
        self.shash = shash
        self.record = record
        self.clock = clock
        self.audit_key = keys.erasure_key(shash)
        self.etag: str | None = None
        self.digests: dict[str, str | None] = {}
        self.done: set[tuple[str, str | None]] = {(o.key, o.version_id) for o in record.objects}

    # -- the audit record (the seal) ------------------------------------------------------

    def seal_store(self) -> None:
        body = self.record.model_dump_json().encode()
        try:
            self.etag = self.store.put_if_absent(self.audit_key, body, content_type=_JSON).etag
            return
        except AlreadyExists:
            pass
        info = self.store.head(self.audit_key)
        try:
            previous = ErasureRecord.model_validate_json(self.store.get(self.audit_key))
        except ValidationError:
            raise IntegrityError(f"{self.audit_key} is not an erasure record; refusing to purge") from None
        self.record = previous.model_copy(update={
            "state": "sealing", "runs": previous.runs + 1, "requested_by": self.record.requested_by,
            "reason": self.record.reason or previous.reason, "failures": [],
            "all_versions": self.record.all_versions or previous.all_versions})
        self.done = {(o.key, o.version_id) for o in self.record.objects}
        self.etag = info.etag
        self.save()

    def save(self) -> None:
        assert self.etag is not None
        body = self.record.model_dump_json().encode()
        self.etag = self.store.put_if_match(self.audit_key, body, self.etag, content_type=_JSON).etag

    def note(self, obj: ErasedObject) -> None:
        if (obj.key, obj.version_id) not in self.done:
            self.done.add((obj.key, obj.version_id))
            self.record.objects.append(obj)

    def fail(self, what: str, exc: BaseException) -> None:
        self.record.failures.append(f"{what}: {type(exc).__name__}: {str(exc)[:200]}")
        log.error("purge.failed", session_hash=self.shash, what=what, error=type(exc).__name__)

    # -- the journal ----------------------------------------------------------------------

    def seal_journal(self) -> set[str]:
        """Tombstone the manifest on the state just verified; the transaction ids it held."""
        key = keys.manifest_key(self.shash)
        tombstone = ErasedSession(session_hash=self.shash, erased_at=self.clock(),
                                  audit_key=self.audit_key).model_dump_json().encode()
        for _ in range(_ATTEMPTS):
            journal = LeaseJournal(self.store, session_hash=self.shash)
            txids: set[str] = set()
            try:
                view = journal.view()
                txids = set(view.known_transaction_ids)
                etag = journal.etag if view.exists else None
            except SessionErased:
                return self._txids_from_slots()  # sealed by an earlier run
            except JournalError as exc:
                # A journal that does not verify is still erased; its transactions are then
                # found from the owner slots, and the manifest is replaced as it stands.
                self.fail("journal did not verify (erased anyway)", exc)
                try:
                    etag = self.store.head(key).etag
                except NotFound:
                    etag = None
            try:
                size = self.store.head(key).size if etag is not None else 0
                if etag is None:
                    put = self.store.put_if_absent(key, tombstone, content_type=_JSON)
                else:
                    put = self.store.put_if_match(key, tombstone, etag, content_type=_JSON)
            except (AlreadyExists, PreconditionFailed, NotFound):
                continue  # a writer got in between: verify its state and swap again
            self.note(ErasedObject(key=key, kind="manifest", size=size, etag=etag, action="sealed",
                                   version_id=put.version_id))
            return txids | self._txids_from_slots()
        raise StoreError(f"the manifest of session {self.shash} kept changing; purge not sealed")

    # -- owner slots ----------------------------------------------------------------------

    def _slot_body(self, txid: str) -> bytes:
        return OwnerSlot(state="sealed", session_hash=self.shash, transaction_id=txid,
                         at=self.clock()).model_dump_json(exclude_none=True).encode()

    def _txids_from_slots(self) -> set[str]:
        found = set()
        for info in self.store.list(f"{keys.OWNER}/{self.shash}/"):
            try:
                found.add(OwnerSlot.model_validate_json(self.store.get(info.key)).transaction_id)
            except (ValidationError, NotFound):
                continue
        return found

    def seal_slots(self, txids: set[str]) -> None:
        for txid in sorted(txids):
            key = keys.owner_slot_key(self.shash, txid)
            try:
                self._seal_slot(key, txid)
            except StoreError as exc:
                self.fail(f"seal {key}", exc)

    def _seal_slot(self, key: str, txid: str) -> None:
        for _ in range(_ATTEMPTS):
            try:
                info: ObjectInfo | None = self.store.head(key)
            except NotFound:
                info = None
            try:
                if info is None:
                    put = self.store.put_if_absent(key, self._slot_body(txid), content_type=_JSON)
                    self.note(ErasedObject(key=key, kind="owner", size=0, action="sealed",
                                           version_id=put.version_id))
                    return
                slot = OwnerSlot.model_validate_json(self.store.get(key))
                if slot.state == "sealed":
                    return
                put = self.store.put_if_match(key, self._slot_body(txid), info.etag, content_type=_JSON)
                self.note(ErasedObject(key=key, kind="owner", size=info.size, etag=info.etag,
                                       sha256=slot.sha256, action="sealed", version_id=put.version_id))
                return
            except (AlreadyExists, PreconditionFailed, NotFound):
                continue
            except ValidationError:
                raise IntegrityError(f"{key} is not an owner slot; left as it is") from None
        raise StoreError(f"owner slot {key} kept changing")

    # -- deleting -------------------------------------------------------------------------

    def _listing(self) -> list[ObjectInfo]:
        manifest = keys.manifest_key(self.shash)
        infos = [i for i in self.store.list(keys.session_prefix(self.shash)) if i.key != manifest]
        order = {"index": 0, "usage": 1, "artifact": 2, "segment": 3}
        return sorted(infos, key=lambda i: (order.get(keys.parse_key(i.key).kind, 4), i.key))

    def delete_all(self, action: Literal["deleted", "swept"]) -> int:
        n = 0
        with self.store.deferred_sync():
            for info in self._listing():
                try:
                    self._delete(info, action)
                    n += 1
                except StoreError as exc:
                    self.fail(f"delete {info.key}", exc)
        return n

    def _digest(self, info: ObjectInfo, kind: str) -> str | None:
        """The SHA-256 to record: an artifact body's content digest (from its index, read
        before the index goes), otherwise the object's own, when the store knows it."""
        if kind in ("artifact", "index"):
            name = str(keys.parse_key(info.key).name)
            if name not in self.digests:
                try:  # the index is the artifact's commit record: its full SHA-256 is in there
                    raw = orjson.loads(self.store.get(keys.index_key(self.shash, name))).get("sha256")
                except (NotFound, orjson.JSONDecodeError, AttributeError):
                    raw = None
                self.digests[name] = raw if isinstance(raw, str) else None
            if kind == "artifact":
                return self.digests[name] or info.sha256
        return info.sha256

    def _delete(self, info: ObjectInfo, action: Literal["deleted", "swept"]) -> None:
        kind = keys.parse_key(info.key).kind
        try:
            head = self.store.head(info.key)
        except NotFound:
            return
        digest = self._digest(head, kind)
        for _ in range(_ATTEMPTS):
            try:
                self.store.delete_if_match(info.key, head.etag)
                break
            except NotFound:
                return
            except PreconditionFailed:  # rewritten since the HEAD: delete what is there now
                try:
                    head = self.store.head(info.key)
                except NotFound:
                    return
        else:
            raise StoreError(f"{info.key} kept changing; not deleted")
        self.note(ErasedObject(key=info.key, kind=kind, size=head.size, etag=head.etag, sha256=digest,
                               version_id=head.version_id, action=action))

    # -- versions -------------------------------------------------------------------------

    def delete_versions(self) -> None:
        """Every version and delete marker under the session's prefixes, but the seals' current ones."""
        sealed = self._seal_keys()
        for prefix in (keys.session_prefix(self.shash), f"{keys.OWNER}/{self.shash}/"):
            for key, version, size, current in _versions(self.store, prefix):
                if current and key in sealed:
                    continue  # the seals stay; their older versions (the content) go
                try:
                    self.store.delete_version(key, version)
                except NotFound:
                    continue
                except StoreError as exc:
                    self.fail(f"delete version {key}@{version}", exc)
                    continue
                self.note(ErasedObject(key=key, kind=keys.parse_key(key).kind, size=size,
                                       version_id=version, action="version_deleted"))

    def _seal_keys(self) -> set[str]:
        owner = {i.key for i in self.store.list(f"{keys.OWNER}/{self.shash}/")}
        return {keys.manifest_key(self.shash), *owner}


def _versions(store: ObjectStore, prefix: str) -> Iterator[tuple[str, str, int, bool]]:
    """(key, version id, size, is current) of every version under ``prefix`` (S3 only)."""
    inner: Any = store
    while not hasattr(inner, "client") and hasattr(inner, "inner"):
        inner = inner.inner
    client, bucket = getattr(inner, "client", None), getattr(inner, "bucket", None)
    if client is None or bucket is None:
        raise UnsupportedOperation(f"{store.url} has no object versions to delete")
    full = inner.full_key(prefix.rstrip("/")) + "/"
    strip = len(inner.full_key("x")) - 1
    for page in client.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=full):
        for item in page.get("Versions", []) + page.get("DeleteMarkers", []):
            yield item["Key"][strip:], item["VersionId"], int(item.get("Size", 0)), bool(item["IsLatest"])


def purge_session(store: ObjectStore, session_id: str | None = None, *, session_hash: str | None = None,
                  requested_by: str, reason: str | None = None, all_versions: bool = False,
                  confirm: bool = False, clock: Callable[[], datetime] = utcnow,
                  settle_seconds: float = SETTLE_SECONDS) -> ErasureRecord:
    """Erase everything of one session (see the module docstring); the audit record.

    Raises :class:`CleanupRefused` without ``confirm``; a failure to delete one object is
    listed in the record's ``failures`` (the purge goes on, and can be run again).
    ``settle_seconds`` between the seal and the final sweep must exceed the writers'
    seal-check reuse (:data:`s3spill.fleet.seal.CHECK_TTL`); lower it only when no
    writer can be running.
    """
    if not confirm:
        raise CleanupRefused("purge deletes every output, index and journal record of the session, "
                             "referenced or not, for good: confirm it (--yes-erase-everything)")
    if (session_id is None) == (session_hash is None):
        raise ConfigError("give exactly one of session_id and session_hash")
    shash = keys.session_hash(session_id) if session_id is not None else keys.check_session_hash(
        str(session_hash))
    started = time.monotonic()
    purge = _Purge(store, shash, ErasureRecord(session_hash=shash, state="sealing", requested_by=requested_by,
                                               reason=reason, started_at=clock(),
                                               all_versions=all_versions), clock)
    purge.seal_store()
    sealed_at = time.monotonic()
    txids = purge.seal_journal()
    purge.seal_slots(txids)
    purge.delete_all("deleted")
    time.sleep(max(0.0, sealed_at + settle_seconds - time.monotonic()))
    purge.delete_all("swept")  # what a writer committed meanwhile
    if all_versions:
        try:
            purge.delete_versions()
        except UnsupportedOperation as exc:
            purge.fail("all versions", exc)
    purge.record = purge.record.model_copy(update={"state": "erased", "finished_at": clock()})
    purge.save()
    log.info("purge.done", session_hash=shash, objects=len(purge.record.objects),
             bytes=purge.record.bytes_deleted, failures=len(purge.record.failures),
             seconds=round(time.monotonic() - started, 3))
    return purge.record


def read_erasure(store: ObjectStore, shash: str) -> ErasureRecord | None:
    """The audit record of a purged session, or None."""
    try:
        return ErasureRecord.model_validate_json(store.get(keys.erasure_key(shash)))
    except NotFound:
        return None
