"""A local artifact read as the reader reads it, for the CLI's fast read, with the standard library.

Split from :mod:`.read_fast` (which parses the call and builds the answer) because it is
one job: the local store's object files (:mod:`s3spill.store.local`, its trailer and the
checks it makes on each read: no symlink on the way, a regular file, a trailer that
parses, a whole small object's SHA-256) and the artifact's index, checked as
:class:`~s3spill.artifacts.reader.ArtifactReader` checks it against its body's HEAD (the
commit marker, the ETag the index commits, the stored size, the session, name and digest
prefix), then each chunk decoded and verified by :mod:`s3spill.artifacts.chunks`. Any
doubt raises :class:`Unsure` (or any error): the full path then reads, and says why.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["Index", "Unsure", "chunk_reader", "open_artifact"]

_SESSIONS = "v1/sessions"  # keys.SESSIONS (a test checks the keys this path derives)
_HEX = frozenset("0123456789abcdef")
_DIGITS = frozenset("0123456789")
_NAME = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
#: The local store's object file: ... body, trailer JSON, its length (8 bytes) and magic.
_MAGIC = b"S3SPOBJ1"
_TAIL = 16
_SMALL = 1024 * 1024  # LocalStore reads objects up to this size whole
_TRAILER = {"etag": str, "size": int, "last_modified": str, "metadata": dict}


class Unsure(Exception):
    """The fast path does not answer this call: the full CLI does."""


def open_artifact(root: str, session: str, sid: str) -> tuple[Any, dict[str, Any], Index]:
    """The open body file of ``sid``, its trailer and its checked index (the caller closes the file)."""
    from s3spill.stdlib_light import sha256

    shash, name = _source(sid)
    if sha256(b"s3spill-session\0" + session.encode("utf-8")).hexdigest()[:32] != shash:
        raise Unsure  # another session's id: the full path says whose
    objects = _store_objects(root)
    key = f"{_SESSIONS}/{shash}/artifacts/{name}"
    body = _open(objects, key)
    try:
        trailer = _trailer_at_end(body)
        return body, trailer, _index(_whole_object(objects, key + ".idx"), trailer, shash, name, sid)
    except BaseException:
        body.close()
        raise


def _source(sid: str) -> tuple[str, str]:
    """(session hash, name) of a source id in its exact canonical form (anything else: the full path)."""
    parts = sid.split(":")
    if len(parts) != 4 or parts[0] != "artifact" or not (
            len(parts[1]) == 32 and set(parts[1]) <= _HEX and len(parts[3]) == 16 and set(parts[3]) <= _HEX
            and _artifact_name(parts[2])):
        raise Unsure
    return parts[1], parts[2]


def _artifact_name(name: str) -> bool:
    """Does ``name`` fully match ``[0-9]{8}T[0-9]{6}Z-[0-9a-f]{12}-[a-z0-9_-]{1,24}`` (an artifact's
    name as ``keys`` makes it)? Checked by position, not by a regular expression's compile (~0.25 ms)."""
    return (31 <= len(name) <= 54 and set(name[:8]) <= _DIGITS and name[8] == "T"
            and set(name[9:15]) <= _DIGITS and name[15:17] == "Z-" and set(name[17:29]) <= _HEX
            and name[29] == "-" and set(name[30:]) <= _NAME)


def _store_objects(root: str) -> str:
    """``root/objects`` of an existing store whose three directories are real ones (as it opens)."""
    import stat

    if not os.path.isdir(root):
        raise Unsure
    for sub in ("objects", "tmp", "locks"):
        if not stat.S_ISDIR(os.lstat(f"{root}/{sub}").st_mode):
            raise Unsure  # a symlink, or missing (the full path makes it, or refuses)
    return f"{root}/objects"


def _open(objects: str, key: str) -> Any:
    """The object file of ``key``, every directory on the way a real one, never through a link."""
    import stat

    current = objects
    for part in key.split("/")[:-1]:
        current = f"{current}/{part}"
        if not stat.S_ISDIR(os.lstat(current).st_mode):
            raise Unsure
    fd = os.open(f"{objects}/{key}", os.O_RDONLY | os.O_NOFOLLOW)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unsure
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _loads(raw: bytes) -> Any:
    """JSON as orjson reads it, or Unsure: UTF-8 only, and nothing two parsers might read apart
    (a surrogate escape, which orjson refuses alone; a float, an integer past 64 bits, NaN, a
    repeated key). Other escapes (``\\u001b`` of a coloured first line) read the same in both."""
    from s3spill.stdlib_light import loads

    text = raw.decode("utf-8")
    if "\\u" in text:
        import re

        if re.search(r"\\u[dD][89a-fA-F]", text):  # also after an escaped backslash: Unsure, safe
            raise Unsure

    def refuse(_: str) -> Any:
        raise Unsure

    def integer(digits: str) -> int:
        if len(digits) > 18:
            raise Unsure
        return int(digits)

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            raise Unsure
        return out

    return loads(text, parse_float=refuse, parse_int=integer, parse_constant=refuse,
                      object_pairs_hook=unique)


def _trailer(raw: bytes, room: int) -> dict[str, Any]:
    """The local store's trailer, checked as it checks it (stricter on types)."""
    trailer = _loads(raw)
    if type(trailer) is not dict or any(type(trailer.get(f)) is not kind for f, kind in _TRAILER.items()):
        raise Unsure
    if not (trailer.get("sha256") is None or type(trailer["sha256"]) is str) or trailer["size"] > room:
        raise Unsure
    if any(type(k) is not str or type(v) is not str for k, v in trailer["metadata"].items()):
        raise Unsure
    from s3spill.artifacts.index_fields import check_iso

    check_iso(trailer["last_modified"])  # a ValueError where the store's check raises one
    return trailer


def _trailer_at_end(fh: Any) -> dict[str, Any]:
    """The trailer of an open object file (as ``local_trailer.read_from``)."""
    fh.seek(0, os.SEEK_END)
    end = fh.tell()
    if end < _TAIL:
        raise Unsure
    fh.seek(end - _TAIL)
    tail = fh.read(_TAIL)
    length = int.from_bytes(tail[:8], "big")
    if tail[8:] != _MAGIC or length > end - _TAIL:
        raise Unsure
    fh.seek(end - _TAIL - length)
    return _trailer(fh.read(length), end - _TAIL - length)


def _whole_object(objects: str, key: str) -> bytes:
    """A small object's body, its trailer and SHA-256 checked (as ``LocalStore.get``)."""
    from s3spill.stdlib_light import sha256

    with _open(objects, key) as fh:
        data: bytes = fh.read(_SMALL + 1)
    if len(data) > _SMALL or len(data) < _TAIL:
        raise Unsure
    length = int.from_bytes(data[-_TAIL:-8], "big")
    if data[-8:] != _MAGIC or length > len(data) - _TAIL:
        raise Unsure
    start = len(data) - _TAIL - length
    trailer = _trailer(data[start:-_TAIL], start)
    body = data[:trailer["size"]]
    if len(body) != trailer["size"] or trailer["sha256"] is None or (
            sha256(body).hexdigest() != trailer["sha256"]):
        raise Unsure
    return body


class Index:
    """What a page needs of a checked index (:class:`~s3spill.artifacts.pagefill.PageIndex`)."""

    def __init__(self, v: dict[str, Any]) -> None:
        self.line_count: int = v["line_count"]
        self.size_bytes: int = v["size_bytes"]
        self.chunk_size: int = v["chunk_size"]
        self.chunk_count = len(v["chunk_sha256"])
        self.chunk_carry: tuple[int, ...] = v["chunk_carry"]
        self.chunk_lastline_units: tuple[int, ...] = v["chunk_lastline_units"]
        self.chunk_sha256: tuple[str, ...] = v["chunk_sha256"]
        self.chunk_newlines: tuple[int, ...] = v["chunk_newlines"]
        self.codec: str = v["codec"]
        self.newlines_before = _sums(v["chunk_newlines"])
        self.units_before = _sums(v["chunk_units"])
        self.stored_before = _sums(v["chunk_stored"])
        self.sha256: str = v["sha256"]
        self.chunk_records: tuple[int, ...] = v["chunk_records"]


def _sums(values: tuple[int, ...]) -> tuple[int, ...]:
    out = [0]
    for value in values:
        out.append(out[-1] + value)
    return tuple(out)


def _index(raw: bytes, body: dict[str, Any], shash: str, name: str, sid: str) -> Index:
    """The index, checked as the reader checks it against its body's trailer (a HEAD)."""
    from s3spill.artifacts.index_fields import FIELDS, check_consistent, check_names, check_values

    meta = body["metadata"]
    if meta.get("s3spill-index-sha256") or meta.get("s3spill-commit") != "sidecar":
        raise Unsure  # version 1 (the body pins its index), or no commit marker
    data = _loads(raw)
    if type(data) is not dict:
        raise Unsure
    check_names(data)
    values = check_values({field: data.get(field, default) for field, default in FIELDS.items()}, times=False)
    check_consistent(values)
    if (values["schema_version"] < 2 or values["body_etag"] != body["etag"]
            or sum(values["chunk_stored"]) != body["size"] or values["session_hash"] != shash
            or values["name"] != name or not values["sha256"].startswith(sid.rsplit(":", 1)[1])
            or values["output_kind"] == "binary"):
        raise Unsure
    return Index(values)


def chunk_reader(index: Index, fh: Any, trailer: dict[str, Any], sid: str) -> Callable[[int], bytes]:
    """``read(k)``: chunk ``k`` from its frame, decoded and verified (as the reader's ``_raw_chunk``)."""
    from s3spill.artifacts.chunks import check_chunk, decompress_frame

    size = trailer["size"]

    def read(k: int) -> bytes:
        start, end = index.stored_before[k], min(index.stored_before[k + 1], size)
        fh.seek(start)
        frame: bytes = fh.read(end - start)
        if len(frame) != end - start:
            raise Unsure  # a truncated object
        first = k * index.chunk_size
        span = (first, min(first + index.chunk_size, index.size_bytes))
        if index.codec == "zstd":
            frame = decompress_frame(frame, span, k, sid)
        return check_chunk(frame, k, span, index.chunk_sha256[k], index.chunk_newlines[k], sid)

    return read
