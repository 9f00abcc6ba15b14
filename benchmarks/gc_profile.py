"""Where local GC's CPU goes, step by step (issue 35): what each safety step costs.

Populates N artifacts as :mod:`benchmarks.costs_gc` does (N/100 sessions, a quarter of each
session's referenced through the lease journal), then runs ``plan_cleanup`` and
``apply_cleanup`` once with the worker pools made synchronous (every step on one thread)
and each step's function wrapped in a thread-CPU timer (outermost call, inclusive): no
profiler. A timed call costs ~1-3 µs here (two ``thread_time`` system calls and a frame),
and the per-object steps are timed on every object, so each step is shown net of its
timers (calibrated on a timed no-op), the timers' cost is a row of its own, and the phase's
CPU without them is the last row; what no step names is "the rest". Apply's
per-artifact figures are per deleted artifact. ``--signed`` plans and applies with a
plan key, so apply skips re-reading the commit records. Each phase's headline also splits
the process's CPU into Python (with its libraries) and the kernel (``os.times``): what the
system calls themselves cost, which no Python change removes.

    python benchmarks/gc_profile.py --artifacts 2000 [--signed]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.costs_gc import POPULATE  # noqa: E402

T = TypeVar("T")

#: (label, module under ``s3spill``, attribute): each step's CPU is the inclusive thread CPU of that
#: function (outermost call only), looked up where the GC calls it. An indented label is
#: inside a step above it (not added to the total; "both CASes": inside the condemnation and
#: the finishing CAS together; the fold also runs on every journal read).
PLAN_STEPS = [
    ("conditional-writes probe (once per store and process)", "gc.plan", "require_conditional_writes"),
    ("listing record per object (lstat + getxattr + decode)", "store.local", "LocalStore._listing_info"),
    ("key parsing per object", "gc.plan", "parse_listed_key"),
    ("journal fold per session (manifest + segments, verified)", "gc.fence", "JournalLedger.facts"),
    ("history evidence per session (owner slots, segments)", "gc.plan_rules", "read_history_evidence"),
    ("commit records, one batch per session (content digest)", "store.local", "LocalStore.get_many"),
    ("plan entries (PlanLine: checked plain values)", "gc.plan_rules", "Planner._emit"),
    ("snapshots of objects (checked plain values)", "gc.plan_rules", "_snap"),
    ("plan lines (JSON + running SHA-256)", "gc.planfile", "PlanWriter.add"),
    ("plan file closed (footer, fsync)", "gc.planfile", "PlanWriter.close"),
]
APPLY_STEPS = [
    ("plan lines validated (pydantic per entry)", "gc.planfile", "PlanEntry.model_validate_json"),
    ("run lock (take, renew, release)", "gc.lock", "GcRunLock.renew_if_due"),
    ("journal + history read per session", "gc.apply_session", "SessionApplier._read_facts"),
    ("admission of each plan line on fresh facts", "gc.apply_session", "SessionApplier._admit"),
    ("condemnation CAS (records built + folded, segment + manifest, 4 fsyncs)", "gc.fence",
     "JournalLedger.condemn"),
    ("listing records of the fenced artifacts", "gc.apply_session",
     "SessionApplier._listed_after_condemnation"),
    ("commit records re-read, one batch (unsigned plan only)", "gc.apply_session",
     "SessionApplier._commit_records"),
    ("revalidation of each artifact (snapshot, digest, age)", "gc.delete", "ConditionalDeleter.revalidate"),
    ("conditional deletes of the bodies, one batch", "gc.delete",
     "ConditionalDeleter.delete_validated_many"),
    ("conditional deletes of the sidecars, one batch", "gc.delete", "ConditionalDeleter.delete_indexes"),
    ("directory fsyncs (once per directory and batch)", "store.local", "LocalStore._fsync_dir"),
    ("quota credit (a HEAD per session)", "fleet.credit", "QuotaCredit.raw_size"),
    ("finishing CAS (DELETED records, segment + manifest, 4 fsyncs)", "gc.fence", "JournalLedger.finish"),
    ("  both CASes: records built and checked (new_record)", "leases.cas", "build_record"),
    ("  records folded, in both CASes and in every journal read", "leases.journal_fold", "JournalFold.apply"),
    ("  both CASes: segment written (create-once: file and directory fsync)", "leases.cas",
     "ManifestCas._write_segment"),
    ("  both CASes: manifest written (conditional replace: file and directory fsync)", "store.local",
     "LocalStore.put_if_match"),
    ("  both CASes: temporaries written (file created, body, record, fsync)", "store.local",
     "LocalStore._write_temp"),
    ("  every fsync (files and directories: CASes, deletes, run lock)", "os", "fsync"),
    ("tally of each outcome", "gc.tally", "Tally.add"),
    ("temporaries sweep", "store.local", "LocalStore.sweep_temporaries"),
]


class _InlinePool:
    """A ThreadPoolExecutor stand-in that runs each task at once on the caller's thread."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> _InlinePool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the future, as a pool does
            future.set_exception(exc)
        return future


class _Timers:
    """Inclusive thread CPU per step: each listed function wrapped, outermost calls timed."""

    def __init__(self, steps: list[tuple[str, str, str]]) -> None:
        self.spent: dict[str, float] = dict.fromkeys((label for label, _, _ in steps), 0.0)
        self.calls: dict[str, int] = dict.fromkeys(self.spent, 0)
        for label, module, attr in steps:
            name = module if module == "os" else f"s3spill.{module}"  # os: its system calls
            self._wrap(label, importlib.import_module(name), attr)

    def _wrap(self, label: str, module: Any, attr: str) -> None:
        *path, name = attr.split(".")
        owner = module
        for part in path:
            owner = getattr(owner, part)
        inner = getattr(owner, name)
        depth = [0]
        spent, calls = self.spent, self.calls

        def timed(*args: Any, **kwargs: Any) -> Any:
            if depth[0]:
                return inner(*args, **kwargs)
            depth[0] += 1
            started = time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[label] += time.thread_time() - started
                calls[label] += 1
                depth[0] -= 1

        bound_to_class = inspect.ismethod(inner) and isinstance(inner.__self__, type)
        setattr(owner, name, staticmethod(timed) if bound_to_class else timed)

    def reset(self) -> None:
        for label in self.spent:
            self.spent[label] = 0.0
            self.calls[label] = 0


class _Noop:
    """A step that does nothing: what the timer itself costs, per call, in and out of its window."""

    @staticmethod
    def step() -> None:
        return None


def _calibrated(rounds: int = 200_000) -> tuple[float, float]:
    """Seconds a timed call costs inside the step's window and in all, per outermost call."""
    timers = _Timers([])
    timers.spent["noop"], timers.calls["noop"] = 0.0, 0
    timers._wrap("noop", _Noop, "step")
    step = _Noop.step
    best_in, best_all = float("inf"), float("inf")
    for _ in range(5):
        timers.reset()
        started = time.thread_time()
        for _ in range(rounds):
            step()
        best_all = min(best_all, (time.thread_time() - started) / rounds)
        best_in = min(best_in, timers.spent["noop"] / rounds)
    return best_in, best_all


def _measured(label: str, fn: Callable[[], T], timers: _Timers, per: Callable[[T], int],
              calibration: tuple[float, float]) -> T:
    """Run ``fn`` timed step by step; print each step's CPU net of its timers' own cost.

    Why net: a timer is two ``thread_time`` calls (a system call each, ~1 µs here) and a
    wrapper frame, and the per-object steps are timed on every object, so the raw figures
    carried several µs an artifact of instrumentation (most of it in "the rest"). Each
    step's figure is its timed CPU less ``calls x`` the timer's cost inside its window, and
    the timers' whole cost (calls x a timed no-op's) is its own row, out of "the rest"; the
    total is what the phase cost with the timers on.
    """
    inside, whole = calibration
    timers.reset()
    before = os.times()
    started = time.thread_time()
    out = fn()
    cpu = time.thread_time() - started
    after = os.times()
    count = per(out)
    user, kernel = after.user - before.user, after.system - before.system
    print(f"\n{label}: {cpu * 1e3:.0f} ms CPU with the timers on, {cpu / count * 1e6:.0f} µs per artifact "
          f"({count:,}); of the process's, {user / count * 1e6:.0f} µs in Python and libraries and "
          f"{kernel / count * 1e6:.0f} µs in the kernel (system calls: os.times, 10 ms ticks)")
    print("| step | CPU | per artifact | share |\n|---|---|---|---|")
    top = instrumented = nested = 0.0
    for step, spent in timers.spent.items():
        calls = timers.calls[step]
        net = max(0.0, spent - calls * inside)
        if not step.startswith(" "):
            top += net
            instrumented += calls * whole
        else:  # its timers ran inside a step above, whose figure they are in
            nested += calls * whole
        print(f"| {step} | {net * 1e3:.0f} ms | {net / count * 1e6:.1f} µs | {100 * net / cpu:.0f}% |")
    rest = cpu - top - instrumented
    within = f"; {nested * 1e3:.0f} ms more inside the steps above" if nested else ""
    share = 100 * instrumented / cpu
    print(f"| the timers themselves ({whole * 1e6:.2f} µs a timed call{within}) "
          f"| {instrumented * 1e3:.0f} ms | {instrumented / count * 1e6:.1f} µs | {share:.0f}% |")
    print(f"| the rest (walk, grouping, decisions, pools, objects) | {rest * 1e3:.0f} ms "
          f"| {rest / count * 1e6:.1f} µs | {100 * rest / cpu:.0f}% |")
    bare = cpu - instrumented - nested
    print(f"| **the phase without the timers** | {bare * 1e3:.0f} ms | {bare / count * 1e6:.1f} µs | |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=int, default=2000)
    parser.add_argument("--signed", action="store_true", help="plan and apply with a plan key (a MAC)")
    args = parser.parse_args()
    import s3spill.gc.apply as apply_module
    import s3spill.gc.plan as plan_module
    from s3spill.gc.apply import apply_cleanup
    from s3spill.gc.models import CleanupPolicy, CleanupScope
    from s3spill.gc.plan import plan_cleanup
    from s3spill.gc.planfile import PLAN_KEY_ENV
    from s3spill.store.local import LocalStore

    apply_module.ThreadPoolExecutor = _InlinePool  # type: ignore[misc,assignment]
    plan_module.ThreadPoolExecutor = _InlinePool  # type: ignore[misc,assignment]
    with tempfile.TemporaryDirectory(prefix="s3spill-gc-profile-") as tmp:
        root = Path(tmp) / "store"
        sessions = max(1, args.artifacts // 100)
        env = {k: v for k, v in os.environ.items() if not k.startswith("S3SPILL_")}
        env["PYTHONPATH"] = str(ROOT)
        code = POPULATE.format(root=str(ROOT), store=str(root), sessions=sessions,
                               per_session=args.artifacts // sessions)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             check=True)
        print(json.dumps({"artifacts": args.artifacts, **json.loads(out.stdout.splitlines()[-1]),
                          "signed": args.signed, "load_average": os.getloadavg()}))
        if args.signed:
            os.environ[PLAN_KEY_ENV] = "gc-profile-benchmark-plan-key"
        store = LocalStore(root)
        later = datetime.now(UTC) + timedelta(days=3)
        policy = CleanupPolicy(dry_run=False, max_deletions=None)
        calibration = _calibrated()
        plan = _measured("plan", lambda: plan_cleanup(store, CleanupScope(), policy, out=Path(tmp) / "plan",
                                                      now=later), _Timers(PLAN_STEPS),
                         lambda _: args.artifacts, calibration)
        report = _measured("apply", lambda: apply_cleanup(store, plan, now=lambda: later, policy=policy),
                           _Timers(APPLY_STEPS), lambda r: max(1, r.counts.get("deleted", 0)), calibration)
        print(f"\ndeleted: {report.counts.get('deleted', 0)} "
              "(apply's per-artifact figures are per deleted artifact)")


if __name__ == "__main__":
    main()
