"""What an S3 (or S3-compatible) failure *means*, independent of how it was spelled.

S3, MinIO and moto disagree on status codes and error codes for the same outcome
(``If-Match`` on a missing key is a 404 ``NoSuchKey``; HEAD errors have no body and so
no code), so the store decides by meaning: precondition lost, not found, conditional
conflict, transient, checksum refused, not implemented (a definite refusal), or
something permanent.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from botocore.exceptions import (
    ClientError,
    ConnectionError,
    HTTPClientError,
    IncompleteReadError,
)
from urllib3.exceptions import HTTPError as Urllib3HTTPError

_TRANSIENT_CODES = frozenset({
    "SlowDown", "Throttling", "ThrottlingException", "ThrottledException",
    "RequestThrottled", "RequestLimitExceeded", "TooManyRequestsException",
    "RequestTimeout", "RequestTimeoutException", "InternalError", "ServiceUnavailable",
    "OperationAborted", "PriorRequestNotComplete", "BandwidthLimitExceeded",
})
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "NoSuchVersion", "404", "NotFound"})
_UNSUPPORTED_CODES = frozenset({"NotImplemented", "NotImplementedError"})
_DIGEST_CODES = frozenset({
    "BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch", "InvalidChecksum",
})


class Kind(enum.Enum):
    """The meaning of a failed request."""

    PRECONDITION = "precondition"  # 412: If-Match / If-None-Match lost
    NOT_FOUND = "not_found"  # 404 on a key or version
    NO_SUCH_UPLOAD = "no_such_upload"  # 404 on a multipart upload id
    NO_SUCH_BUCKET = "no_such_bucket"
    CONFLICT = "conflict"  # 409 ConditionalRequestConflict: re-read and retry
    TRANSIENT = "transient"  # retry with backoff
    DIGEST = "digest"  # the store refused our checksum
    INVALID_RANGE = "invalid_range"  # 416
    UNSUPPORTED = "unsupported"  # 501 NotImplemented: a definite refusal, never transient
    OTHER = "other"  # permanent: access denied, bad request, ...


def error_code(exc: BaseException) -> tuple[str, int]:
    """``(code, http_status)`` of a ClientError; ``("", 0)`` for anything else."""
    if not isinstance(exc, ClientError):
        return "", 0
    response: Any = exc.response
    code = str(response.get("Error", {}).get("Code", ""))
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return code, status


#: How a ClientError's (code, status) reads, in order: the first rule that holds decides.
#: The order matters where spellings overlap (a 404 ``NoSuchUpload`` is not a missing key).
_CLIENT_RULES: tuple[tuple[Kind, Callable[[str, int], bool]], ...] = (
    (Kind.CONFLICT,
     lambda code, status: code == "ConditionalRequestConflict" or (status == 409 and code in ("", "409"))),
    (Kind.PRECONDITION, lambda code, status: status == 412 or code == "PreconditionFailed"),
    (Kind.NO_SUCH_UPLOAD, lambda code, _: code == "NoSuchUpload"),
    (Kind.NO_SUCH_BUCKET, lambda code, _: code == "NoSuchBucket"),
    (Kind.NOT_FOUND, lambda code, status: code in _NOT_FOUND_CODES or status == 404),
    (Kind.DIGEST, lambda code, _: code in _DIGEST_CODES),
    (Kind.INVALID_RANGE, lambda code, status: status == 416 or code == "InvalidRange"),
    # 501 is a *definite* answer: the store does not implement what we asked (LocalStack
    # answers it to If-Match on DeleteObject). Nothing happened; retrying cannot help,
    # and reading it as transient would turn a clean refusal into "unknown outcome".
    (Kind.UNSUPPORTED, lambda code, status: status == 501 or code in _UNSUPPORTED_CODES),
    (Kind.TRANSIENT,
     lambda code, status: code in _TRANSIENT_CODES or status >= 500 or status == 429),
)

#: Failures below the HTTP answer: the connection, or a streaming body read by
#: urllib3/http.client, broke; the request may be retried.
_TRANSIENT_TYPES = (ConnectionError, HTTPClientError, IncompleteReadError, Urllib3HTTPError,
                    TimeoutError, ConnectionResetError, BrokenPipeError)


def classify(exc: BaseException) -> Kind:
    if isinstance(exc, ClientError):
        code, status = error_code(exc)
        return next((kind for kind, holds in _CLIENT_RULES if holds(code, status)), Kind.OTHER)
    if isinstance(exc, _TRANSIENT_TYPES):
        return Kind.TRANSIENT
    return Kind.OTHER


def is_transient(exc: BaseException) -> bool:
    return classify(exc) is Kind.TRANSIENT
