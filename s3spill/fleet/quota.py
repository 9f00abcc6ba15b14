"""Quotas: how much one session, and the whole store prefix, may store.

Why counters and not a listing: a fleet spills thousands of times a second, and listing
a prefix to add up sizes would cost more than the spills. Each session keeps one counter
object (``journal/usage.json``: bytes and objects it has stored), and the store keeps a
few sharded counters (``v1/usage/shard-<k>.json``) that every spill adds to; each is
changed only by compare-and-swap, tagged with a write id so an unknown outcome is
resolved by reading it back (never added twice).

The check on the caller's path makes no request: it compares the counters this process
last read (the session's, read once; the store's, summed at most every
``refresh_seconds``) with the limits. The counters are updated after an accepted spill,
on the upload thread, off the turn. So a quota can be overshot by the spills in flight
(and, for the store prefix, by what other processes stored since the last refresh), but
it cannot be overshot for long, and the context side never fails on it: over quota, a
spill degrades to the bounded preview with "not saved: quota reached".

GC gives back what it deletes (:mod:`s3spill.fleet.credit`): the bytes and objects of each
deleted output go to the counters' freed side, by the same compare-and-swap; a quota is
checked against stored minus freed. A purge deletes the session's counter (and leaves the
store's as they are).
"""

from __future__ import annotations

import random
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from s3spill import keys
from s3spill.errors import (
    AlreadyExists,
    ConditionalConflict,
    IntegrityError,
    NotFound,
    PreconditionFailed,
    StoreUnavailable,
)
from s3spill.log import get_logger
from s3spill.models import ArtifactReference, Record, utcnow
from s3spill.store.base import ObjectStore
from s3spill.telemetry.metrics import observe_fleet

__all__ = ["Quota", "QuotaGuard", "QuotaMetrics", "Usage", "UsageCounter", "prefix_usage", "session_usage"]

log = get_logger("s3spill.fleet.quota")

#: Objects one spill stores: the body and its index.
OBJECTS_PER_SPILL = 2
_RECENT_WRITES = 16


class Quota(BaseModel):
    """Limits per session and per store prefix; ``None`` is unlimited."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Bytes of output (before compression) and objects one session may store.
    session_bytes: int | None = Field(default=None, ge=0)
    session_objects: int | None = Field(default=None, ge=0)
    #: The same for everything stored under this store's prefix, all sessions together.
    prefix_bytes: int | None = Field(default=None, ge=0)
    prefix_objects: int | None = Field(default=None, ge=0)
    #: Counter objects the store-wide total is spread over (contention vs. read cost).
    prefix_shards: int = Field(default=8, ge=1, le=256)
    #: Seconds a summed store-wide total is trusted before it is read again.
    refresh_seconds: float = Field(default=30.0, gt=0)

    @property
    def limits_prefix(self) -> bool:
        return self.prefix_bytes is not None or self.prefix_objects is not None

    @property
    def limits_session(self) -> bool:
        return self.session_bytes is not None or self.session_objects is not None


class Usage(Record):
    """One counter object: what was stored, and the ids of the last writes that added to it."""

    kind: Literal["usage_counter"] = "usage_counter"
    bytes: int = Field(default=0, ge=0)
    objects: int = Field(default=0, ge=0)
    #: What GC deleted of it since (s3spill.fleet.credit): counted apart, so every field only
    #: grows and a shard can be credited with more than it was added (the store's total is
    #: spread over shards at random).
    freed_bytes: int = Field(default=0, ge=0)
    freed_objects: int = Field(default=0, ge=0)
    updated_at: datetime | None = None
    recent_writes: tuple[str, ...] = ()

    @property
    def net_bytes(self) -> int:
        """Bytes stored and not yet deleted: what a quota is checked against."""
        return max(0, self.bytes - self.freed_bytes)

    @property
    def net_objects(self) -> int:
        return max(0, self.objects - self.freed_objects)


class UsageCounter:
    """A counter object changed only by compare-and-swap (three outcomes, see module doc)."""

    def __init__(self, store: ObjectStore, key: str, attempts: int = 12) -> None:
        self.store = store
        self.key = key
        self.attempts = attempts

    def read(self) -> tuple[Usage, str | None]:
        try:
            info = self.store.head(self.key)
            body = self.store.get(self.key)
        except NotFound:
            return Usage(), None
        try:
            return Usage.model_validate_json(body), info.etag
        except ValidationError:
            raise IntegrityError(f"usage counter {self.key} does not parse") from None

    def add(self, nbytes: int, nobjects: int, *, freed: bool = False,
            write_id: str | None = None) -> Usage:
        """Add once (to the freed side with ``freed``); a lost race re-reads and re-applies, an
        unknown outcome is read back. A caller that may retry passes its own ``write_id``."""
        write_id = write_id or secrets.token_hex(8)
        for _ in range(self.attempts):
            usage, etag = self.read()
            if write_id in usage.recent_writes:
                return usage  # an earlier attempt with an unknown outcome did land
            grown = ({"freed_bytes": usage.freed_bytes + nbytes,
                      "freed_objects": usage.freed_objects + nobjects} if freed
                     else {"bytes": usage.bytes + nbytes, "objects": usage.objects + nobjects})
            recent = (*usage.recent_writes, write_id)[-_RECENT_WRITES:]
            new = usage.model_copy(update={**grown, "updated_at": utcnow(), "recent_writes": recent})
            body = new.model_dump_json().encode()
            try:
                if etag is None:
                    self.store.put_if_absent(self.key, body, content_type="application/json")
                else:
                    self.store.put_if_match(self.key, body, etag, content_type="application/json")
                return new
            except (AlreadyExists, PreconditionFailed, ConditionalConflict, StoreUnavailable):
                time.sleep(random.uniform(0, 0.05))  # lost (or unknown: the next read tells)
        raise StoreUnavailable(f"usage counter {self.key}: no compare-and-swap won", key=self.key)


def session_usage(store: ObjectStore, shash: str) -> Usage:
    """What one session's counter says it stored (zero for a session that never spilled)."""
    return UsageCounter(store, keys.session_usage_key(shash)).read()[0]


def prefix_usage(store: ObjectStore, shards: int = 8) -> Usage:
    """The store-wide total: the sum of its counter shards (``Quota.prefix_shards``)."""
    parts = [UsageCounter(store, keys.prefix_usage_key(k)).read()[0] for k in range(shards)]
    return Usage(bytes=sum(p.bytes for p in parts), objects=sum(p.objects for p in parts),
                 freed_bytes=sum(p.freed_bytes for p in parts),
                 freed_objects=sum(p.freed_objects for p in parts))


@dataclass
class QuotaMetrics:
    """What the guard did in this process (exported by the harness, logged as events)."""

    spills_recorded: int = 0
    bytes_recorded: int = 0
    refused: int = 0
    refused_by: dict[str, int] = field(default_factory=dict)
    record_failures: int = 0


class QuotaGuard:
    """One session's quota check (no request on the caller's path) and its bookkeeping."""

    def __init__(self, store: ObjectStore, session_hash: str, quota: Quota,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.quota = quota
        self.clock = clock
        self.session = UsageCounter(store, keys.session_usage_key(session_hash))
        self.shards = [UsageCounter(store, keys.prefix_usage_key(k)) for k in range(quota.prefix_shards)]
        self.metrics = QuotaMetrics()
        self._lock = threading.Lock()
        self._session_usage: Usage | None = None
        self._prefix_usage: Usage | None = None
        self._prefix_read_at = -1e18

    # -- reading ---------------------------------------------------------------------

    def _prefix_total(self) -> Usage:
        return prefix_usage(self.shards[0].store, len(self.shards))

    def _load(self) -> None:
        """First use, or a stale store-wide total: read (a failure leaves the last value)."""
        try:
            if self.quota.limits_session and self._session_usage is None:
                usage = self.session.read()[0]
                with self._lock:
                    self._session_usage = usage
            if self.quota.limits_prefix and self.clock() - self._prefix_read_at >= self.quota.refresh_seconds:
                total = self._prefix_total()
                with self._lock:
                    self._prefix_usage, self._prefix_read_at = total, self.clock()
        except Exception as exc:  # noqa: BLE001 - a quota read must never fail a spill
            log.warning("quota.read_failed", error=type(exc).__name__)

    def refusal(self) -> str | None:
        """Why the next spill must not be stored (the notice's reason), or None."""
        if not (self.quota.limits_session or self.quota.limits_prefix):
            return None
        if (self._session_usage is None and self.quota.limits_session) \
                or (self._prefix_usage is None and self.quota.limits_prefix):
            self._load()  # the first spill of this process reads once; later ones never wait
        with self._lock:
            q = self.quota
            checks = (("session", self._session_usage, q.session_bytes, q.session_objects),
                      ("store prefix", self._prefix_usage, q.prefix_bytes, q.prefix_objects))
            for scope, usage, max_bytes, max_objects in checks:
                if usage is None:
                    continue
                if max_bytes is not None and usage.net_bytes >= max_bytes:
                    return self._refuse(scope, f"{usage.net_bytes:,} of its {max_bytes:,} bytes")
                if max_objects is not None and usage.net_objects >= max_objects:
                    return self._refuse(scope, f"{usage.net_objects:,} of its {max_objects:,} objects")
        return None

    def _refuse(self, scope: str, detail: str) -> str:
        self.metrics.refused += 1
        self.metrics.refused_by[scope] = self.metrics.refused_by.get(scope, 0) + 1
        log.warning("spill.quota_reached", scope=scope, detail=detail, refused=self.metrics.refused)
        observe_fleet("quota_refused", scope)
        owner = "this session" if scope == "session" else "the store prefix"
        return f"not saved: quota reached ({owner} has stored {detail})"

    # -- recording (the upload thread) ----------------------------------------------------

    def record(self, ref: ArtifactReference) -> None:
        """Add an accepted spill to the counters; never raises (logged and counted)."""
        try:
            if self.quota.limits_session:
                usage = self.session.add(ref.size_bytes, OBJECTS_PER_SPILL)
                with self._lock:
                    self._session_usage = usage
            if self.quota.limits_prefix:
                random.choice(self.shards).add(ref.size_bytes, OBJECTS_PER_SPILL)
                if self.clock() - self._prefix_read_at >= self.quota.refresh_seconds:
                    self._load()
                else:
                    with self._lock:
                        if self._prefix_usage is not None:  # our own part, at once
                            self._prefix_usage = self._prefix_usage.model_copy(update={
                                "bytes": self._prefix_usage.bytes + ref.size_bytes,
                                "objects": self._prefix_usage.objects + OBJECTS_PER_SPILL})
            self.metrics.spills_recorded += 1
            self.metrics.bytes_recorded += ref.size_bytes
        except Exception as exc:  # noqa: BLE001 - bookkeeping must never fail a spill
            self.metrics.record_failures += 1
            log.warning("quota.record_failed", error=type(exc).__name__)
