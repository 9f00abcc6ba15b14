"""The local store's batched reads and conditional deletes answer exactly as the single calls do."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from s3spill.errors import IntegrityError, NotFound, PreconditionFailed, StoreError
from s3spill.gc.metered_store import MeteredStore
from s3spill.store import local_record
from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore


@pytest.fixture
def local(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "s")


def test_get_many_reads_what_get_reads_and_leaves_out_what_is_absent(local: LocalStore) -> None:
    """Keys in two directories (one missing) and a directory at a key: absent ones are left out."""
    for key in ("a/1", "a/2", "b/x/1"):
        local.put_if_absent(key, key.encode() * 3)
    local.put_if_absent("a/dir/1", b"d")
    got = local.get_many(["a/1", "a/2", "a/3", "b/x/1", "c/1", "a/dir"])
    assert got == {k: local.get(k) for k in ("a/1", "a/2", "b/x/1")}


def test_get_many_checks_each_object_as_get_does(local: LocalStore) -> None:
    """A body changed in place (its trailer's SHA-256 no longer matches) is an IntegrityError."""
    local.put_if_absent("a/1", b"hello world")
    path = local.root / "objects" / "a" / "1"
    raw = bytearray(path.read_bytes())
    raw[0] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(IntegrityError):
        local.get("a/1")
    with pytest.raises(IntegrityError):
        local.get_many(["a/1"])


def test_batches_refuse_symlinks_as_the_single_calls_do(local: LocalStore, tmp_path: Path) -> None:
    """A planted link (as the object or as its directory) is refused, and nothing it points at is deleted."""
    outside = LocalStore(tmp_path / "outside")
    etag = outside.put_if_absent("d/1", b"secret").etag
    os.symlink(outside.root / "objects" / "d", local.root / "objects" / "d")
    with pytest.raises(StoreError, match="symlink"):
        local.get_many(["d/1"])
    with pytest.raises(StoreError, match="symlink"):
        local.delete_many_if_match([("d/1", etag)])
    local.put_if_absent("e/real", b"x")
    os.symlink(outside.root / "objects" / "d" / "1", local.root / "objects" / "e" / "1")
    with pytest.raises(StoreError, match="symlink"):
        local.get_many(["e/1"])
    assert isinstance(local.delete_many_if_match([("e/1", etag)])["e/1"], StoreError)
    assert outside.get("d/1") == b"secret"


def test_delete_many_reports_each_outcome_and_deletes_only_matching_etags(local: LocalStore) -> None:
    """Deleted, ETag mismatch (kept) and missing, each reported for its own key, in one batch."""
    etags = {k: local.put_if_absent(k, k.encode()).etag for k in ("a/1", "a/2", "b/1")}
    out = local.delete_many_if_match([("a/1", etags["a/1"]), ("a/2", etags["a/1"]), ("a/9", "x"),
                                      ("b/1", etags["b/1"]), ("a/1", etags["a/1"])])
    assert out["a/2"] is not None and isinstance(out["a/2"], PreconditionFailed)
    assert isinstance(out["a/9"], NotFound) and isinstance(out["a/1"], NotFound)  # the second delete
    assert out["b/1"] is None
    assert [i.key for i in local.list("")] == ["a/2"]


def test_delete_many_compares_each_item_with_its_own_etag(local: LocalStore) -> None:
    """A key named twice is deleted by whichever item carries its ETag, as one by one would."""
    etag = local.put_if_absent("a/1", b"x").etag
    out = local.delete_many_if_match([("a/1", etag), ("a/1", '"0000"')])
    assert isinstance(out["a/1"], NotFound)  # the second item's outcome: already gone
    etag = local.put_if_absent("a/1", b"x").etag
    assert local.delete_many_if_match([("a/1", '"0000"'), ("a/1", etag)]) == {"a/1": None}
    assert list(local.list("")) == []


def test_delete_many_without_a_listing_record_reads_the_trailer(local: LocalStore) -> None:
    """An object whose record was dropped (a copy without attributes) is still compared on its ETag."""
    etag = local.put_if_absent("a/1", b"x").etag
    local.put_if_absent("a/2", b"y")
    for name in ("1", "2"):
        os.removexattr(local.root / "objects" / "a" / name, local_record.XATTR)
    out = local.delete_many_if_match([("a/1", etag), ("a/2", etag)])
    assert out["a/1"] is None and isinstance(out["a/2"], PreconditionFailed)


def test_delete_many_syncs_each_directory_once(local: LocalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside a deferred block the batch fsyncs each changed directory once, before it returns."""
    etags = {k: local.put_if_absent(k, b"x").etag for k in ("a/1", "a/2", "b/1")}
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    local.delete_many_if_match(list(etags.items()))
    assert len(synced) == 2
    synced.clear()
    etags = {k: local.put_if_absent(k, b"x").etag for k in ("a/1", "a/2")}
    synced.clear()
    with local.deferred_sync():
        local.delete_many_if_match(list(etags.items()))
        assert synced == []
    assert len(synced) == 1


class _OneByOne(MeteredStore):
    def __init__(self, inner: LocalStore) -> None:
        super().__init__(inner)
        self.single: list[str] = []

    def delete_if_match(self, key: str, etag: str) -> None:
        self.single.append(key)
        super().delete_if_match(key, etag)


def test_the_metering_wrapper_counts_per_key_and_respects_a_subclass(local: LocalStore) -> None:
    """Batches count one request per key; a wrapper that intercepts single deletes sees each one."""
    etags = {k: local.put_if_absent(k, b"x").etag for k in ("a/1", "a/2")}
    metered = MeteredStore(local)
    assert metered.get_many(["a/1", "a/2", "a/3"]) == {"a/1": b"x", "a/2": b"x"}
    assert metered.requests["get"] == 3
    intercepting = _OneByOne(local)
    out = intercepting.delete_many_if_match(list(etags.items()))
    assert out == {"a/1": None, "a/2": None} and intercepting.single == ["a/1", "a/2"]
    assert intercepting.requests["delete_if_match"] == 2


def test_listed_shows_what_a_listing_shows(store: ObjectStore) -> None:
    """On both backends: the listing view of each key that exists, as list() gives it; others left out."""
    for key in ("p/a/1", "p/a/2", "p/a/2.idx", "p/b/1"):
        store.put_if_absent(key, key.encode())
    listing = {i.key: i for i in store.list("p/")}
    assert store.listed(["p/a/1", "p/a/2", "p/a/3", "p/b/1"]) == {
        k: listing[k] for k in ("p/a/1", "p/a/2", "p/b/1")}
    assert store.listed([]) == {}
    metered = MeteredStore(store)
    assert set(metered.listed(["p/a/1", "p/b/1"])) == {"p/a/1", "p/b/1"}
    assert metered.requests["list"] == 1
