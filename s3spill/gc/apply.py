"""``apply_cleanup``: the destructive half of GC, fenced by each session's journal.

Why this order, per session: (1) re-read the journal — the plan is old news; (2)
append ``CONDEMNED`` for the still-unclaimed artifacts in one compare-and-swap on the
session's manifest — this is the fence: a concurrent ``prepare`` either landed first
(the CAS sees its claim and the artifact is retained) or sees the condemnation and
refuses; (3) HEAD each condemned artifact and compare it with the plan's snapshot
(ETag, size, SHA-256, version); (4) delete it conditionally (``If-Match`` the ETag,
or the validated ``VersionId``); (5) append ``DELETED`` — or ``LIFTED`` for what
changed under us. A run killed anywhere leaves condemnations without ``DELETED``;
the next run finds them first and finishes (object gone → ``DELETED``; unchanged and
unclaimed → delete) or lifts them. Any doubt retains: an unreadable journal, a
changed object, a store error. An unknown delete outcome stays condemned, never
lifted, because a late delete could land after a lifted artifact was claimed again.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from s3spill import failpoints, keys
from s3spill.config import TransferConfig
from s3spill.errors import (
    CleanupRefused,
    InvalidKey,
    JournalError,
    NotFound,
    PreconditionFailed,
    S3SpillError,
    StoreError,
    UnsupportedOperation,
)
from s3spill.gc.fence import (
    CondemnFact,
    GcLedger,
    LedgerFactory,
    SessionFacts,
    journal_doubts,
    open_ledger,
)
from s3spill.gc.metered_store import MeteredStore
from s3spill.gc.models import (
    ApplyItem,
    ApplyOutcome,
    CleanupPolicy,
    CleanupReport,
    DeleteMethod,
    ObjectSnapshot,
    narrowed_policy,
)
from s3spill.gc.plan import object_created
from s3spill.gc.planfile import CleanupPlan, PlanEntry
from s3spill.leases.evidence import read_history_evidence
from s3spill.log import get_logger
from s3spill.store.base import ObjectInfo, ObjectStore, StoreCapabilities
from s3spill.store.commit import defers_digest
from s3spill.store.conditional_writes import require_conditional_writes

log = get_logger("s3spill.gc")

FP_AFTER_CONDEMN = failpoints.declare(
    "gc.after_condemn", "CONDEMNED is durable; nothing deleted yet")
FP_AFTER_DELETE = failpoints.declare(
    "gc.after_delete", "artifacts deleted; DELETED not yet appended")


def choose_delete_method(caps: StoreCapabilities, *, force_unverified: bool = False) -> DeleteMethod:
    """The safest delete this store honours; refuse when none can be trusted.

    ``If-Match`` deletes first (AWS S3); else a version-pinned delete on a versioned
    bucket (MinIO ignores conditional deletes but deletes exactly one version);
    batched conditional DeleteObjects is not used yet. With neither, a replaced
    object could be deleted, so apply refuses unless ``force_unverified``.
    """
    if caps.conditional_delete:
        return "if_match"
    if caps.versioning and caps.versioned_delete:
        return "version_pinned"
    if force_unverified:
        log.warning("gc.apply.UNVERIFIED_DELETES", reason="store honours neither conditional nor "
                    "versioned deletes; an object replaced between HEAD and DELETE would be lost")
        return "unconditional"
    raise CleanupRefused(
        "the store honours neither conditional deletes (If-Match on DeleteObject) nor "
        "version-pinned deletes (bucket versioning is off): a replaced artifact could be deleted. "
        "Enable bucket versioning, or pass --force-unverified-deletes if you accept that risk"
    )


def _same(snap: ObjectSnapshot | CondemnFact, head: ObjectInfo, method: DeleteMethod) -> str | None:
    """Why ``head`` is not the object the snapshot describes, or ``None``."""
    if snap.etag is not None and head.etag != snap.etag:
        return "ETag changed"
    if snap.size is not None and head.size != snap.size:
        return "size changed"
    # A body that keeps its digest in its commit record (s3spill.store.commit) reports none
    # itself; the ETag compared above pins it to the body whose digest the plan read.
    if snap.sha256 is not None and not defers_digest(head) and head.sha256 != snap.sha256:
        return "SHA-256 changed"
    if method == "version_pinned" and snap.version_id and head.version_id != snap.version_id:
        return "version changed"
    return None


@dataclass
class _Tally:
    max_items: int
    counts: Counter[str] = field(default_factory=Counter)
    bytes: Counter[str] = field(default_factory=Counter)
    items: list[ApplyItem] = field(default_factory=list)
    truncated: bool = False
    recovered: Counter[str] = field(default_factory=Counter)
    sessions: int = 0
    deletions: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Receives every decision (one dict per object) for the JSON Lines report.
    sink: Callable[[dict[str, Any]], None] | None = None

    def add(self, outcome: ApplyOutcome | str, entry: PlanEntry, reason: str = "") -> None:
        with self.lock:
            self.counts[outcome] += 1
            self.bytes[outcome] += entry.size
            if self.sink is not None:
                self.sink({"kind": "gc_decision", "phase": "apply", "outcome": outcome,
                           "planned": entry.status, "object_kind": entry.object_kind,
                           "key": entry.key, "session_hash": entry.session_hash,
                           "size": entry.size, "reason": (reason or entry.reason)[:300]})
            if entry.status != "planned_delete":
                return
            if outcome != "deleted" or len(self.items) < self.max_items:
                if len(self.items) < self.max_items * 2:
                    self.items.append(ApplyItem(
                        outcome=outcome, session_hash=entry.session_hash,
                        name=entry.name, object_kind=entry.object_kind, size=entry.size,
                        reason=reason[:300]))
                else:
                    self.truncated = True
            else:
                self.truncated = True


class _Applier:
    def __init__(self, store: MeteredStore, policy: CleanupPolicy, method: DeleteMethod,
                 ledger_factory: LedgerFactory, run_id: str, now: Callable[[], datetime],
                 tally: _Tally, dry_run: bool) -> None:
        self.store = store
        self.policy = policy
        self.method = method
        self.ledger_factory = ledger_factory
        self.run_id = run_id
        self.now = now
        self.tally = tally
        self.dry_run = dry_run

    # -- deleting one object -------------------------------------------------------------

    def _delete(self, key: str, etag: str, version_id: str | None) -> None:
        if self.method == "version_pinned":
            if not version_id:
                raise PreconditionFailed("no version id to pin the delete to", key=key)
            self.store.delete_version(key, version_id)
        elif self.method == "unconditional":
            # The operator accepted the risk: a store that refuses If-Match on DELETE (501)
            # or ignores it must get a plain delete, or "force" would delete nothing.
            self.store.delete_unconditional(key)
        else:
            self.store.delete_if_match(key, etag)

    def _delete_index(self, entry_index: ObjectSnapshot | None) -> None:
        """Best effort: a sidecar left behind is an orphan index the next plan deletes."""
        if entry_index is None:
            return
        try:
            version = entry_index.version_id
            if self.method == "version_pinned" and not version:
                head = self.store.head(entry_index.key)
                if head.etag != entry_index.etag:
                    return
                version = head.version_id
            self._delete(entry_index.key, entry_index.etag, version)
        except StoreError as exc:
            log.info("gc.apply.index_left", error=type(exc).__name__)

    def _revalidate_and_delete(self, snap: ObjectSnapshot | CondemnFact, key: str,
                               young: Callable[[ObjectInfo], str | None] | None = None,
                               ) -> tuple[ApplyOutcome, str, bool]:
        """HEAD, compare, re-judge its age, delete. Returns (outcome, reason, delete_was_attempted)."""
        try:
            head = self.store.head(key)
        except NotFound:
            return "already_missing", "object already gone", False
        except StoreError as exc:
            return "retained_error", f"HEAD failed: {type(exc).__name__}", False
        changed = _same(snap, head, self.method)
        if changed:
            return "race_detected", f"{changed} since the plan", False
        why = young(head) if young is not None else None
        if why:
            return "retained_recent", why, False
        if not self._take_deletion_slot():
            return "retained_limit", f"max_deletions={self.policy.max_deletions} reached", False
        try:
            # The etag of the validated HEAD: equal to the snapshot's when it has one.
            self._delete(key, head.etag, head.version_id)
        except NotFound:
            return "already_missing", "object vanished before the delete", True
        except PreconditionFailed as exc:
            return "race_detected", f"conditional delete refused: {exc}", True
        except UnsupportedOperation as exc:
            # A definite refusal (501 NotImplemented): nothing was deleted, so the
            # condemnation is lifted, never left "unknown" for ever.
            return "retained_error", f"the store refused the delete as not implemented: {exc}", False
        except StoreError as exc:
            return "retained_error", f"delete outcome unknown: {type(exc).__name__}", True
        return "deleted", "", True

    # -- one session ---------------------------------------------------------------------

    def _protected(self, facts: SessionFacts, name: str) -> tuple[ApplyOutcome, str] | None:
        if facts.claims.get(name):
            return "retained_referenced", "a claim appeared after the plan"
        if facts.last_active is not None and self.now() - facts.last_active < self.active_within:
            return "retained_recent", "session active since the plan"
        return None

    @property
    def active_within(self) -> timedelta:
        return max(self.policy.session_ttl, self.policy.orphan_ttl)

    def session(self, shash: str, entries: list[PlanEntry]) -> None:
        planned = [e for e in entries if e.status == "planned_delete"]
        for e in entries:
            if e.status != "planned_delete":
                self.tally.add(e.status, e)
        if not planned and not any(e.object_kind == "manifest" for e in entries):
            return  # owner slots or stray keys only: no journal to finish, nothing to delete
        with self.tally.lock:
            self.tally.sessions += 1
        if self.dry_run:
            for e in planned:
                self.tally.add("dry_run", e, "dry run: nothing deleted")
            return
        try:
            ledger = self.ledger_factory(self.store, shash, self.now)
            facts = ledger.facts()
            evidence = read_history_evidence(self.store, shash)
        except (S3SpillError, ValueError) as exc:
            for e in planned:
                self.tally.add("retained_unverifiable", e, f"journal unusable: {type(exc).__name__}")
            return
        doubts = journal_doubts(facts, evidence)
        if not facts.exists and not doubts:
            young = [e for e in planned if self._fresh_younger_than_session_ttl(shash, e)]
            if young:
                doubts.append(f"manifest missing while {len(young)} artifact(s) are younger than "
                              "session_ttl")
        if doubts:
            log.warning("gc.apply.JOURNAL_DOUBT", session_hash=shash, reasons=doubts)
            reason = "journal in doubt: " + "; ".join(doubts)
            for e in planned:
                self.tally.add("retained_journal_doubt", e, reason)
            return
        published = evidence.published_names()
        work: dict[str, _Work] = {}
        # Condemnations an interrupted (or concurrent) run left behind: adopt and finish them.
        for name, cf in sorted(facts.condemned.items()):
            if not _layout_ok(shash, name) or name in published:
                continue  # a published slot outranks a leftover condemnation: never delete it
            work[name] = _Work(name, cf, None, None, takeover=cf.run_id)
        for e in planned:
            assert e.snapshot is not None and e.name is not None
            if e.object_kind not in ("artifact", "index"):
                self.tally.add("denied", e, f"a plan may only delete artifacts and sidecars, "
                               f"not {e.object_kind}")
                continue
            if not _entry_layout_ok(shash, e):
                self.tally.add("denied", e, "plan entry's key is not an artifact key of this store")
                continue
            if e.name in published:
                self.tally.add("retained_referenced", e, "an owner slot holds a published reference")
                continue
            if e.object_kind == "index":
                if facts.claims.get(e.name):
                    self.tally.add("retained_referenced", e, "a claim names its artifact")
                else:
                    self._orphan_index(shash, e, facts)
                continue
            protected = None if e.name in work else self._protected(facts, e.name)
            if protected:
                self.tally.add(protected[0], e, protected[1])
                continue
            assert e.snapshot.sha256 is not None
            snap = CondemnFact(name=e.name, sha256=e.snapshot.sha256, run_id=self.run_id,
                               etag=e.snapshot.etag, size=e.snapshot.size,
                               version_id=e.snapshot.version_id)
            previous = work.get(e.name)
            if previous is not None and previous.fact.sha256 != snap.sha256:
                self.tally.add("race_detected", e, "condemned earlier with another digest")
                continue
            work[e.name] = _Work(e.name, snap, e.index_snapshot, e,
                                 takeover=previous.takeover if previous else None)
        if work:
            self._condemn_and_delete(ledger, shash, list(work.values()), facts)

    def _fresh_younger_than_session_ttl(self, shash: str, e: PlanEntry) -> bool:
        """Judged on a fresh HEAD, never on the plan's snapshot (which could be edited)."""
        assert e.name is not None
        if e.object_kind not in ("artifact", "index") or not _layout_ok(shash, e.name):
            return False
        key = (keys.artifact_key(shash, e.name) if e.object_kind == "artifact"
               else keys.index_key(shash, e.name))
        try:
            head = self.store.head(key)
        except NotFound:
            return False
        except StoreError:
            return True  # cannot tell: doubt
        return self.now() - object_created(e.name, head) < self.policy.session_ttl

    def _young(self, facts: SessionFacts, name: str) -> Callable[[ObjectInfo], str | None]:
        """The plan's age rule, re-applied at apply time under the apply-time policy."""

        def check(head: ObjectInfo) -> str | None:
            now = self.now()
            ref = object_created(name, head)
            if facts.last_active is not None:
                if now - facts.last_active < self.policy.session_ttl:
                    return "session active within session_ttl"
                ref = max(ref, facts.last_active)
            for claim in facts.expired_claims.get(name, ()):
                if claim.retain_until is not None:
                    ref = max(ref, claim.retain_until)
            if now - ref < self.policy.orphan_ttl:
                return "younger than orphan_ttl (apply-time policy)"
            return None

        return check

    def _take_deletion_slot(self) -> bool:
        """Count one deletion against ``max_deletions`` (enforced here too: a plan can't widen it)."""
        limit = self.policy.max_deletions
        with self.tally.lock:
            if limit is not None and self.tally.deletions >= limit:
                return False
            self.tally.deletions += 1
            return True

    def _orphan_index(self, shash: str, e: PlanEntry, facts: SessionFacts) -> None:
        """A sidecar whose artifact is gone: no claim can land on it, so no fence is needed.

        An index goes only with or after its body: while the artifact exists, a plan line
        asking for its sidecar alone (an edited plan) is refused, or its reads would fail.
        """
        assert e.snapshot is not None and e.name is not None
        try:
            self.store.head(keys.artifact_key(shash, e.name))
            self.tally.add("denied", e, "its artifact exists: an index is deleted only with its body")
            return
        except NotFound:
            pass
        except StoreError as exc:
            self.tally.add("retained_error", e, f"HEAD of its artifact failed: {type(exc).__name__}")
            return
        outcome, reason, _ = self._revalidate_and_delete(e.snapshot, e.snapshot.key,
                                                         self._young(facts, e.name))
        self.tally.add(outcome, e, reason)

    def _record(self, w: _Work, outcome: ApplyOutcome, reason: str) -> None:
        if w.entry is not None:
            self.tally.add(outcome, w.entry, reason)
        if w.takeover is not None:
            with self.tally.lock:
                self.tally.recovered[outcome] += 1

    def _condemn_and_delete(self, ledger: GcLedger, shash: str, work: list[_Work],
                            facts: SessionFacts) -> None:
        takeover = {w.name: w.takeover for w in work if w.takeover is not None}
        try:
            verdicts = ledger.condemn([w.fact for w in work], run_id=self.run_id,
                                      active_within=self.active_within, takeover=takeover)
        except (JournalError, StoreError) as exc:
            # Whether the CAS landed is unknown: the next run finds any condemnation and resolves it.
            for w in work:
                self._record(w, "retained_error", f"condemnation failed: {type(exc).__name__}")
            return
        failpoints.failpoint(FP_AFTER_CONDEMN)
        gone: list[str] = []
        lift: list[str] = []
        # One directory fsync per batch on the local store; durable before DELETED is recorded.
        with self.store.deferred_sync():
            for w in work:
                verdict = verdicts.get(w.name)
                if verdict == "claimed":
                    self._record(w, "retained_referenced", "a claim landed before the condemnation")
                    continue
                if verdict == "active":
                    self._record(w, "retained_recent", "session became active before the condemnation")
                    continue
                if verdict == "deleted":
                    self._record(w, "already_missing", "journal records it deleted")
                    continue
                if verdict != "condemned":
                    self._record(w, "retained_error", f"journal answered {verdict!r}")
                    continue
                key = keys.artifact_key(shash, w.name)
                outcome, reason, attempted = self._revalidate_and_delete(w.fact, key,
                                                                         self._young(facts, w.name))
                if outcome in ("deleted", "already_missing"):
                    gone.append(w.name)
                    self._delete_index(w.index if w.index is not None
                                       else self._index_snapshot(shash, w.name))
                elif outcome == "race_detected" or not attempted:
                    lift.append(w.name)
                # else: the delete's outcome is unknown — stay condemned; the next run resolves it.
                self._record(w, outcome, reason)
        failpoints.failpoint(FP_AFTER_DELETE)
        try:
            ledger.finish(gone, lift, run_id=self.run_id, reason="race_detected")
        except (JournalError, StoreError) as exc:
            # Harmless: the condemnations stand and the next run finishes or lifts them.
            log.warning("gc.apply.finish_deferred", session_hash=shash, error=type(exc).__name__)

    def _index_snapshot(self, shash: str, name: str) -> ObjectSnapshot | None:
        key = keys.index_key(shash, name)
        try:
            head = self.store.head(key)
        except StoreError:
            return None
        return ObjectSnapshot(key=key, etag=head.etag, version_id=head.version_id, size=head.size,
                              last_modified=head.last_modified)


@dataclass(frozen=True)
class _Work:
    """One artifact this run condemns: what it must still be, its sidecar, its plan line."""

    name: str
    fact: CondemnFact
    index: ObjectSnapshot | None
    entry: PlanEntry | None
    #: The run whose leftover condemnation this run adopts (``None``: a fresh one).
    takeover: str | None = None


def _layout_ok(shash: str, name: str) -> bool:
    try:
        keys.artifact_key(shash, name)
        return True
    except InvalidKey:
        return False


def _entry_layout_ok(shash: str, e: PlanEntry) -> bool:
    """Never trust a plan's key: it must be exactly what the layout derives."""
    assert e.snapshot is not None and e.name is not None
    if not _layout_ok(shash, e.name):
        return False
    expected = (keys.artifact_key(shash, e.name) if e.object_kind == "artifact"
                else keys.index_key(shash, e.name))
    if e.snapshot.key != expected:
        return False
    return e.index_snapshot is None or e.index_snapshot.key == keys.index_key(shash, e.name)


def _session_groups(plan: CleanupPlan) -> Iterator[tuple[str | None, list[PlanEntry]]]:
    """Consecutive entries of one session, as the planner wrote them; loose entries alone."""
    shash: str | None = None
    group: list[PlanEntry] = []
    for entry in plan.entries():
        if entry.session_hash != shash or entry.session_hash is None:
            if group:
                yield shash, group
            shash, group = entry.session_hash, []
        group.append(entry)
    if group:
        yield shash, group


def apply_cleanup(
    store: ObjectStore,
    plan: CleanupPlan,
    *,
    dry_run: bool | None = None,
    capabilities: StoreCapabilities | None = None,
    force_unverified_deletes: bool = False,
    config: TransferConfig | None = None,
    rate_limit: float | None = None,
    ledger_factory: LedgerFactory = open_ledger,
    now: Callable[[], datetime] | None = None,
    max_report_items: int = 1000,
    progress: Callable[[int], None] | None = None,
    metered: MeteredStore | None = None,
    policy: CleanupPolicy | None = None,
    decisions: Callable[[dict[str, Any]], None] | None = None,
    stop: threading.Event | None = None,
) -> CleanupReport:
    """Apply a verified plan: condemn, revalidate, delete conditionally, record; report.

    The plan is a narrowing hint, never an authority: every deletion is re-derived from
    fresh facts (journal, owner slots, HEAD) under ``policy`` — the policy configured at
    apply time (default: :class:`CleanupPolicy`'s defaults), made stricter, never looser,
    by the plan's (:func:`~s3spill.gc.models.narrowed_policy`). ``dry_run`` defaults to
    ``policy.dry_run`` when a policy is given, else to the plan's. ``capabilities`` overrides what the store
    claims (pass the doctor's verified findings). Raises :class:`CleanupRefused` for a
    plan made against another store or when no safe delete method exists.

    ``progress`` is called with the number of plan entries *finished* (not queued);
    ``decisions`` receives one dict per object as it is decided (the JSON Lines report);
    once ``stop`` is set (SIGTERM) no further session is started, the ones in flight
    finish, and the report says ``interrupted`` — so a terminated run still reports
    exactly what it did.
    """
    started_at = datetime.now(UTC)
    started = time.monotonic()
    explicit_policy = policy is not None
    if plan.header.store_url != store.url:
        raise CleanupRefused(f"plan {plan.plan_id} was made for {plan.header.store_url}, not {store.url}")
    # The plan only narrows: its TTLs and limits can make apply stricter, never looser.
    configured = policy if policy is not None else CleanupPolicy()
    policy = narrowed_policy(configured, plan.header.policy)
    if dry_run is None:
        dry_run = configured.dry_run if explicit_policy else plan.header.policy.dry_run
    dry = dry_run
    if not dry:
        require_conditional_writes(store, purpose="GC")
    caps = capabilities or store.capabilities()
    method = choose_delete_method(caps, force_unverified=force_unverified_deletes)
    meter = metered or MeteredStore(store, rate_limit=rate_limit, capabilities=caps)
    config = config or TransferConfig()
    tally = _Tally(max_report_items, sink=decisions)
    run_id = f"{plan.plan_id[:40]}-{secrets.token_hex(4)}"
    clock = now or (lambda: datetime.now(UTC))
    applier = _Applier(meter, policy, method, ledger_factory, run_id, clock, tally, dry)
    in_flight: dict[Future[None], int] = {}
    done_entries = 0
    interrupted = False

    def finish(futures: Iterable[Future[None]]) -> None:
        nonlocal done_entries
        for fut in futures:
            fut.result()
            done_entries += in_flight.pop(fut)
        if progress:
            progress(done_entries)

    with ThreadPoolExecutor(max_workers=config.max_concurrency, thread_name_prefix="s3spill-gc") as pool:
        for shash, group in _session_groups(plan):
            if stop is not None and stop.is_set():
                interrupted = True
                break
            if shash is None:
                for e in group:
                    tally.add(e.status, e)
                done_entries += len(group)
                continue
            in_flight[pool.submit(applier.session, shash, group)] = len(group)
            if len(in_flight) >= 2 * config.max_concurrency:
                finished, _ = wait(set(in_flight), return_when=FIRST_COMPLETED)
                finish(finished)
        finish(list(in_flight))
    report = CleanupReport(
        phase="apply", plan_id=plan.plan_id, dry_run=dry, delete_method=method, started_at=started_at,
        duration_seconds=round(time.monotonic() - started, 3), sessions=tally.sessions,
        counts=dict(tally.counts), bytes=dict(tally.bytes), requests=dict(meter.requests),
        items=tally.items, items_truncated=tally.truncated, recovered=dict(tally.recovered),
        interrupted=interrupted,
    )
    log.info("gc.apply", plan_id=plan.plan_id, run_id=run_id, counts=report.counts,
             requests=report.requests, duration=report.duration_seconds)
    if not dry:
        # Temporaries of writers killed mid-write (the local store's tmp/*.part); never a
        # live writer's. Best effort: the deletions above are what the report is about.
        try:
            store.sweep_temporaries()
        except OSError as exc:
            log.warning("gc.sweep_temporaries_failed", error=type(exc).__name__)
    return report
