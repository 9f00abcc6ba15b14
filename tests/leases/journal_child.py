"""A separate process that drives the journal, for crash and contention tests.

Run as ``python tests/leases/journal_child.py COMMAND URL SESSION ARGS...`` with the child
environment of :func:`s3spill.testing.child_env` (plus ``S3SPILL_FAILPOINTS`` for crash
tests, or the AWS variables of an :class:`~s3spill.testing.EmbeddedS3`).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from s3spill.config import TransferConfig
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.owner import S3ReferenceOwner
from s3spill.leases.reconcile import reconcile_pending
from s3spill.leases.references import memory_reference_for, publish_memory_reference, remove_memory_reference
from s3spill.store import open_store

#: Small manifest bounds so compaction races happen under contention too.
CONFIG = TransferConfig(
    deadline=120.0, connect_timeout=2.0, read_timeout=20.0,
    journal_cas_attempts=400, journal_max_recent_records=12, journal_segment_records=8,
)


def main(argv: list[str]) -> int:
    command, url, session = argv[0], argv[1], argv[2]
    store = open_store(url, CONFIG)
    journal = LeaseJournal(store, session, CONFIG)
    owner = S3ReferenceOwner(store, session)
    if command == "publish":
        source_id, txid = argv[3], argv[4]
        ref = memory_reference_for(store, source_id)
        print(publish_memory_reference(journal, owner, ref, transaction_id=txid).outcome, flush=True)
    elif command == "remove":
        print(remove_memory_reference(journal, owner, argv[3]).outcome, flush=True)
    elif command == "reconcile":
        reports = reconcile_pending(journal, owner, include_committed=True)
        print(json.dumps([r.to_dict() for r in reports]), flush=True)
    else:
        raise SystemExit(f"unknown command {command}")
    return 0


def run_cycles(url: str, session: str, source_id: str, proc: str, cycles: int, env: dict[str, str],
               ready: Any, go: Any, results: Any) -> None:
    """One forked contender: its own store and journal, released by the shared event."""
    os.environ.update(env)
    store = open_store(url, CONFIG)
    journal = LeaseJournal(store, session, CONFIG)
    owner = S3ReferenceOwner(store, session)
    ref = memory_reference_for(store, source_id)
    ready.release()
    go.wait()
    done = []
    try:
        for n in range(cycles):
            txid = f"{proc}-{n}"
            publish_memory_reference(journal, owner, ref, transaction_id=txid)
            remove_memory_reference(journal, owner, txid)
            done.append(txid)
        results.put({"writes": journal.stats.writes, "lost": journal.stats.lost, "done": done})
    except Exception as exc:
        results.put({"error": repr(exc), "writes": journal.stats.writes, "done": done})


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
