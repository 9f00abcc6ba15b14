"""What a cleanup plan decides for each object: its one status and the reason.

Why apart from :mod:`.plan`: the plan streams the listing, groups it by session, plans
sessions in parallel and writes entries in order; this module is the judgement itself —
for a session's artifacts, indexes, usage logs and protocol objects, and for objects
outside any session — and nothing here lists the store or writes the plan file. Only
artifacts and their ``.idx`` sidecars can ever be ``planned_delete`` (see
:mod:`s3spill.gc.models`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from s3spill.errors import NotFound, S3SpillError, SessionErased
from s3spill.gc.fence import NO_MANIFEST_REASON, SessionFacts, journal_doubts
from s3spill.gc.models import (
    CleanupPolicy,
    CleanupScope,
    ObjectKind,
    ObjectSnapshot,
    PlanStatus,
)
from s3spill.gc.planfile import PlanLine, PlanWriter, snapshot_json
from s3spill.gc.usage_logs import plan_usage_log
from s3spill.keys import OWNER, SESSIONS, ParsedKey, parse_key
from s3spill.leases.evidence import read_history_evidence
from s3spill.log import get_logger
from s3spill.store.base import ObjectInfo, ObjectStore
from s3spill.store.commit import (
    COMMIT_SIDECAR,
    META_COMMIT,
    SIDECAR_SUFFIX,
    committed_digest,
    committed_digest_of,
    content_info,
    content_info_of,
    defers_digest,
)

log = get_logger("s3spill.gc")

FactsReader = Callable[[ObjectStore, str, Callable[[], datetime]], SessionFacts]


def _name_time(name: str) -> datetime:
    """The creation stamp embedded in an artifact name (``YYYYmmddTHHMMSSZ-…``).

    Parsed by hand: ``strptime`` costs ~20 µs an artifact, a third of a plan's per-artifact work.
    """
    stamp = name[:16]
    if len(stamp) != 16 or stamp[8] != "T" or stamp[15] != "Z" or not (stamp[:8] + stamp[9:15]).isdigit():
        raise ValueError(f"no creation stamp in {name[:40]!r}")
    # ISO 8601's basic form, which fromisoformat reads since 3.11 (one call, not six int()s)
    return datetime.fromisoformat(stamp)


#: Live output is never GC's to delete: its writer deletes segments once they are an
#: ordinary artifact, and a lost one is finished into one (which GC then judges by its TTLs).
_LIVE_REASON = ("live output (state or segment): never deleted by GC; a finished or lost one "
                "becomes an ordinary artifact (s3spill status ID --finish)")


def object_created(name: str, info: ObjectInfo) -> datetime:
    """The later of the object's mtime and the stamp in its name (a clock-skew-safe age)."""
    try:
        return max(info.last_modified, _name_time(name))
    except ValueError:
        return info.last_modified


def snapshot_of(info: ObjectInfo) -> ObjectSnapshot:
    return ObjectSnapshot.model_validate(_snap(info))


def _snap(info: ObjectInfo) -> dict[str, Any]:
    """:func:`snapshot_of` as the plan line stores it (:func:`~s3spill.gc.planfile.snapshot_json`)."""
    return snapshot_json(info.key, info.etag, info.version_id, info.size, info.last_modified, info.sha256,
                         info.sha256 is not None and defers_digest(info))


def session_of_key(key: str) -> str | None:
    """The session hash a key sits under, even when the rest of the key is off-layout."""
    parts = key.split("/")
    if len(parts) >= 3 and f"{parts[0]}/{parts[1]}" in (SESSIONS, OWNER):
        candidate = parts[2]
        if len(candidate) == 32 and all(c in "0123456789abcdef" for c in candidate):
            return candidate
    return None


@dataclass
class SessionGroup:
    """One session's objects from the listing, by what they are."""

    shash: str
    artifacts: dict[str, ObjectInfo] = field(default_factory=dict)
    indexes: dict[str, ObjectInfo] = field(default_factory=dict)
    protocol: list[tuple[ObjectKind, ObjectInfo]] = field(default_factory=list)
    usage: dict[str, ObjectInfo] = field(default_factory=dict)

    def add(self, parsed: ParsedKey, info: ObjectInfo) -> None:
        if parsed.kind == "usage_log":
            self.usage[str(parsed.name)] = info
        elif parsed.kind == "artifact":
            self.artifacts[str(parsed.name)] = info
        elif parsed.kind == "index":
            self.indexes[str(parsed.name)] = info
        else:
            kind: dict[str, ObjectKind] = {"manifest": "manifest", "usage": "usage", "live_state": "live",
                                           "live_segment": "live", "live_table": "live"}
            self.protocol.append((kind.get(parsed.kind, "segment"), info))



#: Store-wide protocol objects outside any session: what each is, for the plan's reason.
_STORE_PROTOCOL: dict[str, tuple[ObjectKind, str]] = {
    "usage": ("usage", "quota counter shard: never deleted by GC"),
    "erasure": ("erasure", "erasure audit record (the seal of a purged session): never deleted by GC"),
    "gc_lock": ("gc_lock", "GC run lock"),
}

class Planner:
    """The status and reason of every object, a session group or a loose object at a time."""

    def __init__(
        self, store: ObjectStore, scope: CleanupScope, policy: CleanupPolicy, writer: PlanWriter,
        now: datetime, facts_reader: FactsReader,
    ) -> None:
        self.store = store
        self.scope = scope
        self.policy = policy
        self.writer = writer
        self.now = now
        self.facts_reader = facts_reader
        self.planned = 0
        self.sessions = 0
        self.heads = 0
        self.index_reads = 0
        self._versioned = store.capabilities().versioning
        self._lock = threading.Lock()
        self._local = threading.local()

    # -- running: sessions on worker threads, writing in listing order on the caller's ---

    def run_session(self, group: SessionGroup) -> list[PlanLine]:
        self._local.out = []
        with self._lock:
            self.sessions += 1
        self.session(group)
        out: list[PlanLine] = self._local.out
        return out

    def run_loose(self, info: ObjectInfo) -> list[PlanLine]:
        self._local.out = []
        self.loose(info)
        out: list[PlanLine] = self._local.out
        return out

    def write(self, entry: PlanLine) -> None:
        """Enforce ``max_deletions`` in plan order (workers only pre-check it), then write."""
        limit = self.policy.max_deletions
        if entry.status == "planned_delete":
            if limit is not None and self.planned >= limit:
                entry = entry.limited(f"max_deletions={limit} reached")
            else:
                self.planned += 1
        self.writer.add(entry)

    @property
    def _full(self) -> bool:
        return self.policy.max_deletions is not None and self.planned >= self.policy.max_deletions

    # -- helpers ---------------------------------------------------------------------

    def _emit(self, status: PlanStatus, kind: ObjectKind, info: ObjectInfo | None, *, shash: str | None,
              name: str | None = None, reason: str = "",
              snapshot: ObjectSnapshot | dict[str, Any] | None = None,
              index: dict[str, Any] | None = None, size: int | None = None) -> None:
        if isinstance(snapshot, ObjectSnapshot):
            snapshot = snapshot.model_dump()
        self._local.out.append(PlanLine(
            status, kind, shash, name, info.key if info else None,
            size if size is not None else (info.size if info else 0), reason, snapshot, index))

    def _head(self, key: str) -> ObjectInfo | None:
        with self._lock:
            self.heads += 1
        try:
            return content_info(self.store, self.store.head(key))
        except NotFound:
            return None

    def _record_key(self, info: ObjectInfo, index: ObjectInfo | None) -> str | None:
        """The commit record :meth:`_content` reads for ``info``'s digest (``None``: none, a HEAD)."""
        if info.sha256 is not None:
            return None
        if defers_digest(info):
            return info.key + SIDECAR_SUFFIX
        return index.key if index is not None and not self._versioned else None

    def _prefetch(self, group: SessionGroup, facts: SessionFacts, published: dict[str, set[str]]
                  ) -> dict[str, bytes | None]:
        """The commit records :meth:`_content` will read for this session, in one batch.

        Why: the local store reads a directory's records with one symlink check
        (:meth:`ObjectStore.get_many`); elsewhere it is the same GETs, one by one. Only the
        records of artifacts that reach the digest (claimed, or old enough and under the
        run's limit) are read; a record that is absent maps to ``None``.
        """
        if self._full:
            return {}
        wanted: list[str] = []
        for name, info in group.artifacts.items():
            if name in published or (not facts.claims.get(name) and self._recent(
                    object_created(name, info), facts, name) is not None):
                continue
            key = self._record_key(info, group.indexes.get(name))
            if key is not None:
                wanted.append(key)
        if not wanted:
            return {}
        found = self.store.get_many(wanted)
        return {key: found.get(key) for key in wanted}

    def _content(self, shash: str, name: str, info: ObjectInfo, index: ObjectInfo | None,
                 records: dict[str, bytes | None] | None = None) -> ObjectInfo | None:
        """``info`` with its content SHA-256, from as few requests as the listing allows.

        Why no HEAD per artifact: a listing already gives key, size, ETag and
        LastModified; what it lacks is the content digest, which an artifact written by
        :class:`~s3spill.artifacts.store.ArtifactStore` keeps in its commit record — so
        one GET of the ``.idx`` (listed, so known to exist) gives the digest and, through
        the body ETag it pins, ties it to the listed body. A local listing carries the
        metadata itself. Only a body the commit record does not vouch for (version 1,
        or not written by the artifact store), or a store that claims versioning (whose
        version id a listing omits), costs the HEAD it always did. Apply revalidates by
        HEAD before it deletes either way; ``None``: the object is gone. ``records``: the
        commit records :meth:`_prefetch` read (a key it holds is not read again).
        """
        key = self._record_key(info, index)
        if info.sha256 is not None or defers_digest(info):  # a listing with metadata (local)
            if records is not None and key in records:
                return content_info_of(info, records[key])
            return content_info(self.store, info)
        if index is not None and not self._versioned:
            with self._lock:
                self.index_reads += 1
            if records is not None and key in records:
                sha = committed_digest_of(records[key], info.etag, shash=shash, name=name)
            else:
                sha = committed_digest(self.store, index.key, info.etag, shash=shash, name=name)
            if sha is not None:
                # Marked as a HEAD of a version 2 body is: its digest is the record's.
                return replace(info, sha256=sha, metadata={META_COMMIT: COMMIT_SIDECAR})
        return self._head(info.key)

    def held(self, kind: ObjectKind, info: ObjectInfo, created: datetime, facts: SessionFacts, *,
             shash: str, name: str, size: int | None = None, index: dict[str, Any] | None = None) -> bool:
        """Record why an unclaimed object stays — too young, or the run's deletion limit reached —
        and say so (True); False when nothing holds it back."""
        why = self._recent(created, facts, name)
        if why is None and not self._full:
            return False
        status: PlanStatus = "retained_recent" if why else "retained_limit"
        self._emit(status, kind, info, shash=shash, name=name, size=size, index=index,
                   reason=why or f"max_deletions={self.policy.max_deletions} reached")
        return True

    def _recent(self, created: datetime, facts: SessionFacts, name: str) -> str | None:
        """Why an unclaimed object is still too young to go, or ``None``."""
        ref = created
        if facts.last_active is not None:
            if self.now - facts.last_active < self.policy.session_ttl:
                return "session active within session_ttl"
            ref = max(ref, facts.last_active)
        for claim in facts.expired_claims.get(name, ()):
            if claim.retain_until is not None:
                ref = max(ref, claim.retain_until)
        if self.now - ref < self.policy.orphan_ttl:
            return "younger than orphan_ttl"
        return None

    # -- per object kind ---------------------------------------------------------------

    def loose(self, info: ObjectInfo) -> None:
        """An object outside any session group: an owner slot, a stored plan, or unknown."""
        parsed = parse_key(info.key)
        if parsed.kind == "owner":
            self._emit("retained_protocol", "owner", info, shash=parsed.session_hash,
                       reason="owner publication slot or tombstone: never deleted by GC")
        elif parsed.kind == "gc_plan":
            self._emit("retained_protocol", "gc_plan", info, shash=None, reason="stored cleanup plan")
        elif parsed.kind in _STORE_PROTOCOL:
            kind, reason = _STORE_PROTOCOL[parsed.kind]
            self._emit("retained_protocol", kind, info, shash=None, reason=reason)
        else:
            self._emit("retained_unknown", "unknown", info, shash=session_of_key(info.key),
                       reason="not an s3spill key (off-layout)")

    def session(self, group: SessionGroup) -> None:
        shash = group.shash
        try:
            facts = self.facts_reader(self.store, shash, lambda: self.now)
            evidence = read_history_evidence(self.store, shash)
            doubts = journal_doubts(facts, evidence)
            if doubts:  # listed after the manifest was read: a publish in between is not lost history
                facts = self.facts_reader(self.store, shash, lambda: self.now)
                doubts = journal_doubts(facts, evidence)
        except SessionErased:
            self._sealed(group)
            return
        except (S3SpillError, ValueError) as exc:
            self._protocol(group)
            reason = f"journal failed verification: {type(exc).__name__}: {exc}"[:300]
            log.warning("gc.plan.unverifiable", session_hash=shash, error=type(exc).__name__)
            self._retain_all(group, "retained_unverifiable", reason)
            return
        self._protocol(group)
        if not facts.exists and not doubts and any(
                self.now - object_created(n, i) < self.policy.session_ttl
                for n, i in group.artifacts.items()):
            self._retain_all(group, "retained_no_manifest", NO_MANIFEST_REASON)
            return
        if doubts:
            reason = ("journal in doubt, every object kept: " + "; ".join(doubts))[:300]
            log.warning("gc.plan.JOURNAL_DOUBT", session_hash=shash, reasons=doubts,
                        artifacts=len(group.artifacts))
            self._retain_all(group, "retained_journal_doubt", reason)
            return
        published = evidence.published_names()
        records = self._prefetch(group, facts, published)
        for name, info in sorted(group.artifacts.items()):
            self._artifact(shash, name, info, group.indexes.get(name), facts, published, records)
        for name, info in sorted(group.indexes.items()):
            if name not in group.artifacts:
                self._orphan_index(shash, name, info, facts, published)
        for name, info in sorted(group.usage.items()):
            plan_usage_log(self, shash, name, info, facts)
        for name, claims in sorted(facts.claims.items()):
            if name not in group.artifacts:
                digests = ",".join(sorted({c.sha256[:16] for c in claims}))
                self._emit("missing_referenced", "claim", None, shash=shash, name=name,
                           reason=f"{len(claims)} active claim(s), digest {digests}, artifact is gone")

    def _protocol(self, group: SessionGroup) -> None:
        for kind, info in group.protocol:
            self._emit("retained_protocol", kind, info, shash=group.shash,
                       reason=_LIVE_REASON if kind == "live"
                       else "protocol object: GC never deletes journal or owner state")

    def _sealed(self, group: SessionGroup) -> None:
        """A purged session (its manifest is the tombstone): everything else in it is erasable.

        Why GC and not only purge: a writer stalled past any bound (a frozen publisher, a late
        segment) can land an object after the purge's final sweep; the next GC run takes it.
        The tombstone stays (it keeps the journal sealed); owner slots and the audit record
        are outside the session's prefix and are kept as always.
        """
        shash = group.shash
        everything: list[tuple[ObjectKind, str | None, ObjectInfo]] = [
            *(("artifact", n, i) for n, i in group.artifacts.items()),
            *(("index", n, i) for n, i in group.indexes.items()),
            *(("usage_log", n, i) for n, i in group.usage.items()),
            *((k, None, i) for k, i in group.protocol)]
        for kind, name, info in sorted(everything, key=lambda t: t[2].key):
            if kind == "manifest":
                self._emit("retained_protocol", kind, info, shash=shash,
                           reason="the tombstone of a purged session: keeps its journal sealed")
            else:
                self._emit("planned_erase", kind, info, shash=shash, name=name,
                           reason="in a purged session: erasable, whatever it is",
                           snapshot=_snap(info))
        log.info("gc.plan.sealed_session", session_hash=shash, erasable=len(everything) - 1)

    def _retain_all(self, group: SessionGroup, status: PlanStatus, reason: str) -> None:
        shash = group.shash
        for name, info in sorted(group.artifacts.items()):
            index = group.indexes.get(name)
            self._emit(status, "artifact", info, shash=shash, name=name, reason=reason,
                       index=_snap(index) if index else None,
                       size=info.size + (index.size if index else 0))
        for name, info in sorted(group.indexes.items()):
            if name not in group.artifacts:
                self._emit(status, "index", info, shash=shash, name=name, reason=reason)
        for name, info in sorted(group.usage.items()):
            self._emit(status, "usage_log", info, shash=shash, name=name, reason=reason)

    def _artifact(self, shash: str, name: str, info: ObjectInfo, index: ObjectInfo | None,
                  facts: SessionFacts, published: dict[str, set[str]],
                  records: dict[str, bytes | None] | None = None) -> None:
        claims = facts.claims.get(name, [])
        size = info.size + (index.size if index else 0)
        idx = _snap(index) if index else None
        if name in published:
            self._emit("retained_referenced", "artifact", info, shash=shash, name=name, size=size,
                       index=idx, reason="an owner slot holds a published reference to it")
            return
        if claims:
            head = self._content(shash, name, info, index, records)
            if head is None:
                digests = ",".join(sorted({c.sha256[:16] for c in claims}))
                self._emit("missing_referenced", "claim", None, shash=shash, name=name,
                           reason=f"{len(claims)} active claim(s), digest {digests}, artifact is gone")
                return
            wrong = sorted({c.sha256[:16] for c in claims if c.sha256 != head.sha256})
            if wrong:
                self._emit("retained_corrupt", "artifact", head, shash=shash, name=name, size=size, index=idx,
                           reason=f"claim digest {','.join(wrong)} does not match the object's "
                                  f"{(head.sha256 or 'unknown')[:16]}")
            else:
                states = ",".join(sorted({c.state for c in claims}))
                self._emit("retained_referenced", "artifact", head, shash=shash, name=name, size=size,
                           index=idx,
                           reason=f"{len(claims)} active claim(s): {states}")
            return
        if self.held("artifact", info, object_created(name, info), facts, shash=shash, name=name,
                     size=size, index=idx):
            return
        head = self._content(shash, name, info, index, records)
        if head is None:
            return
        if head.sha256 is None:
            self._emit("retained_unknown", "artifact", head, shash=shash, name=name, size=size, index=idx,
                       reason="no SHA-256 metadata: not written by s3spill's artifact store")
            return
        self._emit("planned_delete", "artifact", head, shash=shash, name=name, size=size,
                   reason="unclaimed and older than orphan_ttl", snapshot=_snap(head),
                   index=idx)

    def _orphan_index(self, shash: str, name: str, info: ObjectInfo, facts: SessionFacts,
                      published: dict[str, set[str]]) -> None:
        if facts.claims.get(name) or name in published:
            self._emit("retained_referenced", "index", info, shash=shash, name=name,
                       reason="sidecar of a claimed (missing) artifact")
            return
        if self.held("index", info, info.last_modified, facts, shash=shash, name=name):
            return
        self._emit("planned_delete", "index", info, shash=shash, name=name,
                   reason="sidecar without its artifact, older than orphan_ttl", snapshot=_snap(info))
