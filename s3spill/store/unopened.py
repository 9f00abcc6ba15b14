"""A store that could not be opened, standing in so the output is still shown.

Why: ``s3spill run`` starts the command before it opens the store (the fast path,
:mod:`s3spill.cli.run_fast`, decides only from the URL's form). When opening it then
fails — a local path under a file, a policy the store refuses — the command has
already run and its output is in the pipe. Raising would lose that output; the house
rule is that the context side fails open. The Spiller given this store sees every write
fail, as with an unreachable store, and answers with its degraded result: the bounded,
marked head and tail, saying the full output was NOT saved and why.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal, NoReturn

from s3spill.errors import StoreUnavailable
from s3spill.store.base import Body, ByteRange, ObjectInfo, ObjectStore, PutResult, StoreCapabilities

__all__ = ["UnopenedStore"]


class UnopenedStore(ObjectStore):
    """Every operation raises :class:`StoreUnavailable` naming why the store did not open."""

    def __init__(self, url: str | None, why: str) -> None:
        """``why``: one line naming the error (the class and a capped message, no content)."""
        self._url = url or "(the policy's store)"
        self.kind: Literal["s3", "local"] = "s3" if self._url.startswith("s3://") else "local"
        self.reason = f"the store could not be opened: {why}"

    @property
    def url(self) -> str:
        return self._url

    def _fail(self, *_: object, **__: object) -> NoReturn:
        raise StoreUnavailable(self.reason)

    def put_if_absent(self, key: str, body: Body, *, metadata: dict[str, str] | None = None,
                      content_type: str = "application/octet-stream") -> PutResult:
        self._fail()

    def put_if_match(self, key: str, body: Body, etag: str, *, metadata: dict[str, str] | None = None,
                     content_type: str = "application/octet-stream") -> PutResult:
        self._fail()

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes:
        self._fail()

    def iter_chunks(self, key: str, byte_range: ByteRange | None = None,
                    chunk_size: int = 1024 * 1024) -> Iterator[bytes]:
        self._fail()

    def head(self, key: str) -> ObjectInfo:
        self._fail()

    def delete_if_match(self, key: str, etag: str) -> None:
        self._fail()

    def delete_version(self, key: str, version_id: str) -> None:
        self._fail()

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        self._fail()

    def capabilities(self) -> StoreCapabilities:
        self._fail()
