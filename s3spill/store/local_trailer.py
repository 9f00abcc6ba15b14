"""The local store's object file format: the body, then a JSON trailer, then its length and magic.

Why at the end of the file: body and metadata (ETag, SHA-256, put id, time) change
together with the file's one atomic rename, and a reader can never see a body with
someone else's metadata (see :mod:`s3spill.store.local`). A trailer that does not parse,
misses a field or claims more bytes than the file holds is an :class:`IntegrityError`,
never a ``KeyError`` further up. Split from the store so the store module keeps to its
operations; the listing record that copies part of a trailer is
:mod:`s3spill.store.local_record`.
"""

from __future__ import annotations

import json
import os
import struct
from datetime import datetime
from typing import IO

import orjson

from s3spill.errors import IntegrityError
from s3spill.store.base import ObjectInfo

MAGIC = b"S3SPOBJ1"
TAIL = struct.Struct(">Q8s")  # trailer length, magic
#: A streamed body's SHA-256 lives in its artifact's index, not in the trailer: None there.
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "etag": str, "size": int, "sha256": (str, type(None)), "last_modified": str, "metadata": dict}


def encode(trailer: dict[str, object]) -> bytes:
    """The bytes written after the body: the trailer's JSON and its length and magic."""
    raw = json.dumps(trailer, sort_keys=True).encode()
    return raw + TAIL.pack(len(raw), MAGIC)


def parse(raw: bytes, room: int, key: str) -> dict[str, object]:
    """The trailer's JSON, checked field by field; ``room``: the bytes before it (the body's at most)."""
    try:
        trailer = orjson.loads(raw)  # a ValueError on anything but UTF-8 JSON, as json's
        get = trailer.get if isinstance(trailer, dict) else None
        # _FIELDS, spelled out: a generator over it was a third of a small object's read
        fields_ok = get is not None and (
            isinstance(get("etag"), str) and isinstance(get("size"), int)
            and isinstance(get("sha256"), (str, type(None))) and isinstance(get("last_modified"), str)
            and isinstance(get("metadata"), dict))
        if fields_ok:
            datetime.fromisoformat(trailer["last_modified"])
    except ValueError:  # JSONDecodeError, UnicodeDecodeError, a bad timestamp
        fields_ok = False
    if not fields_ok or trailer["size"] > room:
        raise IntegrityError(f"local object {key} has a damaged trailer")
    return dict(trailer)


def read_from(fh: IO[bytes], key: str) -> dict[str, object]:
    """The trailer of an open object file (three seeks, two reads)."""
    fh.seek(0, os.SEEK_END)
    end = fh.tell()
    if end < TAIL.size:
        raise IntegrityError(f"local object {key} has no trailer")
    fh.seek(end - TAIL.size)
    length, magic = TAIL.unpack(fh.read(TAIL.size))
    if magic != MAGIC or length > end - TAIL.size:
        raise IntegrityError(f"local object {key} has a damaged trailer")
    fh.seek(end - TAIL.size - length)
    return parse(fh.read(length), end - TAIL.size - length, key)


def split(data: bytes, key: str) -> tuple[bytes, dict[str, object]]:
    """A whole object file read into memory: its body and its checked trailer."""
    end = len(data)
    if end < TAIL.size:
        raise IntegrityError(f"local object {key} has no trailer")
    length, magic = TAIL.unpack_from(data, end - TAIL.size)
    if magic != MAGIC or length > end - TAIL.size:
        raise IntegrityError(f"local object {key} has a damaged trailer")
    start = end - TAIL.size - length
    trailer = parse(data[start:end - TAIL.size], start, key)
    return data[:int(trailer["size"])], trailer  # type: ignore[call-overload]


def info(key: str, trailer: dict[str, object]) -> ObjectInfo:
    """What a HEAD says of the object: every trailer field, its metadata whole."""
    meta = trailer.get("metadata") or {}
    assert isinstance(meta, dict)
    return ObjectInfo(
        key=key,
        size=int(trailer["size"]),  # type: ignore[call-overload]
        etag=str(trailer["etag"]),
        last_modified=datetime.fromisoformat(str(trailer["last_modified"])),
        version_id=None,
        sha256=None if trailer.get("sha256") is None else str(trailer["sha256"]),
        metadata={str(k): str(v) for k, v in meta.items()},
    )
