"""``s3spill ref …``, ``s3spill journal …``, ``s3spill reconcile``: the lease journal by hand.

A thin layer: references go through the built-in bucket owner
(:class:`~s3spill.leases.owner.S3ReferenceOwner`), the digest of a published artifact comes
from the store's HEAD (never from the command line), and every output line carries
transaction ids, states and generations — no keys, paths or reference content.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from s3spill.cli.argtypes import session_from_args, store_from_args, utf8
from s3spill.cli.exitcodes import ExitCode
from s3spill.cli.list_cmds import lease_rows
from s3spill.cli.voice import say
from s3spill.errors import ConfigError, IntegrityError, JournalCorrupt
from s3spill.keys import SourceId

if TYPE_CHECKING:  # the lease layer (pydantic, the store) loads when a command runs, not with the parser
    from s3spill.leases.journal import LeaseJournal
    from s3spill.leases.owner import S3ReferenceOwner

#: Exit codes of ``journal verify`` and ``reconcile`` (from the one table).
EXIT_CORRUPT = int(ExitCode.CORRUPT)
EXIT_PENDING = int(ExitCode.NEGATIVE)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ref = sub.add_parser("ref", help="publish, remove and list memory references (leases)")
    refs = ref.add_subparsers(dest="ref_command", metavar="ACTION", required=True)
    p = refs.add_parser("publish", help="publish a memory reference to an artifact under a lease")
    p.add_argument("source_id", metavar="SOURCE_ID", type=utf8)
    p.add_argument("--txid", type=utf8, help="stable transaction id (default: a fresh one; keep it to retry)")
    p.add_argument("--retain-until", help="lease expiry, ISO 8601 with a timezone (default: none)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_publish)
    p = refs.add_parser("remove", help="remove a reference at the owner, then release its lease")
    p.add_argument("txid", metavar="TXID", type=utf8)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_remove)
    p = refs.add_parser("list", help="list the session's live and pending leases")
    p.add_argument("--json", action="store_true", help="print the leases as JSON")
    p.set_defaults(func=cmd_list)

    journal = sub.add_parser("journal", help="show or verify the session's lease journal")
    js = journal.add_subparsers(dest="journal_command", metavar="ACTION", required=True)
    p = js.add_parser("show", help="the verified claim view, pending transactions, condemnations")
    p.add_argument("--json", action="store_true", help="print the view as JSON")
    p.set_defaults(func=cmd_show)
    p = js.add_parser("verify", help=f"fold the whole history again (exit {EXIT_CORRUPT}: corrupt)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("reconcile", help=f"settle pending leases with the owner (exit {EXIT_PENDING}: "
                       "some stay pending)")
    p.add_argument("--txid", type=utf8, help="only this transaction")
    p.add_argument("--include-committed", action="store_true",
                   help="also release committed leases whose reference the owner already removed")
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    p.set_defaults(func=cmd_reconcile)


def _open(args: argparse.Namespace) -> tuple[LeaseJournal, S3ReferenceOwner]:
    from s3spill.leases.journal import LeaseJournal
    from s3spill.leases.owner import S3ReferenceOwner

    store = store_from_args(args, create=False)  # a journal is of a store that exists
    session = session_from_args(args)
    return LeaseJournal(store, session), S3ReferenceOwner(store, session)


def _print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=True, default=str)
    sys.stdout.write("\n")


def cmd_publish(args: argparse.Namespace) -> int:
    journal, owner = _open(args)
    sid = SourceId.parse(args.source_id).require_session(session_from_args(args))
    until = None
    if args.retain_until:
        try:
            until = datetime.fromisoformat(args.retain_until)
        except ValueError:
            raise ConfigError(f"--retain-until: not an ISO 8601 time: {args.retain_until!r}",
                              hint="e.g. 2030-01-01T00:00:00+00:00") from None
        if until.tzinfo is None:
            raise ConfigError("--retain-until needs a timezone (e.g. 2030-01-01T00:00:00+00:00)")
        if until <= datetime.now(UTC):
            # A lease that has already expired protects nothing: GC may delete the artifact at once.
            raise ConfigError(f"--retain-until {args.retain_until} is in the past: such a lease "
                              "would protect nothing",
                              hint="give a future time, or leave --retain-until out for no expiry")
    from s3spill.leases.references import memory_reference_for, publish_memory_reference

    reference = memory_reference_for(journal.store, str(sid))
    result = publish_memory_reference(journal, owner, reference, transaction_id=args.txid,
                                      retain_until=until)
    if args.json:
        _print_json(result.to_dict())
    else:
        print(f"{result.outcome} {result.transaction_id} generation={result.generation}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    from s3spill.leases.references import remove_memory_reference

    journal, owner = _open(args)
    result = remove_memory_reference(journal, owner, args.txid)
    if args.json:
        _print_json(result.to_dict())
    else:
        print(f"{result.outcome} {result.transaction_id} generation={result.generation}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    journal, _ = _open(args)
    rows = lease_rows(journal.view())
    if args.json:
        _print_json(rows)
        return 0
    for r in rows:
        until = r["retain_until"] or ("pending" if r["state"] == "PREPARED" else "no expiry")
        print(f"{r['transaction_id']}  {r['state']:<9}  {r['source_id']}  x{r['reference_count']}  {until}")
    if not rows:
        print("no live or pending leases")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    journal, _ = _open(args)
    view = journal.view()
    if args.json:
        _print_json(view.to_dict())
        return 0
    if not view.exists:
        print(f"session {view.session_hash}: no journal yet")
        return 0
    active = view.last_active.isoformat() if view.last_active else "never"
    print(f"session {view.session_hash}  generation {view.generation}  records {view.next_sequence}  "
          f"segments {view.segments}  manifest {view.manifest_bytes} bytes  last active {active}")
    print(f"chain head {view.head_hash}")
    for claim in view.claims():
        until = "indefinitely (pending)" if claim.pending else (
            claim.retain_until.isoformat() if claim.retain_until else "no expiry")
        print(f"claim {claim.source_id}  refs={claim.reference_count}  until {until}  "
              f"tx={','.join(claim.transaction_ids)}")
    for txid in view.pending_transaction_ids:
        print(f"pending {txid}  (run `s3spill reconcile`)")
    for c in view.condemned:
        print(f"condemned {c.source_id}  by plan {c.plan_id}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    journal, _ = _open(args)
    try:
        report = journal.verify()
    except (JournalCorrupt, IntegrityError) as exc:
        # A manifest or segment whose bytes fail their SHA-256 is as corrupt as a broken chain.
        reason = exc.reason if isinstance(exc, JournalCorrupt) else "digest_mismatch"
        if args.json:
            _print_json({"ok": False, "reason": reason, "message": str(exc)})
        print(say(f"journal verify: {exc} [{reason}]", "GC keeps every artifact of this session "
                  "until the journal is repaired"), file=sys.stderr)
        return EXIT_CORRUPT
    if args.json:
        _print_json({"ok": True, **report.to_dict()})
        return 0
    print(f"ok: {report.records} records in {report.segments} segments + manifest, chain head "
          f"{report.head_hash[:16]}…, generation {report.generation}, {report.live} live "
          f"({report.pending} pending), {report.condemned} condemned, {report.seconds:.3f}s")
    for orphan in report.orphan_segments:
        print(f"note: unreferenced segment {orphan.first_sequence}-{orphan.last_sequence} "
              f"({orphan.status}); ignored")
    return 0


def cmd_reconcile(args: argparse.Namespace) -> int:
    from s3spill.leases.reconcile import reconcile_pending, reconcile_reference

    journal, owner = _open(args)
    if args.txid:
        reports = [reconcile_reference(journal, owner, args.txid)]
    else:
        reports = reconcile_pending(journal, owner, include_committed=args.include_committed)
    if args.json:
        _print_json([r.to_dict() for r in reports])
    else:
        for r in reports:
            print(f"{r.transaction_id}  {r.outcome}  state={r.state}  reason={r.reason}  "
                  f"generation={r.generation}")
        if not reports:
            print("nothing pending")
    return EXIT_PENDING if any(not r.settled for r in reports) else 0
