"""The parser of ``s3spill gc plan|apply|run``; the commands themselves are :mod:`.gc_cmds`.

Apart from them because building this parser must not import the garbage collector:
``s3spill --help`` and every other command build it (with pydantic, the GC library and
the store layer, ~0.4 s of CPU on the development VM), and a usage error is answered
before any of that is needed. :func:`~s3spill.cli.parser.deferred` imports
:mod:`.gc_cmds` when a gc command runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from s3spill.cli.argtypes import count, duration, positive, utf8
from s3spill.cli.gc_ops import ops_args
from s3spill.cli.parser import deferred
from s3spill.errors import ConfigError
from s3spill.keys import GC_PLANS

if TYPE_CHECKING:
    from s3spill.gc.models import CleanupScope

_IMPLEMENTATION = "s3spill.cli.gc_cmds"


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
    p.add_argument("--orphan-ttl", type=duration, help="keep unclaimed artifacts this long (default: "
                   "the policy's [gc] orphan_ttl, 24h)")
    p.add_argument("--session-ttl", type=duration, help="an active session protects all its artifacts "
                   "this long after its last activity (default: the policy's [gc] session_ttl, 24h)")
    p.add_argument("--max-deletions", type=count,
                   help="plan at most N deletions (default: the policy's [gc] max_deletions, 10000)")
    p.add_argument("--allow-dangerously-short-ttl", action="store_true",
                   help="accept TTLs under one hour (tests and demos only: can delete what a live "
                   "writer is about to reference)")


def _shard(text: str) -> CleanupScope:
    """``K/N`` with 0 <= K < N, checked while parsing (``0/0`` is a usage error)."""
    from s3spill.gc.models import CleanupScope  # a --shard given: pydantic loads, as always

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
    plan.set_defaults(func=deferred(_IMPLEMENTATION, "cmd_plan"))

    apply = gcsub.add_parser("apply", help="apply a plan: condemn, revalidate, delete conditionally")
    apply.add_argument("plan", metavar="PLAN", help="a plan file, or store:PLAN_ID for a stored plan")
    apply.add_argument("--dry-run", action="store_true", help="revalidate nothing, delete nothing")
    _policy_args(apply)
    _apply_args(apply)
    ops_args(apply, deletes=True)
    apply.set_defaults(func=deferred(_IMPLEMENTATION, "cmd_apply"))

    run = gcsub.add_parser("run", help="plan and apply in one process (a dry run unless --apply)")
    _plan_args(run)
    _apply_args(run)
    run.add_argument("--apply", action="store_true", help="really delete (default: dry run)")
    run.add_argument("--out", metavar="FILE", help="keep the plan file here (default: a temporary "
                     "file, removed when the run ends)")
    ops_args(run, deletes=True)
    run.set_defaults(func=deferred(_IMPLEMENTATION, "cmd_run"))

    def usage(_args: argparse.Namespace) -> int:
        gc.print_help()
        return 2

    gc.set_defaults(func=usage)
