"""The S3 backend: one boto3 code path for AWS, MinIO and moto.

Why it is shaped this way:

* Endpoint, region and credentials come from the standard AWS environment
  (``AWS_ENDPOINT_URL``, ``AWS_PROFILE``, the shared config files ...), never from our
  own flags, so the same URL works against AWS, MinIO and an embedded moto server.
* Every write is conditional (``If-None-Match: *`` to create, ``If-Match`` to replace
  or delete) and carries ``ChecksumSHA256`` plus, in user metadata, the full-content
  SHA-256 and a fresh *put id*. The put id is how an ambiguous outcome is resolved:
  botocore retries 5xx answers on conditional PUTs, so our own successful write can
  come back as 412 (or a timeout); a HEAD that finds our put id means we won
  (:mod:`.write`, the write and the resolution of its outcome).
* Large bodies go through multipart upload (see :mod:`s3spill.store.payload` for why bodies are
  hashed first and :mod:`.multipart` for the upload itself). A
  :class:`~s3spill.store.payload.StreamedBody` is the exception: its producer keeps the
  digests, so it is streamed in parallel parts as it comes, with no spool and no replay.
* Transient faults are retried by :mod:`s3spill.store.retry` under one deadline; what is still
  unknown afterwards is :class:`StoreUnavailable`, never a guessed answer.
"""

from __future__ import annotations

import base64
import functools
import os
import time
from collections.abc import Iterator
from typing import Any, Literal
from urllib.parse import urlparse

import boto3
import botocore.loaders
import botocore.session
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import ClientError

from s3spill.config import TransferConfig
from s3spill.errors import (
    ConditionalConflict,
    ConfigError,
    IntegrityError,
    NotFound,
    PreconditionFailed,
)
from s3spill.store.base import (
    META_SHA256,
    Body,
    ByteRange,
    ObjectInfo,
    ObjectStore,
    PutResult,
    StoreCapabilities,
    validate_key,
    validate_prefix,
)
from s3spill.store.retry import Attempts
from s3spill.store.s3.errors import Kind, classify
from s3spill.store.s3.ops import S3Ops, jitter, version_of
from s3spill.store.s3.read import read_object
from s3spill.store.s3.write import put_object


@functools.lru_cache(maxsize=8)
def _shared_loader(search_paths: tuple[str, ...]) -> botocore.loaders.Loader:
    return botocore.loaders.Loader(extra_search_paths=list(search_paths), include_default_search_paths=False)


def new_session(**kwargs: Any) -> boto3.session.Session:
    """A fresh boto3 session (its own credentials, region and profile) whose service models
    come from one process-wide loader.

    Why: each new session parses botocore's JSON models again (S3's service model, the
    endpoint rules, partitions: ~0.15 s of CPU per client); a process that opens several
    stores, or a test run that opens hundreds, pays that once. The loader only caches
    read-only data files, and botocore already shares it between the clients of one session.
    """
    core = botocore.session.get_session()
    session = boto3.session.Session(botocore_session=core, **kwargs)
    own: botocore.loaders.Loader = core.get_component("data_loader")
    core.register_component("data_loader", _shared_loader(tuple(own.search_paths)))
    return session


def make_client(config: TransferConfig, *, endpoint_url: str | None = None,
                session: boto3.session.Session | None = None) -> BaseClient:
    """A botocore S3 client configured from the standard AWS environment plus our knobs."""
    session = session or new_session()
    region = session.region_name or os.environ.get("AWS_REGION") or "us-east-1"
    botocore_config = Config(
        connect_timeout=config.connect_timeout,
        read_timeout=config.read_timeout,
        retries={"max_attempts": config.botocore_max_attempts, "mode": "standard"},
        request_checksum_calculation=config.checksum_mode,
        response_checksum_validation=config.checksum_mode,
        max_pool_connections=max(10, 2 * config.max_concurrency),
        user_agent_extra="s3spill",
    )
    client: BaseClient = session.client(
        "s3", region_name=region, endpoint_url=endpoint_url, config=botocore_config
    )
    return client


class S3Store(ObjectStore):
    """Objects under ``s3://bucket/prefix``; keys are relative to the prefix."""

    kind: Literal["s3", "local"] = "s3"

    def __init__(
        self, bucket: str, prefix: str = "", *, config: TransferConfig | None = None,
        client: BaseClient | None = None, endpoint_url: str | None = None,
        session: boto3.session.Session | None = None,
    ) -> None:
        if not bucket or "/" in bucket:
            raise ConfigError(f"bad bucket name {bucket!r}")
        self.bucket = bucket
        self.prefix = validate_prefix(prefix)
        self.config = config or TransferConfig()
        self.client: Any = client or make_client(
            self.config, endpoint_url=endpoint_url, session=session
        )
        self.ops = S3Ops(self.client, bucket, self.config)

    @classmethod
    def from_url(cls, url: str, config: TransferConfig | None = None, **kwargs: Any) -> S3Store:
        parsed = urlparse(url)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise ConfigError(f"not an S3 URL: {url!r} (expected s3://bucket/prefix)")
        if parsed.query or parsed.fragment:
            raise ConfigError(f"S3 URL must not carry a query or fragment: {url!r}")
        return cls(parsed.netloc, parsed.path, config=config, **kwargs)

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    # -- keys ------------------------------------------------------------------------

    def full_key(self, key: str) -> str:
        """The bucket key of a relative key; refuses anything that could escape the prefix."""
        validate_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _relative(self, full: str) -> str:
        return full[len(self.prefix) + 1 :] if self.prefix else full

    # -- writes ----------------------------------------------------------------------

    def put_if_absent(
        self, key: str, body: Body, *, metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> PutResult:
        return put_object(self.ops, key, self.full_key(key), body, "create", None, metadata,
                          content_type)

    def put_if_match(
        self, key: str, body: Body, etag: str, *, metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> PutResult:
        return put_object(self.ops, key, self.full_key(key), body, "replace", etag, metadata,
                          content_type)

    # -- reads -----------------------------------------------------------------------

    def head(self, key: str) -> ObjectInfo:
        full = self.full_key(key)
        started = time.monotonic()
        attempts = Attempts()
        try:
            head: dict[str, Any] = self.ops.call("head", key, attempts=attempts, fn=lambda:
                                              self.client.head_object(
                                                  Bucket=self.bucket, Key=full,
                                                  ChecksumMode="ENABLED"))
        except ClientError as exc:
            raise self.ops.translate(exc, key) from exc
        self.ops.log("head", key, started, attempts, int(head.get("ContentLength", 0)))
        return self._info(key, head)

    def _info(self, key: str, head: dict[str, Any]) -> ObjectInfo:
        meta = {str(k).lower(): str(v) for k, v in (head.get("Metadata") or {}).items()}
        sha = meta.get(META_SHA256)
        native = head.get("ChecksumSHA256")
        # A single-request upload's native checksum is the full-object SHA-256: it must agree.
        full_object = head.get("ChecksumType") == "FULL_OBJECT" or (
            head.get("ChecksumType") is None and "-" not in str(head.get("ETag", "")))
        if (sha and native and full_object and "-" not in native
                and base64.b64decode(native).hex() != sha):
            raise IntegrityError(f"{key}: metadata SHA-256 disagrees with the store's checksum")
        return ObjectInfo(
            key=key, size=int(head.get("ContentLength", 0)), etag=str(head["ETag"]),
            last_modified=head["LastModified"], version_id=version_of(head),
            sha256=sha, metadata=meta,
        )

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes:
        return b"".join(self.iter_chunks(key, byte_range))

    def get_if_match(self, key: str, byte_range: ByteRange, etag: str) -> tuple[bytes, dict[str, str]]:
        """One ranged GET with ``If-Match``: 412 is :class:`PreconditionFailed` (see the base)."""
        if byte_range[0] < 0 or byte_range[1] < byte_range[0]:
            raise ValueError(f"bad byte range {byte_range}")
        if byte_range[0] == byte_range[1]:  # no GET is sent for an empty range: ask with a HEAD
            return super().get_if_match(key, byte_range, etag)
        metadata: dict[str, str] = {}
        data = b"".join(read_object(self.ops, key, self.full_key(key), byte_range, 1024 * 1024,
                                    if_match=etag, metadata=metadata))
        return data, metadata

    def iter_chunks(
        self, key: str, byte_range: ByteRange | None = None, chunk_size: int = 1024 * 1024
    ) -> Iterator[bytes]:
        """Stream with resumption: a broken connection continues at the same offset, pinned
        to the first response's ETag so two versions are never spliced together. A full
        read is checked against the SHA-256 in metadata before the last chunk is yielded."""
        full = self.full_key(key)
        if byte_range is not None and (byte_range[0] < 0 or byte_range[1] < byte_range[0]):
            raise ValueError(f"bad byte range {byte_range}")
        return read_object(self.ops, key, full, byte_range, chunk_size)

    # -- deletes and listings --------------------------------------------------------

    def delete_if_match(self, key: str, etag: str) -> None:
        full = self.full_key(key)
        started = time.monotonic()
        attempts = Attempts()
        conflicts = 0
        while True:
            try:
                self.ops.call("delete_if_match", key, attempts=attempts, fn=lambda:
                           self.client.delete_object(Bucket=self.bucket, Key=full, IfMatch=etag))
                break
            except ClientError as exc:
                kind = classify(exc)
                if kind is Kind.NOT_FOUND:
                    if attempts.ambiguous:
                        break  # an earlier attempt of ours deleted it; the goal holds
                    raise NotFound(f"no such object: {key}", key=key) from exc
                if kind is Kind.CONFLICT:
                    head = self.ops.head_raw(full)
                    if head is None:
                        if attempts.ambiguous:
                            break
                        raise NotFound(f"no such object: {key}", key=key) from exc
                    if head.get("ETag") != etag:
                        raise PreconditionFailed(f"ETag changed on {key}", key=key) from exc
                    conflicts += 1
                    if conflicts >= self.config.max_attempts:
                        raise ConditionalConflict(f"delete of {key} kept conflicting",
                                                  key=key) from exc
                    time.sleep(self.config.backoff_base * jitter())
                    continue
                raise self.ops.translate(exc, key) from exc
        self.ops.log("delete_if_match", key, started, attempts, ambiguous=attempts.ambiguous)

    def delete_unconditional(self, key: str) -> None:
        """A plain DeleteObject, no ``If-Match`` (stores that answer 501 to it still delete)."""
        full = self.full_key(key)
        started = time.monotonic()
        attempts = Attempts()
        if self.ops.head_raw(full) is None:
            raise NotFound(f"no such object: {key}", key=key)
        try:
            self.ops.call("delete_unconditional", key, attempts=attempts, fn=lambda:
                          self.client.delete_object(Bucket=self.bucket, Key=full))
        except ClientError as exc:
            raise self.ops.translate(exc, key) from exc
        self.ops.log("delete_unconditional", key, started, attempts)

    def delete_version(self, key: str, version_id: str) -> None:
        full = self.full_key(key)
        started = time.monotonic()
        attempts = Attempts()
        try:
            self.ops.call("delete_version", key, attempts=attempts, fn=lambda:
                       self.client.delete_object(Bucket=self.bucket, Key=full,
                                                 VersionId=version_id))
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code == "InvalidArgument":
                raise NotFound(f"no such version of {key}: {version_id}", key=key) from exc
            raise self.ops.translate(exc, key) from exc
        self.ops.log("delete_version", key, started, attempts, version_id=version_id)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        if prefix:
            validate_key(prefix[:-1] if prefix.endswith("/") else prefix)
        full_prefix = f"{self.prefix}/{prefix}" if self.prefix else prefix
        return self._list(full_prefix, None)

    def list_after(self, prefix: str, start_after: str) -> Iterator[ObjectInfo]:
        """``StartAfter`` seeks; the filter decides. S3-compatible servers do not all honour
        the seek (LocalStack 2026.3 returns keys before a non-ASCII bound), so a key at or
        before the bound is dropped here, as GC's range listing drops keys past its end."""
        if prefix:
            validate_key(prefix[:-1] if prefix.endswith("/") else prefix)
        full_prefix = f"{self.prefix}/{prefix}" if self.prefix else prefix
        listing = self._list(full_prefix, f"{self.prefix}/{start_after}" if self.prefix else start_after)
        return (info for info in listing if info.key > start_after)

    def _list(self, full_prefix: str, start_after: str | None) -> Iterator[ObjectInfo]:
        token: str | None = None
        started = time.monotonic()
        attempts = Attempts()
        count = 0
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": full_prefix}
            if token:
                kwargs["ContinuationToken"] = token
            elif start_after is not None:
                kwargs["StartAfter"] = start_after
            try:
                page = self.ops.call("list", full_prefix, attempts=attempts,
                                  fn=functools.partial(self.client.list_objects_v2, **kwargs))
            except ClientError as exc:
                raise self.ops.translate(exc, full_prefix) from exc
            for item in page.get("Contents", []):
                count += 1
                yield ObjectInfo(key=self._relative(item["Key"]), size=int(item["Size"]),
                                 etag=str(item["ETag"]), last_modified=item["LastModified"])
            if not page.get("IsTruncated"):
                self.ops.log("list", full_prefix, started, attempts, objects=count)
                return
            token = page["NextContinuationToken"]

    def capabilities(self) -> StoreCapabilities:
        """What S3 itself promises; S3-compatible stores differ — run ``s3spill doctor``."""
        return StoreCapabilities(
            conditional_create=True, conditional_put=True, conditional_delete=True,
            versioned_delete=True, batch_conditional_delete=True,
            verifies_sha256_on_put=True, versioning=False,
        )

    def close(self) -> None:
        self.client.close()
