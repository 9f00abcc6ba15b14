"""``s3spill gc plan|apply|run``: the garbage collector as a batch job.

Exit codes are the one table's (:mod:`s3spill.cli.exitcodes`, which ``--help`` prints);
the ones gc uses: 0 done; 2 a usage error or failed request; 3 done, but some planned
deletions met a race or a store error and were retained (run again later); 4 refused
(unsafe TTL, a plan that does not verify or belongs to another store, no safe delete
method); 5 a plan or journal failed its digest; 6 the store could not be reached; 7 done,
but some session's journal is in doubt (everything in it was kept; an operator should
look); 8 another run holds the scope's lock; 130 interrupted (SIGTERM or Ctrl-C: the
sessions in flight finish and the report of what was done is still printed). The report
is one JSON document on stdout off a terminal, one summary line per phase on one;
progress goes to stderr (a bar on a TTY, structured log lines otherwise).

Their flags are :mod:`.gc_args`'s, which imports this module only when a gc command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from s3spill.cli.argtypes import session_from_args, store_from_args
from s3spill.cli.exitcodes import ExitCode
from s3spill.cli.failures import describe
from s3spill.cli.gc_ops import DecisionReport, Progress, emit_metrics, stop_on_sigterm
from s3spill.cli.policy_args import policy_from_args
from s3spill.config import TransferConfig
from s3spill.errors import CleanupRefused, ConfigError
from s3spill.gc.lock import scope_of
from s3spill.gc.metered_store import MeteredStore
from s3spill.gc.models import CleanupPolicy, CleanupReport, CleanupScope
from s3spill.gc.plan import plan_cleanup, plan_report
from s3spill.gc.planfile import CleanupPlan, load_plan_from_store, save_plan_to_store
from s3spill.keys import session_hash
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore, StoreCapabilities

log = get_logger("s3spill.cli.gc")


def _scope(args: argparse.Namespace) -> CleanupScope:
    if args.all:
        return args.shard if args.shard else CleanupScope()
    if args.shard:
        raise ConfigError("--shard needs --all")
    # Without --session or --all: the session the other commands default to (this
    # directory's), so the quick start's `gc plan` plans what its `run` stored.
    session = args.gc_session or session_from_args(args)
    return CleanupScope(session_hash=session_hash(session))


def _policy(args: argparse.Namespace, *, dry_run: bool) -> CleanupPolicy:
    gc = policy_from_args(args).policy.gc  # the fleet policy, with these flags on top
    return CleanupPolicy(
        orphan_ttl=gc.orphan_ttl, session_ttl=gc.session_ttl, tombstone_ttl=gc.tombstone_ttl,
        max_deletions=gc.max_deletions, dry_run=dry_run,
        allow_dangerously_short_ttl=args.allow_dangerously_short_ttl,
    )


def _duration(value: timedelta) -> str:
    return f"{value.total_seconds():g}s"


def _config(args: argparse.Namespace) -> TransferConfig:
    if getattr(args, "max_concurrency", None):
        return TransferConfig(max_concurrency=args.max_concurrency)
    return TransferConfig()


def _print(doc: dict[str, Any], report: DecisionReport, *, as_json: bool) -> None:
    """The summary: the report's last line, and stdout unless replaced.

    Scripts and CronJobs read stdout off a terminal: JSON there, always. A person at a
    terminal gets one line per phase (``--json`` gives them the JSON too).
    """
    if report.enabled:
        doc = _without_items(doc)  # each decision has its own line in the report
        report.summary(doc)
    if report.replaces_stdout:
        return
    if as_json or not sys.stdout.isatty():
        sys.stdout.write(json.dumps(doc, sort_keys=True, default=str) + "\n")
        return
    fields = CleanupReport.model_fields
    for phase in (doc["plan"], doc["apply"]) if "apply" in doc else (doc,):
        report_only = {k: v for k, v in phase.items() if k in fields}
        sys.stdout.write(CleanupReport.model_validate(report_only).summary() + "\n")
    for key, label in (("note", "note"), ("apply_with", "apply it with")):
        if key in doc:
            sys.stdout.write(f"{label}: {doc[key]}\n")


def _without_items(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: _without_items(v) if isinstance(v, dict) else v for k, v in doc.items() if k != "items"}


def _remove(path: object) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(str(path))


def _exit_code(report: CleanupReport) -> ExitCode:
    if report.interrupted:
        return ExitCode.INTERRUPTED
    if report.journal_doubts:
        return ExitCode.JOURNAL_DOUBT
    return ExitCode.RETAINED if report.races else ExitCode.OK


def _capabilities(args: argparse.Namespace, store: ObjectStore) -> StoreCapabilities:
    """What the store was seen to honour (``s3spill doctor``), unless --no-probe."""
    if args.no_probe:
        return store.capabilities()
    from s3spill.store.probes import probe_capabilities

    report = probe_capabilities(store)
    log.info("gc.apply.probed", delete_mode=report.gc_delete_mode, store=store.url)
    return report.capabilities()


def _apply(args: argparse.Namespace, plan: CleanupPlan, dry_run: bool,
           report: DecisionReport) -> CleanupReport:
    """Apply (the library holds the scope's run lock while it may delete), stopping cleanly on SIGTERM."""
    from s3spill.gc.apply import apply_cleanup  # here, not at import: a plan never loads the apply side

    store = store_from_args(args, create=False)
    policy = _policy(args, dry_run=dry_run)  # apply's own policy: the plan's only narrows it
    caps = None if dry_run else _capabilities(args, store)
    progress = Progress("apply", plan.footer.entries)
    try:
        with stop_on_sigterm() as stop:
            return apply_cleanup(
                store, plan, dry_run=dry_run, config=_config(args), capabilities=caps, policy=policy,
                rate_limit=args.rate_limit, force_unverified_deletes=args.force_unverified_deletes,
                progress=progress.update, stop=stop, lock_wait=getattr(args, "lock_wait", 0.0),
                decisions=report.decision if report.enabled else None)
    finally:
        progress.close()


@dataclass
class _Run:
    """One gc command as the envelope sees it: its report file, start time, and scope once known."""

    report: DecisionReport
    started: float
    scope: CleanupScope | None = None


def _enveloped(args: argparse.Namespace, phase: str, body: Callable[[_Run], int]) -> int:
    """Run one gc command: a refusal or a held lock is an exit code with metrics; the report is closed."""
    run = _Run(DecisionReport(args.report), time.monotonic())
    try:
        return body(run)
    except CleanupRefused as exc:  # GcRunLocked too: the table gives each its own code
        code = _said(exc)
    finally:
        run.report.close()  # idempotent: a finished body closed it already
    emit_metrics(args, phase=phase, scope=scope_of(run.scope or CleanupScope()), doc=None,
                 exit_code=code, duration=time.monotonic() - run.started)
    return code


def _said(exc: Exception) -> int:
    failure = describe(exc)
    print(failure.line(), file=sys.stderr)
    return int(failure.code)


def _finish(args: argparse.Namespace, run: _Run, doc: dict[str, Any], code: int, *, phase: str) -> int:
    """Print the summary, publish metrics, close the report; returns the exit code."""
    _print(doc, run.report, as_json=args.json)
    counts = (doc.get("apply") or doc).get("counts", {})
    log.info(f"gc.{phase}.done", exit_code=code, counts=counts)
    metrics_doc = doc.get("apply") or doc
    assert run.scope is not None
    emit_metrics(args, phase=phase, scope=scope_of(run.scope), doc=metrics_doc, exit_code=code,
                 duration=time.monotonic() - run.started)
    run.report.close()
    return code


def _apply_command(args: argparse.Namespace, target: str, policy: CleanupPolicy) -> str:
    """The ``gc apply`` command that applies what this plan planned.

    Apply never takes its policy from the plan (a plan may only narrow it), so a plan made
    under non-default TTLs needs the same flags at apply time; without them the default
    24 h TTLs would keep everything the plan meant to delete.
    """
    words = ["s3spill"]
    if getattr(args, "store", None):
        words += ["--store", args.store]
    words += ["gc", "apply"]
    default = CleanupPolicy()
    if policy.orphan_ttl != default.orphan_ttl:
        words += ["--orphan-ttl", args.orphan_ttl or _duration(policy.orphan_ttl)]
    if policy.session_ttl != default.session_ttl:
        words += ["--session-ttl", args.session_ttl or _duration(policy.session_ttl)]
    if policy.max_deletions != default.max_deletions:
        words += ["--max-deletions", str(policy.max_deletions)]
    if policy.allow_dangerously_short_ttl:
        words.append("--allow-dangerously-short-ttl")
    return shlex.join([*words, target])  # the plan last, where scripts look for it


def cmd_plan(args: argparse.Namespace) -> int:
    return _enveloped(args, "plan", lambda run: _plan(args, run))


def _plan(args: argparse.Namespace, run: _Run) -> int:
    run.scope = scope = _scope(args)
    policy = _policy(args, dry_run=True)
    store = store_from_args(args, create=False)
    to_store = args.out == "store"
    meter = MeteredStore(store)
    progress = Progress("plan", None)
    try:
        plan = plan_cleanup(meter, scope, policy, out=None if to_store or not args.out else args.out,
                            config=_config(args), progress=progress.update)
    finally:
        progress.close()
    run.report.plan_decisions(plan)
    doc = plan_report(plan, time.monotonic() - run.started, dict(meter.requests),
                      sessions=plan.sessions or 0).model_dump(mode="json")
    doc["plan_path"] = str(plan.path)
    if to_store:
        doc["plan_key"] = save_plan_to_store(store, plan)
        doc["apply_with"] = _apply_command(args, f"store:{plan.plan_id}", policy)
        os.unlink(plan.path)  # the stored copy is the plan; the local one was scaffolding
        doc["plan_path"] = None
    else:
        doc["apply_with"] = _apply_command(args, str(plan.path), policy)
        if not args.out:
            doc["note"] = ("the plan file is in the temporary directory and yours to delete "
                           "once applied (or pass --out FILE or --out store)")
    code = ExitCode.JOURNAL_DOUBT if plan.footer.counts.get("retained_journal_doubt") else ExitCode.OK
    return _finish(args, run, doc, code, phase="plan")


def cmd_apply(args: argparse.Namespace) -> int:
    return _enveloped(args, "apply", lambda run: _apply_plan(args, run))


def _apply_plan(args: argparse.Namespace, run: _Run) -> int:
    downloaded = args.plan.startswith("store:")
    if downloaded:
        plan = load_plan_from_store(store_from_args(args, create=False), args.plan[len("store:"):])
    else:
        plan = CleanupPlan.open(args.plan)
    run.scope = plan.header.scope
    try:
        result = _apply(args, plan, args.dry_run, run.report)
    finally:
        if downloaded:  # our temporary copy of the stored plan
            _remove(plan.path)
    return _finish(args, run, result.model_dump(mode="json"), _exit_code(result), phase="apply")


def cmd_run(args: argparse.Namespace) -> int:
    return _enveloped(args, "apply", lambda run: _plan_and_apply(args, run))


def _plan_and_apply(args: argparse.Namespace, run: _Run) -> int:
    run.scope = scope = _scope(args)
    policy = _policy(args, dry_run=not args.apply)
    meter = MeteredStore(store_from_args(args, create=False))
    progress = Progress("plan", None)
    try:
        plan = plan_cleanup(meter, scope, policy, out=args.out, config=_config(args),
                            progress=progress.update)
    finally:
        progress.close()
    try:
        run.report.plan_decisions(plan)
        planned = plan_report(plan, time.monotonic() - run.started, dict(meter.requests),
                              sessions=plan.sessions or 0)
        result = _apply(args, plan, not args.apply, run.report)
    finally:
        if not args.out:  # a plan nobody asked to keep does not outlive the run
            _remove(plan.path)
    doc = {"plan": planned.model_dump(mode="json") | {
               "plan_path": str(plan.path), "plan_kept": bool(args.out)},
           "apply": result.model_dump(mode="json")}
    code = ExitCode.JOURNAL_DOUBT if planned.counts.get("retained_journal_doubt") else _exit_code(result)
    return _finish(args, run, doc, code, phase="apply")
