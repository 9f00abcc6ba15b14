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

import functools
import hashlib
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
