"""Store-level sub-commands: ``doctor`` (what the store honours), and how its report reads.

The probes and the report's record live in the store layer (:mod:`s3spill.store.probes`,
:mod:`s3spill.store.capabilities`), where the journal's and GC's gate needs them; what is
printed, and the verdict line an operator acts on, is the command's.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from s3spill.cli.argtypes import store_from_args
from s3spill.cli.exitcodes import ExitCode

if TYPE_CHECKING:
    from s3spill.store.capabilities import CapabilityReport

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
    from s3spill.store.probes import probe_capabilities

    with store_from_args(args) as store:
        report = probe_capabilities(store)
    print(report.model_dump_json(indent=2) if args.json else render(report))
    return 0 if report.ok else EXIT_MISSING_GUARANTEE


def render(report: CapabilityReport) -> str:
    """The report as a plain-text table plus what GC may do and a verdict line."""
    lines = [report.table(), ""]
    gaps = [p.title for p in report.probes if p.honoured is False and p.name != "versioning"]
    if gaps:
        lines.append("not honoured: " + "; ".join(gaps))
    mode = report.gc_delete_mode
    lines.append(f"GC delete mode: {mode}" if mode else "GC delete mode: NONE (GC will refuse)")
    lines.append("verdict: OK" if report.ok else
                 "verdict: MISSING " + "; ".join(report.missing_required))
    return "\n".join(lines)
