"""One multipart upload, conditional on its completion.

Parts are sent one at a time from a :class:`~s3spill.store.payload.Payload`, so one
part is in memory, each with its own ``ChecksumSHA256`` (the upload is created with
``ChecksumAlgorithm=SHA256``, so S3 verifies every part and keeps a composite digest).
The full-content SHA-256 was computed before the upload began and sits in the metadata
given to CreateMultipartUpload; the bytes are hashed again on the way out and the upload
is abandoned, never completed, if they differ. The completion carries the write's
condition (``If-None-Match: *`` or ``If-Match``); its failures are interpreted by the
caller (:class:`~s3spill.store.s3.store.S3Store`), which reads back the put id and, on a 409, starts a
fresh upload from the beginning of the payload as S3 requires.

A :class:`~s3spill.store.payload.StreamedBody` takes the other road
(:func:`upload_stream` / :func:`put_stream`): parts in parallel as the stream arrives,
nothing kept, and so no restart — a 409 there is :class:`~s3spill.errors.StreamNotReplayable`.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import zlib
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from s3spill.errors import (
    AlreadyExists,
    IntegrityError,
    PreconditionFailed,
    StoreUnavailable,
    StreamNotReplayable,
)
from s3spill.log import get_logger
from s3spill.store.base import META_PUT_ID, PutResult
from s3spill.store.payload import Payload, b64_sha256
from s3spill.store.retry import Attempts
from s3spill.store.s3.errors import Kind, classify
from s3spill.store.s3.ops import S3Ops, sse_args, version_of

MAX_PARTS = 10_000
log = get_logger("s3spill.store.s3")


def part_size_for(size: int, configured: int) -> int:
    """The configured part size, grown only when the body would need more than 10,000 parts."""
    needed = -(-size // MAX_PARTS)
    return max(configured, needed)


def upload_multipart(
    ops: S3Ops, full: str, payload: Payload, metadata: dict[str, str], content_type: str,
    condition: dict[str, str], attempts: Attempts,
) -> dict[str, Any]:
    """Upload ``payload`` to ``full`` and complete it under ``condition``; abort on failure."""
    client = ops.client
    upload_id = _create(ops, full, metadata, content_type, "SHA256", attempts)
    completed = False
    part_attempts = Attempts()
    try:
        digest = hashlib.sha256()
        parts: list[dict[str, Any]] = []
        size = part_size_for(payload.size, ops.config.part_size)
        for number, piece in enumerate(payload.parts(size), start=1):
            digest.update(piece)
            checksum = b64_sha256(piece)
            response = ops.call(
                "upload_part", full, attempts=part_attempts,
                fn=functools.partial(
                    client.upload_part, Bucket=ops.bucket, Key=full, UploadId=upload_id,
                    PartNumber=number, Body=piece, ChecksumSHA256=checksum))
            parts.append({"PartNumber": number, "ETag": response["ETag"],
                          "ChecksumSHA256": checksum})
            del piece
        if digest.hexdigest() != payload.sha256:
            raise IntegrityError(f"the body of {full} changed while it was being uploaded")
        result = _complete(ops, full, upload_id, parts, condition, attempts)
        completed = True
        return result
    finally:
        attempts.count += part_attempts.count
        if not completed:
            _abort(ops, full, upload_id)


def _abort(ops: S3Ops, full: str, upload_id: str) -> None:
    """Best effort: an upload we abandon must not keep its parts (a lifecycle rule is the net)."""
    try:
        ops.client.abort_multipart_upload(Bucket=ops.bucket, Key=full, UploadId=upload_id)
    except Exception as exc:  # noqa: BLE001 - the original failure matters more
        log.info("store.abort_multipart_failed", key=full, error=type(exc).__name__)


def upload_stream(
    ops: S3Ops, full: str, first: bytes, rest: Iterator[bytes], metadata: dict[str, str],
    content_type: str, condition: dict[str, str], attempts: Attempts,
) -> dict[str, Any]:
    """Upload a one-shot stream in parts, ``max_concurrency`` in flight, no local copy.

    Why parallel: a part's round trip is mostly waiting, and the producer (hashing,
    compressing) keeps the CPU busy meanwhile. Memory is bounded by the parts in flight
    plus the one being filled: ``(max_concurrency + 1) * part_size``. Each part carries a
    ``ChecksumCRC32`` (S3 verifies it in transit): the producer already hashed every byte
    with SHA-256 into its index, which every read verifies end to end, so a third
    SHA-256 pass here would buy nothing but time (zlib's CRC32 is ~10x cheaper).
    The completion's failures are the caller's to interpret; since the stream cannot be
    sent again, a 409 there is final (see :class:`~s3spill.errors.StreamNotReplayable`).
    """
    client = ops.client
    upload_id = _create(ops, full, metadata, content_type, "CRC32", attempts)
    part_attempts = Attempts()
    completed = False
    concurrency = ops.config.max_concurrency
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="s3spill-part")
    in_flight: deque[Future[dict[str, Any]]] = deque()
    parts: list[dict[str, Any]] = []

    def send(number: int, piece: bytes) -> dict[str, Any]:
        checksum = base64.b64encode(zlib.crc32(piece).to_bytes(4, "big")).decode()
        response = ops.call(
            "upload_part", full, attempts=part_attempts,
            fn=functools.partial(
                client.upload_part, Bucket=ops.bucket, Key=full, UploadId=upload_id,
                PartNumber=number, Body=piece, ChecksumCRC32=checksum))
        return {"PartNumber": number, "ETag": response["ETag"], "ChecksumCRC32": checksum}

    def submit(piece: bytes) -> None:
        number = len(parts) + len(in_flight) + 1
        if number > MAX_PARTS:
            raise ValueError(f"{full}: more than {MAX_PARTS} parts; raise part_size")
        while len(in_flight) >= concurrency:
            parts.append(in_flight.popleft().result())
        in_flight.append(pool.submit(send, number, piece))

    try:
        size = ops.config.part_size
        buffer = bytearray(first)
        for chunk in rest:
            buffer += chunk
            while len(buffer) >= size:
                submit(bytes(buffer[:size]))
                del buffer[:size]
        if buffer or not (parts or in_flight):
            submit(bytes(buffer))
        del buffer
        while in_flight:
            parts.append(in_flight.popleft().result())
        result = _complete(ops, full, upload_id, parts, condition, attempts)
        completed = True
        return result
    finally:
        for future in in_flight:
            future.cancel()
        pool.shutdown(wait=True)
        attempts.count += part_attempts.count
        if not completed:
            _abort(ops, full, upload_id)


def put_stream(
    ops: S3Ops, key: str, full: str, first: bytes, rest: Iterator[bytes],
    metadata: dict[str, str], content_type: str, condition: dict[str, str], put_id: str,
    attempts: Attempts, *, create: bool,
) -> PutResult:
    """:func:`upload_stream`, with every failure read back and named (won, lost, unknown).

    Our put id on the object means our completion landed though its answer was lost. A
    409 (or a vanished upload that is not ours) cannot be retried: the stream is spent.
    """
    counted = _Counted(first, rest)
    try:
        response = upload_stream(ops, full, first, counted, metadata, content_type, condition,
                                 attempts)
        return PutResult(key=key, etag=response["ETag"], size=counted.size, sha256=None,
                         version_id=version_of(response))
    except (ClientError, StoreUnavailable) as exc:
        head = ops.head_raw(full)
        if head is not None and head.get("Metadata", {}).get(META_PUT_ID) == put_id:
            attempts.ambiguous = True
            return PutResult(key=key, etag=head["ETag"], size=int(head["ContentLength"]),
                             sha256=None, version_id=version_of(head))
        if isinstance(exc, StoreUnavailable):
            raise
        kind = classify(exc)
        if kind is Kind.DIGEST:
            raise IntegrityError(f"store refused our checksum for {key}: {exc}") from exc
        if kind in (Kind.CONFLICT, Kind.NO_SUCH_UPLOAD):
            raise StreamNotReplayable(
                f"completing the upload of {key} met a conflict and its one-shot body cannot"
                " be sent again: nothing was saved", key=key) from exc
        if kind in (Kind.PRECONDITION, Kind.NOT_FOUND):
            if create:
                raise AlreadyExists(f"object exists: {key}", key=key) from exc
            raise PreconditionFailed(f"ETag mismatch or missing object: {key}", key=key) from exc
        raise ops.translate(exc, key) from exc


class _Counted:
    """The rest of a stream, counting the bytes that pass (the size is known only at the end)."""

    def __init__(self, first: bytes, rest: Iterator[bytes]) -> None:
        self.size = len(first)
        self._rest = rest

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        chunk = next(self._rest)
        self.size += len(chunk)
        return chunk


def _create(ops: S3Ops, full: str, metadata: dict[str, str], content_type: str, algorithm: str,
            attempts: Attempts) -> str:
    """CreateMultipartUpload with the parts' checksum algorithm; the upload id."""
    created: dict[str, Any] = ops.call(
        "create_multipart_upload", full, attempts=attempts,
        fn=functools.partial(
            ops.client.create_multipart_upload, Bucket=ops.bucket, Key=full, Metadata=metadata,
            ContentType=content_type, ChecksumAlgorithm=algorithm, **sse_args(ops.config)))
    return str(created["UploadId"])


def _complete(ops: S3Ops, full: str, upload_id: str, parts: list[dict[str, Any]],
              condition: dict[str, str], attempts: Attempts) -> dict[str, Any]:
    """CompleteMultipartUpload under the write's condition (its failures are the caller's)."""
    result: dict[str, Any] = ops.call(
        "complete_multipart_upload", full, attempts=attempts,
        fn=functools.partial(
            ops.client.complete_multipart_upload, Bucket=ops.bucket, Key=full,
            UploadId=upload_id, MultipartUpload={"Parts": parts}, **condition))
    return result
