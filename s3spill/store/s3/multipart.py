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

from s3spill.errors import IntegrityError
from s3spill.log import get_logger
from s3spill.store.payload import Payload, b64_sha256
from s3spill.store.retry import Attempts
from s3spill.store.s3.ops import S3Ops

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
    created = ops.call(
        "create_multipart_upload", full, attempts=attempts,
        fn=functools.partial(
            client.create_multipart_upload, Bucket=ops.bucket, Key=full, Metadata=metadata,
            ContentType=content_type, ChecksumAlgorithm="SHA256"))
    upload_id = created["UploadId"]
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
        result: dict[str, Any] = ops.call(
            "complete_multipart_upload", full, attempts=attempts,
            fn=functools.partial(
                client.complete_multipart_upload, Bucket=ops.bucket, Key=full,
                UploadId=upload_id, MultipartUpload={"Parts": parts}, **condition))
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
    created = ops.call(
        "create_multipart_upload", full, attempts=attempts,
        fn=functools.partial(
            client.create_multipart_upload, Bucket=ops.bucket, Key=full, Metadata=metadata,
            ContentType=content_type, ChecksumAlgorithm="CRC32"))
    upload_id = created["UploadId"]
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
        result: dict[str, Any] = ops.call(
            "complete_multipart_upload", full, attempts=attempts,
            fn=functools.partial(
                client.complete_multipart_upload, Bucket=ops.bucket, Key=full,
                UploadId=upload_id, MultipartUpload={"Parts": parts}, **condition))
        completed = True
        return result
    finally:
        for future in in_flight:
            future.cancel()
        pool.shutdown(wait=True)
        attempts.count += part_attempts.count
        if not completed:
            _abort(ops, full, upload_id)
