"""The store conformance and race suites against an S3 endpoint we did not write.

Set ``S3SPILL_CONFORMANCE_ENDPOINT`` (with credentials and region in the standard AWS
environment) and the ``store`` fixture, and the S3 race tests, gain one more backend,
``endpoint``, marked ``endpoint``: ``pytest -m endpoint -p tests.store.conformance_report``
runs just those (``scripts/conformance.sh`` does it for LocalStack, s3rver and moto).
Unset, nothing is added, so the default run neither grows nor reports skips.

Each endpoint test gets a fresh bucket, emptied (versions, delete markers and pending
uploads too) and removed afterwards: the hostile-key test lists the whole bucket to prove
that nothing escaped the prefix, so a bucket shared between tests would prove nothing.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from s3spill.config import TransferConfig
from s3spill.store.s3.store import S3Store

ENDPOINT = os.environ.get("S3SPILL_CONFORMANCE_ENDPOINT", "")
#: The extra backend, present only when an endpoint is configured.
ENDPOINT_PARAMS = [pytest.param("endpoint", marks=pytest.mark.endpoint)] if ENDPOINT else []


def endpoint_env() -> dict[str, str]:
    """What a child process needs to reach the endpoint (credentials come from os.environ)."""
    return {"AWS_ENDPOINT_URL": ENDPOINT}


def create_bucket(client: Any, name: str) -> None:
    region = client.meta.region_name
    if region and region != "us-east-1":
        client.create_bucket(Bucket=name,
                             CreateBucketConfiguration={"LocationConstraint": region})
    else:
        client.create_bucket(Bucket=name)


def remove_bucket(client: Any, name: str) -> None:
    """Best effort: a server that lacks an API here must not turn a result into an error."""
    with contextlib.suppress(Exception):
        for page in client.get_paginator("list_multipart_uploads").paginate(Bucket=name):
            for item in page.get("Uploads", []):
                client.abort_multipart_upload(Bucket=name, Key=item["Key"],
                                              UploadId=item["UploadId"])
    with contextlib.suppress(Exception):
        for page in client.get_paginator("list_object_versions").paginate(Bucket=name):
            for item in page.get("Versions", []) + page.get("DeleteMarkers", []):
                client.delete_object(Bucket=name, Key=item["Key"], VersionId=item["VersionId"])
    with contextlib.suppress(Exception):
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=name):
            for item in page.get("Contents", []):
                client.delete_object(Bucket=name, Key=item["Key"])
    with contextlib.suppress(Exception):
        client.delete_bucket(Bucket=name)


@contextlib.contextmanager
def endpoint_store(config: TransferConfig) -> Iterator[S3Store]:
    """An S3Store on the endpoint, under a prefix of a fresh bucket removed afterwards."""
    bucket = f"s3spill-conf-{uuid.uuid4().hex[:16]}"
    store = S3Store(bucket, "pfx", config=config, endpoint_url=ENDPOINT)
    create_bucket(store.client, bucket)
    try:
        yield store
    finally:
        remove_bucket(store.client, bucket)
        store.close()
