"""GC's side of a quota: what it deletes goes back to the counters, once, by compare-and-swap.

Why: a quota that only grows is a write budget, not a limit an operator can trust — a
session that GC cleaned would stay refused. So GC notes the raw size (the artifact's commit
record: the size the spill counted) of each output it *deleted* (not one found already
missing: another run may have credited it) and, once per session and run, adds the sums to
the freed side of the session's counter and of one store-wide shard
(:meth:`~s3spill.fleet.quota.UsageCounter.add`, the same CAS with a write id derived from
the run, so a retried credit is not counted twice). A session with no counter was never
under a quota: nothing is read for it. Crediting fails open (logged): a quota that is too
tight is better than a deletion undone.
"""

from __future__ import annotations

import threading

import orjson

from s3spill import keys
from s3spill.errors import NotFound, StoreError
from s3spill.fleet.quota import OBJECTS_PER_SPILL, UsageCounter
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore
from s3spill.telemetry.metrics import observe_fleet

__all__ = ["QuotaCredit"]

log = get_logger("s3spill.fleet.credit")


class QuotaCredit:
    """One GC run's credits for one session; :meth:`flush` writes them."""

    def __init__(self, store: ObjectStore, shash: str, run_id: str) -> None:
        self.store = store
        self.shash = shash
        self.run_id = run_id
        self.session = UsageCounter(store, keys.session_usage_key(shash))
        self.bytes = 0
        self.objects = 0
        self._wanted: bool | None = None
        self._lock = threading.Lock()

    def wanted(self) -> bool:
        """Does the session keep a counter (was it ever under a quota)? One HEAD, once."""
        if self._wanted is None:
            try:
                self.store.head(self.session.key)
                self._wanted = True
            except NotFound:
                self._wanted = False
            except StoreError as exc:
                log.warning("quota.credit_skipped", session_hash=self.shash, error=type(exc).__name__)
                self._wanted = False
        return self._wanted

    def raw_size(self, name: str) -> int | None:
        """The size the spill counted: from the commit record, read before GC deletes it."""
        if not self.wanted():
            return None
        try:
            record = orjson.loads(self.store.get(keys.index_key(self.shash, name)))
        except (StoreError, orjson.JSONDecodeError):
            return None
        size = record.get("size_bytes") if isinstance(record, dict) else None
        return size if isinstance(size, int) and size >= 0 else None

    def note(self, size: int | None) -> None:
        """One deleted output (its raw size; None: no record to size it by)."""
        if size is None:
            return
        with self._lock:
            self.bytes += size
            self.objects += OBJECTS_PER_SPILL

    def flush(self) -> None:
        """Give the noted bytes and objects back to the session's counter and the store's."""
        if not (self.bytes or self.objects):
            return
        write_id = f"gc-{self.run_id}-{self.shash[:12]}"
        try:
            self.session.add(self.bytes, self.objects, freed=True, write_id=write_id)
            UsageCounter(self.store, keys.prefix_usage_key(0)).add(self.bytes, self.objects, freed=True,
                                                                   write_id=write_id)
            log.info("quota.credited", session_hash=self.shash, bytes=self.bytes, objects=self.objects)
            observe_fleet("credited", "session", self.bytes)
        except Exception as exc:  # noqa: BLE001 - a credit must never undo or fail a deletion
            log.warning("quota.credit_failed", session_hash=self.shash, error=type(exc).__name__)
        self.bytes = self.objects = 0
