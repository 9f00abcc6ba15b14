"""A live writer's side of a purge: check for the seal after each write, undo a late one.

Why after, not before: an artifact's name is fresh, so nothing in the store can stop a
writer from creating it, and a check *before* writing races with a purge that seals in
between. A check *after* the write closes that: the purge writes its audit record (the
seal) before it lists what to delete, so a write the listing missed happened after the
seal, and its writer's check sees the seal and deletes what it wrote. The check is one
HEAD on the writer's thread after a write (a write the caller stopped waiting for is
checked too); the spill then degrades instead of pointing at it, and from then on the
sink refuses to store anything for the session ("not saved: … erased on request").

A "not sealed" answer is reused for :data:`CHECK_TTL` seconds, so a busy session pays one
HEAD per two seconds, not per spill. That stays safe because the purge waits longer than
that between its seal and its final sweep: a write the sweep misses completed after it,
so the answer its check reused was read after the seal.
"""

from __future__ import annotations

import threading
import time

from s3spill import keys
from s3spill.errors import NotFound, PreconditionFailed
from s3spill.log import get_logger
from s3spill.models import ArtifactReference
from s3spill.store.base import ObjectStore

__all__ = ["ERASED_REASON", "ErasureCheck"]

log = get_logger("s3spill.fleet.seal")

ERASED_REASON = "not saved: this session was erased on request"
#: Seconds a "not sealed" answer is reused; a purge waits longer before its final sweep.
CHECK_TTL = 2.0


class ErasureCheck:
    """Whether the session was purged; and, if so, the removal of what it wrote since."""

    def __init__(self, store: ObjectStore, session_hash: str, ttl: float = CHECK_TTL) -> None:
        self.store = store
        self.ttl = ttl
        self._clear_until = -1.0
        self.checks = 0
        self.session_hash = session_hash
        self.key = keys.erasure_key(session_hash)
        self._erased = threading.Event()
        self.removed = 0

    @property
    def erased(self) -> bool:
        return self._erased.is_set()

    def sealed(self) -> bool:
        """Is the seal there? One HEAD, its "no" reused for ``ttl`` (fails open: False)."""
        if self.erased:
            return True
        if time.monotonic() < self._clear_until:
            return False
        started = time.monotonic()
        try:
            self.checks += 1
            self.store.head(self.key)
        except NotFound:
            self._clear_until = started + self.ttl  # from before the HEAD: never longer
            return False
        except Exception as exc:  # noqa: BLE001 - fail open: the purge's final sweep is the backstop
            log.warning("spill.erasure_check_failed", session_hash=self.session_hash,
                        error=type(exc).__name__)
            return False
        self._erased.set()
        return True

    def before_write(self) -> bool:
        """Before creating an object of the session: True when it is sealed (write nothing).

        A writer whose role cannot delete (the agent's) then never leaves a late object for
        the purge's sweep or GC to take; the check after the write still closes the race.
        """
        return self.sealed()

    def after_write(self, ref: ArtifactReference) -> bool:
        """After a write: if the seal is there, delete the artifact just written (True)."""
        if not self.sealed():
            return False
        shash, name = ref.session_hash, ref.name
        for key in (keys.index_key(shash, name), keys.artifact_key(shash, name)):
            try:
                self.store.delete_if_match(key, self.store.head(key).etag)
                self.removed += 1
            except (NotFound, PreconditionFailed):
                pass  # the purge (or its sweep) got there first
        log.warning("spill.session_erased", session_hash=self.session_hash, removed=ref.source_id)
        return True
