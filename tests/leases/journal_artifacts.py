"""Shared helpers for the lease-journal tests: real artifacts in a real store."""

from __future__ import annotations

import hashlib
import os
from datetime import datetime

from s3spill import keys
from s3spill.config import TransferConfig
from s3spill.keys import SourceId
from s3spill.leases.references import memory_reference_for
from s3spill.models import ArtifactMemoryReference, ArtifactRetentionClaim
from s3spill.store.base import ObjectStore
from tests.conftest import TEST_CONFIG

SESSION = "journal-test-session"
#: Tiny manifest bounds so that segments, compaction and their races run in every test.
JCFG: TransferConfig = TEST_CONFIG.model_copy(
    update={"journal_max_recent_records": 12, "journal_segment_records": 8, "journal_cas_attempts": 60})


def put_artifact(store: ObjectStore, session_id: str = SESSION, data: bytes | None = None,
                 *, retain_until: datetime | None = None
                 ) -> tuple[ArtifactRetentionClaim, ArtifactMemoryReference]:
    """Store an artifact the way the artifact store does; its claim and memory reference."""
    shash = keys.session_hash(session_id)
    name = keys.new_artifact_name("bash")
    data = data if data is not None else os.urandom(64)
    store.put_if_absent(keys.artifact_key(shash, name), data)
    sid = SourceId(shash, name, hashlib.sha256(data).hexdigest()[:16])
    ref = memory_reference_for(store, str(sid))
    return ArtifactRetentionClaim.from_memory_reference(ref, retain_until=retain_until), ref
