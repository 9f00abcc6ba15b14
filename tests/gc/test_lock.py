"""The GC run lock: one holder per scope, expiry for killed runs, fencing for paused ones."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from s3spill import keys
from s3spill.errors import GcLockLost, GcRunLocked, InvalidKey, UnsupportedOperation
from s3spill.gc.lock import GcRunLock, LockRecord, scope_name
from s3spill.store.base import ObjectStore
from s3spill.testing import FaultyStore


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def lock(store: ObjectStore, run_id: str, clock: Clock, **kw: object) -> GcRunLock:
    return GcRunLock(store, "all", run_id, ttl=timedelta(minutes=10), skew=timedelta(seconds=60),
                     clock=clock, poll=0.01, **kw)  # type: ignore[arg-type]


def test_a_second_run_is_refused_while_the_first_holds_the_scope(store: ObjectStore) -> None:
    """The second acquire raises GcRunLocked naming the holder; after release it succeeds."""
    clock = Clock()
    first = lock(store, "run-1", clock)
    first.acquire()
    with pytest.raises(GcRunLocked, match="run-1"):
        lock(store, "run-2", clock).acquire()
    first.release()
    second = lock(store, "run-2", clock)
    assert second.acquire().run_id == "run-2"
    second.release()
    assert [i.key for i in store.list(keys.GC_LOCKS + "/")] == []


def test_an_expired_lock_of_a_killed_run_is_taken_over_with_a_higher_fence(store: ObjectStore) -> None:
    """A run that never released (killed) blocks until its expiry plus skew, then is taken over."""
    clock = Clock()
    dead = lock(store, "killed", clock)
    assert dead.acquire().fence == 1
    clock.now += timedelta(minutes=10, seconds=30)  # expired, but within the skew allowance
    with pytest.raises(GcRunLocked):
        lock(store, "next", clock).acquire()
    clock.now += timedelta(seconds=31)
    taker = lock(store, "next", clock)
    record = taker.acquire()
    assert (record.run_id, record.fence) == ("next", 2)
    stored = LockRecord.model_validate_json(store.get(keys.gc_lock_key("all")))
    assert stored == record


def test_a_paused_holder_loses_its_lock_and_must_stop(store: ObjectStore) -> None:
    """After a takeover the old holder cannot renew (GcLockLost), and its release spares the new lock."""
    clock = Clock()
    paused = lock(store, "paused", clock)
    paused.acquire()
    clock.now += timedelta(minutes=12)
    taker = lock(store, "taker", clock)
    taker.acquire()
    with pytest.raises(GcLockLost):
        paused.renew()
    paused.release()
    assert LockRecord.model_validate_json(store.get(keys.gc_lock_key("all"))).run_id == "taker"
    taker.renew_if_due()  # fresh: no write needed, still held
    clock.now += timedelta(minutes=5)
    assert taker.renew().expires_at == clock.now + timedelta(minutes=10)


def test_waiting_acquires_once_the_holder_releases(store: ObjectStore) -> None:
    """With wait > 0 the second run polls and gets the lock when the first one releases it."""
    clock = Clock()
    first = lock(store, "first", clock)
    first.acquire()
    timer = threading.Timer(0.2, first.release)
    timer.start()
    try:
        assert lock(store, "second", clock, wait=5.0).acquire().run_id == "second"
    finally:
        timer.cancel()


def test_racing_runs_get_exactly_one_lock(race_store: ObjectStore) -> None:
    """Eight runs start at once on an atomic store: one holds the lock, seven are refused."""
    clock = Clock()
    barrier = threading.Barrier(8)
    outcomes: dict[int, str] = {}

    def run(n: int) -> None:
        barrier.wait()
        try:
            lock(race_store, f"run-{n}", clock).acquire()
            outcomes[n] = "held"
        except GcRunLocked:
            outcomes[n] = "refused"

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(outcomes.values()) == ["held"] + ["refused"] * 7


def test_scopes_are_named_from_trusted_parts_only() -> None:
    """A scope is all, a session hash or a shard; anything else is refused as a key."""
    shash = keys.session_hash("s")
    assert scope_name() == "all"
    assert scope_name(session_hash=shash) == f"session-{shash}"
    assert scope_name(shard=(2, 8)) == "shard-2-of-8"
    assert keys.parse_key(keys.gc_lock_key("all")).kind == "gc_lock"
    with pytest.raises(InvalidKey):
        keys.gc_lock_key("../x")


class RefusesConditionalDelete(FaultyStore):
    """A real store that answers DeleteObject with If-Match as LocalStack does (501)."""

    def delete_if_match(self, key: str, etag: str) -> None:
        raise UnsupportedOperation("501 NotImplemented: If-Match on DeleteObject", key=key)


def test_release_on_a_store_refusing_conditional_deletes_frees_the_scope(store: ObjectStore) -> None:
    """The lock is rewritten as expired by CAS, so the next run takes it at once (fence + 1)."""
    clock = Clock()
    refusing = RefusesConditionalDelete(store)
    first = lock(refusing, "first", clock)
    first.acquire()
    first.release()
    record = lock(refusing, "next", clock).acquire()
    assert (record.run_id, record.fence) == ("next", 2)
