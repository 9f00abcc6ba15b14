"""The local store's listing record: an object's ETag, size and age in an extended attribute.

Why: a listing (GC's plan lists every object of a store) and a conditional delete need an
object's ETag, size and timestamp, which the object keeps in its trailer, at the end of
the file — so every listed object cost an open, three seeks, two reads and a JSON parse.
The same facts, packed in 49 bytes, go into the file's ``user.s3s`` extended attribute
before the temporary is fsynced and linked, so they are as durable as the body and change
with it atomically: every write of a key is a new file (a new inode, with its own
attribute), never an in-place edit. A ``getxattr`` and an ``lstat`` replace the open, and
the value fits in an ext4 inode's spare space (68 bytes: no extra block).

The trailer stays the authority; the record is a copy a reader may take instead, and only
while the file is exactly as it was written: the record names the file's size and mtime
(nanoseconds) after its last byte, so a file changed in place (its trailer damaged, say) is
read from its trailer again and judged there. A file without a record — written by a
version before this one, copied by a tool that dropped attributes, or on a filesystem that
refuses user attributes — is read from its trailer too, as before, so old stores need no
migration. A record shows what an S3 listing shows (key, size, ETag, time) plus the commit
marker (:data:`~s3spill.store.commit.META_COMMIT`); no content digest (``sha256`` is None,
as :class:`~s3spill.store.base.ObjectInfo` says of listings) and no put id; other metadata,
which none of s3spill's writers sets, is kept as JSON after the fixed part.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import struct
from datetime import UTC, datetime, timedelta

from s3spill.store.base import META_PUT_ID, META_SHA256, ObjectInfo
from s3spill.store.commit import COMMIT_SIDECAR, META_COMMIT

#: Short, so that name and value fit an ext4 inode's in-line attribute space (68 bytes).
XATTR = "user.s3s"
#: flags, ETag (16 raw bytes), size, the file's size and mtime (ns), last modified (µs)
_HEAD = struct.Struct(">B16sQQqq")
_COMMIT, _EXTRA, _VERSION_MASK, _VERSION = 0x01, 0x04, 0xF0, 0x10
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
#: Errors that mean "no usable record here, read the trailer" (not "no such object").
_NO_RECORD = frozenset({errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM, errno.EACCES,
                        errno.E2BIG, errno.ERANGE})


def encode(trailer: dict[str, object], file: os.stat_result) -> bytes | None:
    """The record of a trailer and its file as written, or ``None`` when it cannot be packed."""
    etag = str(trailer["etag"])
    if len(etag) != 34 or etag[0] != '"' or etag[-1] != '"':
        return None
    try:
        raw_etag = bytes.fromhex(etag[1:-1])
    except ValueError:
        return None
    meta = dict(trailer["metadata"])  # type: ignore[call-overload]
    for own in (META_PUT_ID, META_SHA256):
        meta.pop(own, None)
    flags = _VERSION
    if meta.get(META_COMMIT) == COMMIT_SIDECAR:
        del meta[META_COMMIT]
        flags |= _COMMIT
    stamp = datetime.fromisoformat(str(trailer["last_modified"]))
    out = _HEAD.pack(flags | (_EXTRA if meta else 0), raw_etag, int(trailer["size"]),  # type: ignore[call-overload]
                     file.st_size, file.st_mtime_ns, (stamp - _EPOCH) // _US)
    if meta:
        out += json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
    return out


def _unpacked(value: bytes, file: os.stat_result) -> tuple[int, bytes, int, int, dict[str, str]] | None:
    """Flags, raw ETag, size, last modified (µs) and extra metadata, if the record
    describes ``file`` as it is (its size and mtime); else ``None``."""
    if len(value) < _HEAD.size:
        return None
    flags, raw_etag, size, file_size, mtime_ns, micros = _HEAD.unpack_from(value)
    if (flags & _VERSION_MASK != _VERSION or file_size != file.st_size
            or mtime_ns != file.st_mtime_ns):
        return None
    meta: dict[str, str] = {}
    if flags & _EXTRA:
        try:
            extra = json.loads(value[_HEAD.size:])
        except ValueError:
            return None
        if not isinstance(extra, dict):
            return None
        meta.update((str(k), str(v)) for k, v in extra.items())
    elif len(value) != _HEAD.size:
        return None
    return flags, raw_etag, size, micros, meta


def decode(key: str, value: bytes, file: os.stat_result) -> ObjectInfo | None:
    """The listing view of an object from its record, if the record describes ``file`` as it is."""
    unpacked = _unpacked(value, file)
    if unpacked is None:
        return None
    flags, raw_etag, size, micros, meta = unpacked
    if flags & _COMMIT:
        meta[META_COMMIT] = COMMIT_SIDECAR
    return ObjectInfo.of(key, size, f'"{raw_etag.hex()}"', _EPOCH + micros * _US, None, None, meta)


def read(path: str | os.PathLike[str], key: str) -> ObjectInfo | None:
    """The record of the regular file at ``path``, or ``None``: read its trailer instead.

    Never through a symlink (a link or a directory has no record, and the trailer read
    refuses or skips it). Raises :class:`FileNotFoundError` / :class:`NotADirectoryError`
    when nothing is there.
    """
    file = os.lstat(path)
    if not stat.S_ISREG(file.st_mode):
        return None
    try:
        value = os.getxattr(path, XATTR, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in _NO_RECORD:
            return None
        raise
    return decode(key, value, file)


def write(fd: int, trailer: dict[str, object]) -> bool:
    """Attach the record to a temporary after its last byte; False when attributes are refused."""
    value = encode(trailer, os.fstat(fd))
    if value is None:
        return True  # nothing to attach for this object; attributes still work
    try:
        os.setxattr(fd, XATTR, value)
    except OSError as exc:
        if exc.errno in _NO_RECORD:
            return False
        raise
    return True


def etag_of_fd(fd: int, file: os.stat_result) -> str | None:
    """The ETag the record of the open regular file ``fd`` gives, or ``None``: read its trailer.

    For a conditional delete, which needs the ETag alone (no listing view is built).
    """
    try:
        value = os.getxattr(fd, XATTR)
    except OSError as exc:
        if exc.errno in _NO_RECORD:
            return None
        raise
    unpacked = _unpacked(value, file)
    return None if unpacked is None else f'"{unpacked[1].hex()}"'
