"""A conditional write (create-if-absent or replace-if-match) whose outcome is known.

Why a put id: botocore retries 5xx answers on conditional PUTs, so our own successful
write can come back as 412, 404 or 409 (or a timeout). Every write carries a fresh put id
in its user metadata; whenever the answer says "lost", a HEAD reads the key back, and our
put id there means we won. A 409 ``ConditionalRequestConflict`` (or a multipart upload
that vanished under a concurrent completion) is retried from the beginning with backoff,
within the write's deadline, unless the read-back already decides the outcome. What is
still unknown at the deadline gets one last read-back before :class:`StoreUnavailable`.
"""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from botocore.exceptions import ClientError

from s3spill.errors import (
    AlreadyExists,
    ConditionalConflict,
    IntegrityError,
    PreconditionFailed,
    StoreUnavailable,
)
from s3spill.store.base import META_PUT_ID, META_SHA256, Body, PutResult
from s3spill.store.payload import Payload, StreamedBody, b64_sha256, prepare
from s3spill.store.retry import Attempts
from s3spill.store.s3.errors import Kind, classify
from s3spill.store.s3.multipart import put_stream, upload_multipart
from s3spill.store.s3.ops import S3Ops, jitter, sse_args, version_of

Mode = Literal["create", "replace"]
#: Seconds the put-id HEAD that resolves an unknown write may take past the write's deadline.
RESOLVE_GRACE_SECONDS = 1.0
#: Answers that may hide our own win (a retried attempt of ours), so the key is read back.
_READ_BACK = (Kind.PRECONDITION, Kind.NOT_FOUND, Kind.CONFLICT, Kind.NO_SUCH_UPLOAD)


@dataclass(frozen=True)
class _Write:
    """One conditional write: where it goes, its condition, and the put id that recognises it."""

    ops: S3Ops
    key: str
    full: str
    mode: Mode
    etag: str | None
    meta: dict[str, str]
    content_type: str
    put_id: str

    @property
    def cond(self) -> dict[str, str]:
        return {"IfNoneMatch": "*"} if self.mode == "create" else {"IfMatch": str(self.etag)}

    @property
    def operation(self) -> str:
        return "put_if_absent" if self.mode == "create" else "put_if_match"


def put_object(ops: S3Ops, key: str, full: str, body: Body, mode: Mode, etag: str | None,
               metadata: dict[str, str] | None, content_type: str) -> PutResult:
    """Write ``body`` to ``full`` if absent (``create``) or if its ETag is ``etag`` (``replace``)."""
    started = time.monotonic()
    put_id = secrets.token_hex(16)
    meta = {k.lower(): v for k, v in (metadata or {}).items()}
    meta[META_PUT_ID] = put_id
    streamed = isinstance(body, StreamedBody)
    if isinstance(body, StreamedBody):
        first, rest = body.head(ops.config.multipart_threshold)
        if rest is not None:
            return _put_stream(_Write(ops, key, full, mode, etag, meta, content_type, put_id),
                               first, rest, started)
        body = first  # small after all: one request, replayable from memory
    payload = prepare(body, ops.config.multipart_threshold)
    if not streamed:  # a streamed body's producer keeps its own digests
        meta[META_SHA256] = payload.sha256
    write = _Write(ops, key, full, mode, etag, meta, content_type, put_id)
    attempts = Attempts()
    # One deadline for the write and the reads that resolve its outcome.
    deadline = ops.deadline()
    try:
        result = _put_loop(write, payload, attempts, deadline)
    except StoreUnavailable:
        # Unknown outcome: one last read-back before admitting we do not know.
        mine = _mine_or_none(write, payload, deadline)
        if mine is None:
            raise
        result = mine
    finally:
        payload.close()
    ops.log(write.operation, key, started, attempts, payload.size,
            multipart=payload.is_multipart, ambiguous=attempts.ambiguous)
    return result


def _put_loop(w: _Write, payload: Payload, attempts: Attempts, deadline: float) -> PutResult:
    conflicts = 0
    while True:
        try:
            return _send(w, payload, attempts, deadline)
        except ClientError as exc:
            kind = classify(exc)
            if kind is Kind.DIGEST:
                raise IntegrityError(f"store refused our checksum for {w.key}: {exc}") from exc
            if kind not in _READ_BACK:
                raise w.ops.translate(exc, w.key) from exc
            # Lost, or our own earlier attempt won: read back and compare put ids.
            head = w.ops.head_raw(w.full, until=deadline)
            if head is not None and head.get("Metadata", {}).get(META_PUT_ID) == w.put_id:
                attempts.ambiguous = True
                return _result_from_head(w.key, head, payload)
            if not (kind is Kind.CONFLICT or (kind is Kind.NO_SUCH_UPLOAD and head is None)):
                raise _lost(w) from exc
            conflicts += 1
            _refuse_another_try(w, head, conflicts, deadline, exc)
            config = w.ops.config
            time.sleep(min(config.backoff_max, config.backoff_base * 2 ** conflicts) * jitter())


def _send(w: _Write, payload: Payload, attempts: Attempts, deadline: float) -> PutResult:
    """One attempt: a multipart upload completed under the condition, or one PutObject."""
    if payload.is_multipart:
        if w.mode == "replace":
            _precheck_replace(w)
        response = upload_multipart(w.ops, w.full, payload, w.meta, w.content_type, w.cond,
                                    attempts)
    else:
        assert payload.small is not None
        ops = w.ops
        response = ops.call("put", w.full, attempts=attempts, until=deadline, fn=functools.partial(
            ops.client.put_object, Bucket=ops.bucket, Key=w.full, Body=payload.small,
            Metadata=w.meta, ContentType=w.content_type, ChecksumSHA256=b64_sha256(payload.small),
            **sse_args(ops.config), **w.cond))
    return PutResult(key=w.key, etag=response["ETag"], size=payload.size,
                     sha256=payload.sha256, version_id=version_of(response))


def _lost(w: _Write) -> Exception:
    """The error of a write that lost its condition to someone else's object."""
    if w.mode == "create":
        return AlreadyExists(f"object exists: {w.key}", key=w.key)
    return PreconditionFailed(f"ETag mismatch or missing object: {w.key}", key=w.key)


def _refuse_another_try(w: _Write, head: dict[str, Any] | None, conflicts: int, deadline: float,
                        exc: ClientError) -> None:
    """After a conflict: raise when the read-back already decides the write (someone
    else's object is there, or the object to replace changed), or when the retries or the
    deadline are spent; return when one more try may win."""
    if w.mode == "create" and head is not None:
        raise AlreadyExists(f"object exists: {w.key}", key=w.key) from exc
    if w.mode == "replace" and (head is None or head.get("ETag") != w.etag):
        raise PreconditionFailed(f"ETag changed on {w.key}", key=w.key) from exc
    if conflicts >= w.ops.config.max_attempts or time.monotonic() > deadline:
        raise ConditionalConflict(
            f"conditional write of {w.key} kept conflicting ({conflicts}x)", key=w.key) from exc


def _put_stream(w: _Write, first: bytes, rest: Iterator[bytes], started: float) -> PutResult:
    """A large one-shot stream: parallel parts, one completion, no second chance."""
    attempts = Attempts()
    if w.mode == "replace":
        _precheck_replace(w)
    result = put_stream(w.ops, w.key, w.full, first, rest, w.meta, w.content_type, w.cond,
                        w.put_id, attempts, create=w.mode == "create")
    w.ops.log(w.operation, w.key, started, attempts, result.size, multipart=True, streamed=True,
              ambiguous=attempts.ambiguous)
    return result


def _precheck_replace(w: _Write) -> None:
    """Fail a doomed large replacement before uploading gigabytes.

    Not the guarantee — ``IfMatch`` on the completion is — but it also narrows the
    window on stores that ignore ``IfMatch`` there (moto; see ``s3spill doctor``).
    """
    head = w.ops.head_raw(w.full)
    if head is None or head.get("ETag") != str(w.etag):
        raise PreconditionFailed(f"ETag mismatch or missing object: {w.key}", key=w.key)


def _mine_or_none(w: _Write, payload: Payload, deadline: float) -> PutResult | None:
    ops = w.ops
    try:
        # Within the write's deadline, but never less than a short grace: one answer
        # here turns "unknown" into "won".
        head: dict[str, Any] = ops.call(
            "head", w.full, lambda: ops.client.head_object(Bucket=ops.bucket, Key=w.full),
            until=deadline, floor=RESOLVE_GRACE_SECONDS)
    except Exception:  # noqa: BLE001 - best effort; the caller re-raises StoreUnavailable
        return None
    if head.get("Metadata", {}).get(META_PUT_ID) == w.put_id:
        return _result_from_head(w.key, head, payload)
    return None


def _result_from_head(key: str, head: dict[str, Any], payload: Payload) -> PutResult:
    return PutResult(key=key, etag=head["ETag"], size=payload.size, sha256=payload.sha256,
                     version_id=version_of(head))
