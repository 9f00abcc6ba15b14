"""Store-level sub-commands: ``doctor`` (what the store honours)."""

from __future__ import annotations

import argparse

from s3spill.cli.argtypes import store_from_args
from s3spill.cli.exitcodes import ExitCode

#: Exit status of ``doctor`` when a guarantee s3spill needs is missing; a store it cannot
#: reach or read is an error with a code of its own (2, or 6 when unreachable), never 1.
EXIT_MISSING_GUARANTEE = int(ExitCode.NEGATIVE)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    doctor = sub.add_parser(
        "doctor", help="probe the store and print which guarantees it honours",
        description="Probe the configured store with real requests against scratch keys "
        "under its prefix (removed afterwards) and print what it honours. Exits 1 when a "
        "guarantee s3spill needs (create-once, compare-and-swap, a safe GC delete) is missing.")
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    from s3spill.doctor import render, run_doctor

    with store_from_args(args) as store:
        report = run_doctor(store)
    print(report.model_dump_json(indent=2) if args.json else render(report))
    return 0 if report.ok else EXIT_MISSING_GUARANTEE
