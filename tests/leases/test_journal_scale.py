"""The journal's version 2 layout: a manifest whose size and write cost do not depend on the
history or on the live claims, segments chained back from the manifest, and version 1
journals (written by earlier releases) read as they are and migrated on their first write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from s3spill import keys
from s3spill.errors import JournalCorrupt
from s3spill.leases.journal import CondemnItem, LeaseJournal
from s3spill.store.base import ObjectStore
from tests.leases.journal_artifacts import JCFG, SESSION, put_artifact

V1 = json.loads((Path(__file__).parents[1] / "data" / "journal_v1.json").read_text())
V1_SESSION: str = V1["session"]
V1_SHASH = keys.session_hash(V1_SESSION)


def load_v1(store: ObjectStore) -> None:
    for key, body in V1["objects"].items():
        store.put_if_absent(key, body.encode())


def manifest_doc(store: ObjectStore, session: str) -> dict[str, Any]:
    return json.loads(store.get(keys.manifest_key(keys.session_hash(session))))  # type: ignore[no-any-return]


def test_manifest_carries_no_claims_and_stays_small(store: ObjectStore) -> None:
    """With many live claims the manifest holds only the head, the pending set, a bounded
    window of records and one segment pointer: its size does not grow with the claims."""
    j = LeaseJournal(store, SESSION, JCFG)
    claim, _ = put_artifact(store)
    sizes = []
    for n in range(60):
        j.publish_reference(claim, lambda: None, f"tx-{n}")
        sizes.append(len(store.get(keys.manifest_key(keys.session_hash(SESSION)))))
    doc = manifest_doc(store, SESSION)
    assert doc["schema_version"] == 2 and doc["transactions"] == {} and doc["condemned"] == {}
    assert len(doc["segments"]) == 1 and doc["legacy_segments"] == []
    assert len(doc["records"]) <= JCFG.journal_max_recent_records
    assert max(sizes[30:]) <= max(sizes[:30]) + 64  # no growth with 30 more live claims
    assert len(j.view().transactions) == 60
    fresh = LeaseJournal(store, SESSION, JCFG)
    assert fresh.verify().live == 60 and fresh.view().transactions == j.view().transactions


def test_segments_chain_back_and_a_cut_chain_is_refused(store: ObjectStore) -> None:
    """Each segment names the one before it; a fresh process walks the chain back to its
    start, and a missing link anywhere in the chain fails recovery as lost history."""
    j = LeaseJournal(store, SESSION, JCFG)
    claim, _ = put_artifact(store)
    for n in range(20):
        j.publish_reference(claim, lambda: None, f"tx-{n}")
    report = LeaseJournal(store, SESSION, JCFG).verify()
    assert report.records == 40 and report.segments >= 3 and report.orphan_segments == ()
    segs = sorted(store.list(keys.session_prefix(keys.session_hash(SESSION)) + "journal/segments/"),
                  key=lambda i: i.key)
    assert len(segs) == report.segments
    middle = next(i for i in segs if not i.key.split("/")[-1].startswith("0-"))
    store.delete_if_match(middle.key, middle.etag)
    with pytest.raises(JournalCorrupt) as exc:
        LeaseJournal(store, SESSION, JCFG).verify()
    assert exc.value.reason == "segment_missing"


def test_incremental_reads_follow_other_writers_segments(store: ObjectStore) -> None:
    """A process that verified an older state folds only the segments written since, in order."""
    reader = LeaseJournal(store, SESSION, JCFG)
    writer = LeaseJournal(store, SESSION, JCFG)
    claim, _ = put_artifact(store)
    writer.publish_reference(claim, lambda: None, "tx-first")
    assert len(reader.view().transactions) == 1
    for n in range(25):
        writer.publish_reference(claim, lambda: None, f"tx-{n}")
    reads = reader.stats.reads
    view = reader.view()
    assert reader.stats.reads == reads + 1
    assert view == writer.view() and view.segments == writer.view().segments >= 4


def test_a_rolled_back_write_leaves_the_fold_as_it_was(store: ObjectStore) -> None:
    """A write that loses its compare-and-swap undoes its tentative records: the next
    write is planned on what the winner wrote, never on the loser's state."""
    a = LeaseJournal(store, SESSION, JCFG)
    b = LeaseJournal(store, SESSION, JCFG)
    claim, _ = put_artifact(store)
    a.publish_reference(claim, lambda: None, "tx-a0")
    b.publish_reference(claim, lambda: None, "tx-b0")  # a's cached state is now stale
    a.publish_reference(claim, lambda: None, "tx-a1")  # its guess loses, re-reads, wins
    assert a.stats.lost >= 1
    view = LeaseJournal(store, SESSION, JCFG).verify()
    assert view.records == 6 and view.live == 3
    assert a.transaction("tx-b0") is not None and a.view() == b.view()


def test_a_version_1_journal_is_read_as_it_is(store: ObjectStore) -> None:
    """A journal written by the previous release (claim view and full segment index in the
    manifest) verifies and folds to the same claims, without being rewritten by reads."""
    load_v1(store)
    before = store.get(keys.manifest_key(V1_SHASH))
    j = LeaseJournal(store, config=JCFG, session_hash=V1_SHASH)
    report = j.verify()
    exp = V1["expect"]
    assert (report.records, report.segments, report.head_hash) == (exp["records"], exp["segments"],
                                                                   exp["head_hash"])
    view = j.view()
    assert sorted(t.transaction_id for t in view.transactions) == exp["live"]
    assert list(view.pending_transaction_ids) == exp["pending"]
    assert [c.source_id for c in view.condemned] == exp["condemned"]
    assert store.get(keys.manifest_key(V1_SHASH)) == before


def test_a_version_1_journal_is_migrated_on_its_first_write(store: ObjectStore) -> None:
    """The first write turns a version 1 manifest into version 2 (old index kept as legacy
    segments, no claim view); the whole history still verifies and new segments chain on."""
    load_v1(store)
    j = LeaseJournal(store, V1_SESSION, JCFG)
    claim, _ = put_artifact(store, V1_SESSION)
    j.publish_reference(claim, lambda: None, "tx-new")
    doc = manifest_doc(store, V1_SESSION)
    assert doc["schema_version"] == 2 and doc["transactions"] == {} and doc["condemned"] == {}
    assert len(doc["legacy_segments"]) == V1["expect"]["segments"]
    for n in range(12):
        j.publish_reference(claim, lambda: None, f"tx-more-{n}")
    doc = manifest_doc(store, V1_SESSION)
    assert len(doc["legacy_segments"]) == V1["expect"]["segments"] and len(doc["segments"]) == 1
    report = LeaseJournal(store, V1_SESSION, JCFG).verify()
    assert report.records == V1["expect"]["records"] + 2 * 13 and report.orphan_segments == ()
    assert report.segments > V1["expect"]["segments"]
    assert report.live == len(V1["expect"]["live"]) + 13 and report.pending == 1
    assert report.condemned == 1
    # GC's fence still works across the migration: the condemned artifact can be finished
    [condemned] = V1["expect"]["condemned"]
    assert j.finish_condemnations([condemned], [], "plan-1") == {condemned: "deleted"}


def test_an_edited_version_1_claim_view_is_still_refused(store: ObjectStore) -> None:
    """A version 1 manifest whose claim view disagrees with its history is refused."""
    load_v1(store)
    key = keys.manifest_key(V1_SHASH)
    doc = json.loads(store.get(key))
    doc["transactions"].pop("tx-3")
    store.put_if_match(key, json.dumps(doc).encode(), store.head(key).etag)
    with pytest.raises(JournalCorrupt, match="claim view disagrees with its history at transaction tx-3"):
        LeaseJournal(store, config=JCFG, session_hash=V1_SHASH).verify()


def test_a_gc_batch_larger_than_the_window_moves_out_whole(store: ObjectStore) -> None:
    """A condemnation batch bigger than the manifest's window is moved into a segment on
    the next write, so batches never make the manifest keep growing."""
    j = LeaseJournal(store, SESSION, JCFG)
    items = []
    for _ in range(3 * JCFG.journal_max_recent_records):
        claim, _ = put_artifact(store)
        items.append(CondemnItem(claim.source_id, claim.sha256))
    third = len(items) // 3
    for n in range(3):
        j.condemn_batch(items[n * third:(n + 1) * third], f"plan-{n}")
        assert len(manifest_doc(store, SESSION)["records"]) <= 2 * JCFG.journal_max_recent_records
    j.finish_condemnations([i.source_id for i in items[:third]], [], "plan-0")
    assert len(manifest_doc(store, SESSION)["records"]) <= 2 * JCFG.journal_max_recent_records
    assert LeaseJournal(store, SESSION, JCFG).verify().condemned == 2 * third


MERGE = JCFG.model_copy(update={"journal_merge_segments": 3})


def test_level_0_segments_are_merged_and_left_behind_as_superseded(store: ObjectStore) -> None:
    """Every few segments the writer merges the run into one segment that links past it; a
    fresh process reads only the merged chain, and verify reports the left-behind objects
    as superseded without reading them."""
    j = LeaseJournal(store, SESSION, MERGE)
    claim, _ = put_artifact(store)
    for n in range(40):
        j.publish_reference(claim, lambda: None, f"tx-{n}")
    doc = manifest_doc(store, SESSION)
    assert doc["merged"] is not None and doc["run_segments"] < MERGE.journal_merge_segments
    fresh = LeaseJournal(store, SESSION, MERGE)
    report = fresh.verify()
    assert report.records == 80 and report.live == 40 and report.segments == doc["chain_segments"]
    statuses = {o.status for o in report.orphan_segments}
    assert statuses == {"superseded"} and len(report.orphan_segments) >= 6
    assert report.segments + len(report.orphan_segments) == j.stats.segments_written
    assert fresh.view() == j.view()


def test_a_reader_follows_a_merge_that_covers_what_it_verified(store: ObjectStore) -> None:
    """A process that verified a level 0 segment later finds it merged away: it re-checks the
    records it knows by hash and folds only the new ones, in one read."""
    writer = LeaseJournal(store, SESSION, MERGE)
    reader = LeaseJournal(store, SESSION, MERGE)
    claim, _ = put_artifact(store)
    for n in range(7):
        writer.publish_reference(claim, lambda: None, f"tx-{n}")
    assert reader.view().segments >= 1
    for n in range(7, 30):
        writer.publish_reference(claim, lambda: None, f"tx-{n}")
    reads = reader.stats.reads
    assert reader.view() == writer.view()
    assert reader.stats.reads == reads + 1
    reader.publish_reference(claim, lambda: None, "tx-reader")  # and it can write on top
    assert LeaseJournal(store, SESSION, MERGE).verify().live == 31


def test_a_forged_merge_pointer_is_refused(store: ObjectStore) -> None:
    """The manifest's merged pointer steers the next merge, so one outside the chain is refused."""
    j = LeaseJournal(store, SESSION, MERGE)
    claim, _ = put_artifact(store)
    for n in range(20):
        j.publish_reference(claim, lambda: None, f"tx-{n}")
    key = keys.manifest_key(keys.session_hash(SESSION))
    doc = json.loads(store.get(key))
    doc["merged"] = dict(doc["merged"], sha256="e" * 64)
    store.put_if_match(key, json.dumps(doc).encode(), store.head(key).etag)
    with pytest.raises(JournalCorrupt, match="merged segment is not in its segment chain"):
        LeaseJournal(store, SESSION, MERGE).verify()


def test_a_guessed_write_that_would_cut_a_segment_is_not_built(store: ObjectStore,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """GC's DELETED batch right after its CONDEMNED batch cuts a segment, which is never sent
    on a guessed state: its records are built once, on the re-read, not twice."""
    from s3spill.leases import cas

    j = LeaseJournal(store, SESSION, JCFG)
    items = []
    for _ in range(2 * JCFG.journal_max_recent_records):
        claim, _ = put_artifact(store)
        items.append(CondemnItem(claim.source_id, claim.sha256))
    j.condemn_batch(items, "plan-0")
    built: list[str] = []
    real = cas.build_record

    def counting(**kwargs: Any) -> Any:
        built.append(kwargs["event"])
        return real(**kwargs)

    monkeypatch.setattr(cas, "build_record", counting)
    results = j.finish_condemnations([i.source_id for i in items], [], "plan-0")
    assert set(results.values()) == {"deleted"}
    assert built == ["DELETED"] * len(items)
    assert LeaseJournal(store, SESSION, JCFG).verify().condemned == 0
