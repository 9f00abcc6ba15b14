"""Helpers shared by the artifact tests: follow footers, tamper with stored objects, count bytes."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import zstandard

from s3spill.artifacts.index import ArtifactIndex
from s3spill.artifacts.paging import unrender
from s3spill.artifacts.store import ArtifactStore
from s3spill.errors import NotFound
from s3spill.store.base import (
    Body,
    ByteRange,
    ObjectInfo,
    ObjectStore,
    PutResult,
    StoreCapabilities,
)
from s3spill.store.local import LocalStore


def read_all(
    arts: ArtifactStore, source_id: str, *, max_chars: int = 40_000, limit: int = 2000
) -> tuple[bytes, bytes, int]:
    """Follow footers from page one to EOF: (bytes via Page.raw, bytes via rendering, pages)."""
    raw, shown = bytearray(), bytearray()
    offset, char_offset, pages = 0, 0, 0
    while True:
        page = arts.read_page(
            source_id, offset=offset, limit=limit, char_offset=char_offset, max_chars=max_chars
        )
        text = page.render()
        assert len(text) <= max_chars
        raw += page.raw()
        shown += unrender(text)
        pages += 1
        if page.eof:
            return bytes(raw), bytes(shown), pages
        assert page.next_offset is not None and page.next_char_offset is not None
        assert (page.next_offset, page.next_char_offset) > (offset, char_offset)
        offset, char_offset = page.next_offset, page.next_char_offset


def stored_content(store: ObjectStore, key: str) -> bytes:
    """The content behind a body object, its frames decoded through its index (not verified).

    A body without an index (a foreign object) is returned as stored.
    """
    body = store.get(key)
    try:
        index = ArtifactIndex.model_validate_json(store.get(key + ".idx"))
    except NotFound:
        return body
    if index.codec == "identity":
        return body
    out = bytearray()
    for k in range(index.chunk_count):
        start, end = index.stored_range(k)
        out += zstandard.ZstdDecompressor().decompress(body[start:end])
    return bytes(out)


def overwrite(
    store: ObjectStore, key: str, body: bytes, metadata: dict[str, str] | None = None
) -> None:
    """Replace an object unconditionally, bypassing every guard (what an attacker or a bug does)."""
    if isinstance(store, LocalStore):
        tmp, _, fd = store._write_temp(body, metadata, "application/octet-stream")
        os.replace(tmp, store._path(key))
        os.close(fd)
        return
    client = getattr(store, "client", None)
    bucket = getattr(store, "bucket", None)
    full = store.full_key(key)  # type: ignore[attr-defined]
    assert client is not None and bucket is not None
    client.put_object(Bucket=bucket, Key=full, Body=body, Metadata=metadata or {})


class CountingStore(ObjectStore):
    """Delegates to a real store and counts the body bytes every read transfers."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.bytes_read = 0
        self.requests: list[tuple[str, str, ByteRange | None]] = []
        self._lock = threading.Lock()

    def reset(self) -> None:
        self.bytes_read = 0
        self.requests.clear()

    def _count(self, op: str, key: str, rng: ByteRange | None, n: int) -> None:
        with self._lock:
            self.bytes_read += n
            self.requests.append((op, key, rng))

    @property
    def url(self) -> str:
        return self.inner.url

    def put_if_absent(
        self,
        key: str,
        body: Body,
        *,
        metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> PutResult:
        return self.inner.put_if_absent(key, body, metadata=metadata, content_type=content_type)

    def put_if_match(
        self,
        key: str,
        body: Body,
        etag: str,
        *,
        metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> PutResult:
        return self.inner.put_if_match(
            key, body, etag, metadata=metadata, content_type=content_type
        )

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes:
        data = self.inner.get(key, byte_range)
        self._count("get", key, byte_range, len(data))
        return data

    def iter_chunks(
        self, key: str, byte_range: ByteRange | None = None, chunk_size: int = 1024 * 1024
    ) -> Iterator[bytes]:
        for chunk in self.inner.iter_chunks(key, byte_range, chunk_size):
            self._count("iter", key, byte_range, len(chunk))
            yield chunk

    def head(self, key: str) -> ObjectInfo:
        self._count("head", key, None, 0)
        return self.inner.head(key)

    def delete_if_match(self, key: str, etag: str) -> None:
        self.inner.delete_if_match(key, etag)

    def delete_version(self, key: str, version_id: str) -> None:
        self.inner.delete_version(key, version_id)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self.inner.list(prefix)

    def capabilities(self) -> StoreCapabilities:
        return self.inner.capabilities()
