"""``s3spill ls``: what a session holds — its stored outputs, its running commands, its leases.

A thin layer: the artifacts and the live outputs come from the listing the model's
``list_artifacts`` tool uses (:func:`s3spill.agent.listing.list_artifacts`: every shown
artifact verified from its index), the leases from the session's lease journal (the same
rows as ``ref list``). The first line says which session and where it came from, because
"nothing here" after a ``cd`` is most often the directory's session, not a loss.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from s3spill.cli.argtypes import positive, session_choice, store_from_args
from s3spill.cli.artifact_cmds import add_show_secrets

if TYPE_CHECKING:
    from s3spill.leases.reports import JournalView


def lease_rows(view: JournalView) -> list[dict[str, Any]]:
    """One row per live or pending lease of a journal view (``ref list`` prints the same)."""
    return [{"transaction_id": t.transaction_id, "state": t.state, "source_id": t.claim.source_id,
             "sha256": t.claim.sha256, "reference_count": t.claim.reference_count,
             "retain_until": t.claim.retain_until.isoformat() if t.claim.retain_until else None}
            for t in view.transactions]


def cmd_ls(args: argparse.Namespace) -> int:
    from s3spill.agent.listing import MAX_LIST_LIMIT, list_artifacts
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.errors import InvalidRequest
    from s3spill.leases.journal import LeaseJournal

    if args.limit > MAX_LIST_LIMIT:
        raise InvalidRequest(f"--limit {args.limit} is over {MAX_LIST_LIMIT}",
                             hint=f"give at most {MAX_LIST_LIMIT}; the oldest are counted, not shown")
    session = session_choice(args)
    store = store_from_args(args, create=False)
    from s3spill.context.secrets import mask_view

    view = None if args.show_secrets else mask_view  # summaries quote first lines: masked as reads are
    listing = list_artifacts(ArtifactStore(store, session_id=session.id, view=view), session.id, args.limit)
    leases = lease_rows(LeaseJournal(store, session.id).view())
    if args.json:
        doc = {"session": session.id, "session_from": session.origin, "store": store.url,
               **listing.structured(), "leases": leases}
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        return 0
    out = [f"session {session.id} (from {session.origin}), store {store.url}"]
    out.append(f"stored outputs: {listing.total:,}, newest first" if listing.total else
               "stored outputs: none")
    for ref in listing.artifacts:
        label = f"  {ref.label}" if ref.label else ""
        out.append(f"  {ref.source_id}  {ref.created_at:%Y-%m-%d %H:%M:%SZ}  {ref.tool}{label}  "
                   f"{ref.size_bytes:,} bytes, {ref.line_count:,} lines")
    if listing.total > len(listing.artifacts) + listing.unreadable:
        out.append(f"  ... {listing.total - len(listing.artifacts) - listing.unreadable:,} older "
                   f"(--limit, at most {MAX_LIST_LIMIT})")
    if listing.unreadable:
        out.append(f"  {listing.unreadable} could not be read (deleted or failed verification)")
    out.append(f"running commands: {len(listing.running)}" if listing.running else
               "running commands: none")
    out += [f"  {r.live_id}  {r.status}  {r.committed_bytes:,} bytes, {r.line_count:,} lines so far"
            for r in listing.running]
    out.append(f"leases: {len(leases)}" if leases else "leases: none")
    for row in leases:
        until = row["retain_until"] or ("pending" if row["state"] == "PREPARED" else "no expiry")
        out.append(f"  {row['transaction_id']}  {row['state']}  {row['source_id']}  "
                   f"x{row['reference_count']}  {until}")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ls", help="list the session's stored outputs, running commands and leases")
    p.add_argument("--limit", type=positive, default=20,
                   help="stored outputs to show, newest first (default 20, at most 100)")
    p.add_argument("--json", action="store_true", help="print the listing as JSON")
    add_show_secrets(p)
    p.set_defaults(func=cmd_ls)
