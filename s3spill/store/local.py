"""A local-directory object store with the same conditional semantics as S3, on one host.

Why this shape: an object is one file holding its body followed by a JSON trailer
(ETag, SHA-256, put id, metadata), so body and metadata change together with one
atomic rename and a reader can never see a body with someone else's metadata.
Writes go to a temporary file in the same filesystem, are fsynced, and only then
become visible: create-if-absent by ``link()`` (which fails if the name exists, even
without the lock), replacement by ``rename()`` under a per-key lock after the ETag
comparison. Directories are 0700 and files 0600 because tool output is sensitive.

File layout: ``<root>/objects/<key>``; temporaries in ``<root>/tmp``; lock stripes in
``<root>/locks``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import secrets
import struct
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Literal
from urllib.parse import unquote, urlparse

from s3spill.config import TransferConfig
from s3spill.errors import (
    AlreadyExists,
    ConfigError,
    IntegrityError,
    NotFound,
    PreconditionFailed,
    UnsupportedOperation,
)
from s3spill.log import get_logger
from s3spill.store.base import (
    META_PUT_ID,
    META_SHA256,
    Body,
    ByteRange,
    ObjectInfo,
    ObjectStore,
    PutResult,
    StoreCapabilities,
    iter_body,
    validate_key,
)

_MAGIC = b"S3SPOBJ1"
_TRAILER = struct.Struct(">Q8s")  # trailer length, magic
_LOCK_STRIPES = 64
log = get_logger("s3spill.store.local")


class LocalStore(ObjectStore):
    """Objects as files under one root directory."""

    kind: Literal["s3", "local"] = "local"

    def __init__(self, root: str | os.PathLike[str], config: TransferConfig | None = None) -> None:
        self.root = Path(root).absolute()
        self.config = config or TransferConfig()
        self._deferred = threading.local()  # per thread: directories a delete left unsynced
        for sub in ("objects", "tmp", "locks"):
            (self.root / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)

    @classmethod
    def from_url(cls, url: str, config: TransferConfig | None = None) -> LocalStore:
        if url.startswith("/"):
            return cls(url, config)
        parsed = urlparse(url)
        if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
            raise ConfigError(f"not a local file URL: {url!r}")
        return cls(unquote(parsed.path), config)

    @property
    def url(self) -> str:
        return self.root.as_uri()

    # -- paths and locks -------------------------------------------------------------

    def _path(self, key: str) -> Path:
        validate_key(key)
        path = self.root / "objects" / key
        # validate_key already forbids escapes; this is belt and braces.
        if not str(path).startswith(str(self.root / "objects") + os.sep):
            raise ConfigError("key escapes the store root")
        return path

    @contextlib.contextmanager
    def _lock(self, key: str) -> Iterator[None]:
        stripe = int(hashlib.sha256(key.encode()).hexdigest()[:4], 16) % _LOCK_STRIPES
        fd = os.open(self.root / "locks" / f"{stripe:02d}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    # -- writing ---------------------------------------------------------------------

    def _write_temp(
        self, body: Body, metadata: dict[str, str] | None, content_type: str
    ) -> tuple[Path, dict[str, object]]:
        tmp = self.root / "tmp" / f"{secrets.token_hex(12)}.part"
        digest = hashlib.sha256()
        size = 0
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                for chunk in iter_body(body, self.config.part_size):
                    digest.update(chunk)
                    size += len(chunk)
                    fh.write(chunk)
                sha = digest.hexdigest()
                put_id = secrets.token_hex(16)
                meta = {k.lower(): v for k, v in (metadata or {}).items()}
                meta[META_SHA256] = sha
                meta[META_PUT_ID] = put_id
                trailer: dict[str, object] = {
                    "etag": f'"{hashlib.sha256((sha + put_id).encode()).hexdigest()[:32]}"',
                    "size": size,
                    "sha256": sha,
                    "last_modified": datetime.now(UTC).isoformat(),
                    "content_type": content_type,
                    "metadata": meta,
                }
                raw = json.dumps(trailer, sort_keys=True).encode()
                fh.write(raw)
                fh.write(_TRAILER.pack(len(raw), _MAGIC))
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise
        return tmp, trailer

    def _fsync_dir(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _result(self, key: str, trailer: dict[str, object]) -> PutResult:
        return PutResult(
            key=key, etag=str(trailer["etag"]), size=int(trailer["size"]),  # type: ignore[call-overload]
            sha256=str(trailer["sha256"]),
        )

    def put_if_absent(
        self, key: str, body: Body, *, metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> PutResult:
        path = self._path(key)
        started = time.monotonic()
        tmp, trailer = self._write_temp(body, metadata, content_type)
        try:
            try:
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            except (FileExistsError, NotADirectoryError):
                # S3 lets "a" and "a/b" coexist; a directory tree cannot.
                raise UnsupportedOperation(
                    f"{key}: a parent of this key is an object in the local store", key=key
                ) from None
            with self._lock(key):
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    raise AlreadyExists(f"object exists: {key}", key=key) from None
                self._fsync_dir(path.parent)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        log.debug("store.put_if_absent", key=key, bytes=trailer["size"],
                  duration=round(time.monotonic() - started, 4), attempts=1)
        return self._result(key, trailer)

    def put_if_match(
        self, key: str, body: Body, etag: str, *, metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> PutResult:
        path = self._path(key)
        started = time.monotonic()
        tmp, trailer = self._write_temp(body, metadata, content_type)
        try:
            with self._lock(key):
                try:
                    current = self._read_trailer(path)
                except NotFound:
                    raise PreconditionFailed(f"no object to replace: {key}", key=key) from None
                if current["etag"] != etag:
                    raise PreconditionFailed(f"ETag mismatch on {key}", key=key)
                os.replace(tmp, path)
                self._fsync_dir(path.parent)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        log.debug("store.put_if_match", key=key, bytes=trailer["size"],
                  duration=round(time.monotonic() - started, 4), attempts=1)
        return self._result(key, trailer)

    # -- reading ---------------------------------------------------------------------

    def _read_trailer_fh(self, fh: IO[bytes], key: str) -> dict[str, object]:
        fh.seek(0, os.SEEK_END)
        end = fh.tell()
        if end < _TRAILER.size:
            raise IntegrityError(f"local object {key} has no trailer")
        fh.seek(end - _TRAILER.size)
        length, magic = _TRAILER.unpack(fh.read(_TRAILER.size))
        if magic != _MAGIC or length > end - _TRAILER.size:
            raise IntegrityError(f"local object {key} has a damaged trailer")
        fh.seek(end - _TRAILER.size - length)
        trailer: dict[str, object] = json.loads(fh.read(length))
        return trailer

    def _read_trailer(self, path: Path) -> dict[str, object]:
        try:
            with open(path, "rb") as fh:
                return self._read_trailer_fh(fh, path.name)
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound(f"no such object: {path.name}") from None
        except IsADirectoryError:
            raise NotFound(f"no such object: {path.name}") from None

    def head(self, key: str) -> ObjectInfo:
        path = self._path(key)
        try:
            trailer = self._read_trailer(path)
        except NotFound:
            raise NotFound(f"no such object: {key}", key=key) from None
        return self._info(key, trailer)

    @staticmethod
    def _info(key: str, trailer: dict[str, object]) -> ObjectInfo:
        meta = trailer.get("metadata") or {}
        assert isinstance(meta, dict)
        return ObjectInfo(
            key=key,
            size=int(trailer["size"]),  # type: ignore[call-overload]
            etag=str(trailer["etag"]),
            last_modified=datetime.fromisoformat(str(trailer["last_modified"])),
            version_id=None,
            sha256=str(trailer["sha256"]),
            metadata={str(k): str(v) for k, v in meta.items()},
        )

    def iter_chunks(
        self, key: str, byte_range: ByteRange | None = None, chunk_size: int = 1024 * 1024
    ) -> Iterator[bytes]:
        path = self._path(key)
        try:
            fh = open(path, "rb")  # noqa: SIM115 - closed in finally of this generator
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise NotFound(f"no such object: {key}", key=key) from None
        with fh:
            size = int(self._read_trailer_fh(fh, key)["size"])  # type: ignore[call-overload]
            start, end = (0, size) if byte_range is None else byte_range
            if start < 0 or end < start:
                raise ValueError(f"bad byte range {byte_range}")
            end = min(end, size)
            fh.seek(start)
            remaining = max(0, end - start)
            while remaining:
                chunk = fh.read(min(chunk_size, remaining))
                if not chunk:
                    raise IntegrityError(f"local object {key} is truncated")
                remaining -= len(chunk)
                yield chunk

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes:
        return b"".join(self.iter_chunks(key, byte_range))

    # -- deleting and listing --------------------------------------------------------

    def delete_if_match(self, key: str, etag: str) -> None:
        path = self._path(key)
        with self._lock(key):
            try:
                current = self._read_trailer(path)
            except NotFound:
                raise NotFound(f"no such object: {key}", key=key) from None
            if current["etag"] != etag:
                raise PreconditionFailed(f"ETag mismatch on {key}", key=key)
            path.unlink()
            dirs: set[Path] | None = getattr(self._deferred, "dirs", None)
            if dirs is None:
                self._fsync_dir(path.parent)
            else:
                dirs.add(path.parent)
        log.debug("store.delete_if_match", key=key, attempts=1)

    @contextlib.contextmanager
    def deferred_sync(self) -> Iterator[None]:
        """Deletes in this block (this thread's) fsync their directories once, at the end."""
        if getattr(self._deferred, "dirs", None) is not None:
            yield  # nested: the outermost block syncs
            return
        dirs: set[Path] = set()
        self._deferred.dirs = dirs
        try:
            yield
        finally:
            self._deferred.dirs = None
            for path in sorted(dirs):
                with contextlib.suppress(FileNotFoundError):
                    self._fsync_dir(path)

    def delete_version(self, key: str, version_id: str) -> None:
        raise UnsupportedOperation("the local store is not versioned", key=key)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        base = self.root / "objects"
        # Walk only the directory the prefix pins down, then filter by the rest.
        directory, _, _ = prefix.rpartition("/")
        if directory:
            validate_key(directory)
        start = base / directory if directory else base
        for dirpath, dirnames, filenames in os.walk(start):
            dirnames.sort()
            for filename in sorted(filenames):
                full = Path(dirpath, filename)
                key = full.relative_to(base).as_posix()
                if not key.startswith(prefix):
                    continue
                try:
                    yield self._info(key, self._read_trailer(full))
                except (NotFound, IntegrityError, ValueError, OSError) as exc:
                    if isinstance(exc, OSError) and exc.errno not in (errno.ENOENT, None):
                        raise
                    continue  # deleted while listing, or not one of ours

    def capabilities(self) -> StoreCapabilities:
        return StoreCapabilities(
            conditional_create=True, conditional_put=True, conditional_delete=True,
            versioned_delete=False, batch_conditional_delete=False,
            verifies_sha256_on_put=True, versioning=False,
        )
