"""Where an object's content digest lives when it could not be written with the object.

Why this exists: an artifact body is streamed to the store as the tool's output arrives
(no spool, no second pass), so its full SHA-256 is not known when S3 fixes the object's
metadata (at PutObject / CreateMultipartUpload). The digest goes into the body's
*commit record* instead: the create-once sidecar ``<key>.idx`` written after the body,
which also pins the body's ETag. Such a body says so in its metadata
(:data:`META_COMMIT`), and every layer that checks a digest against the store (the
lease journal, memory references, GC) asks :func:`content_info` rather than trusting
:attr:`ObjectInfo.sha256`, which for these bodies is absent or the digest of the
stored (compressed) bytes.

A body whose commit record is missing, unreadable or pins another ETag has *no* known
content digest (``sha256=None``): callers that need one refuse or retain, never guess.
"""

from __future__ import annotations

import re

import orjson

from s3spill.errors import NotFound
from s3spill.store.base import ObjectInfo, ObjectStore

#: Metadata key on a body whose content digest lives in its sidecar commit record.
META_COMMIT = "s3spill-commit"
COMMIT_SIDECAR = "sidecar"
#: The commit record's key is the body's key plus this suffix (``keys.INDEX_SUFFIX``).
SIDECAR_SUFFIX = ".idx"
_HEX64 = re.compile(r"^[0-9a-f]{64}\Z")


def defers_digest(info: ObjectInfo) -> bool:
    """The object keeps its content digest in a sidecar commit record."""
    return info.metadata.get(META_COMMIT) == COMMIT_SIDECAR


def committed_digest(store: ObjectStore, index_key: str, body_etag: str, *, shash: str | None = None,
                     name: str | None = None) -> str | None:
    """The content SHA-256 a commit record gives the body with ``body_etag``, or ``None``.

    For a reader that knows the body's ETag from a listing and not its metadata (GC's
    plan): a version 2 record names the ETag of the body it commits, so a match ties the
    digest to that body without a HEAD. ``None`` when the record is missing, does not
    parse, is not version 2, names another ETag (or, when given, another session or
    name): the caller falls back to a HEAD, never guesses.
    """
    try:
        raw = store.get(index_key)
    except NotFound:
        return None
    return committed_digest_of(raw, body_etag, shash=shash, name=name)


def committed_digest_of(raw: bytes | None, body_etag: str, *, shash: str | None = None,
                        name: str | None = None) -> str | None:
    """:func:`committed_digest` of a record already read (``None``: there is none)."""
    if raw is None:
        return None
    try:
        record = orjson.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    sha = record.get("sha256")
    version = record.get("schema_version")
    if (not isinstance(sha, str) or not _HEX64.match(sha) or not isinstance(version, int)
            or version < 2 or record.get("kind") != "artifact_index"
            or record.get("body_etag") != body_etag
            or (shash is not None and record.get("session_hash") != shash)
            or (name is not None and record.get("name") != name)):
        return None
    return sha


def content_info(store: ObjectStore, info: ObjectInfo) -> ObjectInfo:
    """``info`` (from a HEAD) with ``sha256`` the content SHA-256, wherever it is kept."""
    if not defers_digest(info):
        return info
    try:
        raw = store.get(info.key + SIDECAR_SUFFIX)
    except NotFound:
        return info.with_sha256(None)
    return content_info_of(info, raw)


def content_info_of(info: ObjectInfo, raw: bytes | None) -> ObjectInfo:
    """:func:`content_info` of a body that defers its digest, its record already read
    (``None``: it has none)."""
    if raw is None:
        return info.with_sha256(None)
    try:
        record = orjson.loads(raw)
    except ValueError:
        return info.with_sha256(None)
    sha = record.get("sha256") if isinstance(record, dict) else None
    if not isinstance(sha, str) or not _HEX64.match(sha) or record.get("body_etag") != info.etag:
        return info.with_sha256(None)
    return info.with_sha256(sha)
