"""Smoke tests of the conditional semantics every backend must share."""

import pytest

from s3spill.errors import AlreadyExists, NotFound, PreconditionFailed
from s3spill.store import ObjectStore


def test_create_once_then_cas_then_conditional_delete(store: ObjectStore) -> None:
    """Create-if-absent wins once; CAS and delete need the current ETag."""
    first = store.put_if_absent("a/obj", b"one")
    with pytest.raises(AlreadyExists):
        store.put_if_absent("a/obj", b"two")
    assert store.get("a/obj") == b"one"
    second = store.put_if_match("a/obj", b"three", first.etag)
    with pytest.raises(PreconditionFailed):
        store.put_if_match("a/obj", b"stale", first.etag)
    with pytest.raises(PreconditionFailed):
        store.delete_if_match("a/obj", first.etag)
    assert store.get("a/obj") == b"three"
    assert store.get("a/obj", (1, 3)) == b"hr"
    store.delete_if_match("a/obj", second.etag)
    with pytest.raises(NotFound):
        store.head("a/obj")
    with pytest.raises(PreconditionFailed):
        store.put_if_match("a/obj", b"x", second.etag)
