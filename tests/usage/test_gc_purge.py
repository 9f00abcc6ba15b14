"""GC and purge treat usage objects as the session's own: removed with it, kept while it lives."""

from __future__ import annotations

from pathlib import Path

from s3spill import keys
from s3spill.fleet.purge import purge_session
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.gc.planfile import PlanWriter
from s3spill.store.base import ObjectStore
from s3spill.usage.recorder import UsageRecorder
from s3spill.usage.source import usage_objects
from tests.gc.aged_artifacts import later
from tests.usage.conftest import SESSION, scripted_run

REAL = CleanupPolicy(dry_run=False)


def test_gc_deletes_an_idle_sessions_usage_with_its_artifacts(store: ObjectStore, recorder: UsageRecorder,
                                                              tmp_path: Path) -> None:
    """Past the TTLs the usage objects are planned and deleted like its unclaimed artifacts."""
    scripted_run(store, recorder, calls=20)
    recorder.close()
    assert list(usage_objects(store))
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    planned = [e for e in plan.entries() if e.object_kind == "usage_log"]
    assert planned and all(e.status == "planned_delete" for e in planned)
    report = apply_cleanup(store, plan, now=later)
    assert report.counts.get("deleted", 0) >= len(planned)
    assert list(usage_objects(store)) == []
    assert not [i for i in store.list(keys.SESSIONS + "/") if "/artifacts/" in i.key]


def test_gc_keeps_usage_of_an_active_session(store: ObjectStore, recorder: UsageRecorder,
                                             tmp_path: Path) -> None:
    """Now (within session_ttl) every usage object is retained, with the reason."""
    scripted_run(store, recorder, calls=20)
    recorder.close()
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p")
    usage = [e for e in plan.entries() if e.object_kind == "usage_log"]
    assert usage and {e.status for e in usage} == {"retained_recent"}


def test_apply_refuses_a_plan_line_naming_another_sessions_usage(store: ObjectStore, recorder: UsageRecorder,
                                                                tmp_path: Path) -> None:
    """A plan (however written) cannot point a session's usage entry at another session's key."""
    scripted_run(store, recorder, calls=6)
    scripted_run(store, recorder, session="other-session", calls=6)
    recorder.close()
    plan = plan_cleanup(store, CleanupScope(session_hash=keys.session_hash(SESSION)), REAL,
                        out=tmp_path / "p", now=later())
    other = next(o for o in usage_objects(store) if o.session_hash == keys.session_hash("other-session"))
    writer = PlanWriter(tmp_path / "edited", plan.header)
    for e in plan.entries():
        if e.object_kind == "usage_log" and e.snapshot is not None:
            e = e.model_copy(update={"snapshot": e.snapshot.model_copy(update={"key": other.key})})
        writer.add(e)
    report = apply_cleanup(store, writer.close(), now=later)
    assert report.counts.get("denied", 0) >= 1
    assert any(o.key == other.key for o in usage_objects(store))


def test_purge_deletes_the_sessions_usage(store: ObjectStore, recorder: UsageRecorder) -> None:
    """A purge lists the session's prefix: its usage objects are deleted and audited."""
    scripted_run(store, recorder, calls=20)
    recorder.close()
    record = purge_session(store, SESSION, requested_by="test", confirm=True)
    assert record.ok
    assert list(usage_objects(store)) == []
    assert any(o.kind == "usage_log" for o in record.objects)
