"""The doctor leaves nothing behind even where a cleanup call is unsupported."""

from __future__ import annotations

from s3spill.store.probes import probe_capabilities
from s3spill.store.s3.store import S3Store
from s3spill.testing import inject_http_errors
from tests.conftest import TEST_BUCKET


def test_no_scratch_objects_left_without_list_object_versions(server_store: S3Store) -> None:
    """A store answering 501 to ListObjectVersions still loses every scratch object (via ListObjectsV2)."""
    faults = inject_http_errors(server_store.client, "ListObjectVersions", status=501,
                                code="NotImplemented", times=1000)
    probe_capabilities(server_store)
    assert faults.fired >= 1
    listed = server_store.client.list_objects_v2(Bucket=TEST_BUCKET, Prefix=server_store.prefix)
    assert listed.get("KeyCount", 0) == 0
    uploads = server_store.client.list_multipart_uploads(Bucket=TEST_BUCKET, Prefix=server_store.prefix)
    assert not uploads.get("Uploads")
