"""A writer for the purge race tests: spills, publishes references and runs a live output,
in one process, so a failpoint (``S3SPILL_FAILPOINTS=NAME=sleep(MS)``) can freeze it at any
protocol step while the test purges the session. Errors after the purge are expected."""

from __future__ import annotations

import sys

from s3spill.leases.journal import LeaseJournal, new_transaction_id
from s3spill.leases.owner import S3ReferenceOwner
from s3spill.models import ArtifactRetentionClaim
from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore


def main(root: str, session: str) -> None:
    store = LocalStore(root)
    journal = LeaseJournal(store, session)
    owner = S3ReferenceOwner(store, session)
    spiller = Spiller(store, session)
    for i in range(24):  # past the manifest's inline records: the journal cuts a segment
        try:
            result = spiller.externalize("".join(f"row {i}.{n}\n" for n in range(4000)), "bash")
            if result.artifact is None:
                continue
            ref = result.artifact.for_memory()
            txid = new_transaction_id()
            journal.publish_reference(ArtifactRetentionClaim.from_memory_reference(ref),
                                      lambda r=ref, t=txid: owner.publish(t, r), txid)
        except Exception as exc:
            print(f"refused: {type(exc).__name__}", file=sys.stderr, flush=True)
    try:
        spiller.start(["sh", "-c", "for i in $(seq 1 200); do echo line $i; done"]).wait()
    except Exception as exc:
        print(f"refused: {type(exc).__name__}", file=sys.stderr, flush=True)
    spiller.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
