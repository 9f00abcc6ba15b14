"""A local-directory object store with the same conditional semantics as S3, on one host.

Why this shape: an object is one file holding its body followed by a JSON trailer
(ETag, SHA-256, put id, metadata), so body and metadata change together with one
atomic rename and a reader can never see a body with someone else's metadata.
Writes go to a temporary file in the same filesystem, are fsynced, and only then
become visible: create-if-absent by ``link()`` (which fails if the name exists, even
without the lock), replacement by ``rename()`` under a per-key lock after the ETag
comparison. Directories are 0700 and files 0600 because tool output is sensitive.

Hardening, because the root may be shared ground (``file:///tmp/x``) or tampered with:
every directory the store creates is created 0700 (parents included), and a directory
it did not create is never chmodded; a symlink inside the root is refused, never
followed (each directory from ``objects/`` to the key's parent is ``lstat``-ed,
``O_NOFOLLOW`` on the object), so a planted link cannot redirect a write outside the
root; a trailer that does not parse is an :class:`IntegrityError`. A writer holds an
``flock`` on its temporary for as long as it lives, so
:meth:`LocalStore.sweep_temporaries` (called by GC) removes only the ``.part`` files of
writers that died, and only once they are old.

File layout: ``<root>/objects/<key>``; temporaries in ``<root>/tmp``; lock stripes in
``<root>/locks``. The file format is :mod:`s3spill.store.local_trailer`; a copy of what a
listing shows sits in an extended attribute (:mod:`s3spill.store.local_record`), so that
listings and conditional deletes need not open the object.

Over 450 lines (about 480) because it is one job: the whole :class:`ObjectStore` contract
on a directory, where every operation shares the same three disciplines — the body plus
trailer file, the per-key lock stripes, the symlink-refusing path — and splitting by
operation would spread each discipline over several modules. (The S3 store hands its
write and read loops to helpers because S3 keeps the bytes; here the store is the storage.)
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import secrets
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, ClassVar, Literal
from urllib.parse import unquote, urlparse

from s3spill.errors import (
    AlreadyExists,
    ConfigError,
    IntegrityError,
    NotFound,
    PreconditionFailed,
    StoreError,
    StoreNotFound,
    UnsupportedOperation,
)
from s3spill.log import get_logger
from s3spill.store import local_batch, local_record, local_trailer
from s3spill.store.base import (
    META_PUT_ID,
    META_SHA256,
    STALE_TEMPORARY_SECONDS,
    Body,
    ByteRange,
    ObjectInfo,
    ObjectStore,
    PutResult,
    StoreCapabilities,
    iter_body,
    validate_key,
)
from s3spill.store.local_paths import make_dirs, walk_keys
from s3spill.store.payload import StreamedBody

if TYPE_CHECKING:
    from s3spill.config import TransferConfig

_LOCK_STRIPES = 64
#: ``TransferConfig().part_size`` (a test checks): a small write (a usage event after a
#: ``read``) copies its body in these pieces without building the settings' model.
_PART_SIZE = 8 * 1024 * 1024
#: Objects up to this size are read whole by :meth:`LocalStore.get` (one read, no chunking).
_SMALL = 1024 * 1024
log = get_logger("s3spill.store.local")


class LocalStore(ObjectStore):
    """Objects as files under one root directory."""

    kind: Literal["s3", "local"] = "local"
    overlapping_calls_help: ClassVar[bool] = False

    def __init__(self, root: str | os.PathLike[str], config: TransferConfig | None = None, *,
                 create: bool = True) -> None:
        """``create=False``: a reader's open, which refuses a root that does not exist
        (:class:`StoreNotFound`) rather than create an empty store at a mistyped path."""
        self.root = Path(root).absolute()
        self._config = config
        if self.root.exists() and not self.root.is_dir():
            raise ConfigError(f"store root {self.root} is not a directory")
        if not create and not self.root.exists():
            raise StoreNotFound(f"no store at {self.root}: the directory does not exist")
        make_dirs(self.root)
        self._deferred = threading.local()  # per thread: directories a delete left unsynced
        for sub in ("objects", "tmp", "locks"):
            make_dirs(self.root / sub)
            if (self.root / sub).is_symlink():
                raise ConfigError(f"store root {self.root}: {sub}/ is a symlink; refused")
        self._objects = str(self.root / "objects")
        #: Whether the filesystem keeps listing records (:mod:`s3spill.store.local_record`).
        self._records = True

    @property
    def config(self) -> TransferConfig:
        """The transfer settings; the defaults (a pydantic model) are built on first use, so a
        process that only reads never builds them."""
        if self._config is None:
            from s3spill.config import TransferConfig

            self._config = TransferConfig()
        return self._config

    @classmethod
    def from_url(cls, url: str, config: TransferConfig | None = None, *,
                 create: bool = True) -> LocalStore:
        if url.startswith("/"):
            return cls(url, config, create=create)
        parsed = urlparse(url)
        if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
            raise ConfigError(f"not a local file URL: {url!r}")
        return cls(unquote(parsed.path), config, create=create)

    @property
    def url(self) -> str:
        return self.root.as_uri()

    # -- paths and locks -------------------------------------------------------------

    def _path(self, key: str) -> Path:
        return Path(self._spath(key))

    def _spath(self, key: str) -> str:
        """The object's file, as a string (the hot paths), once no directory on the way is a link.

        A directory symlinked inside the root would carry reads and writes elsewhere: every
        directory from ``objects/`` down to the key's parent must be a real directory (one
        ``lstat`` each; a missing one ends the check, as nothing below it exists to follow).
        """
        validate_key(key)  # forbids escapes: no empty, ".", ".." segments, no leading "/"
        if stat.S_ISLNK(os.lstat(self._objects).st_mode):
            raise StoreError(f"{key}: a symlink inside the store root; refused", key=key)
        current = self._objects
        for part in key.split("/")[:-1]:
            current = f"{current}/{part}"
            try:
                mode = os.lstat(current).st_mode
            except (FileNotFoundError, NotADirectoryError):
                break
            if not stat.S_ISDIR(mode):
                if stat.S_ISLNK(mode):
                    raise StoreError(f"{key}: a symlink inside the store root; refused", key=key)
                break  # an object where a directory should be: nothing below it exists
        return f"{self._objects}/{key}"

    def _make_parent(self, key: str, path: Path) -> None:
        """Create the key's directories 0700, one by one, refusing symlinks and objects."""
        current = self.root / "objects"
        for part in Path(key).parent.parts:
            current = current / part
            try:
                os.mkdir(current, 0o700)
                continue
            except FileExistsError:
                pass
            mode = os.lstat(current).st_mode
            if stat.S_ISLNK(mode):
                raise StoreError(f"{key}: a symlink inside the store root; refused", key=key)
            if not stat.S_ISDIR(mode):
                # S3 lets "a" and "a/b" coexist; a directory tree cannot.
                raise UnsupportedOperation(
                    f"{key}: a parent of this key is an object in the local store", key=key)

    @staticmethod
    def _stripe(key: str) -> int:
        return int.from_bytes(hashlib.sha256(key.encode()).digest()[:2], "big") % _LOCK_STRIPES

    def _open_stripe(self, stripe: int) -> int:
        return os.open(f"{self.root}/locks/{stripe:02d}.lock", os.O_RDWR | os.O_CREAT, 0o600)

    @contextlib.contextmanager
    def _lock(self, key: str) -> Iterator[None]:
        fd = self._open_stripe(self._stripe(key))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    # -- writing ---------------------------------------------------------------------

    def _write_temp(
        self, body: Body, metadata: dict[str, str] | None, content_type: str
    ) -> tuple[Path, dict[str, object], int]:
        """Write body and trailer to a fresh temporary; return it with its fd, still locked.

        The caller closes the fd (releasing the lock) only after linking or discarding the
        temporary, so the sweeper never takes the ``.part`` of a live writer.
        """
        tmp = self.root / "tmp" / f"{secrets.token_hex(12)}.part"
        # A StreamedBody's producer keeps the digests (see s3spill.store.payload): no second hash.
        digest = None if isinstance(body, StreamedBody) else hashlib.sha256()
        size = 0
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with os.fdopen(fd, "wb", closefd=False) as fh:
                piece = _PART_SIZE if self._config is None else self._config.part_size
                for chunk in iter_body(body, piece):
                    if digest is not None:
                        digest.update(chunk)
                    size += len(chunk)
                    fh.write(chunk)
                sha = digest.hexdigest() if digest is not None else None
                put_id = secrets.token_hex(16)
                meta = {k.lower(): v for k, v in (metadata or {}).items()}
                if sha is not None:
                    meta[META_SHA256] = sha
                meta[META_PUT_ID] = put_id
                trailer: dict[str, object] = {
                    "etag": f'"{hashlib.sha256(((sha or "") + put_id).encode()).hexdigest()[:32]}"',
                    "size": size,
                    "sha256": sha,
                    "last_modified": datetime.now(UTC).isoformat(),
                    "content_type": content_type,
                    "metadata": meta,
                }
                fh.write(local_trailer.encode(trailer))
                fh.flush()
                if self._records:
                    self._records = local_record.write(fd, trailer)
                os.fsync(fh.fileno())
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            os.close(fd)
            raise
        return tmp, trailer, fd

    @staticmethod
    def _discard(tmp: Path, fd: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        os.close(fd)

    def _fsync_dir(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _result(self, key: str, trailer: dict[str, object]) -> PutResult:
        return PutResult(
            key=key, etag=str(trailer["etag"]), size=int(trailer["size"]),  # type: ignore[call-overload]
            sha256=None if trailer["sha256"] is None else str(trailer["sha256"]),
        )

    def put_if_absent(
        self, key: str, body: Body, *, metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> PutResult:
        path = self._path(key)
        started = time.monotonic()
        tmp, trailer, fd = self._write_temp(body, metadata, content_type)
        try:
            self._make_parent(key, path)
            with self._lock(key):
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    raise AlreadyExists(f"object exists: {key}", key=key) from None
                self._fsync_dir(path.parent)
        finally:
            self._discard(tmp, fd)
        log.debug("store.put_if_absent", key=key, bytes=trailer["size"],
                  duration=round(time.monotonic() - started, 4), attempts=1)
        return self._result(key, trailer)

    def put_if_match(
        self, key: str, body: Body, etag: str, *, metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> PutResult:
        path = self._path(key)
        started = time.monotonic()
        tmp, trailer, fd = self._write_temp(body, metadata, content_type)
        try:
            with self._lock(key):
                try:
                    current = self._etag(path, key)
                except NotFound:
                    raise PreconditionFailed(f"no object to replace: {key}", key=key) from None
                if current != etag:
                    raise PreconditionFailed(f"ETag mismatch on {key}", key=key)
                os.replace(tmp, path)
                self._fsync_dir(path.parent)
        finally:
            self._discard(tmp, fd)
        log.debug("store.put_if_match", key=key, bytes=trailer["size"],
                  duration=round(time.monotonic() - started, 4), attempts=1)
        return self._result(key, trailer)

    # -- reading ---------------------------------------------------------------------

    def _open(self, path: str | Path, key: str) -> IO[bytes]:
        """Open an object for reading; never through a symlink (``O_NOFOLLOW``)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound(f"no such object: {key}", key=key) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise StoreError(f"{key}: a symlink inside the store root; refused",
                                 key=key) from None
            raise
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.close(fd)
            raise NotFound(f"no such object: {key}", key=key)
        return os.fdopen(fd, "rb")

    def _read_trailer(self, path: str | Path, key: str) -> dict[str, object]:
        with self._open(path, key) as fh:
            return local_trailer.read_from(fh, key)

    def _etag(self, path: str | Path, key: str) -> str:
        """The object's ETag: from its listing record when it has one, else from its trailer."""
        try:
            record = local_record.read(path, key)
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound(f"no such object: {key}", key=key) from None
        if record is not None:
            return record.etag
        return str(self._read_trailer(path, key)["etag"])

    def head(self, key: str) -> ObjectInfo:
        return local_trailer.info(key, self._read_trailer(self._path(key), key))

    def iter_chunks(
        self, key: str, byte_range: ByteRange | None = None, chunk_size: int = 1024 * 1024
    ) -> Iterator[bytes]:
        """A full read is checked against the trailer's SHA-256 before its last chunk is
        handed out, as the S3 backend checks a full read against its metadata."""
        fh = self._open(self._path(key), key)
        with fh:
            trailer = local_trailer.read_from(fh, key)
            size = int(trailer["size"])  # type: ignore[call-overload]
            start, end = (0, size) if byte_range is None else byte_range
            if start < 0 or end < start:
                raise ValueError(f"bad byte range {byte_range}")
            end = min(end, size)
            fh.seek(start)
            remaining = max(0, end - start)
            # A streamed body's digest lives in its artifact's index (None here): the reader
            # that decodes the frames verifies them against it.
            digest = hashlib.sha256() if byte_range is None and trailer["sha256"] is not None else None
            pending: bytes | None = None
            while remaining:
                chunk = fh.read(min(chunk_size, remaining))
                if not chunk:
                    raise IntegrityError(f"local object {key} is truncated")
                remaining -= len(chunk)
                if digest is None:
                    yield chunk
                    continue
                digest.update(chunk)
                if pending is not None:
                    yield pending
                pending = chunk
            if digest is not None and digest.hexdigest() != trailer["sha256"]:
                raise IntegrityError(f"{key}: content does not match its SHA-256")
            if pending is not None:
                yield pending

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes:
        if byte_range is not None:
            return b"".join(self.iter_chunks(key, byte_range))
        # A whole small object (a commit record, a journal segment): one read, then the checks
        # iter_chunks makes — the trailer's, and the body's SHA-256 before it is handed out.
        with self._open(self._spath(key), key) as fh:
            if os.fstat(fh.fileno()).st_size > _SMALL:
                return b"".join(self.iter_chunks(key))
            return self._checked_body(fh.read(), key)

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        return local_batch.get_many(self, keys)

    @staticmethod
    def _checked_body(raw: bytes, key: str) -> bytes:
        """A whole object file's body, once its trailer and SHA-256 check out."""
        body, trailer = local_trailer.split(raw, key)
        if len(body) != trailer["size"]:
            raise IntegrityError(f"local object {key} is truncated")
        if trailer["sha256"] is not None and hashlib.sha256(body).hexdigest() != trailer["sha256"]:
            raise IntegrityError(f"{key}: content does not match its SHA-256")
        return body

    # -- deleting and listing --------------------------------------------------------

    def delete_if_match(self, key: str, etag: str) -> None:
        path = self._spath(key)
        with self._lock(key):
            if self._etag(path, key) != etag:
                raise PreconditionFailed(f"ETag mismatch on {key}", key=key)
            os.unlink(path)
            dirs: set[str] | None = getattr(self._deferred, "dirs", None)
            if dirs is None:
                self._fsync_dir(Path(os.path.dirname(path)))
            else:
                dirs.add(os.path.dirname(path))
        log.debug("store.delete_if_match", key=key, attempts=1)

    def delete_many_if_match(self, items: Sequence[tuple[str, str]]) -> dict[str, StoreError | None]:
        return local_batch.delete_many_if_match(self, items)

    def _synced_later(self, path: str, fd: int) -> None:
        """A directory a delete changed: fsynced now, or at the end of a deferred block."""
        dirs: set[str] | None = getattr(self._deferred, "dirs", None)
        if dirs is None:
            os.fsync(fd)
        else:
            dirs.add(path)

    @contextlib.contextmanager
    def deferred_sync(self) -> Iterator[None]:
        """Deletes in this block (this thread's) fsync their directories once, at the end."""
        if getattr(self._deferred, "dirs", None) is not None:
            yield  # nested: the outermost block syncs
            return
        dirs: set[str] = set()
        self._deferred.dirs = dirs
        try:
            yield
        finally:
            self._deferred.dirs = None
            for path in sorted(dirs):
                with contextlib.suppress(FileNotFoundError):
                    self._fsync_dir(Path(path))

    def delete_version(self, key: str, version_id: str) -> None:
        raise UnsupportedOperation("the local store is not versioned", key=key)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self._list(prefix, None)

    def list_after(self, prefix: str, start_after: str) -> Iterator[ObjectInfo]:
        return self._list(prefix, start_after)

    def _list(self, prefix: str, start_after: str | None) -> Iterator[ObjectInfo]:
        base = self._objects
        # Walk only the directory the prefix pins down, then filter by the rest.
        directory, _, _ = prefix.rpartition("/")
        if directory:
            validate_key(directory)
        for key in walk_keys(Path(base), f"{directory}/" if directory else "", prefix, start_after):
            info = self._listing_info(f"{base}/{key}", key)
            if info is not None:
                yield info

    def _listing_info(self, path: str, key: str) -> ObjectInfo | None:
        """What a listing shows of the file at ``path``; ``None``: gone, or not one of ours."""
        try:
            # The listing record when the file has one (no open), else the trailer.
            return local_record.read(path, key) or local_trailer.info(key, self._read_trailer(path, key))
        except (FileNotFoundError, NotADirectoryError):
            return None  # deleted while listing
        except (NotFound, StoreError, IntegrityError, ValueError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno not in (errno.ENOENT, None):
                raise
            return None  # deleted while listing, or not one of ours

    def listed(self, keys: Sequence[str]) -> dict[str, ObjectInfo]:
        return local_batch.listed(self, keys)

    def sweep_temporaries(self, older_than: float = STALE_TEMPORARY_SECONDS) -> int:
        """Remove ``tmp/*.part`` files of dead writers untouched for ``older_than`` seconds.

        A live writer holds an exclusive ``flock`` on its temporary until it has linked or
        discarded it, so a file whose lock can be taken belongs to a process that died
        (SIGKILL, power loss); the age keeps the sweep away from anything recent anyway.
        """
        removed = 0
        now = time.time()
        with os.scandir(self.root / "tmp") as entries:
            for entry in entries:
                if not entry.name.endswith(".part") or not entry.is_file(follow_symlinks=False):
                    continue
                try:
                    if now - entry.stat(follow_symlinks=False).st_mtime < older_than:
                        continue
                    fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
                except FileNotFoundError:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue  # its writer is alive
                try:
                    os.unlink(entry.path)
                    removed += 1
                except FileNotFoundError:
                    pass
                finally:
                    os.close(fd)
        if removed:
            log.info("store.sweep_temporaries", removed=removed, older_than=older_than)
        return removed

    def capabilities(self) -> StoreCapabilities:
        return StoreCapabilities(
            conditional_create=True, conditional_put=True, conditional_delete=True,
            versioned_delete=False, batch_conditional_delete=False,
            verifies_sha256_on_put=True, versioning=False,
        )
