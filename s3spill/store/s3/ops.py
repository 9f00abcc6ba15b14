"""The plumbing one S3 store shares with its write, multipart and read helpers.

Why an object of its own: the conditional write (:mod:`.write`), the upload
(:mod:`.multipart`) and the resumable read (:mod:`.read`) need the client, the bucket,
the retry policy, the error translation and the request log — not the store. Handing
them this instead of the :class:`~s3spill.store.s3.store.S3Store` keeps the imports
one-way (store → write/multipart/read → ops) and the store's private methods private.

Why every request carries its deadline down to the socket: botocore's timeouts are fixed
per client (20 s read, retried once by botocore), so against an endpoint that accepts a
connection and never answers, one "attempt" took 40 s whatever the deadline said. Each
:meth:`S3Ops.call` now runs under an absolute deadline (its own, or one the caller
shares across a write and the HEAD that resolves it), and a ``before-send`` hook sets
every HTTP attempt's read timeout to the time left (botocore honours
``request.context["read_timeout"]``), so a call gives up at its deadline plus at most
the connect timeout.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from s3spill.config import TransferConfig
from s3spill.errors import (
    BucketNotFound,
    ConditionalConflict,
    NotFound,
    PreconditionFailed,
    StoreError,
    StoreUnavailable,
    UnsupportedOperation,
)
from s3spill.log import get_logger
from s3spill.store.retry import Attempts, RetryPolicy
from s3spill.store.s3.errors import Kind, classify, is_transient


def sse_args(config: TransferConfig) -> dict[str, str]:
    """The SSE-KMS parameters of an object-creating request (none: bucket default encryption)."""
    if config.sse_kms_key_id is None:
        return {}
    return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": config.sse_kms_key_id}

def version_of(response: dict[str, Any]) -> str | None:
    """S3's version id; ``"null"`` (an unversioned write) is reported as no version."""
    version = response.get("VersionId")
    return None if version in (None, "", "null") else str(version)


def jitter() -> float:
    """A factor in [0, 1) for backoff, so retrying writers do not move in step."""
    return secrets.randbelow(1000) / 1000.0


T = TypeVar("T")
log = get_logger("s3spill.store.s3")
#: The shortest read timeout an attempt is given, so a nearly spent deadline still fails
#: fast on its own rather than with a zero (= blocking) timeout.
MIN_ATTEMPT_SECONDS = 0.05
#: The absolute (monotonic) deadline of the request running on this thread, if any.
_bound = threading.local()


def _path(url: str) -> str:
    """The key part of a request URL, for messages (no host, no query)."""
    return url.split("://", 1)[-1].partition("/")[2].partition("?")[0]


class S3Ops:
    """A client bound to one bucket, with retries under the store's deadline."""

    def __init__(self, client: Any, bucket: str, config: TransferConfig) -> None:
        self.client = client
        self.bucket = bucket
        self.config = config
        self.retry = RetryPolicy(config, is_transient)
        events = getattr(getattr(client, "meta", None), "events", None)
        if events is not None:
            events.register("before-send.s3", self._attempt_timeout,
                            unique_id=f"s3spill-deadline-{id(self)}")

    def _attempt_timeout(self, request: Any, **_: Any) -> None:
        """Shrink this HTTP attempt's read timeout to the time left before the deadline."""
        until: float | None = getattr(_bound, "until", None)
        context = getattr(request, "context", None)
        if until is None or not isinstance(context, dict):
            return
        left = until - time.monotonic()
        if left < MIN_ATTEMPT_SECONDS:
            # botocore's own retry would send again with no time left: stop it here
            # (an exception from this hook ends botocore's attempt loop unretried).
            raise StoreUnavailable(f"{request.method} {_path(request.url)}: the deadline passed")
        context["read_timeout"] = min(self.config.read_timeout, left)

    def deadline(self) -> float:
        """An absolute deadline ``TransferConfig.deadline`` from now, to share between calls."""
        return time.monotonic() + self.config.deadline

    def call(self, operation: str, key: str | None, fn: Callable[[], T],
             attempts: Attempts | None = None, *, until: float | None = None,
             floor: float = 0.0) -> T:
        """Run one request with transient faults retried (see :mod:`s3spill.store.retry`).

        Bounded by ``until`` (absolute, monotonic; default: a fresh deadline), retries and
        every HTTP attempt included. ``floor`` grants at least that many seconds even past
        the deadline — for the one HEAD that resolves an unknown write outcome.
        """
        left = max((until if until is not None else self.deadline()) - time.monotonic(), floor)
        if left <= 0:
            raise StoreUnavailable(f"{operation}: the deadline passed before the request", key=key)
        bound_until = time.monotonic() + left

        def bounded() -> T:
            previous = getattr(_bound, "until", None)
            _bound.until = bound_until
            try:
                return fn()
            finally:
                _bound.until = previous

        return self.retry.run(bounded, operation=operation, key=key, attempts=attempts,
                              deadline=left)

    def log(self, operation: str, key: str | None, started: float, attempts: Attempts,
            nbytes: int | None = None, **extra: Any) -> None:
        log.debug(f"store.{operation}", key=key, bytes=nbytes,
                  duration=round(time.monotonic() - started, 4), attempts=attempts.count,
                  **extra)

    def head_raw(self, full: str, *, until: float | None = None) -> dict[str, Any] | None:
        """HEAD of a bucket key with its checksum; None when it does not exist."""
        try:
            head: dict[str, Any] = self.call(
                "head", full, lambda: self.client.head_object(
                    Bucket=self.bucket, Key=full, ChecksumMode="ENABLED"), until=until)
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
            return BucketNotFound(f"no such bucket {self.bucket!r}", key=key)
        if kind is Kind.PRECONDITION:
            return PreconditionFailed(msg, key=key)
        if kind is Kind.CONFLICT:
            return ConditionalConflict(msg, key=key)
        if kind is Kind.UNSUPPORTED:
            return UnsupportedOperation(f"the store does not implement this request: {msg}", key=key,
                                        hint="`s3spill doctor` shows which guarantee the store lacks")
        return StoreError(msg, key=key, hint="the store refused the request; check permissions and "
                          "the bucket")
