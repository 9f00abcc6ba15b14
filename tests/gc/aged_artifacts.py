"""Helpers shared by the GC tests: put artifacts where the artifact store would, age them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from s3spill import keys
from s3spill.errors import NotFound
from s3spill.gc.models import CleanupPolicy
from s3spill.models import ArtifactRetentionClaim
from s3spill.store.base import ObjectStore

LATER = timedelta(days=3)


def put_artifact(store: ObjectStore, session_id: str, body: bytes, *, tool: str = "bash",
                 index: bool = True) -> str:
    """Create one artifact (and its sidecar) at the layout's keys; returns its name."""
    shash = keys.session_hash(session_id)
    name = keys.new_artifact_name(tool)
    store.put_if_absent(keys.artifact_key(shash, name), body)
    if index:
        store.put_if_absent(keys.index_key(shash, name), b'{"lines": []}')
    return name


def later(delta: timedelta = LATER) -> datetime:
    """A clock far enough ahead that everything written now is past the default TTLs."""
    return datetime.now(UTC) + delta


def claim_for(store: ObjectStore, session_id: str, name: str) -> ArtifactRetentionClaim:
    """A retention claim on an artifact as it is stored now (source id + full digest)."""
    shash = keys.session_hash(session_id)
    sha = store.head(keys.artifact_key(shash, name)).sha256
    assert sha is not None
    return ArtifactRetentionClaim(source_id=str(keys.SourceId(shash, name, sha[:16])), sha256=sha)


#: The policy of a GC run that deletes (the tests' default is a dry run).
REAL = CleanupPolicy(dry_run=False)


def exists(store: ObjectStore, key: str) -> bool:
    """Whether ``key`` is in the store (a HEAD that does not raise NotFound)."""
    try:
        store.head(key)
        return True
    except NotFound:
        return False
