"""GC's plan and apply pause the cyclic collector for their run and always resume it."""

from __future__ import annotations

import gc
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from s3spill import keys
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.fence import GcLedger, SessionFacts, open_ledger, read_session_facts
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.leases.journal import LeaseJournal
from s3spill.store.base import ObjectStore
from tests.gc.aged_artifacts import exists, later, put_artifact


def test_plan_and_apply_run_without_the_cyclic_collector_and_resume_it(store: ObjectStore,
                                                                        tmp_path: Path) -> None:
    """Each session is planned and applied with the collector paused (its re-walks of every live
    plan line and record were 7-8% of the run), and it runs again once each call returns."""
    name = put_artifact(store, "s1", b"old output\n" * 100)
    LeaseJournal(store, "s1").touch()
    seen: list[bool] = []

    def facts(store: ObjectStore, shash: str, clock: Callable[[], datetime]) -> SessionFacts:
        seen.append(gc.isenabled())
        return read_session_facts(store, shash, clock)

    def ledger(store: ObjectStore, shash: str, clock: Callable[[], datetime]) -> GcLedger:
        seen.append(gc.isenabled())
        return open_ledger(store, shash, clock)

    assert gc.isenabled()
    policy = CleanupPolicy(dry_run=False)
    plan = plan_cleanup(store, CleanupScope(), policy, out=tmp_path / "p.jsonl", now=later(),
                        facts_reader=facts)
    assert gc.isenabled()
    report = apply_cleanup(store, plan, now=later, policy=policy, ledger_factory=ledger)
    assert gc.isenabled()
    assert seen == [False, False]
    assert report.counts.get("deleted") == 1
    assert not exists(store, keys.artifact_key(keys.session_hash("s1"), name))


def test_a_plan_that_fails_still_resumes_the_collector(store: ObjectStore, tmp_path: Path) -> None:
    """A run that raises leaves the collector as it found it."""
    put_artifact(store, "s1", b"old output\n" * 100)

    def broken(store: ObjectStore, shash: str, clock: Callable[[], datetime]) -> SessionFacts:
        raise RuntimeError("facts reader failed")

    with pytest.raises(RuntimeError, match="facts reader failed"):
        plan_cleanup(store, CleanupScope(), CleanupPolicy(), out=tmp_path / "p.jsonl", now=later(),
                     facts_reader=broken)
    assert gc.isenabled()
