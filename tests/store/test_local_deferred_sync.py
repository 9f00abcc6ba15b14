"""The local store's deferred directory sync: deletes in a block fsync each directory once,
when the block ends, and GC apply uses one such block per batch."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from s3spill import keys
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.store.local import LocalStore
from tests.gc.aged_artifacts import later, put_artifact


def recording(store: LocalStore, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    synced: list[Path] = []
    real = store._fsync_dir

    def fsync_dir(path: Path) -> None:
        synced.append(path)
        real(path)

    monkeypatch.setattr(store, "_fsync_dir", fsync_dir)
    return synced


def test_deletes_in_a_block_sync_each_directory_once_at_the_end(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Three deletes in one directory cost one directory fsync, made when the block exits."""
    store = LocalStore(tmp_path / "s")
    etags = {k: store.put_if_absent(k, b"x").etag for k in ("a/1", "a/2", "a/3", "b/1")}
    synced = recording(store, monkeypatch)
    with store.deferred_sync():
        for key, etag in etags.items():
            store.delete_if_match(key, etag)
        with store.deferred_sync():  # nested blocks defer to the outermost one
            pass
        assert synced == []
    assert sorted(p.name for p in synced) == ["a", "b"]
    assert list(store.list("")) == []


def test_deletes_outside_a_block_sync_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a block (or in another thread than the block's) every delete syncs its directory."""
    store = LocalStore(tmp_path / "s")
    first = store.put_if_absent("a/1", b"x").etag
    second = store.put_if_absent("a/2", b"x").etag
    synced = recording(store, monkeypatch)
    store.delete_if_match("a/1", first)
    assert len(synced) == 1
    with store.deferred_sync():
        worker = threading.Thread(target=store.delete_if_match, args=("a/2", second))
        worker.start()
        worker.join()
        assert len(synced) == 2
    assert len(synced) == 2


def test_gc_apply_syncs_each_directory_once_per_batch(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """GC apply deleting a batch of artifacts (and their sidecars) fsyncs each directory once
    for the batch, and the deletions are durable before the journal records them DELETED."""
    store = LocalStore(tmp_path / "s")
    names = [put_artifact(store, "s1", f"orphan {i}\n".encode()) for i in range(8)]
    plan = plan_cleanup(store, CleanupScope(), CleanupPolicy(dry_run=False, max_deletions=None),
                        out=tmp_path / "p", now=later())
    events: list[str] = []
    real_sync, real_put = store._fsync_dir, store.put_if_match
    manifest = keys.manifest_key(keys.session_hash("s1"))

    def fsync_dir(path: Path) -> None:
        events.append(f"sync {path.name}")
        real_sync(path)

    def put_if_match(key: str, body: Any, etag: str, **kw: Any) -> Any:
        if key == manifest and b'"event":"DELETED"' in body:
            events.append("DELETED recorded")
        return real_put(key, body, etag, **kw)

    monkeypatch.setattr(store, "_fsync_dir", fsync_dir)
    monkeypatch.setattr(store, "put_if_match", put_if_match)
    report = apply_cleanup(store, plan, now=later)
    assert report.counts["deleted"] == len(names)
    recorded = events.index("DELETED recorded")
    # artifacts and sidecars share a directory: one fsync for the 16 deletes, before DELETED
    assert [e for e in events[:recorded] if e == "sync artifacts"] == ["sync artifacts"]
    assert "sync artifacts" not in events[recorded:]
