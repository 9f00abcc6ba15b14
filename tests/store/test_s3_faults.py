"""The S3 backend under faults, over real HTTP against the serialized moto server.

Faults are injected with botocore event hooks on the store's own client, so the store
really talks to moto and only the transport misbehaves.
"""

from __future__ import annotations

import io
import os
import time

import pytest

from s3spill.config import MiB, TransferConfig
from s3spill.errors import AlreadyExists, PreconditionFailed, StoreUnavailable
from s3spill.store.s3.store import S3Store
from s3spill.testing import (
    EmbeddedS3,
    break_response_body,
    drop_response_after_send,
    free_port,
    inject_http_errors,
    record_operations,
)
from tests.conftest import TEST_CONFIG, VERSIONED_BUCKET


def test_lost_response_after_create_is_success(server_store: S3Store) -> None:
    """A create that landed but whose answer was lost is reported as success, not AlreadyExists."""
    faults = drop_response_after_send(server_store.client, "PutObject")
    result = server_store.put_if_absent("k/lost", b"mine")
    assert faults.fired == 1
    assert server_store.get("k/lost") == b"mine"
    assert server_store.head("k/lost").etag == result.etag


def test_lost_response_after_multipart_completion_is_success(server_store: S3Store) -> None:
    """A multipart upload whose completion landed unanswered is reported as success."""
    data = os.urandom(6 * MiB)
    faults = drop_response_after_send(server_store.client, "CompleteMultipartUpload")
    result = server_store.put_if_absent("k/lostmp", io.BytesIO(data))
    assert faults.fired == 1 and result.size == len(data)
    assert server_store.get("k/lostmp") == data


def test_lost_response_after_replace_is_success(server_store: S3Store) -> None:
    """A put_if_match that landed unanswered is success even though its retry sees a new ETag."""
    first = server_store.put_if_absent("k/lostcas", b"v1")
    drop_response_after_send(server_store.client, "PutObject")
    server_store.put_if_match("k/lostcas", b"v2", first.etag)
    assert server_store.get("k/lostcas") == b"v2"


def test_lost_response_after_delete_is_success(server_store: S3Store) -> None:
    """A conditional delete that landed unanswered is success, not NotFound."""
    first = server_store.put_if_absent("k/lostdel", b"v1")
    drop_response_after_send(server_store.client, "DeleteObject")
    server_store.delete_if_match("k/lostdel", first.etag)
    assert list(server_store.list("k/")) == []


def test_someone_elses_create_is_still_already_exists(server_store: S3Store) -> None:
    """After an ambiguous create, a different writer's object is a real loss (AlreadyExists)."""
    server_store.put_if_absent("k/taken", b"theirs")
    inject_http_errors(server_store.client, "PutObject", status=503, times=1)
    with pytest.raises(AlreadyExists):
        server_store.put_if_absent("k/taken", b"mine")
    assert server_store.get("k/taken") == b"theirs"


def test_conflict_is_retried_after_rereading(server_store: S3Store) -> None:
    """A 409 ConditionalRequestConflict is followed by a HEAD and a retry, never by AlreadyExists."""
    ops = record_operations(server_store.client)
    inject_http_errors(server_store.client, "PutObject", status=409, times=1)
    server_store.put_if_absent("k/conflict", b"x")
    assert ops == ["PutObject", "HeadObject", "PutObject"]
    assert server_store.get("k/conflict") == b"x"


def test_conflict_on_multipart_completion_restarts_the_upload(server_store: S3Store) -> None:
    """A 409 on CompleteMultipartUpload starts a fresh upload and sends every part again."""
    data = os.urandom(7 * MiB)
    ops = record_operations(server_store.client)
    inject_http_errors(server_store.client, "CompleteMultipartUpload", status=409, times=1)
    server_store.put_if_absent("k/conflictmp", (data[i : i + MiB] for i in range(0, len(data), MiB)))
    assert ops.count("CreateMultipartUpload") == 2 and ops.count("UploadPart") == 4
    assert server_store.get("k/conflictmp") == data


def test_five_503s_then_success(moto_server: EmbeddedS3, server_store: S3Store) -> None:
    """Five 503 SlowDown answers in a row are retried and the write succeeds within the deadline.

    botocore's own retries are off so that every backoff is ours (its internal sleep of up
    to 1 s per retry is outside the deadline's control and made this timing load-dependent).
    """
    config = TEST_CONFIG.model_copy(update={"botocore_max_attempts": 1, "max_attempts": 8})
    store = moto_server.store(server_store.bucket, server_store.prefix, config)
    faults = inject_http_errors(store.client, "PutObject", status=503, times=5)
    started = time.monotonic()
    store.put_if_absent("k/slow", b"x")
    assert faults.fired == 5
    assert time.monotonic() - started < config.deadline
    assert store.get("k/slow") == b"x"


def test_dead_endpoint_is_store_unavailable_within_deadline() -> None:
    """Nothing listening on the endpoint raises StoreUnavailable before the deadline passes.

    botocore's own retries are off here: its internal backoff (up to 1 s) is outside our
    control and could overrun the deadline by that much.
    """
    config = TransferConfig(deadline=2.0, backoff_base=0.05, backoff_max=0.3, connect_timeout=0.5,
                            read_timeout=0.5, max_attempts=50, botocore_max_attempts=1)
    store = S3Store("bucket", "p", config=config, endpoint_url=f"http://127.0.0.1:{free_port()}",
                    session=EmbeddedS3().session())
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        store.put_if_absent("k/x", b"x")
    elapsed = time.monotonic() - started
    # Slack: one last read-back request after the deadline, and a loaded 2-core CI box.
    assert 1.0 < elapsed < config.deadline + 1.5
    with pytest.raises(StoreUnavailable):
        store.head("k/x")


def test_read_resumes_after_a_broken_stream(server_store: S3Store) -> None:
    """A GET whose body breaks midway resumes at the same offset and returns intact bytes."""
    data = os.urandom(3 * MiB)
    server_store.put_if_absent("k/resume", data)
    ops = record_operations(server_store.client)
    faults = break_response_body(server_store.client, "GetObject", after_reads=1)
    assert server_store.get("k/resume") == data
    assert faults.fired == 1 and ops == ["GetObject", "GetObject"]


def test_versioned_delete_removes_exactly_one_version(moto_server: EmbeddedS3) -> None:
    """delete_version removes one version of a key in a versioned bucket and nothing else."""
    store = moto_server.store(VERSIONED_BUCKET, f"t/{os.urandom(8).hex()}", TEST_CONFIG)
    first = store.put_if_absent("k/v", b"v1")
    second = store.put_if_match("k/v", b"v2", first.etag)
    assert first.version_id and second.version_id and first.version_id != second.version_id
    store.delete_version("k/v", second.version_id)
    assert store.get("k/v") == b"v1"
    with pytest.raises(PreconditionFailed):
        store.put_if_match("k/v", b"v3", second.etag)
