"""S3Store.list_after yields only keys past its bound, whatever the server does with StartAfter."""

from __future__ import annotations

from typing import Any

from s3spill.store.s3.store import S3Store

KEYS = ["a-b", "a/x", "a/y/z", "a0", "v1/owner/x", "v1/owner/y", "v1/owner0", "zz"]


def test_keys_before_the_bound_are_dropped_when_the_server_ignores_start_after(
        moto_store: S3Store) -> None:
    """A server that answers from the prefix's start (as LocalStack 2026.3 does for a
    non-ASCII StartAfter) gives no key at or before the bound: the filter is client-side."""
    for key in KEYS:
        moto_store.put_if_absent(key, b"k")

    def ignore_start_after(params: dict[str, Any], **_: Any) -> None:
        params.pop("StartAfter", None)  # the real server then lists from the prefix's start

    moto_store.client.meta.events.register("provide-client-params.s3.ListObjectsV2",
                                           ignore_start_after)
    for bound in ["a/x", "v1/owner/\U0010ffff", "v1/owner/é", "zz"]:
        assert [i.key for i in moto_store.list_after("", bound)] == [k for k in KEYS if k > bound]
    assert [i.key for i in moto_store.list_after("v1/", "v1/owner/x")] == ["v1/owner/y", "v1/owner0"]
