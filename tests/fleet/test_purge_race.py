"""Purge with no late survivor: writers frozen at each failpoint and resumed after the purge
leave only the tombstone, the seals and the audit record once they end and GC has run once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from s3spill import keys
from s3spill.fleet.purge import purge_session, read_erasure
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.leases.erased import read_tombstone
from s3spill.leases.owner import OwnerSlot
from s3spill.store.local import LocalStore
from s3spill.testing import child_env

SESSION = "purged-while-writing"
WRITER = Path(__file__).with_name("stalled_writer.py")
#: Every step a writer can be frozen at between two of its writes (declared failpoints), and
#: the pass at which it freezes. Each costs ~9 s: the suite runs three, the acceptance step
#: of .ci/run all of them (S3SPILL_PURGE_RACE_ALL=1).
ALL_POINTS = {"journal.before_cas": 3, "journal.after_segment_write": 1, "journal.after_prepared": 3,
              "journal.before_committed": 3, "journal.after_committed": 3, "owner.after_publish_write": 3,
              "live.after_segment": 1, "live.after_state_cas": 1}
POINTS = (sorted(ALL_POINTS) if os.environ.get("S3SPILL_PURGE_RACE_ALL")
          else ["journal.after_prepared", "owner.after_publish_write", "live.after_segment"])


def _left(store: LocalStore, shash: str) -> tuple[list[str], list[str]]:
    inside = sorted(i.key for i in store.list(keys.session_prefix(shash)))
    slots = sorted(i.key for i in store.list(f"{keys.OWNER}/{shash}/"))
    return inside, slots


def _gc(store: LocalStore, tmp_path: Path, shash: str) -> None:
    now = datetime.now(UTC)
    plan = plan_cleanup(store, CleanupScope(session_hash=shash), CleanupPolicy(dry_run=False),
                        out=tmp_path / f"plan-{time.monotonic_ns()}.jsonl", now=now)
    apply_cleanup(store, plan, now=lambda: now)


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_a_writer_frozen_at_a_failpoint_leaves_nothing_after_purge_and_one_gc(point: str,
                                                                              tmp_path: Path) -> None:
    """Freeze the writer at ``point``, purge, let it resume and end; one GC run later only the
    tombstone, the sealed owner slots and the audit record are left."""
    root = tmp_path / "store"
    store = LocalStore(root)
    shash = keys.session_hash(SESSION)
    env = {**child_env({}), "S3SPILL_FAILPOINTS": f"{point}=sleep(5000)@{ALL_POINTS[point]}"}
    writer = subprocess.Popen([sys.executable, str(WRITER), str(root), SESSION], env=env,
                              stderr=subprocess.PIPE, text=True)
    assert writer.stderr is not None
    deadline = time.monotonic() + 60
    for line in writer.stderr:
        if f"S3SPILL_FAILPOINT_REACHED {point}" in line or time.monotonic() > deadline:
            break
    else:
        pytest.fail(f"the writer never reached {point}")
    record = purge_session(store, SESSION, requested_by="test", confirm=True)
    assert record.state == "erased"
    writer.stderr.read()
    writer.wait(timeout=120)
    # The writer checks the seal before each artifact and live run and undoes a late final
    # copy: nothing of it is left even before GC; GC (planned_erase) is the backstop.
    assert _left(store, shash)[0] == [keys.manifest_key(shash)]
    _gc(store, tmp_path, shash)
    inside, slots = _left(store, shash)
    assert inside == [keys.manifest_key(shash)], inside
    assert read_tombstone(store.get(keys.manifest_key(shash))) is not None
    assert all(OwnerSlot.model_validate_json(store.get(k)).state == "sealed" for k in slots), slots
    assert read_erasure(store, shash) is not None


def test_gc_erases_a_late_write_in_a_purged_session_and_keeps_the_seals(tmp_path: Path) -> None:
    """Whatever lands in a sealed session after the final sweep (a segment, an artifact, a
    counter) is planned as erasable and deleted; the purged session is not 'unverifiable'."""
    store = LocalStore(tmp_path / "store")
    shash = keys.session_hash(SESSION)
    purge_session(store, SESSION, requested_by="test", confirm=True, settle_seconds=0)
    late = [keys.segment_key(shash, 1, 16, "ab" * 32),
            keys.artifact_key(shash, "20260101T000000Z-aaaaaaaaaaaa-bash"),
            keys.session_usage_key(shash)]
    for key in late:
        store.put_if_absent(key, b'{"late": true}')
    now = datetime.now(UTC)
    plan = plan_cleanup(store, CleanupScope(session_hash=shash), CleanupPolicy(dry_run=False),
                        out=tmp_path / "plan.jsonl", now=now)
    statuses = {e.key: e.status for e in plan.entries()}
    assert {statuses[k] for k in late} == {"planned_erase"}
    assert statuses[keys.manifest_key(shash)] == "retained_protocol"
    report = apply_cleanup(store, plan, now=lambda: now)
    assert report.counts.get("deleted") == 3 and "retained_unverifiable" not in report.counts
    assert _left(store, shash)[0] == [keys.manifest_key(shash)]


def test_a_writer_checks_the_seal_before_it_creates_anything(tmp_path: Path) -> None:
    """A Spiller started after the purge creates no object at all (not one to undo later)."""
    from s3spill.spill.spiller import Spiller

    store = LocalStore(tmp_path / "store")
    shash = keys.session_hash(SESSION)
    purge_session(store, SESSION, requested_by="test", confirm=True, settle_seconds=0)
    created: list[str] = []
    real_put = store.put_if_absent

    def spy(key: str, *a: object, **k: object) -> object:
        created.append(key)
        return real_put(key, *a, **k)  # type: ignore[arg-type]

    store.put_if_absent = spy  # type: ignore[method-assign]
    with Spiller(store, SESSION, journal=None) as spiller:
        result = spiller.externalize("".join(f"row {n}\n" for n in range(20000)), "bash")
    assert not result.spilled and "erased on request" in (result.degraded_reason or "")
    assert not [k for k in created if k.startswith(keys.session_prefix(shash))], created
