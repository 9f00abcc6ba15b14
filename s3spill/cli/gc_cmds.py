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
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from s3spill.cli.common import count, positive, store_from_args, utf8
from s3spill.cli.exitcodes import ExitCode
from s3spill.config import TransferConfig
from s3spill.errors import CleanupRefused, ConfigError
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.doc import CleanupPlan, load_plan_from_store, save_plan_to_store
from s3spill.gc.metered import MeteredStore
from s3spill.gc.models import CleanupPolicy, CleanupReport, CleanupScope, parse_duration
from s3spill.gc.plan import plan_cleanup, plan_report
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
                     help="plan one session (default: the global --session / $S3SPILL_SESSION)")
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
                      f"'store' saves it in the store under {GC_PLANS}/ (default: a temporary file)")
    plan.add_argument("--max-concurrency", type=positive, default=None,
                      help="sessions planned in parallel (default: TransferConfig.max_concurrency)")
    plan.set_defaults(func=cmd_plan)

    apply = gcsub.add_parser("apply", help="apply a plan: condemn, revalidate, delete conditionally")
    apply.add_argument("plan", metavar="PLAN", help="a plan file, or store:PLAN_ID for a stored plan")
    apply.add_argument("--dry-run", action="store_true", help="revalidate nothing, delete nothing")
    _policy_args(apply)
    _apply_args(apply)
    apply.set_defaults(func=cmd_apply)

    run = gcsub.add_parser("run", help="plan and apply in one process (a dry run unless --apply)")
    _plan_args(run)
    _apply_args(run)
    run.add_argument("--apply", action="store_true", help="really delete (default: dry run)")
    run.add_argument("--out", metavar="FILE", help="keep the plan file here")
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
    session = args.gc_session or getattr(args, "session", None) or os.environ.get("S3SPILL_SESSION")
    if not session:
        raise ConfigError("say which sessions: --session ID or --all")
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


def _progress(total: int) -> tuple[Callable[[int], None], Callable[[], None]]:
    """A tqdm bar on a TTY (if tqdm is installed); structured log lines every 5% otherwise."""
    if sys.stderr.isatty():
        try:
            from tqdm import tqdm

            bar = tqdm(total=total, unit="obj", desc="gc apply", file=sys.stderr)
            seen = [0]

            def update(done: int) -> None:
                bar.update(done - seen[0])
                seen[0] = done

            return update, bar.close
        except ImportError:
            pass
    step = max(1, total // 20)
    last = [0]

    def log_progress(done: int) -> None:
        if done - last[0] >= step or done == total:
            last[0] = done
            log.info("gc.apply.progress", done=done, total=total)

    return log_progress, lambda: None


def _print(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")


def _exit_code(report: CleanupReport) -> int:
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
    from s3spill.doctor import run_doctor

    report = run_doctor(store)
    log.info("gc.apply.probed", delete_mode=report.gc_delete_mode, store=store.url)
    return report.capabilities()


def _apply(args: argparse.Namespace, plan: CleanupPlan, dry_run: bool) -> CleanupReport:
    store = store_from_args(args)
    policy = _policy(args, dry_run=dry_run)  # apply's own policy: the plan's only narrows it
    caps = None if dry_run else _capabilities(args, store)
    update, close = _progress(plan.footer.entries)
    try:
        return apply_cleanup(store, plan, dry_run=dry_run, config=_config(args), capabilities=caps,
                             policy=policy,
                             rate_limit=args.rate_limit,
                             force_unverified_deletes=args.force_unverified_deletes, progress=update)
    finally:
        close()


def cmd_plan(args: argparse.Namespace) -> int:
    try:
        scope = _scope(args)
        policy = _policy(args, dry_run=True)
        store = store_from_args(args)
        to_store = args.out == "store"
        meter = MeteredStore(store)
        started = time.monotonic()
        plan = plan_cleanup(meter, scope, policy, out=None if to_store or not args.out else args.out,
                            config=_config(args))
        doc = plan_report(plan, time.monotonic() - started, dict(meter.requests)).model_dump(mode="json")
        doc["plan_path"] = str(plan.path)
        if to_store:
            doc["plan_key"] = save_plan_to_store(store, plan)
            doc["apply_with"] = f"s3spill gc apply store:{plan.plan_id}"
        _print(doc)
        return EXIT_JOURNAL_DOUBT if plan.footer.counts.get("retained_journal_doubt") else EXIT_OK
    except CleanupRefused as exc:
        return _refused(exc)


def cmd_apply(args: argparse.Namespace) -> int:
    try:
        if args.plan.startswith("store:"):
            plan = load_plan_from_store(store_from_args(args), args.plan[len("store:"):])
        else:
            plan = CleanupPlan.open(args.plan)
        report = _apply(args, plan, dry_run=args.dry_run)
        _print(report.model_dump(mode="json"))
        return _exit_code(report)
    except CleanupRefused as exc:
        return _refused(exc)


def cmd_run(args: argparse.Namespace) -> int:
    try:
        scope = _scope(args)
        policy = _policy(args, dry_run=not args.apply)
        store = store_from_args(args)
        meter = MeteredStore(store)
        started = time.monotonic()
        plan = plan_cleanup(meter, scope, policy, out=args.out, config=_config(args))
        planned = plan_report(plan, time.monotonic() - started, dict(meter.requests))
        report = _apply(args, plan, dry_run=not args.apply)
        _print({"plan": planned.model_dump(mode="json") | {"plan_path": str(plan.path)},
                "apply": report.model_dump(mode="json")})
        if planned.counts.get("retained_journal_doubt"):
            return EXIT_JOURNAL_DOUBT
        return _exit_code(report)
    except CleanupRefused as exc:
        return _refused(exc)
