"""``apply_cleanup``: the destructive half of GC, fenced by each session's journal.

Why this order, per session (:mod:`s3spill.gc.apply_session`): (1) re-read the journal —
the plan is old news; (2) append ``CONDEMNED`` for the still-unclaimed artifacts in one
compare-and-swap on the session's manifest — this is the fence: a concurrent ``prepare`` either landed first
(the CAS sees its claim and the artifact is retained) or sees the condemnation and
refuses; (3) HEAD each condemned artifact and compare it with the plan's snapshot
(ETag, size, SHA-256, version); (4) delete it conditionally (``If-Match`` the ETag,
or the validated ``VersionId``; :mod:`s3spill.gc.delete`); (5) append ``DELETED`` — or ``LIFTED`` for what
changed under us. A run killed anywhere leaves condemnations without ``DELETED``;
the next run finds them first and finishes (object gone → ``DELETED``; unchanged and
unclaimed → delete) or lifts them. Any doubt retains: an unreadable journal, a
changed object, a store error. An unknown delete outcome stays condemned, never
lifted, because a late delete could land after a lifted artifact was claimed again.
The whole run holds its scope's run lock (:mod:`s3spill.gc.lock`) while it may delete.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import UTC, datetime
from typing import Any

from s3spill.config import TransferConfig
from s3spill.errors import CleanupRefused
from s3spill.gc.apply_session import SessionApplier
from s3spill.gc.delete import choose_delete_method
from s3spill.gc.fence import LedgerFactory, open_ledger
from s3spill.gc.lock import GcRunLock
from s3spill.gc.metered_store import MeteredStore
from s3spill.gc.models import CleanupPolicy, CleanupReport, narrowed_policy
from s3spill.gc.planfile import CleanupPlan, PlanEntry
from s3spill.gc.tally import Tally
from s3spill.leases.chain import paused_cyclic_gc
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore, StoreCapabilities
from s3spill.store.conditional_writes import require_conditional_writes

__all__ = ["apply_cleanup", "choose_delete_method"]

log = get_logger("s3spill.gc")


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
    lock: GcRunLock | bool = True,
    lock_wait: float = 0.0,
) -> CleanupReport:
    """Apply a verified plan: condemn, revalidate, delete conditionally, record; report.

    The plan is a narrowing hint, never an authority: every deletion is re-derived from
    fresh facts (journal, owner slots, HEAD) under ``policy`` — the policy configured at
    apply time (default: :class:`CleanupPolicy`'s defaults), made stricter, never looser,
    by the plan's (:func:`~s3spill.gc.models.narrowed_policy`). ``dry_run`` defaults to
    ``policy.dry_run`` when a policy is given, else to the plan's. ``capabilities`` overrides what the store
    claims (pass the doctor's verified findings). Raises :class:`CleanupRefused` for a
    plan made against another store or when no safe delete method exists.

    A run that may delete holds its scope's run lock (:mod:`s3spill.gc.lock`), so two
    overlapping runs do not race each other's condemnations: by default it is taken here
    (waiting up to ``lock_wait`` seconds; :class:`GcRunLocked` and nothing deleted if
    another run still holds it), renewed as sessions finish (:class:`GcLockLost` stops the
    run) and released at the end. Pass a :class:`GcRunLock` you hold already (around plan
    and apply) to have it renewed but not released, or ``lock=False`` to run unlocked.

    ``progress`` is called with the number of plan entries *finished* (not queued);
    ``decisions`` receives one dict per object as it is decided (the JSON Lines report);
    once ``stop`` is set (SIGTERM) no further session is started, the ones in flight
    finish, and the report says ``interrupted`` — so a terminated run still reports
    exactly what it did.
    """
    started_at = datetime.now(UTC)
    started = time.monotonic()
    if plan.header.store_url != store.url:
        raise CleanupRefused(f"plan {plan.plan_id} was made for {plan.header.store_url}, not {store.url}")
    policy, dry = _effective_policy(plan, policy, dry_run)
    if not dry:
        require_conditional_writes(store, purpose="GC")
    caps = capabilities or store.capabilities()
    method = choose_delete_method(caps, force_unverified=force_unverified_deletes)
    meter = metered or MeteredStore(store, rate_limit=rate_limit, capabilities=caps)
    tally = Tally(max_report_items, sink=decisions)
    run_id = f"{plan.plan_id[:40]}-{secrets.token_hex(4)}"
    applier = SessionApplier(meter, policy, method, ledger_factory, run_id,
                             now or (lambda: datetime.now(UTC)), tally, dry,
                             planned_at=plan.header.created_at,
                             authenticated_plan=plan.footer.mac is not None)
    with _held(store, plan, lock, lock_wait, deletes=not dry) as held, paused_cyclic_gc():
        # No cyclic collection during the run: its plan lines, records and listing views are
        # acyclic (reference counting frees them) and the collector re-walked every live one,
        # 7-8% of plan and apply; it resumes (and collects any cycle) when the run ends.
        interrupted = _run_sessions(plan, applier, config or TransferConfig(),
                                    _renewing(progress, held), stop)
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
        _sweep_temporaries(store)
    return report


def _effective_policy(plan: CleanupPlan, policy: CleanupPolicy | None,
                      dry_run: bool | None) -> tuple[CleanupPolicy, bool]:
    """Apply-time policy narrowed by the plan's (stricter, never looser), and whether this is a dry run."""
    configured = policy if policy is not None else CleanupPolicy()
    if dry_run is None:
        dry_run = configured.dry_run if policy is not None else plan.header.policy.dry_run
    return narrowed_policy(configured, plan.header.policy), dry_run


@contextlib.contextmanager
def _held(store: ObjectStore, plan: CleanupPlan, lock: GcRunLock | bool, wait: float, *,
          deletes: bool) -> Iterator[GcRunLock | None]:
    """The run lock this apply renews: a caller's, one taken here (and released), or none."""
    if isinstance(lock, GcRunLock):
        yield lock
    elif lock and deletes:
        with GcRunLock.for_scope(store, plan.header.scope, plan.plan_id, wait=wait) as taken:
            yield taken
    else:
        yield None  # a dry run deletes nothing, so it may overlap another run


def _renewing(progress: Callable[[int], None] | None,
              lock: GcRunLock | None) -> Callable[[int], None] | None:
    """Progress that first renews the run lock (a lost lock stops the run: fencing)."""
    if lock is None:
        return progress

    def update(done: int) -> None:
        lock.renew_if_due()
        if progress is not None:
            progress(done)

    return update


def _run_sessions(plan: CleanupPlan, applier: SessionApplier, config: TransferConfig,
                  progress: Callable[[int], None] | None, stop: threading.Event | None) -> bool:
    """Every session group of the plan through the pool; True if ``stop`` cut the run short."""
    in_flight: dict[Future[None], int] = {}
    done_entries = 0

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
                finish(list(in_flight))
                return True
            if shash is None:
                for e in group:
                    applier.tally.add(e.status, e)
                done_entries += len(group)
                continue
            in_flight[pool.submit(applier.session, shash, group)] = len(group)
            if len(in_flight) >= 2 * config.max_concurrency:
                finished, _ = wait(set(in_flight), return_when=FIRST_COMPLETED)
                finish(finished)
        finish(list(in_flight))
    return False


def _sweep_temporaries(store: ObjectStore) -> None:
    """Temporaries of writers killed mid-write (the local store's tmp/*.part); never a live writer's.

    Best effort: the deletions are what the report is about.
    """
    try:
        store.sweep_temporaries()
    except OSError as exc:
        log.warning("gc.sweep_temporaries_failed", error=type(exc).__name__)
