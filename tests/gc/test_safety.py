"""GC and journal safety against a hostile world: refusing stores, lost manifests, edited plans."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from s3spill import keys
from s3spill.cli import main
from s3spill.cli.exitcodes import ExitCode
from s3spill.cli.store_cmds import render
from s3spill.config import TransferConfig
from s3spill.errors import (
    CleanupRefused,
    JournalCorrupt,
    StoreCapabilityError,
    UnsupportedOperation,
)
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.gc.planfile import CleanupPlan
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.owner import S3ReferenceOwner
from s3spill.leases.references import memory_reference_for, publish_memory_reference
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore, StoreCapabilities
from s3spill.store.probes import probe_capabilities
from s3spill.store.s3.errors import Kind, classify
from s3spill.store.s3.store import S3Store
from s3spill.testing import ConditionIgnoringStore, HttpFaults, record_operations
from tests.gc.aged_artifacts import REAL, claim_for, later, put_artifact
from tests.gc.aged_artifacts import exists as _exists


def refuse_if_match_delete(client: Any) -> HttpFaults:
    """Answer 501 NotImplemented to every DeleteObject carrying If-Match, as LocalStack does."""
    from botocore.awsrequest import AWSResponse, HTTPHeaders

    faults = HttpFaults(client, "before-send.s3.DeleteObject", lambda **_: None, 1 << 30)

    class _Raw:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def stream(self, **_: Any) -> Any:
            yield self.data

    def handler(request: Any, **_: Any) -> AWSResponse | None:
        if "If-Match" not in request.headers:
            return None
        faults.fired += 1
        body = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>NotImplemented</Code>"
                b"<Message>A header you provided implies functionality that is not implemented"
                b"</Message></Error>")
        headers = HTTPHeaders()
        headers["Content-Type"] = "application/xml"
        return AWSResponse(request.url, 501, headers, _Raw(body))

    faults.handler = handler
    client.meta.events.register(faults.event, handler)
    return faults


# -- 501 NotImplemented is a definite refusal -------------------------------------------


def test_501_is_a_definite_refusal_not_a_transient_fault(server_store: S3Store) -> None:
    """A 501 to If-Match on DeleteObject raises UnsupportedOperation after one request, object kept."""
    server_store.put_if_absent("k", b"x")
    etag = server_store.head("k").etag
    faults = refuse_if_match_delete(server_store.client)
    seen = record_operations(server_store.client)
    try:
        server_store.delete_if_match("k", etag)
        raise AssertionError("a refused delete must raise")
    except UnsupportedOperation as exc:
        assert classify(exc.__cause__) is Kind.UNSUPPORTED  # type: ignore[arg-type]
    assert seen.count("DeleteObject") == 1 and faults.fired == 1
    assert _exists(server_store, "k")


def test_doctor_reports_501_on_conditional_delete_as_no(server_store: S3Store) -> None:
    """The doctor lists a conditional delete answered with 501 as NO (not n/a) and GC as refused."""
    refuse_if_match_delete(server_store.client)
    report = probe_capabilities(server_store)
    row = next(p for p in report.probes if p.name == "conditional_delete")
    assert row.honoured is False and "501" in row.detail and row.needed_by == "gc"
    assert report.gc_delete_mode is None and not report.ok
    assert re.search(r"conditional delete \(If-Match\) +NO ", render(report))


def test_501_delete_is_lifted_and_force_sends_plain_deletes(server_store: S3Store, tmp_path: Path) -> None:
    """A 501 delete lifts the condemnation (the orphan stays usable); --force-unverified then deletes it."""
    name = put_artifact(server_store, "s1", b"orphan\n", index=False)
    key = keys.artifact_key(keys.session_hash("s1"), name)
    refuse_if_match_delete(server_store.client)
    plan = plan_cleanup(server_store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    report = apply_cleanup(server_store, plan, now=later)
    assert report.counts == {"retained_error": 1} and "not implemented" in report.items[0].reason
    assert _exists(server_store, key)
    view = LeaseJournal(server_store, session_hash=keys.session_hash("s1")).view()
    assert view.condemned == ()  # lifted: it can be claimed, or deleted by a later run
    seen = record_operations(server_store.client)
    plan2 = plan_cleanup(server_store, CleanupScope(), REAL, out=tmp_path / "p2", now=later())
    forced = apply_cleanup(server_store, plan2, now=later, force_unverified_deletes=True,
                           capabilities=StoreCapabilities(conditional_delete=False))
    assert forced.counts.get("deleted") == 1 and forced.delete_method == "unconditional"
    assert not _exists(server_store, key) and "DeleteObject" in seen


# -- evidence outside the manifest: owner slots and segments -----------------------------


def _publish(store: ObjectStore, session: str, name: str, txid: str,
             retain_until: datetime | None = None) -> None:
    shash = keys.session_hash(session)
    sha = store.head(keys.artifact_key(shash, name)).sha256
    assert sha is not None
    ref = memory_reference_for(store, str(keys.SourceId(shash, name, sha[:16])))
    publish_memory_reference(LeaseJournal(store, session), S3ReferenceOwner(store, session), ref,
                             transaction_id=txid, retain_until=retain_until)


def _plan_and_apply(store: ObjectStore, tmp_path: Path, tag: str) -> tuple[dict[str, str], dict[str, int]]:
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / f"plan-{tag}", now=later())
    statuses = {str(e.name): e.status for e in plan.entries() if e.object_kind == "artifact"}
    return statuses, apply_cleanup(store, plan, now=later).counts


def test_deleted_manifest_is_doubt_not_an_empty_journal(race_store: ObjectStore, tmp_path: Path) -> None:
    """With the manifest deleted after a publish, verify fails and GC keeps the referenced artifact."""
    store = race_store
    shash = keys.session_hash("s1")
    name = put_artifact(store, "s1", b"referenced\n" * 20)
    _publish(store, "s1", name, "tx-a")
    mkey = keys.manifest_key(shash)
    store.delete_if_match(mkey, store.head(mkey).etag)
    with pytest.raises(JournalCorrupt) as caught:
        LeaseJournal(store, "s1").verify()
    assert caught.value.reason == "manifest_missing"
    statuses, counts = _plan_and_apply(store, tmp_path, "a")
    assert statuses == {name: "retained_journal_doubt"}
    assert "deleted" not in counts and counts["retained_journal_doubt"] == 1
    assert _exists(store, keys.artifact_key(shash, name))


def test_rolled_back_manifest_is_doubt(race_store: ObjectStore, tmp_path: Path) -> None:
    """A manifest copied back from before a publish is detected by the owner slot; nothing is deleted."""
    store = race_store
    shash = keys.session_hash("s1")
    name = put_artifact(store, "s1", b"referenced\n" * 20)
    journal = LeaseJournal(store, "s1", clock=lambda: later(-timedelta(days=10)))
    journal.touch()
    mkey = keys.manifest_key(shash)
    old = store.get(mkey)
    _publish(store, "s1", name, "tx-a")
    store.put_if_match(mkey, old, store.head(mkey).etag)  # the adversary's rollback
    with pytest.raises(JournalCorrupt) as caught:
        LeaseJournal(store, "s1").verify()
    assert caught.value.reason == "rollback"
    statuses, counts = _plan_and_apply(store, tmp_path, "r")
    assert statuses == {name: "retained_journal_doubt"} and "deleted" not in counts
    assert _exists(store, keys.artifact_key(shash, name))


def test_segments_reveal_a_lost_or_rolled_back_manifest(race_store: ObjectStore, tmp_path: Path) -> None:
    """History segments alone (no owner slots) reveal a deleted manifest and one rolled back behind them."""
    store = race_store
    shash = keys.session_hash("s1")
    config = TransferConfig(journal_max_recent_records=8, journal_segment_records=4)
    name = put_artifact(store, "s1", b"claimed\n")
    journal = LeaseJournal(store, "s1", config, clock=lambda: later(-timedelta(days=10)))
    journal.touch()
    mkey = keys.manifest_key(shash)
    early = store.get(mkey)
    claim = claim_for(store, "s1", name)
    for i in range(6):  # 12 records: at least one segment is written
        journal.publish_reference(claim, lambda: None, transaction_id=f"tx-{i}")
    assert list(store.list(keys.session_prefix(shash) + "journal/segments/"))
    store.put_if_match(mkey, early, store.head(mkey).etag)
    assert _plan_and_apply(store, tmp_path, "rb")[0] == {name: "retained_journal_doubt"}
    store.delete_if_match(mkey, store.head(mkey).etag)
    statuses, counts = _plan_and_apply(store, tmp_path, "del")
    assert statuses == {name: "retained_journal_doubt"} and "deleted" not in counts


def test_published_owner_slot_protects_whatever_the_journal_says(race_store: ObjectStore,
                                                                 tmp_path: Path) -> None:
    """An expired lease whose owner slot still reads published keeps its artifact (retained_referenced)."""
    store = race_store
    name = put_artifact(store, "s1", b"still referenced\n")
    _publish(store, "s1", name, "tx-a", retain_until=later(-timedelta(days=2)))
    statuses, counts = _plan_and_apply(store, tmp_path, "p")
    assert statuses == {name: "retained_referenced"} and "deleted" not in counts
    assert _exists(store, keys.artifact_key(keys.session_hash("s1"), name))


def test_gc_cli_exits_5_on_journal_doubt(local_store: ObjectStore,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`gc plan` and `gc run` exit 5 (journal doubt) when a session's manifest is missing with history."""
    name = put_artifact(local_store, "s1", b"referenced\n")
    _publish(local_store, "s1", name, "tx-a")
    mkey = keys.manifest_key(keys.session_hash("s1"))
    local_store.delete_if_match(mkey, local_store.head(mkey).etag)
    assert main(["--store", local_store.url, "gc", "plan", "--all"]) == ExitCode.JOURNAL_DOUBT
    assert main(["--store", local_store.url, "gc", "run", "--all", "--apply"]) == ExitCode.JOURNAL_DOUBT
    assert "retained_journal_doubt" in capsys.readouterr().out
    assert _exists(local_store, keys.artifact_key(keys.session_hash("s1"), name))


# -- an edited plan is a narrowing hint at most -------------------------------------------


def forge(path: Path, out: Path, edit: Callable[[list[dict[str, Any]]], None]) -> CleanupPlan:
    """Rewrite a plan as an adversary would: edit its lines, recompute the footer digest."""
    lines = [json.loads(raw) for raw in path.read_text().splitlines()]
    body = lines[:-1]
    edit(body)
    digest = hashlib.sha256()
    text = ""
    for doc in body:
        raw = json.dumps(doc) + "\n"
        digest.update(raw.encode())
        text += raw
    footer = dict(lines[-1], entries=len(body) - 1, sha256=digest.hexdigest(), mac=None)
    out.write_text(text + json.dumps(footer) + "\n")
    return CleanupPlan.open(out)


def _snapshot(info: Any) -> dict[str, Any]:
    return {"kind": "object_snapshot", "schema_version": 1, "key": info.key, "etag": info.etag,
            "version_id": info.version_id, "size": info.size,
            "last_modified": info.last_modified.isoformat(), "sha256": info.sha256}


def test_edited_policy_and_statuses_cannot_delete_a_live_artifact(race_store: ObjectStore,
                                                                  tmp_path: Path) -> None:
    """TTLs edited to 0 with the danger flag and a retained line turned planned_delete delete nothing."""
    store = race_store
    shash = keys.session_hash("s1")
    name = put_artifact(store, "s1", b"live output\n")
    LeaseJournal(store, "s1").touch()
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p")
    key = keys.artifact_key(shash, name)
    head = store.head(key)

    def edit(lines: list[dict[str, Any]]) -> None:
        lines[0]["policy"].update(orphan_ttl="PT0S", session_ttl="PT0S", tombstone_ttl="PT0S",
                                  allow_dangerously_short_ttl=True)
        for doc in lines[1:]:
            if doc.get("name") == name:
                doc.update(status="planned_delete", snapshot=_snapshot(head))

    forged = forge(plan.path, tmp_path / "forged", edit)
    assert forged.header.policy.orphan_ttl.total_seconds() == 0
    report = apply_cleanup(store, forged)
    assert "deleted" not in report.counts and report.counts["retained_recent"] == 1
    assert _exists(store, key)


def test_added_index_entry_cannot_delete_a_live_artifacts_sidecar(race_store: ObjectStore,
                                                                  tmp_path: Path) -> None:
    """An added index line for a live artifact's sidecar is denied: an index goes only after its body."""
    store = race_store
    shash = keys.session_hash("s1")
    name = put_artifact(store, "s1", b"live output\n")
    ikey = keys.index_key(shash, name)
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())

    def edit(lines: list[dict[str, Any]]) -> None:
        lines[:] = [d for d in lines if d.get("name") != name]  # hide the artifact's own line
        lines.append({"kind": "cleanup_plan_entry", "schema_version": 1, "status": "planned_delete",
                      "object_kind": "index", "session_hash": shash, "name": name, "key": ikey,
                      "size": 1, "reason": "", "snapshot": _snapshot(store.head(ikey)),
                      "index_snapshot": None})

    report = apply_cleanup(store, forge(plan.path, tmp_path / "forged", edit), now=later)
    assert report.counts == {"denied": 1}
    assert _exists(store, ikey) and _exists(store, keys.artifact_key(shash, name))


def test_entries_that_are_not_artifacts_are_refused(race_store: ObjectStore, tmp_path: Path) -> None:
    """planned_delete lines naming a manifest or an owner slot, or a key off the layout, are denied."""
    store = race_store
    shash = keys.session_hash("s1")
    name = put_artifact(store, "s1", b"referenced\n")
    _publish(store, "s1", name, "tx-a")
    mkey = keys.manifest_key(shash)
    okey = keys.owner_slot_key(shash, "tx-a")
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())

    def edit(lines: list[dict[str, Any]]) -> None:
        base = {"kind": "cleanup_plan_entry", "schema_version": 1, "status": "planned_delete",
                "session_hash": shash, "name": name, "size": 1, "reason": "", "index_snapshot": None}
        lines.append(dict(base, object_kind="manifest", key=mkey, snapshot=_snapshot(store.head(mkey))))
        lines.append(dict(base, object_kind="owner", key=okey, snapshot=_snapshot(store.head(okey))))
        art = dict(_snapshot(store.head(keys.artifact_key(shash, name))), key=mkey)
        lines.append(dict(base, object_kind="artifact", key=mkey, snapshot=art))

    before = {i.key: i.etag for i in store.list("")}
    report = apply_cleanup(store, forge(plan.path, tmp_path / "forged", edit), now=later)
    assert report.counts.get("denied", 0) >= 3 and "deleted" not in report.counts
    assert {i.key: i.etag for i in store.list("")} == before


def test_keyed_plans_refuse_edits(local_store: ObjectStore, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """With S3SPILL_PLAN_KEY set, a plan edited with a recomputed digest, or unkeyed, is refused."""
    monkeypatch.setenv("S3SPILL_PLAN_KEY", "a-test-secret-of-32-characters!!")
    put_artifact(local_store, "s1", b"x")
    plan = plan_cleanup(local_store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    assert plan.footer.mac is not None and CleanupPlan.open(plan.path).footer.mac == plan.footer.mac
    lines = [json.loads(raw) for raw in plan.path.read_text().splitlines()]
    lines[0]["policy"]["orphan_ttl"] = "PT2H"
    digest = hashlib.sha256()
    text = "".join(json.dumps(d) + "\n" for d in lines[:-1])
    digest.update(text.encode())
    edited = tmp_path / "edited"
    edited.write_text(text + json.dumps(dict(lines[-1], sha256=digest.hexdigest())) + "\n")
    with pytest.raises(CleanupRefused, match="MAC mismatch"):
        CleanupPlan.open(edited)
    edited.write_text(text + json.dumps(dict(lines[-1], sha256=digest.hexdigest(), mac=None)) + "\n")
    with pytest.raises(CleanupRefused, match="no MAC"):
        CleanupPlan.open(edited)
    monkeypatch.setenv("S3SPILL_PLAN_KEY", "another-secret-of-32-characters!")
    with pytest.raises(CleanupRefused, match="MAC mismatch"):
        CleanupPlan.open(plan.path)


# -- a store that ignores If-None-Match / If-Match is refused -----------------------------


def test_journal_owner_and_gc_refuse_a_store_ignoring_conditions(race_store: ObjectStore,
                                                                 tmp_path: Path) -> None:
    """Journal, owner, plan and apply raise StoreCapabilityError with the doctor's table; nothing changes."""
    name = put_artifact(race_store, "s1", b"x\n")
    LeaseJournal(race_store, "s1").touch()
    plan = plan_cleanup(race_store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    before = {i.key: i.etag for i in race_store.list("")}
    weak = ConditionIgnoringStore(race_store)
    claim = claim_for(race_store, "s1", name)
    with pytest.raises(StoreCapabilityError) as caught:
        LeaseJournal(weak, "s1").publish_reference(claim, lambda: None, transaction_id="tx-1")
    assert "create-if-absent" in caught.value.missing[0] and "honoured" in caught.value.table
    assert "NO" in str(caught.value)
    ref = memory_reference_for(race_store, claim.source_id)
    with pytest.raises(StoreCapabilityError):
        S3ReferenceOwner(weak, "s1").publish("tx-1", ref)
    with pytest.raises(StoreCapabilityError):
        plan_cleanup(weak, CleanupScope(), REAL, out=tmp_path / "q", now=later())
    with pytest.raises(StoreCapabilityError):
        apply_cleanup(weak, plan, now=later, force_unverified_deletes=True)
    assert {i.key: i.etag for i in race_store.list("")} == before


def test_concurrent_publishes_on_an_ignoring_store_are_refused_not_lost(race_store: ObjectStore) -> None:
    """8 threads publishing on a store ignoring conditions all get StoreCapabilityError; none commits."""
    names = [put_artifact(race_store, "s1", f"a{i}\n".encode()) for i in range(8)]
    weak = ConditionIgnoringStore(race_store)
    outcomes: list[str] = []

    def publish(i: int) -> None:
        try:
            LeaseJournal(weak, "s1").publish_reference(claim_for(race_store, "s1", names[i]),
                                                       lambda: None, transaction_id=f"tx-{i}")
            outcomes.append("committed")
        except StoreCapabilityError:
            outcomes.append("refused")

    threads = [threading.Thread(target=publish, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes == ["refused"] * 8
    assert LeaseJournal(race_store, "s1").view().exists is False


def test_spiller_on_an_ignoring_store_spills_and_warns_once(local_store: ObjectStore,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    """The Spiller still stores outputs on such a store (fails open) and warns once, clearly."""
    weak = ConditionIgnoringStore(local_store)
    spiller = Spiller(weak, "s1", touch_interval=0.0)
    # The library logs through stdlib logging and configures no handler (only the CLI
    # does): the warning is a record, whatever handler a process has installed before.
    with caplog.at_level("WARNING", logger="s3spill"):
        try:
            results = [spiller.externalize(b"line\n" * 40_000, "bash", f"c{i}") for i in range(3)]
        finally:
            spiller.close(timeout=10)
    assert all(r.spilled for r in results)
    warned = [r for r in caplog.records if "STORE_IGNORES_CONDITIONAL_WRITES" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelname == "WARNING"


def test_leftover_condemnation_of_a_published_artifact_is_not_finished(local_store: ObjectStore,
                                                                      tmp_path: Path) -> None:
    """A condemnation left by an earlier run is not finished by deleting while an owner slot publishes it."""
    from s3spill.leases.journal import CondemnItem

    store = local_store
    shash = keys.session_hash("s1")
    name = put_artifact(store, "s1", b"expired lease, live reference\n", index=False)
    _publish(store, "s1", name, "tx-a", retain_until=later(-timedelta(days=2)))
    claim = claim_for(store, "s1", name)
    journal = LeaseJournal(store, "s1", clock=later)
    verdicts = journal.condemn_batch([CondemnItem(claim.source_id, claim.sha256)], "crashed-run")
    assert verdicts == {claim.source_id: "condemned"}  # the lease expired: the journal allows it
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p", now=later())
    report = apply_cleanup(store, plan, now=later)
    assert "deleted" not in report.counts and report.recovered == {}
    assert _exists(store, keys.artifact_key(shash, name))
