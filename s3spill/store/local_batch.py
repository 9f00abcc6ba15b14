"""Batched reads and conditional deletes of the local store: one directory's symlink check per batch.

Why: GC reads one commit record per artifact it plans or deletes, re-reads the listing
view of each artifact it fenced, and deletes each body
and sidecar conditionally; one by one, each call re-checks every directory from
``objects/`` to the key's parent (five ``lstat``), opens its lock stripe and builds the
object's listing view — more than the work itself. Here a batch checks the directory
chain once per directory, then opens that directory without following a link
(``O_DIRECTORY | O_NOFOLLOW``) and reaches every object through it (``openat``,
``unlinkat``), so a link planted after the check cannot redirect anything either.

The semantics are the single calls', key by key: a read is checked against its trailer
and SHA-256 as :meth:`LocalStore.get` checks it; a delete takes its key's lock stripe,
compares the ETag (from the listing record, else the trailer) and unlinks, and each key
gets its own outcome. Each lock stripe file is opened once per batch (the ``flock`` is
still taken and released around each key); the directory is fsynced once, before the
batch returns (or at the end of a :meth:`~LocalStore.deferred_sync` block).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING

from s3spill.errors import NotFound, PreconditionFailed, StoreError
from s3spill.store import local_record
from s3spill.store.base import ObjectInfo, validate_key

if TYPE_CHECKING:
    from s3spill.store.local import LocalStore

#: Objects up to this size are read whole here; a larger one goes through ``get``.
_SMALL = 1024 * 1024


def _by_directory(keys: Sequence[str]) -> dict[str, list[str]]:
    """Keys grouped by their parent directory, each group in the order given."""
    groups: dict[str, list[str]] = {}
    for key in keys:
        validate_key(key)
        groups.setdefault(key.rpartition("/")[0], []).append(key)
    return groups


def _pairs_by_directory(items: Sequence[tuple[str, str]]) -> dict[str, list[tuple[str, str]]]:
    """``(key, etag)`` pairs grouped by the key's parent directory, each group in the order given."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for key, etag in items:
        validate_key(key)
        groups.setdefault(key.rpartition("/")[0], []).append((key, etag))
    return groups


def _refused(key: str) -> StoreError:
    return StoreError(f"{key}: a symlink inside the store root; refused", key=key)


def _open_directory(store: LocalStore, key: str) -> int | None:
    """The key's parent directory, opened without following a link; ``None`` if absent."""
    path = store._spath(key)  # every directory above the parent: no symlink
    try:
        return os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refused(key) from None
        raise


def _open_at(directory: int, key: str) -> int:
    """The object's file in ``directory``, never through a link; :class:`NotFound` if absent."""
    try:
        return os.open(key.rpartition("/")[2], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK,
                       dir_fd=directory)
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(f"no such object: {key}", key=key) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refused(key) from None
        raise


def _read_all(fd: int, size: int) -> bytes:
    """The whole file, ``size`` the length ``fstat`` gave: one ``read`` when it comes back short
    with exactly that many bytes (a regular file at its end); else read on to an empty one."""
    want = max(size + 1, 65536)
    first = os.read(fd, want)
    if len(first) == size and size < want:
        return first
    parts = [first]
    while parts[-1]:
        parts.append(os.read(fd, want))
    return b"".join(parts)


def get_many(store: LocalStore, keys: Sequence[str]) -> dict[str, bytes]:
    """:meth:`LocalStore.get` of each key, a directory at a time; absent keys left out."""
    out: dict[str, bytes] = {}
    for group in _by_directory(keys).values():
        directory = _open_directory(store, group[0])
        if directory is None:
            continue
        try:
            for key in group:
                try:
                    fd = _open_at(directory, key)
                except NotFound:
                    continue
                try:
                    info = os.fstat(fd)
                    if stat.S_ISDIR(info.st_mode):
                        continue
                    raw = None if info.st_size > _SMALL else _read_all(fd, info.st_size)
                finally:
                    os.close(fd)
                out[key] = store.get(key) if raw is None else store._checked_body(raw, key)
        finally:
            os.close(directory)
    return out


def _etag_at(store: LocalStore, directory: int, key: str) -> str:
    """The object's ETag through ``directory``: its listing record, else its trailer."""
    fd = _open_at(directory, key)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise NotFound(f"no such object: {key}", key=key)
        etag = local_record.etag_of_fd(fd, info) if stat.S_ISREG(info.st_mode) else None
    finally:
        os.close(fd)
    if etag is not None:
        return etag
    return store._etag(store._spath(key), key)  # no usable record: the single call's path


def delete_many_if_match(store: LocalStore, items: Sequence[tuple[str, str]]
                         ) -> dict[str, StoreError | None]:
    """:meth:`LocalStore.delete_if_match` of each ``(key, etag)``; each key's outcome."""
    out: dict[str, StoreError | None] = {}
    stripes: dict[int, int] = {}
    try:
        for parent, group in _pairs_by_directory(items).items():
            directory = _open_directory(store, group[0][0])
            if directory is None:
                out.update((key, NotFound(f"no such object: {key}", key=key)) for key, _ in group)
                continue
            deleted = False
            try:
                for key, etag in group:
                    out[key] = _delete_one(store, directory, key, etag, stripes)
                    deleted = deleted or out[key] is None
            finally:
                try:
                    if deleted:
                        store._synced_later(f"{store._objects}/{parent}" if parent else store._objects,
                                            directory)
                finally:
                    os.close(directory)
    finally:
        for fd in stripes.values():
            os.close(fd)
    return out


def _delete_one(store: LocalStore, directory: int, key: str, etag: str,
                stripes: dict[int, int]) -> StoreError | None:
    stripe = store._stripe(key)
    lock = stripes.get(stripe)
    if lock is None:
        lock = stripes[stripe] = store._open_stripe(stripe)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        if _etag_at(store, directory, key) != etag:
            return PreconditionFailed(f"ETag mismatch on {key}", key=key)
        try:
            os.unlink(key.rpartition("/")[2], dir_fd=directory)
        except FileNotFoundError:
            return NotFound(f"no such object: {key}", key=key)
        return None
    except StoreError as exc:
        return exc
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)


def listed(store: LocalStore, keys: Sequence[str]) -> dict[str, ObjectInfo]:
    """What a listing shows of each key (its listing record, else its trailer), a directory at a time."""
    out: dict[str, ObjectInfo] = {}
    for group in _by_directory(keys).values():
        path = os.path.dirname(store._spath(group[0]))  # every directory above the parent: no symlink
        try:
            mode = os.lstat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISLNK(mode):
            raise _refused(group[0])
        if not stat.S_ISDIR(mode):
            continue
        for key in group:
            info = store._listing_info(f"{path}/{key.rpartition('/')[2]}", key)
            if info is not None:
                out[key] = info
    return out
