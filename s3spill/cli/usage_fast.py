"""The usage event of a fast read, written as the one-shot recorder writes it, without its imports.

Why here and not in :mod:`s3spill.usage` or :mod:`s3spill.store`: importing either package
loads the store layer's dataclasses and orjson (~30 ms in a fresh process, more than the
whole fast read, :mod:`.read_fast`), and after a page a CLI read writes exactly one small
object: one event's fact line and shown-text line (:func:`s3spill.usage.recorder.part_body`),
under a fresh key (:func:`s3spill.keys.usage_part_key`), created once in the local store
(:meth:`s3spill.store.local.LocalStore.put_if_absent`: a locked temporary, fsynced, with
its trailer and listing record, linked into place, the directory fsynced). This module
does those steps for that one case, with the standard library only; what a reader of the
store sees is the same (tests/cli/test_usage_fast.py reads both back with the store and
the recorder's readers and compares them).

Anything unusual goes the full way (:func:`s3spill.cli.answers.record_usage`) before a byte
is written: a text with no UTF-8 form, a session whose erasure record exists, any error
before the object is linked. After it is linked, a failure is the recorder's "lost" event
(a warning), and a purge that sealed the session meanwhile is undone as the recorder undoes it.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["record_read"]

_SESSIONS = "v1/sessions"  # keys.SESSIONS
_ERASURES = "v1/erasures"  # keys.ERASURES
SHOWN_CAP = 200_000  # usage.events.SHOWN_CAP
SCHEMA_VERSION = 2  # usage.events.SCHEMA_VERSION
_MAGIC = b"S3SPOBJ1"  # local_trailer.MAGIC
_XATTR = "user.s3s"  # local_record.XATTR
_RECORD_VERSION = 0x10  # local_record._VERSION
_LOCK_STRIPES = 64  # local._LOCK_STRIPES
_ID_PREFIX = ""  # this process's event id prefix (usage.events: 6 random bytes in hex), made once
_ids = 0
#: Modules whose presence means a one-shot process counts metrics (telemetry's ``load=False``).
_METRICS = ("prometheus_client", "opentelemetry", "s3spill.telemetry.metrics")


class _FullWay(Exception):
    """Nothing written: the recorder's full path records this event."""


def record_read(root: str, session: str, source_id: str, op: str, text: str,
                facts: dict[str, Any]) -> None:
    """Record what ``s3spill {op}`` printed as one usage part in the local store at ``root``."""
    import time

    at = time.time()
    if any(name in sys.modules for name in _METRICS):
        _full_way(root, session, source_id, op, text, facts)  # metrics to count: the recorder counts
        return
    try:
        shash, body, facts_len, day = _part(session, source_id, op, text, facts, at)
        if os.path.lexists(f"{root}/objects/{_ERASURES}/{shash}.json"):
            raise _FullWay  # a purge sealed the session: the recorder drops the event
        key, etag = _put(root, shash, day, body, facts_len)
    except _FullWay:
        _full_way(root, session, source_id, op, text, facts)
        return
    except Exception as exc:  # noqa: BLE001 - the object was not linked: the full way decides
        if not isinstance(exc, _Linked):
            _full_way(root, session, source_id, op, text, facts)
            return
        _lost(shash, exc.cause)
        return
    if os.path.lexists(f"{root}/objects/{_ERASURES}/{shash}.json"):
        _undo(root, key, etag, shash)


class _Linked(Exception):
    """The object is in place; what failed after it (``cause``) loses the event, as the recorder's."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _configure() -> None:
    """stderr as main() sets it up before a command (WARNING), for a warning said from here on."""
    from s3spill import log

    log.configure(level="WARNING")


def _full_way(root: str, session: str, source_id: str, op: str, text: str, facts: dict[str, Any]) -> None:
    from s3spill.cli.answers import record_usage
    from s3spill.log import get_logger
    from s3spill.store import open_store

    _configure()
    try:
        store = open_store(root, create=False)
    except Exception as exc:  # noqa: BLE001 - gone since the page was read: the page stands
        get_logger("s3spill.cli.artifacts").warning("usage.event_failed", error=type(exc).__name__)
        return
    record_usage(store, session, source_id, op, text, facts)


def _lost(shash: str, exc: BaseException) -> None:
    from s3spill.log import get_logger

    _configure()
    get_logger("s3spill.usage").warning("usage.lost", session_hash=shash, events=1,
                                        error=type(exc).__name__, detail=str(exc)[:200])


def _undo(root: str, key: str, etag: str, shash: str) -> None:
    """A purge sealed the session while the part was written: delete it again (as the recorder)."""
    import contextlib

    from s3spill.errors import NotFound, PreconditionFailed
    from s3spill.log import get_logger
    from s3spill.store import open_store

    _configure()
    with contextlib.suppress(NotFound, PreconditionFailed):
        open_store(root, create=False).delete_if_match(key, etag)
    get_logger("s3spill.usage").info("usage.erased_session", session_hash=shash)


# -- the event ---------------------------------------------------------------------------------

def _stamp(at: float) -> tuple[str, str]:
    """(event id, ISO time with milliseconds) as ``usage.events._stamp`` makes them."""
    import time

    global _ID_PREFIX, _ids
    if not _ID_PREFIX:
        _ID_PREFIX = os.urandom(6).hex()
    eid = f"{_ID_PREFIX}{_ids:010x}"
    _ids += 1
    whole = int(at)
    return eid, time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(whole)) + f"{int((at - whole) * 1000):03d}Z"


def _dumps(value: dict[str, Any]) -> bytes:
    """orjson's compact bytes for a dict of str, int, bool and None (tests compare the two)."""
    from s3spill.stdlib_light import dumps

    ascii_only = all(type(v) is not str or (v.isascii() and "\x7f" not in v) for v in value.values())
    try:  # for such values both spellings are one: json's ASCII encoder is the faster (~0.7 ms a page)
        return (dumps(value, ensure_ascii=ascii_only, separators=(",", ":"), allow_nan=False)
                + "\n").encode("utf-8")
    except UnicodeEncodeError:
        raise _FullWay from None  # a lone surrogate: orjson refuses it, the recorder loses the event


def _utf8_len(text: str) -> int:
    """As ``usage.events.utf8_len``."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _part(session: str, source_id: str, op: str, text: str, facts: dict[str, Any],
          at: float) -> tuple[str, tuple[bytes, ...], int, str]:
    """(session hash, the part's NDJSON in pieces, the length of its fact line, its day) for one event."""
    from s3spill.stdlib_light import sha256

    shash = sha256(b"s3spill-session\0" + session.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    name = source_id.strip().split(":")[2]
    eid, ts = _stamp(at)
    shown = text[:SHOWN_CAP]
    row: dict[str, Any] = {"session": shash, "op": op, "tool": name.split("-", 2)[2],
                           "shown_chars": len(text),
                           "shown_bytes": _utf8_len(text),
                           "shown_truncated": len(shown) < len(text), "artifact": name,
                           "source_id": source_id.strip(), "via": f"s3spill {op}", "spilled": False}
    if op == "read":
        row["raw_bytes"] = int(facts.get("size_bytes") or 0)
        for field in ("first_line", "last_line", "total_lines"):
            if facts.get(field) is not None:
                row[field] = facts[field]
    else:
        row["raw_bytes"] = 0
        if facts.get("total_matches") is not None:
            row["matches"] = facts["total_matches"]
    row["masked"], row["id"], row["ts"], row["v"] = 0, eid, ts, SCHEMA_VERSION
    fact = _dumps(row)
    return shash, (fact, *_shown_line(eid, shown)) if shown else (fact,), len(fact), ts[:10]


def _shown_line(eid: str, shown: str) -> tuple[bytes, bytes, bytes]:
    """:func:`_dumps` of ``{"id": eid, "shown": shown}`` in three pieces, the text escaped and encoded
    once: it is not copied again to be joined, ended and put after the fact line (each copy of a
    2,000-line page, ~200 KB, was ~0.3 ms of a fresh process, most of it page faults)."""
    from s3spill.stdlib_light import json_string

    ascii_only = shown.isascii() and "\x7f" not in shown  # the id is hex digits: as _dumps decides
    try:
        return (f'{{"id":{json_string(eid)},"shown":'.encode(),
                json_string(shown, ensure_ascii=ascii_only).encode("utf-8"), b"}\n")
    except UnicodeEncodeError:
        raise _FullWay from None  # as _dumps


# -- the local store's create-once write -------------------------------------------------------

def _put(root: str, shash: str, day: str, body: tuple[bytes, ...], facts_len: int) -> tuple[str, str]:
    """``put_if_absent`` of ``body`` (its pieces, in order) under a fresh part key (three names at
    most, as the recorder)."""
    import time

    from s3spill.stdlib_light import sha256

    objects = f"{root}/objects"
    tmp, trailer, fd = _temporary(root, body)
    try:
        for _ in range(3):
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            key = f"{_SESSIONS}/{shash}/usage/dt={day}/{stamp}-{os.urandom(6).hex()}-f{facts_len}.ndjson"
            _make_parents(objects, key)
            stripe = int.from_bytes(sha256(key.encode()).digest()[:2], "big") % _LOCK_STRIPES
            if _link(root, objects, key, tmp, stripe):
                return key, trailer["etag"]
        raise _FullWay  # no free name after three tries: the recorder's own error path
    finally:
        _discard(tmp, fd)


def _temporary(root: str, body: tuple[bytes, ...]) -> tuple[str, dict[str, Any], int]:
    """The body (its pieces, in order) and its trailer in a fresh locked temporary, its record
    attached, fsynced."""
    import fcntl

    from s3spill.stdlib_light import dumps, sha256

    tmp = f"{root}/tmp/{os.urandom(12).hex()}.part"  # noqa: S108 - the store's own tmp/, 0700
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        digest = sha256()
        for piece in body:
            digest.update(piece)
        sha, size = digest.hexdigest(), sum(map(len, body))
        put_id = os.urandom(16).hex()
        last_modified, micros = _now()
        trailer: dict[str, Any] = {
            "etag": f'"{sha256((sha + put_id).encode()).hexdigest()[:32]}"', "size": size,
            "sha256": sha, "last_modified": last_modified, "content_type": "application/x-ndjson",
            "metadata": {"s3spill-sha256": sha, "s3spill-put-id": put_id}}
        raw = dumps(trailer, sort_keys=True).encode()
        with os.fdopen(fd, "wb", closefd=False) as fh:
            for piece in body:
                fh.write(piece)
            fh.write(raw + len(raw).to_bytes(8, "big") + _MAGIC)  # local_trailer's ">Q8s"
            fh.flush()
            file = os.fstat(fd)
            record = _record(bytes.fromhex(trailer["etag"][1:-1]), size, file.st_size, file.st_mtime_ns,
                             micros)
            try:
                os.setxattr(fd, _XATTR, record)
            except OSError as exc:
                if exc.errno not in _no_record():
                    raise  # as local_record.write: only a refusal of attributes is not an error
            os.fsync(fd)
    except BaseException:
        _discard(tmp, fd)
        raise
    return tmp, trailer, fd


def _record(etag: bytes, size: int, file_size: int, mtime_ns: int, micros: int) -> bytes:
    """local_record's ``struct.pack(">B16sQQqq", ...)``, without ``struct`` (~0.8 ms of imports)."""
    if len(etag) != 16:
        raise _FullWay  # never: the etag is 32 hex digits
    return (bytes((_RECORD_VERSION,)) + etag + size.to_bytes(8, "big") + file_size.to_bytes(8, "big")
            + mtime_ns.to_bytes(8, "big", signed=True) + micros.to_bytes(8, "big", signed=True))


def _discard(tmp: str, fd: int) -> None:
    try:  # noqa: SIM105 - contextlib is one more import for a process that needs none
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    os.close(fd)


def _now() -> tuple[str, int]:
    """Now, in UTC, as ``datetime.now(UTC)`` reads it for the local store's put: its
    ``isoformat()`` and its microseconds since the epoch (:func:`_stamped` of the clock)."""
    import time

    return _stamped(time.time_ns())


def _stamped(ns: int) -> tuple[str, int]:
    """``datetime.now(UTC)`` when the system clock reads ``ns``: its ``isoformat()`` and its
    microseconds since the epoch (as local_record's ``(stamp - _EPOCH) // _US``). ``datetime``
    floors the clock to microseconds and writes no fraction for a whole second; this is that,
    without the ``_datetime`` extension, whose load was ~0.8 ms of a fresh read's process."""
    import time

    micros = ns // 1000
    seconds, us = divmod(micros, 1_000_000)
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{whole}.{us:06d}+00:00" if us else f"{whole}+00:00", micros


def _no_record() -> frozenset[int]:
    """The errors local_record reads as "no attributes here" (a test compares the two sets)."""
    import errno

    return frozenset({errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM, errno.EACCES,
                      errno.E2BIG, errno.ERANGE})


def _make_parents(objects: str, key: str) -> None:
    """The key's directories, each created 0700; a symlink or an object on the way: the full way."""
    import stat

    current = objects
    if stat.S_ISLNK(os.lstat(objects).st_mode):
        raise _FullWay
    for part in key.split("/")[:-1]:
        current = f"{current}/{part}"
        try:
            os.mkdir(current, 0o700)
            continue
        except FileExistsError:
            pass
        if not stat.S_ISDIR(os.lstat(current).st_mode):
            raise _FullWay


def _link(root: str, objects: str, key: str, tmp: str, stripe: int) -> bool:
    """Link the temporary into place under the key's lock stripe; False when the name is taken."""
    import fcntl

    lock = os.open(f"{root}/locks/{stripe:02d}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            os.link(tmp, f"{objects}/{key}")
        except FileExistsError:
            return False
        try:
            parent = os.open(os.path.dirname(f"{objects}/{key}"), os.O_RDONLY)
            try:
                os.fsync(parent)
            finally:
                os.close(parent)
        except OSError as exc:
            raise _Linked(exc) from None
        return True
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)
