"""A run lock in the store: one GC run per scope at a time, with expiry and fencing.

Why in the store and not in Kubernetes: ``concurrencyPolicy: Forbid`` covers one
CronJob's own schedule, not ``kubectl create job --from=cronjob/...`` nor two clusters
sharing a bucket. Two overlapping applies are *safe* (every deletion is fenced in the
journal and conditional), but they race each other's condemnations, double the
requests and both exit with "races"; an operator wants the second one to wait or to
say clearly that another run is in progress.

The lock is one small object per scope, created with ``put_if_absent`` and renewed with
``put_if_match`` on its ETag, so exactly one holder can renew it. It carries an expiry,
so a run that was killed (SIGKILL, node loss) does not block the next one forever: a
later run takes an expired lock over with ``put_if_match`` and a higher ``fence``. The
holder renews before each batch of deletions; a failed renewal (someone took an expired
lock over) is :class:`GcLockLost` and the run stops — the fencing token that keeps a
paused holder from acting after its lease ran out. Release is a conditional delete;
if it fails the lock simply expires.

Clock skew between runners is absorbed by ``skew``: a lock is taken over only when it
expired more than ``skew`` ago by the taker's clock.
"""

from __future__ import annotations

import secrets
import socket
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Literal

from pydantic import Field

from s3spill import keys
from s3spill.errors import (
    AlreadyExists,
    GcLockLost,
    GcRunLocked,
    NotFound,
    PreconditionFailed,
    UnsupportedOperation,
)
from s3spill.gc.models import CleanupScope
from s3spill.log import get_logger
from s3spill.models import Record, utcnow
from s3spill.store.base import ObjectStore

__all__ = ["GcRunLock", "LockRecord", "scope_name", "scope_of"]

log = get_logger("s3spill.gc.lock")


class LockRecord(Record):
    """The lock object's body: who holds the scope, until when, under which fence."""

    kind: Literal["gc_run_lock"] = "gc_run_lock"
    scope: str
    run_id: str
    holder: str = Field(max_length=200)
    fence: int = Field(ge=1)
    acquired_at: datetime
    expires_at: datetime


class GcRunLock:
    """Hold the run lock of one GC scope; use as a context manager around plan + apply."""

    def __init__(self, store: ObjectStore, scope: str, run_id: str, *, ttl: timedelta = timedelta(minutes=10),
                 skew: timedelta = timedelta(seconds=60), wait: float = 0.0, poll: float = 5.0,
                 clock: Callable[[], datetime] = utcnow, holder: str | None = None) -> None:
        self.store = store
        self.scope = scope
        self.run_id = run_id
        self.key = keys.gc_lock_key(scope)
        self.ttl = ttl
        self.skew = skew
        self.wait = wait
        self.poll = poll
        self.clock = clock
        self.holder = (holder or f"{socket.gethostname()}:{secrets.token_hex(3)}")[:200]
        self.record: LockRecord | None = None
        self._etag: str | None = None

    @classmethod
    def for_scope(cls, store: ObjectStore, scope: CleanupScope, run_id: str, *,
                  wait: float = 0.0) -> GcRunLock:
        """The lock of a plan's scope, polling about ten times while it waits (at most every 5 s)."""
        return cls(store, scope_of(scope), run_id, wait=wait, poll=min(5.0, max(0.2, wait / 10)))

    # -- acquire / renew / release ---------------------------------------------------

    def acquire(self) -> LockRecord:
        """Take the lock, waiting up to ``wait`` seconds; :class:`GcRunLocked` if still held."""
        deadline = time.monotonic() + self.wait
        while True:
            held = self._try_acquire()
            if held is None:
                assert self.record is not None
                log.info("gc.lock.acquired", scope=self.scope, run_id=self.run_id, fence=self.record.fence)
                return self.record
            if time.monotonic() + self.poll > deadline:
                raise GcRunLocked(
                    f"another GC run holds scope {self.scope!r}: run {held.run_id} on {held.holder}, "
                    f"until {held.expires_at.isoformat()} (fence {held.fence})")
            log.info("gc.lock.waiting", scope=self.scope, holder=held.holder, run_id=held.run_id,
                     expires_at=held.expires_at.isoformat())
            time.sleep(self.poll)

    def _try_acquire(self) -> LockRecord | None:
        """None when acquired; otherwise the record of the live holder."""
        now = self.clock()
        mine = self._record(fence=1, now=now)
        try:
            put = self.store.put_if_absent(self.key, mine.model_dump_json().encode(),
                                           content_type="application/json")
        except AlreadyExists:
            pass
        else:
            self.record, self._etag = mine, put.etag
            return None
        try:
            current, etag = self._read()
        except NotFound:
            return self._try_acquire()  # released between our create and our read
        if now <= current.expires_at + self.skew:
            return current
        takeover = self._record(fence=current.fence + 1, now=now)
        try:
            put = self.store.put_if_match(self.key, takeover.model_dump_json().encode(), etag,
                                          content_type="application/json")
        except (PreconditionFailed, NotFound):
            return self._try_acquire()  # someone else moved first: look again
        log.warning("gc.lock.taken_over", scope=self.scope, previous_run=current.run_id,
                    previous_holder=current.holder, expired_at=current.expires_at.isoformat(),
                    fence=takeover.fence)
        self.record, self._etag = takeover, put.etag
        return None

    def renew(self) -> LockRecord:
        """Extend the lease; :class:`GcLockLost` if another run took it (stop deleting then)."""
        if self.record is None or self._etag is None:
            raise GcLockLost(f"the GC lock of scope {self.scope!r} is not held")
        renewed = self.record.model_copy(update={"expires_at": self.clock() + self.ttl})
        try:
            put = self.store.put_if_match(self.key, renewed.model_dump_json().encode(), self._etag,
                                          content_type="application/json")
        except (PreconditionFailed, NotFound) as exc:
            self.record = self._etag = None
            raise GcLockLost(f"the GC lock of scope {self.scope!r} was taken over; this run stops") from exc
        self.record, self._etag = renewed, put.etag
        return renewed

    def renew_if_due(self) -> None:
        """Renew once a third of the lease has passed (cheap to call before every batch)."""
        if self.record is None:
            raise GcLockLost(f"the GC lock of scope {self.scope!r} is not held")
        if self.clock() >= self.record.expires_at - self.ttl * 2 / 3:
            self.renew()

    def release(self) -> None:
        """Delete the lock if it is still ours; otherwise leave it (it expires).

        A store that refuses conditional deletes (LocalStack answers 501) gets the lock
        rewritten as already expired, by compare-and-swap, so the next run takes it over at
        once instead of waiting out the lease.
        """
        record, etag = self.record, self._etag
        self._etag = self.record = None
        if etag is None or record is None:
            return
        try:
            self.store.delete_if_match(self.key, etag)
            return
        except UnsupportedOperation:
            expired = record.model_copy(update={"expires_at": self.clock() - self.skew - self.ttl})
            try:
                self.store.put_if_match(self.key, expired.model_dump_json().encode(), etag,
                                        content_type="application/json")
                return
            except Exception as exc:  # noqa: BLE001 - the lock expires anyway
                error = type(exc).__name__
        except Exception as exc:  # noqa: BLE001 - the lock expires anyway; never mask the run's result
            error = type(exc).__name__
        log.warning("gc.lock.release_failed", scope=self.scope, error=error)

    def __enter__(self) -> GcRunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    # -- helpers ---------------------------------------------------------------------

    def _record(self, *, fence: int, now: datetime) -> LockRecord:
        return LockRecord(scope=self.scope, run_id=self.run_id, holder=self.holder, fence=fence,
                          acquired_at=now, expires_at=now + self.ttl)

    def _read(self) -> tuple[LockRecord, str]:
        info = self.store.head(self.key)
        body = self.store.get(self.key)
        record = LockRecord.model_validate_json(body)
        return record, info.etag


def scope_name(*, session_hash: str | None = None, shard: tuple[int, int] | None = None) -> str:
    """The lock scope of a GC run: one session, one shard, or the whole store."""
    if session_hash is not None:
        return f"session-{keys.check_session_hash(session_hash)}"
    if shard is not None:
        return f"shard-{shard[0]}-of-{shard[1]}"
    return "all"



def scope_of(scope: CleanupScope) -> str:
    """The lock scope of a plan's :class:`CleanupScope` (one session, one shard, or everything)."""
    if scope.session_hash is not None:
        return scope_name(session_hash=scope.session_hash)
    if scope.shard_count > 1:
        return scope_name(shard=(scope.shard_index, scope.shard_count))
    return scope_name()
