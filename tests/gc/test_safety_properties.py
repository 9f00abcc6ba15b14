"""Property: no interleaving of publish, remove, plan, apply and manifest loss or rollback
deletes an artifact that a published reference points to."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from s3spill import keys
from s3spill.errors import ArtifactCondemned, DanglingReference, JournalError, NotFound, TransactionStateError
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.gc.planfile import CleanupPlan
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.owner import OwnerSlot, S3ReferenceOwner
from s3spill.leases.references import memory_reference_for, publish_memory_reference, remove_memory_reference
from s3spill.store.local import LocalStore
from tests.examples import examples
from tests.gc.aged_artifacts import later, put_artifact

SESSION = "prop-session"
SHASH = keys.session_hash(SESSION)
MANIFEST = keys.manifest_key(SHASH)
REAL = CleanupPolicy(dry_run=False)


class GcAgainstLostHistory(RuleBasedStateMachine):
    """One session; an adversary may delete the manifest or copy an older one back."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="s3spill-prop-"))
        self.store = LocalStore(self.dir / "store")
        self.names: list[str] = []
        self.txids: list[str] = []
        self.saved: list[bytes] = []
        self.plans: list[CleanupPlan] = []
        self.counter = 0

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- the memory side ---------------------------------------------------------------

    @rule()
    def spill(self) -> None:
        self.names.append(put_artifact(self.store, SESSION, f"output {len(self.names)}\n".encode()))

    @precondition(lambda self: bool(self.names))
    @rule(data=st.data())
    def publish(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(self.names))
        self.counter += 1
        txid = f"tx-{self.counter}"
        try:
            sha = self.store.head(keys.artifact_key(SHASH, name)).sha256
            assert sha is not None
            ref = memory_reference_for(self.store, str(keys.SourceId(SHASH, name, sha[:16])))
            publish_memory_reference(LeaseJournal(self.store, SESSION),
                                     S3ReferenceOwner(self.store, SESSION), ref, transaction_id=txid)
            self.txids.append(txid)
        except (NotFound, ArtifactCondemned, DanglingReference, JournalError):
            pass  # gone, fenced by GC, or a journal in doubt: refused, nothing published

    @precondition(lambda self: bool(self.txids))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        txid = data.draw(st.sampled_from(self.txids))
        # Unknown to a lost or rolled-back journal: refused, the reference stays published.
        with contextlib.suppress(TransactionStateError, JournalError):
            remove_memory_reference(LeaseJournal(self.store, SESSION),
                                    S3ReferenceOwner(self.store, SESSION), txid)

    # -- the adversary -----------------------------------------------------------------

    @rule(action=st.sampled_from(["save", "lose", "roll_back"]), data=st.data())
    def tamper(self, action: str, data: st.DataObject) -> None:
        """Keep a copy of the manifest, delete it, or copy an older one back."""
        if action == "save":
            with contextlib.suppress(NotFound):
                self.saved.append(self.store.get(MANIFEST))
        elif action == "lose":
            with contextlib.suppress(NotFound):
                self.store.delete_if_match(MANIFEST, self.store.head(MANIFEST).etag)
        elif self.saved:
            old = data.draw(st.sampled_from(self.saved))
            try:
                self.store.put_if_match(MANIFEST, old, self.store.head(MANIFEST).etag)
            except NotFound:
                self.store.put_if_absent(MANIFEST, old)

    # -- GC ------------------------------------------------------------------------------

    @rule(stale=st.booleans(), data=st.data())
    def collect(self, stale: bool, data: st.DataObject) -> None:
        """Plan and apply now (three days later), or apply an older, stale plan."""
        if stale and self.plans:
            plan = data.draw(st.sampled_from(self.plans))
        else:
            plan = plan_cleanup(self.store, CleanupScope(), REAL,
                                out=self.dir / f"plan-{len(self.plans)}", now=later())
            self.plans.append(plan)
        apply_cleanup(self.store, plan, now=later)

    # -- the property ------------------------------------------------------------------

    @invariant()
    def published_references_point_at_existing_artifacts(self) -> None:
        for info in self.store.list(f"{keys.OWNER}/{SHASH}/"):
            slot = OwnerSlot.model_validate_json(self.store.get(info.key))
            if slot.state != "published":
                continue
            assert slot.source_id is not None
            sid = keys.SourceId.parse(slot.source_id)
            head = self.store.head(keys.artifact_key(SHASH, sid.name))  # NotFound = a lost artifact
            assert head.sha256 == slot.sha256


GcAgainstLostHistory.TestCase.settings = settings(
    max_examples=examples(suite=15, thorough=60), stateful_step_count=15, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestGcAgainstLostHistory = GcAgainstLostHistory.TestCase
