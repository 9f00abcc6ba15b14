"""Exit 7 (journal doubt) means evidence of lost or rolled-back history, not a routine event."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from s3spill import keys
from s3spill.cli import main
from s3spill.cli.exitcodes import ExitCode
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.owner import S3ReferenceOwner
from s3spill.leases.references import memory_reference_for, publish_memory_reference
from s3spill.store.base import ObjectInfo, ObjectStore
from s3spill.testing import FaultyStore
from tests.gc.aged_artifacts import REAL, claim_for, later, put_artifact
from tests.gc.aged_artifacts import exists as _exists


def _publisher(store: ObjectStore, name: str, transaction_id: str) -> Callable[[], None]:
    """``ref publish`` of session s1's artifact ``name``, to fire in the middle of a GC step."""
    ref = memory_reference_for(store, claim_for(store, "s1", name).source_id)

    def publish() -> None:
        publish_memory_reference(LeaseJournal(store, "s1"), S3ReferenceOwner(store, "s1"), ref,
                                 transaction_id=transaction_id)

    return publish


def test_a_session_killed_before_its_first_liveness_mark_is_not_journal_doubt(
        local_store: ObjectStore, capsys: pytest.CaptureFixture[str]) -> None:
    """Young artifacts and no manifest (no slot, no segment): kept as retained_no_manifest, exit 0, not 7."""
    name = put_artifact(local_store, "s1", b"committed, but the writer was killed\n")
    code = main(["--store", local_store.url, "gc", "plan", "--all"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and code != ExitCode.JOURNAL_DOUBT
    assert doc["counts"].get("retained_no_manifest") == 1 and "retained_journal_doubt" not in doc["counts"]
    code = main(["--store", local_store.url, "gc", "run", "--all", "--apply"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and "retained_journal_doubt" not in doc["apply"]["counts"]
    assert _exists(local_store, keys.artifact_key(keys.session_hash("s1"), name))


def test_apply_keeps_a_young_session_without_manifest_under_its_own_status(
        local_store: ObjectStore, tmp_path: Path) -> None:
    """A plan made later (when old), applied while the artifact is young: retained_no_manifest, no doubt."""
    put_artifact(local_store, "s1", b"young\n")
    plan = plan_cleanup(local_store, CleanupScope(), REAL, out=tmp_path / "plan", now=later())
    report = apply_cleanup(local_store, plan)  # the real clock: the artifact is seconds old
    assert report.counts == {"retained_no_manifest": 1} and report.journal_doubts == 0


@dataclass
class PublishingDuringListing(FaultyStore):
    """Runs ``hook`` once, just before the first listing of owner slots (a concurrent publish)."""

    hook: Callable[[], None] | None = None
    fired: list[str] = field(default_factory=list)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        if self.hook is not None and prefix.startswith(keys.OWNER) and not self.fired:
            self.fired.append(prefix)
            self.hook()
        return super().list(prefix)


def test_a_publish_between_the_manifest_read_and_the_slot_listing_is_not_doubt(
        local_store: ObjectStore, tmp_path: Path) -> None:
    """A `ref publish` racing GC's reads: the manifest is read again and the artifact is referenced."""
    old = put_artifact(local_store, "s1", b"old output\n")
    LeaseJournal(local_store, "s1").touch()
    racing = PublishingDuringListing(local_store, hook=_publisher(local_store, old, "tx-racing"))
    plan = plan_cleanup(racing, CleanupScope(), REAL, out=tmp_path / "plan", now=later())
    assert racing.fired
    statuses = {e.name: e.status for e in plan.entries() if e.object_kind == "artifact"}
    assert statuses == {old: "retained_referenced"}
    assert "retained_journal_doubt" not in plan.footer.counts


def test_a_racing_publish_during_apply_is_not_doubt(local_store: ObjectStore, tmp_path: Path) -> None:
    """The same race at apply time: the fresh manifest knows the transaction; kept as referenced."""
    name = put_artifact(local_store, "s1", b"planned for deletion\n")
    LeaseJournal(local_store, "s1").touch()
    plan = plan_cleanup(local_store, CleanupScope(), REAL, out=tmp_path / "plan", now=later())
    assert plan.footer.counts["planned_delete"] == 1
    racing = PublishingDuringListing(local_store, hook=_publisher(local_store, name, "tx-racing-apply"))
    report = apply_cleanup(racing, plan, now=later)
    assert racing.fired and report.journal_doubts == 0
    assert report.counts.get("retained_referenced") == 1 and "deleted" not in report.counts
    assert _exists(local_store, keys.artifact_key(keys.session_hash("s1"), name))
