"""Quotas per session and per store prefix: counted without a listing, degrading honestly."""

from __future__ import annotations

from pathlib import Path

from s3spill import keys
from s3spill.fleet.quota import Quota, UsageCounter
from s3spill.gc.metered_store import MeteredStore
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.store.s3.store import S3Store

BIG = ("".join(f"line {i}: some build output that is long enough to spill\n" for i in range(2000)))


def _spill_all(store: ObjectStore, session: str, quota: Quota, n: int) -> list[object]:
    with Spiller(store, session, quota=quota, journal=None) as spiller:
        results = []
        for _ in range(n):
            results.append(spiller.externalize(BIG, "bash"))
            spiller.close()  # the counters are updated on the upload thread: let it finish
        return results


def test_a_session_over_its_quota_degrades_honestly(tmp_path: Path) -> None:
    """Past the byte quota: bounded preview, "not saved: quota reached", no pointer, no exception."""
    store = LocalStore(tmp_path)
    size = len(BIG.encode())
    results = _spill_all(store, "s", Quota(session_bytes=2 * size), 4)
    assert [r.spilled for r in results] == [True, True, False, False]  # type: ignore[attr-defined]
    refused = results[2]
    assert refused.mode in ("degraded", "degraded_hard_cap")  # type: ignore[attr-defined]
    text = refused.context_text  # type: ignore[attr-defined]
    assert "could NOT be saved (quota reached (this session has stored" in text
    assert f"{2 * size:,} of its {2 * size:,} bytes" in text and "artifact:" not in text
    assert text.startswith(BIG[:1000]) and refused.total_bytes == size  # type: ignore[attr-defined]
    usage, _ = UsageCounter(store, keys.session_usage_key(keys.session_hash("s"))).read()
    assert (usage.bytes, usage.objects) == (2 * size, 4)
    other = _spill_all(store, "another", Quota(session_bytes=2 * size), 1)
    assert other[0].spilled  # type: ignore[attr-defined]


def test_the_object_quota_counts_body_and_index(tmp_path: Path) -> None:
    """Two objects per spill: a quota of four objects lets two spills through."""
    results = _spill_all(LocalStore(tmp_path), "s", Quota(session_objects=4), 3)
    assert [r.spilled for r in results] == [True, True, False]  # type: ignore[attr-defined]
    assert "of its 4 objects" in results[2].context_text  # type: ignore[attr-defined]


def test_the_prefix_quota_spans_sessions_and_no_spill_lists_the_store(moto_store: S3Store) -> None:
    """The store-wide total comes from sharded counters; the spill path never lists."""
    metered = MeteredStore(moto_store)
    size = len(BIG.encode())
    quota = Quota(prefix_bytes=3 * size, prefix_shards=4, refresh_seconds=0.001)
    first = _spill_all(metered, "a", quota, 2)
    second = _spill_all(metered, "b", quota, 2)
    assert [r.spilled for r in first + second] == [True, True, True, False]  # type: ignore[attr-defined]
    assert "the store prefix has stored" in second[1].context_text  # type: ignore[attr-defined]
    assert metered.requests["put_if_absent"] > 0 and metered.requests["list"] == 0
    shards = [UsageCounter(moto_store, keys.prefix_usage_key(k)).read()[0] for k in range(4)]
    assert sum(s.bytes for s in shards) == 3 * size and sum(s.objects for s in shards) == 6


def test_concurrent_adders_never_lose_or_double_an_increment(tmp_path: Path) -> None:
    """Compare-and-swap with write ids: eight threads, fifty adds each, exact total.

    On the local store, whose conditional writes are atomic (moto checks them non-atomically).
    """
    import threading

    counter = UsageCounter(LocalStore(tmp_path), keys.prefix_usage_key(0), attempts=400)

    def work() -> None:
        for _ in range(50):
            counter.add(10, 1)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    usage, _ = counter.read()
    assert (usage.bytes, usage.objects) == (4000, 400)
