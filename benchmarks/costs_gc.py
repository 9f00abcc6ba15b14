"""GC section of ``benchmarks/costs.py``: plan and apply on the local store against plain Python.

One population per size (N artifacts in N/100 sessions, a quarter of each session's
referenced through the lease journal, written with ``os.fsync`` switched off in the
populating child only: populating is not what is measured). Each round copies it twice,
then times, each in a fresh process (the call alone, imports done): our
``plan_cleanup`` + ``apply_cleanup`` with a clock three days ahead on one copy, and
:mod:`benchmarks.plain`'s walk + one manifest per session + unlink on the other. The
plain side reads a ``plain-manifest.json`` per session that lists the referenced
artifacts (what our journal says, written beside it at population time). With
``--gc-signed`` a third side runs ours with a plan key (``S3SPILL_PLAN_KEY``): the plan
carries a MAC, so apply skips re-reading each commit record. The 1-minute load average
is recorded before the first round and after each, and, with two sizes or more,
:func:`section_gc_linearity` adds the per-artifact CPU of the largest over the smallest. Both sides
delete the same objects: our apply gets the plan's policy (no ``max_deletions``), not the
apply-time default (10,000), which had our side delete 10,000 of the 15,000 at 20,000.
With ``--gc-before DIR`` (another checkout, e.g. ``/work/main``) a side ``before`` runs that
tree's GC on its own copy of the same population in every round, interleaved with ours,
and the rows "ours over before" compare the two in the same run (signed, when
``--gc-signed``: the side closest to what is measured against the plain baseline).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

POPULATE = """
import json, os, sys
sys.path.insert(0, {root!r})
os.fsync = lambda fd: None  # populating only; the measured GC runs in other processes
from collections import defaultdict
from pathlib import Path
from benchmarks.gc_bench import populate_session
from s3spill.artifacts.store import ArtifactStore
from s3spill.leases.journal import LeaseJournal
from s3spill.store.local import LocalStore
referenced = defaultdict(list)  # session hash -> names its journal references
publish = LeaseJournal.publish_reference
def recording(self, claim, *args, **kwargs):
    _, shash, name, _ = claim.source_id.split(":")
    referenced[shash].append(name)
    return publish(self, claim, *args, **kwargs)
LeaseJournal.publish_reference = recording
root = Path({store!r})
store = LocalStore(root)
writer = ArtifactStore(store)
for i in range({sessions}):
    populate_session(store, writer, i, {per_session}, False)
for shash, names in referenced.items():
    d = root / "objects" / "v1" / "sessions" / shash / "journal"
    (d / "plain-manifest.json").write_text(json.dumps({{"referenced": names}}))
print(json.dumps({{"sessions": len(referenced)}}))
"""

OURS = """
import json, sys, time
sys.path.insert(0, {root!r})
from datetime import UTC, datetime, timedelta
from pathlib import Path
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.store.local import LocalStore
store = LocalStore(Path({store!r}))
later = datetime.now(UTC) + timedelta(days=3)
policy = CleanupPolicy(dry_run=False, max_deletions=None)
w, c = time.perf_counter(), time.process_time()
plan = plan_cleanup(store, CleanupScope(), policy, out=Path({plan!r}), now=later)
pw, pc = time.perf_counter() - w, time.process_time() - c
w, c = time.perf_counter(), time.process_time()
report = apply_cleanup(store, plan, now=lambda: later, policy=policy)
aw, ac = time.perf_counter() - w, time.process_time() - c
print(json.dumps({{"plan_wall": pw, "plan_cpu": pc, "apply_wall": aw, "apply_cpu": ac,
                  "deleted": report.counts.get("deleted", 0)}}))
"""

PLAIN = """
import json, sys, time
sys.path.insert(0, {root!r})
from benchmarks.plain import gc_apply, gc_plan
later = time.time() + 3 * 86400  # the clock ours gets: every artifact past the 24 h TTL
w, c = time.perf_counter(), time.process_time()
planned = gc_plan({store!r}, {plan!r}, later)
pw, pc = time.perf_counter() - w, time.process_time() - c
w, c = time.perf_counter(), time.process_time()
deleted = gc_apply({store!r}, {plan!r})
aw, ac = time.perf_counter() - w, time.process_time() - c
print(json.dumps({{"plan_wall": pw, "plan_cpu": pc, "apply_wall": aw, "apply_cpu": ac, "deleted": deleted}}))
"""


def _child(code: str, env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


#: A plan key for the ``ours_signed`` side: a plan with a MAC lets apply skip re-reading
#: each commit record (``docs/gc.md``); benchmark-only, never a real secret.
BENCH_PLAN_KEY = "costs-gc-benchmark-plan-key"


def section_gc(report: Any, work: Path, artifacts: int, rounds: int, *, signed: bool = False,
               before: Path | None = None) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3SPILL_")}
    env["PYTHONPATH"] = str(ROOT)
    sessions = max(1, artifacts // 100)
    source = work / "population"
    _child(POPULATE.format(root=str(ROOT), store=str(source), sessions=sessions,
                           per_session=artifacts // sessions), env)
    sides = [("ours", OURS, env, ROOT), ("plain", PLAIN, env, ROOT)]
    if signed:
        sides.insert(1, ("ours_signed", OURS, {**env, "S3SPILL_PLAN_KEY": BENCH_PLAN_KEY}, ROOT))
    if before is not None:
        before_env = {**env, "PYTHONPATH": str(before)}
        if signed:
            before_env["S3SPILL_PLAN_KEY"] = BENCH_PLAN_KEY
        sides.insert(0, ("before", OURS, before_env, before))
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side, _, _, _ in sides}
    load = [os.getloadavg()[0]]
    for r in range(rounds):
        for side, code, side_env, tree in sides:
            copy = work / f"{side}-{r}"
            shutil.copytree(source, copy, symlinks=True)
            runs[side].append(_child(code.format(root=str(tree), store=str(copy),
                                                 plan=str(work / f"{side}-{r}.plan")), side_env))
            shutil.rmtree(copy)
        load.append(os.getloadavg()[0])
    figures: dict[str, Any] = {"artifacts": artifacts, "sessions": sessions, "rounds": rounds,
                               "load_average_1min": [round(x, 1) for x in load]}
    for side, results in runs.items():
        for key in ("plan_wall", "plan_cpu", "apply_wall", "apply_cpu"):
            figures[f"{side}_{key}_s"] = round(statistics.median(x[key] for x in results), 3)
        figures[f"{side}_deleted"] = results[0]["deleted"]
    report.raw[f"gc_{artifacts}"] = figures
    for step in ("plan", "apply"):
        report.ratio(f"GC {step}, {artifacts:,} local artifacts (wall, median of {rounds})",
                     figures[f"ours_{step}_wall_s"], figures[f"plain_{step}_wall_s"], "s", 1.0,
                     f"plain {step}")
        report.ratio(f"GC {step}, {artifacts:,} (CPU)", figures[f"ours_{step}_cpu_s"],
                     figures[f"plain_{step}_cpu_s"], "s", 1.0, f"plain {step}")
        report.rows.append((f"GC {step} per artifact, {artifacts:,} (CPU)",
                            f"{figures[f'ours_{step}_cpu_s'] / artifacts * 1e6:.0f} µs",
                            f"{figures[f'plain_{step}_cpu_s'] / artifacts * 1e6:.0f} µs (plain)",
                            figures[f"ours_{step}_cpu_s"] / max(1e-9, figures[f"plain_{step}_cpu_s"]), None))
    if signed:
        report.ratio(f"GC apply of a signed plan, {artifacts:,} (CPU)", figures["ours_signed_apply_cpu_s"],
                     figures["plain_apply_cpu_s"], "s", 1.0, "plain apply")
    if before is not None:
        mine = "ours_signed" if signed else "ours"
        for step in ("plan", "apply"):
            report.ratio(f"GC {step}, {artifacts:,}, ours over {before} (CPU)",
                         figures[f"{mine}_{step}_cpu_s"], figures[f"before_{step}_cpu_s"], "s", None,
                         f"before {step}")


def section_gc_linearity(report: Any) -> None:
    """Per-artifact CPU at the largest size over the smallest's, for each step (1.0: linear)."""
    sizes = sorted(int(k.split("_")[1]) for k in report.raw if k.startswith("gc_") and k[3:].isdigit())
    if len(sizes) < 2:
        return
    small, large = report.raw[f"gc_{sizes[0]}"], report.raw[f"gc_{sizes[-1]}"]
    for step in ("plan", "apply"):
        per = [report.raw[f"gc_{n}"][f"ours_{step}_cpu_s"] / n * 1e6 for n in sizes]
        report.rows.append((
            f"GC {step} CPU per artifact at {sizes[-1]:,} over {sizes[0]:,} (linear: 1.0x)",
            f"{large[f'ours_{step}_cpu_s'] / sizes[-1] * 1e6:.0f} µs",
            f"{small[f'ours_{step}_cpu_s'] / sizes[0] * 1e6:.0f} µs (" + " / ".join(
                f"{p:.0f}" for p in per) + f" µs at {' / '.join(f'{n:,}' for n in sizes)})",
            (large[f"ours_{step}_cpu_s"] / sizes[-1]) / (small[f"ours_{step}_cpu_s"] / sizes[0]), 1.25))
