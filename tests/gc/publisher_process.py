"""A child process that publishes and removes references while GC runs (see test_gc_crash)."""

from __future__ import annotations

import json
import random
import sys

from s3spill.errors import ArtifactCondemned, DanglingReference, JournalContention
from s3spill.leases.journal import LeaseJournal
from s3spill.models import ArtifactRetentionClaim
from s3spill.store import open_store


def main() -> None:
    url, spec_path, worker, ops = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with open(spec_path) as fh:
        spec = json.load(fh)
    store = open_store(url)
    rng = random.Random(worker)
    journals = {sid: LeaseJournal(store, sid) for sid in spec}
    mine: list[tuple[str, str]] = []
    for journal in journals.values():
        journal.view()  # warm up (imports, connections) before announcing readiness
    print("READY", flush=True)
    for i in range(ops):
        if mine and rng.random() < 0.3:
            sid, txid = mine.pop(rng.randrange(len(mine)))
            journals[sid].remove_reference(txid, lambda: None)
            continue
        sid = rng.choice(sorted(spec))
        source_id, sha = rng.choice(spec[sid])
        txid = f"w{worker}-{i}"
        try:
            journals[sid].publish_reference(
                ArtifactRetentionClaim(source_id=source_id, sha256=sha), lambda: None, transaction_id=txid)
        except (ArtifactCondemned, DanglingReference, JournalContention):
            continue
        mine.append((sid, txid))
    print(json.dumps({"worker": worker, "held": len(mine)}))


if __name__ == "__main__":
    main()
