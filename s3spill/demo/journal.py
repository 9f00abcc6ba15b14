"""The demo's lease-journal step: publish a memory reference, survive two crashes, verify.

Listed before GC so the tour shows why GC later keeps the referenced artifact: the
lease, not the session's age, is what protects it.
"""

from __future__ import annotations

from s3spill.artifacts.store import ArtifactStore
from s3spill.demo.context import DemoContext
from s3spill.errors import ArtifactPublicationRejected
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.owner import S3ReferenceOwner
from s3spill.leases.reconcile import reconcile_pending
from s3spill.leases.references import memory_reference_for, publish_memory_reference, remove_memory_reference

SESSION = "demo-journal-session"


def journal_step(ctx: DemoContext) -> None:
    session = ctx.session(SESSION)
    store = ctx.store
    ref = ArtifactStore(store).write(session, b"FAILED test_journal.py::test_crash\n" * 300, "pytest")
    memory_ref = memory_reference_for(store, ref.source_id)  # digest from the store's HEAD
    journal = LeaseJournal(store, session)
    owner = S3ReferenceOwner(store, session)
    r = publish_memory_reference(journal, owner, memory_ref, transaction_id="demo-ref-1")
    ctx.say(f"published a memory reference to {ref.name}: {r.outcome} (generation {r.generation})")

    # Two publishers that "died": one after PREPARED, one after the memory write.
    claim = journal.transaction("demo-ref-1").claim  # type: ignore[union-attr]
    journal.prepare(claim, "demo-ref-lost")
    journal.prepare(claim, "demo-ref-landed")
    owner.publish("demo-ref-landed", memory_ref)
    pending = journal.view().pending_transaction_ids
    ctx.say(f"two publishers crashed mid-way; pending (artifact protected meanwhile): {', '.join(pending)}")
    for report in reconcile_pending(journal, owner):
        ctx.say(f"reconcile {report.transaction_id}: {report.outcome} ({report.reason})")
    try:
        owner.publish("demo-ref-lost", memory_ref)
        ctx.say("!! a late publish landed after the seal")
    except ArtifactPublicationRejected:
        ctx.say("a late publish of demo-ref-lost is refused: its slot is sealed")
    r = remove_memory_reference(journal, owner, "demo-ref-landed")
    ctx.say(f"removed demo-ref-landed at the owner, then {r.outcome}")
    checked = LeaseJournal(store, session).verify()
    claims = journal.claims()
    ctx.say(f"journal verified by a fresh reader: {checked.records} records, chain head "
            f"{checked.head_hash[:12]}…, {checked.live} live claim(s) on "
            f"{len(claims)} artifact(s), generation {checked.generation}")

