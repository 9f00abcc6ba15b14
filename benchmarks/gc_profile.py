"""Where local GC's CPU goes, step by step (issue 35): what each safety step costs.

Populates N artifacts as :mod:`benchmarks.costs_gc` does (N/100 sessions, a quarter of each
session's referenced through the lease journal), then runs ``plan_cleanup`` and
``apply_cleanup`` once under ``cProfile`` with a CPU clock, the worker pools made
synchronous (so every step is on one thread and counted), and prints each step's
cumulative CPU and its share. Profiling inflates Python-heavy steps more than system
calls, so the shares are a guide and the unprofiled totals are ``costs.py``'s.

    python benchmarks/gc_profile.py --artifacts 2000
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
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

PLAN_STEPS = [
    ("conditional-writes probe (once per store and process)", "conditional_writes.py", "_probe"),
    ("listing (walk + listing records)", "store/local.py", "_list"),
    ("journal fold per session", "gc/fence.py", "read_session_facts"),
    ("history evidence per session (owner slots, segments)", "leases/evidence.py", "read_history_evidence"),
    ("content digest per artifact (commit record GET)", "gc/plan_rules.py", "_content"),
    ("plan entries (pydantic)", "gc/plan_rules.py", "_emit"),
    ("snapshots (pydantic)", "gc/plan_rules.py", "snapshot_of"),
    ("plan file lines (JSON + SHA-256)", "gc/planfile.py", "add"),
]
APPLY_STEPS = [
    ("plan file re-read (pydantic per entry)", "gc/planfile.py", "entries"),
    ("journal + history read per session", "gc/apply_session.py", "_read_facts"),
    ("condemn CAS (records, fold, segment + manifest)", "gc/fence.py", "condemn"),
    ("listing after the condemnation", "gc/apply_session.py", "_listed_after_condemnation"),
    ("revalidate + delete each artifact", "gc/delete.py", "revalidate_and_delete"),
    ("  commit-record digest (unsigned plan)", "store/commit.py", "committed_digest"),
    ("delete each sidecar", "gc/delete.py", "delete_index"),
    ("  LocalStore.delete_if_match (both)", "store/local.py", "delete_if_match"),
    ("finish CAS (DELETED records)", "gc/fence.py", "finish"),
    ("directory fsyncs", "store/local.py", "_fsync_dir"),
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


def _profiled(label: str, fn: Callable[[], T], steps: list[tuple[str, str, str]]) -> T:
    profile = cProfile.Profile(time.process_time)
    started = time.process_time()
    profile.enable()
    out = fn()
    profile.disable()
    cpu = time.process_time() - started
    stats: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in stats.values())
    print(f"\n{label}: {cpu * 1e3:.0f} ms CPU under the profiler")
    print("| step | CPU (profiled) | share |\n|---|---|---|")
    for name, path, func in steps:
        spent = sum(v[3] for k, v in stats.items() if k[0].endswith(path) and k[2] == func)
        print(f"| {name} | {spent * 1e3:.0f} ms | {100 * spent / total:.0f}% |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=int, default=2000)
    args = parser.parse_args()
    import s3spill.gc.apply as apply_module
    import s3spill.gc.plan as plan_module
    from s3spill.gc.apply import apply_cleanup
    from s3spill.gc.models import CleanupPolicy, CleanupScope
    from s3spill.gc.plan import plan_cleanup
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
                          "load_average": os.getloadavg()}))
        store = LocalStore(root)
        later = datetime.now(UTC) + timedelta(days=3)
        policy = CleanupPolicy(dry_run=False, max_deletions=None)
        plan = _profiled("plan", lambda: plan_cleanup(store, CleanupScope(), policy, out=Path(tmp) / "plan",
                                                      now=later), PLAN_STEPS)
        report = _profiled("apply", lambda: apply_cleanup(store, plan, now=lambda: later), APPLY_STEPS)
        print(f"\ndeleted: {report.counts.get('deleted', 0)}")


if __name__ == "__main__":
    main()
