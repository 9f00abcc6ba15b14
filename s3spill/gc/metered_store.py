"""A store wrapper that counts GC's requests by type and paces them.

Why a wrapper rather than counters in GC: every request GC makes — its own HEADs and
deletes, and the journal's GETs and CASes on its behalf — goes through one object, so
"requests per deleted object" is measured, not estimated. Pacing is a token bucket
shared by the worker threads; when the store still answers SlowDown after the store
layer's own retries (:class:`StoreUnavailable`), the rate is halved (and creeps back
up on success), so a batch job backs off instead of hammering a throttled prefix.
Counts are of logical operations; the store layer's internal retries are not counted.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Literal, TypeVar

from s3spill.errors import StoreError, StoreUnavailable
from s3spill.store.base import (
    Body,
    ByteRange,
    ObjectInfo,
    ObjectStore,
    PutResult,
    StoreCapabilities,
    WrappedStore,
)

T = TypeVar("T")


class MeteredStore(WrappedStore):
    """Delegates to ``inner``; counts each operation; optionally limits requests per second."""

    #: Forwards every condition unchanged: the capability check probes ``inner``.
    forwards_conditions = True

    def __init__(self, inner: ObjectStore, *, rate_limit: float | None = None,
                 capabilities: StoreCapabilities | None = None) -> None:
        self.inner = inner
        self.kind: Literal["s3", "local"] = inner.kind
        self.requests: Counter[str] = Counter()
        self._caps = capabilities
        self._lock = threading.Lock()
        self._max_rate = rate_limit
        self._rate = rate_limit
        self._next = time.monotonic()
        self.slowdowns = 0

    def _pace(self) -> None:
        if self._rate is None:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + 1.0 / self._rate
        delay = start - now
        if delay > 0:
            time.sleep(delay)

    def _run(self, op: str, fn: Callable[[], T]) -> T:
        self._pace()
        with self._lock:
            self.requests[op] += 1
        try:
            result = fn()
        except StoreUnavailable:
            with self._lock:
                self.slowdowns += 1
                if self._rate is not None:
                    self._rate = max(1.0, self._rate / 2)
            raise
        if self._rate is not None and self._max_rate is not None and self._rate < self._max_rate:
            with self._lock:
                self._rate = min(self._max_rate, self._rate * 1.05)
        return result

    def put_if_absent(self, key: str, body: Body, *, metadata: dict[str, str] | None = None,
                      content_type: str = "application/octet-stream") -> PutResult:
        return self._run("put_if_absent", lambda: self.inner.put_if_absent(
            key, body, metadata=metadata, content_type=content_type))

    def put_if_match(self, key: str, body: Body, etag: str, *, metadata: dict[str, str] | None = None,
                     content_type: str = "application/octet-stream") -> PutResult:
        return self._run("put_if_match", lambda: self.inner.put_if_match(
            key, body, etag, metadata=metadata, content_type=content_type))

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes:
        return self._run("get", lambda: self.inner.get(key, byte_range))

    def iter_chunks(self, key: str, byte_range: ByteRange | None = None,
                    chunk_size: int = 1024 * 1024) -> Iterator[bytes]:
        self._pace()
        with self._lock:
            self.requests["get"] += 1
        return self.inner.iter_chunks(key, byte_range, chunk_size)

    def head(self, key: str) -> ObjectInfo:
        return self._run("head", lambda: self.inner.head(key))

    def delete_if_match(self, key: str, etag: str) -> None:
        self._run("delete_if_match", lambda: self.inner.delete_if_match(key, etag))

    def delete_unconditional(self, key: str) -> None:
        self._run("delete_unconditional", lambda: self.inner.delete_unconditional(key))

    def delete_version(self, key: str, version_id: str) -> None:
        self._run("delete_version", lambda: self.inner.delete_version(key, version_id))

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        """Counted as one GET per key; the wrapped store reads them as one batch, unless a
        subclass intercepts single reads (then each goes through its :meth:`get`)."""
        if type(self).get is not MeteredStore.get:
            return super().get_many(keys)
        return self._run_many("get", len(keys), lambda: self.inner.get_many(keys))

    def delete_many_if_match(self, items: Sequence[tuple[str, str]]) -> dict[str, StoreError | None]:
        """Counted as one conditional DELETE per key; batched as :meth:`get_many` is."""
        if type(self).delete_if_match is not MeteredStore.delete_if_match:
            return super().delete_many_if_match(items)
        return self._run_many("delete_if_match", len(items), lambda: self.inner.delete_many_if_match(items))

    def listed(self, keys: Sequence[str]) -> dict[str, ObjectInfo]:
        """Counted as the listing it stands for: one LIST per 1,000 keys (a subclass that
        intercepts listings gets the default, through its :meth:`list`)."""
        if type(self).list is not MeteredStore.list or not keys:
            return super().listed(keys)
        return self._run_many("list", 1 + (len(keys) - 1) // 1000, lambda: self.inner.listed(keys))

    def _run_many(self, op: str, count: int, fn: Callable[[], T]) -> T:
        """:meth:`_run` of a batch of ``count`` requests (each paced and counted)."""
        for _ in range(count - 1):
            self._pace()
        with self._lock:
            self.requests[op] += count - 1
        return self._run(op, fn)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self._pages(self.inner.list(prefix))

    def list_after(self, prefix: str, start_after: str) -> Iterator[ObjectInfo]:
        return self._pages(self.inner.list_after(prefix, start_after))

    def _pages(self, listing: Iterator[ObjectInfo]) -> Iterator[ObjectInfo]:
        # One count per page would need the backend's page size; count the call and
        # every 1,000 keys (S3's page) so the figure tracks real LIST requests. The
        # call is counted when the listing starts, as S3 sends its first page then.
        self._pace()
        with self._lock:
            self.requests["list"] += 1
        for n, info in enumerate(listing, 1):
            if n % 1000 == 0:
                self._pace()
                with self._lock:
                    self.requests["list"] += 1
            yield info

    def capabilities(self) -> StoreCapabilities:
        return self._caps if self._caps is not None else self.inner.capabilities()
