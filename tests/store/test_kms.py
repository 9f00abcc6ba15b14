"""A tenant's own KMS key: every object the S3 store creates names it (small and multipart)."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest

from s3spill.store import open_store
from s3spill.store.s3.store import S3Store
from tests.conftest import TEST_BUCKET, TEST_CONFIG

MiB = 1024 * 1024


@pytest.fixture
def tenant_key() -> Iterator[str]:
    from moto import mock_aws

    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=TEST_BUCKET)
        yield boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["Arn"]


def _sse(store: S3Store, key: str) -> tuple[str | None, str | None]:
    head = store.client.head_object(Bucket=TEST_BUCKET, Key=store.full_key(key))
    return head.get("ServerSideEncryption"), head.get("SSEKMSKeyId")


def test_objects_are_written_under_the_configured_key(tenant_key: str) -> None:
    """Single PUT and multipart upload both carry SSE-KMS with the tenant's key."""
    config = TEST_CONFIG.model_copy(update={"sse_kms_key_id": tenant_key})
    store = S3Store(TEST_BUCKET, "tenants/acme", config=config)
    store.put_if_absent("v1/small", b"x" * 100)
    store.put_if_absent("v1/large", iter([b"y" * MiB] * 7))  # over the multipart threshold
    assert _sse(store, "v1/small") == ("aws:kms", tenant_key)
    assert _sse(store, "v1/large") == ("aws:kms", tenant_key)
    plain = S3Store(TEST_BUCKET, "shared", config=TEST_CONFIG)
    plain.put_if_absent("v1/small", b"x")
    assert _sse(plain, "v1/small")[1] is None


def test_open_store_takes_the_key_from_the_environment(tenant_key: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``S3SPILL_KMS_KEY_ID`` is how the CLI, ``s3spill run`` and the MCP server get the key."""
    monkeypatch.setenv("S3SPILL_KMS_KEY_ID", tenant_key)
    store = open_store(f"s3://{TEST_BUCKET}/tenants/acme")
    assert isinstance(store, S3Store) and store.config.sse_kms_key_id == tenant_key
    store.put_if_absent("v1/obj", b"z")
    assert _sse(store, "v1/obj") == ("aws:kms", tenant_key)
