"""What a GC command does around the library for an operator: report, progress, metrics, lock, SIGTERM.

Kept apart from :mod:`s3spill.cli.gc_cmds` (which parses and calls the library) because
these are the batch-job concerns of a CronJob, not of GC itself:

* ``--report FILE`` (or ``-``): JSON Lines, one line per decision with the object's key,
  then one summary line whose counts are the ones the log line and stdout carry — a
  3,000-object run is 3,001 short lines a tool can ``grep``/``jq``, not one indented
  document;
* progress that counts work *done*, with a rate: a tqdm bar on a TTY, else a log line
  every 5 % (apply) or every 25 sessions (plan, whose total is unknown while it lists);
* ``--metrics-textfile`` / ``--pushgateway``: :mod:`s3spill.gc.prometheus`, written even when
  the run fails, with its exit code;
* ``--lock-wait``: how long ``apply_cleanup`` waits for the scope's run lock (the library
  takes, renews and releases it: :mod:`s3spill.gc.lock`);
* SIGTERM (a pod being stopped) stops starting new sessions and lets the run finish the
  ones in flight, so the report still says exactly what was done.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import IO, TYPE_CHECKING, Any

from s3spill.log import get_logger

if TYPE_CHECKING:  # the GC library loads with gc_cmds, not with the parser (gc_args)
    from s3spill.gc.planfile import CleanupPlan

log = get_logger("s3spill.cli.gc")


def ops_args(p: argparse.ArgumentParser, *, deletes: bool) -> None:
    p.add_argument("--json", action="store_true",
                   help="print the JSON report on a terminal too (off a terminal it is always JSON; "
                   "on one, the default is a summary line)")
    p.add_argument("--report", metavar="FILE",
                   help="also write a JSON Lines report: one line per decision (with the object's "
                   "key), then one summary line; '-' writes it to stdout instead of the JSON summary")
    p.add_argument("--metrics-textfile", metavar="PATH",
                   help="write Prometheus metrics for node-exporter's textfile collector (needs the "
                   "`metrics` extra)")
    p.add_argument("--pushgateway", metavar="HOST:PORT",
                   help="push Prometheus metrics to this Pushgateway (needs the `metrics` extra)")
    if deletes:
        p.add_argument("--lock-wait", type=float, default=0.0, metavar="SECONDS",
                       help="if another run holds this scope's lock, wait this long for it "
                       "(default 0: exit 8 at once)")


class DecisionReport:
    """The ``--report`` file: one JSON object per line, written as decisions are made."""

    def __init__(self, target: str | None) -> None:
        self._own = target not in (None, "-")
        self._fh: IO[str] | None = (open(target, "w", encoding="utf-8") if self._own and target  # noqa: SIM115
                                    else sys.stdout if target == "-" else None)
        self._lock = threading.Lock()
        self.lines = 0

    @property
    def enabled(self) -> bool:
        return self._fh is not None

    @property
    def replaces_stdout(self) -> bool:
        return self._fh is sys.stdout

    def decision(self, line: dict[str, Any]) -> None:
        if self._fh is None:
            return
        text = json.dumps(line, sort_keys=True, separators=(",", ":"), default=str)
        with self._lock:
            self._fh.write(text + "\n")
            self.lines += 1

    def plan_decisions(self, plan: CleanupPlan) -> None:
        """Every plan entry as a decision line (one pass over the plan file, only if asked)."""
        if self._fh is None:
            return
        for entry in plan.entries():
            self.decision({"kind": "gc_decision", "phase": "plan", "status": entry.status,
                           "object_kind": entry.object_kind, "key": entry.key,
                           "session_hash": entry.session_hash, "size": entry.size,
                           "reason": entry.reason})

    def summary(self, doc: dict[str, Any]) -> None:
        self.decision({"kind": "gc_summary", **doc})

    def close(self) -> None:
        if self._fh is not None:
            self._fh.flush()
            if self._own:
                self._fh.close()
        self._fh = None


class Progress:
    """Work done, with a rate: a tqdm bar on a TTY, periodic log lines otherwise."""

    def __init__(self, phase: str, total: int | None, *, every: int | None = None) -> None:
        self.phase = phase
        self.total = total
        self.started = time.monotonic()
        self.every = every or (max(1, total // 20) if total else 25)
        self._last_logged = 0
        self._bar: Any = None
        if sys.stderr.isatty():
            try:
                from tqdm import tqdm

                self._bar = tqdm(total=total, unit="obj" if phase == "apply" else "session",
                                 desc=f"gc {phase}", file=sys.stderr)
            except ImportError:
                self._bar = None
        self._seen = 0

    def update(self, done: int) -> None:
        if self._bar is not None:
            self._bar.update(done - self._seen)
            self._seen = done
            return
        if done - self._last_logged >= self.every or (self.total is not None and done >= self.total):
            self._last_logged = done
            elapsed = max(time.monotonic() - self.started, 1e-9)
            log.info(f"gc.{self.phase}.progress", done=done, total=self.total,
                     rate=round(done / elapsed, 1), elapsed=round(elapsed, 1))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def emit_metrics(args: argparse.Namespace, *, phase: str, scope: str, doc: dict[str, Any] | None,
                 exit_code: int, duration: float) -> None:
    """Textfile and/or Pushgateway, if asked; a failure to publish is a warning, not the run's."""
    if not (getattr(args, "metrics_textfile", None) or getattr(args, "pushgateway", None)):
        return
    from s3spill.gc.prometheus import RunMetrics, push_metrics, write_textfile

    doc = doc or {}
    metrics = RunMetrics(phase=phase, scope=scope, counts=doc.get("counts", {}),
                         bytes=doc.get("bytes", {}), requests=doc.get("requests", {}),
                         duration_seconds=duration,
                         journal_doubt=int(doc.get("counts", {}).get("retained_journal_doubt", 0)),
                         exit_code=exit_code, finished_at=time.time())
    try:
        if args.metrics_textfile:
            write_textfile(args.metrics_textfile, metrics)
        if args.pushgateway:
            push_metrics(args.pushgateway, metrics)
    except (OSError, ImportError) as exc:
        log.warning("gc.metrics_failed", error=f"{type(exc).__name__}: {exc}"[:300])


@contextlib.contextmanager
def stop_on_sigterm() -> Iterator[threading.Event]:
    """SIGTERM sets the event the apply loop checks; the previous handler is restored after."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        log.warning("gc.sigterm", action="finishing the sessions in flight, then reporting")
        stop.set()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGTERM, previous)
