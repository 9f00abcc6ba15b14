"""Purge with no late survivor: writers frozen at each failpoint and resumed after the purge
leave only the tombstone, the seals and the audit record once they end and GC has run once."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from s3spill import failpoints, keys
from s3spill.config import TransferConfig
from s3spill.errors import ArtifactPublicationRejected, SessionErased
from s3spill.fleet.purge import SETTLE_SECONDS, purge_session, read_erasure
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.leases import cas as cas_module
from s3spill.leases import journal as journal_module
from s3spill.leases.erased import read_tombstone
from s3spill.leases.journal import LeaseJournal, new_transaction_id
from s3spill.leases.owner import OwnerSlot, S3ReferenceOwner
from s3spill.leases.references import publish_memory_reference
from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.store.s3.store import S3Store
from s3spill.testing import child_env, drop_response_after_send
from tests.leases.journal_artifacts import put_artifact

SESSION = "purged-while-writing"
WRITER = Path(__file__).with_name("stalled_writer.py")
#: Every step a writer can be frozen at between two of its writes (declared failpoints), and
#: the pass at which it freezes. Each costs ~9 s: the suite runs three, the acceptance step
#: of .ci/run all of them (S3SPILL_PURGE_RACE_ALL=1).
ALL_POINTS = {"journal.before_cas": 3, "journal.before_segment_write": 1, "journal.after_segment_write": 1,
              "journal.after_prepared": 3,
              "journal.before_committed": 3, "journal.after_committed": 3, "owner.after_publish_write": 3,
              "live.after_segment": 1, "live.after_state_cas": 1}
POINTS = (sorted(ALL_POINTS) if os.environ.get("S3SPILL_PURGE_RACE_ALL")
          else ["journal.after_prepared", "owner.after_publish_write", "live.after_segment"])


def _left(store: ObjectStore, shash: str) -> tuple[list[str], list[str]]:
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

    store.put_if_absent = spy  # type: ignore[method-assign,assignment]
    with Spiller(store, SESSION, journal=None) as spiller:
        result = spiller.externalize("".join(f"row {n}\n" for n in range(20000)), "bash")
    assert not result.spilled and "erased on request" in (result.degraded_reason or "")
    assert not [k for k in created if k.startswith(keys.session_prefix(shash))], created


#: Where a publisher is held while purge seals, and what its landed PREPARED answered.
HELD = [("journal.after_prepared", "ok"), ("journal.after_prepared", "lost, then 412 on botocore's retry"),
        ("journal.before_segment_write", "ok")]


@pytest.mark.parametrize(("point", "landed_answer"), HELD)
def test_a_publisher_resumed_after_the_seal_leaves_no_segment(point: str, landed_answer: str,
                                                              request: pytest.FixtureRequest,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A publisher whose PREPARED landed (in one case its answer was lost and botocore's
    retry got 412, resolved by the put id) is held while purge seals the session; resumed,
    its next write cuts a compaction segment. Held before that write, it re-reads and writes
    nothing; held after its read, the segment it then writes is undone once the CAS meets
    the tombstone. Either way only the tombstone is left, before any GC. (The lost answer
    needs S3 over HTTP; the rest runs on the local store, in a fraction of the time.)"""
    botocore_retry = landed_answer != "ok"
    store: ObjectStore = request.getfixturevalue("server_store" if botocore_retry else "local_store")
    shash = keys.session_hash(SESSION)
    journal = LeaseJournal(store, SESSION)
    owner = S3ReferenceOwner(store, SESSION)
    for _ in range(9):  # 18 records in the manifest's window
        publish_memory_reference(journal, owner, put_artifact(store, SESSION)[1])
    journal.prepare(put_artifact(store, SESSION)[0], new_transaction_id())  # 19, pending
    window = TransferConfig().journal_max_recent_records
    assert len(journal.recent_records()) == window - 1
    stalled, resume = threading.Event(), threading.Event()
    real_failpoint = failpoints.failpoint

    def hold(name: str) -> None:
        if name == point and not stalled.is_set():
            stalled.set()
            resume.wait(30)
        real_failpoint(name)

    monkeypatch.setattr(journal_module, "failpoint", hold)
    monkeypatch.setattr(cas_module, "failpoint", hold)
    # A purge waits longer before its final sweep than a verified state may be reused for a
    # segment write; with both shrunk to 0 here, the held writer's state is already stale.
    assert SETTLE_SECONDS >= cas_module.GUESS_TTL + 1
    monkeypatch.setattr(cas_module, "GUESS_TTL", 0.0)
    faults = drop_response_after_send(store.client, "PutObject") if isinstance(store, S3Store) else None
    outcome: list[object] = []
    ref = put_artifact(store, SESSION)[1]

    def publish() -> None:
        try:  # PREPARED is the window's 20th record; the next write cuts a segment
            outcome.append(publish_memory_reference(journal, owner, ref))
        except Exception as exc:  # the test reads it
            outcome.append(exc)

    writer = threading.Thread(target=publish)
    writer.start()
    assert stalled.wait(30), f"the publisher never reached {point}"
    assert faults is None or faults.fired == 1
    purge_session(store, SESSION, requested_by="test", confirm=True, settle_seconds=0)
    written = journal.stats.segments_written
    resume.set()
    writer.join(60)
    assert not writer.is_alive()
    # Held before the write that cuts the segment: nothing is written at all.
    assert journal.stats.segments_written - written == int(point == "journal.before_segment_write")
    # Refused by the sealed owner slot or the sealed journal, never committed.
    assert outcome and isinstance(outcome[0], ArtifactPublicationRejected | SessionErased), outcome
    assert _left(store, shash)[0] == [keys.manifest_key(shash)]
