"""The tombstone a purge leaves at a session's manifest key, so the journal stays sealed.

Why a tombstone and not a deletion: every journal write starts from the manifest, and
the first write of a session *creates* it (``If-None-Match: *``). A deleted manifest
would let a live writer's next liveness mark, or a stalled publisher's COMMITTED, start
the session again. A tombstone holds the key for good: creating fails, a compare-and-swap
reads it first, and :class:`~s3spill.errors.SessionErased` is all any writer gets. It
carries no content: the session's hash, when, and where the audit record is.

Here, not with the purge in :mod:`s3spill.fleet`, because the journal reader
(:mod:`s3spill.leases.chain`) must recognise it and ``leases`` sits below ``fleet``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import orjson
from pydantic import Field, ValidationError

from s3spill.models import Record

__all__ = ["ErasedSession", "read_tombstone"]


class ErasedSession(Record):
    """The body of a purged session's manifest key."""

    kind: Literal["erased_session"] = "erased_session"
    session_hash: str = Field(pattern=r"^[0-9a-f]{32}$")
    erased_at: datetime
    #: The audit record (``v1/erasures/<session_hash>.json``), relative to the store root.
    audit_key: str


def read_tombstone(body: bytes) -> ErasedSession | None:
    """The tombstone ``body`` is, or None when it is anything else (a manifest)."""
    if b"erased_session" not in body[:256]:
        return None
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict) or doc.get("kind") != "erased_session":
        return None
    try:
        return ErasedSession.model_validate(doc)
    except ValidationError:
        return None
