"""What an S3 failure means, decided by the first rule that holds where spellings overlap."""

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from s3spill.store.s3.errors import Kind, classify


def _client_error(code: str, status: int) -> ClientError:
    return ClientError({"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Op")


@pytest.mark.parametrize(("code", "status", "kind"), [
    ("ConditionalRequestConflict", 409, Kind.CONFLICT),
    ("", 409, Kind.CONFLICT),  # a HEAD answer has no body, so no code
    ("PreconditionFailed", 412, Kind.PRECONDITION),
    ("", 412, Kind.PRECONDITION),
    ("NoSuchUpload", 404, Kind.NO_SUCH_UPLOAD),  # a 404, yet not a missing key
    ("NoSuchBucket", 404, Kind.NO_SUCH_BUCKET),
    ("NoSuchKey", 404, Kind.NOT_FOUND),  # If-Match on a missing key, as S3 spells it
    ("", 404, Kind.NOT_FOUND),
    ("BadDigest", 400, Kind.DIGEST),
    ("InvalidRange", 416, Kind.INVALID_RANGE),
    ("NotImplemented", 501, Kind.UNSUPPORTED),  # a 5xx, yet a definite refusal
    ("SlowDown", 503, Kind.TRANSIENT),
    ("", 500, Kind.TRANSIENT),
    ("TooManyRequestsException", 429, Kind.TRANSIENT),
    ("AccessDenied", 403, Kind.OTHER),
])
def test_a_client_error_reads_by_meaning(code: str, status: int, kind: Kind) -> None:
    """Each spelling of an outcome maps to its meaning, the more specific rule first."""
    assert classify(_client_error(code, status)) is kind


@pytest.mark.parametrize("exc", [EndpointConnectionError(endpoint_url="http://x"), TimeoutError(),
                                 ConnectionResetError(), BrokenPipeError()])
def test_a_broken_connection_is_transient(exc: BaseException) -> None:
    """A failure below the HTTP answer may be retried."""
    assert classify(exc) is Kind.TRANSIENT


def test_anything_else_is_permanent() -> None:
    """An error that is not a request failure is never retried."""
    assert classify(ValueError("x")) is Kind.OTHER
