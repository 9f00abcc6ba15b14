"""``stats`` and ``usage compact``: usage figures per tool, from usage objects only (s3spill.usage)."""

from __future__ import annotations

import argparse
import json

from s3spill.cli.argtypes import PREFIX_HELP, store_from_args, tenant_store, utf8
from s3spill.cli.exitcodes import ExitCode


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "stats", help="per tool: calls, spilled share, bytes stored, re-read rate, threshold advice",
        description="Per tool: calls seen, the share spilled, bytes stored (raw and compressed), the "
        "share of spilled outputs the model read or grepped later, pages per re-read, bytes shown "
        "against stored, and a threshold suggestion with its reason. Reads usage objects only "
        "(DuckDB in process: pip install 's3spill[usage]').")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--session", dest="stats_session", type=utf8, default=None,
                       help="one session (default: every session of the store)")
    scope.add_argument("--prefix", dest="stats_prefix", metavar="P", type=utf8, default=None,
                       help=PREFIX_HELP)
    p.add_argument("--since", type=utf8, default=None, help="only events this recent (24h, 7d, 2w)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=cmd_stats)
    u = sub.add_parser("usage", help="maintain usage objects (compact finished days)")
    usub = u.add_subparsers(dest="usage_command", required=True)
    c = usub.add_parser("compact", help="turn each finished day's usage parts into one Parquet file")
    c.add_argument("--json", action="store_true", help="print the report as JSON")
    c.set_defaults(func=cmd_compact)


def cmd_stats(args: argparse.Namespace) -> int:
    from s3spill.gc.models import parse_duration
    from s3spill.keys import session_hash
    from s3spill.usage.stats import compute_stats

    since = parse_duration(args.since) if args.since else None
    store = tenant_store(args, args.stats_prefix, create=False)  # figures of a store that exists
    with store:
        stats = compute_stats(store, session_hash=session_hash(args.stats_session) if args.stats_session
                              else None, since=since)
    print(json.dumps(stats.as_dict(), indent=2) if args.json else stats.render())
    return int(ExitCode.OK)


def cmd_compact(args: argparse.Namespace) -> int:
    from s3spill.usage.compact import compact_usage

    with store_from_args(args, create=False) as store:  # nothing to compact in a missing store
        report = compact_usage(store)
    if args.json:
        print(json.dumps(report.__dict__, indent=2))
    else:
        print(f"{report.days} day(s) compacted, {report.events} events, {report.sources_deleted} "
              f"part(s) deleted, {len(report.kept)} kept")
    return int(ExitCode.OK) if not report.kept else int(ExitCode.NEGATIVE)
