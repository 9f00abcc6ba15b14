"""The demo's last step: GC deletes an expired orphan and keeps a referenced artifact.

Why an injected clock rather than a short TTL: the demo shows the default policy (a
24-hour orphan TTL, no danger flag) doing what it does in production; only the time
is moved forward — the same ``now=`` hook the tests use — so nothing waits a day and
no unsafe setting is shown off as normal.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from s3spill import keys
from s3spill.artifacts.store import ArtifactStore
from s3spill.demo.context import DemoContext
from s3spill.errors import NotFound
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.owner import S3ReferenceOwner
from s3spill.leases.references import memory_reference_for, publish_memory_reference
from s3spill.store.base import ObjectStore

DEMO_SESSION = "demo-gc-session"


def _write(store: ObjectStore, session_id: str, tool: str, body: bytes) -> tuple[str, str]:
    """Spill one tool output through the artifact store (artifact + ``.idx`` sidecar)."""
    ref = ArtifactStore(store).write(session_id, body, tool)
    return ref.name, ref.source_id


def _exists(store: ObjectStore, key: str) -> bool:
    try:
        store.head(key)
        return True
    except NotFound:
        return False


def gc_demo_step(ctx: DemoContext) -> None:
    """Two tool outputs, one referenced from memory; GC a day later keeps exactly that one."""
    session = ctx.session(DEMO_SESSION)
    store: ObjectStore = ctx.store
    shash = keys.session_hash(session)
    kept, kept_sid = _write(store, session, "pytest", b"FAILED test_gc.py::test_race\n" * 400)
    orphan, _ = _write(store, session, "grep", b"src/x.py:1: TODO\n" * 400)
    journal = LeaseJournal(store, session)
    owner = S3ReferenceOwner(store, session)
    publish_memory_reference(journal, owner, memory_reference_for(store, kept_sid),
                             transaction_id="demo-memory-ref-1")
    ctx.say(f"two artifacts in session {shash[:12]}…: {kept} (referenced from memory), {orphan} (orphan)")
    later = datetime.now(UTC) + timedelta(hours=25)
    ctx.say("clock moved 25 h ahead (injected, not a short TTL): default policy, orphan_ttl 24h")
    policy = CleanupPolicy(dry_run=False)
    with tempfile.TemporaryDirectory() as tmp:
        plan = plan_cleanup(store, CleanupScope(session_hash=shash), policy,
                            out=Path(tmp, "plan.jsonl"), now=later)
        for entry in plan.entries():
            if entry.object_kind == "artifact":
                ctx.say(f"plan: {entry.name} -> {entry.status} ({entry.reason})")
        report = apply_cleanup(store, plan, now=lambda: later)
    ctx.say(f"apply ({report.delete_method} deletes): {report.summary().removeprefix('gc apply: ')}")
    gone = not _exists(store, keys.artifact_key(shash, orphan))
    here = _exists(store, keys.artifact_key(shash, kept))
    ctx.say(f"orphan deleted: {'yes' if gone else '!! NO'}; referenced artifact kept: "
            f"{'yes' if here else '!! NO'}")
