"""What GC reads from, and writes to, a session's lease journal — and nothing more.

Why a narrow adapter: GC must decide on exactly the facts that fence it (active
claims by artifact, the session's last activity, GC's own condemnations) and on
nothing it could misread. Keeping that projection here means the planner and the
applier never touch the journal's record format, and a journal that fails
verification surfaces as one typed error that GC turns into "retain everything".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from s3spill.errors import JournalError, NotFound
from s3spill.keys import manifest_key
from s3spill.store.base import ObjectStore


@dataclass(frozen=True)
class ClaimFact:
    """One claim that protects (or once protected) an artifact, by artifact name."""

    name: str
    sha256: str
    state: Literal["pending", "committed"]
    retain_until: datetime | None = None


@dataclass(frozen=True)
class CondemnFact:
    """An artifact GC condemned and has neither deleted nor lifted yet (an interrupted run)."""

    name: str
    sha256: str
    etag: str
    size: int
    version_id: str | None
    run_id: str


@dataclass(frozen=True)
class SessionFacts:
    """The journal's view of one session, as far as GC is concerned."""

    #: Active claims (pending, or committed and not expired) by artifact name.
    claims: dict[str, list[ClaimFact]] = field(default_factory=dict)
    #: Committed claims whose ``retain_until`` has passed: they no longer protect, but
    #: the orphan TTL then counts from their expiry.
    expired_claims: dict[str, list[ClaimFact]] = field(default_factory=dict)
    last_active: datetime | None = None
    condemned: dict[str, CondemnFact] = field(default_factory=dict)
    deleted: frozenset[str] = frozenset()
    #: False when the session has no manifest at all (no journal has ever been written).
    exists: bool = False


def read_session_facts(store: ObjectStore, shash: str) -> SessionFacts:
    """Fold and verify the session's journal; :class:`JournalError` if it cannot be trusted."""
    try:
        store.head(manifest_key(shash))
    except NotFound:
        return SessionFacts()
    raise JournalError("this build of s3spill cannot read lease journals yet; retaining the session")
