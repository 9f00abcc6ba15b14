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


def read_object(ops: S3Ops, key: str, full: str, byte_range: ByteRange | None,
                chunk_size: int, *, if_match: str | None = None,
                metadata: dict[str, str] | None = None) -> Iterator[bytes]:
    """Yield the bytes of ``full`` (or a range of it), resuming after broken connections.

    ``if_match``: only if the object's ETag is this one (its 412 is :class:`PreconditionFailed`,
    before any byte); resumption then stays pinned to it as always. ``metadata`` is filled
    with the object's user metadata from the first answer.
    """
    start, end = byte_range if byte_range is not None else (0, None)
    if end is not None and end == start:
        ops.require(key, full)  # NotFound for a missing key, as for any other read
        return
    yield from _ResumableRead(ops, key, full, byte_range, if_match, metadata).chunks(chunk_size)


class _ResumableRead:
    """One read of an object: where it has got to, the ETag it is pinned to, the digest so
    far, and the chunk held back until the digest is checked."""

    def __init__(self, ops: S3Ops, key: str, full: str, byte_range: ByteRange | None,
                 if_match: str | None, metadata: dict[str, str] | None) -> None:
        self.ops, self.key, self.full = ops, key, full
        self.byte_range, self.if_match, self.metadata = byte_range, if_match, metadata
        self.started = time.monotonic()
        self.start: int = byte_range[0] if byte_range is not None else 0
        self.end: int | None = byte_range[1] if byte_range is not None else None
        self.pos, self.etag = self.start, if_match
        self.expected_sha: str | None = None
        self.total = 0
        self.digest = hashlib.sha256() if byte_range is None else None
        self.pending: bytes | None = None
        self.attempts = Attempts()
        self.stream_failures = 0
        self.last_progress = self.started

    def chunks(self, chunk_size: int) -> Iterator[bytes]:
        while True:
            response = self._get()
            if response is None:
                return  # the range starts at the end of an object that exists: no bytes
            self._remember(response)
            try:
                yield from self._stream(response, chunk_size)
                break
            except FlexibleChecksumError as exc:
                raise IntegrityError(f"{self.key}: checksum mismatch on read: {exc}") from exc
            except Exception as exc:
                if not is_transient(exc):
                    raise
                self._resume_or_give_up(exc)
        if self.digest is not None and self.expected_sha and self.digest.hexdigest() != self.expected_sha:
            raise IntegrityError(f"{self.key}: content does not match its SHA-256")
        if self.pending is not None:
            yield self.pending
        self.ops.log("get", self.key, self.started, self.attempts, self.total)

    def _get(self) -> Any:
        """GET from where the read has got to, pinned to the first answer's ETag; None
        for a range past the end (after checking that the object exists)."""
        kwargs: dict[str, Any] = {"Bucket": self.ops.bucket, "Key": self.full}
        if self.byte_range is not None or self.pos > 0:
            kwargs["Range"] = f"bytes={self.pos}-{'' if self.end is None else self.end - 1}"
        else:
            kwargs["ChecksumMode"] = "ENABLED"
        if self.etag is not None:
            kwargs["IfMatch"] = self.etag
        try:
            return self.ops.call("get", self.key, attempts=self.attempts,
                                 fn=functools.partial(self.ops.client.get_object, **kwargs))
        except ClientError as exc:
            kind = classify(exc)
            if kind is Kind.INVALID_RANGE:
                self.ops.require(self.key, self.full)
                return None
            if kind is Kind.PRECONDITION and self.etag is not None:
                if self.pos == self.start and self.if_match is not None:
                    raise PreconditionFailed(f"{self.key}: the object is not the version asked for",
                                             key=self.key) from exc
                raise IntegrityError(f"{self.key} changed while it was being read") from exc
            raise self.ops.translate(exc, self.key) from exc

    def _remember(self, response: Any) -> None:
        """The ETag to pin resumption to, and (first answer only) the metadata and digest."""
        self.etag = response["ETag"]
        if self.metadata is not None and not self.metadata:
            self.metadata.update(response.get("Metadata") or {})
        if self.expected_sha is None:
            self.expected_sha = (response.get("Metadata") or {}).get(META_SHA256)

    def _stream(self, response: Any, chunk_size: int) -> Iterator[bytes]:
        """The body's chunks, each yielded one chunk late: the last one waits for the digest."""
        for chunk in response["Body"].iter_chunks(chunk_size):
            self.last_progress = time.monotonic()
            self.pos += len(chunk)
            self.total += len(chunk)
            if self.digest is not None:
                self.digest.update(chunk)
            if self.pending is not None:
                yield self.pending
            self.pending = chunk

    def _resume_or_give_up(self, exc: Exception) -> None:
        """After a broken body read: resume, unless the attempts or the deadline are spent.
        The deadline counts from the last byte received: a long read that keeps making
        progress is not cut off by the clock."""
        self.stream_failures += 1
        if (self.stream_failures >= self.ops.config.max_attempts
                or time.monotonic() - self.last_progress > self.ops.config.deadline):
            raise StoreUnavailable(f"reading {self.key} kept failing: {exc}", key=self.key) from exc
        log.info("store.get.resume", key=self.key, offset=self.pos)
