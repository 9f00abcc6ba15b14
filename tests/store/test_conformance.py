"""One conformance suite for every ObjectStore backend (local directory, S3 on moto).

The semantics are the contract the journal, the owner and GC are written against, so a
backend that passes here can be swapped in without any caller noticing.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3spill.config import MiB
from s3spill.errors import (
    AlreadyExists,
    InvalidKey,
    NotFound,
    PreconditionFailed,
    UnsupportedOperation,
)
from s3spill.store import ObjectStore
from s3spill.store.base import META_PUT_ID, META_SHA256
from s3spill.store.s3.store import S3Store


def chunks(data: bytes, size: int = 256 * 1024) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def test_create_once(store: ObjectStore) -> None:
    """Only the first put_if_absent of a key wins; the loser changes nothing."""
    first = store.put_if_absent("k/one", b"first")
    with pytest.raises(AlreadyExists):
        store.put_if_absent("k/one", b"second")
    info = store.head("k/one")
    assert store.get("k/one") == b"first"
    assert info.etag == first.etag and info.size == 5


def test_head_reports_sha256_put_id_and_user_metadata(store: ObjectStore) -> None:
    """head returns size, ETag, full-content SHA-256, a put id and the caller's metadata."""
    result = store.put_if_absent("k/meta", b"payload", metadata={"Tool": "bash"})
    info = store.head("k/meta")
    assert info.sha256 == hashlib.sha256(b"payload").hexdigest() == result.sha256
    assert info.metadata["tool"] == "bash"
    assert len(info.metadata[META_PUT_ID]) == 32
    assert info.metadata[META_SHA256] == info.sha256
    assert info.size == result.size == 7 and info.etag == result.etag


def test_stale_put_if_match_fails_and_changes_nothing(store: ObjectStore) -> None:
    """A put_if_match with an old ETag raises PreconditionFailed and leaves the object as it was."""
    first = store.put_if_absent("k/cas", b"v1")
    second = store.put_if_match("k/cas", b"v2", first.etag)
    before = store.head("k/cas")
    with pytest.raises(PreconditionFailed):
        store.put_if_match("k/cas", b"v3", first.etag)
    after = store.head("k/cas")
    assert store.get("k/cas") == b"v2"
    assert after.etag == before.etag == second.etag and after.metadata == before.metadata


def test_stale_delete_if_match_fails_and_changes_nothing(store: ObjectStore) -> None:
    """A delete_if_match with an old ETag raises PreconditionFailed and deletes nothing."""
    first = store.put_if_absent("k/del", b"v1")
    second = store.put_if_match("k/del", b"v2", first.etag)
    with pytest.raises(PreconditionFailed):
        store.delete_if_match("k/del", first.etag)
    assert store.get("k/del") == b"v2"
    store.delete_if_match("k/del", second.etag)
    with pytest.raises(NotFound):
        store.head("k/del")


def test_put_if_match_on_missing_key_is_precondition_failed(store: ObjectStore) -> None:
    """put_if_match on a key that does not exist raises PreconditionFailed and creates nothing."""
    with pytest.raises(PreconditionFailed):
        store.put_if_match("k/missing", b"x", '"0123456789abcdef0123456789abcdef"')
    with pytest.raises(NotFound):
        store.head("k/missing")


def test_missing_objects_are_not_found(store: ObjectStore) -> None:
    """Reading, heading or conditionally deleting a missing key raises NotFound."""
    with pytest.raises(NotFound):
        store.get("k/nothing")
    with pytest.raises(NotFound):
        store.head("k/nothing")
    with pytest.raises(NotFound):
        store.delete_if_match("k/nothing", '"0123456789abcdef0123456789abcdef"')


def test_byte_ranges_are_half_open_and_clamped(store: ObjectStore) -> None:
    """get with a range returns [start, end) and clamps an end past the object's size."""
    store.put_if_absent("k/range", b"0123456789")
    assert store.get("k/range", (2, 5)) == b"234"
    assert store.get("k/range", (8, 100)) == b"89"
    assert store.get("k/range", (4, 4)) == b""
    assert store.get("k/range", (20, 30)) == b""
    assert b"".join(store.iter_chunks("k/range", chunk_size=3)) == b"0123456789"


def test_streamed_multipart_write_round_trips(store: ObjectStore) -> None:
    """A ~12 MiB body given as a one-shot iterator is stored whole, with its full SHA-256."""
    data = os.urandom(12 * MiB + 123)
    result = store.put_if_absent("k/big", chunks(data))
    info = store.head("k/big")
    assert info.size == len(data) == result.size
    assert info.sha256 == hashlib.sha256(data).hexdigest()
    assert store.get("k/big") == data
    assert store.get("k/big", (5 * MiB - 3, 5 * MiB + 3)) == data[5 * MiB - 3 : 5 * MiB + 3]
    with pytest.raises(AlreadyExists):
        store.put_if_absent("k/big", io.BytesIO(data))


def test_large_stale_put_if_match_fails(store: ObjectStore) -> None:
    """A multipart-sized replacement with a stale ETag fails and leaves the object intact."""
    first = store.put_if_absent("k/bigcas", b"small")
    store.put_if_match("k/bigcas", b"newer", first.etag)
    with pytest.raises(PreconditionFailed):
        store.put_if_match("k/bigcas", io.BytesIO(b"x" * (6 * MiB)), first.etag)
    assert store.get("k/bigcas") == b"newer"


def test_list_returns_keys_relative_to_the_root(store: ObjectStore) -> None:
    """list(prefix) yields exactly the keys under prefix, relative to the store's root."""
    for key in ("a/1", "a/2", "ab/3", "b/4"):
        store.put_if_absent(key, key.encode())
    assert sorted(info.key for info in store.list("a/")) == ["a/1", "a/2"]
    assert sorted(info.key for info in store.list("a")) == ["a/1", "a/2", "ab/3"]
    assert len(list(store.list())) == 4
    assert {info.size for info in store.list("b/")} == {3}


def test_list_is_in_key_order_and_list_after_starts_past_a_key(store: ObjectStore) -> None:
    """Both backends list in byte order of the whole key (a file "a0" after "a/x") and
    list_after yields exactly the keys after its bound, a directory's worth skipped or not."""
    keys = ["a-b", "a/x", "a/y/z", "a0", "a1/q", "b", "v1/owner0", "v1/owner/x"]
    for key in keys:
        store.put_if_absent(key, b"k")
    assert [info.key for info in store.list()] == sorted(keys)
    for bound in ["", "a", "a/", "a/x", "a/y", "a/y/z", "a0", "a1", "v1/owner/\U0010ffff", "zz"]:
        expected = [k for k in sorted(keys) if k > bound]
        assert [info.key for info in store.list_after("", bound)] == expected, bound
    assert [info.key for info in store.list_after("a/", "a/x")] == ["a/y/z"]


HOSTILE = st.one_of(
    st.sampled_from(["../x", "../../etc/passwd", "/abs/key", "a/../../b", "a\x00b", "%2e%2e/x",
                     "a/%2e%2e/b", "..", ".", "./a", "a//b", "a/", "x" * 10_000, "é/ü", "🔥",
                     "a\\..\\b", "~/x", "a/.../b", " a", "C:\\x"]),
    st.text(min_size=1, max_size=40),
    st.lists(st.sampled_from(["..", ".", "", "a", "%2e", "b", "/", "\x00", "é"]),
             min_size=1, max_size=6).map("/".join),
)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=HOSTILE)
def test_hostile_keys_never_escape_the_prefix(store: ObjectStore, key: str) -> None:
    """A key built from hostile input lands under the store's root as itself, or is refused."""
    try:
        store.put_if_absent(key, b"x")
        landed = True
    except InvalidKey:
        return
    except (AlreadyExists, UnsupportedOperation):
        # An earlier example took the name; locally, "a" and "a/b" cannot coexist.
        landed = False
    if landed:
        assert key in {info.key for info in store.list()}
    if isinstance(store, S3Store):
        listed = store.client.list_objects_v2(Bucket=store.bucket)
        assert all(obj["Key"].startswith(store.prefix + "/") for obj in listed.get("Contents", []))
    else:
        root = store.root  # type: ignore[attr-defined]
        outside = [p for p in root.parent.rglob("*") if p.is_file() and root not in p.parents]
        assert outside == []


def test_key_under_an_existing_object(store: ObjectStore) -> None:
    """A key below an existing object's key is stored on S3 and refused cleanly by the local store."""
    store.put_if_absent("nest", b"outer")
    try:
        store.put_if_absent("nest/inner", b"inner")
    except UnsupportedOperation:
        assert store.kind == "local"
    else:
        assert store.kind == "s3" and store.get("nest/inner") == b"inner"
    assert store.get("nest") == b"outer"
