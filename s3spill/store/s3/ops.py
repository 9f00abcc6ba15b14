"""The plumbing one S3 store shares with its multipart and read helpers.

Why an object of its own: the upload (:mod:`.multipart`) and the resumable read
(:mod:`.read`) need the client, the bucket, the retry policy, the error translation and
the request log — not the store. Handing them this instead of the
:class:`~s3spill.store.s3.store.S3Store` keeps the imports one-way
(store → multipart/read → ops) and the store's private methods private.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from s3spill.config import TransferConfig
from s3spill.errors import (
    ConditionalConflict,
    NotFound,
    PreconditionFailed,
    StoreError,
    UnsupportedOperation,
)
from s3spill.log import get_logger
from s3spill.store.retry import Attempts, RetryPolicy
from s3spill.store.s3.errors import Kind, classify, is_transient

T = TypeVar("T")
log = get_logger("s3spill.store.s3")


class S3Ops:
    """A client bound to one bucket, with retries under the store's deadline."""

    def __init__(self, client: Any, bucket: str, config: TransferConfig) -> None:
        self.client = client
        self.bucket = bucket
        self.config = config
        self.retry = RetryPolicy(config, is_transient)

    def call(self, operation: str, key: str | None, fn: Callable[[], T],
             attempts: Attempts | None = None) -> T:
        """Run one request with transient faults retried (see :mod:`s3spill.store.retry`)."""
        return self.retry.run(fn, operation=operation, key=key, attempts=attempts)

    def log(self, operation: str, key: str | None, started: float, attempts: Attempts,
            nbytes: int | None = None, **extra: Any) -> None:
        log.debug(f"store.{operation}", key=key, bytes=nbytes,
                  duration=round(time.monotonic() - started, 4), attempts=attempts.count,
                  **extra)

    def head_raw(self, full: str) -> dict[str, Any] | None:
        """HEAD of a bucket key with its checksum; None when it does not exist."""
        try:
            head: dict[str, Any] = self.call(
                "head", full, lambda: self.client.head_object(
                    Bucket=self.bucket, Key=full, ChecksumMode="ENABLED"))
        except ClientError as exc:
            if classify(exc) is Kind.NOT_FOUND:
                return None
            raise self.translate(exc, full) from exc
        return head

    def require(self, key: str, full: str) -> None:
        """NotFound unless the object exists (what an empty read of a missing key owes)."""
        if self.head_raw(full) is None:
            raise NotFound(f"no such object: {key}", key=key)

    def translate(self, exc: ClientError, key: str | None) -> StoreError:
        """The store error a botocore failure means (never a guess at "exists")."""
        kind = classify(exc)
        msg = f"{exc}"
        if kind is Kind.NOT_FOUND:
            return NotFound(msg, key=key)
        if kind is Kind.NO_SUCH_BUCKET:
            return NotFound(f"no such bucket {self.bucket!r}", key=key)
        if kind is Kind.PRECONDITION:
            return PreconditionFailed(msg, key=key)
        if kind is Kind.CONFLICT:
            return ConditionalConflict(msg, key=key)
        if kind is Kind.UNSUPPORTED:
            return UnsupportedOperation(f"the store does not implement this request: {msg}", key=key)
        return StoreError(msg, key=key)
