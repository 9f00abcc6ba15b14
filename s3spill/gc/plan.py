"""``plan_cleanup``: the read-only half of GC.

Why read-only and streaming: a plan is evidence that must be reviewable before
anything is deleted, and the store may hold millions of objects. The listing is
consumed lazily, only over the scope's own key ranges (:mod:`s3spill.gc.shards`);
objects are grouped by session (both backends list in key order, so a session's keys
are contiguous — a listing out of order is refused rather than half-trusted), each
session's journal is folded once for its claim view, and the entries go straight to a
JSON Lines file. Memory is bounded by the largest session, not the store.

Every object gets exactly one status (see :mod:`s3spill.gc.models`), decided by
:mod:`s3spill.gc.plan_rules`. Only artifacts
and their ``.idx`` sidecars can ever be ``planned_delete``; journal manifests and
segments, owner slots and tombstones, and stored plans are protocol state GC never
deletes (``retained_protocol``), which keeps every create-if-absent slot closed forever.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from s3spill import failpoints
from s3spill.config import TransferConfig
from s3spill.gc.fence import read_session_facts
from s3spill.gc.key_cache import parse_listed_key
from s3spill.gc.models import (
    CleanupPolicy,
    CleanupReport,
    CleanupScope,
)
from s3spill.gc.plan_rules import (
    FactsReader,
    Planner,
    SessionGroup,
    object_created,
    session_of_key,
    snapshot_of,
)
from s3spill.gc.planfile import CleanupPlan, PlanHeader, PlanLine, PlanWriter
from s3spill.gc.shards import list_scope
from s3spill.leases.chain import paused_cyclic_gc
from s3spill.log import get_logger
from s3spill.store.base import ObjectInfo, ObjectStore
from s3spill.store.conditional_writes import require_conditional_writes

log = get_logger("s3spill.gc")

FP_PLAN_AFTER_SESSION = failpoints.declare(
    "gc.plan_after_session", "a session's plan lines written (not durable); the plan has no footer yet")

def _grouped(store: ObjectStore, scope: CleanupScope) -> Iterator[SessionGroup | ObjectInfo]:
    """Yield session groups (contiguous in the key-ordered listing) and session-less objects.

    Only the scope's own key ranges are listed (:func:`~s3spill.gc.shards.list_scope`), and
    nothing is remembered across sessions: the listing's key order, checked as it streams,
    is what guarantees a session's objects all arrive in one group.
    """
    current: SessionGroup | None = None
    for info in list_scope(store, scope):
        parsed = parse_listed_key(info.key)
        shash = parsed.session_hash if parsed.kind != "unknown" else session_of_key(info.key)
        if parsed.kind in ("owner", "unknown") or shash is None:
            # Owner slots live outside the session prefix; they are reported, never grouped.
            yield info
            continue
        if current is None or current.shash != shash:
            if current is not None:
                yield current
            current = SessionGroup(shash)
        current.add(parsed, info)
    if current is not None:
        yield current


def plan_cleanup(
    store: ObjectStore,
    scope: CleanupScope | None = None,
    policy: CleanupPolicy | None = None,
    *,
    out: str | os.PathLike[str] | None = None,
    now: datetime | None = None,
    facts_reader: FactsReader = read_session_facts,
    config: TransferConfig | None = None,
    progress: Callable[[int], None] | None = None,
) -> CleanupPlan:
    """List the store, fold each session's journal, and write a plan; never writes to the store.

    ``out`` is the plan file (default: a private temporary file). ``now`` is injectable
    so tests and the demo can age objects without sleeping. Sessions are planned on
    ``config.max_concurrency`` threads (their HEADs and journal reads overlap) with a
    bounded look-ahead, or on this thread for a store whose calls are local system calls
    (:attr:`~s3spill.store.base.ObjectStore.overlapping_calls_help`: the local store);
    entries are written in listing order, so the plan is the same whatever the concurrency,
    and ``max_deletions`` is enforced in that order.
    ``progress`` is called with the number of sessions planned so far (listing is
    streamed, so no total is known in advance).
    """
    require_conditional_writes(store, purpose="GC")
    # A local store's calls are system calls of microseconds: sessions are planned inline.
    workers = (config or TransferConfig()).max_concurrency if store.overlapping_calls_help else 0
    scope = scope or CleanupScope()
    policy = policy or CleanupPolicy()
    now = now or datetime.now(UTC)
    header = PlanHeader(
        plan_id=f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(6)}", created_at=now,
        store_url=store.url, scope=scope, policy=policy,
    )
    writer = PlanWriter(Path(out) if out is not None else _private_plan_file(), header)
    planner = Planner(store, scope, policy, writer, now, facts_reader)
    started = time.monotonic()
    try:
        with paused_cyclic_gc():  # see _run_sessions in s3spill.gc.apply
            _plan_in_order(store, scope, planner, workers, progress)
    except BaseException:
        writer.abort()
        raise
    plan = writer.close()
    plan.sessions = planner.sessions
    log.info("gc.plan", plan_id=header.plan_id, sessions=planner.sessions, entries=writer.entries,
             planned=planner.planned, heads=planner.heads, index_reads=planner.index_reads,
             duration=round(time.monotonic() - started, 3))
    return plan


def _private_plan_file() -> Path:
    fd, name = tempfile.mkstemp(prefix="s3spill-plan-", suffix=".jsonl")
    os.close(fd)
    return Path(name)


def _plan_in_order(store: ObjectStore, scope: CleanupScope, planner: Planner, workers: int,
                   progress: Callable[[int], None] | None) -> None:
    """Sessions planned on ``workers`` threads with a bounded look-ahead, written in listing order
    (``workers`` 0: each planned and written on this thread as it is listed)."""
    if workers == 0:
        return _plan_inline(store, scope, planner, progress)
    window: deque[Future[list[PlanLine]] | list[PlanLine]] = deque()

    planned_sessions = 0

    def drain(keep: int) -> None:
        nonlocal planned_sessions
        while len(window) > keep:
            head = window.popleft()
            for entry in head.result() if isinstance(head, Future) else head:
                planner.write(entry)
            if isinstance(head, Future):
                failpoints.failpoint(FP_PLAN_AFTER_SESSION)
                planned_sessions += 1
                if progress:
                    progress(planned_sessions)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="s3spill-gc-plan") as pool:
        try:
            for item in _grouped(store, scope):
                if isinstance(item, SessionGroup):
                    window.append(pool.submit(planner.run_session, item))
                else:
                    window.append(planner.run_loose(item))
                drain(2 * workers)
            drain(0)
        except BaseException:
            for pending in window:
                if isinstance(pending, Future):
                    pending.cancel()
            raise


def _plan_inline(store: ObjectStore, scope: CleanupScope, planner: Planner,
                 progress: Callable[[int], None] | None) -> None:
    done = 0
    for item in _grouped(store, scope):
        if isinstance(item, SessionGroup):
            lines = planner.run_session(item)
            done += 1
        else:
            lines = planner.run_loose(item)
        for line in lines:
            planner.write(line)
        if isinstance(item, SessionGroup):
            failpoints.failpoint(FP_PLAN_AFTER_SESSION)
            if progress:
                progress(done)


def plan_report(plan: CleanupPlan, duration: float = 0.0, requests: dict[str, int] | None = None,
                sessions: int = 0) -> CleanupReport:
    """The plan's footer as a report (counts and bytes per status)."""
    return CleanupReport(
        phase="plan", plan_id=plan.plan_id, dry_run=True, started_at=plan.header.created_at,
        duration_seconds=round(duration, 3), sessions=sessions, counts=dict(plan.footer.counts),
        bytes=dict(plan.footer.bytes), requests=dict(requests or {}),
    )


__all__ = ["CleanupPlan", "object_created", "plan_cleanup", "plan_report", "snapshot_of"]
