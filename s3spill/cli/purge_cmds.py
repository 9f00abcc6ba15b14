"""``purge``: erase everything of one session on request (see :mod:`s3spill.fleet.purge`)."""

from __future__ import annotations

import argparse
import getpass

from s3spill.cli.argtypes import session_from_args, store_from_args, utf8
from s3spill.cli.exitcodes import ExitCode


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "purge", help="erase every output, index and journal record of one session, for good",
        description="Seal the session (audit record, journal tombstone, sealed owner slots) so "
        "no live writer or stalled publish can recreate anything, then delete every object of "
        "it, referenced or not, and leave an audit record (keys, sizes, digests, who asked; no "
        "content). Refuses without --yes-erase-everything.")
    p.add_argument("--yes-erase-everything", dest="yes_erase", action="store_true",
                   help="confirm: this cannot be undone")
    p.add_argument("--all-versions", dest="all_versions", action="store_true",
                   help="on a versioned bucket, also delete every older version and delete marker")
    p.add_argument("--requested-by", dest="requested_by", type=utf8, default=None,
                   help="who asked (recorded in the audit record; default: the OS user)")
    p.add_argument("--reason", type=utf8, default=None, help="why (recorded in the audit record)")
    p.add_argument("--json", action="store_true", help="print the audit record as JSON")
    p.set_defaults(func=cmd_purge)


def cmd_purge(args: argparse.Namespace) -> int:
    from s3spill.fleet.purge import purge_session

    session = session_from_args(args)
    with store_from_args(args) as store:
        record = purge_session(store, session, requested_by=args.requested_by or getpass.getuser(),
                               reason=args.reason, all_versions=args.all_versions,
                               confirm=args.yes_erase)
    print(record.model_dump_json(indent=2) if args.json else record.render())
    return int(ExitCode.OK) if record.ok else int(ExitCode.NEGATIVE)
