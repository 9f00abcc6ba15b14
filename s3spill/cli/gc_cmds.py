"""``s3spill gc plan|apply|run``: the garbage collector as a batch job.

Exit codes come from the one table (:mod:`s3spill.cli.exitcodes`): 0 done; 3 done, but
some planned deletions met a race or a store error and were retained (run again later);
4 refused (unsafe TTL, a plan that does not verify or belongs to another store, no safe
delete method); 7 done, but some session's journal is in doubt
(``retained_journal_doubt``: its manifest is missing or behind its owner slots or
segments; everything in it was kept, and an operator should look); 2 a usage error or
failed request. The final report is one JSON
document on stdout; progress goes to stderr (a bar on a TTY, structured log lines otherwise).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from typing import Any

from s3spill.cli.argtypes import count, positive, session_from_args, store_from_args, utf8
from s3spill.cli.exitcodes import ExitCode
from s3spill.cli.gc_ops import (
    DecisionReport,
    Progress,
    emit_metrics,
    lock_scope,
    ops_args,
    renewing,
    run_lock,
    stop_on_sigterm,
)
from s3spill.config import TransferConfig
from s3spill.errors import CleanupRefused, ConfigError, GcRunLocked
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.metered_store import MeteredStore
from s3spill.gc.models import CleanupPolicy, CleanupReport, CleanupScope, parse_duration
from s3spill.gc.plan import plan_cleanup, plan_report
from s3spill.gc.planfile import CleanupPlan, load_plan_from_store, save_plan_to_store
from s3spill.keys import GC_PLANS, session_hash
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore, StoreCapabilities

EXIT_OK = int(ExitCode.OK)
EXIT_RACES = int(ExitCode.RETAINED)
EXIT_REFUSED = int(ExitCode.REFUSED)
EXIT_JOURNAL_DOUBT = int(ExitCode.JOURNAL_DOUBT)
log = get_logger("s3spill.cli.gc")


def _plan_args(p: argparse.ArgumentParser) -> None:
    who = p.add_mutually_exclusive_group()
    who.add_argument("--session", dest="gc_session", metavar="ID", type=utf8,
                     help="plan one session (default: the global --session / $S3SPILL_SESSION, "
                          "else this directory's)")
    who.add_argument("--all", action="store_true", help="plan every session in the store")
    p.add_argument("--shard", metavar="K/N", type=_shard,
                   help="with --all: only shard K of N of the session-hash space")
    _policy_args(p)


def _policy_args(p: argparse.ArgumentParser) -> None:
    """The cleanup policy; ``gc apply`` takes it too, because apply never trusts a plan's."""
    p.add_argument("--orphan-ttl", default="24h", help="keep unclaimed artifacts this long (default 24h)")
    p.add_argument("--session-ttl", default="24h", help="an active session protects all its artifacts "
                   "this long after its last activity (default 24h)")
    p.add_argument("--max-deletions", type=count, default=10_000,
                   help="plan at most N deletions (default 10000)")
    p.add_argument("--allow-dangerously-short-ttl", action="store_true",
                   help="accept TTLs under one hour (tests and demos only: can delete what a live "
                   "writer is about to reference)")


def _shard(text: str) -> CleanupScope:
    """``K/N`` with 0 <= K < N, checked while parsing (``0/0`` is a usage error)."""
    try:
        return CleanupScope.parse_shard(text)
    except (ConfigError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise argparse.ArgumentTypeError(f"bad shard {text!r}: use K/N with 0 <= K < N") from exc


def _apply_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-concurrency", type=positive, default=None,
                   help="sessions planned and applied in parallel "
                   "(default: TransferConfig.max_concurrency)")
    p.add_argument("--rate-limit", type=float, default=None, metavar="REQ_PER_S",
                   help="at most this many store requests per second (halved on SlowDown)")
    p.add_argument("--no-probe", action="store_true",
                   help="trust the backend's declared capabilities instead of probing the store "
                   "with s3spill doctor first (S3-compatible stores often ignore If-Match on delete)")
    p.add_argument("--force-unverified-deletes", action="store_true",
                   help="DANGEROUS: delete even where the store honours neither conditional nor "
                   "version-pinned deletes (a replaced artifact could be lost)")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    gc = sub.add_parser("gc", help="garbage-collect unreferenced artifacts (plan, then apply)")
    gcsub = gc.add_subparsers(dest="gc_command", metavar="STEP")

    plan = gcsub.add_parser("plan", help="read-only: decide what could be deleted, write a plan")
    _plan_args(plan)
    plan.add_argument("--out", metavar="FILE", help="write the plan here (JSON Lines); "
                      f"'store' saves it in the store under {GC_PLANS}/ (default: a file in the "
                      "temporary directory, named in the output: yours to delete after applying)")
    plan.add_argument("--max-concurrency", type=positive, default=None,
                      help="sessions planned in parallel (default: TransferConfig.max_concurrency)")
    ops_args(plan, deletes=False)
    plan.set_defaults(func=cmd_plan)

    apply = gcsub.add_parser("apply", help="apply a plan: condemn, revalidate, delete conditionally")
    apply.add_argument("plan", metavar="PLAN", help="a plan file, or store:PLAN_ID for a stored plan")
    apply.add_argument("--dry-run", action="store_true", help="revalidate nothing, delete nothing")
    _policy_args(apply)
    _apply_args(apply)
    ops_args(apply, deletes=True)
    apply.set_defaults(func=cmd_apply)

    run = gcsub.add_parser("run", help="plan and apply in one process (a dry run unless --apply)")
    _plan_args(run)
    _apply_args(run)
    run.add_argument("--apply", action="store_true", help="really delete (default: dry run)")
    run.add_argument("--out", metavar="FILE", help="keep the plan file here (default: a temporary "
                     "file, removed when the run ends)")
    ops_args(run, deletes=True)
    run.set_defaults(func=cmd_run)

    def usage(_args: argparse.Namespace) -> int:
        gc.print_help()
        return 2

    gc.set_defaults(func=usage)


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
    return CleanupPolicy(
        orphan_ttl=parse_duration(args.orphan_ttl), session_ttl=parse_duration(args.session_ttl),
        max_deletions=args.max_deletions, dry_run=dry_run,
        allow_dangerously_short_ttl=args.allow_dangerously_short_ttl,
    )


def _config(args: argparse.Namespace) -> TransferConfig:
    if getattr(args, "max_concurrency", None):
        return TransferConfig(max_concurrency=args.max_concurrency)
    return TransferConfig()


def _print(doc: dict[str, Any], report: DecisionReport) -> None:
    """The summary: the report's last line, and stdout (compact off a TTY) unless replaced."""
    if report.enabled:
        doc = _without_items(doc)  # each decision has its own line in the report
        report.summary(doc)
    if not report.replaces_stdout:
        indent = 2 if sys.stdout.isatty() else None
        sys.stdout.write(json.dumps(doc, indent=indent, sort_keys=True, default=str) + "\n")


def _without_items(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: _without_items(v) if isinstance(v, dict) else v for k, v in doc.items() if k != "items"}


def _remove(path: object) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(str(path))


def _exit_code(report: CleanupReport) -> int:
    if report.interrupted:
        return int(ExitCode.INTERRUPTED)
    if report.journal_doubts:
        return EXIT_JOURNAL_DOUBT
    return EXIT_RACES if report.races else EXIT_OK


def _refused(exc: CleanupRefused) -> int:
    print(f"s3spill: refused: {exc}", file=sys.stderr)
    return EXIT_REFUSED


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
    """Apply under the scope's run lock (when it may delete), stopping cleanly on SIGTERM."""
    store = store_from_args(args)
    policy = _policy(args, dry_run=dry_run)  # apply's own policy: the plan's only narrows it
    caps = None if dry_run else _capabilities(args, store)
    progress = Progress("apply", plan.footer.entries)
    try:
        with run_lock(args, store, plan.header.scope, plan.plan_id, deletes=not dry_run) as lock, \
                stop_on_sigterm() as stop:
            return apply_cleanup(
                store, plan, dry_run=dry_run, config=_config(args), capabilities=caps, policy=policy,
                rate_limit=args.rate_limit, force_unverified_deletes=args.force_unverified_deletes,
                progress=renewing(progress.update, lock), stop=stop,
                decisions=report.decision if report.enabled else None)
    finally:
        progress.close()


def _finish(args: argparse.Namespace, report: DecisionReport, doc: dict[str, Any], code: int, *,
            phase: str, scope: CleanupScope, started: float) -> int:
    """Print the summary, publish metrics, close the report; returns the exit code."""
    _print(doc, report)
    counts = (doc.get("apply") or doc).get("counts", {})
    log.info(f"gc.{phase}.done", exit_code=code, counts=counts)
    metrics_doc = doc.get("apply") or doc
    emit_metrics(args, phase=phase, scope=lock_scope(scope), doc=metrics_doc, exit_code=code,
                 duration=time.monotonic() - started)
    report.close()
    return code


def _failed(args: argparse.Namespace, report: DecisionReport, code: int, *, phase: str,
            scope: CleanupScope | None, started: float) -> int:
    emit_metrics(args, phase=phase, scope=lock_scope(scope or CleanupScope()), doc=None,
                 exit_code=code, duration=time.monotonic() - started)
    report.close()
    return code


def cmd_plan(args: argparse.Namespace) -> int:
    report = DecisionReport(args.report)
    started = time.monotonic()
    scope: CleanupScope | None = None
    try:
        scope = _scope(args)
        policy = _policy(args, dry_run=True)
        store = store_from_args(args)
        to_store = args.out == "store"
        meter = MeteredStore(store)
        progress = Progress("plan", None)
        try:
            plan = plan_cleanup(meter, scope, policy,
                                out=None if to_store or not args.out else args.out,
                                config=_config(args), progress=progress.update)
        finally:
            progress.close()
        report.plan_decisions(plan)
        doc = plan_report(plan, time.monotonic() - started, dict(meter.requests),
                          sessions=plan.sessions or 0).model_dump(mode="json")
        doc["plan_path"] = str(plan.path)
        if to_store:
            doc["plan_key"] = save_plan_to_store(store, plan)
            doc["apply_with"] = f"s3spill gc apply store:{plan.plan_id}"
            os.unlink(plan.path)  # the stored copy is the plan; the local one was scaffolding
            doc["plan_path"] = None
        else:
            doc["apply_with"] = f"s3spill gc apply {plan.path}"
            if not args.out:
                doc["note"] = ("the plan file is in the temporary directory and yours to delete "
                               "once applied (or pass --out FILE or --out store)")
        code = EXIT_JOURNAL_DOUBT if plan.footer.counts.get("retained_journal_doubt") else EXIT_OK
        return _finish(args, report, doc, code, phase="plan", scope=scope, started=started)
    except CleanupRefused as exc:
        return _failed(args, report, _refused(exc), phase="plan", scope=scope, started=started)
    except BaseException:
        report.close()
        raise


def cmd_apply(args: argparse.Namespace) -> int:
    report = DecisionReport(args.report)
    started = time.monotonic()
    scope: CleanupScope | None = None
    try:
        downloaded = args.plan.startswith("store:")
        if downloaded:
            plan = load_plan_from_store(store_from_args(args), args.plan[len("store:"):])
        else:
            plan = CleanupPlan.open(args.plan)
        scope = plan.header.scope
        try:
            result = _apply(args, plan, args.dry_run, report)
        finally:
            if downloaded:  # our temporary copy of the stored plan
                _remove(plan.path)
        return _finish(args, report, result.model_dump(mode="json"), _exit_code(result), phase="apply",
                       scope=scope, started=started)
    except GcRunLocked as exc:
        return _failed(args, report, _locked(exc), phase="apply", scope=scope, started=started)
    except CleanupRefused as exc:
        return _failed(args, report, _refused(exc), phase="apply", scope=scope, started=started)
    except BaseException:
        report.close()
        raise


def cmd_run(args: argparse.Namespace) -> int:
    report = DecisionReport(args.report)
    started = time.monotonic()
    scope: CleanupScope | None = None
    try:
        scope = _scope(args)
        policy = _policy(args, dry_run=not args.apply)
        store = store_from_args(args)
        meter = MeteredStore(store)
        progress = Progress("plan", None)
        try:
            plan = plan_cleanup(meter, scope, policy, out=args.out, config=_config(args),
                                progress=progress.update)
        finally:
            progress.close()
        try:
            report.plan_decisions(plan)
            planned = plan_report(plan, time.monotonic() - started, dict(meter.requests),
                                  sessions=plan.sessions or 0)
            result = _apply(args, plan, not args.apply, report)
        finally:
            if not args.out:  # a plan nobody asked to keep does not outlive the run
                _remove(plan.path)
        doc = {"plan": planned.model_dump(mode="json") | {
                   "plan_path": str(plan.path), "plan_kept": bool(args.out)},
               "apply": result.model_dump(mode="json")}
        code = EXIT_JOURNAL_DOUBT if planned.counts.get("retained_journal_doubt") else _exit_code(result)
        return _finish(args, report, doc, code, phase="apply", scope=scope, started=started)
    except GcRunLocked as exc:
        return _failed(args, report, _locked(exc), phase="apply", scope=scope, started=started)
    except CleanupRefused as exc:
        return _failed(args, report, _refused(exc), phase="apply", scope=scope, started=started)
    except BaseException:
        report.close()
        raise


def _locked(exc: GcRunLocked) -> int:
    print(f"s3spill: locked: {exc}", file=sys.stderr)
    return int(ExitCode.LOCKED)
