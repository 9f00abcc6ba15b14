"""The small storage interface every feature of s3spill stands on.

Both backends (S3 and a local directory) implement exactly these operations with
the same conditional semantics, so the journal, the owner and GC are written once.
A conditional write has three outcomes — won, lost, unknown — and a backend must
resolve "unknown" itself (by reading back the put id it attached) before it
answers: a caller only ever sees success, :class:`~s3spill.errors.AlreadyExists` /
:class:`~s3spill.errors.PreconditionFailed` (a real loss), or
:class:`~s3spill.errors.StoreUnavailable` (still unknown after the deadline).

Keys are relative to the store's root; every backend checks them with :func:`validate_key`
itself, whoever built them, so no caller can address anything outside the root.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import BinaryIO, ClassVar, Literal

from s3spill.errors import InvalidKey, NotFound, PreconditionFailed, StoreError
from s3spill.store.claims import StoreCapabilities as StoreCapabilities

_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=-]{0,127}\Z")
MAX_KEY_LENGTH = 512


def validate_key(key: str) -> str:
    """Refuse any key that could address something outside the store's prefix.

    The alphabet is deliberately tiny: no ``/`` at either end, no empty, ``.`` or
    ``..`` segments, no percent escapes, no NUL, nothing non-ASCII.
    """
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        raise InvalidKey("key must be a non-empty string of at most 512 characters")
    if type(key) is not str:  # a subclass may hash or compare as it likes: never cached
        return _check_segments(key)
    return _cached_segments(key)


def _check_segments(key: str) -> str:
    for segment in key.split("/"):
        if not _SEGMENT.match(segment) or segment in {".", ".."} or ".." in segment:
            raise InvalidKey(f"invalid key segment {segment[:40]!r}")
    return key


#: Cached: a key is checked by every store call that names it (GC: four or five per
#: artifact), and the answer depends on the string alone. A refused key raises, so it is
#: never cached.
_cached_segments = functools.lru_cache(maxsize=4096)(_check_segments)


def validate_prefix(prefix: str) -> str:
    """Check a store root prefix (may be empty); returns it without slashes at the ends."""
    prefix = prefix.strip("/")
    if prefix:
        validate_key(prefix)
    return prefix


Body = bytes | bytearray | memoryview | BinaryIO | Iterable[bytes]

#: Metadata keys the stores reserve for themselves (lower-case, S3 user metadata).
META_SHA256 = "s3spill-sha256"
META_PUT_ID = "s3spill-put-id"


@dataclass(frozen=True)
class ObjectInfo:
    """What a HEAD (or a listing, with fewer fields) says about one object version."""

    key: str
    size: int
    etag: str
    last_modified: datetime
    version_id: str | None = None
    #: Hex SHA-256 of the full content, from our metadata (None in listings).
    sha256: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, key: str, size: int, etag: str, last_modified: datetime, version_id: str | None,
           sha256: str | None, metadata: dict[str, str]) -> ObjectInfo:
        """``ObjectInfo(...)`` with every field given, for the paths that build one per listed
        object (the local store's listing, GC's plan): the frozen dataclass's ``__init__`` sets
        each field through ``object.__setattr__`` (3.4 µs here), this fills the instance's
        dictionary at once (the same fields: equal to the constructor's, as a test checks)."""
        info = object.__new__(cls)
        info.__dict__.update(key=key, size=size, etag=etag, last_modified=last_modified,
                             version_id=version_id, sha256=sha256, metadata=metadata)
        return info

    def with_sha256(self, sha256: str | None) -> ObjectInfo:
        """This view with another content digest (``dataclasses.replace``, without its cost)."""
        return ObjectInfo.of(self.key, self.size, self.etag, self.last_modified, self.version_id, sha256,
                             self.metadata)


@dataclass(frozen=True)
class PutResult:
    """The identity of an object this process created or replaced."""

    key: str
    etag: str
    size: int
    #: Hex SHA-256 of the stored bytes; None when the body was a producer-hashed
    #: :class:`~s3spill.store.payload.StreamedBody` streamed without a digest of its own.
    sha256: str | None
    version_id: str | None = None


ByteRange = tuple[int, int]
"""``(start, end)`` — half-open byte range, ``end`` exclusive."""


#: Age after which a dead writer's temporary may be removed (an hour; a live writer's is
#: never removed, whatever its age — see :meth:`ObjectStore.sweep_temporaries`).
STALE_TEMPORARY_SECONDS = 3600.0


class ObjectStore(abc.ABC):
    """Create-once objects, compare-and-swap updates, conditional deletes, listings."""

    #: ``s3`` or ``local``; for messages and the doctor.
    kind: Literal["s3", "local"]
    #: Whether calls made on several threads overlap usefully (they wait on a network). False
    #: for a store whose calls are short local system calls: GC then plans its sessions on
    #: the calling thread, where worker threads only added hand-offs and GIL switches.
    overlapping_calls_help: ClassVar[bool] = True

    @property
    @abc.abstractmethod
    def url(self) -> str:
        """The store's root as a URL (``s3://bucket/prefix`` or ``file:///path``)."""

    @abc.abstractmethod
    def put_if_absent(
        self, key: str, body: Body, *, metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> PutResult:
        """Create ``key`` only if no object exists there (``If-None-Match: *``).

        Raises :class:`AlreadyExists` when another writer holds the key. A body may be
        bytes or a stream; a stream is read once, in bounded chunks.
        """

    @abc.abstractmethod
    def put_if_match(
        self, key: str, body: Body, etag: str, *, metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> PutResult:
        """Replace ``key`` only if its current ETag is ``etag``.

        Raises :class:`PreconditionFailed` if the ETag differs or the key is missing.
        """

    @abc.abstractmethod
    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes:
        """Read a whole object or a half-open byte range of it."""

    @abc.abstractmethod
    def iter_chunks(
        self, key: str, byte_range: ByteRange | None = None, chunk_size: int = 1024 * 1024
    ) -> Iterator[bytes]:
        """Stream an object (or a range) in chunks so memory stays bounded."""

    def get_if_match(self, key: str, byte_range: ByteRange, etag: str) -> tuple[bytes, dict[str, str]]:
        """:meth:`get` of a range, only if the object's ETag is ``etag``; with its metadata.

        :class:`PreconditionFailed` when the object holds something else, :class:`NotFound`
        when it is gone. Why: a reader holding a record that names the body's ETag (an
        artifact's index) checks the body and reads its first chunk in one request where
        the store can (S3 ``If-Match`` on GET), instead of a HEAD and then a GET. This
        default is that HEAD and GET, for stores and wrappers without a native form.
        """
        info = self.head(key)
        if info.etag != etag:
            raise PreconditionFailed(f"{key}: the object is not the version asked for", key=key)
        return self.get(key, byte_range), dict(info.metadata)

    @abc.abstractmethod
    def head(self, key: str) -> ObjectInfo:
        """Size, ETag, last-modified, version id, SHA-256 and metadata; :class:`NotFound` if absent."""

    @abc.abstractmethod
    def delete_if_match(self, key: str, etag: str) -> None:
        """Delete ``key`` only if its ETag is ``etag``; :class:`PreconditionFailed` otherwise."""

    def delete_unconditional(self, key: str) -> None:
        """Delete ``key`` whatever it holds: only for ``gc apply --force-unverified-deletes``.

        Why it exists: on a store that refuses or ignores ``If-Match`` on DELETE, a
        conditional delete either fails (501) or is unconditional anyway; the operator
        who accepted that risk gets a plain delete that works. This default reads the
        current ETag and deletes conditionally on it (backends that can send a plain
        DELETE override it). :class:`NotFound` if the key is absent.
        """
        self.delete_if_match(key, self.head(key).etag)

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        """Whole small objects (commit records), each read as :meth:`get` reads it; a key
        with no object is left out of the answer.

        Why: GC reads one commit record per artifact it plans or deletes; the local store
        reads a directory's worth with its symlink check done once (see
        :mod:`s3spill.store.local_batch`). This default is one :meth:`get` per key, so a
        wrapper (metering, fault injection) sees every read.
        """
        out: dict[str, bytes] = {}
        for key in keys:
            try:
                out[key] = self.get(key)
            except NotFound:
                continue
        return out

    def listed(self, keys: Sequence[str]) -> dict[str, ObjectInfo]:
        """What :meth:`list` shows of each of ``keys`` that exists (a listing's view: no
        content digest); keys with no object are left out.

        Why: GC's apply re-reads the artifacts it just fenced. On S3 one LIST of their
        common prefix (a request per 1,000 keys) stands in for a HEAD each, and this
        default is that listing, filtered; the local store reads each key's listing
        record instead, and not those of the keys beside it.
        """
        if not keys:
            return {}
        wanted = set(keys)
        return {info.key: info for info in self.list(_common_prefix(keys)) if info.key in wanted}

    def delete_many_if_match(self, items: Sequence[tuple[str, str]]) -> dict[str, StoreError | None]:
        """:meth:`delete_if_match` of each ``(key, etag)``, in order; each key's outcome.

        ``None``: deleted; else the error that one delete raised (:class:`NotFound`,
        :class:`PreconditionFailed`, or another :class:`StoreError`: outcome unknown).
        Same semantics as one by one — every delete is conditional on its own ETag, and
        each outcome is reported; the local store takes each key's lock stripe and its
        directory once per batch instead of once per key. Any other error (a damaged
        trailer, an I/O error) propagates at that key, as it would from a single delete.
        """
        out: dict[str, StoreError | None] = {}
        for key, etag in items:
            try:
                self.delete_if_match(key, etag)
                out[key] = None
            except StoreError as exc:
                out[key] = exc
        return out

    @abc.abstractmethod
    def delete_version(self, key: str, version_id: str) -> None:
        """Delete exactly one version (versioned stores); :class:`UnsupportedOperation` elsewhere."""

    @abc.abstractmethod
    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        """All objects whose relative key starts with ``prefix``, in key order, paginated lazily.

        Key order is the byte order of the UTF-8 keys (S3's, and Python's ``str`` order).
        """

    def list_after(self, prefix: str, start_after: str) -> Iterator[ObjectInfo]:
        """The objects :meth:`list` yields for ``prefix`` whose key sorts after ``start_after``.

        Why: a GC shard lists only its own range of the key space (S3's ``StartAfter``
        seeks there; nothing before it is paged through). This default filters
        :meth:`list` — correct for any backend or wrapper, but it pages through the whole
        prefix; both backends and the metering wrapper override it.
        """
        return (info for info in self.list(prefix) if info.key > start_after)

    @abc.abstractmethod
    def capabilities(self) -> StoreCapabilities:
        """The guarantees this backend claims (verified by ``s3spill doctor``)."""

    def conditions_source(self) -> ObjectStore:
        """The store whose answers to conditional writes this one gives: itself, unless it
        is a wrapper that forwards them unchanged (:attr:`WrappedStore.forwards_conditions`).
        The conditional-write gate probes and remembers this store, so wrappers share one
        verdict and a fault injected into a wrapper is never spent by a probe."""
        return self

    def sweep_temporaries(self, older_than: float = STALE_TEMPORARY_SECONDS) -> int:
        """Remove what writers killed mid-write left behind; the number removed.

        The local store's ``tmp/*.part`` files; nothing on S3, whose abandoned multipart
        uploads are the bucket lifecycle rule's to abort. GC calls this after an apply.
        """
        return 0

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections; the default has nothing to release."""

    def deferred_sync(self) -> contextlib.AbstractContextManager[None]:
        """A block whose deletes may become durable together when it exits (the local
        store fsyncs each directory once instead of after every delete). Callers treat a
        delete inside it as durable only after the block; the default defers nothing."""
        return contextlib.nullcontext()

    def __enter__(self) -> ObjectStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WrappedStore(ObjectStore):
    """Base of a store that wraps another (metering, fault injection): what a wrapper does
    not intercept — its root, the temporaries sweep, deferred syncs, closing — is the
    wrapped store's, so each wrapper states only what it changes."""

    inner: ObjectStore
    #: True for a wrapper that passes conditional writes through unchanged (a meter, a fault
    #: injector): the wrapped store's capability verdict holds for it. False, the default,
    #: for a wrapper that may change their meaning: the gate then probes the wrapper itself.
    forwards_conditions: ClassVar[bool] = False

    @property
    def url(self) -> str:
        return self.inner.url

    def conditions_source(self) -> ObjectStore:
        return self.inner.conditions_source() if self.forwards_conditions else self

    def sweep_temporaries(self, older_than: float = STALE_TEMPORARY_SECONDS) -> int:
        return self.inner.sweep_temporaries(older_than)

    def deferred_sync(self) -> contextlib.AbstractContextManager[None]:
        return self.inner.deferred_sync()

    def close(self) -> None:
        self.inner.close()


def _common_prefix(keys: Sequence[str]) -> str:
    """The longest prefix every key shares."""
    first, last = min(keys), max(keys)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def iter_body(body: Body, chunk_size: int = 1024 * 1024) -> Iterator[bytes]:
    """Yield a body as bounded chunks whatever its shape (bytes, file, iterable)."""
    if isinstance(body, (bytes, bytearray, memoryview)):
        view = memoryview(body)
        for start in range(0, len(view), chunk_size):
            yield bytes(view[start : start + chunk_size])
        return
    read = getattr(body, "read", None)
    if read is not None:
        while True:
            chunk = read(chunk_size)
            if not chunk:
                return
            yield bytes(chunk)
    else:
        for chunk in body:
            if chunk:
                yield bytes(chunk)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
