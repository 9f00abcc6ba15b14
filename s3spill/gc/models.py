"""The records of garbage collection: policy, scope, object snapshots, apply items, the report.

GC is split into a read-only plan and a later apply, possibly in another process, so
everything the apply needs is a persisted, versioned, frozen record. A plan is JSON
Lines — one header, one line per object, one footer carrying the count and a SHA-256
of every line before it — so a plan of any size is written and applied with bounded
memory, and a truncated or edited plan is refused instead of half-applied. The plan's
own lines (header, entry, footer) are in :mod:`s3spill.gc.planfile`.

The status names are the source design's cleanup table; an apply outcome is one of
``deleted``, ``already_missing``, ``race_detected`` or a ``retained_*`` reason, and
every ``retained_*`` means "not deleted, here is why".
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Literal

from pydantic import Field, model_validator

from s3spill.config import parse_duration as parse_duration  # re-exported: its old home
from s3spill.errors import CleanupRefused, ConfigError
from s3spill.keys import check_session_hash
from s3spill.models import Record

#: The shortest TTL accepted without ``allow_dangerously_short_ttl`` (Iceberg refuses
#: orphan windows under 24 h by default, Delta's VACUUM under 7 days; we refuse < 1 h).
MIN_SAFE_TTL = timedelta(hours=1)

PlanStatus = Literal[
    "retained_referenced",
    "retained_recent",
    "retained_limit",
    "retained_unknown",
    "retained_protocol",
    # Plans written before ``retained_protocol`` used ``denied`` for protocol objects; they
    # still load and apply (as kept), and apply's refusal of a forged entry is ``denied``.
    "denied",
    "retained_corrupt",
    "retained_unverifiable",
    "retained_journal_doubt",
    "retained_no_manifest",
    "missing_referenced",
    "planned_delete",
    # Every object of a purged (sealed) session but its tombstone: erasable, whatever it is —
    # a late write of a writer stalled past the purge (s3spill.fleet.purge) goes here.
    "planned_erase",
]
PLAN_STATUSES: tuple[PlanStatus, ...] = (
    "retained_referenced", "retained_recent", "retained_limit", "retained_unknown", "retained_protocol",
    "denied",
    "retained_corrupt", "retained_unverifiable", "retained_journal_doubt", "retained_no_manifest",
    "missing_referenced", "planned_delete", "planned_erase",
)

ApplyOutcome = Literal[
    "deleted",
    "already_missing",
    "race_detected",
    "retained_referenced",
    "retained_recent",
    "retained_unverifiable",
    "retained_journal_doubt",
    "retained_no_manifest",
    "retained_limit",
    "retained_error",
    "retained_protocol",
    "denied",
    "dry_run",
]

ObjectKind = Literal["artifact", "index", "manifest", "segment", "owner", "gc_plan", "gc_lock", "usage",
                     "erasure", "unknown", "claim", "live", "usage_log"]
DeleteMethod = Literal["if_match", "version_pinned", "unconditional"]

class CleanupPolicy(Record):
    """How old an orphan must be before it may go, and how much one run may delete."""

    kind: Literal["cleanup_policy"] = "cleanup_policy"
    #: An unclaimed artifact is kept this long after the later of its creation and its
    #: session's last activity.
    orphan_ttl: timedelta = timedelta(hours=24)
    #: A session active within this window protects every artifact it holds (the
    #: conversation itself holds pointers that no claim records).
    session_ttl: timedelta = timedelta(hours=24)
    #: Owner tombstones and removed-reference slots are kept at least this long. GC in
    #: this version never deletes protocol objects at all, which satisfies it trivially.
    tombstone_ttl: timedelta = timedelta(days=30)
    #: At most this many artifacts are planned for deletion in one run (the rest are
    #: ``retained_limit``); ``None`` means no limit.
    max_deletions: int | None = Field(default=10_000, ge=0)
    #: A dry run plans and reports but never writes to the store.
    dry_run: bool = True
    #: TTLs under :data:`MIN_SAFE_TTL` delete what a live writer may be about to
    #: reference; they are refused unless this flag is set (tests and demos only).
    allow_dangerously_short_ttl: bool = False

    @model_validator(mode="after")
    def _refuse_short_ttls(self) -> CleanupPolicy:
        for name in ("orphan_ttl", "session_ttl", "tombstone_ttl"):
            value: timedelta = getattr(self, name)
            if value < timedelta(0):
                raise CleanupRefused(f"{name} must not be negative")
            if value < MIN_SAFE_TTL and not self.allow_dangerously_short_ttl:
                raise CleanupRefused(
                    f"{name}={value} is under {MIN_SAFE_TTL}: a short TTL can delete an artifact "
                    "a live writer is about to reference; pass allow_dangerously_short_ttl "
                    "(--allow-dangerously-short-ttl) only for tests and demos"
                )
        return self


def narrowed_policy(configured: CleanupPolicy, planned: CleanupPolicy) -> CleanupPolicy:
    """The policy apply runs under: the one configured at apply time, which a plan may
    only make stricter (longer TTLs, fewer deletions), never looser.

    Why: a plan is a file; whoever can edit it (and recompute an unkeyed digest) could
    otherwise set the TTLs to zero and the danger flag. The danger flag is never taken
    from a plan.
    """
    limits = [n for n in (configured.max_deletions, planned.max_deletions) if n is not None]
    return configured.model_copy(update={
        "orphan_ttl": max(configured.orphan_ttl, planned.orphan_ttl),
        "session_ttl": max(configured.session_ttl, planned.session_ttl),
        "tombstone_ttl": max(configured.tombstone_ttl, planned.tombstone_ttl),
        "max_deletions": min(limits) if limits else None,
    })


class CleanupScope(Record):
    """Which sessions one run covers: one session, all, or shard K of N of the hash space."""

    kind: Literal["cleanup_scope"] = "cleanup_scope"
    #: The hash of the one session in scope (``None``: every session).
    session_hash: str | None = None
    shard_index: int = Field(default=0, ge=0)
    shard_count: int = Field(default=1, ge=1, le=65536)

    @model_validator(mode="after")
    def _check(self) -> CleanupScope:
        if self.session_hash is not None:
            check_session_hash(self.session_hash)
        if self.shard_index >= self.shard_count:
            raise ConfigError(f"shard {self.shard_index}/{self.shard_count}: K must be below N")
        if self.session_hash is not None and self.shard_count != 1:
            raise ConfigError("a single-session scope cannot also be sharded")
        return self

    @classmethod
    def parse_shard(cls, text: str) -> CleanupScope:
        """``K/N`` as given on the command line."""
        match = re.match(r"^\s*(\d+)\s*/\s*(\d+)\s*$", text)
        if not match:
            raise ConfigError(f"bad shard {text!r}: use K/N, e.g. 0/4")
        return cls(shard_index=int(match.group(1)), shard_count=int(match.group(2)))

    def covers_session(self, shash: str) -> bool:
        """Shard K of N holds one contiguous range of the hash space (:mod:`s3spill.gc.shards`)."""
        if self.session_hash is not None:
            return shash == self.session_hash
        lo, hi = hash_bounds(self.shard_index, self.shard_count)
        return lo <= int(shash[:8], 16) < hi


_HASH_SPACE = 1 << 32


def hash_bounds(index: int, count: int) -> tuple[int, int]:
    """Shard ``index`` of ``count`` holds sessions whose hash's first 32 bits are in ``[lo, hi)``:
    ``[ceil(index·2³²/count), ceil((index+1)·2³²/count))``."""
    return -((-index * _HASH_SPACE) // count), -((-(index + 1) * _HASH_SPACE) // count)


class ObjectSnapshot(Record):
    """The identity of one object version as the plan saw it; apply deletes only this."""

    kind: Literal["object_snapshot"] = "object_snapshot"
    key: str
    etag: str
    version_id: str | None = None
    size: int = Field(ge=0)
    last_modified: datetime
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    #: The digest came from the body's commit record, which pins this ETag: apply may then
    #: revalidate from a listing (ETag, size, age) and let ``If-Match`` prove the rest.
    committed: bool = False


class ApplyItem(Record):
    """What apply did with one planned object."""

    kind: Literal["cleanup_apply_item"] = "cleanup_apply_item"
    outcome: ApplyOutcome
    session_hash: str | None
    name: str | None
    object_kind: ObjectKind
    size: int = 0
    reason: str = ""


class CleanupReport(Record):
    """The final JSON report of a plan or an apply: counts and bytes per status, requests."""

    kind: Literal["cleanup_report"] = "cleanup_report"
    phase: Literal["plan", "apply"]
    plan_id: str
    dry_run: bool
    delete_method: DeleteMethod | None = None
    started_at: datetime
    duration_seconds: float
    sessions: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    bytes: dict[str, int] = Field(default_factory=dict)
    requests: dict[str, int] = Field(default_factory=dict)
    #: Objects that were not deleted as planned, and every ``deleted`` one while there
    #: are fewer than ``max_report_items`` (the counts above are always complete).
    items: list[ApplyItem] = Field(default_factory=list)
    items_truncated: bool = False
    #: Condemnations left by an earlier, interrupted run that this run finished or lifted.
    recovered: dict[str, int] = Field(default_factory=dict)
    #: The run was stopped (SIGTERM) before it reached every session; the counts say
    #: exactly what it did, and the next run takes up the rest.
    interrupted: bool = False

    @property
    def races(self) -> int:
        return self.counts.get("race_detected", 0) + self.counts.get("retained_error", 0)

    def summary(self) -> str:
        """One line a person reads: what was (or would be) deleted and what was kept, and why.

        The JSON report stays the interface for scripts; this is what a terminal shows.
        """
        order = {status: i for i, status in enumerate(_SUMMARY_LABELS)}
        parts = []
        for status, n in sorted(self.counts.items(), key=lambda kv: (order.get(kv[0], 99), kv[0])):
            size = self.bytes.get(status)
            label = _SUMMARY_LABELS.get(status, status.replace("_", " "))
            parts.append(f"{label} {n:,}" + (f" ({_human_bytes(size)})" if size else ""))
        mode = " (dry run: nothing deleted)" if self.dry_run and self.phase == "apply" else ""
        done = ", ".join(parts) or "nothing found"
        requests = sum(self.requests.values())
        return (f"gc {self.phase}{mode}: {done}; {self.sessions:,} session(s), {requests:,} requests "
                f"in {self.duration_seconds:.2f} s")

    @property
    def journal_doubts(self) -> int:
        """Objects kept because a session's journal may not be its whole history (alert)."""
        return self.counts.get("retained_journal_doubt", 0)


#: How the summary line names each status, in the order it lists them.
_SUMMARY_LABELS = {
    "deleted": "deleted",
    "planned_delete": "to delete",
    "planned_erase": "to erase (purged session)",
    "dry_run": "would delete",
    "already_missing": "already gone",
    "retained_referenced": "kept referenced",
    "retained_recent": "kept recent",
    "retained_limit": "kept over --max-deletions",
    "retained_unknown": "kept unrecognised",
    "retained_journal_doubt": "kept (journal in doubt)",
    "retained_no_manifest": "kept (session has no manifest yet)",
    "retained_corrupt": "kept corrupt",
    "retained_unverifiable": "kept unverifiable",
    "race_detected": "kept (changed since the plan)",
    "retained_error": "kept (store error)",
    "missing_referenced": "referenced but missing",
    "retained_protocol": "protocol objects kept",
    "denied": "plan entries refused",
}


def _human_bytes(n: int) -> str:
    if n < 1024:
        return f"{n:,} B"
    size = n / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} GiB"
