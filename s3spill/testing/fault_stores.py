"""Faults around any :class:`~s3spill.store.base.ObjectStore`: failures and ignored conditions.

Why wrappers of a real store: :class:`FaultyStore` makes chosen calls of a real backend
fail, land without an answer, conflict or stall, so the code under test meets the
outcomes a real store can give; :class:`ConditionIgnoringStore` turns a real store into
one that ignores conditional headers (as some S3 look-alikes do), to check that s3spill
refuses it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from s3spill.errors import (
    AlreadyExists,
    ConditionalConflict,
    NotFound,
    PreconditionFailed,
    StoreUnavailable,
)
from s3spill.store.base import (
    Body,
    ByteRange,
    ObjectInfo,
    ObjectStore,
    PutResult,
    StoreCapabilities,
    WrappedStore,
    iter_body,
)

T = TypeVar("T")

FaultKind = Literal["unavailable", "drop_response", "conflict", "delay"]


@dataclass
class Fault:
    """One rule: what to do to which operation, how many times.

    * ``unavailable`` — raise StoreUnavailable; nothing reached the store.
    * ``drop_response`` — the operation runs and lands, then StoreUnavailable is raised
      (the caller cannot know it succeeded).
    * ``conflict`` — raise ConditionalConflict; nothing reached the store.
    * ``delay`` — sleep ``seconds``, then run normally.
    """

    operation: str  # a method name of ObjectStore, or "*"
    kind: FaultKind
    times: int = 1
    key_prefix: str = ""
    seconds: float = 0.0
    fired: int = 0

    def matches(self, operation: str, key: str) -> bool:
        return (self.times > 0 and self.operation in ("*", operation)
                and key.startswith(self.key_prefix))


@dataclass
class FaultyStore(WrappedStore):
    """Wraps a real store and applies :class:`Fault` rules to its calls, in order."""

    inner: ObjectStore
    faults: list[Fault] = field(default_factory=list)
    log: list[tuple[str, str, str]] = field(default_factory=list)
    #: Faults are failures, not ignored conditions: the capability check probes ``inner``
    #: (so it never consumes an injected fault).
    forwards_conditions = True

    def __post_init__(self) -> None:
        self.kind = self.inner.kind
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self.faults.append(fault)
        return fault

    def _run(self, operation: str, key: str, call: Callable[[], T]) -> T:
        with self._lock:
            fault = next((f for f in self.faults if f.matches(operation, key)), None)
            if fault is not None:
                fault.times -= 1
                fault.fired += 1
        kind = fault.kind if fault else "pass"
        self.log.append((operation, key, kind))
        if fault is None:
            return call()
        if fault.kind == "unavailable":
            raise StoreUnavailable(f"injected: {operation} unavailable", key=key)
        if fault.kind == "conflict":
            raise ConditionalConflict(f"injected: {operation} conflict", key=key)
        if fault.kind == "delay":
            time.sleep(fault.seconds)
            return call()
        call()
        raise StoreUnavailable(f"injected: {operation} landed but its answer was lost", key=key)

    def put_if_absent(self, key: str, body: Body, *, metadata: dict[str, str] | None = None,
                      content_type: str = "application/octet-stream") -> PutResult:
        return self._run("put_if_absent", key, lambda: self.inner.put_if_absent(
            key, body, metadata=metadata, content_type=content_type))

    def put_if_match(self, key: str, body: Body, etag: str, *,
                     metadata: dict[str, str] | None = None,
                     content_type: str = "application/octet-stream") -> PutResult:
        return self._run("put_if_match", key, lambda: self.inner.put_if_match(
            key, body, etag, metadata=metadata, content_type=content_type))

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes:
        return self._run("get", key, lambda: self.inner.get(key, byte_range))

    def iter_chunks(self, key: str, byte_range: ByteRange | None = None,
                    chunk_size: int = 1024 * 1024) -> Iterator[bytes]:
        return self._run("iter_chunks", key,
                         lambda: self.inner.iter_chunks(key, byte_range, chunk_size))

    def head(self, key: str) -> ObjectInfo:
        return self._run("head", key, lambda: self.inner.head(key))

    def delete_if_match(self, key: str, etag: str) -> None:
        self._run("delete_if_match", key, lambda: self.inner.delete_if_match(key, etag))

    def delete_unconditional(self, key: str) -> None:
        self._run("delete_unconditional", key, lambda: self.inner.delete_unconditional(key))

    def delete_version(self, key: str, version_id: str) -> None:
        self._run("delete_version", key, lambda: self.inner.delete_version(key, version_id))

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self._run("list", prefix, lambda: self.inner.list(prefix))

    def list_after(self, prefix: str, start_after: str) -> Iterator[ObjectInfo]:
        return self._run("list", prefix, lambda: self.inner.list_after(prefix, start_after))

    def capabilities(self) -> StoreCapabilities:
        return self.inner.capabilities()


class ConditionIgnoringStore(WrappedStore):
    """A real store made to behave like one that ignores ``If-None-Match`` / ``If-Match``.

    Some S3 look-alikes (s3rver, old gateways) accept conditional headers and then do the
    unconditional thing. This wrapper reproduces that on any real backend: a
    create-if-absent overwrites, a compare-and-swap replaces whatever is there, a
    conditional delete deletes. Use it to check that s3spill refuses such a store
    (:class:`~s3spill.errors.StoreCapabilityError`) instead of losing updates. It does not
    forward conditions: the capability check probes it, not the store it wraps.
    """

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.kind = inner.kind

    def _overwrite(self, key: str, body: Body, metadata: dict[str, str] | None,
                   content_type: str) -> PutResult:
        data = b"".join(iter_body(body))
        for _ in range(64):
            try:
                current = self.inner.head(key)
            except NotFound:
                try:
                    return self.inner.put_if_absent(key, data, metadata=metadata,
                                                    content_type=content_type)
                except AlreadyExists:
                    continue
            try:
                return self.inner.put_if_match(key, data, current.etag, metadata=metadata,
                                               content_type=content_type)
            except (PreconditionFailed, NotFound):
                continue
        raise StoreUnavailable(f"could not overwrite {key}", key=key)

    def put_if_absent(self, key: str, body: Body, *, metadata: dict[str, str] | None = None,
                      content_type: str = "application/octet-stream") -> PutResult:
        return self._overwrite(key, body, metadata, content_type)

    def put_if_match(self, key: str, body: Body, etag: str, *,
                     metadata: dict[str, str] | None = None,
                     content_type: str = "application/octet-stream") -> PutResult:
        return self._overwrite(key, body, metadata, content_type)

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes:
        return self.inner.get(key, byte_range)

    def iter_chunks(self, key: str, byte_range: ByteRange | None = None,
                    chunk_size: int = 1024 * 1024) -> Iterator[bytes]:
        return self.inner.iter_chunks(key, byte_range, chunk_size)

    def head(self, key: str) -> ObjectInfo:
        return self.inner.head(key)

    def delete_if_match(self, key: str, etag: str) -> None:
        self.inner.delete_unconditional(key)

    def delete_unconditional(self, key: str) -> None:
        self.inner.delete_unconditional(key)

    def delete_version(self, key: str, version_id: str) -> None:
        self.inner.delete_version(key, version_id)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self.inner.list(prefix)

    def list_after(self, prefix: str, start_after: str) -> Iterator[ObjectInfo]:
        return self.inner.list_after(prefix, start_after)

    def capabilities(self) -> StoreCapabilities:
        return self.inner.capabilities()  # what it *claims*; the check finds the truth
