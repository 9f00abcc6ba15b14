"""Reading an object as a stream, with resumption and digest verification.

Why resumption is pinned to an ETag: after a broken connection the read continues at
the same offset with ``If-Match`` on the first answer's ETag, so two different versions
of the object are never spliced together (a changed object is an IntegrityError, not a
silent mix). A full read is hashed on the way and checked against the SHA-256 the
writer put in metadata *before* the last chunk is handed out, so a caller that consumes
the whole stream never accepts bytes that do not match their digest.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Iterator
from typing import Any

from botocore.exceptions import ClientError, FlexibleChecksumError

from s3spill.errors import IntegrityError, PreconditionFailed, StoreUnavailable
from s3spill.log import get_logger
from s3spill.store.base import META_SHA256, ByteRange
from s3spill.store.retry import Attempts
from s3spill.store.s3.errors import Kind, classify, is_transient
from s3spill.store.s3.ops import S3Ops

log = get_logger("s3spill.store.s3")


def read_object(ops: S3Ops, key: str, full: str, byte_range: ByteRange | None,  # noqa: C901 - one resume loop
                chunk_size: int, *, if_match: str | None = None,
                metadata: dict[str, str] | None = None) -> Iterator[bytes]:
    """Yield the bytes of ``full`` (or a range of it), resuming after broken connections.

    ``if_match``: only if the object's ETag is this one (its 412 is :class:`PreconditionFailed`,
    before any byte); resumption then stays pinned to it as always. ``metadata`` is filled
    with the object's user metadata from the first answer.
    """
    started = time.monotonic()
    start, end = byte_range if byte_range is not None else (0, None)
    if end is not None and end == start:
        ops.require(key, full)  # NotFound for a missing key, as for any other read
        return
    pos, etag, expected_sha, total = start, if_match, None, 0
    digest = hashlib.sha256() if byte_range is None else None
    pending: bytes | None = None
    attempts = Attempts()
    stream_failures = 0
    last_progress = started
    while True:
        kwargs: dict[str, Any] = {"Bucket": ops.bucket, "Key": full}
        if byte_range is not None or pos > 0:
            kwargs["Range"] = f"bytes={pos}-{'' if end is None else end - 1}"
        else:
            kwargs["ChecksumMode"] = "ENABLED"
        if etag is not None:
            kwargs["IfMatch"] = etag
        try:
            response = ops.call("get", key, attempts=attempts,
                                  fn=functools.partial(ops.client.get_object, **kwargs))
        except ClientError as exc:
            kind = classify(exc)
            if kind is Kind.INVALID_RANGE:
                ops.require(key, full)
                return
            if kind is Kind.PRECONDITION and etag is not None:
                if pos == start and if_match is not None:
                    raise PreconditionFailed(f"{key}: the object is not the version asked for",
                                             key=key) from exc
                raise IntegrityError(f"{key} changed while it was being read") from exc
            raise ops.translate(exc, key) from exc
        etag = response["ETag"]
        if metadata is not None and not metadata:
            metadata.update(response.get("Metadata") or {})
        if expected_sha is None:
            expected_sha = (response.get("Metadata") or {}).get(META_SHA256)
        try:
            for chunk in response["Body"].iter_chunks(chunk_size):
                last_progress = time.monotonic()
                pos += len(chunk)
                total += len(chunk)
                if digest is not None:
                    digest.update(chunk)
                if pending is not None:
                    yield pending
                pending = chunk
            break
        except FlexibleChecksumError as exc:
            raise IntegrityError(f"{key}: checksum mismatch on read: {exc}") from exc
        except Exception as exc:
            if not is_transient(exc):
                raise
            stream_failures += 1
            # The deadline counts from the last byte received: a long read that
            # keeps making progress is not cut off by the clock.
            if (stream_failures >= ops.config.max_attempts
                    or time.monotonic() - last_progress > ops.config.deadline):
                raise StoreUnavailable(f"reading {key} kept failing: {exc}", key=key) from exc
            log.info("store.get.resume", key=key, offset=pos)
    if digest is not None and expected_sha and digest.hexdigest() != expected_sha:
        raise IntegrityError(f"{key}: content does not match its SHA-256")
    if pending is not None:
        yield pending
    ops.log("get", key, started, attempts, total)
