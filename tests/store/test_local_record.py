"""The local store's listing record: listings and conditional deletes read it instead of the
trailer, and objects without one (older stores, filesystems without user attributes) work as before."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from s3spill.errors import PreconditionFailed
from s3spill.store import local_record
from s3spill.store.commit import COMMIT_SIDECAR, META_COMMIT
from s3spill.store.local import LocalStore


def _strip_records(store: LocalStore) -> int:
    """Make every object what the version before listing records wrote: the same file, no attribute."""
    stripped = 0
    for path in (store.root / "objects").rglob("*"):
        if path.is_file():
            os.removexattr(path, local_record.XATTR)
            stripped += 1
    return stripped


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    store = LocalStore(tmp_path / "store")
    try:
        os.setxattr(store.root, "user.s3spill-probe", b"1")
    except OSError as exc:  # pragma: no cover - depends on the test machine's filesystem
        # Not a skip: without user attributes the record these tests are about is never written,
        # and a green run would claim a speed-up the machine does not have.
        pytest.fail(f"these tests need user extended attributes on $TMPDIR ({tmp_path}: {exc}); "
                    "point TMPDIR at a filesystem that has them (ext4, xfs, btrfs, tmpfs >= 6.6)")
    return store


def test_a_listing_reads_the_record_without_opening_the_object(store: LocalStore,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Key, size, ETag, time and the commit marker come from the record; the file is not opened."""
    put = store.put_if_absent("a/body", b"x" * 100, metadata={META_COMMIT: COMMIT_SIDECAR})
    store.put_if_absent("a/plain", b"y")
    head = store.head("a/body")
    monkeypatch.setattr(store, "_open", lambda *a: pytest.fail("a listing opened an object"))
    body, plain = store.list("a/")
    assert (body.key, body.size, body.etag, body.last_modified) == (
        "a/body", 100, put.etag, head.last_modified)
    assert body.metadata == {META_COMMIT: COMMIT_SIDECAR} and body.sha256 is None
    assert plain.metadata == {} and plain.sha256 is None


def test_a_store_written_before_records_lists_replaces_and_deletes_as_before(store: LocalStore) -> None:
    """Objects without a record (the previous on-disk format) are read from their trailers."""
    first = store.put_if_absent("k/1", b"one")
    second = store.put_if_absent("k/2", b"two", metadata={META_COMMIT: COMMIT_SIDECAR})
    assert _strip_records(store) == 2
    listed = {i.key: i for i in store.list("k/")}
    assert listed["k/1"].etag == first.etag and listed["k/2"].etag == second.etag
    assert listed["k/2"].metadata[META_COMMIT] == COMMIT_SIDECAR  # the trailer's metadata, as before
    with pytest.raises(PreconditionFailed):
        store.delete_if_match("k/1", second.etag)
    replaced = store.put_if_match("k/1", b"uno", first.etag)
    store.delete_if_match("k/2", second.etag)
    assert [(i.key, i.etag) for i in store.list("k/")] == [("k/1", replaced.etag)]


def test_an_object_replaced_by_an_older_writer_is_judged_by_its_new_trailer(store: LocalStore) -> None:
    """A record belongs to one file: a replacement without one never inherits the old ETag."""
    old = store.put_if_absent("k", b"v1")
    replaced = store.put_if_match("k", b"v2", old.etag)
    os.removexattr(store.root / "objects" / "k", local_record.XATTR)
    assert [i.etag for i in store.list()] == [replaced.etag]
    with pytest.raises(PreconditionFailed):
        store.delete_if_match("k", old.etag)
    with pytest.raises(PreconditionFailed):
        store.put_if_match("k", b"v3", old.etag)
    store.delete_if_match("k", replaced.etag)


def test_a_record_that_no_longer_describes_its_file_is_ignored(store: LocalStore) -> None:
    """A file changed in place (size or mtime differ from the record's) is read from its trailer."""
    put = store.put_if_absent("k", b"abc")
    path = store.root / "objects" / "k"
    assert local_record.read(path, "k") is not None
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert local_record.read(path, "k") is None
    assert [i.etag for i in store.list()] == [put.etag]


def test_a_filesystem_without_user_attributes_keeps_working(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """setxattr refused (ENOTSUP): no record is written, and everything reads the trailers."""
    calls: list[int] = []

    def refuse(*args: object, **kwargs: object) -> None:
        calls.append(1)
        raise OSError(errno.ENOTSUP, "Operation not supported")

    monkeypatch.setattr(os, "setxattr", refuse)
    store = LocalStore(tmp_path / "store")
    first = store.put_if_absent("k/1", b"one")
    store.put_if_absent("k/2", b"two")
    assert calls == [1]  # refused once, then not asked again
    assert next(i.etag for i in store.list("k/")) == first.etag
    with pytest.raises(PreconditionFailed):
        store.delete_if_match("k/1", '"0"')
    store.delete_if_match("k/1", first.etag)
    assert [i.key for i in store.list()] == ["k/2"]


def test_a_record_round_trips_and_a_foreign_one_is_refused() -> None:
    """encode/decode keep every listed field; a record of another version or size decodes to None."""
    trailer: dict[str, object] = {"etag": '"' + "ab" * 16 + '"', "size": 7, "sha256": "0" * 64,
                                  "last_modified": "2026-01-02T03:04:05.678901+00:00",
                                  "metadata": {"s3spill-put-id": "p", "s3spill-sha256": "0" * 64, "x": "y"}}
    file = os.stat(__file__)
    value = local_record.encode(trailer, file)
    assert value is not None
    info = local_record.decode("k", value, file)
    assert info is not None
    assert (info.size, info.etag, info.last_modified.isoformat(), info.metadata) == (
        7, trailer["etag"], trailer["last_modified"], {"x": "y"})
    assert local_record.decode("k", b"\x20" + value[1:], file) is None  # another version
    assert local_record.decode("k", value[:-1], file) is None
    assert local_record.encode({**trailer, "etag": "not-hex"}, file) is None
